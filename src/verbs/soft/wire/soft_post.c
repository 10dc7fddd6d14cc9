/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: ibv_post_send / ibv_post_recv / ibv_post_srq_recv.
 *
 * As the man pages say: the WR list is processed in order; the first WR
 * that fails a check that can be made at post time stops it, is returned
 * through *bad_wr with the errno, and the WRs before it stay posted.
 * Post-time checks, those mlx5's library makes before the HCA sees the
 * WR: QP state (EINVAL: IBTA; mlx5 posts to an INIT or RTR QP, which
 * sends nothing until RTS - doc/soft0.md), num_sge above the queue's max
 * (EINVAL), opcode/flags the QP cannot do (EINVAL: memory window
 * operations on UD, TSO, ...), queue full (ENOMEM), ibv_post_recv on an
 * SRQ QP (EINVAL), and a UD destination this process has no memory or
 * descriptor left to map (ENOMEM, EMFILE: an HCA's library would fail
 * for lack of room the same way; a destination that is gone is no error,
 * the datagram is lost as on a fabric). What the HCA itself finds is posted and completes in
 * error at its turn (srq_soft_wr_device_error), as mlx5 does: RDMA or an
 * atomic on a UD QP (IBV_WC_LOC_QP_OP_ERR), a UD message above the MTU
 * or an atomic whose scatter list is not 8 bytes (IBV_WC_LOC_LEN_ERR);
 * rxe refuses those at post time. A misaligned atomic goes to the
 * responder, which refuses it (IBV_WC_REM_INV_REQ_ERR).
 * The ibv_wr_* API (soft_qp_ex.c) posts a batch through the same checks,
 * all of them before any WR of it is queued.
 * Everything else (keys, bounds, remote state) is checked when the WR
 * executes and reported in its completion.
 *
 * A QP in the error state accepts WRs and completes them at once with
 * IBV_WC_WR_FLUSH_ERR (IB spec).
 */
#include "soft_post.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_report.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_ah.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_srq.h"
#include "soft_doorbell.h"

#include <errno.h>
#include <string.h>

/* A WR that needs the device lock to be posted: growing the send queue's
 * arrays, mapping a UD destination (an answer inside this file, never an
 * errno) */
#define SRQ_SOFT_POST_NEEDS_DEV  (-1)

static bool srq_soft_opcode_ok(const srq_soft_qp_t *qp,
                               enum ibv_wr_opcode opcode)
{
    if (qp->ibv.qp_type == IBV_QPT_XRC_RECV) {
        return false; /* an XRC target sends nothing */
    }
    switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return srq_soft_qp_is_conn(qp); /* UC: SEND and WRITE only */
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV:
    case IBV_WR_SEND_WITH_INV:
        return srq_soft_qp_is_rc_req(qp);
    case IBV_WR_ATOMIC_WRITE:
        /* its 8 bytes come only through ibv_wr_atomic_write: struct
         * ibv_send_wr has no field for them, and ibv_post_send refuses
         * it, as mlx5's does */
        return srq_soft_qp_is_rc_req(qp) && qp->posting_ex;
    default:
        return false; /* TSO, ...: not supported */
    }
}

static bool srq_soft_wr_is_atomic(const struct ibv_send_wr *wr)
{
    return (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
           (wr->opcode == IBV_WR_ATOMIC_WRITE);
}

/* RDMA and atomics: an HCA's library posts them on a UD QP too, and the
 * device fails them (srq_soft_wr_device_error) */
static bool srq_soft_wr_is_rdma(enum ibv_wr_opcode opcode)
{
    return (opcode == IBV_WR_RDMA_WRITE) ||
           (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ||
           (opcode == IBV_WR_RDMA_READ) ||
           (opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/* Never inline; an atomic write carries its 8 bytes in the WR and has no
 * scatter list (the others' is checked by the device) */
static bool srq_soft_atomic_wr_ok(const struct ibv_send_wr *wr, uint64_t len)
{
    return !(wr->send_flags & IBV_SEND_INLINE) &&
           ((wr->opcode != IBV_WR_ATOMIC_WRITE) ||
            ((len == 0) && (wr->num_sge == 0)));
}

/* What the device finds wrong in a WR its library posted: the status of
 * its completion (IBV_WC_SUCCESS: nothing) */
static enum ibv_wc_status srq_soft_wr_device_error(const srq_soft_qp_t *qp,
                                                   const struct ibv_send_wr *wr,
                                                   uint64_t len)
{
    if (qp->ibv.qp_type == IBV_QPT_UD) {
        if (srq_soft_wr_is_rdma(wr->opcode)) {
            return IBV_WC_LOC_QP_OP_ERR;
        }
        if (len > SRQ_SOFT_UD_MTU) {
            return IBV_WC_LOC_LEN_ERR;
        }
    }
    if (srq_soft_wr_is_atomic(wr) && (wr->opcode != IBV_WR_ATOMIC_WRITE) &&
        (len != sizeof(uint64_t))) {
        return IBV_WC_LOC_LEN_ERR;
    }
    return IBV_WC_SUCCESS;
}

/* What a WR asks of its QP, without the room it takes */
static int srq_soft_check_send_fields(srq_soft_qp_t *qp,
                                      const struct ibv_send_wr *wr)
{
    enum ibv_qp_state state = srq_soft_qp_peek_state(qp);
    uint64_t len;

    if ((state != IBV_QPS_RTS) && (state != IBV_QPS_ERR)) {
        return EINVAL;
    }
    if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > qp->cap.max_send_sge)) {
        return EINVAL;
    }
    if (!srq_soft_opcode_ok(qp, wr->opcode) &&
        !((qp->ibv.qp_type == IBV_QPT_UD) && srq_soft_wr_is_rdma(wr->opcode))) {
        return EINVAL;
    }
    len = srq_verbs_sge_len(wr->sg_list, wr->num_sge);
    if (len > SRQ_SOFT_MAX_MSG) {
        return EINVAL;
    }
    if (srq_soft_wr_is_atomic(wr) && !srq_soft_atomic_wr_ok(wr, len)) {
        return EINVAL;
    }
    if ((wr->send_flags & IBV_SEND_INLINE) &&
        ((wr->opcode == IBV_WR_RDMA_READ) ||
         (len > qp->cap.max_inline_data))) {
        return EINVAL;
    }
    if ((qp->ibv.qp_type == IBV_QPT_UD) && !srq_soft_wr_is_rdma(wr->opcode) &&
        ((wr->wr.ud.ah == NULL) ||
         (wr->wr.ud.ah->context != qp->ibv.context))) {
        return EINVAL;
    }
    if ((wr->opcode == IBV_WR_BIND_MW) && (wr->bind_mw.mw == NULL)) {
        return EINVAL; /* the rest is checked when the bind executes */
    }
    return 0;
}

/* Room for @n more WQEs (under sq_lock): ENOMEM at max_send_wr (a slot
 * is free only once a completion is polled); below it the queue's arrays
 * grow, with the device (@engine) */
static int srq_soft_sq_room(srq_soft_qp_t *qp, uint32_t n, bool engine)
{
    uint32_t held = qp->sq_post - srq_soft_cq_load(&qp->sq_free) + n;
    /* FINs of a TM QP (soft_tm_rndv.c) are the device's, not the
     * program's: room beyond max_send_wr */
    uint32_t max  = qp->cap.max_send_wr +
                    __atomic_load_n(&qp->tm_fins, __ATOMIC_RELAXED);

    if (held > max) {
        return ENOMEM;
    }
    /* the fast path, without the device: slots below sq_free the engine
     * is done with (it trails sq_ci), and one left for a FIN the engine
     * may be about to write after ours (soft_tm_rndv.c) */
    if (held < qp->sq_mask + 1) {
        return 0;
    }
    return engine ? srq_soft_qp_sq_reserve(qp, n, max) :
                    SRQ_SOFT_POST_NEEDS_DEV;
}

/*
 * UD: the instance the datagram goes to, in *peer_p (NULL: gone, the
 * datagram is lost), mapped now and kept by the AH. A limit of ours
 * that stops the mapping fails the post instead: losing the datagram
 * would leave its sender retrying what can never go
 */
static int srq_soft_ud_dest(srq_soft_qp_t *qp, const struct ibv_send_wr *wr,
                            srq_soft_peer_t **peer_p, bool engine)
{
    srq_soft_ah_t *ah;

    *peer_p = NULL;
    if ((qp->ibv.qp_type != IBV_QPT_UD) || srq_soft_wr_is_rdma(wr->opcode)) {
        return 0;
    }
    ah = srq_soft_container_of(wr->wr.ud.ah, srq_soft_ah_t, ibv);
    if (!engine) {
        /* one the AH has not mapped yet: the device's peers */
        return (srq_soft_ah_peer_known(ah, wr->wr.ud.remote_qpn,
                                       peer_p) == 0) ?
               0 : SRQ_SOFT_POST_NEEDS_DEV;
    }
    *peer_p = srq_soft_ah_peer(qp->dev, ah, wr->wr.ud.remote_qpn);
    return ((*peer_p == NULL) && srq_soft_err_is_limit(errno)) ? errno : 0;
}

static int srq_soft_check_send_wr(srq_soft_qp_t *qp,
                                  const struct ibv_send_wr *wr,
                                  srq_soft_peer_t **ud_peer_p, bool engine)
{
    int ret = srq_soft_check_send_fields(qp, wr);

    if (ret == 0) {
        ret = srq_soft_ud_dest(qp, wr, ud_peer_p, engine);
    }
    return (ret != 0) ? ret : srq_soft_sq_room(qp, 1, engine);
}

static void srq_soft_copy_inline(srq_soft_qp_t *qp, uint32_t slot,
                                 const struct ibv_send_wr *wr)
{
    uint8_t *dst = qp->sq_inline + (size_t)slot * (qp->cap.max_inline_data + 1);
    int i;

    /* IBV_SEND_INLINE: the buffers may be reused as soon as we return */
    for (i = 0; i < wr->num_sge; ++i) {
        memcpy(dst, (void*)(uintptr_t)wr->sg_list[i].addr,
               wr->sg_list[i].length);
        dst += wr->sg_list[i].length;
    }
}

/* The gather (READ, atomics: scatter) list, each address where its bytes
 * are in this process: a device memory region's SGE gives an offset
 * (soft_mr.h), translated once here, as an HCA translates it */
static void srq_soft_copy_sges(srq_soft_qp_t *qp, struct ibv_sge *dst,
                               const struct ibv_send_wr *wr)
{
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        dst[i]      = wr->sg_list[i];
        dst[i].addr = srq_soft_mr_local_addr(qp->dev, dst[i].lkey,
                                             dst[i].addr, dst[i].length);
    }
}

/* @fresh: sent by this post's call, which has the device */
static void srq_soft_fill_swqe(srq_soft_qp_t *qp, const struct ibv_send_wr *wr,
                               srq_soft_peer_t *ud_peer, bool fresh)
{
    uint32_t slot = qp->sq_post & qp->sq_mask;
    uint32_t nsge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    srq_soft_swqe_t *wqe = &qp->sq[slot];
    srq_soft_ah_t *ah;

    memset(wqe, 0, sizeof(*wqe));
    wqe->wr_id       = wr->wr_id;
    wqe->opcode      = wr->opcode;
    wqe->send_flags  = wr->send_flags;
    wqe->imm         = wr->imm_data;
    wqe->num_sge     = (uint32_t)wr->num_sge;
    wqe->length      = (uint32_t)srq_verbs_sge_len(wr->sg_list, wr->num_sge);
    wqe->signaled    = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
    wqe->is_inline   = (wr->send_flags & IBV_SEND_INLINE) != 0;
    wqe->state       = SRQ_SOFT_SWQE_POSTED;
    wqe->fresh       = fresh;
    wqe->xrc_srqn    = wr->qp_type.xrc.remote_srqn; /* XRC initiator */
    wqe->post_error  = srq_soft_wr_device_error(qp, wr, wqe->length);
    /* RDMA on UD: its union holds no AH */
    if ((qp->ibv.qp_type == IBV_QPT_UD) && !srq_soft_wr_is_rdma(wr->opcode)) {
        ah = srq_soft_container_of(wr->wr.ud.ah, srq_soft_ah_t, ibv);
        wqe->ud_peer = ud_peer;
        wqe->ud_qpn  = wr->wr.ud.remote_qpn;
        wqe->ud_tclass = ah->tclass;
        /* IB spec: a qkey with the high bit set means "the QP's own" */
        wqe->ud_qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ?
                       qp->attr.qkey : wr->wr.ud.remote_qkey;
    } else if (srq_soft_wr_is_atomic(wr)) {
        wqe->remote_addr = wr->wr.atomic.remote_addr;
        wqe->rkey        = wr->wr.atomic.rkey;
        wqe->compare_add = wr->wr.atomic.compare_add;
        wqe->swap        = wr->wr.atomic.swap;
        if (wr->opcode == IBV_WR_ATOMIC_WRITE) {
            wqe->length  = sizeof(uint64_t); /* what the responder stores */
        }
    } else if (wr->opcode == IBV_WR_BIND_MW) {
        wqe->mw   = wr->bind_mw.mw;
        wqe->rkey = wr->bind_mw.rkey;
        wqe->bind = wr->bind_mw.bind_info;
    } else {
        wqe->remote_addr = wr->wr.rdma.remote_addr;
        wqe->rkey        = wr->wr.rdma.rkey;
    }
    if (wqe->is_inline) {
        srq_soft_copy_inline(qp, slot, wr);
    } else if (wr->num_sge > 0) {
        srq_soft_copy_sges(qp, qp->sq_sge + (size_t)slot * nsge, wr);
    }
    ++qp->sq_post;
}

/*
 * Fill the WRs of @wr that pass their checks from sq_post, up to the
 * first that does not, and publish them in the doorbell record (under
 * sq_lock, or the device's lock tagged with the queue: srq_soft_sq_claim):
 * 0, or that WR's errno with it in *bad_wr. One that needs the
 * device while the caller has it not (@engine): SRQ_SOFT_POST_NEEDS_DEV,
 * and nothing posted
 */
static int srq_soft_sq_fill(srq_soft_qp_t *qp, struct ibv_send_wr *wr,
                            struct ibv_send_wr **bad_wr, bool engine)
{
    uint32_t first = qp->sq_post, fenced = 0;
    srq_soft_peer_t *ud_peer;
    int ret = 0;

    for (; wr != NULL; wr = wr->next) {
        ret = srq_soft_check_send_wr(qp, wr, &ud_peer, engine);
        if (ret == SRQ_SOFT_POST_NEEDS_DEV) {
            qp->sq_post = first;
            return ret;
        }
        if (ret != 0) {
            *bad_wr = wr;
            errno   = ret; /* as every failing verb sets it */
            break;
        }
        srq_soft_fill_swqe(qp, wr, ud_peer, engine);
        fenced += (wr->send_flags & IBV_SEND_FENCE) != 0;
    }
    /* without the device, sequentially consistent with the QP's state,
     * which the post reads next (srq_soft_qp_sq_absorb); with it, the
     * post takes them in itself */
    atomic_store_explicit((_Atomic uint32_t*)&qp->sq_db, qp->sq_post,
                          engine ? memory_order_release :
                                   memory_order_seq_cst);
    if (fenced != 0) {
        __atomic_fetch_add(&qp->dev->stats.tx_fenced, fenced,
                           __ATOMIC_RELAXED);
    }
    return ret;
}

/* The ibv_wr_* API's batch: every check first, so that the post itself
 * cannot fail half way (a UD destination mapped here stays mapped in its
 * AH) */
static int srq_soft_sq_fill_all(srq_soft_qp_t *qp, struct ibv_send_wr *wr,
                                uint32_t n, struct ibv_send_wr **bad_wr,
                                bool engine)
{
    srq_soft_peer_t *ud_peer;
    struct ibv_send_wr *w;
    int ret = 0;

    qp->posting_ex = true; /* the ibv_wr_* API's own operations pass */
    for (w = wr; (w != NULL) && (ret == 0); w = w->next) {
        ret = srq_soft_check_send_fields(qp, w);
        if (ret == 0) {
            ret = srq_soft_ud_dest(qp, w, &ud_peer, engine);
        }
        *bad_wr = w;
    }
    if (ret == 0) {
        ret = srq_soft_sq_room(qp, n, engine);
        *bad_wr = wr;
    }
    if (ret == 0) {
        ret = srq_soft_sq_fill(qp, wr, bad_wr, engine);
    }
    qp->posting_ex = false;
    return ret;
}

/* Our WQEs from @first, sent from this call as far as they go now (we
 * have the device); what is left goes from progress, later, when the
 * program may have unmapped its buffer (soft_req.c reads it through the
 * kernel then) */
static void srq_soft_sq_send_now(srq_soft_qp_t *qp, uint32_t first)
{
    srq_soft_doorbell_take(qp);
    if ((int32_t)(first - qp->sq_ci) < 0) {
        first = qp->sq_ci; /* completed already (or flushed) */
    }
    for (; first != qp->sq_pi; ++first) {
        qp->sq[first & qp->sq_mask].fresh = false;
    }
}

/* The first ring since the device last took its doorbells: the holder we
 * found may have looked at them already (soft_doorbell.c) */
static void srq_soft_sq_ring_first(srq_soft_dev_t *dev)
{
    if (srq_soft_trylock(&dev->lock)) {
        srq_soft_doorbell_unlock(dev); /* it let go meanwhile */
    } else {
        srq_soft_pipe_poke(&dev->fab);
    }
}

/* The device lock's word while a post that took it fills @qp's send
 * queue without the queue's lock (1 is a plain holder's) */
static int srq_soft_sq_tag(const srq_soft_qp_t *qp)
{
    return 2 + (int)qp->index;
}

/*
 * The send queue's slots, for a post that holds the device (@tagged: it
 * took it as srq_soft_sq_tag says). A single-threaded post takes one
 * lock, the device's, as before the queue had its own: the tag and the
 * queue's lock are a pair of flags in Dekker's manner with a post that
 * did not get the device - each writes its own with a CAS (a full
 * barrier) and then reads the other's, so at least one of the two sees
 * the other and waits. true if the queue's lock was taken
 */
static bool srq_soft_sq_claim(srq_soft_qp_t *qp, bool tagged)
{
    if (tagged && !atomic_load(&qp->sq_lock.held)) {
        return false;
    }
    srq_soft_lock(&qp->sq_lock);
    return true;
}

/* ... for a post without the device: the queue's lock, once no post that
 * holds the device is filling the queue */
static void srq_soft_sq_claim_alone(srq_soft_qp_t *qp)
{
    srq_soft_lock_t *dev_lock = &qp->dev->lock;
    unsigned spins            = 0;

    for (;;) {
        while (!srq_soft_trylock_as(&qp->sq_lock, 1)) { /* seq_cst */
            srq_soft_lock_backoff(&spins);
        }
        if (atomic_load(&dev_lock->held) != srq_soft_sq_tag(qp)) {
            return;
        }
        srq_soft_unlock(&qp->sq_lock);
        while (atomic_load_explicit(&dev_lock->held, memory_order_relaxed) ==
               srq_soft_sq_tag(qp)) {
            srq_soft_lock_backoff(&spins);
        }
    }
}

/*
 * The QP's send queue guards itself: WQEs are written under its own lock
 * (or, by a post holding the device, under the device's tagged with the
 * queue) and published in its doorbell record (soft_doorbell.h). A post
 * never waits for the device lock but to grow the queue's arrays, to map
 * a UD destination its AH has not reached before, or to flush WQEs a
 * move to error missed: it takes the device if free and sends from here,
 * else rings the doorbell
 */
static int srq_soft_sq_post(srq_soft_qp_t *qp, struct ibv_send_wr *wr,
                            uint32_t all, struct ibv_send_wr **bad_wr)
{
    srq_soft_dev_t *dev = qp->dev;
    bool tagged = srq_soft_trylock_as(&dev->lock, srq_soft_sq_tag(qp));
    bool engine = tagged, locked;
    uint32_t first;
    int ret;

    for (;;) {
        if (engine) {
            locked = srq_soft_sq_claim(qp, tagged);
        } else {
            srq_soft_sq_claim_alone(qp);
            locked = true;
        }
        first = qp->sq_post;
        ret   = (all > 0) ? srq_soft_sq_fill_all(qp, wr, all, bad_wr, engine) :
                            srq_soft_sq_fill(qp, wr, bad_wr, engine);
        if (locked) {
            srq_soft_unlock(&qp->sq_lock);
        }
        if (tagged) {
            /* still held, no longer filling: a post alone may fill */
            atomic_store_explicit(&dev->lock.held, 1, memory_order_release);
            tagged = false;
        }
        if (ret != SRQ_SOFT_POST_NEEDS_DEV) {
            break;
        }
        srq_soft_dev_lock(dev); /* device > send queue (doc/architecture.md) */
        engine = true;
    }
    if (engine) {
        srq_soft_sq_send_now(qp, first);
        srq_soft_doorbell_unlock(dev);
    } else if (srq_soft_qp_peek_state(qp) == IBV_QPS_ERR) {
        srq_soft_dev_lock(dev); /* a move to error that missed our WQEs */
        srq_soft_doorbell_take(qp);
        srq_soft_doorbell_unlock(dev);
    } else {
        __atomic_fetch_add(&dev->stats.tx_doorbells, 1, __ATOMIC_RELAXED);
        if (srq_soft_qp_ring(qp)) {
            srq_soft_sq_ring_first(dev);
        }
    }
    return ret;
}

int srq_soft_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                       struct ibv_send_wr **bad_wr)
{
    return srq_soft_sq_post(srq_soft_qp(ibqp), wr, 0, bad_wr);
}

int srq_soft_post_send_all(srq_soft_qp_t *qp, struct ibv_send_wr *wr,
                           uint32_t n, struct ibv_send_wr **bad_wr)
{
    return srq_soft_sq_post(qp, wr, n, bad_wr);
}

/* @pi: the WQE's place (the WQEs before it in the call not published) */
static int srq_soft_check_recv_wr(srq_soft_qp_t *qp,
                                  const struct ibv_recv_wr *wr, uint32_t pi)
{
    if ((qp->ibv.srq != NULL) ||
        (srq_soft_qp_peek_state(qp) == IBV_QPS_RESET) ||
        srq_soft_qp_is_xrc(qp)) {
        return EINVAL; /* XRC: no receive queue (a target's is its SRQs) */
    }
    if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > qp->cap.max_recv_sge)) {
        return EINVAL;
    }
    if (pi - srq_soft_cq_load(&qp->rq_ci) >= qp->cap.max_recv_wr) {
        return ENOMEM; /* a slot is free only once its completion is polled */
    }
    return 0;
}

static void srq_soft_fill_rwqe(srq_soft_qp_t *qp, const struct ibv_recv_wr *wr,
                               uint32_t pi)
{
    uint32_t slot = pi & qp->rq_mask;
    uint32_t nsge = qp->cap.max_recv_sge ? qp->cap.max_recv_sge : 1;

    qp->rq[slot].wr_id   = wr->wr_id;
    qp->rq[slot].num_sge = (uint32_t)wr->num_sge;
    if (wr->num_sge > 0) {
        memcpy(qp->rq_sge + (size_t)slot * nsge, wr->sg_list,
               sizeof(*wr->sg_list) * wr->num_sge);
    }
}

/*
 * The QP's receive queue guards itself: WQEs are written under its own
 * lock and published with one store of rq_pi per call, which the
 * responder reads as an HCA reads its doorbell record; no device lock,
 * but when the QP is in error, to flush what was posted (the store and
 * the state's load are sequentially consistent, as the move to error's:
 * one of the two sees the other, soft_qp.h)
 */
int srq_soft_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                       struct ibv_recv_wr **bad_wr)
{
    srq_soft_qp_t *qp   = srq_soft_qp(ibqp);
    srq_soft_dev_t *dev = qp->dev;
    uint32_t pi;
    int ret = 0;

    srq_soft_lock(&qp->rq_lock);
    pi = qp->rq_pi;
    for (; wr != NULL; wr = wr->next) {
        ret = srq_soft_check_recv_wr(qp, wr, pi);
        if (ret != 0) {
            *bad_wr = wr;
            errno   = ret;
            break;
        }
        srq_soft_fill_rwqe(qp, wr, pi++);
    }
    atomic_store((_Atomic uint32_t*)&qp->rq_pi, pi);
    srq_soft_unlock(&qp->rq_lock);
    if (srq_soft_qp_peek_state(qp) == IBV_QPS_ERR) {
        srq_soft_dev_lock(dev);
        srq_soft_qp_flush(qp);
        srq_soft_dev_unlock(dev);
    }
    return ret;
}

int srq_soft_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                           struct ibv_recv_wr **bad_wr)
{
    return srq_soft_srq_post(srq_soft_srq(ibsrq), wr, bad_wr);
}

/* ibv_bind_mw: a bind WR on @qp. The window is looked at only when the
 * WR executes - one that is not a live window of the QP's device
 * completes IBV_WC_MW_BIND_ERR, as mlx5 and rxe post it without a lookup */
int srq_soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
                     struct ibv_mw_bind *mw_bind)
{
    srq_soft_dev_t *dev = srq_soft_ctx_dev(qp->context);
    struct ibv_send_wr wr, *bad;
    int ret;

    if (!srq_soft_dev_has(dev, qp)) {
        errno = EINVAL;
        return EINVAL;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id             = mw_bind->wr_id;
    wr.send_flags        = mw_bind->send_flags;
    wr.opcode            = IBV_WR_BIND_MW;
    wr.bind_mw.mw        = mw;
    wr.bind_mw.rkey      = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = mw_bind->bind_info;
    ret = srq_soft_post_send(qp, &wr, &bad);
    if (ret == 0) {
        mw->rkey = wr.bind_mw.rkey; /* a failed bind's completion says so */
    }
    return ret;
}
