/*
 * ucx-srq soft device: shared receive queues.
 *
 * The receive WQEs live in a ring in the mlx5 linked-list layout
 * (soft_srq.h, srq_verbs_ring.h). ibv_post_srq_recv and srq_verbs_ring_post
 * write it the same way (one doorbell-record update per batch); the device
 * consumes it by following the links from its own position, as many WQEs
 * as the doorbell record says were posted; polling a WQE's completion
 * returns it to the free list. So the two posting paths mix freely.
 *
 * SRQ limit: when the number of posted-but-unconsumed WQEs drops below an
 * armed limit, IBV_EVENT_SRQ_LIMIT_REACHED is raised once and the limit
 * disarms (IB spec o10-...: one shot, re-arm with ibv_modify_srq).
 */
#include "soft.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t srq_soft_pow2(uint32_t v)
{
    uint32_t r = 1;

    while (r < v) {
        r <<= 1;
    }
    return r;
}

static void srq_soft_srq_free(srq_soft_srq_t *srq)
{
    free(srq->st.wrid);
    free(srq->buf);
    free((void*)srq->dbrec);
    pthread_spin_destroy(&srq->lock);
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
    srq->st.head    = 0;
    srq->st.tail    = (uint16_t)(srq->wqe_cnt - 1);
    srq->st.counter = 0;
    srq->st.wrid    = calloc(srq->wqe_cnt, sizeof(*srq->st.wrid));
    srq->st.lock    = &srq->lock;
}

static void srq_soft_srq_init_ring(srq_soft_srq_t *srq)
{
    srq->ring.buf     = srq->buf;
    srq->ring.stride  = srq->stride;
    srq->ring.wqe_cnt = srq->wqe_cnt;
    srq->ring.max_sge = srq->max_sge;
    srq->ring.flags   = SRQ_VERBS_RING_F_SHARED;
    srq->ring.dbrec   = srq->dbrec;
    srq->ring.state   = &srq->st;
    srq->ring.priv    = NULL;
}

static int srq_soft_srq_alloc_ring(srq_soft_srq_t *srq, uint32_t max_wr,
                                   uint32_t max_sge)
{
    void *buf, *db;

    srq->max_sge = max_sge ? max_sge : 1;
    srq->stride  = srq_soft_pow2(SRQ_VERBS_RING_NEXT_SEG_SIZE +
                                 srq->max_sge * SRQ_VERBS_RING_DATA_SEG_SIZE);
    srq->wqe_cnt = srq_soft_pow2(max_wr + 1);
    srq->max_wr  = srq->wqe_cnt - 1;
    if (posix_memalign(&buf, 4096, (size_t)srq->wqe_cnt * srq->stride) ||
        posix_memalign(&db, 64, 64)) {
        return ENOMEM;
    }
    memset(buf, 0, (size_t)srq->wqe_cnt * srq->stride);
    memset(db, 0, 64);
    srq->buf   = buf;
    srq->dbrec = db;
    srq_soft_srq_init_list(srq);
    if (srq->st.wrid == NULL) {
        return ENOMEM;
    }
    srq_soft_srq_init_ring(srq);
    return 0;
}

struct ibv_srq *srq_soft_create_srq(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                    struct ibv_srq_init_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;
    int ret;

    if ((pd == NULL) || !srq_soft_owns(dev, pd->context) ||
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
    pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
    ret = srq_soft_srq_alloc_ring(srq, attr->attr.max_wr, attr->attr.max_sge);
    if (ret != 0) {
        srq_soft_srq_free(srq);
        errno = ret;
        return NULL;
    }
    srq->dev            = dev;
    srq->ibv.context    = &dev->ibv_ctx;
    srq->ibv.pd         = pd;
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

    if ((ibsrq == NULL) || !srq_soft_owns(dev, ibsrq->context) ||
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

    if ((ibsrq == NULL) || !srq_soft_owns(dev, ibsrq->context)) {
        return EINVAL;
    }
    srq = srq_soft_srq(ibsrq);
    srq_soft_dev_lock(dev);
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
    srq_soft_list_t *e;

    if ((ibsrq == NULL) || !srq_soft_owns(dev, ibsrq->context)) {
        return EINVAL;
    }
    srq = srq_soft_srq(ibsrq);
    srq_soft_dev_lock(dev);
    if (srq->qp_refs > 0) {
        srq_soft_dev_unlock(dev);
        return EBUSY;
    }
    /* completions still in CQs must not give WQEs back to a freed SRQ */
    for (e = dev->cqs.next; e != &dev->cqs; e = e->next) {
        srq_soft_cq_forget_srq(srq_soft_container_of(e, srq_soft_cq_t,
                                                     dev_link), srq);
    }
    srq_soft_dev_unlock(dev);
    pthread_mutex_destroy(&srq->ibv.mutex);
    pthread_cond_destroy(&srq->ibv.cond);
    srq_soft_srq_free(srq);
    return 0;
}

/*
 * Test hook (srq_soft_test_fail_post): post the WRs before @fail_at one at
 * a time, each a copy ending the chain - the shared ring code stays as it
 * is and the caller's list is never written - then fail as a post-time
 * check would.
 */
static int srq_soft_post_srq_recv_fault(srq_soft_srq_t *srq,
                                        struct ibv_recv_wr *wr,
                                        struct ibv_recv_wr **bad_wr,
                                        unsigned fail_at, int err)
{
    struct ibv_recv_wr one, *bad;
    unsigned i;
    int ret;

    for (i = 0; i < fail_at; ++i, wr = wr->next) {
        one      = *wr;
        one.next = NULL;
        ret      = srq_verbs_ring_post(&srq->ring, &one, &bad);
        if (ret != 0) {
            *bad_wr = wr;
            return ret;
        }
    }
    *bad_wr = wr;
    return err;
}

int srq_soft_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                           struct ibv_recv_wr **bad_wr)
{
    srq_soft_srq_t *srq = srq_soft_srq(ibsrq);
    unsigned fail_at;
    int err;

    if (srq_soft_post_fault(srq->dev, wr, &fail_at, &err)) {
        return srq_soft_post_srq_recv_fault(srq, wr, bad_wr, fail_at, err);
    }
    return srq_verbs_ring_post(&srq->ring, wr, bad_wr);
}

int srq_soft_srq_ring(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq,
                      srq_verbs_srq_ring_t *ring)
{
    if ((ibsrq == NULL) || !srq_soft_owns(srq_soft_dev(vdev), ibsrq->context)) {
        return EINVAL;
    }
    *ring = srq_soft_srq(ibsrq)->ring;
    return 0;
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
        srq_soft_async_raise(srq->dev, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
    }
}

/* Its completion was polled: the WQE is free again */
void srq_soft_srq_free_wqe(srq_soft_srq_t *srq, uint16_t idx)
{
    srq_verbs_ring_free(&srq->ring, idx);
}
