/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: tag-matching offload (UCX_RC_SRQ_TM_ENABLE), over the standard
 * verbs of a TM SRQ: the interface's shared receive queue is created as
 * IBV_SRQT_TM, receives are tagged buffers added to and removed from the
 * device's list with ibv_post_srq_ops, and the receive CQ is read with
 * ibv_wc_read_tm_info.
 *
 * On the wire (rdma-core's Documentation/tag_matching.md), every SEND to
 * a QP of a TM SRQ begins with a struct ibv_tmh:
 *  - IBV_TMH_EAGER: a tagged message; the device lands what follows the
 *    TMH in the matching tagged buffer, or the whole message in an
 *    ordinary receive buffer (unexpected). The 64-bit immediate of
 *    uct_ep_tag_eager_* travels as the TMH's app_ctx (high half) and the
 *    SEND's immediate (low half); an immediate of 0 sends a plain SEND,
 *    so a SEND with immediate 0 is a software rendezvous request
 *    (uct_ep_tag_rndv_request), as rc_mlx5 marks it.
 *  - IBV_TMH_RNDV + struct ibv_rvh + the user's header: a rendezvous; a
 *    device that matches it reads the sender's buffer itself and sends a
 *    FIN (IBV_TMH_FIN, the request's app_ctx: the sender's slot in
 *    tm->rndv) that lands in an ordinary buffer of the sender.
 *  - IBV_TMH_NO_TAG: an active message (its id the immediate, srq_am.h):
 *    with tag matching on, AMs carry a TMH too, 16 bytes more per AM.
 * A receive buffer is posted hdr_len bytes before the descriptor's buffer,
 * so that what follows the TMH starts where the payload always does.
 *
 * Both sides of a connection must agree: the interface address says
 * whether tag matching is on, and interfaces that differ do not reach
 * each other (srq_iface_reach.c).
 */
#ifndef UCT_SRQ_TM_H_
#define UCT_SRQ_TM_H_

#include "srq_tmh.h"
#include "srq_types.h"

#include <infiniband/verbs.h>

/* A slot's flags */
#define UCT_SRQ_TM_SLOT_POSTED   UCS_BIT(0) /* its receive may still complete */
#define UCT_SRQ_TM_SLOT_DEL      UCS_BIT(1) /* a TAG_DEL of it is in flight */
#define UCT_SRQ_TM_SLOT_CANCEL   UCS_BIT(2) /* ... and says "canceled" */
#define UCT_SRQ_TM_SLOT_CONSUMED UCS_BIT(3) /* tag_consumed_cb was called */

/* Decide, from the configuration and the device's tm_caps, whether @iface
 * offloads tag matching (tm->enabled); UCS_ERR_UNSUPPORTED, named, when
 * TM_ENABLE=yes and the device or the configuration cannot */
ucs_status_t uct_srq_tm_init(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                             const uct_srq_iface_config_t *config,
                             const uct_iface_params_t *params);
void uct_srq_tm_cleanup(uct_srq_tm_t *tm);

/* The receive CQ, made to report tag-matching info (tm->cq) */
struct ibv_cq *uct_srq_tm_create_cq(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                                    int cqe);

/* Poll the receive CQ of a tag-matching interface: what
 * uct_srq_iface_poll_rx does for the others */
unsigned uct_srq_tm_poll_rx(uct_srq_iface_t *iface);

ucs_status_t uct_srq_tm_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                   uct_tag_t tag_mask, const uct_iov_t *iov,
                                   size_t iovcnt, uct_tag_context_t *ctx);
ucs_status_t uct_srq_tm_recv_cancel(uct_iface_h tl_iface,
                                    uct_tag_context_t *ctx, int force);

/* iface_attr's tag capabilities and flags, when tm->enabled */
void uct_srq_tm_query(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                      uct_iface_attr_t *attr);

#endif
