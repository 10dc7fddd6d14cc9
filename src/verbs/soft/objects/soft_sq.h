/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a send queue's WQEs leaving it - completed in
 * order, or failed.
 *
 * The requester, the completer and a dead peer's liveness check all end
 * send WQEs; none of them owns the send queue, so its ends are here,
 * below all three (the requester and the completer then call each other
 * one way only: the completer restarts the requester).
 */
#ifndef SRQ_SOFT_SQ_H_
#define SRQ_SOFT_SQ_H_

#include "../../dev/srq_verbs_types.h"

typedef struct srq_soft_qp   srq_soft_qp_t;
typedef struct srq_soft_swqe srq_soft_swqe_t;

/* Complete the finished WQEs at the head of the send queue */
void srq_soft_sq_complete(srq_soft_qp_t *qp);
/* @wqe failed with @status: it completes so, the QP goes to error */
void srq_soft_sq_fail(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                      enum ibv_wc_status status);

#endif
