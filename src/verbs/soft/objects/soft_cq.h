/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: completion queues and completion channels.
 */
#ifndef SRQ_SOFT_CQ_H_
#define SRQ_SOFT_CQ_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_lock.h"
#include "soft_qbuf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev     srq_soft_dev_t;
typedef struct srq_soft_srq     srq_soft_srq_t;
typedef struct srq_soft_cq      srq_soft_cq_t;
typedef struct srq_soft_channel srq_soft_channel_t;

/* A completion as stored in the CQ: what the user gets, plus what polling
 * must give back to its queue (a receive buffer is the device's until its
 * completion is polled, a send queue slot too, as on an HCA). */
typedef struct srq_soft_cqe {
    struct ibv_wc    wc;
    srq_soft_srq_t  *srq;      /* SRQ WQE to free on poll, or NULL */
    /* a QP's counters, which the CQ advances knowing nothing of the QP */
    uint32_t        *rq_ci_p;  /* RQ slot to free on poll: ++*, or NULL */
    uint32_t        *sq_free_p;/* SQ slots to free on poll, or NULL: */
    uint32_t         sq_free;  /* ... all before this index */
    uint16_t         srq_idx;
} srq_soft_cqe_t;

/* The counter a tag-matching receive completion bumps (rq_ci_p points at
 * its polled), with what ibv_wc_read_tm_info reports for it (with
 * IBV_WC_TM_MATCH): kept beside the counter, in the tag it is for
 * (soft_tm_list.h), so that every other completion stays as small as it
 * was */
typedef struct srq_soft_cqe_tm {
    uint32_t               polled;
    struct ibv_wc_tm_info  info;
} srq_soft_cqe_tm_t;

struct srq_soft_cq {
    union {
        struct ibv_cq    ibv;
        struct ibv_cq_ex ibv_ex;   /* an extended CQ (soft_cq_poll.c): the
                                      same head, then its poll functions */
    };
    struct ibv_wc        ex_wc;    /* extended CQ: the completion between
                                      ibv_start_poll and ibv_end_poll */
    struct ibv_wc_tm_info ex_tm;   /* ... its tm_info, when it has one */
    srq_soft_dev_t      *dev;
    srq_soft_cqe_t      *ring;     /* ring_buf.ptr */
    srq_soft_qbuf_t      ring_buf;
    struct ibv_pd       *pd;       /* the parent domain it was made in
                                      (ibv_create_cq_ex), or NULL */
    uint32_t             size;     /* power of two */
    /* The CQ's own lock: the ring, pi and ci, error and the counters a
     * poll bumps (srq_soft_cqe_t; ex_wc and ex_tm are the one thread's
     * between ibv_start_poll and ibv_end_poll). The engine pushes under
     * dev->lock and this one; a poll pops under this one alone, so a
     * thread polling its own CQ waits for no other's device work. Only
     * the SRQ's lock is taken inside it (lock order: doc/architecture.md) */
    srq_soft_lock_t      lock;
    uint32_t             pi, ci;   /* written by atomic stores: an empty
                                      poll reads them without the lock
                                      (srq_soft_poll_cq) */
    int                  armed;    /* 0, 1: next CQE, 2: next solicited */
    bool                 push_se;  /* the completion being pushed is
                                      solicited (under the CQ's lock) */
    bool                 error;    /* overrun (as pi and ci) */
    srq_soft_list_t      ev_link;  /* channel->events */
    unsigned             events_delivered;
    unsigned             events_acked;
    uint32_t             events_written; /* uverbs mode: async events to
                                            the async fd (dev->async_lock) */
    int                  qp_refs;
    int                  ud_recv_qps; /* UD QPs receiving into it: their
                                         datagrams may complete nothing
                                         (no WQE, too long), so a sleeper
                                         on it is woken through the thread
                                         (srq_soft_channel_take_pipe) */
    srq_soft_list_t      dev_link; /* dev->cqs */
    uint64_t             progress_seen; /* the device's progress_calls when
                                           this CQ was last polled (atomic:
                                           also an empty poll's, unlocked) */
};

/* The words an empty poll reads without dev->lock (the lock's holders
 * write them with these), and the counters polls advance (rq_ci_p,
 * sq_free_p), which posts and the engine read outside the CQ's lock.
 * Acquire and release: a post that sees a slot free writes it after
 * everything the engine did with it (free on x86) */
static inline uint32_t srq_soft_cq_load(const uint32_t *v)
{
    return atomic_load_explicit((_Atomic uint32_t*)v, memory_order_acquire);
}

static inline void srq_soft_cq_store(uint32_t *v, uint32_t value)
{
    atomic_store_explicit((_Atomic uint32_t*)v, value, memory_order_release);
}

/* The device's progress count @calls, as this CQ's last poll saw it */
static inline void srq_soft_cq_seen(srq_soft_cq_t *cq, uint64_t calls)
{
    atomic_store_explicit((_Atomic uint64_t*)&cq->progress_seen, calls,
                          memory_order_relaxed);
}

struct srq_soft_channel {
    struct ibv_comp_channel  ibv;      /* ibv.fd: an epoll fd (soft_cq.c) */
    srq_soft_dev_t          *dev;
    int                      efd;      /* eventfd: local CQ events */
    srq_soft_list_t          events;   /* CQs with a pending event */
    int                      refcnt;   /* CQs using it */
    unsigned                 armed;    /* its CQs armed */
};

static inline srq_soft_cq_t *srq_soft_cq(struct ibv_cq *cq)
{
    return srq_soft_container_of(cq, srq_soft_cq_t, ibv);
}

struct ibv_comp_channel *srq_soft_create_comp_channel(srq_verbs_dev_t *dev);
int  srq_soft_destroy_comp_channel(srq_verbs_dev_t *dev,
                                   struct ibv_comp_channel *channel);
/* ... in the parent domain @pd (NULL: none) */
struct ibv_cq *srq_soft_create_cq_pd(srq_verbs_dev_t *dev, int cqe,
                                     void *cq_context,
                                     struct ibv_comp_channel *channel,
                                     int comp_vector, struct ibv_pd *pd);
struct ibv_cq *srq_soft_create_cq(srq_verbs_dev_t *dev, int cqe,
                                  void *cq_context,
                                  struct ibv_comp_channel *channel,
                                  int comp_vector);
int  srq_soft_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq);
/* ibv_resize_cq: 0, EINVAL (out of range, or fewer entries than the CQ
 * holds now) or ENOMEM */
int  srq_soft_resize_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq, int cqe);
void srq_soft_ack_cq_events(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                            unsigned nevents);

/* Under dev->lock: */
/* ibv_req_notify_cq's arm: EINVAL without a channel to notify */
int  srq_soft_cq_arm(srq_soft_cq_t *cq, int solicited_only);
/* A slot for a new completion, NULL on overrun (the CQ is in error); a
 * slot is filled, then published by srq_soft_cq_push_done (the CQ's lock
 * is held in between) */
srq_soft_cqe_t *srq_soft_cq_push(srq_soft_cq_t *cq, bool solicited);
void srq_soft_cq_push_done(srq_soft_cq_t *cq);

/* Without dev->lock (the CQ's own): take up to @num completions (what
 * ibv_poll_cq returns) */
int  srq_soft_cq_pop(srq_soft_cq_t *cq, int num, struct ibv_wc *wc);
/* The channel's oldest event, or NULL */
srq_soft_cq_t *srq_soft_channel_pop(srq_soft_channel_t *ch);
/* A QP or SRQ is destroyed: its completions stay, its queue is gone (a
 * QP's: the counters its completions advance, @rq_ci_p and @sq_free_p) */
void srq_soft_cq_forget_qp(srq_soft_cq_t *cq, const uint32_t *rq_ci_p,
                           const uint32_t *sq_free_p);
/* The QP @qp_num is reset: its completions go */
void srq_soft_cq_clean_qp(srq_soft_cq_t *cq, uint32_t qp_num);
void srq_soft_cqs_forget_srq(srq_soft_dev_t *dev, srq_soft_srq_t *srq);
/* The counters in [@lo, @lo + @len) that completions bump when polled
 * (rq_ci_p) are gone: a TM SRQ's (soft_tm.c) */
void srq_soft_cq_forget_counters(srq_soft_cq_t *cq, const void *lo,
                                 size_t len);

#endif
