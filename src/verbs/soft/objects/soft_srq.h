/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: shared receive queues. The verbs side posts WQEs
 * into the queue (soft_srq_wqe.h) without the device lock; the device side
 * (the responder, under dev->lock) consumes them in posting order; polling
 * a WQE's completion gives it back to the free list.
 */
#ifndef SRQ_SOFT_SRQ_H_
#define SRQ_SOFT_SRQ_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_lock.h"
#include "soft_qbuf.h"
#include "soft_srq_wqe.h"

#include <endian.h>
#include <pthread.h>
#include <stdint.h>

typedef struct srq_soft_dev srq_soft_dev_t;
typedef struct srq_soft_srq srq_soft_srq_t;

struct srq_soft_srq {
    struct ibv_srq       ibv;
    srq_soft_dev_t      *dev;
    uint8_t             *buf;       /* ring_buf.ptr */
    srq_soft_qbuf_t      ring_buf;  /* from the parent domain's allocator,
                                       if it has one */
    uint32_t             stride;
    uint32_t             wqe_cnt;
    uint32_t             max_sge;
    uint32_t             max_wr;    /* wqe_cnt - 1 */
    volatile uint32_t   *dbrec;     /* WQEs posted, mod 2^16, big-endian */
    /* verbs side: the free list (post vs. poll) */
    srq_soft_lock_t      lock;
    uint16_t             head;      /* next free WQE, written by posting */
    uint16_t             tail;      /* last free WQE (sentinel) */
    uint16_t             counter;   /* WQEs posted so far, mod 2^16 */
    uint64_t            *wrid;      /* wqe_cnt entries */
    /* device side (under dev->lock) */
    uint16_t             hw_next;     /* next WQE to consume */
    uint16_t             hw_consumed; /* WQEs consumed, mod 2^16 */
    uint32_t             limit;       /* armed limit, 0: disarmed */
    uint64_t             rnr_naks;    /* RNR NAKs sent because it was
                                         empty (srq_soft_stat_inc_shared) */
    int                  qp_refs;
    /* XRC (soft_xrcd.c): its number, its own CQ (its receive completions
     * go there, not to a QP's), and the counter of the XRC domain handle
     * it was made through; srqn 0: a basic SRQ */
    uint32_t             srqn;
    struct ibv_cq       *xrc_cq;
    struct ibv_xrcd     *xrcd;
    int                 *xrcd_users;
    /* tag matching (IBV_SRQT_TM): its list, NULL: none; and what frees it
     * (soft_tm.c's, given here so that the SRQ needs nothing of the
     * layer above it) */
    void                *tm;
    void               (*tm_free)(srq_soft_srq_t *srq);
    uint32_t             events_written; /* uverbs mode: to the async fd
                                            (dev->async_lock) */
};

static inline srq_soft_srq_t *srq_soft_srq(struct ibv_srq *srq)
{
    return srq_soft_container_of(srq, srq_soft_srq_t, ibv);
}

/* Their completions were polled: the @n WQEs at @idx are free again, in
 * that order (one lock for a poll's batch, not one per completion). The
 * device's srq_free_wqes, which the CQ calls */
void srq_soft_srq_free_wqes(srq_soft_srq_t *srq, const uint16_t *idx,
                            unsigned n);

struct ibv_srq *srq_soft_create_srq(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    struct ibv_srq_init_attr *attr);
int  srq_soft_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                         struct ibv_srq_attr *attr, int attr_mask);
int  srq_soft_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                        struct ibv_srq_attr *attr);
int  srq_soft_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq);
/* Write the WRs into the queue, one doorbell for the batch: the contract of
 * ibv_post_srq_recv (ENOMEM: full, EINVAL: too many SGEs; *bad_wr is the
 * first WR not posted, the ones before it stay posted) */
int  srq_soft_srq_post(srq_soft_srq_t *srq, struct ibv_recv_wr *wr,
                       struct ibv_recv_wr **bad_wr);
/* Device side, under dev->lock: the next posted WQE, or NULL */
void *srq_soft_srq_peek(srq_soft_srq_t *srq, uint16_t *idx_p);
/* Device side: the WQE returned by peek is now the device's */
void srq_soft_srq_consume(srq_soft_srq_t *srq);

#endif
