/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A job in which one rank dies: every rank prints its pid ("pid RANK PID"),
 * then all ranks exchange verified messages in a ring (eager and rendezvous
 * sizes) and allreduce the error count. After KILL_AFTER rounds the victim
 * rank (argv[1], default 2) reports "traffic ok ROUNDS" and sends itself
 * SIGKILL; the other ranks go on exchanging with it forever, so the job can
 * only end by the launcher noticing the death and tearing the job down.
 * A survivor that gets an MPI error prints it and exits non-zero.
 */
#include "mpi_check.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define KILL_AFTER 50

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 8, 4096, 65536, 1 << 20 };
    int rank, size, victim = (argc > 1) ? atoi(argv[1]) : 2;
    unsigned char *sbuf, *rbuf;
    long round;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("pid %d %d\n", rank, (int)getpid());
    fflush(stdout);

    sbuf = malloc(1 << 20);
    rbuf = malloc(1 << 20);
    if (!sbuf || !rbuf) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (round = 0; ; ++round) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        size_t len = sizes[round % 4];
        int total;

        if ((rank == victim) && (round == KILL_AFTER)) {
            printf("traffic ok %ld rounds, rank %d killing itself\n",
                   round, rank);
            fflush(stdout);
            raise(SIGKILL);
        }
        srq_fill(sbuf, len, round * size + rank);
        MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, right, 0, rbuf, (int)len,
                     MPI_BYTE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        srq_check(rbuf, len, round * size + left, "ring");
        MPI_Allreduce(&srq_errors, &total, 1, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        if (total) {
            if (rank == 0) {
                printf("FAIL: %d error(s) in round %ld\n", total, round);
            }
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return 0;
}
