/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: shared receive queues.
 *
 * The receive WQEs live in a linked-list queue (soft_srq_wqe.h). Posting
 * writes it under the SRQ's own lock (one doorbell-record update per
 * batch); the device consumes it by following the links from its own
 * position, as many WQEs as the doorbell record says were posted; polling
 * a WQE's completion returns it to the free list.
 *
 * SRQ limit: when the number of posted-but-unconsumed WQEs drops below an
 * armed limit, IBV_EVENT_SRQ_LIMIT_REACHED is raised once and the limit
 * disarms (IB spec o10-...: one shot, re-arm with ibv_modify_srq).
 */
#include "soft_srq.h"
#include "soft_async.h"
#include "soft_cq.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_srq_wqe.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void srq_soft_srq_free(srq_soft_srq_t *srq)
{
    free(srq->wrid);
    srq_soft_qbuf_free(&srq->ring_buf);
    free((void*)srq->dbrec);
    free(srq);
}

/* Link every WQE to the next: all free, head at 0, tail (sentinel) last */
static void srq_soft_srq_init_list(srq_soft_srq_t *srq)
{
    srq_soft_srq_next_seg_t *wqe;
    uint32_t i;

    for (i = 0; i < srq->wqe_cnt; ++i) {
        wqe = srq_soft_srq_wqe(srq->buf, srq->stride, i);
        wqe->next_wqe_index = htobe16((i + 1) & (srq->wqe_cnt - 1));
    }
    srq->head    = 0;
    srq->tail    = (uint16_t)(srq->wqe_cnt - 1);
    srq->counter = 0;
    srq->wrid    = calloc(srq->wqe_cnt, sizeof(*srq->wrid));
}

/* The ring from @pd's allocator when it has one (the doorbell record and
 * the wr_id array stay ours: they are not the queue a program places) */
static int srq_soft_srq_alloc_ring(srq_soft_srq_t *srq, struct ibv_pd *pd,
                                   uint32_t max_wr, uint32_t max_sge)
{
    void *db;

    srq->max_sge = max_sge ? max_sge : 1;
    srq->stride  = srq_soft_qbuf_pow2(sizeof(srq_soft_srq_next_seg_t) +
                                 srq->max_sge *
                                 sizeof(srq_soft_srq_data_seg_t));
    srq->wqe_cnt = srq_soft_qbuf_pow2(max_wr + 1);
    srq->max_wr  = srq->wqe_cnt - 1;
    if (srq_soft_qbuf_alloc(pd, (size_t)srq->wqe_cnt * srq->stride, 4096,
                            SRQ_SOFT_RES_TYPE_SRQ, &srq->ring_buf) ||
        posix_memalign(&db, 64, 64)) {
        return ENOMEM;
    }
    memset(db, 0, 64);
    srq->buf   = srq->ring_buf.ptr;
    srq->dbrec = db;
    srq_soft_srq_init_list(srq);
    return (srq->wrid == NULL) ? ENOMEM : 0;
}

struct ibv_srq *srq_soft_create_srq(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                    struct ibv_srq_init_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;
    int ret;

    if (!srq_soft_dev_has(dev, pd) ||
        (attr->attr.max_wr == 0) ||
        (attr->attr.max_wr > SRQ_SOFT_MAX_SRQ_WR) ||
        (attr->attr.max_sge > SRQ_SOFT_MAX_SGE)) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_lock_init(&srq->lock);
    ret = srq_soft_srq_alloc_ring(srq, pd, attr->attr.max_wr,
                                  attr->attr.max_sge);
    if (ret != 0) {
        srq_soft_srq_free(srq);
        errno = ret;
        return NULL;
    }
    srq->dev            = dev;
    srq->ibv.context    = &dev->vctx.context;
    srq->ibv.handle     = srq_soft_handle(dev, &srq->ibv);
    srq->ibv.pd         = pd;
    srq_soft_pd_get(pd);
    srq->ibv.srq_context = attr->srq_context;
    pthread_mutex_init(&srq->ibv.mutex, NULL);
    pthread_cond_init(&srq->ibv.cond, NULL);

    /* report what was actually created; the limit is ignored at creation */
    attr->attr.max_wr  = srq->max_wr;
    attr->attr.max_sge = srq->max_sge;
    return &srq->ibv;
}

int srq_soft_modify_srq(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq,
                        struct ibv_srq_attr *attr, int attr_mask)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;

    if (!srq_soft_dev_has(dev, ibsrq) ||
        (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))) {
        return EINVAL;
    }
    if (attr_mask & IBV_SRQ_MAX_WR) {
        /* WQEs the device owns would have to move: not supported (the
         * device does not report IBV_DEVICE_SRQ_RESIZE) */
        return EOPNOTSUPP;
    }
    srq = srq_soft_srq(ibsrq);
    if (attr->srq_limit > srq->max_wr) {
        return EINVAL;
    }
    srq_soft_dev_lock(dev);
    srq->limit = attr->srq_limit;
    srq_soft_dev_unlock(dev);
    return 0;
}

int srq_soft_query_srq(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq,
                       struct ibv_srq_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;

    if (srq_soft_dev_lock_obj(dev, ibsrq) != 0) {
        return EINVAL;
    }
    srq = srq_soft_srq(ibsrq);
    attr->max_wr    = srq->max_wr;
    attr->max_sge   = srq->max_sge;
    attr->srq_limit = srq->limit;
    srq_soft_dev_unlock(dev);
    return 0;
}

int srq_soft_destroy_srq(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;

    if (srq_soft_dev_lock_obj(dev, ibsrq) != 0) {
        return ENOENT;
    }
    srq = srq_soft_srq(ibsrq);
    if (srq->qp_refs > 0) {
        srq_soft_dev_unlock(dev);
        return EBUSY;
    }
    /* completions still in CQs must not give WQEs back to a freed SRQ */
    srq_soft_cqs_forget_srq(dev, srq);
    srq->limit = 0; /* no event after this one */
    if (srq->tm != NULL) {
        srq->tm_free(srq);
    }
    if (srq->srqn != 0) { /* XRC: its number, its CQ, its domain */
        dev->xrc_srqs[srq->srqn] = NULL;
        --srq_soft_cq(srq->xrc_cq)->qp_refs;
        --*srq->xrcd_users;
    }
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(ibsrq->pd);
    if (!srq_soft_async_release(dev, ibsrq, srq->events_written,
                                &ibsrq->mutex, &ibsrq->cond,
                                &ibsrq->events_completed)) {
        return 0; /* an ack still to come writes here: kept allocated */
    }
    pthread_mutex_destroy(&ibsrq->mutex);
    pthread_cond_destroy(&ibsrq->cond);
    srq_soft_srq_free(srq);
    return 0;
}

/* ---- the queue ------------------------------------------------------- */

static void srq_soft_srq_write(srq_soft_srq_t *srq,
                               srq_soft_srq_next_seg_t *wqe,
                               const struct ibv_recv_wr *wr)
{
    srq_soft_srq_data_seg_t *dseg = srq_soft_srq_dseg(wqe);
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        dseg[i].byte_count = htobe32(wr->sg_list[i].length);
        dseg[i].lkey       = htobe32(wr->sg_list[i].lkey);
        dseg[i].addr       = htobe64(wr->sg_list[i].addr);
    }
    if ((uint32_t)i < srq->max_sge) {
        /* a short list ends with an invalid-lkey terminator */
        dseg[i].byte_count = 0;
        dseg[i].lkey       = htobe32(SRQ_SOFT_SRQ_INVALID_LKEY);
        dseg[i].addr       = 0;
    }
}

int srq_soft_srq_post(srq_soft_srq_t *srq, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad_wr)
{
    srq_soft_srq_next_seg_t *wqe;
    uint16_t posted = 0;
    int ret = 0;

    srq_soft_lock(&srq->lock);
    for (; wr != NULL; wr = wr->next) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > srq->max_sge)) {
            ret = EINVAL;
            break;
        }
        if (srq->head == srq->tail) {
            ret = ENOMEM; /* only the sentinel is left */
            break;
        }
        wqe = srq_soft_srq_wqe(srq->buf, srq->stride, srq->head);
        srq_soft_srq_write(srq, wqe, wr);
        srq->wrid[srq->head] = wr->wr_id;
        srq->head = be16toh(wqe->next_wqe_index) & (srq->wqe_cnt - 1);
        ++posted;
    }
    if (posted != 0) {
        srq->counter += posted;
        /* WQE contents before the counter: one doorbell per batch */
        atomic_store_explicit((_Atomic uint32_t*)srq->dbrec,
                              htobe32(srq->counter), memory_order_release);
    }
    srq_soft_unlock(&srq->lock);
    if (ret != 0) {
        *bad_wr = wr;
        errno   = ret; /* as every failing verb sets it */
    }
    return ret;
}

static uint16_t srq_soft_srq_posted(srq_soft_srq_t *srq)
{
    uint32_t db = atomic_load_explicit((_Atomic uint32_t*)srq->dbrec,
                                       memory_order_acquire);

    return (uint16_t)(be32toh(db) - srq->hw_consumed);
}

/* Device side, under dev->lock: the next posted WQE (not consumed yet) */
void *srq_soft_srq_peek(srq_soft_srq_t *srq, uint16_t *idx_p)
{
    uint16_t avail = srq_soft_srq_posted(srq);

    /* more than the ring holds: the doorbell record is garbage */
    if ((avail == 0) || (avail > srq->max_wr)) {
        return NULL;
    }
    *idx_p = srq->hw_next;
    return srq_soft_srq_wqe(srq->buf, srq->stride, srq->hw_next);
}

/* Device side: the WQE returned by peek is now the device's */
void srq_soft_srq_consume(srq_soft_srq_t *srq)
{
    srq_soft_srq_next_seg_t *wqe = srq_soft_srq_wqe(srq->buf, srq->stride,
                                                    srq->hw_next);

    srq->hw_next = be16toh(wqe->next_wqe_index) & (srq->wqe_cnt - 1);
    ++srq->hw_consumed;
    if ((srq->limit != 0) && (srq_soft_srq_posted(srq) < srq->limit)) {
        srq->limit = 0; /* one shot */
        srq_soft_async_raise(srq->dev, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->ibv,
                             &srq->events_written);
    }
}

void srq_soft_srq_free_wqes(srq_soft_srq_t *srq, const uint16_t *idx,
                            unsigned n)
{
    srq_soft_srq_next_seg_t *tail;
    unsigned i;

    srq_soft_lock(&srq->lock);
    for (i = 0; i < n; ++i) {
        tail = srq_soft_srq_wqe(srq->buf, srq->stride, srq->tail);
        tail->next_wqe_index = htobe16(idx[i]);
        srq->tail = idx[i];
    }
    srq_soft_unlock(&srq->lock);
}
