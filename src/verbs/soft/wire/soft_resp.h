/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder - inbound SEND / WRITE_WITH_IMM
 * packets to receive WQEs and completions (what they owe: soft_resp_ack.h).
 */
#ifndef SRQ_SOFT_RESP_H_
#define SRQ_SOFT_RESP_H_

#include "../fabric/soft_pkt.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev srq_soft_dev_t;

/* A request packet from the inbound queue (checked here, trusted nowhere) */
void srq_soft_resp_recv(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt,
                        const uint8_t *payload);

#endif
