/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the requester.
 *
 * Walks a QP's send queue in order from sq_tx:
 *   - SEND / SEND_WITH_IMM / WRITE_WITH_IMM become packets in the target
 *     instance's inbound queue (RC: a PSN each, completed by ACK; UD: done
 *     once queued). Small payloads travel in the packet; larger ones are
 *     described by iovecs the responder pulls with process_vm_readv.
 *   - RDMA_WRITE / RDMA_READ (and the data part of WRITE_WITH_IMM) are
 *     done here, one-sided, with process_vm_writev/readv: no CPU of the
 *     target takes part, so we check what its responder would, in its
 *     shared tables: the target QP exists, is ready, is connected to ours
 *     and grants the access (else the request is dropped, as by a fabric,
 *     and retried after the transport timeout, or IBV_WC_REM_ACCESS_ERR
 *     for the access); the rkey covers the range with that access in the
 *     target QP's PD (else IBV_WC_REM_ACCESS_ERR, and an ACCESS_ERR notice
 *     moves the target QP to error, as its responder would). The copy
 *     (soft_req_mem.c) goes in chunks,
 *     announced and checked again each time (soft_inflight.c), so that a
 *     target that deregisters the region or destroys the QP cuts it off.
 *     That is only when every earlier WQE is acknowledged: behind
 *     unacknowledged ones, a WRITE or a READ (any size, a WRITE with
 *     immediate data too) becomes a packet the target's responder executes
 *     in PSN order, as an HCA's does, so RC ordering holds without waiting
 *     for ACKs. A READ's data comes back in a READ_RESP; one larger than
 *     SRQ_SOFT_PKT_INLINE_MAX is answered without it, and we read the data
 *     one-sided (as above) when the answer comes: after everything the
 *     responder executed before the READ, as IB orders it. A WQE posted
 *     with IBV_SEND_FENCE waits until every earlier READ and atomic has
 *     its response.
 *   - After an RNR NAK only the refused WQE goes out (a probe) until the
 *     responder takes it (soft_comp.c).
 *   - ATOMIC_CMP_AND_SWP / ATOMIC_FETCH_AND_ADD become packets the target's
 *     responder executes (soft_atomic.c); its ATOMIC_ACK carries the
 *     original value the completer writes to the scatter list. At most
 *     max_rd_atomic of them are in flight.
 *   - A WQE whose local keys do not check out (bounds, access, the QP's
 *     PD) completes with IBV_WC_LOC_PROT_ERR, also in order, and the QP
 *     goes to error.
 */
#define _GNU_SOURCE
#include "soft_req.h"
#include "../fabric/soft_clock.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_mw.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_sq.h"
#include "soft_atomic.h"
#include "soft_iov.h"
#include "soft_liveness.h"
#include "soft_req_mem.h"
#include "soft_tmh.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Retry interval of a dropped request on a QP whose timeout is infinite */
#define SRQ_SOFT_REQ_DROP_RETRY_NS  10000000ull

enum {
    SRQ_SOFT_REQ_NEXT,   /* WQE handled: go on */
    SRQ_SOFT_REQ_STALL,  /* waits for earlier WQEs to be acknowledged */
    SRQ_SOFT_REQ_AGAIN,  /* no room at the target: retry from progress */
    SRQ_SOFT_REQ_FAILED  /* the QP went to error */
};

void srq_soft_req_sched(srq_soft_qp_t *qp)
{
    if (!srq_soft_list_linked(&qp->sched_link)) {
        srq_soft_list_add_tail(&qp->dev->sched_qps, &qp->sched_link);
    }
}

/* One-sided RDMA (soft_req_mem.c): 0, an IBV_WC_* status or
 * SRQ_SOFT_REQ_DROPPED; a target process gone is a dead peer */
static int srq_soft_req_one_sided(srq_soft_qp_t *qp,
                                  const srq_soft_swqe_t *wqe)
{
    int status = srq_soft_req_rdma(qp, wqe);

    if (status == SRQ_SOFT_REQ_PEER_GONE) {
        srq_soft_liveness_peer_dead(qp->dev, qp->peer);
        return IBV_WC_RETRY_EXC_ERR;
    }
    return status;
}

/* Done here, one-sided (else: a packet) */
static bool srq_soft_is_one_sided(const srq_soft_swqe_t *wqe)
{
    return !wqe->by_responder &&
           ((wqe->opcode == IBV_WR_RDMA_WRITE) ||
            (wqe->opcode == IBV_WR_RDMA_READ) ||
            ((wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) &&
             !wqe->write_done));
}

/* A READ whose data does not fit one response packet: its responder
 * answers without the data, which we then read one-sided */
static bool srq_soft_req_read_pulled(const srq_soft_swqe_t *wqe)
{
    return (wqe->opcode == IBV_WR_RDMA_READ) &&
           (wqe->length > SRQ_SOFT_PKT_INLINE_MAX);
}

static uint8_t srq_soft_req_pkt_opcode(const srq_soft_swqe_t *wqe)
{
    switch (wqe->opcode) {
    case IBV_WR_RDMA_WRITE:
        return SRQ_SOFT_OP_WRITE;
    case IBV_WR_RDMA_READ:
        return SRQ_SOFT_OP_READ;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        /* the responder's: a WRITE with F_IMM; else the data went
         * one-sided and the packet only consumes a receive */
        return wqe->by_responder ? SRQ_SOFT_OP_WRITE : SRQ_SOFT_OP_WRITE_IMM;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return SRQ_SOFT_OP_CMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return SRQ_SOFT_OP_FETCH_ADD;
    case IBV_WR_ATOMIC_WRITE:
        return SRQ_SOFT_OP_ATOMIC_WRITE;
    default:
        return SRQ_SOFT_OP_SEND;
    }
}

static void srq_soft_req_pkt_hdr(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe,
                                 srq_soft_pkt_t *pkt)
{
    bool ud = (qp->ibv.qp_type == IBV_QPT_UD);

    pkt->opcode  = srq_soft_req_pkt_opcode(wqe);
    pkt->flags   = ud ? SRQ_SOFT_PKT_F_UD :
                   srq_soft_qp_is_uc(qp) ? SRQ_SOFT_PKT_F_UC : 0;
    if ((wqe->opcode == IBV_WR_SEND_WITH_IMM) ||
        (wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        pkt->flags |= SRQ_SOFT_PKT_F_IMM;
    } else if (wqe->opcode == IBV_WR_SEND_WITH_INV) {
        pkt->flags |= SRQ_SOFT_PKT_F_INV; /* the rkey in imm */
    }
    if (wqe->send_flags & IBV_SEND_SOLICITED) {
        pkt->flags |= SRQ_SOFT_PKT_F_SE;
    }
    pkt->nsge    = 0;
    if (ud) {
        pkt->tclass = wqe->ud_tclass; /* the receiver's GRH shows it */
    }
    pkt->dst_qpn = ud ? wqe->ud_qpn : qp->attr.dest_qp_num;
    pkt->src_qpn = qp->ibv.qp_num;
    pkt->psn     = wqe->psn;
    pkt->imm     = wqe->imm;
    pkt->length  = wqe->length;
    pkt->aux     = ud ? wqe->ud_qkey : 0;
    if (qp->ibv.qp_type == IBV_QPT_XRC_SEND) {
        /* the XRCETH: the SRQ at the target (an initiator has no
         * responder, so no ACK of its own ever rides in aux) */
        pkt->flags |= SRQ_SOFT_PKT_F_XRC;
        pkt->aux    = wqe->xrc_srqn;
    }
    memcpy(pkt->src_inst, qp->dev->fab.instance, SRQ_SOFT_INST_LEN);
    pkt->src_lid = qp->dev->lid;
}

/*
 * Copy @len bytes of the program's memory at @src into a frame. A WQE
 * sent by the ibv_post_send that posts it copies what it was just given.
 * A retransmission, or a WQE sent later from progress (back-pressure
 * deferred it), may find the pages gone: a program may unmap a buffer
 * whose region a registration cache deregisters only later, and soft0
 * pins nothing. It reads through the kernel then, which answers EFAULT
 * where memcpy would take the process down. false: not readable.
 */
static bool srq_soft_req_copy_in(const srq_soft_swqe_t *wqe, uint8_t *dst,
                                 uint64_t src, uint32_t len)
{
    struct iovec local = { dst, len }, remote = { (void*)(uintptr_t)src, len };

    if (wqe->fresh) {
        memcpy(dst, (const void*)(uintptr_t)src, len);
        return true;
    }
    return (len == 0) ||
           (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
            (ssize_t)len);
}

/* Payload: (for RDMA executed by the responder, where it goes, then) the
 * data itself, or the iovecs the responder pulls. false: the data is no
 * longer readable */
static bool srq_soft_req_pkt_payload(srq_soft_qp_t *qp,
                                     const srq_soft_swqe_t *wqe,
                                     srq_soft_pkt_t *pkt, bool pull)
{
    const struct ibv_sge *sge = srq_soft_swqe_sge(qp, wqe);
    srq_soft_pkt_rdma_t *rdma = (srq_soft_pkt_rdma_t*)(pkt + 1);
    size_t skip   = wqe->by_responder ? sizeof(*rdma) : 0;
    srq_soft_pkt_iov_t *iov   = (srq_soft_pkt_iov_t*)((uint8_t*)(pkt + 1) +
                                                      skip);
    uint8_t *dst              = (uint8_t*)(pkt + 1) + skip;
    srq_soft_pkt_atomic_t *atomic = (srq_soft_pkt_atomic_t*)(pkt + 1);

    _Static_assert((sizeof(*pkt) % 8) == 0, "iovecs are aligned");
    _Static_assert((sizeof(*rdma) % 8) == 0, "iovecs are aligned");
    uint32_t i;

    if (pkt->opcode == SRQ_SOFT_OP_WRITE_IMM) {
        return true; /* the data went one-sided already */
    }
    if (wqe->by_responder) {
        rdma->addr     = wqe->remote_addr;
        rdma->rkey     = wqe->rkey;
        rdma->reserved = 0;
        if (pkt->opcode == SRQ_SOFT_OP_READ) {
            if (srq_soft_req_read_pulled(wqe)) {
                pkt->flags |= SRQ_SOFT_PKT_F_PULL;
            }
            return true; /* the scatter list waits for the READ_RESP */
        }
    }
    if (srq_soft_swqe_is_atomic(wqe)) {
        atomic->addr        = wqe->remote_addr;
        atomic->compare_add = wqe->compare_add;
        atomic->swap        = wqe->swap;
        atomic->rkey        = wqe->rkey;
        atomic->reserved    = 0;
        return true; /* the scatter list waits for the ATOMIC_ACK */
    }
    if (wqe->is_inline) {
        if (wqe->tm_fin) { /* the device's own FIN (soft_tm_rndv.c) */
            srq_soft_tmh_fin(dst, wqe->compare_add, (uint32_t)wqe->swap);
        } else {
            memcpy(dst, srq_soft_swqe_inline(qp, wqe), wqe->length);
        }
        return true;
    }
    for (i = 0; i < wqe->num_sge; ++i) {
        if (pull) {
            iov[i].addr = sge[i].addr;
            iov[i].len  = sge[i].length;
        } else {
            if (!srq_soft_req_copy_in(wqe, dst, sge[i].addr, sge[i].length)) {
                return false;
            }
            dst += sge[i].length;
        }
    }
    if (pull) {
        pkt->flags |= SRQ_SOFT_PKT_F_PULL;
        pkt->nsge   = (uint16_t)wqe->num_sge;
    }
    return true;
}

/*
 * IB spec: a responder that refuses a request's access moves its QP to
 * error. We checked for the target one-sided, so we tell it, at the PSN it
 * expects (everything before this WQE is acknowledged). Best effort: with
 * no room in its queue the notice is lost, as a packet can be.
 */
static void srq_soft_req_access_notice(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    srq_soft_tx_t tx;

    if (srq_soft_ring_reserve(&qp->dev->fab, qp->peer, srq_soft_frame_len(0),
                              &tx) != 0) {
        return;
    }
    wqe->psn = qp->next_psn;
    srq_soft_req_pkt_hdr(qp, wqe, tx.pkt);
    tx.pkt->opcode = SRQ_SOFT_OP_ACCESS_ERR;
    /* a WRITE with immediate data would have taken a receive WQE there */
    tx.pkt->flags  = (wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ?
                     SRQ_SOFT_PKT_F_IMM : 0;
    tx.pkt->imm    = 0;
    tx.pkt->length = 0;
    srq_soft_ring_commit(&qp->dev->fab, &tx);
}

/*
 * An RC request carries the ACK its QP owes the other way (soft_resp.c),
 * unless a NAK or atomic results must go first: the ACK frame is saved,
 * and a reply right after a request tells the responder that the next
 * ACK may wait a call for one.
 */
static void srq_soft_req_carry_ack(srq_soft_qp_t *qp, srq_soft_pkt_t *pkt)
{
    if (qp->rx_call == qp->dev->stats.progress_calls) {
        qp->ack_defer = true; /* a reply to what the last call took in */
    }
    if (!qp->ack_pending || qp->nak || (srq_soft_atomic_unsent(qp) != NULL)) {
        return;
    }
    pkt->flags     |= SRQ_SOFT_PKT_F_ACK;
    pkt->aux        = srq_soft_psn_add(qp->epsn, 0xffffff); /* epsn - 1 */
    qp->ack_pending = false;
    qp->ack_call    = 0;
    srq_soft_list_del(&qp->ack_link);
    ++qp->dev->stats.acks_carried;
}

/* Queue the WQE's packet at @peer: 0, EAGAIN (no room), EBUSY (locked by
 * another producer), EPIPE (gone), EPROTO (its queue is nonsense) or
 * EFAULT (our data is no longer readable) */
static int srq_soft_req_transmit(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                                 srq_soft_peer_t *peer)
{
    bool data_went = (wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) &&
                     !wqe->by_responder; /* one-sided already */
    bool pull = !data_went && !srq_soft_swqe_is_atomic(wqe) &&
                !wqe->is_inline && (wqe->length > SRQ_SOFT_PKT_INLINE_MAX);
    size_t payload;
    srq_soft_tx_t tx;
    int ret;

    if (data_went) {
        payload = 0;
    } else if (srq_soft_swqe_is_atomic(wqe)) {
        payload = sizeof(srq_soft_pkt_atomic_t);
    } else if (wqe->opcode == IBV_WR_RDMA_READ) {
        payload = sizeof(srq_soft_pkt_rdma_t); /* by the responder */
    } else {
        payload = pull ? wqe->num_sge * sizeof(srq_soft_pkt_iov_t) :
                         wqe->length;
        payload += wqe->by_responder ? sizeof(srq_soft_pkt_rdma_t) : 0;
    }
    ret = srq_soft_ring_reserve(&qp->dev->fab, peer,
                                srq_soft_frame_len(payload), &tx);
    if (ret != 0) {
        return ret;
    }
    srq_soft_req_pkt_hdr(qp, wqe, tx.pkt);
    if (!srq_soft_req_pkt_payload(qp, wqe, tx.pkt, pull)) {
        /* a claimed frame is always published: as padding */
        tx.pkt->opcode = SRQ_SOFT_OP_PAD;
        srq_soft_ring_commit(&qp->dev->fab, &tx);
        return EFAULT;
    }
    if (srq_soft_qp_is_conn(qp)) {
        srq_soft_req_carry_ack(qp, tx.pkt);
    }
    srq_soft_ring_commit(&qp->dev->fab, &tx);
    qp->tx_pos = tx.end;
    return 0;
}

static int srq_soft_req_fail(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                             enum ibv_wc_status status)
{
    srq_soft_sq_fail(qp, wqe, status);
    return SRQ_SOFT_REQ_FAILED;
}

/*
 * The peer's queue stays shut to us: another producer keeps it locked
 * (stopped or misbehaving: it held it for SRQ_SOFT_RING_LOCK_NS), or it
 * stays full while its consumer runs and takes nothing (its indices made
 * nonsense by a same-user writer, or a producer stopped in its claim).
 * Back-pressure, retried from progress, but not forever - once the QP's
 * transport timeout and its retries have passed, the WQE fails as a
 * request nobody answers does (lock_busy_since times both).
 */
static int srq_soft_req_blocked(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    uint64_t to  = srq_soft_timeout_ns(qp->attr.timeout);
    uint64_t now = srq_soft_now_ns();

    if (qp->lock_busy_since == 0) {
        qp->lock_busy_since = now;
    } else if ((to != UINT64_MAX) &&
               (now - qp->lock_busy_since > to * (qp->attr.retry_cnt + 1u))) {
        qp->lock_busy_since = 0;
        return srq_soft_req_fail(qp, wqe, IBV_WC_RETRY_EXC_ERR);
    }
    return SRQ_SOFT_REQ_AGAIN;
}

/*
 * The peer's queue is full. A peer whose device does not run (stopped,
 * descheduled, starved) is a live peer on a busy machine: its full queue is
 * back-pressure for as long as that lasts, as RNR with unlimited retries
 * is on an HCA; one whose consumer moves is only busy. Only a consumer
 * that runs (two rounds since the queue was first found stuck) and whose
 * head stays where it was is timed as blocked. A consumer asleep is woken:
 * no frame of ours will wake it, and a full queue is something to look at.
 */
static int srq_soft_req_full(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                             srq_soft_peer_t *peer)
{
    const srq_soft_shm_hdr_t *hdr = peer->seg.hdr;
    uint64_t head = atomic_load_explicit((_Atomic uint64_t*)&hdr->head,
                                         memory_order_acquire);
    uint64_t gen  = atomic_load_explicit((_Atomic uint64_t*)&hdr->progress_gen,
                                         memory_order_acquire);

    srq_soft_pipe_wake(peer);

    if (!qp->full_seen || (head != qp->full_head)) {
        qp->full_seen       = true;
        qp->full_head       = head;
        qp->full_gen        = gen;
        qp->lock_busy_since = 0;
        return SRQ_SOFT_REQ_AGAIN;
    }
    if (gen - qp->full_gen < 2) {
        qp->lock_busy_since = 0; /* its consumer has not run: wait */
        return SRQ_SOFT_REQ_AGAIN;
    }
    return srq_soft_req_blocked(qp, wqe);
}

/* The peer did not take the packet: a dead peer fails its QPs (this one
 * included) through srq_soft_liveness_peer_dead() */
static int srq_soft_req_tx_failed(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                                  srq_soft_peer_t *peer, int ret)
{
    if (ret == EBUSY) {
        return srq_soft_req_blocked(qp, wqe);
    }
    if (ret == EPROTO) {
        /* its queue cannot take a frame: as a peer nobody reaches */
        return srq_soft_req_fail(qp, wqe, IBV_WC_RETRY_EXC_ERR);
    }
    if (ret == EFAULT) {
        return srq_soft_req_fail(qp, wqe, IBV_WC_LOC_PROT_ERR);
    }
    if ((ret == EAGAIN) && srq_soft_liveness_check_due(qp->dev, peer)) {
        return srq_soft_req_full(qp, wqe, peer);
    }
    srq_soft_liveness_peer_dead(qp->dev, peer);
    return SRQ_SOFT_REQ_FAILED;
}

static int srq_soft_req_ud(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    int ret;

    if (srq_soft_req_check_lkeys(qp, wqe) != 0) {
        return srq_soft_req_fail(qp, wqe, IBV_WC_LOC_PROT_ERR);
    }
    /* no such QP at the AH's port: sent, and lost on the way */
    ret = (wqe->ud_peer != NULL) ?
          srq_soft_req_transmit(qp, wqe, wqe->ud_peer) : 0;
    if (ret == EFAULT) {
        return srq_soft_req_fail(qp, wqe, IBV_WC_LOC_PROT_ERR);
    }
    if ((ret == EAGAIN) &&
        srq_soft_liveness_check_due(qp->dev, wqe->ud_peer)) {
        return SRQ_SOFT_REQ_AGAIN;
    }
    /* sent, or the destination is gone or kept locked by another
     * producer: a datagram is just lost then */
    wqe->state  = SRQ_SOFT_SWQE_DONE;
    wqe->status = IBV_WC_SUCCESS;
    return SRQ_SOFT_REQ_NEXT;
}

static int srq_soft_req_rc_packet(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    int ret;

    if (wqe->state == SRQ_SOFT_SWQE_POSTED) {
        wqe->psn = qp->next_psn; /* first transmission */
    }
    ret = srq_soft_req_transmit(qp, wqe, qp->peer);
    if (ret != 0) {
        return srq_soft_req_tx_failed(qp, wqe, qp->peer, ret);
    }
    qp->lock_busy_since = 0;
    qp->full_seen       = false;
    if (wqe->state == SRQ_SOFT_SWQE_POSTED) {
        qp->next_psn = srq_soft_psn_add(qp->next_psn, 1);
        wqe->state   = SRQ_SOFT_SWQE_SENT;
    }
    if (qp->sq_ci == qp->sq_tx) {
        qp->tx_time = 0; /* the oldest in flight: timed from the next tick,
                            no clock read on the fast path */
    }
    return SRQ_SOFT_REQ_NEXT;
}

/* READs and atomics in flight (sent, their response not in) */
static uint32_t srq_soft_req_awaiting(const srq_soft_qp_t *qp)
{
    const srq_soft_swqe_t *wqe;
    uint32_t i, n = 0;

    for (i = qp->sq_ci; i != qp->sq_tx; ++i) {
        wqe = &qp->sq[i & qp->sq_mask];
        n  += (wqe->state == SRQ_SOFT_SWQE_SENT) &&
              srq_soft_swqe_awaits_data(wqe);
    }
    return n;
}

/* May one more READ or atomic go out? (max_rd_atomic; 0 is taken as 1:
 * one posted on such a QP must not wait forever) */
static bool srq_soft_req_atomic_room(srq_soft_qp_t *qp)
{
    uint32_t max = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

    return srq_soft_req_awaiting(qp) < max;
}

/* IBV_SEND_FENCE: the WQE waits until every earlier READ and atomic has
 * its response (one-sided READs done here are complete already) */
static bool srq_soft_req_fence_waits(const srq_soft_qp_t *qp,
                                     const srq_soft_swqe_t *wqe)
{
    return (wqe->send_flags & IBV_SEND_FENCE) &&
           (wqe->state == SRQ_SOFT_SWQE_POSTED) &&
           (srq_soft_req_awaiting(qp) > 0);
}

/* The target dropped a one-sided request: as for a lost packet, try again
 * after the transport timeout, IBV_WC_RETRY_EXC_ERR once the retries are
 * spent (an infinite timeout retries forever). As an HCA times a packet,
 * the last retry waits its timeout too before the error: retry_cnt + 1
 * timeouts in all, as the packets' own timer (srq_soft_progress_timeout)
 * counts them - retry_left goes to -1 for that last wait */
static int srq_soft_req_dropped(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    uint64_t to = srq_soft_timeout_ns(qp->attr.timeout);

    if (to == UINT64_MAX) {
        to = SRQ_SOFT_REQ_DROP_RETRY_NS;
    } else if (qp->retry_left < 0) {
        return srq_soft_req_fail(qp, wqe, IBV_WC_RETRY_EXC_ERR);
    } else {
        --qp->retry_left;
    }
    qp->wait       = SRQ_SOFT_WAIT_RETRY;
    qp->wait_until = srq_soft_now_ns() + to;
    srq_soft_req_sched(qp);
    return SRQ_SOFT_REQ_STALL;
}

/* One-sided RDMA failed with @status: the WQE fails (unless the QP did
 * already: a dead peer), and a refused access is told to the target */
static int srq_soft_req_rdma_failed(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                                    int status)
{
    if (qp->state == IBV_QPS_ERR) {
        return SRQ_SOFT_REQ_FAILED;
    }
    if (status == IBV_WC_REM_ACCESS_ERR) {
        srq_soft_req_access_notice(qp, wqe);
    }
    return srq_soft_req_fail(qp, wqe, status);
}

void srq_soft_req_pull_read(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    int status = srq_soft_req_one_sided(qp, wqe);

    if (status == SRQ_SOFT_REQ_DROPPED) {
        return; /* its QP went since it answered: as a lost response, the
                   transport timeout resends the READ */
    }
    if (status != IBV_WC_SUCCESS) {
        (void)srq_soft_req_rdma_failed(qp, wqe, status);
        return;
    }
    wqe->state  = SRQ_SOFT_SWQE_DONE;
    wqe->status = IBV_WC_SUCCESS;
}

static int srq_soft_req_rc(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    bool in_order = (qp->sq_ci == qp->sq_tx);
    int status;

    /* Every transmission, a retransmission too, reads the local memory
     * again: a region deregistered since (under the device lock, as this
     * runs) is no longer read - as an HCA's invalidated key, it fails the
     * WR (a program that freed the buffer of a WR still in flight). A READ
     * or an atomic reads none: its scatter list is checked when the
     * response lands (srq_soft_comp_chk_lkey, srq_soft_req_xfer), after
     * the responder's checks, as an HCA checks it - a bad remote key is
     * the error then, and a compare-and-swap executes */
    if (!srq_soft_swqe_scatters(wqe) &&
        (srq_soft_req_check_lkeys(qp, wqe) != 0)) {
        return in_order ? srq_soft_req_fail(qp, wqe, IBV_WC_LOC_PROT_ERR) :
                          SRQ_SOFT_REQ_STALL;
    }
    if (srq_soft_req_fence_waits(qp, wqe)) {
        return SRQ_SOFT_REQ_STALL; /* the last response resumes us */
    }
    if (srq_soft_is_one_sided(wqe) &&
        (!in_order || srq_soft_qp_is_uc(qp) || srq_soft_qp_is_xrc(qp))) {
        /* behind unacknowledged requests, in PSN order: the target's
         * responder executes it. UC's always: what its responder refuses
         * is dropped there without a word, as a UC responder does. XRC's
         * always: its keys are checked in the PD of the SRQ the request
         * names, which only the target knows */
        wqe->by_responder = true;
        ++qp->dev->stats.rdma_by_responder;
    }
    if ((wqe->state == SRQ_SOFT_SWQE_POSTED) &&
        srq_soft_swqe_awaits_data(wqe) && !srq_soft_req_atomic_room(qp)) {
        return SRQ_SOFT_REQ_STALL; /* a response resumes us */
    }
    if (srq_soft_is_one_sided(wqe)) {
        status = srq_soft_req_one_sided(qp, wqe);
        if (status == SRQ_SOFT_REQ_DROPPED) {
            return srq_soft_req_dropped(qp, wqe);
        }
        if (status != IBV_WC_SUCCESS) {
            return srq_soft_req_rdma_failed(qp, wqe, status);
        }
        qp->retry_left = qp->attr.retry_cnt; /* it got through */
        if (wqe->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
            wqe->state  = SRQ_SOFT_SWQE_DONE;
            wqe->status = IBV_WC_SUCCESS;
            return SRQ_SOFT_REQ_NEXT;
        }
        wqe->write_done = true; /* a retransmission sends the packet only */
    }
    return srq_soft_req_rc_packet(qp, wqe);
}

/* A memory window operation (BIND_MW, LOCAL_INV): executed here at its
 * turn; a retransmission from before it passes over it */
static int srq_soft_req_local(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    int status;

    if (wqe->state == SRQ_SOFT_SWQE_DONE) {
        return SRQ_SOFT_REQ_NEXT;
    }
    status = srq_soft_mw_execute(qp, wqe);
    if (status != IBV_WC_SUCCESS) {
        return srq_soft_req_fail(qp, wqe, status);
    }
    wqe->state  = SRQ_SOFT_SWQE_DONE;
    wqe->status = IBV_WC_SUCCESS;
    return SRQ_SOFT_REQ_NEXT;
}

/* A WR the device finds wrong (soft_post.c): it fails at its turn, once
 * everything before it completed (in order, as an HCA reports it) */
static int srq_soft_req_post_error(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    if (qp->sq_ci != qp->sq_tx) {
        return SRQ_SOFT_REQ_STALL; /* the completer resumes us */
    }
    return srq_soft_req_fail(qp, wqe, wqe->post_error);
}

/* Push the QP's send queue as far as it can go now */
void srq_soft_req_progress(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;
    int ret;

    while ((qp->state == IBV_QPS_RTS) && (qp->sq_tx != qp->sq_pi) &&
           (qp->wait == SRQ_SOFT_WAIT_NONE) &&
           !(qp->rnr_probe && (qp->sq_tx != qp->sq_ci))) {
        wqe = &qp->sq[qp->sq_tx & qp->sq_mask];
        ret = (wqe->post_error != IBV_WC_SUCCESS) ?
              srq_soft_req_post_error(qp, wqe) :
              srq_soft_swqe_is_local(wqe) ? srq_soft_req_local(qp, wqe) :
              (qp->ibv.qp_type == IBV_QPT_UD) ? srq_soft_req_ud(qp, wqe) :
                                                srq_soft_req_rc(qp, wqe);
        if (ret == SRQ_SOFT_REQ_AGAIN) {
            srq_soft_req_sched(qp);
            break;
        }
        if (ret != SRQ_SOFT_REQ_NEXT) {
            break; /* stalled (the completer resumes us) or failed */
        }
        ++qp->sq_tx;
        /* what finished here (one-sided, UD) completes at once, so that a
         * following one-sided WQE finds everything before it done */
        srq_soft_sq_complete(qp);
    }
    if (qp->state == IBV_QPS_RTS) {
        srq_soft_sq_complete(qp);
    }
}
