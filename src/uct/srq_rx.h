/*
 * ucx-srq: receive-queue management: the interface's one shared receive
 * queue (or, as the baseline, one receive queue per QP), its descriptors,
 * posting and refill against thresholds, adaptive depth, and delivery of
 * received active messages.
 */
#ifndef UCT_SRQ_RX_H_
#define UCT_SRQ_RX_H_

#include "srq_rx_pool.h"

#include <verbs/srq_verbs.h>

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/time/time.h>

typedef struct uct_srq_iface uct_srq_iface_t;

/* Per-QP mode: receive CQ entries, so at most this / RX_QP_LEN QPs */
#define UCT_SRQ_RX_QP_CQ_LEN    65536

/* wr_id of the sends that retire SRQ buffers (never a connection) */
#define UCT_SRQ_RX_RETIRE_WRID  ((uint64_t)1)

typedef struct uct_srq_rx_config {
    int       srq;          /* one shared queue (else one per QP) */
    unsigned  queue_min;    /* depth floor: the SRQ starts here */
    unsigned  queue_max;    /* depth ceiling: the SRQ's size */
    unsigned  qp_len;       /* per-QP mode: buffers posted per QP */
    unsigned  batch;        /* buffers posted per post call */
    unsigned  low_wm;       /* % of the depth: refill at once, limit event */
    double    interval;     /* adaptation period */
    double    shrink_delay; /* quiet time before the depth halves */
    unsigned  max_bufs;     /* receive descriptors, at most */
} uct_srq_rx_config_t;

/* A QP's own receive queue (per-QP mode) */
struct uct_srq_rx_rq {
    struct ibv_qp    *qp;
    unsigned          posted;   /* buffers posted now */
    int               failed;   /* flushed: post no more */
    int               queued;   /* in rx->refill_rqs */
    ucs_list_link_t   list;
};

/*
 * The receive side of an interface. In SRQ mode (UCX_RC_SRQ_SRQ=y, the
 * default) it is one shared receive queue for all the interface's QPs,
 * whose depth adapts between RX_QUEUE_MIN and RX_QUEUE_MAX. In per-QP mode
 * (SRQ=n, the baseline) @srq is NULL and every connection's QP has a
 * receive queue of its own (uct_srq_rx_rq_t, in the connection) of a fixed
 * RX_QP_LEN buffers: @depth is then per QP, @posted counts all queues,
 * queues below their depth wait in @refill_rqs, and nothing adapts. Both
 * modes draw descriptors from the same @pool and deliver the same way.
 */
typedef struct uct_srq_rx {
    struct ibv_srq       *srq;        /* NULL in per-QP mode */
    uct_srq_rx_pool_t     pool;       /* registered receive descriptors */
    unsigned              posted;     /* buffers posted now, all queues */
    unsigned              depth;      /* buffers to keep posted (per QP in
                                         per-QP mode) */
    unsigned              low;        /* low watermark, in buffers */
    unsigned              batch;
    size_t                seg_size;   /* bytes one buffer receives */
    size_t                data_offset;/* descriptor start -> receive buffer */
    unsigned              rx_headroom;/* the user's, before the payload */
    uct_recv_desc_t       release;    /* returns kept descriptors */
    ucs_list_link_t       refill_rqs; /* per-QP mode: queues below depth */
    unsigned              num_rqs;    /* per-QP mode: QPs with a queue */
    uct_srq_md_limit_handler_t limit_handler; /* the md's limit events */
    struct {
        unsigned          min, max, low_wm;
        ucs_time_t        interval, shrink_delay;
    } config;
    struct {
        volatile uint32_t limit_events; /* counted by the async handler */
        uint32_t          limit_seen;
        int               limit_armed;
        unsigned          limit_drawdown; /* what the armed limit's event
                                             means: filled - watermark */
        int               rnr_ok;       /* the device counts RNR NAKs */
        uint64_t          rnr_last;
        unsigned          rnr_depth;    /* the depth at the last look */
        ucs_time_t        last_tick;
        ucs_time_t        next_tick;
        unsigned          drawdown;     /* the period's largest, at a refill */
        unsigned          filled;       /* posted when the last refill was
                                           done: what the drawdown counts
                                           from (a depth grown since is no
                                           consumption) */
        unsigned          pressure;     /* ran dry again this period: the
                                           largest depth it did at; 0 no */
        int               relieved;     /* grown for pressure this period */
        int               was_saturated;/* the last period's verdict */
        unsigned          polls;        /* receive-CQ polls, empty or not */
        unsigned          full_polls;   /* of them, a full batch */
        ucs_time_t        shrink_since; /* target <= depth/2 since, or 0 */
        unsigned          shrink_to;    /* the largest target since then */
        ucs_time_t        shrink_to_at; /* when it was last seen */
        unsigned          shrink_after; /* the largest target after that */
        unsigned          idle_polls;
        int               starved;      /* reported; until refilled */
    } adapt;
    struct {
        struct ibv_qp    *qp;           /* sends to itself, on the SRQ */
        unsigned          pending;      /* buffers still to retire */
        unsigned          outstanding;  /* sends posted, not completed */
        int               failed;
    } retire;
    struct {
        uint64_t          posted;     /* buffers posted in total */
        uint64_t          consumed;   /* receive completions */
        uint64_t          refills;    /* post calls (or ring doorbells) */
        uint64_t          dropped;    /* malformed messages dropped */
        uint64_t          bytes;      /* received into the buffers */
        uint64_t          limit_events;
        uint64_t          rnr;        /* RNR NAKs the device reported */
        uint64_t          grows;
        uint64_t          shrinks;
        uint64_t          retired;    /* buffers consumed by retire sends */
        uint64_t          starved;    /* times the pool ran out */
        uint64_t          starved_saturated; /* ran dry, the receiver
                                                saturated: not grown */
        unsigned          target;     /* the last period's target depth */
        unsigned          peak;       /* most buffers posted at once */
        unsigned          held;       /* descriptors kept by AM handlers */
    } stats;
} uct_srq_rx_t;

extern ucs_config_field_t uct_srq_rx_config_table[];

/* Shortest RX_ADAPT_INTERVAL, in seconds: a period is at least one look of
 * the progress loop, and a clock read per progress call is not free */
#define UCT_SRQ_RX_MIN_INTERVAL 1e-5

/* The control law's constants (srq_rx_depth.c): the target depth is
 * MARGIN x the drawdown; a receiver whose polls were at least SATURATED %
 * full (of at least SATURATED_MIN_POLLS in the period) is the bottleneck,
 * and does not grow its queue when it runs dry */
#define UCT_SRQ_RX_MARGIN               2
#define UCT_SRQ_RX_SATURATED            90
#define UCT_SRQ_RX_SATURATED_MIN_POLLS  16


/* Check the receive configuration against the device, before anything is
 * created: UCS_ERR_INVALID_PARAM with an error naming the variable */
ucs_status_t uct_srq_rx_check_config(const uct_srq_rx_config_t *config,
                                     const struct ibv_device_attr *attr);

/* The receive side of @iface; its descriptors leave the user's rx_headroom
 * before the payload and align it as @params ask (am_alignment,
 * am_align_offset; by default to a cache line) */
ucs_status_t uct_srq_rx_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                             const uct_srq_rx_config_t *config,
                             size_t seg_size,
                             const uct_iface_params_t *params);
void uct_srq_rx_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Receive CQ entries the configuration needs, besides the handshake's */
unsigned uct_srq_rx_cq_len(const uct_srq_rx_config_t *config);

/* Post buffers where queues are below their thresholds */
void uct_srq_rx_refill(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* One receive completion of a connection's QP: an active message goes to
 * its handler (the descriptor back to the pool, or kept by the handler);
 * anything else (a flushed receive, a retire send, garbage) gives its
 * descriptor back */
void uct_srq_rx_deliver(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                         const struct ibv_wc *wc);

/* Adapt the depth to what the last period saw (srq_rx_depth.c) */
void uct_srq_rx_tick(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* @n completions were polled from the receive CQ (of at most @batch):
 * count a full poll (the receiver saturated), then refill */
static inline void uct_srq_rx_polled(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                     int n, int batch)
{
    ++rx->adapt.polls;
    rx->adapt.full_polls += (n == batch);
    uct_srq_rx_refill(rx, iface);
}

/* The receive CQ had nothing: refill a queue the pool could not fill (its
 * descriptors were held), and adapt the depth now and then */
static inline void uct_srq_rx_refill_adapt(uct_srq_rx_t *rx,
                                           uct_srq_iface_t *iface)
{
    if (ucs_unlikely(((rx->srq != NULL) && (rx->posted < rx->low)) ||
                     !ucs_list_is_empty(&rx->refill_rqs))) {
        uct_srq_rx_refill(rx, iface);
    }
    ++rx->adapt.polls;
    if (ucs_unlikely(++rx->adapt.idle_polls >= 256)) {
        rx->adapt.idle_polls = 0;
        uct_srq_rx_tick(rx, iface);
    }
}

/* Per-QP mode: give a new QP its receive queue, filled; cleanup is a no-op
 * for a queue never set up (SRQ mode) */
ucs_status_t uct_srq_rx_rq_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                uct_srq_rx_rq_t *rq, struct ibv_qp *qp);
void uct_srq_rx_rq_cleanup(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq);

/* A send completion of the retire QP */
void uct_srq_rx_retire_complete(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                const struct ibv_wc *wc);


/* ---- between srq_rx.c and srq_rx_depth.c ---- */

/* Set the depth and the watermark that goes with it */
void uct_srq_rx_set_depth(uct_srq_rx_t *rx, unsigned depth);

void uct_srq_rx_adapt_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface);
void uct_srq_rx_adapt_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Before a refill of the SRQ: grow on limit events and sustained low fill */
void uct_srq_rx_adapt_pressure(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* After a refill of the SRQ: re-arm the limit, adapt when it is time */
void uct_srq_rx_adapt_refilled(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* A queue could not be refilled: report it if the pool is exhausted */
void uct_srq_rx_starved(uct_srq_rx_t *rx);

#endif
