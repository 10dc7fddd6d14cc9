/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: creating and connecting the RC QPs of an interface.
 */
#include "srq_qp.h"
#include "srq_limit.h"
#include "srq_types.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <errno.h>
#include <string.h>

ucs_status_t uct_srq_qp_create(uct_srq_iface_t *iface, unsigned tx_len,
                               struct ibv_qp **qp_p)
{
    struct ibv_qp_init_attr init = {};
    struct ibv_qp_attr attr      = {};
    struct ibv_qp *qp;
    int ret;

    init.send_cq             = iface->send_cq;
    init.recv_cq             = iface->recv_cq;
    init.srq                 = iface->rx.srq;
    init.qp_type             = IBV_QPT_RC;
    init.cap.max_send_wr     = tx_len;
    init.cap.max_send_sge    = iface->config.max_send_sge;
    init.cap.max_inline_data = iface->config.max_inline;
    if (init.srq == NULL) {
        /* per-QP mode: the QP's own receive queue */
        init.cap.max_recv_wr  = iface->rx.depth;
        init.cap.max_recv_sge = 1;
    }
    qp = srq_verbs_create_qp(iface->dev, iface->pd, &init);
    if (qp == NULL) {
        ret = errno;
        ucs_error("srq: failed to create an RC QP: %s", UCT_SRQ_STRERROR(ret));
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
    }

    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = iface->port_num;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ |
                           (iface->config.atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    ret = srq_verbs_modify_qp(iface->dev, qp, &attr,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_ACCESS_FLAGS);
    if (ret != 0) {
        ucs_error("srq: failed to move an RC QP to INIT: %s", strerror(ret));
        srq_verbs_destroy_qp(iface->dev, qp);
        return UCS_ERR_IO_ERROR;
    }
    *qp_p = qp;
    return UCS_OK;
}

ucs_status_t uct_srq_qp_connect(uct_srq_iface_t *iface, struct ibv_qp *qp,
                                const srq_verbs_port_addr_t *addr,
                                uint32_t remote_qpn)
{
    struct ibv_qp_attr attr = {};
    int ret;

    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = iface->port_attr.active_mtu;
    attr.dest_qp_num        = remote_qpn;
    attr.rq_psn             = 0;
    attr.max_dest_rd_atomic = ucs_max(1, iface->dev_attr.max_qp_rd_atom);
    attr.min_rnr_timer      = iface->config.rnr_timer;
    ret = srq_verbs_ah_attr(iface->dev, iface->port_num, addr, &attr.ah_attr);
    if (ret == 0) {
        ret = srq_verbs_modify_qp(iface->dev, qp, &attr,
                                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC |
                                  IBV_QP_MIN_RNR_TIMER);
    }
    if (ret == 0) {
        attr.qp_state      = IBV_QPS_RTS;
        attr.sq_psn        = 0;
        attr.timeout       = iface->config.timeout;
        attr.retry_cnt     = 7;
        attr.rnr_retry     = 7; /* a dry SRQ stalls a sender, never fails it */
        attr.max_rd_atomic = ucs_max(1, iface->dev_attr.max_qp_init_rd_atom);
        ret = srq_verbs_modify_qp(iface->dev, qp, &attr,
                                  IBV_QP_STATE | IBV_QP_SQ_PSN |
                                  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    }
    if ((ret == EHOSTUNREACH) || (ret == ENOENT)) {
        /* no such destination any more (its device closed meanwhile): the
         * peer is gone, no error of ours */
        ucs_diag("srq: QP 0x%x: peer of QP 0x%x is unreachable", qp->qp_num,
                 remote_qpn);
        errno = ret;
        return UCS_ERR_UNREACHABLE;
    }
    if (ret != 0) {
        /* a limit of ours (no descriptor or memory to map the peer) is
         * said as such: the peer is there */
        ucs_error("srq: failed to connect QP 0x%x to 0x%x: %s", qp->qp_num,
                  remote_qpn, UCT_SRQ_STRERROR(ret));
        errno = ret;
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
    }
    return UCS_OK;
}
