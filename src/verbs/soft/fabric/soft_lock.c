/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: waiting for a taken lock (soft_lock.h), out of the
 * inline fast path.
 */
#include "soft_lock.h"

void srq_soft_lock_wait(srq_soft_lock_t *lock)
{
    unsigned spins = 0;

    do {
        while (atomic_load_explicit(&lock->held, memory_order_relaxed)) {
            srq_soft_lock_backoff(&spins);
        }
    } while (!srq_soft_trylock(lock));
}
