/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: sleeping on a completion channel - arming CQs, the
 * wake request producers answer, the timer for timed work.
 */
#ifndef SRQ_SOFT_WAIT_H_
#define SRQ_SOFT_WAIT_H_

#include "../../dev/srq_verbs_types.h"

#include <stdbool.h>

typedef struct srq_soft_dev srq_soft_dev_t;

/* ibv_req_notify_cq (context->ops) */
int  srq_soft_req_notify_cq(struct ibv_cq *cq, int solicited);
int  srq_soft_get_cq_event(srq_verbs_dev_t *dev,
                           struct ibv_comp_channel *channel,
                           struct ibv_cq **cq_p, void **cq_context_p);

/*
 * One round of a thread that progresses @dev while no one polls it: run
 * progress, then, unless more packets wait, sleep until a peer pokes us,
 * timed work falls due or @stop_fd is readable. Returns false once @stop_fd
 * is readable.
 */
bool srq_soft_wait_idle(srq_soft_dev_t *dev, int stop_fd);

/*
 * How long the thread leaves a polling user alone before it looks again:
 * first SRQ_SOFT_THREAD_LOOK_MS, twice as long after each look that finds
 * the user still polling, up to SRQ_SOFT_THREAD_LOOK_MAX_MS. A user that
 * polls runs the device itself, so the thread's looks are pure cost on its
 * CPUs (a wakeup that may preempt the poller); the longest look is how
 * late the thread can notice that the user stopped, for work no peer pokes
 * it for (its own timers; a peer's packets get it poked within a tick,
 * soft_progress.c).
 */
#define SRQ_SOFT_THREAD_LOOK_MS      1
#define SRQ_SOFT_THREAD_LOOK_MAX_MS  32
/* ... and while CQs are armed on a channel other than the one holding the
 * wake pipe (soft_cq.c): the longest a sleeper there waits if the
 * holder's owner does not sleep */
#define SRQ_SOFT_THREAD_LOOK_SLEEPERS_MS  4

#endif
