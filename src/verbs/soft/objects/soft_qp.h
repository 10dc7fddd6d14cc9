/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: queue pairs (RC, UD): the object, its send and
 * receive queues, and the table that finds a QP by number.
 */
#ifndef SRQ_SOFT_QP_H_
#define SRQ_SOFT_QP_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_lock.h"
#include "../fabric/soft_shm.h"
#include "soft_qbuf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_peer srq_soft_peer_t;
typedef struct srq_soft_qp   srq_soft_qp_t;

/* ---- the responder's per-QP results of atomics and READs: soft_atomic.c
 * keeps them, the QP owns and frees them (as rxe's QP holds its
 * responder's resources) ---- */

/* Atomics in flight per QP (max_rd_atomic, max_dest_rd_atomic); also the
 * depth of the responder's replay cache */
#define SRQ_SOFT_MAX_RD_ATOMIC 16

/* The result of one executed atomic, or of a READ, as the responder keeps
 * it. A READ's data is kept only until it is sent (a duplicate READ is
 * executed again, as IB allows): then the entry is no longer valid */
typedef struct srq_soft_atomic_res {
    uint64_t  orig;    /* the value before the operation */
    bool      read;    /* a READ's answer, not an atomic's */
    uint8_t  *data;    /* READ: a copy of the data read (malloc), or NULL:
                          answered without data (F_PULL) */
    uint32_t  len;     /* READ: its length */
    uint32_t  psn;
    bool      valid;
} srq_soft_atomic_res_t;

/* The responder's state: the last SRQ_SOFT_MAX_RD_ATOMIC results, of which
 * [sent, next) are still to be sent (READs and atomics share the order of
 * their PSNs). Zeroed: empty; srq_soft_qp_free_atomics ends it */
typedef struct srq_soft_atomic_cache {
    srq_soft_atomic_res_t  res[SRQ_SOFT_MAX_RD_ATOMIC];
    uint32_t               next;
    uint32_t               sent;
} srq_soft_atomic_cache_t;

/* A send WQE */
typedef struct srq_soft_swqe {
    uint64_t             wr_id;
    enum ibv_wr_opcode   opcode;
    unsigned             send_flags;
    uint32_t             imm;
    uint32_t             num_sge;
    uint32_t             length;
    uint64_t             remote_addr;
    uint64_t             compare_add; /* atomics: compare (CMP_SWAP), add */
    uint64_t             swap;
    uint32_t             rkey;
    uint32_t             psn;
    uint32_t             xrc_srqn;    /* XRC initiator: the remote SRQ */
    uint8_t              state;       /* SRQ_SOFT_SWQE_* */
    bool                 write_done;  /* WRITE_IMM: data already written */
    bool                 by_responder; /* WRITE/READ sent as a request the
                                          responder executes (it went out
                                          behind unacknowledged WQEs): so
                                          for good, retransmissions too */
    bool                 is_inline;   /* data copied at post time */
    bool                 signaled;
    bool                 fresh;       /* in the ibv_post_send that is
                                         posting it: its buffer was just
                                         given, memcpy reads it */
    bool                 tm_fin;      /* the device's own: a rendezvous
                                         FIN (soft_tm_rndv.c), its TMH's
                                         tag in compare_add, app_ctx in
                                         swap; no completion */
    enum ibv_wc_status   status;      /* when state == DONE */
    enum ibv_wc_status   post_error;  /* found at post time, reported as
                                         its completion at its turn, as
                                         an HCA's device finds it
                                         (soft_post.c); 0: none */
    srq_soft_peer_t     *ud_peer;     /* UD destination */
    uint32_t             ud_qpn;
    uint32_t             ud_qkey;
    uint8_t              ud_tclass;   /* the AH's traffic class */
    struct ibv_mw       *mw;          /* BIND_MW: the window (its new rkey
                                         in rkey); LOCAL_INV and
                                         SEND_WITH_INV: the rkey in imm */
    struct ibv_mw_bind_info bind;
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
    /* laid out as libibverbs lays out a provider's QP: its
     * ibv_qp_to_qp_ex() reads a mask past a struct ibv_qp_ex, which says
     * whether the QP has the ibv_wr_* API (soft_qp_ex.c) */
    union {
        struct ibv_qp    ibv;
        struct ibv_qp_ex ibv_ex;
    };
    uint32_t             ex_comp_mask; /* 0, or VERBS_QP_EX */
    struct ibv_xrcd     *ex_xrcd;      /* XRC target: its domain */
    int                 *xrcd_users;   /* ... the handle's count of users */
    /* XRC target, responder: the SRQ the request being served names
     * (soft_resp.c sets it; the receive WQE comes from it) */
    struct srq_soft_srq *xrc_srq;
    /* the PD requests to the QP are checked in: its own; an XRC
     * target's, that of the SRQ the request being served names */
    uint32_t             req_pd_id;
    bool                 posting_ex; /* ibv_wr_complete is posting (its
                                        operations ibv_post_send has not,
                                        atomic write) */
    struct srq_soft_wr_batch *wr_batch; /* the ibv_wr_* API's WRs, NULL
                                           unless created with it */
    /* frees wr_batch when the QP goes: soft_qp_ex.c's, given here so
     * that the QP needs nothing of the layer above it */
    void               (*wr_batch_free)(srq_soft_qp_t *qp);
    srq_soft_dev_t      *dev;
    uint32_t             index;
    enum ibv_qp_state    state;      /* the device's (written under
                                        dev->lock by srq_soft_qp_set_state,
                                        read without it by a post of a
                                        receive); ibv.state is what
                                        modify/query last told the program */
    struct ibv_qp_cap    cap;
    bool                 sq_sig_all;
    struct ibv_qp_attr   attr;       /* as last modified, for query */
    int                  attr_mask;  /* attributes ever set */
    srq_soft_peer_t     *peer;       /* RC: connected peer (from RTR) */
    srq_soft_list_t      peer_link;  /* peer->qps */
    srq_soft_list_t      ack_link;   /* dev->ack_qps: ACK/NAK to send */
    srq_soft_list_t      sched_link; /* dev->sched_qps: tx work waiting */
    srq_soft_list_t      busy_link;  /* dev->busy_qps: send work pending */

    /* requester: WQEs in [sq_ci, sq_pi), transmitted up to sq_tx; the
     * slots in [sq_free, sq_pi) are held (ENOMEM at max_send_wr): a slot
     * is free once a completion at or after it was polled, as on an HCA,
     * so that when a post finds the queue full does not depend on when
     * the device finished. sq_pi, sq_tx and sq_ci are the engine's
     * (dev->lock); the program's side is below (sq_lock) */
    srq_soft_swqe_t     *sq;
    struct ibv_sge      *sq_sge;     /* max_send_sge per WQE */
    uint8_t             *sq_inline;  /* max_inline_data per WQE */
    srq_soft_qbuf_t      sq_buf;     /* all three, at max_send_wr, when a
                                        parent domain's allocator gave
                                        them (else each its own calloc) */
    uint32_t             sq_mask;
    uint32_t             sq_pi, sq_tx, sq_ci, sq_free;
    uint32_t             next_psn;
    int                  wait;       /* SRQ_SOFT_WAIT_* */
    uint32_t             tm_fins;    /* FINs of ours in [sq_ci, sq_pi): room
                                        beyond max_send_wr (soft_tm_rndv.c);
                                        written under dev->lock, read by
                                        posts without it */
    /* The program's side of the send queue: ibv_post_send fills the
     * slots from sq_post under sq_lock alone and publishes sq_post in
     * sq_db, the doorbell record; the engine takes the WQEs up to it into
     * sq_pi (srq_soft_sq_absorb). A post that finds the device taken
     * rings the doorbell (db_next on dev->doorbells, db_rung) and returns;
     * whoever has the device takes it in (soft_doorbell.c). Resizing the
     * arrays takes both locks */
    srq_soft_lock_t      sq_lock;
    uint32_t             sq_post;
    uint32_t             sq_db;      /* atomic */
    bool                 db_rung;    /* atomic: on dev->doorbells */
    struct srq_soft_qp  *db_next;
    uint64_t             wait_until;
    uint64_t             tx_time;    /* oldest unacked transmission, 0:
                                        not known yet (set on a tick) */
    uint64_t             tx_pos;     /* the peer's ring position after our
                                        last packet: consumed once its
                                        head is there */
    uint64_t             tx_gen;     /* the peer's progress_gen when it
                                        was last seen not to have it */
    uint64_t             lock_busy_since; /* first time the peer's queue
                                        was found locked by another
                                        producer (or stuck full), 0: it
                                        was not */
    uint64_t             full_head;  /* the peer's head and progress_gen */
    uint64_t             full_gen;   /* when its queue was found full */
    bool                 full_seen;  /* ... since our last packet went */
    int                  rnr_left;
    uint8_t              rnr_streak; /* RNR NAKs in a row, no progress */
    bool                 rnr_probe;  /* after an RNR NAK: one WQE in
                                        flight until the peer takes it */
    int                  retry_left;
    bool                 busy;       /* counted in peer->busy_qps */
    bool                 revoking;   /* a destroy or a move to RESET/ERR
                                        waits for the device lock: the
                                        responder's chunked WRITE stops
                                        (atomic, set without the lock) */

    /* responder */
    bool                 tm;         /* on a TM SRQ: its SENDs are matched */
    uint32_t             epsn;
    bool                 comm_est;   /* IBV_EVENT_COMM_EST raised (RTR) */
    bool                 ack_pending;
    bool                 ack_defer;  /* a reply carried the last ACK: the
                                        next may wait one progress call
                                        for one (soft_resp.c) */
    uint64_t             ack_call;   /* the progress call it became owed
                                        in; 0: not to wait */
    uint64_t             rx_call;    /* ... the last request was taken in */
    uint8_t              nak;        /* SRQ_SOFT_NAK_* to send, 0: ACK */
    uint32_t             nak_psn;
    srq_soft_atomic_cache_t *atomic; /* results of the last atomics, from
                                        the first the QP served */

    /* own receive queue: posted [rq_ci, rq_pi), consumed up to rq_hw.
     * ibv_post_recv writes it under rq_lock alone (no device lock) and
     * publishes rq_pi, which the engine reads as an HCA its doorbell
     * record (srq_soft_qp_rq_posted); rq_ci is its CQ's (soft_cq.h) */
    srq_soft_rwqe_t     *rq;
    struct ibv_sge      *rq_sge;
    srq_soft_qbuf_t      rq_buf;     /* both, from a parent domain's
                                        allocator (as sq_buf) */
    uint32_t             rq_mask;
    srq_soft_lock_t      rq_lock;
    uint32_t             rq_pi, rq_hw, rq_ci;

    uint32_t             events_written; /* uverbs mode: to the async fd
                                            (dev->async_lock) */
};

static inline srq_soft_qp_t *srq_soft_qp(struct ibv_qp *qp)
{
    return srq_soft_container_of(qp, srq_soft_qp_t, ibv);
}

/* A destroy or reset of @qp is waiting for the device lock (@on), or has
 * it (!@on): read by the responder between chunks, without the lock */
static inline void srq_soft_qp_revoke(srq_soft_qp_t *qp, bool on)
{
    atomic_store_explicit((_Atomic bool*)&qp->revoking, on,
                          memory_order_seq_cst);
}

static inline bool srq_soft_qp_revoked(srq_soft_qp_t *qp)
{
    return atomic_load_explicit((_Atomic bool*)&qp->revoking,
                                memory_order_relaxed);
}

/* RC or UC: a QP connected to one other, PSNs, packets through the RC
 * requester and responder (UC: no ACK the program sees, no retry) */
static inline bool srq_soft_qp_is_conn(const srq_soft_qp_t *qp)
{
    return (qp->ibv.qp_type == IBV_QPT_RC) ||
           (qp->ibv.qp_type == IBV_QPT_UC) ||
           (qp->ibv.qp_type == IBV_QPT_XRC_SEND) ||
           (qp->ibv.qp_type == IBV_QPT_XRC_RECV);
}

/* XRC: an initiator is an RC requester only, a target an RC responder
 * only, whose receive WQEs come from the SRQ each request names */
static inline bool srq_soft_qp_is_xrc(const srq_soft_qp_t *qp)
{
    return (qp->ibv.qp_type == IBV_QPT_XRC_SEND) ||
           (qp->ibv.qp_type == IBV_QPT_XRC_RECV);
}

/* The operations of RC's requester (RC, XRC initiator) */
static inline bool srq_soft_qp_is_rc_req(const srq_soft_qp_t *qp)
{
    return (qp->ibv.qp_type == IBV_QPT_RC) ||
           (qp->ibv.qp_type == IBV_QPT_XRC_SEND);
}

static inline bool srq_soft_qp_is_uc(const srq_soft_qp_t *qp)
{
    return qp->ibv.qp_type == IBV_QPT_UC;
}

static inline bool srq_soft_swqe_is_atomic(const srq_soft_swqe_t *wqe)
{
    return (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
           (wqe->opcode == IBV_WR_ATOMIC_WRITE);
}

/* Done by the device itself, no packet (memory window operations) */
static inline bool srq_soft_swqe_is_local(const srq_soft_swqe_t *wqe)
{
    return (wqe->opcode == IBV_WR_BIND_MW) ||
           (wqe->opcode == IBV_WR_LOCAL_INV);
}

/* Completed by a response with data (ATOMIC_ACK, READ_RESP), never by a
 * plain ACK; counted against max_rd_atomic while in flight */
/* Does the WQE write its local list (READ, atomics) rather than read it? */
static inline bool srq_soft_swqe_scatters(const srq_soft_swqe_t *wqe)
{
    return (wqe->opcode == IBV_WR_RDMA_READ) ||
           ((wqe->opcode != IBV_WR_ATOMIC_WRITE) &&
            srq_soft_swqe_is_atomic(wqe));
}

static inline bool srq_soft_swqe_awaits_data(const srq_soft_swqe_t *wqe)
{
    return srq_soft_swqe_is_atomic(wqe) ||
           (wqe->by_responder && (wqe->opcode == IBV_WR_RDMA_READ));
}

/* The WQE's gather (scatter, for READ and atomics) list */
static inline struct ibv_sge *srq_soft_swqe_sge(srq_soft_qp_t *qp,
                                                const srq_soft_swqe_t *wqe)
{
    uint32_t nsge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;

    return qp->sq_sge + (size_t)(wqe - qp->sq) * nsge;
}

/* The inline data of @wqe, copied at post time */
static inline uint8_t *srq_soft_swqe_inline(srq_soft_qp_t *qp,
                                            const srq_soft_swqe_t *wqe)
{
    return qp->sq_inline + (size_t)(wqe - qp->sq) *
                           (qp->cap.max_inline_data + 1);
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

/* How a QP is created (srq_soft_create_qp_in, soft_qp_create.c): the
 * extended QP (soft_qp_ex.c) calls it through this */
typedef struct ibv_qp *(*srq_soft_qp_create_fn_t)(
        srq_verbs_dev_t *dev, struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
        struct ibv_xrcd *xrcd, int *xrcd_users);
int  srq_soft_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp);
/* For creation (soft_qp_create.c): enter @qp in the instance's table,
 * 0 or ENOMEM; the send queue's arrays for @slots WQEs, 0 or ENOMEM; free
 * a QP never published, or destroyed; take (@d 1) or drop (-1) the
 * references the QP holds on its PD, CQs, SRQ and XRC domain */
int  srq_soft_qp_table_add(srq_soft_dev_t *dev, srq_soft_qp_t *qp);
int  srq_soft_qp_sq_resize(srq_soft_qp_t *qp, uint32_t slots);
void srq_soft_qp_free(srq_soft_qp_t *qp);
void srq_soft_qp_refs(srq_soft_qp_t *qp, int d);
srq_soft_qp_t *srq_soft_qp_lookup(srq_soft_dev_t *dev, uint32_t qpn);
int  srq_soft_qp_table_init(srq_soft_dev_t *dev);
void srq_soft_qp_table_cleanup(srq_soft_dev_t *dev);
/* @qp has (@busy) or no longer has outstanding send work toward its peer:
 * only peers with such work are checked for liveness */
void srq_soft_qp_busy(srq_soft_qp_t *qp, bool busy);
/* Leave every work list: the QP does no more transport work */
void srq_soft_qp_detach(srq_soft_qp_t *qp);
/* Room in the send queue's arrays for @n more WQEs after sq_post,
 * growing them (by doubling) up to @max_wr WQEs: 0 or ENOMEM. Under
 * dev->lock and sq_lock (or the device's lock tagged with the queue,
 * which keeps other posts out as sq_lock does: soft_post.c): the engine
 * reads the arrays, posts fill them */
int srq_soft_qp_sq_reserve(srq_soft_qp_t *qp, uint32_t n, uint32_t max_wr);
/* A post that found the device taken leaves @qp on its doorbell stack
 * (once until taken), without the lock: true if the stack was empty (the
 * first ring since the stack was last taken) */
bool srq_soft_qp_ring(srq_soft_qp_t *qp);
/* Every QP on the doorbell stack, taken off it (under dev->lock): a list
 * by db_next, each still marked rung - the taker clears db_rung before it
 * looks at the QP's posts, so that a later post rings again */
srq_soft_qp_t *srq_soft_qp_doorbells(srq_soft_dev_t *dev);
/* ... and let go of its peer, once no one-sided access of the peer through
 * the QP is in flight any more */
void srq_soft_qp_unpeer(srq_soft_qp_t *qp);

/* Show peers what they check before a one-sided request into us (the QP
 * table in our shared tables, soft_shm.h): after every change of the QP's
 * state, access flags or connection */
void srq_soft_qp_publish(srq_soft_qp_t *qp);
/* A consistent copy of the entry of QP @qpn in the QP table of @seg (a
 * peer's): false when it has no such QP */
bool srq_soft_qp_ent_get(const srq_soft_seg_t *seg, uint32_t qpn,
                         srq_soft_qp_ent_t *ent);
/* Does @qp's destination, in its device's QP table, take our requests
 * (there, ready, connected to @qp)? Its entry in *ent */
bool srq_soft_qp_dest_takes(const srq_soft_qp_t *qp, srq_soft_qp_ent_t *ent);

/* The completion of the send WQE @wqe at the head of the queue (sq_ci),
 * if it makes one (errors always do); polling it gives the slots up to it
 * back (qp->sq_free) */
void srq_soft_qp_send_cqe(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe,
                          enum ibv_wc_status status);
/* Free the QP's results of atomics and what they keep (reset, destroy) */
void srq_soft_qp_free_atomics(srq_soft_qp_t *qp);

/* The WQEs ibv_post_recv published: the engine's look at the doorbell
 * (their contents before it; sequentially consistent for the flush of a
 * QP moved to error, srq_soft_qp_set_state - a plain load on x86) */
static inline uint32_t srq_soft_qp_rq_posted(const srq_soft_qp_t *qp)
{
    return atomic_load((_Atomic uint32_t*)&qp->rq_pi);
}

/* The WQEs posts published (sq_db) into the engine's queue, under
 * dev->lock: false if there were none. Sequentially consistent, as the
 * receive queue's rq_pi, with the QP's state */
static inline bool srq_soft_qp_sq_absorb(srq_soft_qp_t *qp)
{
    uint32_t db = atomic_load((_Atomic uint32_t*)&qp->sq_db);

    if (db == qp->sq_pi) {
        return false;
    }
    qp->sq_pi = db;
    return true;
}

/* The QP's state, written under dev->lock, read by posts without it.
 * Sequentially consistent, with the post's publication of its WQEs: a
 * post that misses the QP's move to error has its WQEs seen by the
 * flush that follows the move, and one that sees it flushes them */
static inline void srq_soft_qp_set_state(srq_soft_qp_t *qp,
                                         enum ibv_qp_state state)
{
    atomic_store((_Atomic int*)&qp->state, (int)state);
}

static inline enum ibv_qp_state srq_soft_qp_peek_state(const srq_soft_qp_t *qp)
{
    return (enum ibv_qp_state)atomic_load((_Atomic int*)&qp->state);
}

#endif
