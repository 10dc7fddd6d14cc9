/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the interface's progress (poll the receive CQ, then the send
 * CQ when it is worth it, then the handshake), and what its connections
 * tell it (uct_srq_conn_hooks_t). Its event fd: srq_iface_event.c.
 */
#include "srq_iface_progress.h"
#include "srq_conn.h"
#include "srq_ep.h"
#include "srq_hs.h"
#include "srq_limit.h"
#include "srq_rx.h"
#include "srq_tm.h"
#include "srq_tm_rndv.h"

#include <ucs/debug/log_def.h>
#include <string.h>

/* ---- progress ------------------------------------------------------------- */

/* Give endpoints with pending requests their turn */
static void uct_srq_iface_dispatch_pending(uct_srq_iface_t *iface)
{
    ucs_arbiter_dispatch(&iface->arbiter, 1, uct_srq_ep_process_pending, NULL);
}

static void uct_srq_iface_schedule_eps(uct_srq_iface_t *iface,
                                       uct_srq_conn_t *conn)
{
    uct_srq_ep_t *ep;

    ucs_list_for_each(ep, &conn->eps, list) {
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    }
}

/* ---- what the connections tell the interface (uct_srq_conn_hooks_t) ---- */

static void uct_srq_iface_conn_established(uct_srq_iface_t *iface,
                                           uct_srq_conn_t *conn)
{
    /* requests queued while connecting may go now */
    uct_srq_iface_schedule_eps(iface, conn);
    uct_srq_iface_dispatch_pending(iface);
}

static void uct_srq_iface_conn_tx_resumed(uct_srq_iface_t *iface,
                                          uct_srq_conn_t *conn)
{
    /* poll_tx dispatches them once its batch is done */
    uct_srq_iface_schedule_eps(iface, conn);
}

static void uct_srq_iface_conn_failed(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn,
                                      ucs_status_t status)
{
    ucs_log_level_t level = UCS_LOG_LEVEL_DIAG;
    uct_srq_ep_t *ep, *tmp;

    /* its rendezvous sends will see no FIN */
    uct_srq_tm_conn_failed(&iface->tm, conn, status);
    /* the error handler may destroy the endpoint */
    ucs_list_for_each_safe(ep, tmp, &conn->eps, list) {
        ucs_arbiter_group_desched(&iface->arbiter, &ep->arb_group);
        if (uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                    status) != UCS_OK) {
            /* as UCX's rc transports: an error no handler took is fatal */
            level = UCS_LOG_LEVEL_FATAL;
        }
    }
    if (conn->fail_errno != 0) {
        /* a limit of ours: which one, and its value */
        ucs_log(level, "srq: connection to ud qpn 0x%x (rc qp 0x%x) failed: "
                "%s: %s", conn->key.ud_qpn, conn->remote_qpn,
                conn->fail_reason, UCT_SRQ_STRERROR(conn->fail_errno));
        return;
    }
    ucs_log(level, "srq: connection to ud qpn 0x%x (rc qp 0x%x) failed: %s "
            "(%s)", conn->key.ud_qpn, conn->remote_qpn, conn->fail_reason,
            ucs_status_string(status));
}

static void uct_srq_iface_conn_closed(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn)
{
    uct_srq_ep_t *ep;

    ucs_list_for_each(ep, &conn->eps, list) {
        ep->conn = NULL;
    }
}

const uct_srq_conn_hooks_t uct_srq_iface_conn_hooks = {
    .established = uct_srq_iface_conn_established,
    .tx_resumed  = uct_srq_iface_conn_tx_resumed,
    .failed      = uct_srq_iface_conn_failed,
    .closed      = uct_srq_iface_conn_closed
};

static unsigned uct_srq_iface_poll_rx(uct_srq_iface_t *iface)
{
    struct ibv_wc wc[UCT_SRQ_POLL_BATCH];
    int i, n;

    n = ibv_poll_cq(iface->recv_cq, UCT_SRQ_POLL_BATCH, wc);
    if (ucs_likely(n <= 0)) {
        if (ucs_unlikely(n < 0)) {
            ucs_error("srq: polling the receive CQ failed: %s", strerror(-n));
        }
        uct_srq_rx_refill_adapt(&iface->rx, iface);
        return 0;
    }

    for (i = 0; i < n; ++i) {
        uct_srq_rx_deliver(&iface->rx, iface, &wc[i]);
    }
    uct_srq_rx_polled(&iface->rx, iface, n, UCT_SRQ_POLL_BATCH);
    return n;
}

static unsigned uct_srq_iface_poll_tx(uct_srq_iface_t *iface)
{
    struct ibv_wc wc[UCT_SRQ_POLL_BATCH];
    unsigned count, retired = 0, completions = 0;
    uct_srq_conn_t *conn;
    int i, n;

    n = ibv_poll_cq(iface->send_cq, UCT_SRQ_POLL_BATCH, wc);
    if (ucs_likely(n <= 0)) {
        if (ucs_unlikely(n < 0)) {
            ucs_error("srq: polling the send CQ failed: %s", strerror(-n));
        }
        return 0;
    }

    for (i = 0; i < n; ++i) {
        if (ucs_unlikely(wc[i].wr_id == UCT_SRQ_RX_RETIRE_WRID)) {
            uct_srq_rx_retire_complete(&iface->rx, iface, &wc[i]);
            ++iface->tx_cq_avail; /* a WR of the send CQ, not of a QP */
            continue;
        }
        conn  = uct_srq_wr_id_conn(wc[i].wr_id);
        count = uct_srq_conn_wr_id_count(conn, wc[i].wr_id);
        uct_srq_conn_tx_complete(iface, &iface->hs, conn, &wc[i], count);
        retired += count;
        ++completions;
    }
    /* after the completion callbacks, as the connections' slots */
    iface->tx_cq_avail       += retired;
    iface->tx_outstanding    -= retired;
    iface->tx_stats.retired  += retired;
    iface->tx_stats.completions += completions;

    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        uct_srq_iface_dispatch_pending(iface);
    }
    return n;
}

/*
 * Poll the send CQ after a receive poll that gave @rx_count? Not when no WR
 * holds a send CQ slot: nothing can complete there (an idle interface's
 * progress is one CQ poll, not two). Otherwise when the receive CQ gave
 * less than a batch, when send resources run low or requests wait for
 * them, and at least once in UCT_SRQ_TX_POLL_PERIOD calls (a flush waits
 * on it): under a flood of receives its poll is time taken from them.
 */
static UCS_F_ALWAYS_INLINE int
uct_srq_iface_wants_tx_poll(uct_srq_iface_t *iface, unsigned rx_count)
{
    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        return 1;
    }
    if (iface->tx_cq_avail == iface->config.tx_cq_len) {
        return 0;
    }
    if ((rx_count < UCT_SRQ_POLL_BATCH) ||
        (iface->tx_outstanding >= iface->config.tx_queue_len) ||
        (iface->tx_cq_avail < (int)iface->config.tx_queue_len) ||
        (++iface->tx_poll_skips >= UCT_SRQ_TX_POLL_PERIOD)) {
        iface->tx_poll_skips = 0;
        return 1;
    }
    return 0;
}

unsigned uct_srq_iface_progress(uct_iface_h tl_iface)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    unsigned count;

    __atomic_store_n(&iface->progress_calls, iface->progress_calls + 1,
                     __ATOMIC_RELAXED);
    count = ucs_likely(!iface->tm.enabled) ? uct_srq_iface_poll_rx(iface) :
                                             uct_srq_tm_poll_rx(iface);
    if (uct_srq_iface_wants_tx_poll(iface, count)) {
        count += uct_srq_iface_poll_tx(iface);
    }
    if (ucs_unlikely(uct_srq_hs_wants_progress(&iface->hs))) {
        uct_srq_hs_progress(iface);
    }
    return count;
}
