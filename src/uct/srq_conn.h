/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: connections. At most one RC connection per pair of interfaces,
 * shared by all endpoints between them on both sides, set up in-band by a
 * handshake over each interface's UD QP (REQ -> REP -> RTU), which survives
 * lost and duplicated datagrams and simultaneous connects.
 *
 * Sends are accepted from the moment an endpoint exists: while the
 * handshake runs they wait in the connection, in order, counted against its
 * send slots as if posted, and go out when it is up. A connection whose
 * peer is gone (a send failed, the peer closed its interface) fails; its
 * endpoints learn it through the error handler at once if traffic was
 * under way, else when they next send or check. One that never came up
 * (the handshake timed out, a limit of ours stopped it) tells them at once.
 */
#ifndef UCT_SRQ_CONN_H_
#define UCT_SRQ_CONN_H_

#include "srq_types.h"

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

/* This thread is UCX's async thread, looking at an interface its owner
 * does not progress (srq_hs_async.c): what only the owner may do is left
 * to its progress */
extern __thread int uct_srq_hs_in_async;

/* A new connection to the interface @key names, connecting (on the
 * handshake's connecting list), with its QP and address handle */
ucs_status_t uct_srq_conn_create(uct_srq_iface_t *iface,
                                 const uct_srq_conn_key_t *key,
                                 uct_srq_conn_t **conn_p);

/* Its endpoints lose @conn (the interface closes), its WRs still waiting
 * complete as canceled, its QP goes */
void uct_srq_conn_destroy(uct_srq_iface_t *iface, uct_srq_conn_t *conn);

/* @conn's handshake is over (done or failed): off the connecting list */
void uct_srq_conn_leave_connecting(uct_srq_hs_t *hs, uct_srq_conn_t *conn);

/* The handshake completed: @conn is up, what waited in it is posted */
void uct_srq_conn_established(uct_srq_iface_t *iface, uct_srq_conn_t *conn);

/* The peer is gone as far as we can tell (it closed): endpoints with
 * traffic under way learn it now, idle ones when they next send or check */
void uct_srq_conn_lost(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                       ucs_status_t status, const char *reason);

/* Failed connections: errors reported, QPs released, connections freed as
 * soon as nothing refers to them */
void uct_srq_hs_reap(uct_srq_iface_t *iface);

/* What the async thread left to the owner: connections it found up, or
 * failed; from the owner's progress */
void uct_srq_hs_take_async_left(uct_srq_iface_t *iface);

/* Set IBV_SEND_FENCE on the next WR of every connection */
void uct_srq_hs_fence(uct_srq_iface_t *iface);

/* A flush of @conn waits for its last WR: if that one is not signaled,
 * post a signaled no-op behind it (as UCX's rc_verbs) */
ucs_status_t uct_srq_conn_signal_tail(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn);

/* ... of every connection (the send descriptors run out, the interface is
 * flushed) */
void uct_srq_hs_signal_tails(uct_srq_iface_t *iface);

/* A send failed on the connection: fail its operations, tell its
 * endpoints now */
void uct_srq_conn_fail(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                       ucs_status_t status, const char *reason);

/* A limit of ours (@err, uct_srq_err_is_limit: no memory or descriptor
 * left) stopped @conn: it fails as uct_srq_conn_fail, its endpoints told
 * now, and its error names the limit - the peer is there, retrying the
 * handshake until CONN_TIMEOUT would only hide why */
void uct_srq_conn_fail_limit(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                             int err, const char *reason);

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

/* ---- the send path: posting on a connection, its send slots ---- */

/* A send WR was posted on @conn, or queued there until the connection is
 * up: it holds a send slot of the connection and of the send CQ until a
 * completion retires it (or, queued, until it is posted or dropped) */
static UCS_F_ALWAYS_INLINE void
uct_srq_conn_tx_count(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    ++conn->sn_posted;
    --conn->tx_avail;
    --iface->tx_cq_avail;
    ++iface->tx_outstanding;
}

/*
 * Is the WR about to be posted on @conn signaled? When asked (a completion
 * or a result waits on it), one in TX_CQ_MODERATION, and every one while
 * the send CQ's slots run low. So a completion always comes to give slots
 * back: a connection out of slots has TX_QUEUE_LEN >= 4 * moderation WRs
 * in flight, a signaled one among them; the WR that takes the send CQ's
 * last slot is signaled (many connections may each hold a few unsignaled
 * ones). A tail left unsignaled is signaled by a flush, or when the send
 * descriptors run out.
 */
static UCS_F_ALWAYS_INLINE int
uct_srq_conn_tx_signal(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                        int send_flags)
{
    if ((send_flags & IBV_SEND_SIGNALED) ||
        (++conn->tx_unsignaled >= iface->config.tx_moderation) ||
        (iface->tx_cq_avail <= (int)iface->config.tx_moderation)) {
        conn->tx_unsignaled = 0;
        return IBV_SEND_SIGNALED;
    }
    return 0;
}

/* Post @wr on @conn (wr_id: the connection and the WR's number), or keep
 * it there until the connection is up; @owner: the endpoint, if any */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_conn_post(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                   struct ibv_send_wr *wr, void *owner)
{
    struct ibv_send_wr *bad_wr;
    ucs_status_t status;
    int ret;

    wr->wr_id       = uct_srq_conn_wr_id(conn, conn->sn_posted + 1);
    wr->next        = NULL;
    wr->send_flags |= conn->send_flags;
    wr->send_flags |= uct_srq_conn_tx_signal(iface, conn, wr->send_flags);
    if (ucs_likely(conn->state == UCT_SRQ_CONN_CONNECTED)) {
        ret = ibv_post_send(conn->qp, wr, &bad_wr);
        if (ucs_unlikely(ret != 0)) {
            ucs_error("srq: ibv_post_send on QP 0x%x failed: %s",
                      conn->qp->qp_num, strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
    } else {
        status = uct_srq_conn_queue_wr(conn, wr, owner);
        if (status != UCS_OK) {
            return status;
        }
    }

    conn->send_flags = 0;
    uct_srq_conn_tx_count(iface, conn);
    return UCS_OK;
}

/* The opposite, for a queued WR that was never posted */
static UCS_F_ALWAYS_INLINE void
uct_srq_conn_tx_uncount(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    ++conn->sn_done;
    ++conn->tx_avail;
    ++iface->tx_cq_avail;
    --iface->tx_outstanding;
    ++iface->tx_stats.retired;
}

#endif
