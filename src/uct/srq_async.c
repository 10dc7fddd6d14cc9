/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: registering a descriptor with UCX's async thread (srq_async.h).
 */
#define _GNU_SOURCE
#include "srq_async.h"
#include "srq_limit.h"

#include <ucs/sys/event_set.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What starting the thread creates: its wake-up pipe and its epoll set */
#define UCT_SRQ_ASYNC_THREAD_FDS 3

/* Our handlers registered now: while there is one, UCX's async thread runs
 * (each holds a use of it) and another needs neither a descriptor nor a
 * thread more - a rank with just the descriptors it needs must not be
 * refused its handshake timer for room only a start would take */
static unsigned uct_srq_async_handlers;

/* Can @count more descriptors be made now? Probed by duplicating @fd (a
 * descriptor the caller holds) and closing the copies at once: 0 or the
 * errno of the first that could not be made */
static int uct_srq_async_fds_left(int fd, int count)
{
    int dups[UCT_SRQ_ASYNC_THREAD_FDS];
    int i, n, err = 0;

    for (n = 0; n < count; ++n) {
        dups[n] = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (dups[n] < 0) {
            err = errno;
            break;
        }
    }
    for (i = 0; i < n; ++i) {
        close(dups[i]);
    }
    return err;
}

static void *uct_srq_async_trial(void *arg)
{
    return arg;
}

/*
 * Can a thread start now? One is started as UCX starts its own (default
 * attributes, ucs_pthread_create) and joined at once: 0 or the errno of
 * pthread_create. glibc keeps the stack of a joined thread for the next
 * one, so a thread that started here leaves room for UCX's.
 */
static int uct_srq_async_thread_can_start(void)
{
    pthread_t thread;
    int ret;

    ret = pthread_create(&thread, NULL, uct_srq_async_trial, NULL);
    if (ret == 0) {
        pthread_join(thread, NULL);
    }
    return ret;
}

/* The default stack a thread maps, in KiB (0: unknown) */
static size_t uct_srq_async_stack_kib(void)
{
    pthread_attr_t attr;
    size_t size = 0;

    if (pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
    }
    return size / 1024;
}

/* Is there room for UCX's async thread to start? UCS_OK, or why not */
static ucs_status_t uct_srq_async_room(int fd, char *why, size_t max)
{
    int err;

    err = uct_srq_async_fds_left(fd, UCT_SRQ_ASYNC_THREAD_FDS);
    if (err != 0) {
        snprintf(why, max, "%d more file descriptors are needed: %s",
                 UCT_SRQ_ASYNC_THREAD_FDS, UCT_SRQ_STRERROR(err));
        return UCS_ERR_NO_RESOURCE;
    }
    err = uct_srq_async_thread_can_start();
    if (err != 0) {
        /* pthread_create says EAGAIN for a stack it could not map: the
         * address space is what a thread needs most */
        snprintf(why, max, "pthread_create: %s, and a thread's stack is %zu "
                 "KiB", UCT_SRQ_STRERROR(err), uct_srq_async_stack_kib());
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

ucs_status_t uct_srq_async_add_fd(int fd, ucs_async_event_cb_t cb, void *arg,
                                  char *why, size_t max)
{
    ucs_status_t status;

    if (__atomic_load_n(&uct_srq_async_handlers, __ATOMIC_ACQUIRE) == 0) {
        status = uct_srq_async_room(fd, why, max);
        if (status != UCS_OK) {
            return status;
        }
    }
    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_MUTEX, fd,
                                         UCS_EVENT_SET_EVREAD, cb, arg, NULL);
    if (status == UCS_OK) {
        __atomic_fetch_add(&uct_srq_async_handlers, 1, __ATOMIC_RELEASE);
    }
    return status;
}

void uct_srq_async_remove_fd(int fd)
{
    ucs_async_remove_handler(fd, 1);
    __atomic_fetch_sub(&uct_srq_async_handlers, 1, __ATOMIC_RELEASE);
}
