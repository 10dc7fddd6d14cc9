/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: registering a descriptor with UCX's async thread.
 */
#ifndef UCT_SRQ_ASYNC_H_
#define UCT_SRQ_ASYNC_H_

#include <ucs/async/async_fwd.h>

#include <stddef.h>

/*
 * ucs_async_set_event_handler in thread mode, refused while UCX's async
 * thread could not start: UCX 1.13 aborts the process when that start
 * fails (ucs_async_thread_start asserts), so the room is made sure of
 * before, unless a handler of ours keeps the thread running already -
 * UCS_ERR_NO_RESOURCE when too few file descriptors are left,
 * UCS_ERR_NO_MEMORY when a thread cannot start (its stack does not fit
 * under RLIMIT_AS, or RLIMIT_NPROC), with the limit and its value in @why
 * (@max bytes).
 */
ucs_status_t uct_srq_async_add_fd(int fd, ucs_async_event_cb_t cb, void *arg,
                                  char *why, size_t max);

/* Remove a handler uct_srq_async_add_fd added, waiting for a call under
 * way */
void uct_srq_async_remove_fd(int fd);

#endif
