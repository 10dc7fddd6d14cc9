/*
 * ucx-srq soft device: sleeping on a completion channel - arming CQs, the
 * wake request producers answer, the timer for timed work.
 */
#ifndef SRQ_SOFT_WAIT_H_
#define SRQ_SOFT_WAIT_H_

#include "../srq_verbs.h"

/* ibv_req_notify_cq (context->ops) */
int  srq_soft_req_notify_cq(struct ibv_cq *cq, int solicited);
int  srq_soft_get_cq_event(srq_verbs_dev_t *dev,
                           struct ibv_comp_channel *channel,
                           struct ibv_cq **cq_p, void **cq_context_p);

#endif
