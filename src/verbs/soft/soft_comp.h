/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the completer - ACK/NAK to send completions,
 * retries, and the failure of the QPs toward a dead peer.
 */
#ifndef SRQ_SOFT_COMP_H_
#define SRQ_SOFT_COMP_H_

#include "../dev/srq_verbs_types.h"
#include "soft_pkt.h"

#include <stdbool.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_peer srq_soft_peer_t;
typedef struct srq_soft_qp   srq_soft_qp_t;
typedef struct srq_soft_swqe srq_soft_swqe_t;

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
/* Complete the finished WQEs at the head of the send queue */
void srq_soft_comp_sq(srq_soft_qp_t *qp);
/* @wqe failed with @status: it completes so, the QP goes to error */
void srq_soft_comp_swqe_error(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe,
                              enum ibv_wc_status status);
/* Is @peer alive? If not, its QPs fail (as after exhausted retries) */
bool srq_soft_comp_peer_check(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
/* At @now, the same if the peer's period (SRQ_SOFT_PEER_CHECK_NS) is over,
 * true until then; the period of a peer busy since the last tick
 * (next_check_ns 0) starts now */
bool srq_soft_comp_peer_check_at(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                                 uint64_t now);
/* The same, at most once per SRQ_SOFT_PEER_CHECK_NS and peer (true until
 * then): for back-pressure, which may last, and must cost no system call
 * per retry */
bool srq_soft_comp_peer_check_due(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
/* @peer is known dead: fail its QPs, forget it - once what it queued for
 * us before it went is taken (srq_soft_comp_dying_peers) */
void srq_soft_comp_peer_dead(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
/* Fail the QPs of dead peers whose last packets progress has now taken */
void srq_soft_comp_dying_peers(srq_soft_dev_t *dev);

#endif
