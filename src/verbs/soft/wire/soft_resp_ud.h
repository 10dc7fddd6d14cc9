/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's datagrams (soft_resp_ud.c): a UD
 * SEND to a receive WQE, behind its GRH.
 */
#ifndef SRQ_SOFT_RESP_UD_H_
#define SRQ_SOFT_RESP_UD_H_

#include "../fabric/soft_pkt.h"

#include <stdint.h>

typedef struct srq_soft_dev srq_soft_dev_t;
typedef struct srq_soft_qp  srq_soft_qp_t;

/* A datagram the responder found for @qp (its number; the packet checked
 * as every inbound one): to @qp's next receive WQE, or dropped, counted */
void srq_soft_resp_ud(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                      const srq_soft_pkt_t *pkt, const uint8_t *payload);

#endif
