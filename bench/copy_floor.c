/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy_floor: what moving messages from one process to another costs on
 * this host with no transport at all, received two ways. It is the
 * reference beside ucx_perftest's am_bw: what a transport that places each
 * payload in a receive buffer can reach against a shared-memory FIFO
 * there, before any protocol.
 *
 *   copy_floor [-s SIZE] [-n COUNT] [-m peek|place] [-c CPU,CPU] [-x K]
 *
 * A sender and a receiver process, each on a CPU of its own (default 0
 * and 1, none pinned on a one-CPU host), share a ring of 64 slots. The
 * sender copies each message (SIZE bytes, from a buffer of its own, as an
 * AM pack callback does) into the next free slot and publishes it; the
 * receiver takes it and frees the slot:
 *   peek   it reads the message's first 8 bytes, as ucx_perftest's AM
 *          handler does: with a FIFO transport (posix) the payload never
 *          leaves the sender's cache
 *   place  it first copies the message into the next of 128 buffers of
 *          its own, as a verbs receive places a SEND in a posted buffer:
 *          the payload crosses to the receiver's CPU
 * Each message carries its number in its first 8 bytes; the receiver
 * checks it (a message lost, doubled or torn fails the run; -x K sends
 * message K with a wrong number, to see that check fail). Prints
 *
 *   copy_floor mode=<m> size=<s> msgs=<n> mr=<messages/s> us=<elapsed>
 *
 * It measures, never judges (bench/report puts both modes beside am_bw).
 * Its numbers are a reference, not a bound: both sides are plain memcpy
 * loops, whose speed on a shared machine varies from run to run as any
 * transport's does.
 */
#define _GNU_SOURCE
#include "bench_proc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define COPY_FLOOR_SLOTS     64u   /* as UCX posix's default FIFO */
#define COPY_FLOOR_RX_BUFS   128u  /* as rc_srq's default receive queue */
#define COPY_FLOOR_MAX_SIZE  (1u << 20)
#define COPY_FLOOR_LINE      64u

/* A slot: its state word, then the message. state is 2i while the slot is
 * free for message i, 2i + 1 once message i is in it. */
typedef struct {
    _Atomic uint64_t state;
    uint8_t          data[];
} copy_floor_slot_t;

typedef struct {
    _Atomic uint32_t ready;   /* the receiver is pinned and waiting */
    _Atomic uint32_t go;
    uint8_t          pad[COPY_FLOOR_LINE - 8];
} copy_floor_ctl_t;

typedef struct {
    size_t   size;
    uint64_t count;
    int      place;
    int      cpu[2];
    uint64_t wrong;    /* -x: the message sent with a wrong number (a test
                          of the receiver's check); UINT64_MAX: none */
    size_t   stride;
    uint8_t *ring;     /* shared: COPY_FLOOR_SLOTS slots of stride bytes */
    copy_floor_ctl_t *ctl;
} copy_floor_t;

static copy_floor_slot_t *slot_of(const copy_floor_t *f, uint64_t i)
{
    return (copy_floor_slot_t*)(f->ring +
                                (i % COPY_FLOOR_SLOTS) * f->stride);
}

/* The receiver, in the sender (0: none to wait for) */
static pid_t child;

/* Ends the sender when the receiver has exited (it found a message out of
 * place): its slots would never come free */
static void check_child(void)
{
    int status;

    if ((child > 0) && (waitpid(child, &status, WNOHANG) == child)) {
        child = 0;
        bench_die("the receiver exited (status %d) before the last message",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

/* Wait until @slot's state is @want; the bench's wait limit bounds it */
static void wait_state(const copy_floor_slot_t *slot, uint64_t want,
                       const char *what)
{
    double deadline = 0;
    unsigned spins  = 0;

    while (atomic_load_explicit(&slot->state, memory_order_acquire) !=
           want) {
        if ((++spins & 0xfffff) == 0) {
            bench_check_stop();
            check_child();
            if (deadline == 0) {
                deadline = bench_now_us() + BENCH_WAIT_LIMIT_S * 1e6;
            } else if (bench_now_us() > deadline) {
                bench_die("no %s for %d s", what, BENCH_WAIT_LIMIT_S);
            }
        }
    }
}

static void sender(const copy_floor_t *f)
{
    uint8_t *src = aligned_alloc(COPY_FLOOR_LINE, f->size);
    copy_floor_slot_t *slot;
    uint64_t i, num;

    if (src == NULL) {
        bench_die("no memory for a %zu-byte message", f->size);
    }
    memset(src, 0xa5, f->size);
    for (i = 0; i < f->count; ++i) {
        slot = slot_of(f, i);
        wait_state(slot, 2 * i, "free slot");
        num = (i == f->wrong) ? i + 1 : i;
        memcpy(src, &num, sizeof(num)); /* the message's number */
        memcpy(slot->data, src, f->size);
        atomic_store_explicit(&slot->state, 2 * i + 1, memory_order_release);
    }
    free(src);
}

/* Receive every message; exits 1 on the first one out of place */
static void receiver(const copy_floor_t *f)
{
    uint8_t *bufs = aligned_alloc(COPY_FLOOR_LINE,
                                  COPY_FLOOR_RX_BUFS * f->size);
    const uint8_t *msg;
    copy_floor_slot_t *slot;
    uint64_t i, num;

    if (bufs == NULL) {
        bench_die("no memory for %u receive buffers", COPY_FLOOR_RX_BUFS);
    }
    memset(bufs, 0, COPY_FLOOR_RX_BUFS * f->size);
    atomic_store(&f->ctl->ready, 1);
    for (i = 0; i < f->count; ++i) {
        slot = slot_of(f, i);
        wait_state(slot, 2 * i + 1, "message");
        msg = slot->data;
        if (f->place) {
            msg = bufs + (i % COPY_FLOOR_RX_BUFS) * f->size;
            memcpy((void*)msg, slot->data, f->size);
        }
        memcpy(&num, msg, sizeof(num));
        if (num != i) {
            bench_die("message %llu carries number %llu",
                      (unsigned long long)i, (unsigned long long)num);
        }
        atomic_store_explicit(&slot->state, 2 * (i + COPY_FLOOR_SLOTS),
                              memory_order_release);
    }
    free(bufs);
}

static void __attribute__((noreturn)) usage(void)
{
    fprintf(stderr, "usage: copy_floor [-s SIZE (8..%u)] [-n COUNT] "
            "[-m peek|place] [-c CPU,CPU] [-x K]\n", COPY_FLOOR_MAX_SIZE);
    exit(2);
}

static void parse(copy_floor_t *f, int argc, char **argv)
{
    char *end;
    int opt;

    while ((opt = getopt(argc, argv, "s:n:m:c:x:")) != -1) {
        switch (opt) {
        case 's': f->size  = strtoull(optarg, &end, 0); break;
        case 'n': f->count = strtoull(optarg, &end, 0); break;
        case 'x': f->wrong = strtoull(optarg, &end, 0); break;
        case 'm':
            if (!strcmp(optarg, "peek") || !strcmp(optarg, "place")) {
                f->place = !strcmp(optarg, "place");
                continue;
            }
            usage();
        case 'c':
            if (sscanf(optarg, "%d,%d", &f->cpu[0], &f->cpu[1]) != 2) {
                usage();
            }
            continue;
        default: usage();
        }
        if ((*optarg == '\0') || (*end != '\0')) {
            usage();
        }
    }
    if ((optind != argc) || (f->size < sizeof(uint64_t)) ||
        (f->size > COPY_FLOOR_MAX_SIZE) || (f->count == 0)) {
        usage();
    }
}

static void kill_child(void)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
}

int main(int argc, char **argv)
{
    copy_floor_t f = {.size = 4096, .count = 1000000, .cpu = {0, 1},
                      .wrong = UINT64_MAX};
    long ncpu      = sysconf(_SC_NPROCESSORS_ONLN);
    size_t len;
    double t0, us;
    int status;

    bench_prog = "copy_floor";
    parse(&f, argc, argv);
    bench_catch_signals();
    bench_log_pid();

    f.stride = (sizeof(copy_floor_slot_t) + f.size + COPY_FLOOR_LINE - 1) &
               ~(size_t)(COPY_FLOOR_LINE - 1);
    len      = sizeof(copy_floor_ctl_t) + COPY_FLOOR_SLOTS * f.stride;
    f.ctl    = mmap(NULL, len, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (f.ctl == MAP_FAILED) {
        bench_die("mmap %zu bytes: %s", len, strerror(errno));
    }
    f.ring = (uint8_t*)(f.ctl + 1);
    memset(f.ring, 0, COPY_FLOOR_SLOTS * f.stride); /* no page faults timed */
    for (uint64_t i = 0; i < COPY_FLOOR_SLOTS; ++i) {
        atomic_init(&slot_of(&f, i)->state, 2 * i);
    }

    child = fork();
    if (child < 0) {
        bench_die("fork: %s", strerror(errno));
    }
    if (child == 0) {
        bench_watch_parent(getppid());
        bench_log_pid();
        if (ncpu > 1) {
            bench_pin(0, f.cpu[1]);
        }
        receiver(&f);
        _exit(0);
    }
    bench_set_exit_hook(kill_child);
    if (ncpu > 1) {
        bench_pin(0, f.cpu[0]);
    }
    while (!atomic_load(&f.ctl->ready)) {
        bench_check_stop();
        if (waitpid(child, &status, WNOHANG) == child) {
            child = 0;
            bench_die("the receiver exited before it started");
        }
    }

    t0 = bench_now_us();
    sender(&f);
    if (waitpid(child, &status, 0) != child) {
        bench_die("waitpid: %s", strerror(errno));
    }
    us    = bench_now_us() - t0;
    child = 0;
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        bench_die("the receiver failed");
    }
    printf("copy_floor mode=%s size=%zu msgs=%llu mr=%.0f us=%.0f\n",
           f.place ? "place" : "peek", f.size, (unsigned long long)f.count,
           f.count / (us * 1e-6), us);
    return 0;
}
