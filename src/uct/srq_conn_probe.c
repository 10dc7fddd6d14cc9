/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: probing idle connections. A connection no endpoint of ours uses
 * (one a peer asked for) is kept for endpoints to come; one idle since the
 * last look (CONN_IDLE_CHECK) gets a probe, so that a connection whose
 * peer died without a word fails and goes with its QP.
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

/* Connections no endpoint of ours uses are kept for endpoints to come;
 * the ones idle since the last look are probed, so that those whose peer
 * died without a word do not stay forever */
void uct_srq_hs_check_idle(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    kh_foreach_value(&iface->hs.conns, conn, {
        if ((conn->state == UCT_SRQ_CONN_CONNECTED) &&
            ucs_list_is_empty(&conn->eps) && (conn->sn_posted == conn->ka_sn)) {
            uct_srq_conn_probe(iface, conn);
        }
        conn->ka_sn = conn->sn_posted;
    });
}
