/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the inbound packet queue of an instance, in its
 * segment: many producers (any process; each claims room under a short lock
 * that survives its holder, then fills it in parallel with the others), one
 * consumer (the owner). It moves frames and knows nothing
 * of what they carry: draining hands each frame to the caller's handler.
 */
#ifndef SRQ_SOFT_RING_H_
#define SRQ_SOFT_RING_H_

#include "soft_pkt.h"
#include "soft_shm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct srq_soft_fab  srq_soft_fab_t;
typedef struct srq_soft_peer srq_soft_peer_t;

/* A frame being written into a peer's queue */
typedef struct srq_soft_tx {
    srq_soft_peer_t  *peer;
    srq_soft_pkt_t   *pkt;       /* where to write the frame */
    uint64_t          end;       /* tail after this frame */
} srq_soft_tx_t;

/* Takes one published, well-framed frame: its header (a private copy)
 * and its payload (in the queue, written by another process) */
typedef void (*srq_soft_frame_cb_t)(srq_soft_fab_t *fab,
                                    const srq_soft_pkt_t *pkt,
                                    const uint8_t *payload);

/*
 * Claim room for a frame of @frame_len bytes in @peer's queue; the caller
 * fills it (no lock held) and publishes it with srq_soft_ring_commit, which
 * it must call. EAGAIN: no room now; EBUSY: another producer has held the
 * lock for SRQ_SOFT_RING_LOCK_NS (try again later); EPIPE: the peer is gone;
 * EPROTO: the queue's indices are nonsense (a same-user writer forged
 * them): nothing can be sent there.
 */
int  srq_soft_ring_reserve(srq_soft_fab_t *fab, srq_soft_peer_t *peer,
                           uint32_t frame_len, srq_soft_tx_t *tx);
/* Publish the frame, wake the owner if it asked */
void srq_soft_ring_commit(srq_soft_fab_t *fab, srq_soft_tx_t *tx);
/* Hand up to @max frames of our own queue (PAD frames aside) to @handle;
 * returns how many it got */
unsigned srq_soft_ring_drain(srq_soft_fab_t *fab, unsigned max,
                             srq_soft_frame_cb_t handle);
/* No published frame waits in our queue */
bool srq_soft_ring_empty(srq_soft_fab_t *fab);
/* A producer has claimed the frame at our head and not published it yet:
 * it may not see our wake request (see srq_soft_ring_commit) */
bool srq_soft_ring_claimed(srq_soft_fab_t *fab);
/* How far our queue's producers have claimed: every frame queued so far
 * lies before it */
uint64_t srq_soft_ring_tail(srq_soft_fab_t *fab);
/* Our consumer took everything before @pos (a srq_soft_ring_tail) */
bool srq_soft_ring_drained_to(srq_soft_fab_t *fab, uint64_t pos);

/* A live producer holding a queue's lock longer than this (descheduled,
 * stopped, misbehaving) makes the others give up for now: no verb waits
 * for another process without bound */
#define SRQ_SOFT_RING_LOCK_NS  2000000ull

/* Take the producers' lock of the queue at @hdr, taking it over from a
 * dead holder: 0, or EBUSY after SRQ_SOFT_RING_LOCK_NS of a live one */
int  srq_soft_ring_lock(srq_soft_fab_t *fab, srq_soft_shm_hdr_t *hdr);
void srq_soft_ring_unlock(srq_soft_shm_hdr_t *hdr);

#endif
