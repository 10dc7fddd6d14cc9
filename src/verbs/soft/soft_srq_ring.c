/*
 * ucx-srq verbs layer: the SRQ ring API (srq_verbs_ring.h).
 *
 * Lives with the soft device because the soft device is where the ring is
 * consumed and tested; on mlx5 hardware the same layout is obtained from
 * mlx5dv_init_obj (built when rdma-core has mlx5dv, untested here).
 */
#ifdef HAVE_CONFIG_H
#include "srq_config.h"
#endif

#include "soft.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>

/* mlx5: head/tail/counter/wr_id are ours (the provider keeps its own);
 * the caller frees consumed WQEs with srq_verbs_ring_free(). Only valid on
 * an SRQ nothing has been posted to through ibv_post_srq_recv. */
static int srq_verbs_mlx5_srq_ring(struct ibv_srq *srq,
                                   srq_verbs_srq_ring_t *ring)
{
    srq_verbs_srq_ring_state_t *st;
    struct mlx5dv_srq dv = {0};
    struct mlx5dv_obj obj;

    if (!mlx5dv_is_supported(srq->context->device)) {
        return EOPNOTSUPP;
    }
    memset(&obj, 0, sizeof(obj));
    obj.srq.in  = srq;
    obj.srq.out = &dv;
    if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ) != 0) {
        return EOPNOTSUPP;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return ENOMEM;
    }
    ring->buf     = dv.buf;
    ring->stride  = dv.stride;
    ring->wqe_cnt = dv.tail + 1; /* a fresh SRQ: tail is the last WQE */
    ring->max_sge = dv.stride / SRQ_VERBS_RING_DATA_SEG_SIZE - 1;
    ring->flags   = 0;
    ring->dbrec   = (volatile uint32_t*)dv.dbrec;
    st->head      = (uint16_t)dv.head;
    st->tail      = (uint16_t)dv.tail;
    st->wrid      = calloc(ring->wqe_cnt, sizeof(*st->wrid));
    if (st->wrid == NULL) {
        free(st);
        return ENOMEM;
    }
    ring->state = st;
    ring->priv  = st;
    return 0;
}
#endif

int srq_verbs_srq_ring(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                       srq_verbs_srq_ring_t *ring)
{
    memset(ring, 0, sizeof(*ring));
    if (dev->kind == SRQ_VERBS_DEV_SOFT) {
        return srq_soft_srq_ring(dev, srq, ring);
    }
#ifdef HAVE_MLX5DV
    return srq_verbs_mlx5_srq_ring(srq, ring);
#else
    return EOPNOTSUPP;
#endif
}

void srq_verbs_srq_ring_release(srq_verbs_srq_ring_t *ring)
{
    srq_verbs_srq_ring_state_t *st = ring->priv;

    if (st != NULL) {
        free(st->wrid);
        free(st);
    }
    memset(ring, 0, sizeof(*ring));
}

static void srq_verbs_ring_write(srq_verbs_srq_ring_t *ring,
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
    if ((uint32_t)i < ring->max_sge) {
        /* a short list ends with an invalid-lkey terminator, as on mlx5 */
        dseg[i].byte_count = 0;
        dseg[i].lkey       = htobe32(SRQ_VERBS_RING_INVALID_LKEY);
        dseg[i].addr       = 0;
    }
}

int srq_verbs_ring_post(srq_verbs_srq_ring_t *ring, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad_wr)
{
    srq_verbs_srq_ring_state_t *st = ring->state;
    srq_soft_srq_next_seg_t *wqe;
    uint16_t posted = 0;
    int ret = 0;

    if (st->lock != NULL) {
        pthread_spin_lock(st->lock);
    }
    for (; wr != NULL; wr = wr->next) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > ring->max_sge)) {
            ret = EINVAL;
            break;
        }
        if (st->head == st->tail) {
            ret = ENOMEM; /* only the sentinel is left */
            break;
        }
        wqe = srq_soft_srq_wqe(ring->buf, ring->stride, st->head);
        srq_verbs_ring_write(ring, wqe, wr);
        st->wrid[st->head] = wr->wr_id;
        st->head = be16toh(wqe->next_wqe_index) & (ring->wqe_cnt - 1);
        ++posted;
    }
    if (posted != 0) {
        st->counter += posted;
        /* WQE contents before the counter: one doorbell per batch */
        atomic_store_explicit((_Atomic uint32_t*)ring->dbrec,
                              htobe32(st->counter), memory_order_release);
    }
    if (st->lock != NULL) {
        pthread_spin_unlock(st->lock);
    }
    if (ret != 0) {
        *bad_wr = wr;
    }
    return ret;
}

void srq_verbs_ring_free(srq_verbs_srq_ring_t *ring, uint16_t index)
{
    srq_verbs_srq_ring_state_t *st = ring->state;
    srq_soft_srq_next_seg_t *tail;

    if (st->lock != NULL) {
        pthread_spin_lock(st->lock);
    }
    tail = srq_soft_srq_wqe(ring->buf, ring->stride, st->tail);
    tail->next_wqe_index = htobe16(index);
    st->tail = index;
    if (st->lock != NULL) {
        pthread_spin_unlock(st->lock);
    }
}
