/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI RMA through osc ucx: put, get and accumulate, in fence epochs and
 * under passive-target locks; verified.
 */
#include "mpi_check.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const int count = 1 << 16;
    int rank, size, right, left;
    unsigned char *base, *local;
    long *acc;
    MPI_Win win, acc_win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left  = (rank + size - 1) % size;
    local = malloc(count);

    MPI_Win_allocate(count, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, count);

    /* fence: put to the right, get from the left */
    srq_fill(local, count, 10 + rank);
    MPI_Win_fence(0, win);
    MPI_Put(local, count, MPI_BYTE, right, 0, count, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    srq_check(base, count, 10 + left, "fence put");
    memset(local, 0, count);
    MPI_Get(local, count, MPI_BYTE, left, 0, count, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    srq_check(local, count, 10 + (left + size - 1) % size, "fence get");

    /* passive target: lock the right neighbour, put, unlock; then check */
    MPI_Barrier(MPI_COMM_WORLD);
    srq_fill(local, count, 20 + rank);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(local, count, MPI_BYTE, right, 0, count, MPI_BYTE, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    srq_check(base, count, 20 + left, "passive put");
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);

    /* accumulate: everyone adds rank+1 to every element on rank 0 */
    MPI_Win_allocate(1024 * sizeof(long), sizeof(long), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &acc, &acc_win);
    memset(acc, 0, 1024 * sizeof(long));
    long *add = malloc(1024 * sizeof(long));
    for (int i = 0; i < 1024; ++i) {
        add[i] = rank + 1;
    }
    MPI_Win_fence(0, acc_win);
    MPI_Accumulate(add, 1024, MPI_LONG, 0, 0, 1024, MPI_LONG, MPI_SUM, acc_win);
    MPI_Win_fence(0, acc_win);
    if (rank == 0) {
        for (int i = 0; i < 1024; ++i) {
            if (acc[i] != (long)size * (size + 1) / 2) {
                SRQ_EXPECT(0, "accumulate[%d] = %ld", i, acc[i]);
                break;
            }
        }
    }
    /* fetch-and-op under a lock, once rank 0 has checked the sums: a
     * passive-target epoch needs nothing from the target, so without the
     * barrier another rank's fetch-and-op could land on acc[1] while rank 0
     * still reads it (CI saw accumulate[1] = 4 of 3) */
    MPI_Barrier(MPI_COMM_WORLD);
    long one = 1, old;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, acc_win);
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 1, MPI_SUM, acc_win);
    MPI_Win_unlock(0, acc_win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        SRQ_EXPECT(acc[1] == (long)size * (size + 1) / 2 + size,
                   "fetch_and_op total %ld", acc[1]);
    }
    MPI_Win_free(&acc_win);
    free(add);
    free(local);
    return srq_finish("rma");
}
