/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: errors a limit of the process or host caused, said as such.
 */
#ifndef UCT_SRQ_LIMIT_H_
#define UCT_SRQ_LIMIT_H_

#include <ucs/type/status.h>
#include <stddef.h>

#define UCT_SRQ_STRERROR_MAX  160

/* Is @err a limit this process ran into (memory or address space, file
 * descriptors, space in /dev/shm)? Then it is our error, never a sign
 * that a peer is gone, and trying again will not help */
int uct_srq_err_is_limit(int err);

/* The status for @err: a limit's (UCS_ERR_NO_MEMORY, UCS_ERR_NO_RESOURCE),
 * else @other */
ucs_status_t uct_srq_err_status(int err, ucs_status_t other);

/*
 * strerror(@err) and, for a limit, which one with its value and use, in
 * @buf: "Too many open files (RLIMIT_NOFILE, ulimit -n: 32; 32 in use)".
 * "Too many open files" alone does not say what to raise, nor by how much.
 */
const char *uct_srq_strerror(int err, char *buf, size_t max);

/* uct_srq_strerror with a buffer of the enclosing block, for a log line */
#define UCT_SRQ_STRERROR(_err) \
    uct_srq_strerror((_err), (char[UCT_SRQ_STRERROR_MAX]){0}, \
                     UCT_SRQ_STRERROR_MAX)

#endif
