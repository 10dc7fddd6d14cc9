/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the transport's objects - the interface, its receive side, its
 * connections and their handshake - as structs, and nothing else. Every
 * part of the transport reads the interface's fields (its device, PD,
 * CQs, configuration); what each part does with them is in its own file.
 * Header only: the types sit below all the code that uses them, so no
 * file depends on another through its struct (the kernel's rxe keeps its
 * objects in rxe_verbs.h the same way).
 */
#ifndef UCT_SRQ_TYPES_H_
#define UCT_SRQ_TYPES_H_

#include "srq_md.h"
#include "srq_rx_pool.h"

#include <verbs/srq_verbs.h>
#include <uct/api/uct.h>
#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/time/time.h>

#include <pthread.h>
#include <string.h>

typedef struct uct_srq_iface uct_srq_iface_t;


/* ---- the receive side (srq_rx.c, srq_rx_depth.c) ---- */

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
    size_t                hdr_len;    /* tag matching: the TMH every message
                                         starts with, received just before
                                         the buffer (0 without) */
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
        uint64_t          periods;    /* adaptation periods ended */
        uint64_t          starved;    /* times the pool ran out */
        uint64_t          starved_saturated; /* ran dry, the receiver
                                                saturated: not grown */
        unsigned          target;     /* the last period's target depth */
        unsigned          peak;       /* most buffers posted at once */
        unsigned          held;       /* descriptors kept by AM handlers */
    } stats;
} uct_srq_rx_t;


/* ---- connections and their handshake (srq_conn.c, srq_hs.c) ---- */

typedef enum uct_srq_conn_state {
    UCT_SRQ_CONN_CONNECTING,  /* REQ sent, waiting for the peer's QP */
    UCT_SRQ_CONN_REP_SENT,    /* QP connected, waiting for the peer's RTU */
    UCT_SRQ_CONN_READY,       /* up, found so from UCX's async thread: the
                                 owner's progress lets its sends go */
    UCT_SRQ_CONN_CONNECTED,   /* both QPs ready: data may flow */
    UCT_SRQ_CONN_FAILED       /* error: the QP is gone for good */
} uct_srq_conn_state_t;

/* Who is on the other side: device address + handshake QP number */
typedef struct uct_srq_conn_key {
    srq_verbs_port_addr_t  dev;
    uint32_t               ud_qpn;
} UCS_S_PACKED uct_srq_conn_key_t;

/*
 * A send operation waiting for a completion. Every WR of a connection is
 * signaled and RC completes them in order, so an operation is done when the
 * connection's completed-WR count passes its sequence number.
 */
typedef struct uct_srq_op uct_srq_op_t;
typedef void (*uct_srq_op_cb_t)(uct_srq_iface_t *iface, uct_srq_op_t *op,
                                ucs_status_t status);
struct uct_srq_op {
    ucs_queue_elem_t   queue;
    uint32_t           sn;
    uct_srq_op_cb_t    cb;
    uct_completion_t  *comp;
    void              *owner;   /* the endpoint; NULL once it was destroyed:
                                   its completion ran, the WR completes as
                                   canceled */
};

/*
 * A send WR made while its connection was not up (handshake under way, or
 * failed without its endpoints being told yet): a copy of the WR, its
 * scatter list and, for an inline send, its data.
 */
typedef struct uct_srq_conn_wr {
    ucs_queue_elem_t    queue;
    void               *owner;   /* the endpoint that sent it */
    struct ibv_send_wr  wr;
    struct ibv_sge      sge[];   /* wr.num_sge, then inline data */
} uct_srq_conn_wr_t;

typedef struct uct_srq_conn {
    uct_srq_conn_key_t    key;
    struct ibv_qp        *qp;
    uint32_t              remote_qpn;
    uct_srq_conn_state_t  state;
    int                   tx_avail;     /* free send queue slots */
    uint32_t              sn_posted;    /* WRs posted */
    uint32_t              sn_done;      /* WRs completed */
    unsigned              tx_unsignaled; /* WRs posted since the last
                                            signaled one */
    int                   send_flags;   /* IBV_SEND_FENCE once after a fence */
    int                   pending_desched; /* an endpoint waits for slots */
    unsigned              amo_looping;  /* emulated atomics still swapping */
    int                   accepting;    /* half open, asked for by the peer */
    ucs_queue_head_t      ops;          /* uct_srq_op_t by sequence number */
    ucs_queue_head_t      queued;       /* uct_srq_conn_wr_t not posted yet */
    unsigned              num_queued;
    ucs_status_t          fail_status;  /* why it failed */
    const char           *fail_reason;
    int                   fail_errno;   /* the limit of ours behind it
                                           (uct_srq_err_is_limit), or 0 */
    int                   fail_reported; /* its endpoints were told */
    int                   fail_deferred; /* failed in the async thread: the
                                            owner's progress fails it */
    int                   drain_pending; /* failed with an unsignaled tail:
                                            a marker is to be posted */
    uint32_t              ka_sn;        /* sn_posted at the last idle check */
    unsigned              hs_looks;     /* idle checks that found its
                                           handshake waiting for the RTU */
    ucs_list_link_t       eps;          /* uct_srq_ep_t on this connection */
    ucs_list_link_t       list;         /* in hs->connecting or hs->dead */
    struct ibv_ah        *ah;           /* for handshake datagrams */
    uct_srq_rx_rq_t       rq;           /* per-QP mode: its receive queue */
    ucs_time_t            next_retry;
    ucs_time_t            retry_interval;
    ucs_time_t            deadline;
} uct_srq_conn_t;

static inline khint32_t uct_srq_conn_key_hash(uct_srq_conn_key_t key)
{
    const uint8_t *p = (const uint8_t*)&key;
    khint32_t h      = 2166136261u;
    size_t i;

    for (i = 0; i < sizeof(key); ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

#define uct_srq_conn_key_equal(_a, _b) (!memcmp(&(_a), &(_b), sizeof(_a)))

KHASH_INIT(uct_srq_conns, uct_srq_conn_key_t, uct_srq_conn_t*, 1,
           uct_srq_conn_key_hash, uct_srq_conn_key_equal);

/*
 * What a connection tells its interface, through the interface's hooks
 * (given to uct_srq_hs_init): the interface, not the connection, knows the
 * endpoints on it and their pending requests.
 */
typedef struct uct_srq_conn_hooks {
    /* @conn is up: requests queued while connecting may go */
    void (*established)(uct_srq_iface_t *iface, uct_srq_conn_t *conn);
    /* @conn freed send slots after an endpoint found none */
    void (*tx_resumed)(uct_srq_iface_t *iface, uct_srq_conn_t *conn);
    /* @conn is lost: its endpoints learn it with @status */
    void (*failed)(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                   ucs_status_t status);
    /* @conn is destroyed with the interface: its endpoints lose it */
    void (*closed)(uct_srq_iface_t *iface, uct_srq_conn_t *conn);
} uct_srq_conn_hooks_t;

typedef struct uct_srq_hs_config {
    double    timeout;       /* give up connecting after this long */
    double    idle_check;    /* probe connections no endpoint uses */
    double    retry;         /* first handshake retry interval */
    unsigned  queue_len;     /* handshake receive buffers */
    unsigned  drop;          /* debug: % of handshake datagrams dropped */
    unsigned  max_accepting; /* half-open connections peers asked for */
    double    async_interval; /* the async thread's look at an idle owner */
} uct_srq_hs_config_t;

/* The handshake of an interface: its UD QP and buffers, and the connections
 * it set up (live, connecting, failed) */
typedef struct uct_srq_hs {
    /*
     * What the handshake owns is also touched by UCX's async thread
     * (uct_srq_hs_async_look), when the interface's owner has not
     * progressed it for a while: it answers peers then, so that a process
     * that waits elsewhere - or sends atomics from threads at a target it
     * does not progress - does not time its peers out. Under @lock (the
     * async thread only tries it); what only the owner may do (its sends,
     * its endpoints' requests, failing a connection) the async thread
     * leaves to the owner's progress: READY and fail_deferred connections.
     */
    pthread_mutex_t         lock;
    int                     async_left;   /* it left work for the owner */
    int                     wake_fd;      /* eventfd: ... and woke it, if
                                             asleep (srq_iface_event.c) */
    int                     wake_pending; /* wake_fd was written */
    ucs_list_link_t         async_link;   /* on the async thread's list */
    int                     async_on;     /* there */
    ucs_time_t              next_look;
    unsigned long           progress_seen; /* owner's progress calls then */
    struct ibv_cq          *cq;           /* the UD QP's, send and receive */
    struct ibv_qp          *ud_qp;
    struct ibv_mr          *mr;
    void                   *bufs;         /* handshake receive buffers */
    unsigned                num_bufs;
    int                     ud_tx_avail;
    khash_t(uct_srq_conns)  conns;        /* live connections by peer */
    ucs_list_link_t         connecting;   /* handshakes under way */
    ucs_list_link_t         dead;         /* failed, freed when unused */
    const uct_srq_conn_hooks_t *hooks;    /* the interface's */
    unsigned                num_accepting; /* half open, asked for by peers */
    unsigned                polls;        /* progress calls since the clock
                                             was last read; the async
                                             thread sets it to have the
                                             owner look (relaxed atomics) */
    ucs_time_t              next_idle_check;
    struct {
        ucs_time_t          timeout;
        ucs_time_t          idle_check;
        ucs_time_t          retry;
        unsigned            drop;
        unsigned            max_accepting;
        ucs_time_t          async_interval;
    } config;
    unsigned                seed;         /* for config.drop */
    struct {
        uint64_t            sent;         /* handshake datagrams sent */
        uint64_t            retries;      /* of them, retransmissions */
        uint64_t            dropped;      /* malformed or unexpected */
        uint64_t            lost;         /* dropped on purpose (CONN_DROP) */
    } stats;
} uct_srq_hs_t;


/* ---- tag-matching offload (srq_tm.c, srq_ep_tag.c) ---- */

/* A tagged receive buffer in the device's list (uct_iface_tag_recv_zcopy) */
typedef struct uct_srq_tm_slot {
    uct_tag_context_t   *ctx;     /* NULL: free, or cancelled by force */
    void                *buffer;  /* its key in tm->bufs (while ctx is set) */
    size_t               length;
    uct_tag_t            tag;     /* as posted */
    uct_tag_t            stag;    /* the sender's, from the match */
    uint32_t             app_ctx; /* the sender's TMH's, from the match */
    uint32_t             handle;  /* the device's, from IBV_WR_TAG_ADD */
    uint16_t             gen;     /* in the wr_id: a late completion of a
                                     slot since reused is not its own */
    uint8_t              flags;   /* UCT_SRQ_TM_SLOT_* */
} uct_srq_tm_slot_t;

/* A rendezvous send waiting for the receiver's FIN (uct_ep_tag_rndv_zcopy) */
typedef struct uct_srq_tm_rndv {
    uct_completion_t    *comp;    /* NULL: free */
    void                *conn;    /* uct_srq_conn_t it was sent on */
    uint32_t             app_ctx; /* in its TMH and FIN: the index, plus a
                                     multiple of the table's size that
                                     tells a late FIN from the next user's */
} uct_srq_tm_rndv_t;

KHASH_INIT(uct_srq_tm_bufs, uintptr_t, char, 0, kh_int64_hash_func,
           kh_int64_hash_equal);

typedef struct uct_srq_tm {
    int                  enabled;
    struct ibv_cq_ex    *cq;          /* the receive CQ, read with TM info */
    uct_srq_tm_slot_t   *slots;
    unsigned             num_slots;   /* the list's size */
    unsigned             num_tags;    /* slots the device may still use */
    unsigned             max_ops;     /* list operations not yet completed */
    unsigned             ops;
    uint32_t             unexp_cnt;   /* unexpected messages polled */
    uint32_t             unexp_synced; /* ... as last told to the device */
    size_t               max_rndv_hdr; /* the device's, headers included */
    khash_t(uct_srq_tm_bufs) bufs;    /* buffers in the list */
    uct_srq_tm_rndv_t   *rndv;
    unsigned             rndv_next;   /* where to look for a free one */
    unsigned             rndv_used;
    uint32_t             rndv_seq;
    struct {
        uct_tag_unexp_eager_cb_t cb;
        void                    *arg;
    } eager_unexp;
    struct {
        uct_tag_unexp_rndv_cb_t  cb;
        void                    *arg;
    } rndv_unexp;
    struct {
        uint64_t         matched;     /* receives the device matched */
        uint64_t         unexp;       /* tagged messages it did not */
        uint64_t         rndv_read;   /* rendezvous data it read itself */
        uint64_t         sw_rndv;     /* software rendezvous requests */
        uint64_t         fin;         /* FINs of our rendezvous sends */
        uint64_t         list_add, list_del, sync;
    } stats;
} uct_srq_tm_t;


/* ---- the interface (srq_iface.c) ---- */

typedef struct uct_srq_iface_config {
    uct_iface_config_t  super;
    unsigned            tx_queue_len;  /* send queue length of a QP */
    unsigned            tx_moderation; /* one signaled send WR in so many */
    unsigned            tx_cq_len;     /* send CQ length */
    unsigned            tx_max_bufs;   /* send descriptors, at most */
    unsigned            tx_bufs_grow;  /* send descriptors per pool chunk */
    size_t              seg_size;      /* bcopy/receive segment size */
    size_t              max_inline;    /* inline data of a send */
    uct_srq_rx_config_t rx;
    uct_srq_hs_config_t hs;
    unsigned            rnr_timer;     /* min_rnr_timer code */
    unsigned            timeout;       /* local ack timeout code */
    char               *counters_file; /* append counters here at close */
    int                 tm_enable;     /* ucs_ternary_auto_value_t */
    unsigned            tm_list_size;
} uct_srq_iface_config_t;

typedef struct uct_srq_iface {
    uct_base_iface_t          super;
    srq_verbs_dev_t          *dev;
    struct ibv_pd            *pd;
    uint8_t                   port_num;
    srq_verbs_port_addr_t     port_addr;
    struct ibv_device_attr    dev_attr;
    struct ibv_port_attr      port_attr;
    struct ibv_comp_channel  *channel;
    struct ibv_cq            *send_cq;
    struct ibv_cq            *recv_cq;
    int                       event_fd; /* what a sleeper waits on: an epoll
                                           set of the channel, the timer and
                                           the handshake's wake_fd */
    int                       timer_fd; /* the handshake's next deadline */
    ucs_time_t                timer_due; /* what it is set to (0: not known,
                                            UCS_TIME_INFINITY: nothing) */
    uct_srq_rx_t              rx;       /* the shared receive queue */
    uct_srq_hs_t              hs;       /* connections and their handshake */
    uct_srq_tm_t              tm;       /* tag matching by the device */
    ucs_mpool_t               tx_mp;    /* registered send descriptors */
    ucs_mpool_t               op_mp;    /* completion records */
    ucs_arbiter_t             arbiter;  /* endpoints with pending requests */
    int                       tx_cq_avail;
    unsigned                  tx_outstanding; /* WRs posted, not completed */
    unsigned                  tx_poll_skips;  /* progress calls since the
                                                 send CQ was last polled */
    unsigned long             progress_calls; /* read by the async thread:
                                                 is the owner progressing? */
    struct {
        uint64_t              retired;  /* send WRs completed or dropped:
                                           with tx_outstanding, the WRs
                                           posted (nothing counted per post) */
        uint64_t              completions; /* send CQ entries of QP WRs */
        uint64_t              atomics;  /* IB atomic WRs posted */
        uint64_t              atomic_retries; /* compare-and-swaps that
                                           found another value */
    } tx_stats;
    char                     *counters_file;
    struct {
        unsigned              tx_queue_len;
        unsigned              tx_moderation;
        int                   tx_cq_len;
        size_t                seg_size;
        size_t                max_inline;
        unsigned              max_send_sge;
        unsigned              rnr_timer;
        unsigned              timeout;
        int                   atomics;  /* the device executes IB atomics */
    } config;
} uct_srq_iface_t;

/* Address of an interface, next to its device address */
typedef struct uct_srq_iface_addr {
    uint32_t  ud_qpn;   /* handshake QP, little endian */
    uint8_t   flags;    /* UCT_SRQ_IFACE_ADDR_FLAG_* */
} UCS_S_PACKED uct_srq_iface_addr_t;

/* Its messages start with a TMH (tag-matching offload, srq_tm.h) */
#define UCT_SRQ_IFACE_ADDR_FLAG_TM  UCS_BIT(0)


#endif
