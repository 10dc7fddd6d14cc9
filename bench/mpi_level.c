/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/mpi_level - what an MPI user sees of a transport: MPI (or
 * OpenSHMEM, built with -DSRQ_SHMEM) operations between two ranks, timed
 * with no data check in the loop, at the sizes given. One line a point:
 *
 *   mpi op=<op> size=<bytes> value=<us or MB/s> unit=<us|MBps>
 *
 * MPI ops (rank 0 times, rank 1 answers; every other rank idles):
 *   pp_lat   ping-pong, one-way time
 *   pp_bw    a window of WINDOW MPI_Isend then a 1-byte reply, bandwidth
 *   put_lat  MPI_Put + MPI_Win_flush (passive target, lock_all), time
 *   put_bw   WINDOW MPI_Put then one flush, bandwidth
 *   get_lat  MPI_Get + MPI_Win_flush, time
 *   get_bw   WINDOW MPI_Get then one flush, bandwidth
 *   a2a      MPI_Alltoall of <size> bytes to every rank, time per call
 *            (all ranks)
 *   rx_cpu   pp_bw's receiver (rank 1): its process CPU time per message
 *            received (user and system, its progress threads included)
 *   unexp_bw every other rank sends WINDOW messages to rank 0, which
 *            posts its receives only after they had 20 ms to arrive
 *            (unexpected: eager ones wait in the transport, rendezvous
 *            requests for their receive); from the first receive posted
 *            to the last completed, bandwidth (many-to-one, all ranks)
 * OpenSHMEM ops (PE 0 times):
 *   shmem_put_lat  shmem_putmem + shmem_quiet, time
 *   shmem_get_lat  shmem_getmem, time
 *
 * Usage: mpi_level OPS SIZES [ITERS]   (comma-separated lists; built
 * with -DSRQ_SHMEM by oshcc it is shmem_level, for the shmem_ ops)
 * Iterations shrink with size (ITERS at 8 B, at least 10). Data is
 * checked once per point, outside the timed loop: a wrong byte fails the
 * run (exit 1). MPI_LEVEL_WRONG=1 in the environment makes ping-pong's
 * rank 0 send a wrong pattern, to see that check fail.
 */
#ifdef SRQ_SHMEM
#include <shmem.h>
#else
#include <mpi.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW     32
#define MAX_SIZE   (4u << 20)

static int iters_for(int base, size_t size)
{
    int n = (size <= 4096) ? base : (int)(base * 4096.0 / (double)size);

    return (n < 10) ? 10 : n;
}

static void print(const char *op, size_t size, double seconds, size_t bytes)
{
    if (bytes == 0) {
        printf("mpi op=%s size=%zu value=%.3f unit=us\n", op, size,
               seconds * 1e6);
    } else {
        printf("mpi op=%s size=%zu value=%.1f unit=MBps\n", op, size,
               (double)bytes / seconds / 1e6);
    }
    fflush(stdout);
}

static int check(const unsigned char *buf, size_t size, unsigned char v,
                 const char *what)
{
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != v) {
            fprintf(stderr, "mpi_level: %s: byte %zu of %zu is wrong\n", what,
                    i, size);
            return 1;
        }
    }
    return 0;
}

#ifndef SRQ_SHMEM

static double now(void)
{
    return MPI_Wtime();
}

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ping-pong (@bw 0), or windows of WINDOW messages and a reply (1: the
 * bandwidth, 2: the receiver's CPU per message), then the last message's
 * bytes checked */
static int pp(int rank, size_t size, int iters, int bw, unsigned char *sbuf,
              unsigned char *rbuf)
{
    MPI_Request req[WINDOW];
    double t0 = 0, c0 = 0, cpu;
    int peer = 1 - rank;

    memset(sbuf, 0x30 + rank + ((rank == 0) && getenv("MPI_LEVEL_WRONG")),
           size);
    memset(rbuf, 0, size);
    for (int i = -5; i < iters; ++i) {
        if (i == 0) {
            t0 = now();
            c0 = cpu_now();
        }
        if (bw) {
            if (rank == 0) {
                for (int w = 0; w < WINDOW; ++w) {
                    MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, 1,
                              MPI_COMM_WORLD, &req[w]);
                }
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Recv(rbuf, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < WINDOW; ++w) {
                    MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, 1,
                              MPI_COMM_WORLD, &req[w]);
                }
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Send(sbuf, 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            }
        } else if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        double t = (now() - t0) / iters;
        if (bw == 1) {
            print("pp_bw", size, t, size * WINDOW);
        } else if (!bw) {
            print("pp_lat", size, t / 2, 0);
        }
    }
    if (bw == 2) {
        /* the receiver's CPU per message, printed by rank 0 */
        cpu = (cpu_now() - c0) / ((double)iters * WINDOW);
        if (rank == 1) {
            MPI_Send(&cpu, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&cpu, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            print("rx_cpu", size, cpu, 0);
        }
    }
    return check(rbuf, (bw && (rank == 0)) ? 1 : size, 0x30 + peer,
                 bw ? "pp_bw" : "pp_lat");
}

/* put or get against rank 1's window; rank 1 only waits */
static int rma(int rank, size_t size, int iters, int get, int bw,
               unsigned char *local, unsigned char *base, MPI_Win win)
{
    int n = bw ? WINDOW : 1, err = 0;
    const char *op = get ? (bw ? "get_bw" : "get_lat") :
                           (bw ? "put_bw" : "put_lat");
    double t0 = 0;

    memset(local, get ? 0 : 0x41, size);
    memset(base, get ? 0x42 : 0, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = -5; i < iters; ++i) {
            if (i == 0) {
                t0 = now();
            }
            for (int w = 0; w < n; ++w) {
                if (get) {
                    MPI_Get(local, (int)size, MPI_BYTE, 1, 0, (int)size,
                            MPI_BYTE, win);
                } else {
                    MPI_Put(local, (int)size, MPI_BYTE, 1, 0, (int)size,
                            MPI_BYTE, win);
                }
            }
            MPI_Win_flush(1, win);
        }
        print(op, size, (now() - t0) / iters, bw ? size * n : 0);
        if (get) {
            err = check(local, size, 0x42, op);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if ((rank == 1) && !get) {
        MPI_Win_sync(win);
        err = check(base, size, 0x41, op);
    }
    return err;
}

static int a2a(int rank, int nranks, size_t size, int iters)
{
    unsigned char *s = malloc(size * nranks), *r = malloc(size * nranks);
    double t0 = 0;
    int err = 0;

    for (int p = 0; p < nranks; ++p) {
        memset(s + (size_t)p * size, (rank * 16 + p) & 0xff, size);
    }
    for (int i = -2; i < iters; ++i) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now();
        }
        MPI_Alltoall(s, (int)size, MPI_BYTE, r, (int)size, MPI_BYTE,
                     MPI_COMM_WORLD);
    }
    if (rank == 0) {
        print("a2a", size, (now() - t0) / iters, 0);
    }
    for (int p = 0; p < nranks; ++p) {
        err |= check(r + (size_t)p * size, size, (p * 16 + rank) & 0xff,
                     "a2a");
    }
    free(s);
    free(r);
    return err;
}

/* many to one, the receives posted after the messages came */
static int unexp(int rank, int nranks, size_t size, unsigned char *buf)
{
    int n = (nranks - 1) * WINDOW, err = 0;
    MPI_Request *req = malloc(sizeof(*req) * (size_t)n);
    unsigned char *r = (rank == 0) ? malloc(size * (size_t)n) : NULL;
    struct timespec pause = {0, 20 * 1000 * 1000};
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        nanosleep(&pause, NULL); /* no MPI call: nothing is posted */
        t0 = now();
        for (int i = 0; i < n; ++i) {
            MPI_Irecv(r + (size_t)i * size, (int)size, MPI_BYTE,
                      1 + i / WINDOW, i % WINDOW, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        print("unexp_bw", size, now() - t0, size * (size_t)n);
        for (int i = 0; (i < n) && !err; ++i) {
            err = check(r + (size_t)i * size, size,
                        (unsigned char)(0x60 + 1 + i / WINDOW), "unexp_bw");
        }
    } else {
        memset(buf, 0x60 + rank, size);
        for (int w = 0; w < WINDOW; ++w) {
            MPI_Isend(buf, (int)size, MPI_BYTE, 0, w, MPI_COMM_WORLD, &req[w]);
        }
        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
    }
    free(req);
    free(r);
    return err;
}

static int run(const char *op, size_t size, int base, int rank, int nranks,
               unsigned char *sbuf, unsigned char *rbuf, unsigned char *wbase,
               MPI_Win win)
{
    int iters = iters_for(base, size);

    if (!strcmp(op, "a2a")) {
        return a2a(rank, nranks, size, iters / 4 + 1);
    }
    if (!strcmp(op, "unexp_bw")) {
        return unexp(rank, nranks, size, sbuf);
    }
    if (!strncmp(op, "put_", 4) || !strncmp(op, "get_", 4)) {
        return (rank < 2) ? rma(rank, size, iters, op[0] == 'g',
                                strstr(op, "_bw") != NULL, sbuf, wbase, win) :
                            (MPI_Barrier(MPI_COMM_WORLD),
                             MPI_Barrier(MPI_COMM_WORLD), 0);
    }
    if (rank > 1) {
        return 0;
    }
    if (!strcmp(op, "pp_lat") || !strcmp(op, "pp_bw") ||
        !strcmp(op, "rx_cpu")) {
        return pp(rank, size, !strcmp(op, "pp_lat") ? iters : iters / 4 + 1,
                  !strcmp(op, "pp_bw") ? 1 : !strcmp(op, "rx_cpu") ? 2 : 0,
                  sbuf, rbuf);
    }
    if (rank == 0) {
        fprintf(stderr, "mpi_level: unknown op '%s'\n", op);
    }
    return 1;
}

int main(int argc, char **argv)
{
    int rank, nranks, err = 0, all, base;
    unsigned char *sbuf, *rbuf, *wbase;
    char *ops, *sizes, *o, *s, *so, *ss;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((argc < 3) || (nranks < 2)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpi_level OPS SIZES [ITERS] (2+ ranks)\n");
        }
        MPI_Finalize();
        return 2;
    }
    base  = (argc > 3) ? atoi(argv[3]) : 2000;
    sbuf  = malloc(MAX_SIZE);
    rbuf  = malloc(MAX_SIZE);
    MPI_Win_allocate(MAX_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);
    MPI_Win_lock_all(0, win);
    ops = strdup(argv[1]);
    for (o = strtok_r(ops, ",", &so); o != NULL; o = strtok_r(NULL, ",", &so)) {
        sizes = strdup(argv[2]);
        for (s = strtok_r(sizes, ",", &ss); s != NULL;
             s = strtok_r(NULL, ",", &ss)) {
            size_t size = strtoul(s, NULL, 0);
            if ((size == 0) || (size > MAX_SIZE)) {
                continue;
            }
            err |= run(o, size, base, rank, nranks, sbuf, rbuf, wbase, win);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        free(sizes);
    }
    free(ops);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Allreduce(&err, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return all ? 1 : 0;
}

#else /* SRQ_SHMEM */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int shmem_op(const char *op, size_t size, int iters, int me,
                    unsigned char *sym, unsigned char *local)
{
    int get = !strcmp(op, "shmem_get_lat"), err = 0;
    double t0 = 0;

    memset(sym, get ? 0x51 : 0, size);
    memset(local, get ? 0 : 0x52, size);
    shmem_barrier_all();
    if (me == 0) {
        for (int i = -5; i < iters; ++i) {
            if (i == 0) {
                t0 = now();
            }
            if (get) {
                shmem_getmem(local, sym, size, 1);
            } else {
                shmem_putmem(sym, local, size, 1);
                shmem_quiet();
            }
        }
        print(op, size, (now() - t0) / iters, 0);
        if (get) {
            err = check(local, size, 0x51, op);
        }
    }
    shmem_barrier_all();
    if ((me == 1) && !get) {
        err = check(sym, size, 0x52, op);
    }
    return err;
}

int main(int argc, char **argv)
{
    static int err, all; /* symmetric: every PE adds its errors to PE 0's */
    unsigned char *sym, *local;
    char *o, *s, *so, *ss, *ops, *sizes;
    int me, base;

    shmem_init();
    me = shmem_my_pe();
    if ((argc < 3) || (shmem_n_pes() < 2)) {
        if (me == 0) {
            fprintf(stderr, "usage: shmem_level OPS SIZES [ITERS] (2+ PEs)\n");
        }
        shmem_finalize();
        return 2;
    }
    base  = (argc > 3) ? atoi(argv[3]) : 2000;
    sym   = shmem_malloc(MAX_SIZE);
    local = malloc(MAX_SIZE);
    ops   = strdup(argv[1]);
    for (o = strtok_r(ops, ",", &so); o != NULL; o = strtok_r(NULL, ",", &so)) {
        if (strcmp(o, "shmem_put_lat") && strcmp(o, "shmem_get_lat")) {
            continue;
        }
        sizes = strdup(argv[2]);
        for (s = strtok_r(sizes, ",", &ss); s != NULL;
             s = strtok_r(NULL, ",", &ss)) {
            size_t size = strtoul(s, NULL, 0);
            if ((size > 0) && (size <= MAX_SIZE) && (me < 2)) {
                err |= shmem_op(o, size, iters_for(base, size), me, sym, local);
            } else if ((size > 0) && (size <= MAX_SIZE)) {
                shmem_barrier_all();
                shmem_barrier_all();
            }
        }
        free(sizes);
    }
    free(ops);
    shmem_int_atomic_add(&all, err, 0);
    shmem_barrier_all();
    shmem_free(sym);
    free(local);
    shmem_finalize();
    return (all || err) ? 1 : 0;
}

#endif
