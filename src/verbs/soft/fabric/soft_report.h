/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the line it writes when a limit of the process or
 * host stops it.
 */
#ifndef SRQ_SOFT_REPORT_H_
#define SRQ_SOFT_REPORT_H_

#include <stdbool.h>

/* Is @err one of the limits a process runs into - memory or address space
 * (ENOMEM), descriptors (EMFILE, ENFILE), space in /dev/shm (ENOSPC)? Such
 * an error is this process's, never a sign that a peer is gone */
bool srq_soft_err_is_limit(int err);

/*
 * "ucx-srq: soft0: <what>: <strerror(err)> (<the limit and its value>)"
 * on stderr, when @err is a limit (srq_soft_err_is_limit, or EAGAIN of a
 * thread that could not start), once per process and errno. The errno a verb returns says "Cannot allocate
 * memory", not that mapping a peer's 5 MiB tables passed RLIMIT_AS, and
 * through libibverbs nothing else reaches the program: the device says
 * what it was doing, the size, and the limit.
 */
void srq_soft_report(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
