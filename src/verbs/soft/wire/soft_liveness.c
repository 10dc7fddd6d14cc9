/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: peers' liveness, and the failure of our QPs toward
 * a dead one (soft_liveness.h says why this is a file of its own).
 */
#include "soft_liveness.h"
#include "../fabric/soft_clock.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_ring.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_sq.h"

/* As an HCA whose peer stopped answering: the oldest outstanding send
 * exhausts its retries, the rest is flushed */
static void srq_soft_liveness_fail_qp(srq_soft_qp_t *qp)
{
    if (qp->state == IBV_QPS_ERR) {
        return;
    }
    if (qp->state == IBV_QPS_RTS) {
        srq_soft_sq_complete(qp);
    }
    if (qp->sq_ci != qp->sq_pi) {
        srq_soft_sq_fail(qp, &qp->sq[qp->sq_ci & qp->sq_mask],
                         IBV_WC_RETRY_EXC_ERR);
    } else {
        srq_soft_qp_to_error(qp);
    }
}

/* Fail everything toward a dead peer, forget it */
static void srq_soft_liveness_peer_fail(srq_soft_dev_t *dev,
                                        srq_soft_peer_t *peer)
{
    srq_soft_list_t *e, *next;

    /* its QPs may be flushed out of the list below: walk a safe way */
    for (e = peer->qps.next; e != &peer->qps; e = next) {
        next = e->next;
        srq_soft_liveness_fail_qp(srq_soft_container_of(e, srq_soft_qp_t,
                                                        peer_link));
    }
    srq_soft_peer_release_dead(&dev->fab, peer);
}

/*
 * The peer is gone. What it sent before it went is in our queue, and an
 * HCA would have taken it long before its timeouts told it the peer was
 * gone: those ACKs complete our sends, those requests our receives. So its
 * QPs fail once our queue is drained up to where it is now (at once when
 * it is already), not before: a peer that ends right after its last
 * exchange leaves nothing failed that it had answered.
 */
void srq_soft_liveness_peer_dead(srq_soft_dev_t *dev,
                                 srq_soft_peer_t *peer)
{
    if (!srq_soft_peer_mark_dead(&dev->fab, peer)) {
        return;
    }
    peer->dead_pos = srq_soft_ring_tail(&dev->fab);
    if (srq_soft_ring_drained_to(&dev->fab, peer->dead_pos)) {
        srq_soft_liveness_peer_fail(dev, peer);
    } else {
        srq_soft_list_add_tail(&dev->fab.dying_peers, &peer->dying_link);
    }
}

void srq_soft_liveness_dying_peers(srq_soft_dev_t *dev)
{
    srq_soft_list_t todo, *e;
    srq_soft_peer_t *peer;

    /* one at a time from todo: failing QPs frees nothing on it but the
     * peer being handled */
    srq_soft_list_take(&todo, &dev->fab.dying_peers);
    while (!srq_soft_list_empty(&todo)) {
        e    = todo.next;
        peer = srq_soft_container_of(e, srq_soft_peer_t, dying_link);
        srq_soft_list_del(e);
        if (srq_soft_ring_drained_to(&dev->fab, peer->dead_pos)) {
            srq_soft_liveness_peer_fail(dev, peer);
        } else {
            srq_soft_list_add_tail(&dev->fab.dying_peers, e);
        }
    }
}

bool srq_soft_liveness_check(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    if (!peer->dead && !peer->is_self) {
        ++dev->stats.liveness_checks;
    }
    if (srq_soft_peer_alive(peer)) {
        return true;
    }
    srq_soft_liveness_peer_dead(dev, peer);
    return false;
}

bool srq_soft_liveness_check_at(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                                uint64_t now)
{
    if (peer->next_check_ns == 0) { /* busy since the last tick */
        peer->next_check_ns = now + SRQ_SOFT_PEER_CHECK_NS;
    }
    if (now < peer->next_check_ns) {
        return true;
    }
    peer->next_check_ns = now + SRQ_SOFT_PEER_CHECK_NS;
    return srq_soft_liveness_check(dev, peer);
}

bool srq_soft_liveness_check_due(srq_soft_dev_t *dev,
                                 srq_soft_peer_t *peer)
{
    if (peer->dead) {
        return false;
    }
    return srq_soft_liveness_check_at(dev, peer, srq_soft_now_ns());
}
