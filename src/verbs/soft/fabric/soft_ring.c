/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the inbound packet queue of an instance.
 *
 * One queue per instance, whatever the number of QPs: receive progress is a
 * look at one frame header. A producer (any process, ourselves included)
 * sends a frame in three steps:
 *   1. claim: under the producers' lock, a few stores - the frame's length,
 *      its `pos` set to the producer's claim (its process id, which never
 *      looks like a published tag), then the shared tail moved past it;
 *   2. fill: header and payload, outside any lock, so that senders to one
 *      receiver copy in parallel;
 *   3. publish: a release-store of the frame's tagged ring position to
 *      `pos`, the cache line the consumer polls.
 * The owner is the only consumer: it takes frames in ring order as they are
 * published and release-stores its head so producers can reuse the space.
 * Producers cache the consumer's head and re-read it only when the cached
 * value says the ring is full.
 *
 * A producer that dies while claiming (it holds the lock) moved the tail or
 * not: if not, the next producer takes the lock over and claims the same
 * place; if so, its frame is claimed under its own id. A claimed frame at
 * the head whose claimer is dead is skipped (looked at only now and then,
 * the way the corruption check is), so no other producer's frame is lost. A
 * live claimer is waited for: it is copying. A tail beyond a head frame that
 * is neither published nor claimed means corruption: the consumer drops
 * everything up to the tail and counts it.
 *
 * A frame never wraps: when it does not fit before the end of the ring the
 * producer first fills the rest with a PAD frame, published at once.
 */
#include "soft_ring.h"
#include "../srq_soft_api.h"
#include "soft_clock.h"
#include "soft_fab.h"
#include "soft_lock.h"
#include "soft_peer.h"
#include "soft_pipe.h"
#include "soft_pkt.h"
#include "soft_proc.h"
#include "soft_shm.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define SRQ_SOFT_RING_MASK  ((uint64_t)SRQ_SOFT_RING_SIZE - 1)

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
/*
 * ThreadSanitizer does not know that a producer's mapping of our queue and
 * our own are one memory (one memfd mapped at two addresses), so it misses
 * that publishing a frame (a release store of its pos) and taking it (an
 * acquire load) order the producer's writes - the payload it read from the
 * program's buffer among them - before the consumer's, when both instances
 * live in one process, as the verbs tests' two devices do. A sync word per
 * instance, the same in both (found from the instance's id), tells it.
 */
static char srq_soft_ring_tsan_words[64];

static void *srq_soft_ring_tsan_word(const uint8_t *instance)
{
    unsigned h = 0, i;

    for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
        h = h * 31 + instance[i];
    }
    return &srq_soft_ring_tsan_words[h % sizeof(srq_soft_ring_tsan_words)];
}

#define srq_soft_ring_tsan_release(_instance) \
    __tsan_release(srq_soft_ring_tsan_word(_instance))
#define srq_soft_ring_tsan_acquire(_instance) \
    __tsan_acquire(srq_soft_ring_tsan_word(_instance))
#else
#define srq_soft_ring_tsan_release(_instance)  do { } while (0)
#define srq_soft_ring_tsan_acquire(_instance)  do { } while (0)
#endif

static inline uint64_t srq_soft_load_acq(const uint64_t *p)
{
    return atomic_load_explicit((_Atomic uint64_t*)p, memory_order_acquire);
}

static inline void srq_soft_store_rel(uint64_t *p, uint64_t v)
{
    atomic_store_explicit((_Atomic uint64_t*)p, v, memory_order_release);
}

static uint64_t srq_soft_align_cell(uint64_t v)
{
    return (v + SRQ_SOFT_CELL - 1) & ~(uint64_t)(SRQ_SOFT_CELL - 1);
}

static srq_soft_pkt_t *srq_soft_ring_at(uint8_t *ring, uint64_t pos)
{
    return (srq_soft_pkt_t*)(ring + (pos & SRQ_SOFT_RING_MASK));
}

/* ---- the producers' lock -----------------------------------------------
 *
 * A spinlock in shared memory whose word names its holder (pid and start
 * time, srq_soft_proc_id). Taking it is one CAS, tried only when a load
 * saw it free: waiters share the line while it is held instead of taking
 * it from each other and from the holder, who writes the tail there and
 * releases it. It covers a claim only, never a copy. A holder that died
 * (checked after spinning a while) is replaced by a CAS from its word to
 * ours: it moved the tail past its claim or it claimed nothing.
 */
int srq_soft_ring_lock(srq_soft_fab_t *fab, srq_soft_shm_hdr_t *hdr)
{
    _Atomic uint64_t *word = (_Atomic uint64_t*)&hdr->prod_lock;
    unsigned spins = 0;
    uint64_t cur, give_up = 0;

    for (;;) {
        cur = atomic_load_explicit(word, memory_order_relaxed);
        if (cur == 0) {
            if (atomic_compare_exchange_weak_explicit(word, &cur,
                                                      fab->lock_id,
                                                      memory_order_acquire,
                                                      memory_order_relaxed)) {
                return 0;
            }
            if (cur == 0) {
                continue; /* spurious failure */
            }
        }
        /* before yielding, a holder that died (a live one that lost its
         * CPU gets it back sooner for the yield) */
        if ((spins + 1 >= SRQ_SOFT_LOCK_SPINS) && srq_soft_proc_id_dead(cur) &&
            atomic_compare_exchange_strong_explicit(word, &cur, fab->lock_id,
                                                    memory_order_acquire,
                                                    memory_order_relaxed)) {
            ++fab->stats->producer_recovered;
            return 0;
        }
        /* a live holder: the clock is read once a yield, not per look */
        if (spins + 1 >= SRQ_SOFT_LOCK_SPINS) {
            if (give_up == 0) {
                give_up = srq_soft_now_ns() + SRQ_SOFT_RING_LOCK_NS;
            } else if (srq_soft_now_ns() >= give_up) {
                ++fab->stats->tx_lock_busy;
                return EBUSY;
            }
        }
        srq_soft_lock_backoff(&spins);
    }
}

void srq_soft_ring_unlock(srq_soft_shm_hdr_t *hdr)
{
    atomic_store_explicit((_Atomic uint64_t*)&hdr->prod_lock, 0,
                          memory_order_release);
}

static bool srq_soft_seg_active(const srq_soft_seg_t *seg)
{
    return atomic_load_explicit((_Atomic uint32_t*)&seg->tab->state,
                                memory_order_acquire) == SRQ_SOFT_SEG_ACTIVE;
}

/* Fill [tail, end of ring) with a published PAD frame */
static uint64_t srq_soft_ring_pad(srq_soft_shm_hdr_t *hdr, uint8_t *ring,
                                  uint64_t tail, uint32_t len)
{
    srq_soft_pkt_t *pad = srq_soft_ring_at(ring, tail);

    pad->magic     = SRQ_SOFT_PKT_MAGIC;
    pad->opcode    = SRQ_SOFT_OP_PAD;
    pad->frame_len = len;
    srq_soft_store_rel(&pad->pos, srq_soft_pos_tag(tail));
    srq_soft_store_rel(&hdr->tail, tail + len);
    return tail + len;
}

/* Room for @need bytes after @tail: 0, EAGAIN (full) or EPROTO (the
 * consumer's head is not within one ring behind the tail: indices nobody
 * following the protocol wrote). Re-reads the consumer's head only when the
 * cached one says no: that line belongs to the consumer. */
static int srq_soft_ring_room(srq_soft_peer_t *peer, uint64_t tail,
                              uint64_t need)
{
    if (tail + need - peer->cached_head <= SRQ_SOFT_RING_SIZE) {
        return 0;
    }
    peer->cached_head = srq_soft_load_acq(&peer->seg.hdr->head);
    if ((tail < peer->cached_head) ||
        (tail - peer->cached_head > SRQ_SOFT_RING_SIZE)) {
        return EPROTO;
    }
    return (tail + need - peer->cached_head <= SRQ_SOFT_RING_SIZE) ? 0 :
           EAGAIN;
}

/* A claim never reads as a published frame: those have bit 63 set */
static uint64_t srq_soft_claim_tag(uint64_t lock_id)
{
    return lock_id & ~(1ull << 63);
}

/*
 * Claim room for a frame of @frame_len bytes in @peer's queue: the caller
 * fills the frame and publishes it with srq_soft_ring_commit. EAGAIN: no
 * room now; EBUSY: the lock is held too long; EPIPE: the peer is gone;
 * EPROTO: its queue's indices are nonsense.
 */
int srq_soft_ring_reserve(srq_soft_fab_t *fab, srq_soft_peer_t *peer,
                          uint32_t frame_len, srq_soft_tx_t *tx)
{
    srq_soft_shm_hdr_t *hdr = peer->seg.hdr;
    uint64_t tail, contig, pad;
    srq_soft_pkt_t *pkt;
    int ret;

    if (peer->dead || !srq_soft_seg_active(&peer->seg)) {
        return EPIPE;
    }
    if (srq_soft_ring_lock(fab, hdr) != 0) {
        return EBUSY;
    }

    /* a misbehaving producer may have left a misaligned tail */
    tail   = srq_soft_align_cell(hdr->tail);
    contig = SRQ_SOFT_RING_SIZE - (tail & SRQ_SOFT_RING_MASK);
    pad    = (frame_len > contig) ? contig : 0;
    ret = srq_soft_ring_room(peer, tail, pad + frame_len);
    if (ret != 0) {
        srq_soft_ring_unlock(hdr);
        ++fab->stats->tx_ring_full;
        return ret;
    }
    if (pad != 0) {
        tail = srq_soft_ring_pad(hdr, peer->seg.ring, tail, (uint32_t)pad);
    }

    /* the claim is complete before the tail makes it the consumer's */
    pkt            = srq_soft_ring_at(peer->seg.ring, tail);
    pkt->frame_len = frame_len;
    srq_soft_store_rel(&pkt->pos, srq_soft_claim_tag(fab->lock_id));
    srq_soft_store_rel(&hdr->tail, tail + frame_len);
    srq_soft_ring_unlock(hdr);

    tx->peer = peer;
    tx->pkt  = pkt;
    tx->end  = tail + frame_len;
    return 0;
}

/*
 * Publish the frame (the framing fields are set here, the length was set by
 * the claim), then wake the owner if it asked to be woken. No fence: an
 * owner about to sleep that finds our claim but not the frame lets its
 * timer look again (srq_soft_ring_claimed).
 */
void srq_soft_ring_commit(srq_soft_fab_t *fab, srq_soft_tx_t *tx)
{
    tx->pkt->magic = SRQ_SOFT_PKT_MAGIC;
    srq_soft_ring_tsan_release(tx->peer->instance);
    srq_soft_store_rel(&tx->pkt->pos,
                       srq_soft_pos_tag(tx->end - tx->pkt->frame_len));
    ++fab->stats->tx_packets;
    srq_soft_pipe_wake(tx->peer);
}

static bool srq_soft_frame_published(srq_soft_fab_t *fab, uint64_t head)
{
    return srq_soft_load_acq(&srq_soft_ring_at(fab->seg.ring, head)->pos) ==
           srq_soft_pos_tag(head);
}

/* (A corrupt tail is found by srq_soft_ring_drain, not here) */
bool srq_soft_ring_empty(srq_soft_fab_t *fab)
{
    return !srq_soft_frame_published(fab, fab->rx_head);
}

bool srq_soft_ring_claimed(srq_soft_fab_t *fab)
{
    return srq_soft_ring_empty(fab) &&
           (srq_soft_load_acq(&fab->seg.hdr->tail) != fab->rx_head);
}

uint64_t srq_soft_ring_tail(srq_soft_fab_t *fab)
{
    return srq_soft_align_cell(srq_soft_load_acq(&fab->seg.hdr->tail));
}

bool srq_soft_ring_drained_to(srq_soft_fab_t *fab, uint64_t pos)
{
    return (int64_t)(fab->rx_head - pos) >= 0;
}

/* Framing is lost (corruption): drop everything published so far */
static uint64_t srq_soft_ring_resync(srq_soft_fab_t *fab)
{
    srq_soft_shm_hdr_t *hdr = fab->seg.hdr;
    uint64_t tail;

    ++fab->stats->rx_dropped;
    if (srq_soft_ring_lock(fab, hdr) != 0) {
        return srq_soft_load_acq(&hdr->tail);
    }
    tail = srq_soft_align_cell(hdr->tail);
    srq_soft_store_rel(&hdr->tail, tail);
    srq_soft_ring_unlock(hdr);
    return tail;
}

static bool srq_soft_frame_ok(const srq_soft_pkt_t *h, uint64_t head)
{
    uint64_t contig = SRQ_SOFT_RING_SIZE - (head & SRQ_SOFT_RING_MASK);

    return (h->magic == SRQ_SOFT_PKT_MAGIC) &&
           (h->pos == srq_soft_pos_tag(head)) &&
           (h->frame_len >= SRQ_SOFT_CELL) &&
           ((h->frame_len % SRQ_SOFT_CELL) == 0) && (h->frame_len <= contig);
}

/*
 * The frame at @head is not published. Where it should be by now (the tail
 * is beyond it), it is claimed by a producer (wait for a live one, skip a
 * dead one's) or the framing is lost. Returns the new head.
 */
static uint64_t srq_soft_ring_unpublished(srq_soft_fab_t *fab, uint64_t head)
{
    const srq_soft_pkt_t *pkt = srq_soft_ring_at(fab->seg.ring, head);
    uint64_t tail, pos;
    uint32_t len;

    /* only now and then: the tail's cache line belongs to the producers */
    if ((++fab->rx_idle_polls % SRQ_SOFT_TICK_CALLS) != 0) {
        return head;
    }
    tail = srq_soft_load_acq(&fab->seg.hdr->tail);
    if ((int64_t)(tail - head) <= 0) {
        return head; /* nothing claimed */
    }
    pos = srq_soft_load_acq(&pkt->pos); /* after the tail: the claim */
    if (pos == srq_soft_pos_tag(head)) {
        return head; /* published meanwhile */
    }
    len = pkt->frame_len;
    if ((pos & (1ull << 63)) || (len < SRQ_SOFT_CELL) ||
        (len % SRQ_SOFT_CELL) ||
        (len > SRQ_SOFT_RING_SIZE - (head & SRQ_SOFT_RING_MASK)) ||
        (len > tail - head)) {
        return srq_soft_ring_resync(fab);
    }
    /* the claim lost bit 63 of the claimer's id */
    if (!srq_soft_proc_id_dead(pos) ||
        !srq_soft_proc_id_dead(pos | (1ull << 63))) {
        /* copying: it publishes soon - or it lost its CPU in between, and
         * then our spinning keeps it from publishing: give it the CPU, as
         * a lock waiter does to the holder */
        sched_yield();
        return head;
    }
    ++fab->stats->producer_recovered;
    ++fab->stats->rx_dropped; /* its frame: a lost packet */
    return head + len;
}

unsigned srq_soft_ring_drain(srq_soft_fab_t *fab, unsigned max,
                             srq_soft_frame_cb_t handle)
{
    uint64_t head = fab->rx_head, next;
    const uint8_t *frame;
    srq_soft_pkt_t h;
    unsigned n = 0;

    while (n < max) {
        if (!srq_soft_frame_published(fab, head)) {
            next = srq_soft_ring_unpublished(fab, head);
            if (next == head) {
                break;
            }
            head = next;
            continue;
        }
        srq_soft_ring_tsan_acquire(fab->instance);
        frame = (const uint8_t*)srq_soft_ring_at(fab->seg.ring, head);
        /* a private copy: a producer must not change what we validated */
        memcpy(&h, frame, sizeof(h));
        if (!srq_soft_frame_ok(&h, head)) {
            head = srq_soft_ring_resync(fab);
            break;
        }
        if (h.opcode != SRQ_SOFT_OP_PAD) {
            handle(fab, &h, frame + sizeof(h));
            ++n;
        }
        head += h.frame_len;
    }

    if (head != fab->rx_head) {
        fab->rx_head = head;
        srq_soft_store_rel(&fab->seg.hdr->head, head);
    }
    return n;
}

