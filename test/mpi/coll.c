/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives: bcast, allreduce, alltoall, alltoallv, allgather, verified.
 */
#include "mpi_check.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* bcast from every root, small and large */
    for (int root = 0; root < size; ++root) {
        for (size_t len = 8; len <= (2u << 20); len *= 64) {
            unsigned char *buf = malloc(len);
            if (rank == root) {
                srq_fill(buf, len, root + len);
            }
            MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
            srq_check(buf, len, root + len, "bcast");
            free(buf);
        }
    }

    /* allreduce: sums and maxima of known values */
    {
        enum { N = 10000 };
        long *in = malloc(N * sizeof(long)), *out = malloc(N * sizeof(long));
        for (int i = 0; i < N; ++i) {
            in[i] = (long)rank * i + 1;
        }
        MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; ++i) {
            long expect = (long)i * size * (size - 1) / 2 + size;
            if (out[i] != expect) {
                SRQ_EXPECT(0, "allreduce[%d] = %ld, expected %ld", i, out[i], expect);
                break;
            }
        }
        MPI_Allreduce(&rank, &in[0], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        SRQ_EXPECT(*(int*)&in[0] == size - 1, "allreduce max");
        free(in);
        free(out);
    }

    /* alltoall and alltoallv (rank r sends r+peer+1 blocks of 64 bytes) */
    {
        const int block = 64;
        int *scounts = malloc(size * sizeof(int)), *sdispl = malloc(size * sizeof(int));
        int *rcounts = malloc(size * sizeof(int)), *rdispl = malloc(size * sizeof(int));
        int stotal = 0, rtotal = 0;
        for (int p = 0; p < size; ++p) {
            scounts[p] = (rank + p + 1) * block;
            rcounts[p] = (p + rank + 1) * block;
            sdispl[p]  = stotal;
            rdispl[p]  = rtotal;
            stotal    += scounts[p];
            rtotal    += rcounts[p];
        }
        unsigned char *s = malloc(stotal), *r = malloc(rtotal);
        for (int p = 0; p < size; ++p) {
            srq_fill(s + sdispl[p], scounts[p], rank * 64 + p);
        }
        MPI_Alltoallv(s, scounts, sdispl, MPI_BYTE, r, rcounts, rdispl, MPI_BYTE,
                      MPI_COMM_WORLD);
        for (int p = 0; p < size; ++p) {
            srq_check(r + rdispl[p], rcounts[p], p * 64 + rank, "alltoallv");
        }
        for (int p = 0; p < size; ++p) {
            srq_fill(s + p * block, block, rank * 64 + p);
        }
        MPI_Alltoall(s, block, MPI_BYTE, r, block, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = 0; p < size; ++p) {
            srq_check(r + p * block, block, p * 64 + rank, "alltoall");
        }
        free(s); free(r); free(scounts); free(sdispl); free(rcounts); free(rdispl);
    }

    /* allgather */
    {
        const int len = 10000;
        unsigned char *mine = malloc(len), *all = malloc((size_t)len * size);
        srq_fill(mine, len, 77 + rank);
        MPI_Allgather(mine, len, MPI_BYTE, all, len, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = 0; p < size; ++p) {
            srq_check(all + (size_t)p * len, len, 77 + p, "allgather");
        }
        free(mine);
        free(all);
    }
    return srq_finish("coll");
}
