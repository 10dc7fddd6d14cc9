/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: tag-matching offload, our rendezvous sends waiting for the
 * receiver's FIN (srq_tm_rndv.c). The sending side (srq_ep_tag.c) adds
 * and cancels them, the receive side's poll (srq_tm.c) hands them FINs.
 */
#ifndef UCT_SRQ_TM_RNDV_H_
#define UCT_SRQ_TM_RNDV_H_

#include "srq_types.h"

/* Rendezvous sends of an interface waiting for their FIN, at most */
#define UCT_SRQ_TM_MAX_RNDV   1024

/* A rendezvous send on @conn waits for its FIN, which invokes @comp;
 * *app_ctx_p names it in its TMH. UCS_ERR_NO_RESOURCE when
 * UCT_SRQ_TM_MAX_RNDV wait already */
ucs_status_t uct_srq_tm_rndv_add(uct_srq_tm_t *tm, uct_completion_t *comp,
                                 void *conn, uint32_t *app_ctx_p);
/* ... no longer (uct_ep_tag_rndv_cancel, or its send failed): a FIN that
 * still comes is dropped, @comp is not invoked */
ucs_status_t uct_srq_tm_rndv_cancel(uct_srq_tm_t *tm, uint32_t app_ctx);

/* @conn failed: its rendezvous sends complete with @status */
void uct_srq_tm_conn_failed(uct_srq_tm_t *tm, void *conn,
                            ucs_status_t status);

/* The FIN of our rendezvous send @app_ctx: the receiver's device read it;
 * its completion is invoked (none if it was canceled, or is not ours) */
void uct_srq_tm_fin(uct_srq_tm_t *tm, uint32_t app_ctx);

#endif
