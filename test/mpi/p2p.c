/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point: blocking and nonblocking, eager and rendezvous sizes up
 * to 16 MiB, and wildcard receives; every byte verified.
 */
#include "mpi_check.h"
#include <stdlib.h>

#define MAX (16u << 20)

int main(int argc, char **argv)
{
    int rank, size, peer;
    unsigned char *sbuf, *rbuf;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sbuf = malloc(MAX);
    rbuf = malloc(MAX);
    peer = rank ^ 1;

    /* blocking ping-pong between pairs (0,1), (2,3), ... */
    for (size_t len = 0; len <= MAX; len = len ? len * 4 : 1) {
        if (peer >= size) {
            break;
        }
        if (rank < peer) {
            srq_fill(sbuf, len, len);
            MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &st);
            srq_check(rbuf, len, len + 1, "blocking reply");
        } else {
            MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
            srq_check(rbuf, len, len, "blocking request");
            srq_fill(sbuf, len, len + 1);
            MPI_Send(sbuf, (int)len, MPI_BYTE, peer, 8, MPI_COMM_WORLD);
        }
    }

    /* nonblocking ring exchange: N messages in flight each way */
    for (size_t len = 1; len <= (4u << 20); len *= 16) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        enum { N = 4 };
        MPI_Request req[2 * N];

        for (int k = 0; k < N; ++k) {
            srq_fill(sbuf + k * len, len, rank * 100 + k + len);
            MPI_Irecv(rbuf + k * len, (int)len, MPI_BYTE, left, k,
                      MPI_COMM_WORLD, &req[k]);
            MPI_Isend(sbuf + k * len, (int)len, MPI_BYTE, right, k,
                      MPI_COMM_WORLD, &req[N + k]);
        }
        MPI_Waitall(2 * N, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < N; ++k) {
            srq_check(rbuf + k * len, len, left * 100 + k + len,
                      "nonblocking ring");
        }
    }

    /* wildcard receives: rank 0 takes one message from everyone, any order */
    if (rank == 0) {
        int seen = 0;
        for (int i = 1; i < size; ++i) {
            MPI_Recv(rbuf, 4096, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                     MPI_COMM_WORLD, &st);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            SRQ_EXPECT(st.MPI_TAG == 100 + st.MPI_SOURCE, "wildcard tag %d from %d",
                       st.MPI_TAG, st.MPI_SOURCE);
            SRQ_EXPECT(count == 1000 + st.MPI_SOURCE, "wildcard count %d", count);
            srq_check(rbuf, count, st.MPI_SOURCE, "wildcard payload");
            seen |= 1 << st.MPI_SOURCE;
        }
        SRQ_EXPECT(seen == ((1 << size) - 2), "wildcard sources 0x%x", seen);
    } else {
        srq_fill(sbuf, 1000 + rank, rank);
        MPI_Send(sbuf, 1000 + rank, MPI_BYTE, 0, 100 + rank, MPI_COMM_WORLD);
    }

    free(sbuf);
    free(rbuf);
    return srq_finish("p2p");
}
