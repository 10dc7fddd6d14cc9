/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: tag matching's rendezvous (soft_tm_rndv.c): a
 * request matched to a tag, its data read from the sender, a FIN back.
 */
#ifndef SRQ_SOFT_TM_RNDV_H_
#define SRQ_SOFT_TM_RNDV_H_

#include "../objects/soft_tm_list.h"

/* Is there room in @qp's send queue for one more FIN? (grows it) */
bool srq_soft_tm_fin_room(srq_soft_qp_t *qp);
/* A rendezvous request matched tag @t: read, complete, FIN */
srq_soft_tm_result_t srq_soft_tm_rndv(srq_soft_qp_t *qp, srq_soft_tm_t *tm,
                                      srq_soft_tm_tag_t *t,
                                      const srq_soft_pkt_t *pkt,
                                      const struct srq_soft_tm_hdr *h,
                                      uint8_t *nak);

#endif
