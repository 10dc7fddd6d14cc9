/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a send queue's WQEs leaving it (soft_sq.h says
 * why this is a file of its own).
 *
 * Send WQEs complete strictly in order; a successful unsignaled one makes
 * no CQE, an error always does. An error puts the QP in error, which
 * flushes everything outstanding with IBV_WC_WR_FLUSH_ERR.
 */
#include "soft_sq.h"
#include "../fabric/soft_peer.h"
#include "soft_qp.h"
#include "soft_qp_state.h"

void srq_soft_sq_complete(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;

    while (qp->sq_ci != qp->sq_tx) {
        wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
        if (wqe->state != SRQ_SOFT_SWQE_DONE) {
            break;
        }
        srq_soft_qp_send_cqe(qp, wqe, wqe->status);
        ++qp->sq_ci;
    }
    if (qp->sq_ci == qp->sq_pi) {
        srq_soft_qp_busy(qp, false);
    }
}

void srq_soft_sq_fail(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                      enum ibv_wc_status status)
{
    wqe->state  = SRQ_SOFT_SWQE_DONE;
    wqe->status = status;
    srq_soft_qp_to_error(qp);
}
