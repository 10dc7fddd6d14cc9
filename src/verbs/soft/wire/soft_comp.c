/* SPDX-License-Identifier: BSD-3-Clause */
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
 * Send WQEs complete strictly in order, an error puts the QP in error
 * (soft_sq.c). A peer found dead fails its QPs as exhausted retries would
 * (soft_liveness.c, not here: the requester needs that too, and the
 * completer calls the requester).
 *
 * A response goes through a state machine in rxe's manner (the QP, the
 * PSN, what it acknowledges, the WQE it answers, the data and keys, then
 * completion and the requester's turn), one function per check and step;
 * the opcode table (srq_soft_comp_ops) says which each response takes.
 */
#include "soft_comp.h"
#include "../fabric/soft_clock.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_sq.h"
#include "soft_mem.h"
#include "soft_req.h"
#include "soft_req_mem.h"

#include <string.h>

/* RNR NAKs in a row double the wait up to 2^this times the responder's
 * timer (rc_srq's default 10 us: at most 80 us between probes) */
#define SRQ_SOFT_RNR_BACKOFF_MAX  3

/* The peer acknowledged something: the retry budgets start again */
static void srq_soft_comp_progressed(srq_soft_qp_t *qp)
{
    qp->rnr_left   = qp->attr.rnr_retry;
    qp->retry_left = qp->attr.retry_cnt;
    qp->rnr_streak = 0;
    qp->rnr_probe  = false;
    qp->tx_time    = 0; /* restart the ACK timeout at the next tick */
    srq_soft_sq_complete(qp);
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
            srq_soft_sq_fail(qp, wqe, IBV_WC_RNR_RETRY_EXC_ERR);
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

/* A NAK refused @wqe (the oldest in flight): an RNR retry, or its error */
static void srq_soft_comp_nak(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                              uint32_t aux)
{
    switch (aux & 0xff) {
    case SRQ_SOFT_NAK_RNR:
        srq_soft_comp_rnr(qp, wqe, (uint8_t)(aux >> 8));
        break;
    case SRQ_SOFT_NAK_INV_REQ:
        srq_soft_sq_fail(qp, wqe, IBV_WC_REM_INV_REQ_ERR);
        break;
    case SRQ_SOFT_NAK_REM_ACCESS:
        srq_soft_sq_fail(qp, wqe, IBV_WC_REM_ACCESS_ERR);
        break;
    default:
        srq_soft_sq_fail(qp, wqe, IBV_WC_REM_OP_ERR);
        break;
    }
}

/* The RC QP of our side of the connection @pkt comes from (NULL: none) */
static srq_soft_qp_t *srq_soft_comp_conn_qp(srq_soft_dev_t *dev,
                                            const srq_soft_pkt_t *pkt)
{
    srq_soft_qp_t *qp = srq_soft_qp_lookup(dev, pkt->dst_qpn);

    if ((qp == NULL) || !srq_soft_qp_is_conn(qp) ||
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

/* Write a response's data to the WQE's scatter list (ours), which covers
 * its length: an atomic's 8 bytes (post check), a READ's length (the
 * response's, checked). false: a page of it is not there (soft_mem.h) */
static bool srq_soft_comp_scatter(srq_soft_qp_t *qp,
                                  const srq_soft_swqe_t *wqe,
                                  const uint8_t *src)
{
    const struct ibv_sge *sge = srq_soft_swqe_sge(qp, wqe);
    uint32_t i;

    for (i = 0; i < wqe->num_sge; ++i) {
        if (!srq_soft_mem_copy(qp->dev->guard_copies,
                               (void*)(uintptr_t)sge[i].addr, src,
                               sge[i].length)) {
            return false;
        }
        src += sge[i].length;
    }
    return true;
}

/* ---- responses: the completer's state machine -------------------------- */

/*
 * As rxe's completer: a response (ACK, NAK, ATOMIC_ACK, READ_RESP) goes
 * through the states below, one small function each; the opcode table
 * says which each opcode takes.
 */
typedef enum srq_soft_comp_state {
    SRQ_SOFT_COMP_GET_QP,    /* the QP of the connection it comes on */
    SRQ_SOFT_COMP_CHK_PSN,   /* it answers something sent */
    SRQ_SOFT_COMP_CHK_ACK,   /* what it acknowledges (ACK: up to its PSN;
                                the others: everything before it) */
    SRQ_SOFT_COMP_CHK_HEAD,  /* the oldest WQE in flight carries its PSN */
    SRQ_SOFT_COMP_NAK,       /* an RNR retry, or the WQE fails */
    SRQ_SOFT_COMP_CHK_DATA,  /* the response the WQE waits for */
    SRQ_SOFT_COMP_CHK_LKEY,  /* our keys, checked again */
    SRQ_SOFT_COMP_READ,      /* its data to the WQE's scatter list */
    SRQ_SOFT_COMP_UPDATE,    /* the WQE completed: budgets start again */
    SRQ_SOFT_COMP_RESUME,    /* the requester goes on */
    SRQ_SOFT_COMP_DONE
} srq_soft_comp_state_t;

/* What a response opcode takes */
typedef struct srq_soft_comp_op {
    bool  acks_own;  /* acknowledges its own PSN (else up to the one before) */
    bool  head;      /* answers the oldest WQE in flight */
    bool  nak;       /* refuses it */
    bool  read;      /* data of a READ (else of an atomic) */
} srq_soft_comp_op_t;

static const srq_soft_comp_op_t srq_soft_comp_ops[SRQ_SOFT_OP_LAST] = {
    [SRQ_SOFT_OP_ACK]        = {.acks_own = true},
    [SRQ_SOFT_OP_NAK]        = {.head = true, .nak = true},
    [SRQ_SOFT_OP_ATOMIC_ACK] = {.head = true},
    [SRQ_SOFT_OP_READ_RESP]  = {.head = true, .read = true},
};

/* One response on its way through the states */
typedef struct srq_soft_comp_resp {
    srq_soft_dev_t            *dev;
    const srq_soft_pkt_t      *pkt;
    const uint8_t             *payload;
    const srq_soft_comp_op_t  *op;
    srq_soft_qp_t             *qp;
    srq_soft_swqe_t           *wqe;
} srq_soft_comp_resp_t;

static srq_soft_comp_state_t srq_soft_comp_get_qp(srq_soft_comp_resp_t *c)
{
    c->qp = srq_soft_comp_conn_qp(c->dev, c->pkt);
    if (c->qp == NULL) {
        ++c->dev->stats.rx_dropped;
        return SRQ_SOFT_COMP_DONE;
    }
    ++c->dev->stats.rx_packets;
    return SRQ_SOFT_COMP_CHK_PSN;
}

static srq_soft_comp_state_t srq_soft_comp_chk_psn(srq_soft_comp_resp_t *c)
{
    return srq_soft_comp_psn_sent(c->qp, c->pkt->psn) ?
           SRQ_SOFT_COMP_CHK_ACK : SRQ_SOFT_COMP_DONE;
}

static srq_soft_comp_state_t srq_soft_comp_chk_ack(srq_soft_comp_resp_t *c)
{
    srq_soft_comp_acked(c->qp, c->op->acks_own ? c->pkt->psn :
                               srq_soft_psn_add(c->pkt->psn, 0xffffff));
    return c->op->head ? SRQ_SOFT_COMP_CHK_HEAD : SRQ_SOFT_COMP_RESUME;
}

/* No WQE in flight at its PSN: stale, already handled */
static srq_soft_comp_state_t srq_soft_comp_chk_head(srq_soft_comp_resp_t *c)
{
    c->wqe = srq_soft_comp_head(c->qp, c->pkt->psn);
    if (c->wqe == NULL) {
        return SRQ_SOFT_COMP_RESUME;
    }
    return c->op->nak ? SRQ_SOFT_COMP_NAK : SRQ_SOFT_COMP_CHK_DATA;
}

static srq_soft_comp_state_t srq_soft_comp_nak_step(srq_soft_comp_resp_t *c)
{
    srq_soft_comp_nak(c->qp, c->wqe, c->pkt->aux);
    return SRQ_SOFT_COMP_RESUME;
}

/* A response of the kind and length the WQE waits for (else a replay of
 * what already completed, or garbage) */
static srq_soft_comp_state_t srq_soft_comp_chk_data(srq_soft_comp_resp_t *c)
{
    const srq_soft_swqe_t *wqe = c->wqe;
    bool read                  = c->op->read;

    if (!srq_soft_swqe_awaits_data(wqe) ||
        (srq_soft_swqe_is_atomic(wqe) == read) ||
        (c->pkt->length != (read ? wqe->length : sizeof(uint64_t)))) {
        return SRQ_SOFT_COMP_RESUME;
    }
    return SRQ_SOFT_COMP_CHK_LKEY;
}

/* A region deregistered since is not written: the WQE fails, as an HCA's
 * invalidated key would fail it */
static srq_soft_comp_state_t srq_soft_comp_chk_lkey(srq_soft_comp_resp_t *c)
{
    if (srq_soft_req_check_lkeys(c->qp, c->wqe) != 0) {
        srq_soft_sq_fail(c->qp, c->wqe, IBV_WC_LOC_PROT_ERR);
        return SRQ_SOFT_COMP_RESUME;
    }
    return SRQ_SOFT_COMP_READ;
}

/* The data to the scatter list; a READ answered without its data is read
 * by the requester now (done, failed, or resent) */
static srq_soft_comp_state_t srq_soft_comp_read(srq_soft_comp_resp_t *c)
{
    if (c->pkt->flags & SRQ_SOFT_PKT_F_PULL) {
        srq_soft_req_pull_read(c->qp, c->wqe);
    } else if (srq_soft_comp_scatter(c->qp, c->wqe, c->payload)) {
        c->wqe->state  = SRQ_SOFT_SWQE_DONE;
        c->wqe->status = IBV_WC_SUCCESS;
    } else {
        srq_soft_sq_fail(c->qp, c->wqe, IBV_WC_LOC_PROT_ERR);
        return SRQ_SOFT_COMP_RESUME;
    }
    return (c->wqe->state == SRQ_SOFT_SWQE_DONE) ? SRQ_SOFT_COMP_UPDATE :
                                                   SRQ_SOFT_COMP_RESUME;
}

static srq_soft_comp_state_t srq_soft_comp_update(srq_soft_comp_resp_t *c)
{
    srq_soft_comp_progressed(c->qp);
    return SRQ_SOFT_COMP_RESUME;
}

/* Acknowledged sends may unblock one-sided WQEs behind them; the next
 * READ or atomic may go */
static srq_soft_comp_state_t srq_soft_comp_resume(srq_soft_comp_resp_t *c)
{
    srq_soft_req_progress(c->qp);
    return SRQ_SOFT_COMP_DONE;
}

/* One step: a switch, so that the steps of an ACK are inlined */
static srq_soft_comp_state_t srq_soft_comp_step(srq_soft_comp_state_t state,
                                                srq_soft_comp_resp_t *c)
{
    switch (state) {
    case SRQ_SOFT_COMP_GET_QP:   return srq_soft_comp_get_qp(c);
    case SRQ_SOFT_COMP_CHK_PSN:  return srq_soft_comp_chk_psn(c);
    case SRQ_SOFT_COMP_CHK_ACK:  return srq_soft_comp_chk_ack(c);
    case SRQ_SOFT_COMP_CHK_HEAD: return srq_soft_comp_chk_head(c);
    case SRQ_SOFT_COMP_NAK:      return srq_soft_comp_nak_step(c);
    case SRQ_SOFT_COMP_CHK_DATA: return srq_soft_comp_chk_data(c);
    case SRQ_SOFT_COMP_CHK_LKEY: return srq_soft_comp_chk_lkey(c);
    case SRQ_SOFT_COMP_READ:     return srq_soft_comp_read(c);
    case SRQ_SOFT_COMP_UPDATE:   return srq_soft_comp_update(c);
    case SRQ_SOFT_COMP_RESUME:   return srq_soft_comp_resume(c);
    default:                     return SRQ_SOFT_COMP_DONE;
    }
}

/* A response packet reached us (the requester) */
static void srq_soft_comp_run(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                              const uint8_t *payload)
{
    srq_soft_comp_state_t state = SRQ_SOFT_COMP_GET_QP;
    srq_soft_comp_resp_t c;

    c.dev     = dev;
    c.pkt     = pkt;
    c.payload = payload;
    c.op      = &srq_soft_comp_ops[pkt->opcode]; /* progress dispatches
                                                    only these */
    c.qp      = NULL;
    c.wqe     = NULL;
    while (state != SRQ_SOFT_COMP_DONE) {
        state = srq_soft_comp_step(state, &c);
    }
}

void srq_soft_comp_atomic_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                              const uint8_t *payload)
{
    srq_soft_comp_run(dev, pkt, payload);
}

void srq_soft_comp_read_resp(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                             const uint8_t *payload)
{
    srq_soft_comp_run(dev, pkt, payload);
}

/* An ACK or NAK packet reached us (the requester) */
void srq_soft_comp_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt)
{
    srq_soft_comp_run(dev, pkt, NULL);
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

/*
 * A UC WR completes when its destination's device says the message has
 * left (its responder may read our buffer). A destination gone, reset or
 * connected elsewhere says so only with a best-effort ACK
 * (srq_soft_resp_uc_lost), which a full queue of ours loses, and UC has
 * no retransmission to ask again. So each tick in which messages wait,
 * one whose destination's table shows it no longer takes them completes
 * them, lost on the way: its responder reads our buffers no more (it
 * withdraws the entry under its device lock, which it holds while it
 * reads).
 */
void srq_soft_comp_uc_check(srq_soft_qp_t *qp)
{
    srq_soft_qp_ent_t ent;

    if ((qp->sq_ci == qp->sq_tx) || (qp->peer == NULL) ||
        srq_soft_qp_dest_takes(qp, &ent)) {
        return;
    }
    if (srq_soft_comp_acked(qp, srq_soft_psn_add(qp->next_psn, 0xffffffu))) {
        srq_soft_req_progress(qp);
    }
}
