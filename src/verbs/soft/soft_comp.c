/*
 * ucx-srq soft device: the completer.
 *
 * ACK(psn) acknowledges every packet up to psn (the responder coalesces
 * them); NAK(psn) acknowledges everything before psn and refuses psn:
 *   - RNR: no receive WQE. Rewind to psn and resend after the responder's
 *     RNR timer; rnr_retry 7 retries forever, otherwise after rnr_retry
 *     retries without progress: IBV_WC_RNR_RETRY_EXC_ERR.
 *   - INV_REQ / REM_OP: IBV_WC_REM_INV_REQ_ERR / IBV_WC_REM_OP_ERR.
 * Send WQEs complete strictly in order; a successful unsignaled one makes
 * no CQE, an error always does. An error puts the QP in error, which
 * flushes everything outstanding with IBV_WC_WR_FLUSH_ERR.
 */
#include "soft.h"

#include <string.h>

static enum ibv_wc_opcode srq_soft_wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    default:
        return IBV_WC_SEND;
    }
}

static void srq_soft_comp_cqe(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe,
                              enum ibv_wc_status status)
{
    srq_soft_cqe_t *cqe;

    if ((status == IBV_WC_SUCCESS) && !wqe->signaled) {
        return;
    }
    cqe = srq_soft_cq_push(srq_soft_cq(qp->ibv.send_cq),
                           status != IBV_WC_SUCCESS);
    if (cqe == NULL) {
        return; /* CQ overrun: the CQ is in error */
    }
    cqe->wc.wr_id    = wqe->wr_id;
    cqe->wc.status   = status;
    cqe->wc.opcode   = srq_soft_wc_opcode(wqe->opcode);
    cqe->wc.byte_len = wqe->length;
    cqe->wc.qp_num   = qp->ibv.qp_num;
}

/* Complete the finished WQEs at the head of the send queue */
void srq_soft_comp_sq(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;

    while (qp->sq_ci != qp->sq_tx) {
        wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
        if (wqe->state != SRQ_SOFT_SWQE_DONE) {
            break;
        }
        srq_soft_comp_cqe(qp, wqe, wqe->status);
        ++qp->sq_ci;
    }
    if (qp->sq_ci == qp->sq_pi) {
        srq_soft_peer_busy(qp->dev, qp, false);
    }
}

void srq_soft_comp_swqe_error(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                              enum ibv_wc_status status)
{
    wqe->state  = SRQ_SOFT_SWQE_DONE;
    wqe->status = status;
    srq_soft_qp_to_error(qp);
}

static void srq_soft_comp_flush_rq(srq_soft_qp_t *qp)
{
    srq_soft_cq_t *cq = srq_soft_cq(qp->ibv.recv_cq);
    srq_soft_cqe_t *cqe;

    for (; qp->rq_hw != qp->rq_pi; ++qp->rq_hw) {
        cqe = srq_soft_cq_push(cq, true);
        if (cqe == NULL) {
            continue;
        }
        cqe->wc.wr_id  = qp->rq[qp->rq_hw & qp->rq_mask].wr_id;
        cqe->wc.status = IBV_WC_WR_FLUSH_ERR;
        cqe->wc.opcode = IBV_WC_RECV;
        cqe->wc.qp_num = qp->ibv.qp_num;
        cqe->rq_qp     = qp; /* the slot is free once this is polled */
    }
}

/* The QP is in error: complete everything it holds */
void srq_soft_comp_flush(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;

    for (; qp->sq_ci != qp->sq_pi; ++qp->sq_ci) {
        wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
        srq_soft_comp_cqe(qp, wqe, (wqe->state == SRQ_SOFT_SWQE_DONE) ?
                                   wqe->status : IBV_WC_WR_FLUSH_ERR);
    }
    qp->sq_tx = qp->sq_ci;
    if (qp->ibv.srq == NULL) {
        srq_soft_comp_flush_rq(qp);
    }
    srq_soft_peer_busy(qp->dev, qp, false);
}

/* Mark every in-flight WQE up to @psn acknowledged; true if any was */
static bool srq_soft_comp_acked(srq_soft_qp_t *qp, uint32_t psn)
{
    srq_soft_swqe_t *wqe;
    bool progress = false;
    uint32_t i;

    for (i = qp->sq_ci; i != qp->sq_tx; ++i) {
        wqe = &qp->sq[i & qp->sq_mask];
        if (wqe->state == SRQ_SOFT_SWQE_DONE) {
            continue;
        }
        if ((wqe->state != SRQ_SOFT_SWQE_SENT) ||
            (srq_soft_psn_diff(wqe->psn, psn) > 0)) {
            break;
        }
        wqe->state  = SRQ_SOFT_SWQE_DONE;
        wqe->status = IBV_WC_SUCCESS;
        progress    = true;
    }
    if (progress) {
        qp->rnr_left   = qp->attr.rnr_retry;
        qp->retry_left = qp->attr.retry_cnt;
        qp->tx_time    = 0; /* restart the ACK timeout at the next tick */
        srq_soft_comp_sq(qp);
    }
    return progress;
}

/* The oldest in-flight WQE, if it carries @psn */
static srq_soft_swqe_t *srq_soft_comp_head(srq_soft_qp_t *qp, uint32_t psn)
{
    srq_soft_swqe_t *wqe;

    if (qp->sq_ci == qp->sq_tx) {
        return NULL;
    }
    wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
    return ((wqe->state == SRQ_SOFT_SWQE_SENT) && (wqe->psn == psn)) ? wqe :
           NULL;
}

static void srq_soft_comp_rnr(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                              uint8_t timer)
{
    if (qp->attr.rnr_retry != 7) {
        if (qp->rnr_left == 0) {
            srq_soft_comp_swqe_error(qp, wqe, IBV_WC_RNR_RETRY_EXC_ERR);
            return;
        }
        --qp->rnr_left;
    }
    ++qp->dev->stats.rnr_retries;
    /* everything after psn was dropped by the responder: resend it all */
    qp->sq_tx      = qp->sq_ci;
    qp->wait       = SRQ_SOFT_WAIT_RNR;
    qp->wait_until = srq_soft_now_ns() + srq_soft_rnr_timer_ns(timer);
    srq_soft_req_sched(qp);
}

static void srq_soft_comp_nak(srq_soft_qp_t *qp, uint32_t psn, uint32_t aux)
{
    srq_soft_swqe_t *wqe;

    srq_soft_comp_acked(qp, srq_soft_psn_add(psn, 0xffffff)); /* psn - 1 */
    wqe = srq_soft_comp_head(qp, psn);
    if (wqe == NULL) {
        return; /* stale: already handled */
    }
    switch (aux & 0xff) {
    case SRQ_SOFT_NAK_RNR:
        srq_soft_comp_rnr(qp, wqe, (uint8_t)(aux >> 8));
        break;
    case SRQ_SOFT_NAK_INV_REQ:
        srq_soft_comp_swqe_error(qp, wqe, IBV_WC_REM_INV_REQ_ERR);
        break;
    default:
        srq_soft_comp_swqe_error(qp, wqe, IBV_WC_REM_OP_ERR);
        break;
    }
}

/* An ACK or NAK packet reached us (the requester) */
void srq_soft_comp_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_qp_lookup(dev, pkt->dst_qpn);

    if ((qp == NULL) || (qp->ibv.qp_type != IBV_QPT_RC) ||
        (qp->peer == NULL) || (pkt->src_qpn != qp->attr.dest_qp_num) ||
        memcmp(pkt->src_inst, qp->peer->instance, SRQ_SOFT_INST_LEN)) {
        ++dev->stats.rx_dropped;
        return;
    }
    ++dev->stats.rx_packets;
    /* acknowledging what was never sent: garbage */
    if ((qp->ibv.state != IBV_QPS_RTS) ||
        (srq_soft_psn_diff(pkt->psn, qp->next_psn) >= 0)) {
        return;
    }
    if (pkt->opcode == SRQ_SOFT_OP_ACK) {
        srq_soft_comp_acked(qp, pkt->psn);
    } else {
        srq_soft_comp_nak(qp, pkt->psn, pkt->aux);
    }
    /* acknowledged sends may unblock one-sided WQEs behind them */
    srq_soft_req_progress(qp);
}
