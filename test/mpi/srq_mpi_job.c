/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq_mpi_job: the main job. Every result is verified; any mismatch makes
 * the job fail.
 *
 *  1. latency/bandwidth sweep: ping-pong between ranks 0 and 1, 1 B .. 4 MiB
 *     (eager and rendezvous). The timed loop only moves data, so the
 *     printed figures are the transport's: it rotates through SLOTS send
 *     and receive buffers filled (and poisoned) beforehand, each with a
 *     pattern of its own, and every byte of every receive buffer is
 *     checked after the loop against the message that last landed there;
 *  2. alltoall among all ranks, every block checked;
 *  3. RMA exchange: each rank puts into its right neighbour's window
 *     (MPI_Win_fence epochs) and gets from its left one, checked.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE  (4u << 20)

static int errors;

static unsigned char pattern(int seed, size_t i)
{
    return (unsigned char)((seed * 131 + i * 7) & 0xff);
}

static void fill(unsigned char *buf, size_t len, int seed)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = pattern(seed, i);
    }
}

static void check(const unsigned char *buf, size_t len, int seed,
                  const char *what)
{
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != pattern(seed, i)) {
            fprintf(stderr, "%s: byte %zu of %zu is wrong\n", what, i, len);
            ++errors;
            return;
        }
    }
}

#define SLOTS  4

/* The pattern of the message sent in slot @k of size @len by @rank */
static int slot_seed(int rank, size_t len, int k)
{
    return (int)(len % 1000) * 16 + rank * SLOTS + k;
}

/* Fill our send slots, poison our receive slots */
static void sweep_prepare(int rank, size_t len, unsigned char **sbuf,
                          unsigned char **rbuf)
{
    for (int k = 0; k < SLOTS; ++k) {
        fill(sbuf[k], len, slot_seed(rank, len, k));
        memset(rbuf[k], 0x5a ^ k, len);
    }
}

/* One timed size: @iters ping-pongs after 5 untimed ones; returns the
 * seconds of one way */
static double sweep_size(int rank, size_t len, int iters, unsigned char **sbuf,
                         unsigned char **rbuf)
{
    int peer = 1 - rank;
    double t0 = 0;

    for (int i = -5; i < iters; ++i) {
        int k = (i + 5) % SLOTS;

        if (i == 0) {
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            MPI_Send(sbuf[k], (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf[k], (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf[k], (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf[k], (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2;
}

static void sweep(int rank, unsigned char **sbuf, unsigned char **rbuf)
{
    if (rank == 0) {
        printf("%10s %14s %14s\n", "bytes", "latency_us", "bandwidth_MBps");
    }
    for (size_t len = 1; len <= MAX_SIZE; len *= 4) {
        int iters = (len <= 65536) ? 200 : 20;
        double dt;

        if (rank > 1) {
            continue;
        }
        sweep_prepare(rank, len, sbuf, rbuf);
        dt = sweep_size(rank, len, iters, sbuf, rbuf);
        /* every slot received at least once (5 + iters >= SLOTS) */
        for (int k = 0; k < SLOTS; ++k) {
            check(rbuf[k], len, slot_seed(1 - rank, len, k),
                  rank ? "ping-pong request" : "ping-pong reply");
        }
        if (rank == 0) {
            printf("%10zu %14.2f %14.1f\n", len, dt * 1e6, len / dt / 1e6);
        }
    }
}

static void alltoall(int rank, int size)
{
    const int block = 1024;
    unsigned char *send = malloc((size_t)block * size);
    unsigned char *recv = malloc((size_t)block * size);

    for (int peer = 0; peer < size; ++peer) {
        fill(send + (size_t)peer * block, block, rank * 1000 + peer);
    }
    MPI_Alltoall(send, block, MPI_BYTE, recv, block, MPI_BYTE, MPI_COMM_WORLD);
    for (int peer = 0; peer < size; ++peer) {
        check(recv + (size_t)peer * block, block, peer * 1000 + rank, "alltoall");
    }
    free(send);
    free(recv);
}

static void rma(int rank, int size)
{
    const int count = 4096;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *base, *local = malloc(count);
    MPI_Win win;

    MPI_Win_allocate(count, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, count);
    fill(local, count, 500 + rank);

    MPI_Win_fence(0, win);
    MPI_Put(local, count, MPI_BYTE, right, 0, count, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    check(base, count, 500 + left, "MPI_Put from the left neighbour");

    memset(local, 0, count);
    MPI_Get(local, count, MPI_BYTE, left, 0, count, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    /* the left neighbour's window holds what its own left one put */
    check(local, count, 500 + (left + size - 1) % size, "MPI_Get");

    MPI_Win_free(&win);
    free(local);
}

int main(int argc, char **argv)
{
    int rank, size, total;
    unsigned char *sbuf[SLOTS], *rbuf[SLOTS];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "srq_mpi_job needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int k = 0; k < SLOTS; ++k) {
        sbuf[k] = malloc(MAX_SIZE);
        rbuf[k] = malloc(MAX_SIZE);
        if ((sbuf[k] == NULL) || (rbuf[k] == NULL)) {
            fprintf(stderr, "srq_mpi_job: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    if (rank == 0) {
        printf("== ping-pong sweep, ranks 0 <-> 1\n");
    }
    sweep(rank, sbuf, rbuf);
    MPI_Barrier(MPI_COMM_WORLD);

    alltoall(rank, size);
    rma(rank, size);

    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("== alltoall (%d ranks x 1 KiB) and RMA put/get: %s\n", size,
               total ? "FAILED" : "verified");
        printf("%s: srq_mpi_job (%d error(s))\n", total ? "FAIL" : "PASS", total);
    }
    for (int k = 0; k < SLOTS; ++k) {
        free(sbuf[k]);
        free(rbuf[k]);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
