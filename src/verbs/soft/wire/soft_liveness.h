/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: whether a peer lives, and what its death does to
 * our QPs toward it.
 *
 * soft_peer.c maps peers and marks one dead; failing its QPs is QP and
 * send-queue work, above the peers, so it is here, called by whoever
 * finds a peer gone: the requester (a send it did not take), the
 * responder's ACKs, the tag matcher and progress's timer. The completer
 * plays no part (it only completes what a peer answered).
 */
#ifndef SRQ_SOFT_LIVENESS_H_
#define SRQ_SOFT_LIVENESS_H_

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_peer srq_soft_peer_t;

/* Is @peer alive? If not, its QPs fail (as after exhausted retries) */
bool srq_soft_liveness_check(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
/* At @now, the same if the peer's period (SRQ_SOFT_PEER_CHECK_NS) is over,
 * true until then; the period of a peer busy since the last tick
 * (next_check_ns 0) starts now */
bool srq_soft_liveness_check_at(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                                uint64_t now);
/* The same, at most once per SRQ_SOFT_PEER_CHECK_NS and peer (true until
 * then): for back-pressure, which may last, and must cost no system call
 * per retry */
bool srq_soft_liveness_check_due(srq_soft_dev_t *dev,
                                 srq_soft_peer_t *peer);
/* @peer is known dead: fail its QPs, forget it - once what it queued for
 * us before it went is taken (srq_soft_liveness_dying_peers) */
void srq_soft_liveness_peer_dead(srq_soft_dev_t *dev,
                                 srq_soft_peer_t *peer);
/* Fail the QPs of dead peers whose last packets progress has now taken */
void srq_soft_liveness_dying_peers(srq_soft_dev_t *dev);

#endif
