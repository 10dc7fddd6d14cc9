/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: registering a descriptor with UCX's async thread (srq_async.h).
 */
#include "srq_async.h"

#include <ucs/sys/event_set.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* What starting the thread creates: its wake-up pipe and its epoll set */
#define UCT_SRQ_ASYNC_THREAD_FDS 3

/* Can @count more descriptors be made now? Probed by duplicating @fd (a
 * descriptor the caller holds) and closing the copies at once */
static int uct_srq_async_fds_left(int fd, int count)
{
    int dups[UCT_SRQ_ASYNC_THREAD_FDS];
    int i, n, ok = 1;

    for (n = 0; n < count; ++n) {
        dups[n] = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (dups[n] < 0) {
            ok = 0;
            break;
        }
    }
    for (i = 0; i < n; ++i) {
        close(dups[i]);
    }
    return ok;
}

ucs_status_t uct_srq_async_add_fd(int fd, ucs_async_event_cb_t cb, void *arg)
{
    if (!uct_srq_async_fds_left(fd, UCT_SRQ_ASYNC_THREAD_FDS)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_MUTEX, fd,
                                       UCS_EVENT_SET_EVREAD, cb, arg, NULL);
}
