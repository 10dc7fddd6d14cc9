/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the MPI test programs: a byte pattern, a checker that
 * counts mismatches, and the final verdict (exit status 1 on any error).
 */
#ifndef SRQ_MPI_CHECK_H_
#define SRQ_MPI_CHECK_H_

#include <mpi.h>
#include <stdio.h>
#include <stddef.h>

static int srq_errors;

static inline unsigned char srq_pattern(long seed, size_t i)
{
    return (unsigned char)((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

static inline void srq_fill(void *buf, size_t len, long seed)
{
    for (size_t i = 0; i < len; ++i) {
        ((unsigned char*)buf)[i] = srq_pattern(seed, i);
    }
}

static inline void srq_check(const void *buf, size_t len, long seed,
                             const char *what)
{
    for (size_t i = 0; i < len; ++i) {
        if (((const unsigned char*)buf)[i] != srq_pattern(seed, i)) {
            fprintf(stderr, "%s: byte %zu of %zu is wrong\n", what, i, len);
            ++srq_errors;
            return;
        }
    }
}

#define SRQ_EXPECT(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            ++srq_errors; \
        } \
    } while (0)

/* Sum the errors of all ranks; rank 0 prints the verdict */
static inline int srq_finish(const char *name)
{
    int rank, total;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&srq_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s: %s (%d error(s))\n", total ? "FAIL" : "PASS", name, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
