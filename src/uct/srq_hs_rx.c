/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: handshake datagrams in. Each is checked (format, version, a
 * port the device has, the source the device reports) before it touches
 * a connection; a REQ from a new peer makes one, within
 * CONN_MAX_ACCEPTING; REQ, REP, RTU and DISC move the connection's state
 * (srq_hs.c has the exchange).
 */
#include "srq_hs_rx.h"
#include "srq_hs_msg.h"
#include "srq_conn.h"
#include "srq_limit.h"
#include "srq_qp.h"

#include <ucs/debug/log_def.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

static int uct_srq_hs_msg_valid(uct_srq_iface_t *iface,
                                const uct_srq_hs_msg_t *msg, uint32_t len)
{
    return (len >= sizeof(*msg)) &&
           (le32toh(msg->magic) == UCT_SRQ_HS_MAGIC) &&
           (msg->version == UCT_SRQ_HS_VERSION) &&
           (msg->type >= UCT_SRQ_HS_REQ) && (msg->type <= UCT_SRQ_HS_DISC) &&
           (msg->src.dev.kind == iface->port_addr.kind) &&
           /* a port its device has: peers run the same kind of device */
           (msg->src.dev.port_num >= 1) &&
           (msg->src.dev.port_num <= iface->dev_attr.phys_port_cnt);
}

/*
 * The datagram names the interface that sent it (its port address and
 * handshake QP: the connection's key); the device says which QP and port
 * it came from (the source QP, and the GRH's source GID or the source
 * LID). They must be the same: otherwise any QP could open, or take
 * ahead of time, another interface's connection - QP numbers are easy to
 * guess, and a connection to a key that already has one is refused.
 */
static int uct_srq_hs_src_valid(const uct_srq_hs_msg_t *msg,
                                const struct ibv_wc *wc, const void *grh)
{
    if (le32toh(msg->src.ud_qpn) != wc->src_qp) {
        return 0;
    }
    if (wc->wc_flags & IBV_WC_GRH) {
        /* the source GID: bytes 8..23 of the GRH */
        return !memcmp(UCS_PTR_BYTE_OFFSET(grh, 8), msg->src.dev.gid,
                       sizeof(msg->src.dev.gid));
    }
    return wc->slid == ntohs(msg->src.dev.lid);
}

static void uct_srq_hs_drop(uct_srq_iface_t *iface, const char *why,
                            const uct_srq_hs_msg_t *msg)
{
    ++iface->hs.stats.dropped;
    ucs_diag("srq: dropped a handshake datagram (%s)", why);
}

/* Connect our QP for the pair to the QP @rc_qpn the peer named, and answer
 * with @reply; a QP that cannot be connected, or an answer a limit of ours
 * stops, fails the connection */
static ucs_status_t uct_srq_hs_connect_reply(uct_srq_iface_t *iface,
                                             uct_srq_conn_t *conn,
                                             uint32_t rc_qpn, uint8_t reply)
{
    ucs_status_t status;
    int err;

    status = uct_srq_qp_connect(iface, conn->qp, &conn->key.dev, rc_qpn);
    err    = errno;
    if ((status != UCS_OK) && uct_srq_err_is_limit(err)) {
        uct_srq_conn_fail_limit(iface, conn, err,
                                "the QP could not be connected");
        return status;
    } else if (status != UCS_OK) {
        uct_srq_conn_fail(iface, conn, status,
                          (status == UCS_ERR_UNREACHABLE) ?
                          "the peer is gone" : "the QP could not be connected");
        return status;
    }
    conn->remote_qpn = rc_qpn;
    err = uct_srq_hs_send_or_fail(iface, conn, reply);
    return (err == 0) ? UCS_OK : uct_srq_err_status(err, UCS_ERR_IO_ERROR);
}

static void uct_srq_hs_handle_req(uct_srq_iface_t *iface,
                                  uct_srq_conn_t *conn, uint32_t rc_qpn)
{
    switch (conn->state) {
    case UCT_SRQ_CONN_CONNECTING:
        /* a new peer, or a simultaneous connect: our one QP for the pair
         * goes to the QP the peer named; the REP is retried until the RTU */
        if (uct_srq_hs_connect_reply(iface, conn, rc_qpn, UCT_SRQ_HS_REP) ==
            UCS_OK) {
            conn->state          = UCT_SRQ_CONN_REP_SENT;
            conn->retry_interval = iface->hs.config.retry;
            conn->next_retry     = ucs_get_time() + conn->retry_interval;
        }
        break;
    case UCT_SRQ_CONN_REP_SENT:
    case UCT_SRQ_CONN_READY:
    case UCT_SRQ_CONN_CONNECTED:
        /* a retransmitted REQ: our REP was lost */
        uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_REP);
        break;
    default:
        break;
    }
}

static void uct_srq_hs_handle_rep(uct_srq_iface_t *iface,
                                  uct_srq_conn_t *conn, uint32_t rc_qpn)
{
    switch (conn->state) {
    case UCT_SRQ_CONN_CONNECTING:
        /* the peer connected its QP to ours: ours goes to its */
        if (uct_srq_hs_connect_reply(iface, conn, rc_qpn, UCT_SRQ_HS_RTU) ==
            UCS_OK) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_CONN_REP_SENT:
        /* the peer's QP is ready for ours */
        if (uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_RTU) == 0) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_CONN_READY:
    case UCT_SRQ_CONN_CONNECTED:
        /* our RTU was lost */
        uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_RTU);
        break;
    default:
        break;
    }
}

static void uct_srq_hs_handle_rx(uct_srq_iface_t *iface,
                                 const struct ibv_wc *wc)
{
    uct_srq_hs_t *hs = &iface->hs;
    unsigned index   = wc->wr_id;
    const uct_srq_hs_msg_t *msg;
    const void *grh;
    uct_srq_conn_key_t key;
    uct_srq_conn_t *conn;
    uint32_t rc_qpn;
    khiter_t it;
    int ret;

    if (wc->status == IBV_WC_WR_FLUSH_ERR) {
        return; /* the QP is in error: a repost would only flush again */
    }
    if (wc->status != IBV_WC_SUCCESS) {
        /* e.g. a datagram longer than the buffer (IBV_WC_LOC_LEN_ERR): on a
         * UD QP that fails this WR only, and the buffer must go back, or
         * a peer sending such datagrams leaves no room for real ones */
        ++hs->stats.dropped;
        ucs_diag("srq: handshake receive failed: %s",
                 ibv_wc_status_str(wc->status));
        goto out;
    }

    /* UD: the first 40 bytes hold the GRH */
    grh = UCS_PTR_BYTE_OFFSET(hs->bufs, (size_t)index * UCT_SRQ_HS_BUF_LEN);
    msg = UCS_PTR_BYTE_OFFSET(grh, UCT_SRQ_HS_GRH_LEN);
    if ((wc->byte_len < UCT_SRQ_HS_GRH_LEN) ||
        !uct_srq_hs_msg_valid(iface, msg, wc->byte_len - UCT_SRQ_HS_GRH_LEN)) {
        uct_srq_hs_drop(iface, "malformed", msg);
        goto out;
    }
    if (!uct_srq_hs_src_valid(msg, wc, grh)) {
        uct_srq_hs_drop(iface, "names another source than its own", msg);
        goto out;
    }

    key        = msg->src;
    key.ud_qpn = le32toh(msg->src.ud_qpn);
    rc_qpn     = le32toh(msg->rc_qpn) & 0xffffff;
    ucs_trace("srq: got %s from ud qpn 0x%x (rc qp 0x%x)",
              uct_srq_hs_msg_name(msg->type), key.ud_qpn, rc_qpn);

    it = kh_get(uct_srq_conns, &hs->conns, key);
    if (it != kh_end(&hs->conns)) {
        conn = kh_value(&hs->conns, it);
        if ((conn->state != UCT_SRQ_CONN_CONNECTING) &&
            (conn->remote_qpn != rc_qpn)) {
            uct_srq_hs_drop(iface, "names another QP than the connection's", msg);
            goto out;
        }
    } else if (msg->type == UCT_SRQ_HS_REQ) {
        if (hs->num_accepting >= hs->config.max_accepting) {
            uct_srq_hs_drop(iface, "too many half-open connections", msg);
            goto out;
        }
        if (uct_srq_conn_create(iface, &key, &conn) != UCS_OK) {
            uct_srq_hs_drop(iface, "cannot create a connection", msg);
            goto out;
        }
        conn->accepting = 1;
        ++hs->num_accepting;
    } else {
        uct_srq_hs_drop(iface, "no connection for it", msg);
        goto out;
    }

    switch (msg->type) {
    case UCT_SRQ_HS_REQ:
        uct_srq_hs_handle_req(iface, conn, rc_qpn);
        break;
    case UCT_SRQ_HS_REP:
        uct_srq_hs_handle_rep(iface, conn, rc_qpn);
        break;
    case UCT_SRQ_HS_RTU:
        if (conn->state == UCT_SRQ_CONN_REP_SENT) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_HS_DISC:
        uct_srq_conn_lost(iface, conn, UCS_ERR_CONNECTION_RESET,
                          "the peer closed its interface");
        break;
    }

out:
    ret = uct_srq_hs_post_recv(hs, index);
    if (ret != 0) {
        ucs_error("srq: failed to repost a handshake buffer: %s",
                  strerror(ret));
    }
}

/* Handshake datagrams in, handshake sends back: how many completions */
unsigned uct_srq_hs_poll(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    struct ibv_wc wc[UCT_SRQ_HS_POLL_BATCH];
    int i, n;

    n = ibv_poll_cq(hs->cq, UCT_SRQ_HS_POLL_BATCH, wc);
    if (n < 0) {
        ucs_error("srq: polling the handshake CQ failed: %s", strerror(-n));
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (wc[i].wr_id == UCT_SRQ_HS_SEND_WRID) {
            ++hs->ud_tx_avail; /* a handshake datagram went out */
        } else {
            uct_srq_hs_handle_rx(iface, &wc[i]);
        }
    }
    return n;
}
