/*
 * ucx-srq soft device: the completer.
 *
 * ACK(psn) acknowledges every packet up to psn (the responder coalesces
 * them); NAK(psn) acknowledges everything before psn and refuses psn:
 *   - RNR: no receive WQE. Rewind to psn and resend after the responder's
 *     RNR timer; rnr_retry 7 retries forever, otherwise after rnr_retry
 *     retries without progress: IBV_WC_RNR_RETRY_EXC_ERR. The resend is a
 *     probe (the refused WQE alone: the rest of the window would only be
 *     dropped by the responder behind it, at the cost of its CPU, which
 *     is what a dry receiver lacks), and RNR NAKs in a row double the wait
 *     up to 2^SRQ_SOFT_RNR_BACKOFF_MAX times the timer. Any progress ends
 *     the probe and the backoff.
 *   - INV_REQ / REM_OP / REM_ACCESS: IBV_WC_REM_INV_REQ_ERR /
 *     IBV_WC_REM_OP_ERR / IBV_WC_REM_ACCESS_ERR.
 * ATOMIC_ACK(psn, value) acknowledges everything before psn and completes
 * the atomic of psn: the original value goes to its scatter list;
 * READ_RESP(psn, data) does the same for a READ the responder executed
 * (the scatter list's keys are checked again first). A plain ACK never
 * completes either (it carries no data): the responder sends their
 * results before any ACK of a later PSN, so only a lost result leaves one
 * waiting - retransmitted on timeout, answered from the responder's
 * replay cache (an atomic) or executed again (a READ).
 * Send WQEs complete strictly in order; a successful unsignaled one makes
 * no CQE, an error always does. An error puts the QP in error, which
 * flushes everything outstanding with IBV_WC_WR_FLUSH_ERR. A peer found
 * dead fails its QPs as exhausted retries would.
 */
#include "soft_comp.h"
#include "soft_clock.h"
#include "soft_cq.h"
#include "soft_dev.h"
#include "soft_list.h"
#include "soft_peer.h"
#include "soft_pkt.h"
#include "soft_qp.h"
#include "soft_qp_state.h"
#include "soft_req.h"
#include "soft_ring.h"
#include "soft_shm.h"

#include <string.h>

/* RNR NAKs in a row double the wait up to 2^this times the responder's
 * timer (rc_srq's default 10 us: at most 80 us between probes) */
#define SRQ_SOFT_RNR_BACKOFF_MAX  3

/* Complete the finished WQEs at the head of the send queue */
void srq_soft_comp_sq(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;

    while (qp->sq_ci != qp->sq_tx) {
        wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
        if (wqe->state != SRQ_SOFT_SWQE_DONE) {
            break;
        }
        srq_soft_cq_send_cqe(qp, wqe, wqe->status);
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

/* The peer acknowledged something: the retry budgets start again */
static void srq_soft_comp_progressed(srq_soft_qp_t *qp)
{
    qp->rnr_left   = qp->attr.rnr_retry;
    qp->retry_left = qp->attr.retry_cnt;
    qp->rnr_streak = 0;
    qp->rnr_probe  = false;
    qp->tx_time    = 0; /* restart the ACK timeout at the next tick */
    srq_soft_comp_sq(qp);
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
            (srq_soft_psn_diff(wqe->psn, psn) > 0) ||
            srq_soft_swqe_awaits_data(wqe)) {
            break;
        }
        wqe->state  = SRQ_SOFT_SWQE_DONE;
        wqe->status = IBV_WC_SUCCESS;
        progress    = true;
    }
    if (progress) {
        srq_soft_comp_progressed(qp);
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
    /* everything after psn was dropped by the responder: resend it, the
     * refused WQE first and alone */
    qp->sq_tx      = qp->sq_ci;
    qp->rnr_probe  = true;
    qp->wait       = SRQ_SOFT_WAIT_RNR;
    qp->wait_until = srq_soft_now_ns() +
                     (srq_soft_rnr_timer_ns(timer) << qp->rnr_streak);
    if (qp->rnr_streak < SRQ_SOFT_RNR_BACKOFF_MAX) {
        ++qp->rnr_streak;
    }
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
    case SRQ_SOFT_NAK_REM_ACCESS:
        srq_soft_comp_swqe_error(qp, wqe, IBV_WC_REM_ACCESS_ERR);
        break;
    default:
        srq_soft_comp_swqe_error(qp, wqe, IBV_WC_REM_OP_ERR);
        break;
    }
}

/* The RC QP of our side of the connection @pkt comes from (NULL: none) */
static srq_soft_qp_t *srq_soft_comp_conn_qp(srq_soft_dev_t *dev,
                                            const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_qp_lookup(dev, pkt->dst_qpn);

    if ((qp == NULL) || (qp->ibv.qp_type != IBV_QPT_RC) ||
        (qp->peer == NULL) || (pkt->src_qpn != qp->attr.dest_qp_num) ||
        memcmp(pkt->src_inst, qp->peer->instance, SRQ_SOFT_INST_LEN)) {
        return NULL;
    }
    return qp;
}

/* Does acknowledging @psn answer something @qp sent? (else garbage) */
static bool srq_soft_comp_psn_sent(const srq_soft_qp_t *qp, uint32_t psn)
{
    return (qp->state == IBV_QPS_RTS) &&
           (srq_soft_psn_diff(psn, qp->next_psn) < 0);
}

/* The RC QP a response packet is for, if it comes from the QP's peer and
 * answers something sent (else NULL: dropped) */
static srq_soft_qp_t *srq_soft_comp_qp(srq_soft_dev_t *dev,
                                       const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_comp_conn_qp(dev, pkt);

    if (qp == NULL) {
        ++dev->stats.rx_dropped;
        return NULL;
    }
    ++dev->stats.rx_packets;
    return srq_soft_comp_psn_sent(qp, pkt->psn) ? qp : NULL;
}

/* Write a response's data to the WQE's scatter list (ours), which covers
 * its length: an atomic's 8 bytes (post check), a READ's length (the
 * response's, checked) */
static void srq_soft_comp_scatter(srq_soft_qp_t *qp,
                                  const srq_soft_swqe_t *wqe,
                                  const uint8_t *src)
{
    const struct ibv_sge *sge = srq_soft_swqe_sge(qp, wqe);
    uint32_t i;

    for (i = 0; i < wqe->num_sge; ++i) {
        memcpy((void*)(uintptr_t)sge[i].addr, src, sge[i].length);
        src += sge[i].length;
    }
}

/* The in-flight WQE a response with data answers, its lkeys checked again
 * (a region deregistered since is not written: the WQE fails, as an HCA's
 * invalidated key would fail it). NULL: stale, a replay of what already
 * completed, or a response of the wrong length */
static srq_soft_swqe_t *srq_soft_comp_answered(srq_soft_qp_t *qp,
                                               const srq_soft_pkt_t *pkt,
                                               bool read)
{
    srq_soft_swqe_t *wqe;

    srq_soft_comp_acked(qp, srq_soft_psn_add(pkt->psn, 0xffffff));
    wqe = srq_soft_comp_head(qp, pkt->psn);
    if ((wqe == NULL) || !srq_soft_swqe_awaits_data(wqe) ||
        (srq_soft_swqe_is_atomic(wqe) == read) ||
        (pkt->length != (read ? wqe->length : sizeof(uint64_t)))) {
        return NULL;
    }
    if (srq_soft_req_check_lkeys(qp, wqe) != 0) {
        srq_soft_comp_swqe_error(qp, wqe, IBV_WC_LOC_PROT_ERR);
        return NULL;
    }
    return wqe;
}

/* An ATOMIC_ACK or READ_RESP reached us (the requester) */
static void srq_soft_comp_response(srq_soft_dev_t *dev,
                                   const srq_soft_pkt_t *pkt,
                                   const uint8_t *payload, bool read)
{
    srq_soft_qp_t *qp = srq_soft_comp_qp(dev, pkt);
    srq_soft_swqe_t *wqe;

    if (qp == NULL) {
        return;
    }
    wqe = srq_soft_comp_answered(qp, pkt, read);
    if (wqe != NULL) {
        if (pkt->flags & SRQ_SOFT_PKT_F_PULL) {
            srq_soft_req_pull_read(qp, wqe); /* done, failed, or resent */
        } else {
            srq_soft_comp_scatter(qp, wqe, payload);
            wqe->state  = SRQ_SOFT_SWQE_DONE;
            wqe->status = IBV_WC_SUCCESS;
        }
        if (wqe->state == SRQ_SOFT_SWQE_DONE) {
            srq_soft_comp_progressed(qp);
        }
    }
    srq_soft_req_progress(qp); /* the next READ or atomic may go now */
}

void srq_soft_comp_atomic_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                              const uint8_t *payload)
{
    srq_soft_comp_response(dev, pkt, payload, false);
}

void srq_soft_comp_read_resp(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                             const uint8_t *payload)
{
    srq_soft_comp_response(dev, pkt, payload, true);
}

/* An ACK or NAK packet reached us (the requester) */
void srq_soft_comp_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_comp_qp(dev, pkt);

    if (qp == NULL) {
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

/* The ACK a request carries (SRQ_SOFT_PKT_F_ACK: every PSN up to aux).
 * Counted as nothing: the request itself is the packet, judged by the
 * responder; an ACK that does not check out is ignored */
void srq_soft_comp_carried_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_comp_conn_qp(dev, pkt);

    if ((qp == NULL) || !srq_soft_comp_psn_sent(qp, pkt->aux)) {
        return;
    }
    srq_soft_comp_acked(qp, pkt->aux);
    srq_soft_req_progress(qp);
}

/* As an HCA whose peer stopped answering: the oldest outstanding send
 * exhausts its retries, the rest is flushed */
static void srq_soft_comp_fail_qp(srq_soft_qp_t *qp)
{
    if (qp->state == IBV_QPS_ERR) {
        return;
    }
    if (qp->state == IBV_QPS_RTS) {
        srq_soft_comp_sq(qp);
    }
    if (qp->sq_ci != qp->sq_pi) {
        srq_soft_comp_swqe_error(qp, &qp->sq[qp->sq_ci & qp->sq_mask],
                                 IBV_WC_RETRY_EXC_ERR);
    } else {
        srq_soft_qp_to_error(qp);
    }
}

/* Fail everything toward a dead peer, forget it */
static void srq_soft_comp_peer_fail(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    srq_soft_list_t *e, *next;

    /* its QPs may be flushed out of the list below: walk a safe way */
    for (e = peer->qps.next; e != &peer->qps; e = next) {
        next = e->next;
        srq_soft_comp_fail_qp(srq_soft_container_of(e, srq_soft_qp_t,
                                                    peer_link));
    }
    srq_soft_peer_release_dead(dev, peer);
}

/*
 * The peer is gone. What it sent before it went is in our queue, and an
 * HCA would have taken it long before its timeouts told it the peer was
 * gone: those ACKs complete our sends, those requests our receives. So its
 * QPs fail once our queue is drained up to where it is now (at once when
 * it is already), not before: a peer that ends right after its last
 * exchange leaves nothing failed that it had answered.
 */
void srq_soft_comp_peer_dead(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    if (!srq_soft_peer_mark_dead(dev, peer)) {
        return;
    }
    peer->dead_pos = srq_soft_ring_tail(dev);
    if (srq_soft_ring_drained_to(dev, peer->dead_pos)) {
        srq_soft_comp_peer_fail(dev, peer);
    } else {
        srq_soft_list_add_tail(&dev->dying_peers, &peer->dying_link);
    }
}

void srq_soft_comp_dying_peers(srq_soft_dev_t *dev)
{
    srq_soft_list_t todo, *e;
    srq_soft_peer_t *peer;

    /* one at a time from todo: failing QPs frees nothing on it but the
     * peer being handled */
    srq_soft_list_take(&todo, &dev->dying_peers);
    while (!srq_soft_list_empty(&todo)) {
        e    = todo.next;
        peer = srq_soft_container_of(e, srq_soft_peer_t, dying_link);
        srq_soft_list_del(e);
        if (srq_soft_ring_drained_to(dev, peer->dead_pos)) {
            srq_soft_comp_peer_fail(dev, peer);
        } else {
            srq_soft_list_add_tail(&dev->dying_peers, e);
        }
    }
}

bool srq_soft_comp_peer_check(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    if (!peer->dead && !peer->is_self) {
        ++dev->stats.liveness_checks;
    }
    if (srq_soft_peer_alive(peer)) {
        return true;
    }
    srq_soft_comp_peer_dead(dev, peer);
    return false;
}

bool srq_soft_comp_peer_check_at(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                                 uint64_t now)
{
    if (peer->next_check_ns == 0) { /* busy since the last tick */
        peer->next_check_ns = now + SRQ_SOFT_PEER_CHECK_NS;
    }
    if (now < peer->next_check_ns) {
        return true;
    }
    peer->next_check_ns = now + SRQ_SOFT_PEER_CHECK_NS;
    return srq_soft_comp_peer_check(dev, peer);
}

bool srq_soft_comp_peer_check_due(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    if (peer->dead) {
        return false;
    }
    return srq_soft_comp_peer_check_at(dev, peer, srq_soft_now_ns());
}
