/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a CQ as a program polls it (soft_cq_poll.c).
 */
#ifndef SRQ_SOFT_CQ_POLL_H_
#define SRQ_SOFT_CQ_POLL_H_

#include "../../dev/srq_verbs_types.h"

/* ibv_poll_cq (context->ops) */
int  srq_soft_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
/* ibv_create_cq_ex: the standard completion fields only */
struct ibv_cq_ex *srq_soft_create_cq_ex(srq_verbs_dev_t *dev,
                                        struct ibv_cq_init_attr_ex *attr);

#endif
