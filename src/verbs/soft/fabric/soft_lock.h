/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: how its threads wait for each other.
 *
 * The device's locks are held for microseconds (a bounded progress round, a
 * post), so a waiter spins - but not forever: the holder may have lost its
 * CPU, and then spinning only keeps it from getting one back. Measured
 * before this rule, with 16 processes on one core: UCX's async thread of a
 * rank spun 20-45 ms on the device lock while the rank's main thread, which
 * held it, waited for the CPU - and where both threads share one CPU, the
 * holder waits for the spinner's whole time slice. So after
 * SRQ_SOFT_LOCK_SPINS looks a waiter yields its CPU, and looks again.
 *
 * srq_soft_lock_t is the process-private lock (one word: 0 free, 1 held):
 * taking a free one is one CAS, releasing it a plain release store, as
 * pthread's spinlock; waiters spin on loads, not on CASes, so they share
 * the line while it is held.
 */
#ifndef SRQ_SOFT_LOCK_H_
#define SRQ_SOFT_LOCK_H_

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Looks at a taken lock before a waiter yields its CPU: a few tens of
 * microseconds, longer than any critical section of the device */
#define SRQ_SOFT_LOCK_SPINS  1024

typedef struct {
    _Atomic int held;
} srq_soft_lock_t;

static inline void srq_soft_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One wait step of a waiter that has looked @spins times: a pause, or
 * after SRQ_SOFT_LOCK_SPINS of them the CPU given up once (and the count
 * starts again) */
static inline void srq_soft_lock_backoff(unsigned *spins)
{
    if (++*spins < SRQ_SOFT_LOCK_SPINS) {
        srq_soft_cpu_relax();
        return;
    }
    *spins = 0;
    sched_yield();
}

static inline void srq_soft_lock_init(srq_soft_lock_t *lock)
{
    atomic_init(&lock->held, 0);
}

/* Take a free lock, saying in its word why (@tag: any value but 0; 1 is
 * the plain holder's): one CAS, a full barrier on x86 */
static inline bool srq_soft_trylock_as(srq_soft_lock_t *lock, int tag)
{
    int expected = 0;

    return atomic_compare_exchange_strong_explicit(&lock->held, &expected,
                                                   tag, memory_order_seq_cst,
                                                   memory_order_relaxed);
}

static inline bool srq_soft_trylock(srq_soft_lock_t *lock)
{
    int expected = 0;

    return atomic_compare_exchange_strong_explicit(&lock->held, &expected, 1,
                                                   memory_order_acquire,
                                                   memory_order_relaxed);
}

void srq_soft_lock_wait(srq_soft_lock_t *lock);

static inline void srq_soft_lock(srq_soft_lock_t *lock)
{
    if (__builtin_expect(!srq_soft_trylock(lock), 0)) {
        srq_soft_lock_wait(lock);
    }
}

static inline void srq_soft_unlock(srq_soft_lock_t *lock)
{
    atomic_store_explicit(&lock->held, 0, memory_order_release);
}

#endif
