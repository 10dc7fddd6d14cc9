/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: tag matching (a TM SRQ, IBV_SRQT_TM).
 *
 * A TM SRQ holds, besides its ordinary receive WQEs, a list of tagged
 * buffers the program adds and removes with ibv_post_srq_ops
 * (soft_tm.c). Every SEND to an RC QP on such an SRQ begins with a tag
 * matching header (struct ibv_tmh); the responder hands it to
 * srq_soft_tm_recv, which matches it against the list: an eager message
 * lands in the tagged buffer, a rendezvous request makes the device read
 * the sender's buffer and answer with a FIN (soft_tm_rndv.c); what does
 * not match goes whole into an ordinary receive WQE, and the program is
 * told (the unexpected count) before new tags may match again.
 * Every completion of the SRQ - list operations and receives - goes to
 * the CQ it was created with.
 */
#ifndef SRQ_SOFT_TM_H_
#define SRQ_SOFT_TM_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_pkt.h"
#include "../objects/soft_tm_list.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_srq  srq_soft_srq_t;

void srq_soft_tm_caps(struct ibv_tm_caps *caps);
/* The TM part of ibv_create_srq_ex's attributes: 0 or EINVAL */
int  srq_soft_tm_check(const struct ibv_srq_init_attr_ex *attr);
/* Give @srq its matching list (0 or ENOMEM; its tm_free takes it away) */
int  srq_soft_tm_create(srq_soft_srq_t *srq,
                        const struct ibv_srq_init_attr_ex *attr);
int  srq_soft_tm_post_ops(srq_soft_srq_t *srq, struct ibv_ops_wr *wr,
                          struct ibv_ops_wr **bad_wr);

/* Under dev->lock: a SEND to @qp, an RC QP on a TM SRQ. @nak: what to
 * answer with SRQ_SOFT_TM_NAK/ERR */
srq_soft_tm_result_t srq_soft_tm_recv(srq_soft_qp_t *qp,
                                      const srq_soft_pkt_t *pkt,
                                      const uint8_t *payload, uint8_t *nak);

#endif
