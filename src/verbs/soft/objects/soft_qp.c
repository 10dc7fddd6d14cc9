/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: queue pairs (RC, UC, UD): create, destroy, and the
 * table that finds one by number. The state machine is soft_qp_state.c.
 *
 * QP numbers are (generation << 16 | table index), unique in the process
 * (soft_qpn.c): the inbound path finds a QP by indexing, and a packet for a
 * destroyed QP never reaches a new one that reuses the slot.
 *
 * The same index finds a QP's entry in the shared QP table (soft_shm.h),
 * what a peer checks before a one-sided request into us, since it does
 * the copy itself: the QP exists, is ready to receive, is connected to the
 * peer's QP, grants the access, and is in the PD of the region.
 */
#include "soft_qp.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_qpn.h"
#include "soft_async.h"
#include "soft_cq.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SRQ_SOFT_QP_TAB_INIT  64

/* ---- QP table ---------------------------------------------------------
 *
 * The instance's QPs by index; the indices come from the process's QP
 * number space (soft_qpn.c), so the table grows to the largest index of
 * its own QPs.
 */

int srq_soft_qp_table_init(srq_soft_dev_t *dev)
{
    dev->qp_tab_size = SRQ_SOFT_QP_TAB_INIT;
    dev->qps         = calloc(dev->qp_tab_size, sizeof(*dev->qps));
    return (dev->qps == NULL) ? ENOMEM : 0;
}

void srq_soft_qp_table_cleanup(srq_soft_dev_t *dev)
{
    free(dev->qps);
    dev->qps = NULL;
}

static int srq_soft_qp_table_cover(srq_soft_dev_t *dev, uint32_t idx)
{
    uint32_t size = dev->qp_tab_size;
    srq_soft_qp_t **qps;

    while (size <= idx) {
        size *= 2;
    }
    if (size == dev->qp_tab_size) {
        return 0;
    }
    qps = realloc(dev->qps, size * sizeof(*qps));
    if (qps == NULL) {
        return ENOMEM;
    }
    memset(qps + dev->qp_tab_size, 0,
           (size - dev->qp_tab_size) * sizeof(*qps));
    dev->qps         = qps;
    dev->qp_tab_size = size;
    return 0;
}

/* Give @qp a QP number (in qp->ibv.qp_num) and a table slot: 0, or why
 * not (ENOMEM: all numbers taken; the number table's own errors - ENOSPC,
 * EMFILE - as they are) */
int srq_soft_qp_table_add(srq_soft_dev_t *dev, srq_soft_qp_t *qp)
{
    uint32_t qpn, idx;
    int ret;

    ret = srq_soft_qpn_alloc(dev->fab.instance, dev->fab.lock_id, &qpn);
    if (ret != 0) {
        return ret;
    }
    idx = srq_soft_qpn_index(qpn);
    ret = srq_soft_qp_table_cover(dev, idx);
    if (ret != 0) {
        srq_soft_qpn_free(qpn, dev->fab.lock_id);
        return ret;
    }
    dev->qps[idx]  = qp;
    qp->index      = idx;
    qp->ibv.qp_num = qpn;
    return 0;
}

static void srq_soft_qp_table_del(srq_soft_dev_t *dev, srq_soft_qp_t *qp)
{
    dev->qps[qp->index] = NULL;
    srq_soft_qpn_free(qp->ibv.qp_num, dev->fab.lock_id);
}

srq_soft_qp_t *srq_soft_qp_lookup(srq_soft_dev_t *dev, uint32_t qpn)
{
    uint32_t idx = srq_soft_qpn_index(qpn);
    srq_soft_qp_t *qp;

    ++dev->stats.qps_inspected;
    if (idx >= dev->qp_tab_size) {
        return NULL;
    }
    qp = dev->qps[idx];
    return ((qp != NULL) && (qp->ibv.qp_num == qpn)) ? qp : NULL;
}

/* ---- the shared QP table --------------------------------------------- */

#define SRQ_SOFT_QP_ENT_SPINS  1024

#define SRQ_SOFT_QP_ENT_FIELDS(_x) \
    _x(qpn) _x(pd) _x(access) _x(ready) _x(dest_qpn)

static bool srq_soft_qp_ready(const srq_soft_qp_t *qp)
{
    return (qp->ibv.qp_type == IBV_QPT_RC) && (qp->peer != NULL) &&
           ((qp->state == IBV_QPS_RTR) || (qp->state == IBV_QPS_RTS));
}

/* A seqlock: seq odd while we write. The last store is sequentially
 * consistent: a withdrawal (not ready, or no QP) pairs with a peer's
 * announcement of its access (soft_inflight.c) */
static void srq_soft_qp_ent_write(srq_soft_qp_ent_t *e,
                                  const srq_soft_qp_ent_t *v)
{
    _Atomic uint32_t *seq = (_Atomic uint32_t*)&e->seq;
    uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
    int i;

    atomic_store_explicit(seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
#define SRQ_SOFT_QP_ENT_PUT(_f) \
    __atomic_store_n(&e->_f, v->_f, __ATOMIC_RELAXED);
    SRQ_SOFT_QP_ENT_FIELDS(SRQ_SOFT_QP_ENT_PUT)
#undef SRQ_SOFT_QP_ENT_PUT
    for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
        __atomic_store_n(&e->dest_inst[i], v->dest_inst[i], __ATOMIC_RELAXED);
    }
    atomic_store_explicit(seq, s + 2, memory_order_seq_cst);
}

/* @may_accept false: not ready, whatever its state says */
static void srq_soft_qp_publish_as(srq_soft_qp_t *qp, bool may_accept)
{
    srq_soft_qp_ent_t v = {0};
    bool live = (qp->dev->qps[qp->index] == qp);

    v.qpn = live ? qp->ibv.qp_num : 0;
    if (live) {
        /* an XRC target has none: no one-sided access through it */
        v.pd       = (qp->ibv.pd != NULL) ? srq_soft_pd_id(qp->ibv.pd) : 0;
        v.access   = qp->attr.qp_access_flags;
        v.ready    = may_accept && srq_soft_qp_ready(qp);
        v.dest_qpn = qp->attr.dest_qp_num;
        if (qp->peer != NULL) {
            memcpy(v.dest_inst, qp->peer->instance, SRQ_SOFT_INST_LEN);
        }
    }
    srq_soft_qp_ent_write(&qp->dev->fab.seg.qps[qp->index], &v);
}

void srq_soft_qp_publish(srq_soft_qp_t *qp)
{
    srq_soft_qp_publish_as(qp, true);
}

static void srq_soft_qp_ent_withdraw(srq_soft_qp_t *qp)
{
    srq_soft_qp_publish_as(qp, false);
}

bool srq_soft_qp_ent_get(const srq_soft_seg_t *seg, uint32_t qpn,
                         srq_soft_qp_ent_t *v)
{
    const srq_soft_qp_ent_t *e = &seg->qps[srq_soft_qpn_index(qpn)];
    _Atomic uint32_t *seq      = (_Atomic uint32_t*)&e->seq;
    uint32_t s;
    int i, spins;

    for (spins = 0; spins < SRQ_SOFT_QP_ENT_SPINS; ++spins) {
        s = atomic_load_explicit(seq, memory_order_seq_cst);
        if (s & 1) {
            continue; /* the owner is writing it */
        }
#define SRQ_SOFT_QP_ENT_GET(_f) \
        v->_f = __atomic_load_n(&e->_f, __ATOMIC_RELAXED);
        SRQ_SOFT_QP_ENT_FIELDS(SRQ_SOFT_QP_ENT_GET)
#undef SRQ_SOFT_QP_ENT_GET
        for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
            v->dest_inst[i] = __atomic_load_n(&e->dest_inst[i],
                                              __ATOMIC_RELAXED);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(seq, memory_order_relaxed) == s) {
            return (qpn != 0) && (v->qpn == qpn);
        }
    }
    return false; /* an owner that died while writing: not a QP */
}

bool srq_soft_qp_dest_takes(const srq_soft_qp_t *qp, srq_soft_qp_ent_t *ent)
{
    return srq_soft_qp_ent_get(&qp->peer->seg, qp->attr.dest_qp_num, ent) &&
           ent->ready && (ent->dest_qpn == qp->ibv.qp_num) &&
           !memcmp(ent->dest_inst, qp->dev->fab.instance, SRQ_SOFT_INST_LEN);
}

/* ---- queues, completions, destroy (create: soft_qp_create.c) --------- */

/* The send queue's arrays for @slots WQEs, the WQEs in flight moved over
 * to the same positions modulo the new size */
int srq_soft_qp_sq_resize(srq_soft_qp_t *qp, uint32_t slots)
{
    uint32_t ssge   = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    size_t inl      = qp->cap.max_inline_data + 1;
    srq_soft_swqe_t *sq   = calloc(slots, sizeof(*sq));
    struct ibv_sge *sge   = calloc((size_t)slots * ssge, sizeof(*sge));
    uint8_t *inline_data  = malloc((size_t)slots * inl);
    uint32_t i, from, to;

    if ((sq == NULL) || (sge == NULL) || (inline_data == NULL)) {
        free(sq);
        free(sge);
        free(inline_data);
        return ENOMEM;
    }
    for (i = qp->sq_ci; i != qp->sq_post; ++i) {
        from     = i & qp->sq_mask;
        to       = i & (slots - 1);
        sq[to]   = qp->sq[from];
        memcpy(sge + (size_t)to * ssge, qp->sq_sge + (size_t)from * ssge,
               ssge * sizeof(*sge));
        memcpy(inline_data + to * inl, qp->sq_inline + from * inl, inl);
    }
    free(qp->sq);
    free(qp->sq_sge);
    free(qp->sq_inline);
    qp->sq        = sq;
    qp->sq_sge    = sge;
    qp->sq_inline = inline_data;
    qp->sq_mask   = slots - 1;
    return 0;
}

int srq_soft_qp_sq_reserve(srq_soft_qp_t *qp, uint32_t n, uint32_t max_wr)
{
    uint32_t max = srq_soft_qbuf_pow2(max_wr ? max_wr : 1);
    int ret;

    while (qp->sq_post - qp->sq_ci + n > qp->sq_mask + 1) {
        /* a parent domain's queue was made at its full size */
        if ((qp->sq_mask + 1 >= max) || (qp->sq_buf.ptr != NULL)) {
            return ENOMEM;
        }
        ret = srq_soft_qp_sq_resize(qp, 2 * (qp->sq_mask + 1));
        if (ret != 0) {
            return ret;
        }
    }
    return 0;
}

static enum ibv_wc_opcode srq_soft_wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_WRITE:
        return IBV_WC_ATOMIC_WRITE;
    case IBV_WR_BIND_MW:
        return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV:
        return IBV_WC_LOCAL_INV;
    default:
        return IBV_WC_SEND;
    }
}

/* A FIN of ours (soft_tm_rndv.c) leaves the queue: its room beyond
 * max_send_wr is given back; its slot is free at once when every slot
 * before it is (no completion will be polled for it), else with the
 * program's next completion, as an unsignaled WQE's */
static void srq_soft_qp_fin_done(srq_soft_qp_t *qp)
{
    srq_soft_cq_t *cq = srq_soft_cq(qp->ibv.send_cq);

    /* read by posts without the lock (their room): released before the
     * slot is, so that a post that sees the slot free sees this too */
    __atomic_store_n(&qp->tm_fins, qp->tm_fins - 1, __ATOMIC_RELAXED);
    /* polls write sq_free too: under the send CQ's lock */
    srq_soft_lock(&cq->lock);
    if (qp->sq_free == qp->sq_ci) {
        srq_soft_cq_store(&qp->sq_free, qp->sq_free + 1);
    }
    srq_soft_unlock(&cq->lock);
}

void srq_soft_qp_send_cqe(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe,
                          enum ibv_wc_status status)
{
    srq_soft_cqe_t *cqe;

    if ((status == IBV_WC_SUCCESS) && !wqe->signaled) {
        if (wqe->tm_fin) {
            srq_soft_qp_fin_done(qp);
        }
        return;
    }
    if (wqe->tm_fin) {
        srq_soft_qp_fin_done(qp); /* the program never sees it */
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
    /* polling it frees this WQE's slot and those of the unsignaled WQEs
     * before it */
    cqe->sq_free_p   = &qp->sq_free;
    cqe->sq_free     = qp->sq_ci + 1;
    srq_soft_cq_push_done(srq_soft_cq(qp->ibv.send_cq));
}

void srq_soft_qp_free_atomics(srq_soft_qp_t *qp)
{
    uint32_t i;

    if (qp->atomic == NULL) {
        return;
    }
    for (i = 0; i < SRQ_SOFT_MAX_RD_ATOMIC; ++i) {
        free(qp->atomic->res[i].data);
    }
    free(qp->atomic);
    qp->atomic = NULL;
}

void srq_soft_qp_free(srq_soft_qp_t *qp)
{
    if (qp->sq_buf.ptr != NULL) {
        srq_soft_qbuf_free(&qp->sq_buf);
    } else {
        free(qp->sq);
        free(qp->sq_sge);
        free(qp->sq_inline);
    }
    if (qp->rq_buf.ptr != NULL) {
        srq_soft_qbuf_free(&qp->rq_buf);
    } else {
        free(qp->rq);
        free(qp->rq_sge);
    }
    srq_soft_qp_free_atomics(qp);
    if (qp->wr_batch_free != NULL) {
        qp->wr_batch_free(qp);
    }
    free(qp);
}

/* The QP holds (@d 1) or lets go of (-1) the objects it was made with;
 * an XRC target has none but its domain (under dev->lock) */
void srq_soft_qp_refs(srq_soft_qp_t *qp, int d)
{
    struct ibv_qp *ibqp = &qp->ibv;

    if (qp->xrcd_users != NULL) {
        *qp->xrcd_users += d;
    }
    if (ibqp->pd == NULL) {
        return;
    }
    srq_soft_cq(ibqp->send_cq)->qp_refs += d;
    if (ibqp->recv_cq != ibqp->send_cq) {
        srq_soft_cq(ibqp->recv_cq)->qp_refs += d;
    } else if (ibqp->qp_type != IBV_QPT_XRC_SEND) {
        srq_soft_cq(ibqp->recv_cq)->qp_refs += d; /* counted twice */
    }
    if (ibqp->srq != NULL) {
        srq_soft_srq(ibqp->srq)->qp_refs += d;
    }
    if ((ibqp->qp_type == IBV_QPT_UD) && (ibqp->recv_cq != NULL)) {
        srq_soft_cq(ibqp->recv_cq)->ud_recv_qps += d;
    }
    if (d > 0) {
        srq_soft_pd_get(ibqp->pd);
    } else {
        srq_soft_pd_put(ibqp->pd);
    }
}

void srq_soft_qp_busy(srq_soft_qp_t *qp, bool busy)
{
    srq_soft_dev_t *dev   = qp->dev;
    srq_soft_peer_t *peer = qp->peer;

    if ((qp->busy == busy) || (peer == NULL)) {
        return;
    }
    qp->busy = busy;
    if (busy) {
        srq_soft_list_add_tail(&dev->busy_qps, &qp->busy_link);
    } else {
        srq_soft_list_del(&qp->busy_link);
    }
    if (busy) {
        if (peer->busy_qps++ == 0 && !peer->dead && !peer->is_self) {
            /* timed from the next tick, as a QP's ACK timeout: no clock
             * read each time a ping-pong makes the QP busy again */
            peer->next_check_ns = 0;
            srq_soft_list_add_tail(&dev->fab.busy_peers, &peer->busy_link);
        }
    } else if ((--peer->busy_qps == 0) &&
               srq_soft_list_linked(&peer->busy_link)) {
        srq_soft_list_del(&peer->busy_link);
    }
}


void srq_soft_qp_detach(srq_soft_qp_t *qp)
{
    srq_soft_qp_busy(qp, false);
    if (srq_soft_list_linked(&qp->ack_link)) {
        srq_soft_list_del(&qp->ack_link);
    }
    if (srq_soft_list_linked(&qp->sched_link)) {
        srq_soft_list_del(&qp->sched_link);
    }
    qp->ack_pending = false;
    qp->ack_defer   = false;
    qp->ack_call    = 0;
    qp->nak         = 0;
    qp->wait        = SRQ_SOFT_WAIT_NONE;
    qp->rnr_streak  = 0;
    qp->rnr_probe   = false;
}

void srq_soft_qp_unpeer(srq_soft_qp_t *qp)
{
    srq_soft_qp_detach(qp);
    if (qp->peer != NULL) {
        /* withdrawn first: after the wait no access of the peer through
         * this QP is running, nor can one start */
        srq_soft_qp_ent_withdraw(qp);
        srq_soft_inflight_wait(&qp->dev->fab, qp->peer, 0, qp->ibv.qp_num);
        if (srq_soft_list_linked(&qp->peer_link)) {
            srq_soft_list_del(&qp->peer_link);
        }
        srq_soft_peer_put(&qp->dev->fab, qp->peer);
        qp->peer = NULL;
    }
}

/* Pushed by any thread without a lock, taken whole (no ABA: nothing is
 * ever popped alone): true if the stack was empty */
static bool srq_soft_qp_db_push(srq_soft_qp_t *qp)
{
    srq_soft_qp_t *head = __atomic_load_n(&qp->dev->doorbells,
                                          __ATOMIC_RELAXED);

    do {
        qp->db_next = head;
    } while (!__atomic_compare_exchange_n(&qp->dev->doorbells, &head, qp,
                                          true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
    return head == NULL;
}

bool srq_soft_qp_ring(srq_soft_qp_t *qp)
{
    if (__atomic_exchange_n(&qp->db_rung, true, __ATOMIC_SEQ_CST)) {
        return false; /* rung, not taken yet: its taker sees our WQEs */
    }
    return srq_soft_qp_db_push(qp);
}

srq_soft_qp_t *srq_soft_qp_doorbells(srq_soft_dev_t *dev)
{
    return __atomic_exchange_n(&dev->doorbells, NULL, __ATOMIC_SEQ_CST);
}

/* A QP that goes leaves the doorbell stack; the others go back on it,
 * and the device is poked for them, as their posts poked it (under
 * dev->lock, the stack's only taker; a post racing the destroy of its
 * own QP is the program's error) */
static void srq_soft_qp_unring(srq_soft_qp_t *qp)
{
    srq_soft_qp_t *e = srq_soft_qp_doorbells(qp->dev), *next;
    bool others = false;

    for (; e != NULL; e = next) {
        next = e->db_next;
        if (e != qp) {
            (void)srq_soft_qp_db_push(e);
            others = true;
        }
    }
    if (others) {
        srq_soft_pipe_poke(&qp->dev->fab);
    }
}

int srq_soft_destroy_qp(srq_verbs_dev_t *vdev, struct ibv_qp *ibqp)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qp_t *qp;

    if (srq_soft_dev_lock_obj(dev, ibqp) != 0) {
        return ENOENT;
    }
    qp = srq_soft_qp(ibqp);
    srq_soft_qp_unring(qp);
    srq_soft_qp_unpeer(qp);
    srq_soft_qp_table_del(dev, qp);
    srq_soft_qp_publish(qp); /* no QP there any more */
    if (ibqp->pd != NULL) { /* an XRC target has no CQ */
        srq_soft_cq_forget_qp(srq_soft_cq(ibqp->recv_cq), &qp->rq_ci,
                              &qp->sq_free);
        srq_soft_cq_forget_qp(srq_soft_cq(ibqp->send_cq), &qp->rq_ci,
                              &qp->sq_free);
    }
    srq_soft_qp_refs(qp, -1);
    srq_soft_dev_unlock(dev);
    /* no event can be raised for it any more: it left the QP table */
    if (!srq_soft_async_release(dev, ibqp, qp->events_written, &ibqp->mutex,
                                &ibqp->cond, &ibqp->events_completed)) {
        return 0; /* an ack still to come writes here: kept allocated */
    }
    pthread_mutex_destroy(&ibqp->mutex);
    pthread_cond_destroy(&ibqp->cond);
    srq_soft_qp_free(qp);
    return 0;
}
