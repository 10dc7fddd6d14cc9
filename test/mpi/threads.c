/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_THREAD_MULTIPLE smoke test: two threads per rank exchange tagged
 * messages with the partner rank at the same time.
 */
#include "mpi_check.h"
#include <pthread.h>
#include <stdlib.h>

static int rank, peer;

static void *worker(void *arg)
{
    long t = (long)arg;
    unsigned char sbuf[4096], rbuf[4096];

    for (int i = 0; i < 200; ++i) {
        srq_fill(sbuf, sizeof(sbuf), rank * 1000 + t * 100 + i % 100);
        MPI_Sendrecv(sbuf, sizeof(sbuf), MPI_BYTE, peer, (int)t, rbuf,
                     sizeof(rbuf), MPI_BYTE, peer, (int)t, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        srq_check(rbuf, sizeof(rbuf), peer * 1000 + t * 100 + i % 100,
                  "thread sendrecv");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    pthread_t th[2];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    SRQ_EXPECT(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    peer = rank ^ 1;
    if ((provided == MPI_THREAD_MULTIPLE) && (peer < size)) {
        for (long t = 0; t < 2; ++t) {
            pthread_create(&th[t], NULL, worker, (void*)t);
        }
        for (int t = 0; t < 2; ++t) {
            pthread_join(th[t], NULL);
        }
    }
    return srq_finish("thread_multiple");
}
