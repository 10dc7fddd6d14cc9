/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: probing idle connections. A connection no endpoint of ours uses
 * (one a peer asked for) is kept for endpoints to come; one idle since the
 * last look (CONN_IDLE_CHECK) gets a probe, so that a connection whose
 * peer died without a word fails and goes with its QP. So does one whose
 * peer's RTU is a whole period late: a client that sent its REQ and died
 * (its RTU, posted at its exit, with it) left it waiting for the
 * handshake's timeout, 30 s, and 1 in 1000 short-lived clients did.
 */
#include "srq_conn_probe.h"
#include "srq_am.h"
#include "srq_conn.h"

/* A probe on an idle connection: if the peer is gone, the send fails and
 * so does the connection. Skipped while the connection has no send slot:
 * its own traffic tells then. */
static void uct_srq_conn_probe(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr;

    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return;
    }
    /* signaled: its slot comes back */
    uct_srq_am_wr(&wr, UCT_SRQ_AM_ID_KEEPALIVE, NULL, 0,
                  IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    uct_srq_conn_post(iface, conn, &wr, NULL);
}

/* The peer's RTU is late: our QP is connected since our REP, so a probe
 * on it fails if the peer is gone, as on an idle connection, and reaches a
 * live peer whose QP our REP connected (else the RC retries wait for it).
 * Posted at once, not queued for the handshake's end; never behind WRs
 * that are (their sequence numbers come first). */
static void uct_srq_conn_probe_handshake(uct_srq_iface_t *iface,
                                         uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr, *bad_wr;

    if (!ucs_queue_is_empty(&conn->queued) || (conn->tx_avail <= 0) ||
        (iface->tx_cq_avail <= 0)) {
        return;
    }
    uct_srq_am_wr(&wr, UCT_SRQ_AM_ID_KEEPALIVE, NULL, 0,
                  IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    wr.wr_id = uct_srq_conn_wr_id(conn, conn->sn_posted + 1);
    wr.next  = NULL;
    if (ibv_post_send(conn->qp, &wr, &bad_wr) == 0) {
        uct_srq_conn_tx_count(iface, conn);
    }
}

/* Connections no endpoint of ours uses are kept for endpoints to come;
 * the ones idle since the last look are probed, so that those whose peer
 * died without a word do not stay forever; and so are handshakes the peer
 * left unfinished since the last look */
void uct_srq_hs_check_idle(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    kh_foreach_value(&iface->hs.conns, conn, {
        if ((conn->state == UCT_SRQ_CONN_CONNECTED) &&
            ucs_list_is_empty(&conn->eps) && (conn->sn_posted == conn->ka_sn)) {
            uct_srq_conn_probe(iface, conn);
        } else if ((conn->state == UCT_SRQ_CONN_REP_SENT) &&
                   (conn->hs_looks++ > 0)) {
            uct_srq_conn_probe_handshake(iface, conn);
        }
        conn->ka_sn = conn->sn_posted;
    });
}
