/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: registering a descriptor with UCX's async thread.
 */
#ifndef UCT_SRQ_ASYNC_H_
#define UCT_SRQ_ASYNC_H_

#include <ucs/async/async_fwd.h>

/*
 * ucs_async_set_event_handler in thread mode, refused with
 * UCS_ERR_NO_RESOURCE when too few file
 * descriptors are left to start UCX's async thread: UCX 1.13 aborts the
 * process when that start fails (ucs_async_thread_start asserts), so the
 * room is made sure of before.
 */
ucs_status_t uct_srq_async_add_fd(int fd, ucs_async_event_cb_t cb, void *arg);

#endif
