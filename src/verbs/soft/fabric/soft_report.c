/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the line it writes when a limit stops it
 * (soft_report.h). Besides the squatted user directory (soft_lid_dir.c)
 * it is the only thing the library says on its own.
 */
#define _GNU_SOURCE
#include "soft_report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* The errnos said once already, a bit each */
static _Atomic unsigned srq_soft_report_said;

bool srq_soft_err_is_limit(int err)
{
    return (err == ENOMEM) || (err == EMFILE) || (err == ENFILE) ||
           (err == ENOSPC);
}

/* The bit of an errno said once; 0: not one the device speaks of (a
 * thread that cannot start says EAGAIN: a limit too, though errno does
 * not call it one elsewhere) */
static unsigned srq_soft_report_bit(int err)
{
    switch (err) {
    case ENOMEM: return 1u << 0;
    case EMFILE: return 1u << 1;
    case ENFILE: return 1u << 2;
    case ENOSPC: return 1u << 3;
    case EAGAIN: return 1u << 4;
    default:     return 0;
    }
}

/* " (RLIMIT_AS, ulimit -v: 40960 KiB)": the limit behind @err, if any */
static void srq_soft_report_limit(int err, char *buf, size_t len)
{
    struct rlimit lim;

    buf[0] = '\0';
    if ((err == EMFILE) && (getrlimit(RLIMIT_NOFILE, &lim) == 0)) {
        snprintf(buf, len, " (RLIMIT_NOFILE, ulimit -n: %llu)",
                 (unsigned long long)lim.rlim_cur);
    } else if (((err == ENOMEM) || (err == EAGAIN)) &&
               (getrlimit(RLIMIT_AS, &lim) == 0) &&
               (lim.rlim_cur != RLIM_INFINITY)) {
        snprintf(buf, len, " (RLIMIT_AS, ulimit -v: %llu KiB)",
                 (unsigned long long)lim.rlim_cur / 1024);
    } else if (err == ENFILE) {
        snprintf(buf, len, " (the system's, fs.file-max)");
    }
}

void srq_soft_report(int err, const char *fmt, ...)
{
    unsigned bit = srq_soft_report_bit(err);
    char what[256], limit[64], msg[64];
    va_list ap;

    if ((bit == 0) || (atomic_fetch_or(&srq_soft_report_said, bit) & bit)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    srq_soft_report_limit(err, limit, sizeof(limit));
    fprintf(stderr, "ucx-srq: soft0: %s: %s%s\n", what,
            strerror_r(err, msg, sizeof(msg)), limit);
}
