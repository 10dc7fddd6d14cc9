/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the completer - ACK/NAK to send completions,
 * retries. (Ending send WQEs is soft_sq.h's, failing the QPs toward a
 * dead peer soft_liveness.h's: the requester needs both, and the
 * completer calls the requester, never the other way.)
 */
#ifndef SRQ_SOFT_COMP_H_
#define SRQ_SOFT_COMP_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_pkt.h"

#include <stdbool.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_qp   srq_soft_qp_t;

/* UC QP @qp, with messages sent and not known to have left: those its
 * destination can no longer take complete, lost on the way (a tick's
 * check) */
void srq_soft_comp_uc_check(srq_soft_qp_t *qp);

/* An ACK/NAK packet from the inbound queue */
void srq_soft_comp_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt);
/* The ACK an RC request carries (SRQ_SOFT_PKT_F_ACK), before the request */
void srq_soft_comp_carried_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt);
/* An ATOMIC_ACK packet (the original value in @payload) */
void srq_soft_comp_atomic_ack(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                              const uint8_t *payload);
/* A READ_RESP reached us (the requester): the data of a READ the
 * responder executed */
void srq_soft_comp_read_resp(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                             const uint8_t *payload);

#endif
