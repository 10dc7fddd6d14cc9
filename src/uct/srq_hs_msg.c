/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the handshake's datagrams: posting the buffers they land in,
 * and sending one (inline, from the stack) to a connection's peer.
 */
#include "srq_hs_msg.h"
#include "srq_conn.h"
#include "srq_limit.h"

#include <ucs/debug/log_def.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *uct_srq_hs_msg_name(uint8_t type)
{
    switch (type) {
    case UCT_SRQ_HS_REQ: return "REQ";
    case UCT_SRQ_HS_REP: return "REP";
    case UCT_SRQ_HS_RTU: return "RTU";
    case UCT_SRQ_HS_DISC: return "DISC";
    default:             return "?";
    }
}

int uct_srq_hs_post_recv(uct_srq_hs_t *hs, unsigned index)
{
    struct ibv_recv_wr wr, *bad_wr;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)hs->bufs + (size_t)index * UCT_SRQ_HS_BUF_LEN;
    sge.length = UCT_SRQ_HS_BUF_LEN;
    sge.lkey   = hs->mr->lkey;
    wr.wr_id   = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.next    = NULL;
    return ibv_post_recv(hs->ud_qp, &wr, &bad_wr);
}

/* 0, or the errno of a datagram that could not be posted: a limit of ours
 * (uct_srq_err_is_limit) is an error, anything else is retried */
int uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                    uint8_t type)
{
    uct_srq_hs_t *hs = &iface->hs;
    struct ibv_send_wr wr, *bad_wr;
    uct_srq_hs_msg_t msg;
    struct ibv_sge sge;
    int ret;

    if (hs->ud_tx_avail <= 0) {
        return 0; /* the retry timer sends it later */
    }
#ifdef SRQ_TEST_BUILD
    if (ucs_unlikely(hs->config.drop > 0) &&
        ((unsigned)rand_r(&hs->seed) % 100 < hs->config.drop)) {
        ++hs->stats.lost;
        return 0; /* lost on the way, as far as the peer can tell */
    }
#endif

    msg.magic    = htole32(UCT_SRQ_HS_MAGIC);
    msg.version  = UCT_SRQ_HS_VERSION;
    msg.type     = type;
    msg.reserved = 0;
    msg.src.dev    = iface->port_addr;
    msg.src.ud_qpn = htole32(hs->ud_qp->qp_num);
    msg.rc_qpn   = htole32(conn->qp->qp_num);

    sge.addr              = (uintptr_t)&msg;
    sge.length            = sizeof(msg);
    sge.lkey              = 0;
    wr.wr_id              = UCT_SRQ_HS_SEND_WRID;
    wr.next               = NULL;
    wr.sg_list            = &sge;
    wr.num_sge            = 1;
    wr.opcode             = IBV_WR_SEND;
    wr.send_flags         = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wr.wr.ud.ah           = conn->ah;
    wr.wr.ud.remote_qpn   = conn->key.ud_qpn;
    wr.wr.ud.remote_qkey  = UCT_SRQ_HS_QKEY;
    ret = ibv_post_send(hs->ud_qp, &wr, &bad_wr);
    if (uct_srq_err_is_limit(ret)) {
        /* e.g. soft0 could not map the peer for lack of address space:
         * no retransmission will do better */
        ucs_error("srq: failed to send a handshake %s to ud qpn 0x%x: %s",
                  uct_srq_hs_msg_name(type), conn->key.ud_qpn,
                  UCT_SRQ_STRERROR(ret));
        return ret;
    } else if (ret != 0) {
        ucs_diag("srq: failed to send a handshake %s: %s",
                 uct_srq_hs_msg_name(type), strerror(ret));
        return 0;
    }
    --hs->ud_tx_avail;
    ++hs->stats.sent;
    ucs_trace("srq: sent %s to ud qpn 0x%x (rc qp 0x%x)",
              uct_srq_hs_msg_name(type), conn->key.ud_qpn, conn->qp->qp_num);
    return 0;
}

/* Send @type for @conn; when a limit of ours stops it, @conn fails: 0 or
 * that errno */
int uct_srq_hs_send_or_fail(uct_srq_iface_t *iface,
                            uct_srq_conn_t *conn, uint8_t type)
{
    int err = uct_srq_hs_send(iface, conn, type);

    if (err != 0) {
        uct_srq_conn_fail_limit(iface, conn, err,
                                "a handshake datagram could not be sent");
    }
    return err;
}
