/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder.
 *
 * A packet from the inbound queue is matched to its QP by indexing (qpn),
 * never by scanning. SEND / WRITE_WITH_IMM take a receive WQE (the QP's SRQ
 * or its own RQ), scatter the payload (UD: after the 40-byte GRH area),
 * write the CQE and schedule a coalesced ACK. No WQE: RC answers RNR NAK
 * (and drops later PSNs until the requester resends), UD drops.
 *
 * CMP_SWAP / FETCH_ADD execute on our memory (soft_atomic.c) and are
 * answered by an ATOMIC_ACK with the original value; a duplicate gets the
 * kept result again. WRITE and READ (RDMA its requester sent behind
 * unacknowledged requests) execute on our memory too, in PSN order, after
 * the checks the requester makes when it does them one-sided (the QP's
 * access, the rkey's range, access and PD); a READ is answered by a
 * READ_RESP with the data (one over SRQ_SOFT_PKT_INLINE_MAX without it:
 * its requester reads the data when the answer comes), a duplicate READ
 * executes again. An ATOMIC_ACK
 * or READ_RESP also acknowledges every PSN before it, so it always leaves
 * before any ACK/NAK of a later PSN: results a full queue held back (a
 * READ's data copied) go first in srq_soft_resp_send_acks.
 *
 * Everything in a packet comes from another process and is checked before
 * use: QP number, source instance and QP of the connection, PSN, lengths.
 * A packet that does not check out is dropped and counted.
 *
 * An RC request goes through a state machine in rxe's manner (PSN, the
 * opcode, a receive WQE, the rkey, room for a result, then the opcode's
 * execution, completion and acknowledgement), one function per check and
 * step; the opcode table (srq_soft_resp_ops) says which each opcode takes.
 */
#define _GNU_SOURCE
#include "soft_resp.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_async.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_mw.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_port.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_srq.h"
#include "../objects/soft_srq_wqe.h"
#include "../objects/soft_xrcd.h"
#include "soft_atomic.h"
#include "soft_comp.h"
#include "soft_iov.h"
#include "soft_resp_ack.h"
#include "soft_resp_mem.h"
#include "soft_resp_pkt.h"
#include "soft_resp_ud.h"
#include "soft_rview.h"
#include "soft_tm.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>


/* ---- receive ---------------------------------------------------------- */

/* The RC connection the packet claims to belong to is this QP's */
static bool srq_soft_resp_rc_ok(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt)
{
    return srq_soft_qp_is_conn(qp) && (qp->peer != NULL) &&
           (qp->ibv.qp_type != IBV_QPT_XRC_SEND) && /* no responder */
           !(pkt->flags & SRQ_SOFT_PKT_F_UD) &&
           (!(pkt->flags & SRQ_SOFT_PKT_F_XRC) ==
            (qp->ibv.qp_type != IBV_QPT_XRC_RECV)) &&
           (!(pkt->flags & SRQ_SOFT_PKT_F_UC) == !srq_soft_qp_is_uc(qp)) &&
           ((qp->state == IBV_QPS_RTR) || (qp->state == IBV_QPS_RTS)) &&
           (pkt->src_qpn == qp->attr.dest_qp_num) &&
           !memcmp(pkt->src_inst, qp->peer->instance, SRQ_SOFT_INST_LEN);
}

/* A responder error on RC: tell the requester, then go to error */
static void srq_soft_resp_rc_error(srq_soft_qp_t *qp, uint8_t nak)
{
    /* older PSNs go first; nak 0: an error the IB spec sends none for */
    if ((srq_soft_resp_atomic_flush(qp) == 0) && (nak != 0)) {
        srq_soft_resp_ctrl(qp, nak, qp->epsn);
    }
    srq_soft_qp_to_error(qp);
}

/* ... of a request no receive WQE completes (RDMA, atomics): no CQE tells
 * our user, so the async event an HCA raises does (IB spec's local work
 * queue errors of the responder) */
static void srq_soft_resp_rc_fail(srq_soft_qp_t *qp, uint8_t nak)
{
    enum ibv_event_type ev;

    switch (nak) {
    case SRQ_SOFT_NAK_REM_ACCESS:
        ev = IBV_EVENT_QP_ACCESS_ERR;
        break;
    case SRQ_SOFT_NAK_INV_REQ:
        ev = IBV_EVENT_QP_REQ_ERR;
        break;
    default:
        ev = IBV_EVENT_QP_FATAL;
        break;
    }
    if (qp->state != IBV_QPS_ERR) {
        srq_soft_async_raise(qp->dev, ev, &qp->ibv, &qp->events_written);
    }
    srq_soft_resp_rc_error(qp, nak);
}

/* The request at the expected PSN is done: expect the next, ACK it */
static void srq_soft_resp_done(srq_soft_qp_t *qp)
{
    qp->epsn = srq_soft_psn_add(qp->epsn, 1);
    if (qp->nak == SRQ_SOFT_NAK_RNR) {
        qp->nak = 0; /* the refused PSN arrived again and was taken */
    }
    srq_soft_resp_sched_ack_placed(qp);
}

/* No receive WQE for the request at @pkt: RNR NAK (later PSNs are
 * dropped until the requester resends it) */
static void srq_soft_resp_rnr(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                              const srq_soft_pkt_t *pkt)
{
    srq_soft_stat_inc_shared(&dev->stats.rnr_naks_sent);
    if (qp->ibv.srq != NULL) {
        srq_soft_stat_inc_shared(&srq_soft_srq(qp->ibv.srq)->rnr_naks);
    }
    srq_soft_resp_sched_nak(qp, SRQ_SOFT_NAK_RNR, pkt->psn);
}

/* ---- RC requests: the responder's state machine ------------------------ */

/*
 * As rxe's responder: a request goes through the states below, each one
 * small function that does its check or its step and names the next
 * state; the opcode table says which checks and which execution each
 * opcode takes. A check that fails ends in the state that answers it.
 */
typedef enum srq_soft_resp_state {
    SRQ_SOFT_RESP_CHK_PSN,       /* in sequence, behind, or ahead */
    SRQ_SOFT_RESP_DUPLICATE,     /* behind: answered again, not executed */
    SRQ_SOFT_RESP_CHK_OP,        /* one the requester refused for us */
    SRQ_SOFT_RESP_CHK_WQE,       /* a receive WQE for what completes in one */
    SRQ_SOFT_RESP_TM,            /* a SEND to a TM SRQ: tag matching */
    SRQ_SOFT_RESP_CHK_RKEY,      /* the checks of one-sided RDMA */
    SRQ_SOFT_RESP_CHK_ROOM,      /* room to keep a result until it is sent */
    SRQ_SOFT_RESP_EXECUTE,       /* the opcode's own step */
    SRQ_SOFT_RESP_COMPLETE,      /* the receive WQE completes */
    SRQ_SOFT_RESP_ACKNOWLEDGE,   /* the next PSN expected, an ACK owed */
    SRQ_SOFT_RESP_RNR,           /* no receive WQE: RNR NAK */
    SRQ_SOFT_RESP_NAK,           /* NAK @nak, the QP stays as it is */
    SRQ_SOFT_RESP_ERR_WQE,       /* completed in error: NAK @nak, QP error */
    SRQ_SOFT_RESP_ERR_FAIL,      /* no WQE tells the user: async event too */
    SRQ_SOFT_RESP_DROP,          /* no room: not executed, it comes again */
    SRQ_SOFT_RESP_UC_DROP,       /* UC: what RC refuses is dropped, the
                                    next message expected */
    SRQ_SOFT_RESP_DONE
} srq_soft_resp_state_t;

/* One request on its way through the states */
typedef struct srq_soft_resp_req {
    srq_soft_dev_t          *dev;
    srq_soft_qp_t           *qp;
    const srq_soft_pkt_t    *pkt;
    const uint8_t           *payload; /* past the RDMA header, if any */
    const struct srq_soft_resp_op *op;
    srq_soft_pkt_rdma_t      rdma;    /* WRITE, READ: where, its rkey */
    uint64_t                 va;      /* where that is in our memory */
    srq_soft_rview_t         wqe;     /* the receive WQE, if it takes one */
    bool                     has_wqe;
    bool                     no_nak;   /* its error is not NAKed */
    int                      status;  /* the receive completion's */
    uint8_t                  nak;
} srq_soft_resp_req_t;

/* The execution each opcode takes (a switch, not a pointer: the fast
 * path's is inlined) */
typedef enum srq_soft_resp_exec {
    SRQ_SOFT_RESP_EXEC_NONE,
    SRQ_SOFT_RESP_EXEC_RECV,    /* into a receive WQE: SEND, WRITE_IMM */
    SRQ_SOFT_RESP_EXEC_WRITE,
    SRQ_SOFT_RESP_EXEC_READ,
    SRQ_SOFT_RESP_EXEC_ATOMIC
} srq_soft_resp_exec_t;

/* What an opcode takes */
#define SRQ_SOFT_RESP_F_WQE      (1u << 0) /* a receive WQE */
#define SRQ_SOFT_RESP_F_WQE_IMM  (1u << 1) /* one, if it carries immediate */
#define SRQ_SOFT_RESP_F_RDMA     (1u << 2) /* an RDMA header, rkey checked */
#define SRQ_SOFT_RESP_F_ROOM     (1u << 3) /* room for a kept result */
#define SRQ_SOFT_RESP_F_REFUSED  (1u << 4) /* refused by its requester */

typedef struct srq_soft_resp_op {
    unsigned              flags;
    int                   access;    /* F_RDMA: IBV_ACCESS_REMOTE_* */
    srq_soft_resp_exec_t  execute;   /* also what a duplicate gets again:
                                        READ, ATOMIC; the others an ACK */
} srq_soft_resp_op_t;

static const srq_soft_resp_op_t srq_soft_resp_ops[SRQ_SOFT_OP_LAST] = {
    [SRQ_SOFT_OP_SEND]       = {SRQ_SOFT_RESP_F_WQE, 0,
                                SRQ_SOFT_RESP_EXEC_RECV},
    /* the data is in place already: the immediate takes a WQE */
    [SRQ_SOFT_OP_WRITE_IMM]  = {SRQ_SOFT_RESP_F_WQE, 0,
                                SRQ_SOFT_RESP_EXEC_RECV},
    [SRQ_SOFT_OP_WRITE]      = {SRQ_SOFT_RESP_F_WQE_IMM | SRQ_SOFT_RESP_F_RDMA,
                                IBV_ACCESS_REMOTE_WRITE,
                                SRQ_SOFT_RESP_EXEC_WRITE},
    [SRQ_SOFT_OP_READ]       = {SRQ_SOFT_RESP_F_RDMA | SRQ_SOFT_RESP_F_ROOM,
                                IBV_ACCESS_REMOTE_READ,
                                SRQ_SOFT_RESP_EXEC_READ},
    /* the atomic unit makes its own checks when it executes */
    [SRQ_SOFT_OP_CMP_SWAP]   = {SRQ_SOFT_RESP_F_ROOM, 0,
                                SRQ_SOFT_RESP_EXEC_ATOMIC},
    [SRQ_SOFT_OP_FETCH_ADD]  = {SRQ_SOFT_RESP_F_ROOM, 0,
                                SRQ_SOFT_RESP_EXEC_ATOMIC},
    [SRQ_SOFT_OP_ATOMIC_WRITE] = {SRQ_SOFT_RESP_F_ROOM, 0,
                                  SRQ_SOFT_RESP_EXEC_ATOMIC},
    [SRQ_SOFT_OP_ACCESS_ERR] = {SRQ_SOFT_RESP_F_REFUSED, 0,
                                SRQ_SOFT_RESP_EXEC_NONE},
};

/* ---- the checks ---- */

/* IB spec: a UC responder that refuses a message (no receive WQE, a
 * protection error) drops it silently and goes on with the next; nothing
 * tells the requester, whose WR completed once the message left. (RC:
 * @rc, the state that answers it) */
static srq_soft_resp_state_t srq_soft_resp_refuse(srq_soft_resp_req_t *r,
                                                  srq_soft_resp_state_t rc)
{
    return srq_soft_qp_is_uc(r->qp) ? SRQ_SOFT_RESP_UC_DROP : rc;
}

static srq_soft_resp_state_t srq_soft_resp_chk_psn(srq_soft_resp_req_t *r)
{
    int32_t d = srq_soft_psn_diff(r->pkt->psn, r->qp->epsn);

    if (srq_soft_qp_is_uc(r->qp)) {
        r->qp->epsn = r->pkt->psn; /* UC: no duplicates, any PSN resyncs */
        d = 0;
    }
    if (d == 0) {
        return SRQ_SOFT_RESP_CHK_OP;
    }
    ++r->dev->stats.rx_out_of_seq;
    /* ahead: dropped until the requester resends in order */
    return (d < 0) ? SRQ_SOFT_RESP_DUPLICATE : SRQ_SOFT_RESP_DONE;
}

static void srq_soft_resp_dup_read(srq_soft_resp_req_t *r);
static void srq_soft_resp_dup_atomic(srq_soft_resp_req_t *r);

/* A duplicate: its answer again where there is one, and an ACK */
static srq_soft_resp_state_t srq_soft_resp_duplicate(srq_soft_resp_req_t *r)
{
    if (r->op->execute == SRQ_SOFT_RESP_EXEC_READ) {
        srq_soft_resp_dup_read(r);
    } else if (r->op->execute == SRQ_SOFT_RESP_EXEC_ATOMIC) {
        srq_soft_resp_dup_atomic(r);
    }
    srq_soft_resp_sched_ack(r->qp);
    return SRQ_SOFT_RESP_DONE;
}

/* XRC target: every request names an SRQ of the target's domain (its
 * receive WQEs come from it, its PD checks the keys); one of no SRQ or of
 * another domain is refused as an access error, and the QP goes to error
 * (as any access error of RC's responder) */
static void srq_soft_resp_xrc_srq(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt)
{
    srq_soft_srq_t *srq = srq_soft_xrc_srq_lookup(qp->dev, pkt->aux);

    if ((srq == NULL) || !srq_soft_xrc_same_domain(srq, qp->ex_xrcd)) {
        srq = NULL;
    }
    qp->xrc_srq   = srq;
    qp->req_pd_id = (srq != NULL) ? srq_soft_pd_id(srq->ibv.pd) : 0;
}

static srq_soft_resp_state_t srq_soft_resp_chk_xrc(srq_soft_resp_req_t *r)
{
    if (r->qp->xrc_srq == NULL) {
        r->nak = SRQ_SOFT_NAK_REM_ACCESS;
        return SRQ_SOFT_RESP_ERR_FAIL;
    }
    return SRQ_SOFT_RESP_CHK_WQE;
}

/* The request we would have refused (its requester failed it) */
static srq_soft_resp_state_t srq_soft_resp_chk_op(srq_soft_resp_req_t *r)
{
    if (r->op->flags & SRQ_SOFT_RESP_F_REFUSED) {
        r->nak = SRQ_SOFT_NAK_REM_ACCESS;
        if ((r->pkt->flags & SRQ_SOFT_PKT_F_IMM) &&
            (r->qp->ibv.qp_type == IBV_QPT_RC)) {
            r->has_wqe = srq_soft_rview_peek(r->qp, &r->wqe);
        }
        if (r->has_wqe) {
            /* a WRITE with immediate: the WQE it takes completes in
             * error and tells our user (srq_soft_resp_chk_rkey) */
            r->status = IBV_WC_REM_ACCESS_ERR;
            return SRQ_SOFT_RESP_COMPLETE;
        }
        return SRQ_SOFT_RESP_ERR_FAIL;
    }
    if (r->qp->ibv.qp_type == IBV_QPT_XRC_RECV) {
        return srq_soft_resp_chk_xrc(r);
    }
    if (r->qp->tm && (r->pkt->opcode == SRQ_SOFT_OP_SEND)) {
        return SRQ_SOFT_RESP_TM;
    }
    return SRQ_SOFT_RESP_CHK_WQE;
}

/* A SEND to a TM SRQ: matched, or an ordinary receive (soft_tm.c) */
static srq_soft_resp_state_t srq_soft_resp_tm(srq_soft_resp_req_t *r)
{
    switch (srq_soft_tm_recv(r->qp, r->pkt, r->payload, &r->nak)) {
    case SRQ_SOFT_TM_RNR:
        return SRQ_SOFT_RESP_RNR;
    case SRQ_SOFT_TM_NAK:
        return SRQ_SOFT_RESP_NAK;
    case SRQ_SOFT_TM_ERR:
        return SRQ_SOFT_RESP_ERR_WQE;
    default:
        return SRQ_SOFT_RESP_ACKNOWLEDGE;
    }
}

static srq_soft_resp_state_t srq_soft_resp_chk_wqe(srq_soft_resp_req_t *r)
{
    if ((r->op->flags & SRQ_SOFT_RESP_F_WQE) ||
        ((r->op->flags & SRQ_SOFT_RESP_F_WQE_IMM) &&
         (r->pkt->flags & SRQ_SOFT_PKT_F_IMM))) {
        r->has_wqe = srq_soft_rview_peek(r->qp, &r->wqe);
        if (!r->has_wqe) {
            return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_RNR);
        }
    }
    return SRQ_SOFT_RESP_CHK_RKEY;
}

static srq_soft_resp_state_t srq_soft_resp_chk_rkey(srq_soft_resp_req_t *r)
{
    if (r->op->flags & SRQ_SOFT_RESP_F_RDMA) {
        r->nak = srq_soft_resp_rdma_check(r->qp, &r->rdma, r->pkt->length,
                                          r->op->access, &r->va);
        if ((r->nak == SRQ_SOFT_NAK_REM_ACCESS) && r->has_wqe &&
            !srq_soft_qp_is_uc(r->qp)) {
            /* a WRITE with immediate took a WQE: it completes in error
             * and tells our user, not flushed (rxe: class C) */
            r->status = IBV_WC_REM_ACCESS_ERR;
            return SRQ_SOFT_RESP_COMPLETE;
        }
        if (r->nak != 0) {
            return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_ERR_FAIL);
        }
    }
    return SRQ_SOFT_RESP_CHK_ROOM;
}

/* More results in flight than we can keep unsent: not executed, the
 * requester resends it */
static srq_soft_resp_state_t srq_soft_resp_chk_room(srq_soft_resp_req_t *r)
{
    if ((r->op->flags & SRQ_SOFT_RESP_F_ROOM) &&
        !srq_soft_atomic_has_room(r->qp)) {
        return SRQ_SOFT_RESP_DROP;
    }
    return SRQ_SOFT_RESP_EXECUTE;
}

/* ---- the execution of each opcode ---- */

/* SEND, WRITE_IMM: the message into the WQE; -1 (the sender's memory
 * could not be read) leaves the WQE posted */
static srq_soft_resp_state_t srq_soft_resp_exec_recv(srq_soft_resp_req_t *r)
{
    r->status = srq_soft_rview_place(r->qp, r->pkt, r->payload, &r->wqe, 0);
    if (r->status < 0) {
        r->nak = SRQ_SOFT_NAK_REM_OP;
        return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_NAK);
    }
    if ((r->status == IBV_WC_SUCCESS) && (r->pkt->flags & SRQ_SOFT_PKT_F_INV)) {
        /* SEND with invalidate: the window its rkey names */
        r->status = srq_soft_mw_remote_inv(r->qp, r->pkt->imm);
        r->no_nak = (r->status != IBV_WC_SUCCESS) &&
                    srq_soft_mw_is_type1(r->qp->dev, r->pkt->imm);
    }
    return SRQ_SOFT_RESP_COMPLETE;
}

/* WRITE: into our memory (with immediate data, then completed into the
 * WQE it took), then a coalesced ACK */
static srq_soft_resp_state_t srq_soft_resp_exec_write(srq_soft_resp_req_t *r)
{
    srq_soft_rview_t v = {.num_sge = 1};

    r->status = IBV_WC_SUCCESS;
    if (!(r->pkt->flags & SRQ_SOFT_PKT_F_PULL)) {
        v.sge[0].addr   = r->va;
        v.sge[0].length = r->pkt->length;
        if (srq_soft_rview_copy(r->dev->guard_copies, &v, 0, r->payload,
                                r->pkt->length)) {
            return SRQ_SOFT_RESP_COMPLETE;
        }
        /* the region's pages are gone (soft_mem.h): as a refused key */
        r->nak = SRQ_SOFT_NAK_REM_ACCESS;
        return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_ERR_FAIL);
    }
    r->nak = srq_soft_resp_write_pull(r->qp, &r->rdma,
                                      (const srq_soft_pkt_iov_t*)r->payload,
                                      r->pkt->nsge, r->pkt->length);
    switch (r->nak) {
    case 0:
        return SRQ_SOFT_RESP_COMPLETE;
    case SRQ_SOFT_RESP_REVOKED:
        return SRQ_SOFT_RESP_DONE; /* unanswered: the QP leaves RTS/RTR */
    case SRQ_SOFT_NAK_REM_ACCESS:
        return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_ERR_FAIL);
    default:
        /* as for a SEND: not read */
        return srq_soft_resp_refuse(r, SRQ_SOFT_RESP_NAK);
    }
}

/* READ: executed, answered by a READ_RESP (one with F_PULL without its
 * data: the requester reads it when the answer comes), or kept while a
 * full queue or older results hold the answer back */
static srq_soft_resp_state_t srq_soft_resp_exec_read(srq_soft_resp_req_t *r)
{
    srq_soft_qp_t *qp = r->qp;
    const void *data  = (r->pkt->flags & SRQ_SOFT_PKT_F_PULL) ? NULL :
                        (const void*)(uintptr_t)r->va;

    qp->epsn = srq_soft_psn_add(qp->epsn, 1);
    if ((srq_soft_atomic_unsent(qp) != NULL) ||
        (srq_soft_resp_read_resp(qp, r->pkt->psn, data, r->pkt->length) ==
         EAGAIN)) {
        /* the data as read now (or, pulled, the answer alone). Without
         * memory for a copy it is lost as a packet can be: the
         * requester's timeout resends the READ */
        if (srq_soft_atomic_save_read(qp, r->pkt->psn, data,
                                      r->pkt->length)) {
            srq_soft_resp_sched_ack(qp); /* sent with the ACKs */
        }
    } /* else answered: the READ_RESP acknowledges it */
    return SRQ_SOFT_RESP_DONE;
}

/* CMP_SWAP, FETCH_ADD: execute, keep, answer */
static srq_soft_resp_state_t srq_soft_resp_exec_atomic(srq_soft_resp_req_t *r)
{
    srq_soft_qp_t *qp = r->qp;
    srq_soft_pkt_atomic_t req;
    uint64_t orig = 0;

    memcpy(&req, r->payload, sizeof(req)); /* the frame may be reused */
    r->nak = srq_soft_atomic_execute(qp, r->pkt->opcode, &req, &orig);
    if (r->nak != 0) {
        return SRQ_SOFT_RESP_ERR_FAIL;
    }
    srq_soft_atomic_save(qp, r->pkt->psn, orig);
    qp->epsn = srq_soft_psn_add(qp->epsn, 1);
    if (srq_soft_resp_atomic_flush(qp) != 0) {
        srq_soft_resp_sched_ack(qp); /* queue full: sent with the ACKs */
    }
    return SRQ_SOFT_RESP_DONE;
}

/* A duplicate READ executes again, answered if it can be at once (nothing
 * older waits); else dropped, and the requester asks again */
static void srq_soft_resp_dup_read(srq_soft_resp_req_t *r)
{
    const void *data;
    uint64_t va;

    if ((srq_soft_resp_rdma_check(r->qp, &r->rdma, r->pkt->length,
                                  IBV_ACCESS_REMOTE_READ, &va) == 0) &&
        (srq_soft_atomic_unsent(r->qp) == NULL)) {
        data = (r->pkt->flags & SRQ_SOFT_PKT_F_PULL) ? NULL :
               (const void*)(uintptr_t)va;
        srq_soft_resp_read_resp(r->qp, r->pkt->psn, data, r->pkt->length);
    }
}

/* A duplicate atomic: its kept result again, never executed twice. One
 * not kept any more is dropped (the requester cannot be waiting for it:
 * it had at most max_rd_atomic atomics in flight) */
static void srq_soft_resp_dup_atomic(srq_soft_resp_req_t *r)
{
    const srq_soft_atomic_res_t *res = srq_soft_atomic_find(r->qp,
                                                            r->pkt->psn);

    if (res != NULL) {
        srq_soft_resp_atomic_ack(r->qp, res); /* no room: it asks again */
    }
}

/* The opcode's execution, as its table entry says */
static srq_soft_resp_state_t srq_soft_resp_execute(srq_soft_resp_req_t *r)
{
    switch (r->op->execute) {
    case SRQ_SOFT_RESP_EXEC_RECV:   return srq_soft_resp_exec_recv(r);
    case SRQ_SOFT_RESP_EXEC_WRITE:  return srq_soft_resp_exec_write(r);
    case SRQ_SOFT_RESP_EXEC_READ:   return srq_soft_resp_exec_read(r);
    case SRQ_SOFT_RESP_EXEC_ATOMIC: return srq_soft_resp_exec_atomic(r);
    default:                        return SRQ_SOFT_RESP_DONE;
    }
}

/* ---- the end of a request ---- */

/* The WQE it took completes, with the status of the placement */
static srq_soft_resp_state_t srq_soft_resp_complete(srq_soft_resp_req_t *r)
{
    if (!r->has_wqe) {
        return SRQ_SOFT_RESP_ACKNOWLEDGE;
    }
    srq_soft_rview_consume(r->qp, &r->wqe);
    srq_soft_rview_complete(r->qp, r->pkt, &r->wqe, r->status, r->pkt->length);
    if ((r->status == IBV_WC_SUCCESS) || srq_soft_qp_is_uc(r->qp)) {
        /* UC: the WQE completed in error tells our user; the QP goes on
         * (rxe's) */
        return SRQ_SOFT_RESP_ACKNOWLEDGE;
    }
    /* a type 1 window named by a SEND with invalidate: the WQE tells our
     * user, the QP goes to error and no NAK goes out (IB class J) */
    r->nak = r->no_nak ? 0 :
             ((r->status == IBV_WC_LOC_LEN_ERR) ||
              (r->status == IBV_WC_REM_INV_REQ_ERR)) ? SRQ_SOFT_NAK_INV_REQ :
             (r->status == IBV_WC_REM_ACCESS_ERR) ? SRQ_SOFT_NAK_REM_ACCESS :
                                                    SRQ_SOFT_NAK_REM_OP;
    return SRQ_SOFT_RESP_ERR_WQE;
}

static srq_soft_resp_state_t srq_soft_resp_acknowledge(srq_soft_resp_req_t *r)
{
    srq_soft_resp_done(r->qp);
    return SRQ_SOFT_RESP_DONE;
}

static srq_soft_resp_state_t srq_soft_resp_rnr_step(srq_soft_resp_req_t *r)
{
    srq_soft_resp_rnr(r->dev, r->qp, r->pkt);
    return SRQ_SOFT_RESP_DONE;
}

static srq_soft_resp_state_t srq_soft_resp_nak_step(srq_soft_resp_req_t *r)
{
    srq_soft_resp_ctrl(r->qp, r->nak, r->qp->epsn);
    return SRQ_SOFT_RESP_DONE;
}

static srq_soft_resp_state_t srq_soft_resp_err_wqe(srq_soft_resp_req_t *r)
{
    srq_soft_resp_rc_error(r->qp, r->nak);
    return SRQ_SOFT_RESP_DONE;
}

static srq_soft_resp_state_t srq_soft_resp_err_fail(srq_soft_resp_req_t *r)
{
    srq_soft_resp_rc_fail(r->qp, r->nak);
    return SRQ_SOFT_RESP_DONE;
}

static srq_soft_resp_state_t srq_soft_resp_drop(srq_soft_resp_req_t *r)
{
    ++r->dev->stats.rx_dropped;
    return SRQ_SOFT_RESP_DONE;
}

/* The requester's WR is done either way: the ACK only tells its device
 * that the message has left (its buffer may be reused) */
static srq_soft_resp_state_t srq_soft_resp_uc_drop(srq_soft_resp_req_t *r)
{
    ++r->dev->stats.rx_dropped;
    srq_soft_resp_done(r->qp);
    return SRQ_SOFT_RESP_DONE;
}

/* One step: a switch, not a table of pointers, so that the steps of the
 * fast path (a SEND) are inlined as the code before the state machine */
static srq_soft_resp_state_t srq_soft_resp_step(srq_soft_resp_state_t state,
                                                srq_soft_resp_req_t *r)
{
    switch (state) {
    case SRQ_SOFT_RESP_CHK_PSN:     return srq_soft_resp_chk_psn(r);
    case SRQ_SOFT_RESP_DUPLICATE:   return srq_soft_resp_duplicate(r);
    case SRQ_SOFT_RESP_CHK_OP:      return srq_soft_resp_chk_op(r);
    case SRQ_SOFT_RESP_CHK_WQE:     return srq_soft_resp_chk_wqe(r);
    case SRQ_SOFT_RESP_TM:          return srq_soft_resp_tm(r);
    case SRQ_SOFT_RESP_CHK_RKEY:    return srq_soft_resp_chk_rkey(r);
    case SRQ_SOFT_RESP_CHK_ROOM:    return srq_soft_resp_chk_room(r);
    case SRQ_SOFT_RESP_EXECUTE:     return srq_soft_resp_execute(r);
    case SRQ_SOFT_RESP_COMPLETE:    return srq_soft_resp_complete(r);
    case SRQ_SOFT_RESP_ACKNOWLEDGE: return srq_soft_resp_acknowledge(r);
    case SRQ_SOFT_RESP_RNR:         return srq_soft_resp_rnr_step(r);
    case SRQ_SOFT_RESP_NAK:         return srq_soft_resp_nak_step(r);
    case SRQ_SOFT_RESP_ERR_WQE:     return srq_soft_resp_err_wqe(r);
    case SRQ_SOFT_RESP_ERR_FAIL:    return srq_soft_resp_err_fail(r);
    case SRQ_SOFT_RESP_DROP:        return srq_soft_resp_drop(r);
    case SRQ_SOFT_RESP_UC_DROP:     return srq_soft_resp_uc_drop(r);
    default:                        return SRQ_SOFT_RESP_DONE;
    }
}

static void srq_soft_resp_rc(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                             const srq_soft_pkt_t *pkt, const uint8_t *payload)
{
    srq_soft_resp_state_t state = SRQ_SOFT_RESP_CHK_PSN;
    srq_soft_resp_req_t r;

    r.dev     = dev;
    r.qp      = qp;
    r.pkt     = pkt;
    r.payload = payload;
    r.op      = (pkt->opcode < SRQ_SOFT_OP_LAST) ?
                &srq_soft_resp_ops[pkt->opcode] : NULL;
    if ((r.op == NULL) ||
        ((r.op->execute == SRQ_SOFT_RESP_EXEC_NONE) &&
         !(r.op->flags & SRQ_SOFT_RESP_F_REFUSED))) {
        ++dev->stats.rx_dropped; /* no request the responder takes */
        return;
    }
    r.has_wqe = false;
    r.no_nak  = false;
    if (qp->ibv.qp_type == IBV_QPT_XRC_RECV) {
        srq_soft_resp_xrc_srq(qp, pkt); /* a duplicate's keys too */
    }
    if (r.op->flags & SRQ_SOFT_RESP_F_RDMA) {
        memcpy(&r.rdma, payload, sizeof(r.rdma)); /* the frame may be reused */
        r.payload += sizeof(r.rdma);
    }
    while (state != SRQ_SOFT_RESP_DONE) {
        state = srq_soft_resp_step(state, &r);
    }
}

void srq_soft_resp_recv(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                        const uint8_t *payload)
{
    srq_soft_qp_t *qp;

    if (!srq_soft_resp_pkt_ok(pkt, payload)) {
        ++dev->stats.rx_dropped;
        return;
    }
    qp = srq_soft_qp_lookup(dev, pkt->dst_qpn);
    if ((qp != NULL) && (pkt->flags & SRQ_SOFT_PKT_F_UD)) {
        srq_soft_resp_ud(dev, qp, pkt, payload);
        return;
    }
    if ((qp == NULL) || !srq_soft_resp_rc_ok(qp, pkt)) {
        if (pkt->flags & SRQ_SOFT_PKT_F_UC) {
            srq_soft_resp_uc_lost(dev, pkt);
        }
        ++dev->stats.rx_dropped;
        return;
    }
    ++dev->stats.rx_packets;
    if ((qp->state == IBV_QPS_RTR) && !qp->comm_est) {
        /* the first packet of the connection finds us not in RTS yet */
        qp->comm_est = true;
        srq_soft_async_raise(dev, IBV_EVENT_COMM_EST, &qp->ibv,
                             &qp->events_written);
    }
    srq_soft_resp_rc(dev, qp, pkt, payload);
}

