/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the progress engine, run (under dev->lock) by every
 * ibv_poll_cq (device/soft_cq_poll.c) and srq_verbs_get_cq_event
 * (device/soft_wait.c):
 *
 *   1. drain a bounded batch of the instance's one inbound queue, handing
 *      each frame to the responder (requests) or the completer (ACK/NAK):
 *      O(1) in the number of QPs when idle;
 *   2. send the ACK/NAK each touched QP owes (coalesced per batch), and
 *      fail the QPs of dead peers whose last packets were in that batch;
 *   3. QPs with deferred send work (full target queue, RNR wait);
 *   4. on a coarse tick, and only while there is outstanding work: transport
 *      timeouts of QPs with unacknowledged packets, and liveness of the
 *      peers they talk to.
 */
#include "soft_progress.h"
#include "../fabric/soft_clock.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_sq.h"
#include "soft_comp.h"
#include "soft_liveness.h"
#include "soft_req.h"
#include "soft_resp.h"
#include "soft_resp_ack.h"

#include <errno.h>
#include <stdatomic.h>

/* A frame from our inbound queue: requests to the responder, ACK/NAK to
 * the completer, anything else is dropped */
static void srq_soft_progress_frame(srq_soft_fab_t *fab,
                                    const srq_soft_pkt_t *pkt,
                                    const uint8_t *payload)
{
    srq_soft_dev_t *dev = srq_soft_fab_dev(fab);

    switch (pkt->opcode) {
    case SRQ_SOFT_OP_SEND:
    case SRQ_SOFT_OP_WRITE_IMM:
    case SRQ_SOFT_OP_CMP_SWAP:
    case SRQ_SOFT_OP_FETCH_ADD:
    case SRQ_SOFT_OP_ATOMIC_WRITE:
    case SRQ_SOFT_OP_ACCESS_ERR:
    case SRQ_SOFT_OP_WRITE:
    case SRQ_SOFT_OP_READ:
        /* the ACK it carries first, as the ACK frame it saved would
         * have come before it */
        if ((pkt->flags & (SRQ_SOFT_PKT_F_ACK | SRQ_SOFT_PKT_F_UD)) ==
            SRQ_SOFT_PKT_F_ACK) {
            srq_soft_comp_carried_ack(dev, pkt);
        }
        srq_soft_resp_recv(dev, pkt, payload);
        break;
    case SRQ_SOFT_OP_ATOMIC_ACK:
        if (pkt->frame_len != SRQ_SOFT_CELL) {
            ++dev->stats.rx_dropped;
            break;
        }
        srq_soft_comp_atomic_ack(dev, pkt, payload);
        break;
    case SRQ_SOFT_OP_READ_RESP:
        /* the data, or (F_PULL) none: the requester reads it */
        if ((pkt->flags & SRQ_SOFT_PKT_F_PULL) ?
            ((pkt->flags != SRQ_SOFT_PKT_F_PULL) ||
             (pkt->frame_len != SRQ_SOFT_CELL)) :
            ((pkt->length > SRQ_SOFT_PKT_INLINE_MAX) ||
             (srq_soft_frame_len(pkt->length) > pkt->frame_len))) {
            ++dev->stats.rx_dropped;
            break;
        }
        srq_soft_comp_read_resp(dev, pkt, payload);
        break;
    case SRQ_SOFT_OP_ACK:
    case SRQ_SOFT_OP_NAK:
        if (pkt->frame_len != SRQ_SOFT_CELL) {
            ++dev->stats.rx_dropped;
            break;
        }
        srq_soft_comp_ack(dev, pkt);
        break;
    default:
        ++dev->stats.rx_dropped;
        break;
    }
}

/* QPs with deferred send work whose wait (if any) is over */
static void srq_soft_progress_sched(srq_soft_dev_t *dev, uint64_t now)
{
    srq_soft_list_t todo, *e;
    srq_soft_qp_t *qp;

    /* take the list: a QP that is still blocked puts itself back */
    srq_soft_list_take(&todo, &dev->sched_qps);

    while (!srq_soft_list_empty(&todo)) {
        e  = todo.next;
        qp = srq_soft_container_of(e, srq_soft_qp_t, sched_link);
        srq_soft_list_del(e);
        ++dev->stats.qps_inspected;
        if ((qp->wait != SRQ_SOFT_WAIT_NONE) && (now < qp->wait_until)) {
            srq_soft_req_sched(qp);
            continue;
        }
        qp->wait = SRQ_SOFT_WAIT_NONE;
        srq_soft_req_progress(qp);
    }
}

static uint64_t srq_soft_peer_gen(const srq_soft_qp_t *qp)
{
    return atomic_load_explicit(
               (_Atomic uint64_t*)&qp->peer->seg.hdr->progress_gen,
               memory_order_acquire);
}

/*
 * No ACK, but no loss either: the peer's device has not run since (an HCA
 * would have ACKed without its CPU; a descheduled or stopped process's
 * device does not run). Our last packet still waits in its queue; or its
 * device has not finished two rounds since it took it (the round that
 * took it, and the next, in which an ACK waiting for a reply goes, each
 * ending with the ACKs owed sent); or our own queue holds frames we have
 * not read, the ACK maybe among them. Only a packet that the peer's
 * device took and answered nothing to (its QP not ready, a PSN it does
 * not expect) is a loss, and costs a retry.
 */
static bool srq_soft_peer_behind(srq_soft_qp_t *qp)
{
    uint64_t head = atomic_load_explicit(
                        (_Atomic uint64_t*)&qp->peer->seg.hdr->head,
                        memory_order_acquire);
    srq_soft_qp_ent_t ent;

    /* a destination QP not ready, or not ours, answers nothing however
     * long we wait: a loss now, as a one-sided request finds it
     * (srq_soft_req_dropped). Waiting for an idle peer's rounds here cost
     * atomics to a QP in error 35 s instead of 6 */
    if (!srq_soft_qp_dest_takes(qp, &ent)) {
        return false;
    }
    if ((int64_t)(head - qp->tx_pos) < 0) {
        qp->tx_gen = srq_soft_peer_gen(qp);
        return true;
    }
    return (srq_soft_peer_gen(qp) - qp->tx_gen < 2) ||
           !srq_soft_ring_empty(&qp->dev->fab);
}

/* No ACK within the local ACK timeout: resend (a packet the responder
 * dropped, e.g. for a QP not ready yet), or give up. UC: its own check */
static void srq_soft_progress_timeout(srq_soft_qp_t *qp, uint64_t now)
{
    uint64_t to = srq_soft_timeout_ns(qp->attr.timeout);

    if (srq_soft_qp_is_uc(qp)) {
        srq_soft_comp_uc_check(qp); /* UC has no ACK timeout */
        return;
    }
    if ((to == UINT64_MAX) || (qp->sq_tx == qp->sq_ci) ||
        (qp->wait != SRQ_SOFT_WAIT_NONE)) {
        return;
    }
    if (qp->tx_time == 0) {
        qp->tx_time = now; /* first tick since it was sent or acked */
        qp->tx_gen  = srq_soft_peer_gen(qp);
        return;
    }
    /* tx_time may be newer than @now: progress resent something since */
    if ((now < qp->tx_time) || (now - qp->tx_time < to)) {
        return;
    }
    if (srq_soft_peer_behind(qp)) {
        qp->tx_time = now; /* a slow peer is no lost packet: no retry */
        ++qp->dev->stats.slow_peer_waits;
        return;
    }
    if (qp->retry_left <= 0) { /* -1: a one-sided retry spent the last */
        srq_soft_sq_fail(qp, &qp->sq[qp->sq_ci & qp->sq_mask],
                         IBV_WC_RETRY_EXC_ERR);
        return;
    }
    --qp->retry_left;
    qp->sq_tx   = qp->sq_ci;
    qp->tx_time = now;
    srq_soft_req_progress(qp);
}

/*
 * Our packets wait at @peer and its device has not finished a round since
 * our last tick: its owner stopped polling, and its thread may be leaving
 * a polling owner alone for a while (soft_wait.c) and did not ask to be
 * poked. An HCA would have taken them meanwhile: poke its pipe, once per
 * round it stands still, so that its thread runs now rather than at its
 * next look. The busy-polling fast path never gets here (a peer that polls
 * finishes rounds all the time), and a peer that asked to be poked was,
 * when the packet was published.
 */
static void srq_soft_progress_nudge(srq_soft_dev_t *dev,
                                    srq_soft_peer_t *peer)
{
    uint32_t gen = (uint32_t)atomic_load_explicit(
                       (_Atomic uint64_t*)&peer->seg.hdr->progress_gen,
                       memory_order_acquire);

    if (peer->is_self || (gen != peer->nudge_gen)) {
        peer->nudge_gen = gen;
        peer->nudged    = false;
        return;
    }
    if (!peer->nudged) {
        peer->nudged = true;
        ++dev->stats.peer_nudges;
        srq_soft_pipe_nudge(peer);
    }
}

/*
 * Each element is put back on its list before it is handled: handling may
 * fail QPs (and take them off their lists), possibly others still in todo,
 * which is why the loops take one element at a time from todo.
 */
static void srq_soft_progress_tick(srq_soft_dev_t *dev, uint64_t now)
{
    srq_soft_list_t todo, *e;
    srq_soft_peer_t *peer;
    srq_soft_qp_t *qp;

    srq_soft_list_take(&todo, &dev->busy_qps);
    while (!srq_soft_list_empty(&todo)) {
        e = todo.next;
        srq_soft_list_del(e);
        srq_soft_list_add_tail(&dev->busy_qps, e);
        qp = srq_soft_container_of(e, srq_soft_qp_t, busy_link);
        ++dev->stats.qps_inspected;
        srq_soft_progress_timeout(qp, now);
    }

    srq_soft_list_take(&todo, &dev->fab.busy_peers);
    while (!srq_soft_list_empty(&todo)) {
        e = todo.next;
        srq_soft_list_del(e);
        srq_soft_list_add_tail(&dev->fab.busy_peers, e);
        peer = srq_soft_container_of(e, srq_soft_peer_t, busy_link);
        if (srq_soft_liveness_check_at(dev, peer, now)) {
            srq_soft_progress_nudge(dev, peer);
        }
    }
}

/* The ACKs owed; @all false: not those waiting a call for a reply */
static void srq_soft_progress_send_acks(srq_soft_dev_t *dev, bool all)
{
    if (!srq_soft_list_empty(&dev->ack_qps)) {
        srq_soft_resp_send_acks(dev, all);
    }
}

/* This round's ACKs are out: peers' timers may tell (srq_soft_peer_behind).
 * The owner's line, which peers read only on a timer tick */
static void srq_soft_progress_round_done(srq_soft_dev_t *dev)
{
    _Atomic uint64_t *gen = (_Atomic uint64_t*)&dev->fab.seg.hdr->progress_gen;

    atomic_store_explicit(gen, atomic_load_explicit(gen, memory_order_relaxed)
                          + 1, memory_order_release);
}

/* Timed work: read the clock only every SRQ_SOFT_TICK_CALLS calls, or
 * when a QP waits for a moment (RNR) */
static void srq_soft_progress_timed(srq_soft_dev_t *dev)
{
    bool waiting = !srq_soft_list_empty(&dev->sched_qps);
    uint64_t now;

    if (!waiting && (++dev->tick_calls < SRQ_SOFT_TICK_CALLS)) {
        return;
    }
    dev->tick_calls = 0;
    now = srq_soft_now_ns();
    if (waiting) {
        srq_soft_progress_sched(dev, now);
    }
    if (now >= dev->next_tick_ns) {
        dev->next_tick_ns = now + SRQ_SOFT_TICK_NS;
        srq_soft_progress_tick(dev, now);
    }
}

void srq_soft_progress(srq_soft_dev_t *dev)
{
    /* read without the lock by an empty poll (srq_soft_poll_cq) */
    srq_soft_stat_inc_shared(&dev->stats.progress_calls);
    /* a producer took our wake request: its byte must not keep the pipe
     * readable (and channel fds spinning) forever. With a progress thread
     * and no channel holding the pipe, the byte is what wakes the thread,
     * which may be asleep while we poll; it is ours to take when a channel
     * holds it, since we are running the device now */
    if (dev->wake_armed &&
        (!dev->thread_started || (dev->pipe_channel != NULL)) &&
        (atomic_load_explicit(srq_soft_wake_req(dev),
                                                 memory_order_relaxed) == 0)) {
        srq_soft_fd_drain(dev->fab.pipe_fd);
        dev->wake_armed = false;
    }

    srq_soft_ring_drain(&dev->fab, SRQ_SOFT_RX_BATCH, srq_soft_progress_frame);
    /* ACK (coalesced: one per QP per call) what this call took in, but for
     * ACKs a reply may carry: they wait one call (soft_resp.c). A caller
     * about to sleep sends them all first (srq_soft_progress_acks) */
    srq_soft_progress_send_acks(dev, false);
    srq_soft_progress_round_done(dev);
    if (!srq_soft_list_empty(&dev->fab.dying_peers)) {
        srq_soft_liveness_dying_peers(dev);
    }
    if (srq_soft_list_empty(&dev->sched_qps) &&
        srq_soft_list_empty(&dev->busy_qps) &&
        srq_soft_list_empty(&dev->fab.busy_peers)) {
        return; /* idle: no clock read, no QP looked at */
    }
    srq_soft_progress_timed(dev);
}

void srq_soft_progress_beside(srq_soft_dev_t *dev)
{
    dev->guard_copies = true;
    srq_soft_progress(dev);
    dev->guard_copies = false;
}

/* Send every ACK owed now (before a caller may sleep, before a QP is
 * modified or destroyed) */
void srq_soft_progress_acks(srq_soft_dev_t *dev)
{
    srq_soft_progress_send_acks(dev, true);
}
