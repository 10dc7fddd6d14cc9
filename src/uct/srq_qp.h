/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the RC QPs of an interface. Each is created on the interface's
 * CQs and receives on its SRQ (or, in per-QP mode, on a receive queue of
 * its own), then connected INIT -> RTR -> RTS to one remote QP. Used by the
 * connections' handshake (srq_conn.c) and by the QP connected to itself
 * that retires receive buffers (srq_rx_depth.c).
 */
#ifndef UCT_SRQ_QP_H_
#define UCT_SRQ_QP_H_

#include <verbs/srq_verbs.h>
#include <ucs/type/status.h>

typedef struct uct_srq_iface uct_srq_iface_t;

/* An RC QP of @iface with @tx_len send WRs, in INIT */
ucs_status_t uct_srq_qp_create(uct_srq_iface_t *iface, unsigned tx_len,
                               struct ibv_qp **qp_p);

/* RTR and RTS towards QP @remote_qpn at @addr; on failure errno says why
 * (UCS_ERR_UNREACHABLE: the peer is gone; UCS_ERR_NO_MEMORY or
 * UCS_ERR_NO_RESOURCE: a limit of ours, uct_srq_err_is_limit) */
ucs_status_t uct_srq_qp_connect(uct_srq_iface_t *iface, struct ibv_qp *qp,
                                const srq_verbs_port_addr_t *addr,
                                uint32_t remote_qpn);

#endif
