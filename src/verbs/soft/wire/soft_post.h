/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the data-path post verbs (context->ops), with their
 * post-time checks; execution is the requester's (soft_req.h).
 */
#ifndef SRQ_SOFT_POST_H_
#define SRQ_SOFT_POST_H_

#include "../../dev/srq_verbs_types.h"

int  srq_soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                        struct ibv_send_wr **bad_wr);
int  srq_soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad_wr);
/* The ibv_wr_* API's post (soft_qp_ex.c): the @n WRs of @wr all, or none
 * (the first that fails a check in *bad_wr, its errno returned) */
typedef struct srq_soft_qp srq_soft_qp_t;
int  srq_soft_post_send_all(srq_soft_qp_t *qp, struct ibv_send_wr *wr,
                            uint32_t n, struct ibv_send_wr **bad_wr);
int  srq_soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                            struct ibv_recv_wr **bad_wr);

/* ibv_bind_mw (type 1): posts the bind as an IBV_WR_BIND_MW WR; the
 * window's rkey is the new one from now on */
int srq_soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
                     struct ibv_mw_bind *mw_bind);

#endif
