/*
 * ucx-srq: connections. At most one RC connection per pair of interfaces,
 * shared by all endpoints between them on both sides, set up in-band by a
 * handshake over each interface's UD QP (REQ -> REP -> RTU), which survives
 * lost and duplicated datagrams and simultaneous connects.
 *
 * Sends are accepted from the moment an endpoint exists: while the
 * handshake runs they wait in the connection, in order, counted against its
 * send slots as if posted, and go out when it is up. A connection whose
 * peer is gone (a send failed, the peer closed its interface, the handshake
 * timed out) fails; its endpoints learn it through the error handler at
 * once if traffic was under way, else when they next send or check.
 */
#ifndef UCT_SRQ_CONN_H_
#define UCT_SRQ_CONN_H_

#include "srq_rx.h"

#include <verbs/srq_verbs.h>
#include <uct/api/uct.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/time/time.h>
#include <ucs/sys/math.h>
#include <ucs/debug/log_def.h>

#include <pthread.h>
#include <string.h>

typedef struct uct_srq_iface uct_srq_iface_t;

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
    int                   fail_reported; /* its endpoints were told */
    int                   fail_deferred; /* failed in the async thread: the
                                            owner's progress fails it */
    int                   drain_pending; /* failed with an unsignaled tail:
                                            a marker is to be posted */
    uint32_t              ka_sn;        /* sn_posted at the last idle check */
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
                                             was last read */
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

extern ucs_config_field_t uct_srq_hs_config_table[];

/* Check the handshake configuration, before anything is created */
ucs_status_t uct_srq_hs_check_config(const uct_srq_hs_config_t *config);

ucs_status_t uct_srq_hs_init(uct_srq_hs_t *hs, uct_srq_iface_t *iface,
                             const uct_srq_hs_config_t *config,
                             const uct_srq_conn_hooks_t *hooks);
void uct_srq_hs_cleanup(uct_srq_hs_t *hs, uct_srq_iface_t *iface);

/* The connection to a peer interface: an existing one, or a new one whose
 * handshake starts now */
ucs_status_t uct_srq_hs_get_conn(uct_srq_iface_t *iface,
                                 const uct_srq_conn_key_t *key,
                                 uct_srq_conn_t **conn_p);

/* Progress calls between looks at the clock when nothing else needs the
 * handshake's progress */
#define UCT_SRQ_HS_POLLS_PER_LOOK 1024

/* Take handshake datagrams, retransmit and time out handshakes, report
 * and free failed connections, probe idle connections no endpoint uses:
 * while handshakes run, failed connections remain or the async thread left
 * work, and every UCT_SRQ_HS_POLLS_PER_LOOK calls */
void uct_srq_hs_progress(uct_srq_iface_t *iface);

/* Does the handshake need the owner's progress now? (read without the
 * lock: a stale answer costs one call, or one call later) */
static inline int uct_srq_hs_wants_progress(uct_srq_hs_t *hs)
{
    return !ucs_list_is_empty(&hs->connecting) ||
           !ucs_list_is_empty(&hs->dead) ||
           __atomic_load_n(&hs->async_left, __ATOMIC_RELAXED) ||
           (++hs->polls >= UCT_SRQ_HS_POLLS_PER_LOOK);
}

/* Set IBV_SEND_FENCE on the next WR of every connection */
void uct_srq_hs_fence(uct_srq_iface_t *iface);

/* A flush of @conn waits for its last WR: if that one is not signaled,
 * post a signaled no-op behind it (as UCX's rc_verbs) */
ucs_status_t uct_srq_conn_signal_tail(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn);

/* ... of every connection (the send descriptors run out, the interface is
 * flushed) */
void uct_srq_hs_signal_tails(uct_srq_iface_t *iface);

/* The async thread's looks (ASYNC_INTERVAL), from when the interface is
 * complete until it starts to go */
void uct_srq_hs_async_start(uct_srq_iface_t *iface);
void uct_srq_hs_async_stop(uct_srq_iface_t *iface);

/* A send failed on the connection: fail its operations, tell its
 * endpoints now */
void uct_srq_conn_fail(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                       ucs_status_t status, const char *reason);

/* Keep @wr (with its scatter list and inline data) until @conn is up;
 * UCS_ERR_NO_MEMORY if it cannot */
ucs_status_t uct_srq_conn_queue_wr(uct_srq_conn_t *conn,
                                   const struct ibv_send_wr *wr, void *owner);

/* @owner (an endpoint) is going: complete its operations as canceled now,
 * and turn its WRs still waiting for the connection into no-ops */
void uct_srq_conn_cancel(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                         void *owner);

static inline int uct_srq_conn_is_connecting(const uct_srq_conn_t *conn)
{
    return conn->state < UCT_SRQ_CONN_CONNECTED;
}

/* May an endpoint of @conn send (now, or queued until it is up)? Not once
 * it failed and its endpoints were told */
static inline int uct_srq_conn_accepts_tx(const uct_srq_conn_t *conn)
{
    return !conn->fail_reported;
}

/*
 * A send WR's wr_id: its connection, and in the top 16 bits the low bits of
 * its sequence number (sn_posted once it is counted). Sends are signaled
 * one in TX_CQ_MODERATION (selective signaling, as UCX's rc_verbs): a
 * completion retires every WR of its connection up to its own. A
 * connection's WRs in flight are fewer than 2^16 (TX_QUEUE_LEN), and user
 * space pointers fit in 48 bits (checked when a connection is made).
 */
#define UCT_SRQ_WRID_SN_SHIFT   48
#define UCT_SRQ_WRID_CONN_MASK  ((UINT64_C(1) << UCT_SRQ_WRID_SN_SHIFT) - 1)

static UCS_F_ALWAYS_INLINE uint64_t
uct_srq_conn_wr_id(const uct_srq_conn_t *conn, uint32_t sn)
{
    return (uintptr_t)conn | ((uint64_t)(uint16_t)sn << UCT_SRQ_WRID_SN_SHIFT);
}

static UCS_F_ALWAYS_INLINE uct_srq_conn_t *uct_srq_wr_id_conn(uint64_t wr_id)
{
    return (uct_srq_conn_t*)(uintptr_t)(wr_id & UCT_SRQ_WRID_CONN_MASK);
}

/* A marker: a signaled zero-length RDMA write, which touches no memory and
 * needs no key; its completion retires the WRs before it (an unsignaled
 * tail a flush waits for, or a failed QP's) */
static inline void uct_srq_conn_marker_wr(struct ibv_send_wr *wr)
{
    memset(wr, 0, sizeof(*wr));
    wr->opcode     = IBV_WR_RDMA_WRITE;
    wr->send_flags = IBV_SEND_SIGNALED;
}

/* WRs of @conn a completion with @wr_id retires: up to and including it */
static UCS_F_ALWAYS_INLINE unsigned
uct_srq_conn_wr_id_count(const uct_srq_conn_t *conn, uint64_t wr_id)
{
    return (uint16_t)((wr_id >> UCT_SRQ_WRID_SN_SHIFT) - conn->sn_done);
}

/* Complete every operation of @conn up to its completed WR count */
static UCS_F_ALWAYS_INLINE void
uct_srq_conn_complete_ops(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                          ucs_status_t status)
{
    uct_srq_op_t *op;

    ucs_queue_for_each_extract(op, &conn->ops, queue,
                               UCS_CIRCULAR_COMPARE32(op->sn, <, conn->sn_done)) {
        op->cb(iface, op, ucs_likely(op->owner != NULL) ? status :
                                                         UCS_ERR_CANCELED);
    }
}

/* A send completion of a connection's QP, retiring @count WRs: the
 * operations up to it done, then their send slots back; an error fails the
 * connection */
static UCS_F_ALWAYS_INLINE void
uct_srq_conn_tx_complete(uct_srq_iface_t *iface, uct_srq_hs_t *hs,
                         uct_srq_conn_t *conn, const struct ibv_wc *wc,
                         unsigned count)
{
    conn->sn_done += count;

    /* as UCX's rc transports, completion callbacks run before the slot
     * comes back: a send they make cannot overtake a pending request */
    if (ucs_likely(wc->status == IBV_WC_SUCCESS)) {
        uct_srq_conn_complete_ops(iface, conn, UCS_OK);
    } else {
        if (conn->state != UCT_SRQ_CONN_FAILED) {
            uct_srq_conn_fail(iface, conn,
                              (wc->status == IBV_WC_REM_ACCESS_ERR) ?
                              UCS_ERR_INVALID_ADDR : UCS_ERR_ENDPOINT_TIMEOUT,
                              ibv_wc_status_str(wc->status));
        }
        uct_srq_conn_complete_ops(iface, conn, UCS_ERR_ENDPOINT_TIMEOUT);
    }

    conn->tx_avail += count;
    if (ucs_unlikely(conn->pending_desched)) {
        /* endpoints that ran out of send slots may go on */
        conn->pending_desched = 0;
        hs->hooks->tx_resumed(iface, conn);
    }
}

#endif
