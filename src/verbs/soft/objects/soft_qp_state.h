/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the QP state machine (ibv_modify_qp, ibv_query_qp,
 * the move to error that flushes a QP) and the IB encodings of its timers.
 */
#ifndef SRQ_SOFT_QP_STATE_H_
#define SRQ_SOFT_QP_STATE_H_

#include "../../dev/srq_verbs_types.h"

#include <stdint.h>

typedef struct srq_soft_qp srq_soft_qp_t;

int  srq_soft_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                        struct ibv_qp_attr *attr, int attr_mask);
int  srq_soft_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                       struct ibv_qp_attr *attr, int attr_mask,
                       struct ibv_qp_init_attr *init_attr);
/* To IBV_QPS_ERR: every outstanding WQE completes with its status or
 * IBV_WC_WR_FLUSH_ERR. Nothing if it is in error already. */
void srq_soft_qp_to_error(srq_soft_qp_t *qp);
/* Complete everything a QP in error holds (more may be posted to it) */
void srq_soft_qp_flush(srq_soft_qp_t *qp);
/* RNR NAK timer field, local ACK timeout field (UINT64_MAX: forever) */
uint64_t srq_soft_rnr_timer_ns(uint8_t code);
uint64_t srq_soft_timeout_ns(uint8_t code);

#endif
