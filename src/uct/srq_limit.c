/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: errors a limit of the process or host caused (srq_limit.h).
 * An MPI rank one descriptor short must read as that, not as "the peer
 * is gone": the limit is named with its value and what is in use.
 */
#define _GNU_SOURCE
#include "srq_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Descriptors counted at most: the count costs a call each */
#define UCT_SRQ_LIMIT_MAX_FDS  65536

int uct_srq_err_is_limit(int err)
{
    return (err == ENOMEM) || (err == EMFILE) || (err == ENFILE) ||
           (err == ENOSPC);
}

ucs_status_t uct_srq_err_status(int err, ucs_status_t other)
{
    if (err == ENOMEM) {
        return UCS_ERR_NO_MEMORY;
    }
    return uct_srq_err_is_limit(err) ? UCS_ERR_NO_RESOURCE : other;
}

/* Descriptors open below @limit: probed, as none may be left to read
 * /proc/self/fd with */
static unsigned long uct_srq_limit_fds_used(rlim_t limit)
{
    unsigned long used = 0;
    rlim_t fd;

    for (fd = 0; (fd < limit) && (fd < UCT_SRQ_LIMIT_MAX_FDS); ++fd) {
        used += (fcntl((int)fd, F_GETFD) >= 0);
    }
    return used;
}

/* The address space this process maps, in KiB, or 0 when unknown */
static unsigned long uct_srq_limit_as_used(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "re");

    if (f != NULL) {
        if (fscanf(f, "%lu", &pages) != 1) {
            pages = 0;
        }
        fclose(f);
    }
    return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

static void uct_srq_limit_nofile(char *buf, size_t max)
{
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        snprintf(buf, max, " (RLIMIT_NOFILE, ulimit -n: %llu; %lu in use)",
                 (unsigned long long)lim.rlim_cur,
                 uct_srq_limit_fds_used(lim.rlim_cur));
    }
}

/* Only where an address space limit is set: without one, ENOMEM is the
 * host's memory, which no number of ours explains */
static void uct_srq_limit_as(char *buf, size_t max)
{
    struct rlimit lim;

    if ((getrlimit(RLIMIT_AS, &lim) == 0) && (lim.rlim_cur != RLIM_INFINITY)) {
        snprintf(buf, max, " (RLIMIT_AS, ulimit -v: %llu KiB; %lu KiB mapped)",
                 (unsigned long long)lim.rlim_cur / 1024,
                 uct_srq_limit_as_used());
    }
}

const char *uct_srq_strerror(int err, char *buf, size_t max)
{
    char limit[96] = "";
    char msg[64];

    if (err == EMFILE) {
        uct_srq_limit_nofile(limit, sizeof(limit));
    } else if ((err == ENOMEM) || (err == EAGAIN)) {
        /* EAGAIN: what a thread whose stack cannot be mapped gets */
        uct_srq_limit_as(limit, sizeof(limit));
    } else if (err == ENFILE) {
        snprintf(limit, sizeof(limit), " (the system's, fs.file-max)");
    }
    snprintf(buf, max, "%s%s", strerror_r(err, msg, sizeof(msg)), limit);
    return buf;
}
