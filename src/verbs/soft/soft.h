/*
 * ucx-srq soft device: a userspace HCA for machines without RDMA hardware
 * or kernel RDMA support. Processes of one host talk through shared memory
 * (packets) and cross-memory attach (one-sided RDMA). Its objects are real
 * struct ibv_context/ibv_qp/ibv_srq/ibv_cq, and it fills context->ops so
 * that the standard inline data-path verbs reach it.
 *
 * Internal header shared by the soft/ sources:
 *   soft_device.c  open/close, queries, the ops table, srq_soft.h calls
 *   soft_shm.c     shared segments, owner identity/liveness, wake FIFO
 *   soft_ring.c    the per-instance inbound packet queue and its lock
 *   soft_peer.c    other instances we talk to; peer death
 *   soft_mr.c      memory regions (key table in the segment)
 *   soft_cq.c      CQs and completion channels
 *   soft_srq.c     SRQs (mlx5 linked-list ring), soft_srq_ring.c: ring API
 *   soft_qp.c      QPs, state machine, address handles
 *   soft_async.c   asynchronous events
 * and the data path, the usual software-RDMA split:
 *   soft_post.c    post-time checks of the data-path verbs
 *   soft_req.c     requester: send WQEs -> packets, one-sided CMA
 *   soft_resp.c    responder: inbound packets -> receive WQEs, ACK/NAK
 *   soft_comp.c    completer: ACK/NAK -> send completions, flush
 *   soft_progress.c  the progress engine (drives all of the above)
 */
#ifndef SRQ_SOFT_H_
#define SRQ_SOFT_H_

#include "../srq_verbs_dev.h"
#include "../srq_verbs_ring.h"
#include "soft_shm.h"
#include "srq_soft.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define SRQ_SOFT_DEV_NAME      "soft0"
#define SRQ_SOFT_NUM_PORTS     1

/* Device limits, as ibv_query_device reports them */
#define SRQ_SOFT_MAX_QP        65536
#define SRQ_SOFT_MAX_QP_WR     16384
#define SRQ_SOFT_MAX_SGE       16
#define SRQ_SOFT_MAX_CQ        65536
#define SRQ_SOFT_MAX_CQE       (1 << 20)
#define SRQ_SOFT_MAX_MR        (SRQ_SOFT_MR_TABLE_SIZE - 1)
/* the soft device pins nothing: any range of the 47-bit user address space
 * can be registered (oshmem registers whole segments, terabytes under
 * AddressSanitizer's memory layout) */
#define SRQ_SOFT_MAX_MR_SIZE   (1ull << 47)
#define SRQ_SOFT_MAX_SRQ       4096
#define SRQ_SOFT_MAX_SRQ_WR    32767  /* wqe_cnt (pow2, +1 sentinel) <= 2^15 */
#define SRQ_SOFT_MAX_INLINE    1024
#define SRQ_SOFT_MTU           IBV_MTU_4096
#define SRQ_SOFT_MAX_MSG       (1u << 31)

/* The first four bytes of a soft port address's gid field */
#define SRQ_SOFT_ADDR_MAGIC    "soft"
#define SRQ_SOFT_INST_LEN      12

/* Progress tuning */
#define SRQ_SOFT_RX_BATCH      64        /* packets per progress call */
#define SRQ_SOFT_PEER_CHECK_NS 100000000ull  /* liveness check period */
#define SRQ_SOFT_TICK_NS       1000000ull    /* timer resolution */
#define SRQ_SOFT_TICK_CALLS    128  /* progress calls between clock reads */


/* ---- intrusive list --------------------------------------------------- */

typedef struct srq_soft_list {
    struct srq_soft_list *prev, *next;
} srq_soft_list_t;

static inline void srq_soft_list_init(srq_soft_list_t *l)
{
    l->prev = l->next = l;
}

static inline bool srq_soft_list_empty(const srq_soft_list_t *l)
{
    return l->next == l;
}

static inline bool srq_soft_list_linked(const srq_soft_list_t *e)
{
    return e->next != e;
}

static inline void srq_soft_list_add_tail(srq_soft_list_t *l,
                                          srq_soft_list_t *e)
{
    e->prev       = l->prev;
    e->next       = l;
    l->prev->next = e;
    l->prev       = e;
}

static inline void srq_soft_list_del(srq_soft_list_t *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    srq_soft_list_init(e);
}

/* Move all of @src to the empty @dst */
static inline void srq_soft_list_take(srq_soft_list_t *dst,
                                      srq_soft_list_t *src)
{
    if (srq_soft_list_empty(src)) {
        srq_soft_list_init(dst);
        return;
    }
    dst->next       = src->next;
    dst->prev       = src->prev;
    dst->next->prev = dst;
    dst->prev->next = dst;
    srq_soft_list_init(src);
}

#define srq_soft_container_of(_ptr, _type, _member) \
    ((_type*)((char*)(_ptr) - __builtin_offsetof(_type, _member)))


/* ---- objects ---------------------------------------------------------- */

typedef struct srq_soft_dev     srq_soft_dev_t;
typedef struct srq_soft_peer    srq_soft_peer_t;
typedef struct srq_soft_qp      srq_soft_qp_t;
typedef struct srq_soft_srq     srq_soft_srq_t;
typedef struct srq_soft_cq      srq_soft_cq_t;
typedef struct srq_soft_channel srq_soft_channel_t;

/* Another device instance (possibly ourselves) we send packets to */
struct srq_soft_peer {
    srq_soft_list_t  link;         /* dev->peers */
    srq_soft_list_t  busy_link;    /* dev->busy_peers */
    srq_soft_list_t  qps;          /* RC QPs connected to it */
    uint8_t          instance[SRQ_SOFT_INST_LEN];
    srq_soft_seg_t   seg;
    bool             is_self;
    bool             dead;
    pid_t            pid;
    uint64_t         start_time;
    int              refcnt;       /* RC QPs + AHs */
    int              fifo_fd;      /* write end of its wake FIFO, or -1 */
    unsigned         busy_qps;     /* QPs with outstanding send work */
    uint64_t         next_check_ns;
    uint64_t         cached_head;  /* its consumer's head, as last read */
};

typedef struct srq_soft_ah {
    struct ibv_ah     ibv;
    srq_soft_peer_t  *peer;
} srq_soft_ah_t;

typedef struct srq_soft_mr {
    struct ibv_mr  ibv;
    uint32_t       index;
} srq_soft_mr_t;

/* A completion as stored in the CQ: what the user gets, plus what polling
 * must give back to its queue (a receive buffer is the device's until its
 * completion is polled). */
typedef struct srq_soft_cqe {
    struct ibv_wc    wc;
    srq_soft_srq_t  *srq;      /* SRQ WQE to free on poll, or NULL */
    srq_soft_qp_t   *rq_qp;    /* RQ slot to free on poll, or NULL */
    uint16_t         srq_idx;
} srq_soft_cqe_t;

struct srq_soft_cq {
    struct ibv_cq        ibv;
    srq_soft_dev_t      *dev;
    srq_soft_cqe_t      *ring;
    uint32_t             size;     /* power of two */
    uint32_t             pi, ci;
    int                  armed;    /* 0, 1: next CQE, 2: next solicited */
    bool                 error;    /* overrun */
    srq_soft_list_t      ev_link;  /* channel->events */
    unsigned             events_delivered;
    unsigned             events_acked;
    int                  qp_refs;
    srq_soft_list_t      dev_link; /* dev->cqs */
};

struct srq_soft_channel {
    struct ibv_comp_channel  ibv;      /* ibv.fd: an epoll fd */
    srq_soft_dev_t          *dev;
    int                      efd;      /* eventfd: local CQ events */
    srq_soft_list_t          events;   /* CQs with a pending event */
    int                      refcnt;   /* CQs using it */
};

/* A shared receive queue: the mlx5 linked-list layout (srq_verbs_ring.h) */
struct srq_soft_srq {
    struct ibv_srq              ibv;
    srq_soft_dev_t             *dev;
    pthread_spinlock_t          lock;      /* free list: post vs. poll */
    uint8_t                    *buf;
    uint32_t                    stride;
    uint32_t                    wqe_cnt;
    uint32_t                    max_sge;
    uint32_t                    max_wr;    /* wqe_cnt - 1 */
    volatile uint32_t          *dbrec;
    srq_verbs_srq_ring_state_t  st;
    srq_verbs_srq_ring_t        ring;      /* describes the above */
    /* device side (under dev->lock) */
    uint16_t                    hw_next;     /* next WQE to consume */
    uint16_t                    hw_consumed; /* WQEs consumed, mod 2^16 */
    uint32_t                    limit;       /* armed limit, 0: disarmed */
    int                         qp_refs;
};

/* A send WQE */
typedef struct srq_soft_swqe {
    uint64_t             wr_id;
    enum ibv_wr_opcode   opcode;
    unsigned             send_flags;
    uint32_t             imm;
    uint32_t             num_sge;
    uint32_t             length;
    uint64_t             remote_addr;
    uint32_t             rkey;
    uint32_t             psn;
    uint8_t              state;       /* SRQ_SOFT_SWQE_* */
    bool                 write_done;  /* WRITE_IMM: data already written */
    bool                 is_inline;   /* data copied at post time */
    bool                 signaled;
    enum ibv_wc_status   status;      /* when state == DONE */
    srq_soft_peer_t     *ud_peer;     /* UD destination */
    uint32_t             ud_qpn;
    uint32_t             ud_qkey;
} srq_soft_swqe_t;

enum {
    SRQ_SOFT_SWQE_POSTED = 0,  /* not transmitted yet */
    SRQ_SOFT_SWQE_SENT   = 1,  /* in flight, waiting for ACK */
    SRQ_SOFT_SWQE_DONE   = 2   /* finished (status), completes in order */
};

/* A receive WQE of a QP's own receive queue */
typedef struct srq_soft_rwqe {
    uint64_t  wr_id;
    uint32_t  num_sge;
} srq_soft_rwqe_t;

enum {
    SRQ_SOFT_WAIT_NONE  = 0,
    SRQ_SOFT_WAIT_RNR   = 1,   /* resend after the RNR timer */
    SRQ_SOFT_WAIT_RETRY = 2    /* resend after the transport timeout */
};

struct srq_soft_qp {
    struct ibv_qp        ibv;
    srq_soft_dev_t      *dev;
    uint32_t             index;
    struct ibv_qp_cap    cap;
    bool                 sq_sig_all;
    struct ibv_qp_attr   attr;       /* as last modified, for query */
    int                  attr_mask;  /* attributes ever set */
    srq_soft_peer_t     *peer;       /* RC: connected peer (from RTR) */
    srq_soft_list_t      peer_link;  /* peer->qps */
    srq_soft_list_t      ack_link;   /* dev->ack_qps: ACK/NAK to send */
    srq_soft_list_t      sched_link; /* dev->sched_qps: tx work waiting */
    srq_soft_list_t      busy_link;  /* dev->busy_qps: send work pending */

    /* requester: WQEs in [sq_ci, sq_pi), transmitted up to sq_tx */
    srq_soft_swqe_t     *sq;
    struct ibv_sge      *sq_sge;     /* max_send_sge per WQE */
    uint8_t             *sq_inline;  /* max_inline_data per WQE */
    uint32_t             sq_mask;
    uint32_t             sq_pi, sq_tx, sq_ci;
    uint32_t             next_psn;
    int                  wait;       /* SRQ_SOFT_WAIT_* */
    uint64_t             wait_until;
    uint64_t             tx_time;    /* oldest unacked transmission, 0:
                                        not known yet (set on a tick) */
    uint64_t             tx_pos;     /* the peer's ring position after our
                                        last packet: consumed once its
                                        head is there */
    int                  rnr_left;
    int                  retry_left;
    bool                 busy;       /* counted in peer->busy_qps */

    /* responder */
    uint32_t             epsn;
    bool                 ack_pending;
    uint8_t              nak;        /* SRQ_SOFT_NAK_* to send, 0: ACK */
    uint32_t             nak_psn;

    /* own receive queue: posted [rq_ci, rq_pi), consumed up to rq_hw */
    srq_soft_rwqe_t     *rq;
    struct ibv_sge      *rq_sge;
    uint32_t             rq_mask;
    uint32_t             rq_pi, rq_hw, rq_ci;
};

/* A pending asynchronous event */
typedef struct srq_soft_async_ev {
    struct ibv_async_event     ev;
    struct srq_soft_async_ev  *next;
} srq_soft_async_ev_t;

struct srq_soft_dev {
    srq_verbs_dev_t     super;
    struct ibv_context  ibv_ctx;      /* what ibv_* data-path calls see */
    struct ibv_device  *ibv_dev;      /* a fake device object for ctx->device */
    uint8_t             instance[SRQ_SOFT_INST_LEN]; /* unique id */
    pid_t               pid;
    uint64_t            start_time;
    uint64_t            lock_id;      /* what we write in a queue's lock */

    /* everything below is under lock, unless said otherwise. A spinlock:
     * it is taken on every poll, and never held across a sleep */
    pthread_spinlock_t  lock;

    /* own segment */
    char                shm_name[64];
    srq_soft_seg_t      seg;
    uint64_t            rx_head;      /* consumer position (private copy) */
    unsigned            rx_idle_polls;
    srq_soft_peer_t     self;         /* loopback peer: our own segment */

    /* wakeups: a FIFO peers poke when we asked (seg.hdr->wake_req) */
    char                fifo_path[116]; /* = srq_soft_shm_hdr_t.fifo_path */
    int                 fifo_fd;      /* O_RDWR: never sees EOF */
    bool                wake_armed;   /* we set wake_req, may need drain */
    int                 timer_fd;     /* timers while the user sleeps */

    /* MR keys: generation per table index, free index stack */
    uint16_t           *mr_gen;
    uint32_t           *mr_free;
    uint32_t            mr_free_cnt;

    /* QPs by index (qpn = gen << 16 | index) */
    srq_soft_qp_t     **qps;
    uint8_t            *qp_gen;
    uint32_t            qp_tab_size;
    uint32_t            qp_next;      /* never used slots start here */
    uint32_t           *qp_free;
    uint32_t            qp_free_cnt;

    srq_soft_list_t     peers;
    srq_soft_list_t     cqs;
    srq_soft_list_t     busy_peers;   /* peers we have outstanding work to */
    srq_soft_list_t     busy_qps;     /* QPs with outstanding send work */
    srq_soft_list_t     ack_qps;
    srq_soft_list_t     sched_qps;
    uint64_t            next_tick_ns;
    unsigned            tick_calls;   /* progress calls since a clock read */

    /* async events (own lock: read by the user without dev->lock) */
    pthread_mutex_t      async_lock;
    srq_soft_async_ev_t *async_head, *async_tail;
    int                  async_efd;

    srq_soft_stats_t    stats;

    /* srq_soft_test_fail_post: wr_index << 32 | (uint32_t)err, 0: none.
     * Atomic, without dev->lock: the SRQ post path does not take it */
    _Atomic uint64_t    fail_post;
};

static inline srq_soft_dev_t *srq_soft_dev(srq_verbs_dev_t *dev)
{
    return (srq_soft_dev_t*)dev;
}

static inline void srq_soft_dev_lock(srq_soft_dev_t *dev)
{
    pthread_spin_lock(&dev->lock);
}

static inline void srq_soft_dev_unlock(srq_soft_dev_t *dev)
{
    pthread_spin_unlock(&dev->lock);
}

static inline srq_soft_dev_t *srq_soft_ctx_dev(struct ibv_context *ctx)
{
    return srq_soft_container_of(ctx, srq_soft_dev_t, ibv_ctx);
}

static inline srq_soft_qp_t *srq_soft_qp(struct ibv_qp *qp)
{
    return srq_soft_container_of(qp, srq_soft_qp_t, ibv);
}

static inline srq_soft_cq_t *srq_soft_cq(struct ibv_cq *cq)
{
    return srq_soft_container_of(cq, srq_soft_cq_t, ibv);
}

static inline srq_soft_srq_t *srq_soft_srq(struct ibv_srq *srq)
{
    return srq_soft_container_of(srq, srq_soft_srq_t, ibv);
}

static inline bool srq_soft_owns(srq_soft_dev_t *dev, struct ibv_context *ctx)
{
    return ctx == &dev->ibv_ctx;
}

/*
 * A statistic also read without dev->lock (srq_verbs_query_rnr): writers
 * hold the lock, so a relaxed load + store is a race-free increment (no
 * locked read-modify-write), and a relaxed load never sees a torn value.
 */
static inline void srq_soft_stat_inc_shared(uint64_t *stat)
{
    _Atomic uint64_t *a = (_Atomic uint64_t*)stat;

    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline uint64_t srq_soft_stat_read_shared(const uint64_t *stat)
{
    return atomic_load_explicit((_Atomic uint64_t*)stat, memory_order_relaxed);
}

/* 24-bit PSN arithmetic */
static inline uint32_t srq_soft_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & 0xffffffu;
}

static inline int32_t srq_soft_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

uint64_t srq_soft_now_ns(void);


/* ---- soft_shm.c: segments, identity, liveness ------------------------- */
int  srq_soft_proc_start_time(pid_t pid, uint64_t *start_p);
/* processes with the same value can reach each other's instances */
uint32_t srq_soft_domain_id(void);
bool srq_soft_owner_alive(pid_t pid, uint64_t start_time);
void srq_soft_shm_name(const uint8_t *instance, char *buf, size_t len);
int  srq_soft_shm_create(srq_soft_dev_t *dev);
void srq_soft_shm_destroy(srq_soft_dev_t *dev);
int  srq_soft_shm_map_peer(const uint8_t *instance, srq_soft_seg_t *seg);
void srq_soft_shm_unmap(srq_soft_seg_t *seg);
void srq_soft_shm_reclaim_stale(srq_soft_dev_t *dev);
int  srq_soft_shm_reclaim_one(const char *name, srq_soft_dev_t *dev);
int  srq_soft_fifo_create(srq_soft_dev_t *dev);
void srq_soft_fifo_destroy(srq_soft_dev_t *dev);

/* ---- soft_ring.c: the inbound packet queue ---------------------------- */
typedef struct srq_soft_tx {
    srq_soft_peer_t  *peer;
    srq_soft_pkt_t   *pkt;       /* where to write the frame */
    uint64_t          end;       /* tail after this frame */
} srq_soft_tx_t;

int  srq_soft_ring_reserve(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                           uint32_t frame_len, srq_soft_tx_t *tx);
void srq_soft_ring_commit(srq_soft_dev_t *dev, srq_soft_tx_t *tx);
unsigned srq_soft_ring_drain(srq_soft_dev_t *dev, unsigned max);
uint64_t srq_soft_lock_id(pid_t pid, uint64_t start_time);
int  srq_soft_ring_lock(srq_soft_dev_t *dev, srq_soft_shm_hdr_t *hdr);
void srq_soft_ring_unlock(srq_soft_shm_hdr_t *hdr);
int  srq_soft_ring_push_raw(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                            const void *buf, size_t len, bool scribble);
bool srq_soft_ring_empty(srq_soft_dev_t *dev);

/* ---- soft_peer.c ------------------------------------------------------ */
srq_soft_peer_t *srq_soft_peer_get(srq_soft_dev_t *dev,
                                   const uint8_t *instance);
void srq_soft_peer_put(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
bool srq_soft_peer_check(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
void srq_soft_peer_dead(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
void srq_soft_peer_busy(srq_soft_dev_t *dev, srq_soft_qp_t *qp, bool busy);
void srq_soft_peer_wake(srq_soft_peer_t *peer);
void srq_soft_peers_destroy(srq_soft_dev_t *dev);

/* ---- soft_mr.c -------------------------------------------------------- */
int  srq_soft_mr_init(srq_soft_dev_t *dev);
void srq_soft_mr_cleanup(srq_soft_dev_t *dev);
struct ibv_mr *srq_soft_reg_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                               void *addr, size_t length, int access);
int  srq_soft_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr);
/* 0 or an IBV_WC_* error status */
int  srq_soft_mr_check(const srq_soft_seg_t *seg, uint32_t key, uint64_t addr,
                       uint64_t len, int access);

/* ---- soft_cq.c -------------------------------------------------------- */
struct ibv_comp_channel *srq_soft_create_comp_channel(srq_verbs_dev_t *dev);
int  srq_soft_destroy_comp_channel(srq_verbs_dev_t *dev,
                                   struct ibv_comp_channel *channel);
struct ibv_cq *srq_soft_create_cq(srq_verbs_dev_t *dev, int cqe,
                                  void *cq_context,
                                  struct ibv_comp_channel *channel,
                                  int comp_vector);
int  srq_soft_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq);
int  srq_soft_get_cq_event(srq_verbs_dev_t *dev,
                           struct ibv_comp_channel *channel,
                           struct ibv_cq **cq_p, void **cq_context_p);
void srq_soft_ack_cq_events(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                            unsigned nevents);
int  srq_soft_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
int  srq_soft_req_notify_cq(struct ibv_cq *cq, int solicited);
srq_soft_cqe_t *srq_soft_cq_push(srq_soft_cq_t *cq, bool solicited);
void srq_soft_cq_forget_qp(srq_soft_cq_t *cq, srq_soft_qp_t *qp);
void srq_soft_cq_forget_srq(srq_soft_cq_t *cq, srq_soft_srq_t *srq);

/* ---- soft_srq.c ------------------------------------------------------- */
struct ibv_srq *srq_soft_create_srq(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    struct ibv_srq_init_attr *attr);
int  srq_soft_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                         struct ibv_srq_attr *attr, int attr_mask);
int  srq_soft_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                        struct ibv_srq_attr *attr);
int  srq_soft_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq);
int  srq_soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                            struct ibv_recv_wr **bad_wr);
int  srq_soft_srq_ring(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                       srq_verbs_srq_ring_t *ring);
/* Device side: the next posted WQE, or NULL */
void *srq_soft_srq_peek(srq_soft_srq_t *srq, uint16_t *idx_p);
void srq_soft_srq_consume(srq_soft_srq_t *srq);
void srq_soft_srq_free_wqe(srq_soft_srq_t *srq, uint16_t idx);

/* ---- soft_qp.c -------------------------------------------------------- */
struct ibv_qp *srq_soft_create_qp(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_qp_init_attr *attr);
int  srq_soft_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                        struct ibv_qp_attr *attr, int attr_mask);
int  srq_soft_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                       struct ibv_qp_attr *attr, int attr_mask,
                       struct ibv_qp_init_attr *init_attr);
int  srq_soft_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp);
struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr);
int  srq_soft_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah);
srq_soft_qp_t *srq_soft_qp_lookup(srq_soft_dev_t *dev, uint32_t qpn);
int  srq_soft_qp_table_init(srq_soft_dev_t *dev);
void srq_soft_qp_table_cleanup(srq_soft_dev_t *dev);
void srq_soft_qp_to_error(srq_soft_qp_t *qp);
uint64_t srq_soft_rnr_timer_ns(uint8_t code);
uint64_t srq_soft_timeout_ns(uint8_t code);

/* ---- soft_post.c ------------------------------------------------------ */
int  srq_soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                        struct ibv_send_wr **bad_wr);
int  srq_soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad_wr);
bool srq_soft_post_fault(srq_soft_dev_t *dev, const struct ibv_recv_wr *wr,
                         unsigned *index_p, int *err_p);

/* ---- soft_req.c: requester -------------------------------------------- */
void srq_soft_req_progress(srq_soft_qp_t *qp);
void srq_soft_req_sched(srq_soft_qp_t *qp);

/* ---- soft_resp.c: responder ------------------------------------------- */
void srq_soft_resp_packet(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                          const uint8_t *payload);
void srq_soft_resp_send_acks(srq_soft_dev_t *dev);

/* ---- soft_comp.c: completer ------------------------------------------- */
void srq_soft_comp_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt);
void srq_soft_comp_sq(srq_soft_qp_t *qp);
void srq_soft_comp_swqe_error(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                              enum ibv_wc_status status);
void srq_soft_comp_flush(srq_soft_qp_t *qp);

/* ---- soft_async.c ----------------------------------------------------- */
int  srq_soft_async_init(srq_soft_dev_t *dev);
void srq_soft_async_cleanup(srq_soft_dev_t *dev);
void srq_soft_async_raise(srq_soft_dev_t *dev, enum ibv_event_type type,
                          void *element);
int  srq_soft_async_fd(srq_verbs_dev_t *dev);
int  srq_soft_get_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);
void srq_soft_ack_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);

/* ---- soft_progress.c -------------------------------------------------- */
void srq_soft_progress(srq_soft_dev_t *dev);
void srq_soft_progress_acks(srq_soft_dev_t *dev);
void srq_soft_wake_arm(srq_soft_dev_t *dev);
void srq_soft_wake_drain(srq_soft_dev_t *dev);
void srq_soft_timer_update(srq_soft_dev_t *dev);

#endif
