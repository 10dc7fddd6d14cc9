/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: peers, the device instances (possibly ourselves)
 * we send packets to, and their liveness.
 */
#ifndef SRQ_SOFT_PEER_H_
#define SRQ_SOFT_PEER_H_

#include "soft_fab.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

srq_soft_peer_t *srq_soft_peer_get(srq_soft_fab_t *fab,
                                   const uint8_t *instance);
void srq_soft_peer_put(srq_soft_fab_t *fab, srq_soft_peer_t *peer);
void srq_soft_peers_destroy(srq_soft_fab_t *fab);
/* Still alive? false for a peer found dead, now or before: the caller
 * fails its QPs (srq_soft_liveness_check does both) */
bool srq_soft_peer_alive(const srq_soft_peer_t *peer);
/* Death, in two steps around failing its QPs: mark it (false: it was
 * already dead, or is ourselves), then let it go (unmapped with its last
 * reference) */
bool srq_soft_peer_mark_dead(srq_soft_fab_t *fab, srq_soft_peer_t *peer);
void srq_soft_peer_release_dead(srq_soft_fab_t *fab, srq_soft_peer_t *peer);

#endif
