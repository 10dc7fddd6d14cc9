/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: a connection's life. Created for a handshake (srq_hs.c), up
 * once it completes: what its endpoints sent meanwhile waits in it and is
 * posted then. It fails when a send fails, its peer closes or the
 * handshake times out; its endpoints learn it once, its WRs come back
 * flushed or are dropped in order, its QP goes once nothing is in flight
 * on it, the connection once nothing refers to it. Failing from UCX's
 * async thread is left to the owner's progress.
 */
#include "srq_conn.h"
#include "srq_am.h"
#include "srq_limit.h"
#include "srq_qp.h"
#include "srq_rx.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/debug/memtrack.h>
#include <errno.h>
#include <string.h>

/* This thread is UCX's async thread, in uct_srq_hs_async_look */
__thread int uct_srq_hs_in_async;

/* @conn's handshake is over (done or failed): off the connecting list, and
 * no longer one of the half-open connections peers asked for */
void uct_srq_conn_leave_connecting(uct_srq_hs_t *hs,
                                          uct_srq_conn_t *conn)
{
    ucs_list_del(&conn->list);
    if (conn->accepting) {
        conn->accepting = 0;
        --hs->num_accepting;
    }
}

/* Its QP, address handle and (per-QP mode) receive queue. A failed
 * connection lets them go once nothing is in flight on them, even while
 * endpoints still refer to it: QP numbers are what a long-running process
 * runs out of. */
static void uct_srq_conn_release_qp(uct_srq_iface_t *iface,
                                    uct_srq_conn_t *conn)
{
    if (conn->ah != NULL) {
        srq_verbs_destroy_ah(iface->dev, conn->ah);
        conn->ah = NULL;
    }
    if (conn->qp != NULL) {
        uct_srq_rx_rq_cleanup(&iface->rx, &conn->rq);
        srq_verbs_destroy_qp(iface->dev, conn->qp);
        conn->qp = NULL;
    }
}

/* WRs waiting for the connection go without being posted: their slots come
 * back, their operations complete with @status. Only once every WR posted
 * before them completed: operations complete in sequence order. */
static void uct_srq_conn_drop_queued(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn, ucs_status_t status)
{
    uct_srq_conn_wr_t *cwr;

    ucs_queue_for_each_extract(cwr, &conn->queued, queue, 1) {
        uct_srq_conn_tx_uncount(iface, conn);
        ucs_free(cwr);
    }
    conn->num_queued = 0;
    uct_srq_conn_complete_ops(iface, conn, status);
}

void uct_srq_conn_destroy(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    /* endpoints outliving the interface lose their connection */
    iface->hs.hooks->closed(iface, conn);
    /* operations still queued complete with an error, their memory is
     * about to go away */
    conn->sn_done = conn->sn_posted - conn->num_queued;
    uct_srq_conn_drop_queued(iface, conn, UCS_ERR_CANCELED);
    uct_srq_conn_release_qp(iface, conn);
    ucs_free(conn);
}

ucs_status_t uct_srq_conn_create(uct_srq_iface_t *iface,
                                        const uct_srq_conn_key_t *key,
                                        uct_srq_conn_t **conn_p)
{
    uct_srq_hs_t *hs            = &iface->hs;
    struct ibv_ah_attr ah_attr;
    uct_srq_conn_t *conn;
    ucs_status_t status;
    khiter_t it;
    int ret;

    ret = srq_verbs_ah_attr(iface->dev, iface->port_num, &key->dev, &ah_attr);
    if (ret != 0) {
        ucs_diag("srq: peer address is not reachable from %s: %s",
                 srq_verbs_dev_name(iface->dev), strerror(ret));
        return UCS_ERR_UNREACHABLE;
    }

    conn = ucs_calloc(1, sizeof(*conn), "srq conn");
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if ((uintptr_t)conn & ~UCT_SRQ_WRID_CONN_MASK) {
        /* its WRs' wr_id could not name it (uct_srq_conn_wr_id) */
        ucs_error("srq: connection %p is above 2^48", conn);
        ucs_free(conn);
        return UCS_ERR_UNSUPPORTED;
    }
    conn->key      = *key;
    conn->state    = UCT_SRQ_CONN_CONNECTING;
    conn->tx_avail = iface->config.tx_queue_len;
    ucs_queue_head_init(&conn->ops);
    ucs_queue_head_init(&conn->queued);
    ucs_list_head_init(&conn->eps);

    conn->ah = srq_verbs_create_ah(iface->dev, iface->pd, &ah_attr);
    if (conn->ah == NULL) {
        if ((errno == EHOSTUNREACH) || (errno == ENOENT)) {
            /* the peer is gone (e.g. a request that came after its sender
             * closed; through libibverbs its LID is then unknown): no
             * error of ours */
            ucs_diag("srq: peer ud qpn 0x%x is unreachable", key->ud_qpn);
            ucs_free(conn);
            return UCS_ERR_UNREACHABLE;
        }
        ret = errno;
        ucs_error("srq: failed to create an address handle: %s",
                  UCT_SRQ_STRERROR(ret));
        ucs_free(conn);
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
    }

    status = uct_srq_qp_create(iface, iface->config.tx_queue_len,
                               &conn->qp);
    if (status != UCS_OK) {
        goto err_ah;
    }
    if (iface->rx.srq == NULL) {
        status = uct_srq_rx_rq_init(&iface->rx, iface, &conn->rq, conn->qp);
        if (status != UCS_OK) {
            goto err_qp;
        }
    }

    it = kh_put(uct_srq_conns, &hs->conns, *key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        status = UCS_ERR_NO_MEMORY;
        goto err_qp;
    }
    kh_value(&hs->conns, it) = conn;

    conn->retry_interval = hs->config.retry;
    conn->next_retry     = ucs_get_time() + conn->retry_interval;
    conn->deadline       = ucs_get_time() + hs->config.timeout;
    ucs_list_add_tail(&hs->connecting, &conn->list);
    *conn_p = conn;
    return UCS_OK;

err_qp:
    uct_srq_rx_rq_cleanup(&iface->rx, &conn->rq);
    srq_verbs_destroy_qp(iface->dev, conn->qp);
err_ah:
    srq_verbs_destroy_ah(iface->dev, conn->ah);
    ucs_free(conn);
    return status;
}

/* The connection is up: what its endpoints sent meanwhile goes, in order */
static void uct_srq_conn_post_queued(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn)
{
    struct ibv_send_wr *bad_wr;
    uct_srq_conn_wr_t *cwr;
    int ret;

    while (!ucs_queue_is_empty(&conn->queued)) {
        cwr = ucs_queue_head_elem_non_empty(&conn->queued, uct_srq_conn_wr_t,
                                            queue);
        ret = ibv_post_send(conn->qp, &cwr->wr, &bad_wr);
        if (ret != 0) {
            /* it had a send slot: only a broken device gets here */
            ucs_error("srq: posting a send on QP 0x%x failed: %s",
                      conn->qp->qp_num, strerror(ret));
            uct_srq_conn_fail(iface, conn, UCS_ERR_IO_ERROR,
                              "a send could not be posted");
            return;
        }
        ucs_queue_pull_non_empty(&conn->queued);
        --conn->num_queued;
        ucs_free(cwr);
    }
}

void uct_srq_conn_established(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn)
{
    if (uct_srq_hs_in_async) {
        /* its queued sends and waiting endpoints are the owner's: it goes
         * on from the owner's progress (still on the connecting list) */
        conn->state = UCT_SRQ_CONN_READY;
        __atomic_store_n(&iface->hs.async_left, 1, __ATOMIC_RELAXED);
        return;
    }
    uct_srq_conn_leave_connecting(&iface->hs, conn);
    conn->state = UCT_SRQ_CONN_CONNECTED;
    ucs_debug("srq: connection QP 0x%x <-> 0x%x is up", conn->qp->qp_num,
              conn->remote_qpn);
    uct_srq_conn_post_queued(iface, conn);
    if (conn->state == UCT_SRQ_CONN_CONNECTED) {
        iface->hs.hooks->established(iface, conn);
    }
}

/*
 * A failed connection's QP is in the error state: its WRs still in flight
 * come back flushed, but an unsignaled tail that completed before gives no
 * completion at all. A signaled marker behind it does (as the kernel
 * drains a send queue), retiring the tail; it waits for a send slot and a
 * send CQ slot (the reaper tries again). No WR is queued behind a tail of
 * posted WRs: sends queue only while connecting, and a failed connection
 * with WRs in flight has told its endpoints.
 */
static void uct_srq_conn_drain(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr, *bad_wr;
    int ret;

    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return;
    }
    conn->drain_pending = 0;
    uct_srq_conn_marker_wr(&wr);
    wr.wr_id = uct_srq_conn_wr_id(conn, conn->sn_posted + 1);
    ret      = ibv_post_send(conn->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("srq: draining QP 0x%x failed: %s", conn->qp->qp_num,
                  strerror(ret));
        return;
    }
    conn->tx_unsignaled = 0;
    uct_srq_conn_tx_count(iface, conn);
}

/* No WR of @conn in flight or waiting, and (per-QP mode) no receive WR
 * still to come back flushed: their completions point at it */
static int uct_srq_conn_is_idle(const uct_srq_conn_t *conn)
{
    return (conn->sn_done == conn->sn_posted) && (conn->rq.posted == 0);
}

/* A failed connection goes once nothing refers to it any more: no
 * endpoint either */
static int uct_srq_conn_is_unused(uct_srq_conn_t *conn)
{
    return ucs_list_is_empty(&conn->eps) && uct_srq_conn_is_idle(conn);
}

/* Its endpoints learn that @conn failed, once */
static void uct_srq_conn_report(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    if (!conn->fail_reported) {
        conn->fail_reported = 1;
        iface->hs.hooks->failed(iface, conn, conn->fail_status);
    }
}

/*
 * Failed connections: endpoints that sent on one their error was not
 * reported to yet learn it now (their sends were queued, then dropped with
 * an error); the QP goes once nothing is in flight; the connection once
 * nothing refers to it.
 */
void uct_srq_hs_reap(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn, *tmp;

    ucs_list_for_each_safe(conn, tmp, &iface->hs.dead, list) {
        if (conn->drain_pending) {
            uct_srq_conn_drain(iface, conn);
        }
        if ((conn->num_queued > 0) &&
            (conn->sn_done + conn->num_queued == conn->sn_posted)) {
            uct_srq_conn_drop_queued(iface, conn, conn->fail_status);
            uct_srq_conn_report(iface, conn);
        }
        if (uct_srq_conn_is_unused(conn)) {
            ucs_list_del(&conn->list);
            uct_srq_conn_destroy(iface, conn);
        } else if ((conn->qp != NULL) && uct_srq_conn_is_idle(conn)) {
            uct_srq_conn_release_qp(iface, conn);
        }
    }
}

/* What the async thread left to the owner: connections it found up, or
 * failed */
void uct_srq_hs_take_async_left(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    uct_srq_conn_t *conn;

    __atomic_store_n(&hs->async_left, 0, __ATOMIC_RELAXED);
    kh_foreach_value(&hs->conns, conn, {
        if (conn->fail_deferred == 1) {
            uct_srq_conn_fail(iface, conn, conn->fail_status,
                              conn->fail_reason);
        } else if (conn->fail_deferred == 2) {
            uct_srq_conn_lost(iface, conn, conn->fail_status,
                              conn->fail_reason);
        } else if (conn->state == UCT_SRQ_CONN_READY) {
            uct_srq_conn_established(iface, conn);
        }
    });
}

ucs_status_t uct_srq_conn_signal_tail(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr;

    if (conn->tx_unsignaled == 0) {
        return UCS_OK; /* the last WR is signaled, or there is none */
    }
    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return UCS_ERR_NO_RESOURCE; /* then the last WR is signaled */
    }
    uct_srq_conn_marker_wr(&wr);
    return uct_srq_conn_post(iface, conn, &wr, NULL);
}

/* Under the handshake's lock: the async thread may add connections */
void uct_srq_hs_signal_tails(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    pthread_mutex_lock(&iface->hs.lock);
    kh_foreach_value(&iface->hs.conns, conn, {
        if (conn->state != UCT_SRQ_CONN_FAILED) {
            (void)uct_srq_conn_signal_tail(iface, conn);
        }
    });
    pthread_mutex_unlock(&iface->hs.lock);
}

void uct_srq_hs_fence(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    pthread_mutex_lock(&iface->hs.lock);
    kh_foreach_value(&iface->hs.conns, conn, {
        conn->send_flags |= IBV_SEND_FENCE;
    });
    pthread_mutex_unlock(&iface->hs.lock);
}

ucs_status_t uct_srq_conn_queue_wr(uct_srq_conn_t *conn,
                                   const struct ibv_send_wr *wr, void *owner)
{
    int inl        = !!(wr->send_flags & IBV_SEND_INLINE);
    size_t length  = inl ? srq_verbs_sge_len(wr->sg_list, wr->num_sge) : 0;
    int num_sge    = ucs_max(wr->num_sge, 1);
    uct_srq_conn_wr_t *cwr;
    uint8_t *data;
    int i;

    cwr = ucs_malloc(sizeof(*cwr) + num_sge * sizeof(struct ibv_sge) + length,
                     "srq queued wr");
    if (cwr == NULL) {
        ucs_error("srq: no memory to keep a send until the connection is up");
        return UCS_ERR_NO_MEMORY;
    }
    cwr->owner      = owner;
    cwr->wr         = *wr;
    cwr->wr.next    = NULL;
    cwr->wr.sg_list = cwr->sge;
    if (inl) {
        /* inline data is the caller's, often on its stack: copied */
        data = (uint8_t*)(cwr->sge + num_sge);
        for (i = 0; i < wr->num_sge; ++i) {
            memcpy(data, (void*)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            data += wr->sg_list[i].length;
        }
        cwr->sge[0].addr   = (uintptr_t)(cwr->sge + num_sge);
        cwr->sge[0].length = length;
        cwr->sge[0].lkey   = 0;
        cwr->wr.num_sge    = (length > 0) ? 1 : 0;
    } else if (wr->num_sge > 0) { /* a flush's no-op has no list at all */
        memcpy(cwr->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
    }
    ucs_queue_push(&conn->queued, &cwr->queue);
    ++conn->num_queued;
    return UCS_OK;
}

/* A waiting WR whose endpoint is gone still takes its place in the
 * sequence, as a probe the peer discards: what it pointed to may be freed */
static void uct_srq_conn_wr_cancel(uct_srq_conn_wr_t *cwr)
{
    uct_srq_am_wr(&cwr->wr, UCT_SRQ_AM_ID_KEEPALIVE, NULL, 0,
                  IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    cwr->owner = NULL;
}

void uct_srq_conn_cancel(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                         void *owner)
{
    uct_completion_t *comp;
    uct_srq_conn_wr_t *cwr;
    uct_srq_op_t *op;

    ucs_debug("srq: endpoint %p goes: its operations on QP 0x%x complete as "
              "canceled", owner, (conn->qp != NULL) ? conn->qp->qp_num : 0);
    ucs_queue_for_each(cwr, &conn->queued, queue) {
        if (cwr->owner == owner) {
            uct_srq_conn_wr_cancel(cwr);
        }
    }
    /* as an RC endpoint's destruction does: what it started completes now,
     * its resources are freed when the WRs complete */
    ucs_queue_for_each(op, &conn->ops, queue) {
        if (op->owner != owner) {
            continue;
        }
        op->owner = NULL;
        comp      = op->comp;
        op->comp  = NULL;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_ERR_CANCELED);
        }
    }
}

/* @conn failed: a new endpoint to the peer gets a new connection; WRs in
 * flight come back flushed; those waiting go at once if nothing is in
 * flight before them, else when it came back (uct_srq_hs_reap) */
static void uct_srq_conn_set_failed(uct_srq_iface_t *iface,
                                    uct_srq_conn_t *conn, ucs_status_t status,
                                    const char *reason)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    khiter_t it;

    if (uct_srq_conn_is_connecting(conn)) {
        uct_srq_conn_leave_connecting(&iface->hs, conn);
    }
    conn->state       = UCT_SRQ_CONN_FAILED;
    conn->fail_status = status;
    conn->fail_reason = reason;

    it = kh_get(uct_srq_conns, &iface->hs.conns, conn->key);
    if (it != kh_end(&iface->hs.conns)) {
        kh_del(uct_srq_conns, &iface->hs.conns, it);
    }
    ucs_list_add_tail(&iface->hs.dead, &conn->list);

    srq_verbs_modify_qp(iface->dev, conn->qp, &attr, IBV_QP_STATE);
    if (conn->sn_done + conn->num_queued == conn->sn_posted) {
        uct_srq_conn_drop_queued(iface, conn, status);
    } else if ((conn->tx_unsignaled > 0) && (conn->num_queued == 0)) {
        conn->drain_pending = 1;
        uct_srq_conn_drain(iface, conn);
    }
}

/* In the async thread: the owner fails @conn (@how: 1 as
 * uct_srq_conn_fail, 2 as uct_srq_conn_lost) in its progress */
static int uct_srq_conn_defer_fail(uct_srq_iface_t *iface,
                                   uct_srq_conn_t *conn, int how,
                                   ucs_status_t status, const char *reason)
{
    if (!uct_srq_hs_in_async) {
        return 0;
    }
    if (!conn->fail_deferred) {
        conn->fail_deferred = how;
        conn->fail_status   = status;
        conn->fail_reason   = reason;
        __atomic_store_n(&iface->hs.async_left, 1, __ATOMIC_RELAXED);
    }
    return 1;
}

void uct_srq_conn_fail(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                       ucs_status_t status, const char *reason)
{
    if ((conn->state == UCT_SRQ_CONN_FAILED) ||
        uct_srq_conn_defer_fail(iface, conn, 1, status, reason)) {
        return;
    }
    pthread_mutex_lock(&iface->hs.lock);
    uct_srq_conn_set_failed(iface, conn, status, reason);
    uct_srq_conn_report(iface, conn);
    pthread_mutex_unlock(&iface->hs.lock);
}

void uct_srq_conn_fail_limit(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                             int err, const char *reason)
{
    /* the first failure's reason is the one told: the errno goes with it */
    if ((conn->state != UCT_SRQ_CONN_FAILED) && !conn->fail_deferred) {
        conn->fail_errno = err;
    }
    uct_srq_conn_fail(iface, conn, uct_srq_err_status(err, UCS_ERR_IO_ERROR),
                      reason);
}

/*
 * The peer is gone as far as we can tell (it closed its interface).
 * Endpoints with traffic under way learn it now; idle ones when they next
 * send or check (uct_ep_check), as they would from an RC QP whose peer
 * vanished: a peer that ends normally is no error until it is used.
 */
void uct_srq_conn_lost(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                              ucs_status_t status, const char *reason)
{
    int busy = (conn->sn_done != conn->sn_posted);

    if ((conn->state == UCT_SRQ_CONN_FAILED) ||
        uct_srq_conn_defer_fail(iface, conn, 2, status, reason)) {
        return;
    }
    uct_srq_conn_set_failed(iface, conn, status, reason);
    if (busy) {
        uct_srq_conn_report(iface, conn);
    }
}
