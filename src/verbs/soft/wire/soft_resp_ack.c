/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's answers - the ACK/NAK a QP owes,
 * coalesced and sent at the end of a progress call, READ responses and
 * the kept results of atomics (soft_resp.c decides what is owed).
 */
#include "soft_resp_ack.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "soft_atomic.h"
#include "soft_liveness.h"

#include <errno.h>
#include <string.h>

/* ---- ACK / NAK --------------------------------------------------------
 *
 * What a QP owes is on dev->ack_qps, sent at the end of the progress call
 * (coalesced: one per QP), or carried by the next request the QP sends
 * the other way (soft_req.c: a reply). On a QP whose last reply followed
 * its request at once, the ACK of a message just placed waits one more
 * progress call for such a reply (built-in instances only); sent on its
 * own after all, it ends that (the next ACKs go at once) until a reply
 * comes right after a request again. A
 * one-way stream so waits once; NAKs, duplicates' ACKs and atomic results
 * never wait; everything owed goes before the device's owner may sleep
 * (soft_wait.c) and before a QP is modified or destroyed (soft_device.c).
 */

/* Does the ACK @qp owes wait for the next call? */
static bool srq_soft_resp_ack_waits(const srq_soft_qp_t *qp, bool all)
{
    return !all && !qp->nak && (qp->ack_call != 0) &&
           (qp->ack_call == qp->dev->stats.progress_calls);
}

/* A response frame to the requester: 0, EAGAIN (no room: try again
 * later) or EPIPE. @data, @len: an ATOMIC_ACK's original value, a
 * READ_RESP's data; @flags SRQ_SOFT_PKT_F_PULL: a READ_RESP of @len
 * bytes without them (@data unused) */
static int srq_soft_resp_ctrl_frame(srq_soft_qp_t *qp, uint8_t opcode,
                                    uint8_t flags, uint32_t aux, uint32_t psn,
                                    const void *data, size_t len)
{
    size_t payload = (flags & SRQ_SOFT_PKT_F_PULL) ? 0 : len;
    srq_soft_tx_t tx;
    srq_soft_pkt_t *pkt;
    int ret;

    ret = srq_soft_ring_reserve(&qp->dev->fab, qp->peer,
                                srq_soft_frame_len(payload), &tx);
    if (ret != 0) {
        /* a lock held by another producer: to us, no room now */
        return (ret == EBUSY) ? EAGAIN : (ret == EPROTO) ? EPIPE : ret;
    }
    pkt          = tx.pkt;
    pkt->opcode  = opcode;
    pkt->flags   = flags;
    pkt->nsge    = 0;
    pkt->dst_qpn = qp->attr.dest_qp_num;
    pkt->src_qpn = qp->ibv.qp_num;
    pkt->psn     = psn;
    pkt->imm     = 0;
    pkt->length  = (uint32_t)len;
    pkt->aux     = aux;
    memcpy(pkt->src_inst, qp->dev->fab.instance, SRQ_SOFT_INST_LEN);
    pkt->src_lid = qp->dev->lid;
    if (payload > 0) {
        memcpy(pkt + 1, data, payload);
    }
    srq_soft_ring_commit(&qp->dev->fab, &tx);
    return 0;
}

/* 0, EAGAIN (no room: try again later) or EPIPE */
int srq_soft_resp_ctrl(srq_soft_qp_t *qp, uint8_t nak, uint32_t psn)
{
    /* an RNR NAK carries our timer: the requester waits that long */
    return srq_soft_resp_ctrl_frame(qp, nak ? SRQ_SOFT_OP_NAK : SRQ_SOFT_OP_ACK,
                                    0, nak | ((uint32_t)qp->attr.min_rnr_timer
                                              << 8), psn, NULL, 0);
}

/*
 * A UC message no QP of ours takes (gone, reset, not connected to its
 * sender) is lost on the way; its sender's WR completes all the same, as a
 * UC requester's does once the message has left. Its device learns that
 * the message has left from this ACK (no QP owes it: to the instance and
 * QP the packet names). Best effort: a queue with no room loses it, as a
 * packet can be lost.
 */
void srq_soft_resp_uc_lost(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt)
{
    srq_soft_peer_t *peer = srq_soft_peer_get(&dev->fab, pkt->src_inst);
    srq_soft_tx_t tx;

    if (peer == NULL) {
        return; /* its sender is gone too */
    }
    if (srq_soft_ring_reserve(&dev->fab, peer, srq_soft_frame_len(0),
                              &tx) == 0) {
        tx.pkt->opcode  = SRQ_SOFT_OP_ACK;
        tx.pkt->flags   = 0;
        tx.pkt->nsge    = 0;
        tx.pkt->dst_qpn = pkt->src_qpn;
        tx.pkt->src_qpn = pkt->dst_qpn;
        tx.pkt->psn     = pkt->psn;
        tx.pkt->imm     = 0;
        tx.pkt->length  = 0;
        tx.pkt->aux     = 0;
        memcpy(tx.pkt->src_inst, dev->fab.instance, SRQ_SOFT_INST_LEN);
        tx.pkt->src_lid = dev->lid;
        srq_soft_ring_commit(&dev->fab, &tx);
    }
    srq_soft_peer_put(&dev->fab, peer);
}

/* A READ's answer: @len bytes of @data, or with @data NULL none (the
 * requester reads them itself: a READ over SRQ_SOFT_PKT_INLINE_MAX) */
int srq_soft_resp_read_resp(srq_soft_qp_t *qp, uint32_t psn,
                            const void *data, uint32_t len)
{
    return srq_soft_resp_ctrl_frame(qp, SRQ_SOFT_OP_READ_RESP,
                                    data ? 0 : SRQ_SOFT_PKT_F_PULL, 0, psn,
                                    data, len);
}

/* A kept result: an ATOMIC_ACK, or a READ_RESP (its data copied, or
 * none) */
int srq_soft_resp_atomic_ack(srq_soft_qp_t *qp,
                             const srq_soft_atomic_res_t *res)
{
    if (res->read) {
        return srq_soft_resp_read_resp(qp, res->psn, res->data, res->len);
    }
    return srq_soft_resp_ctrl_frame(qp, SRQ_SOFT_OP_ATOMIC_ACK, 0, 0,
                                    res->psn, &res->orig, sizeof(res->orig));
}

/* Send the atomic results not sent yet, oldest first: 0, EAGAIN or EPIPE */
int srq_soft_resp_atomic_flush(srq_soft_qp_t *qp)
{
    const srq_soft_atomic_res_t *res;
    int ret;

    while ((res = srq_soft_atomic_unsent(qp)) != NULL) {
        ret = srq_soft_resp_atomic_ack(qp, res);
        if (ret != 0) {
            return ret;
        }
        srq_soft_atomic_mark_sent(qp);
    }
    return 0;
}

/*
 * Send the ACK/NAK each QP owes: one per QP per progress call; with @all
 * false, not those that wait one call for a reply. A peer found gone
 * fails all its QPs, which takes them off the list, possibly the very next
 * one: so the list is taken whole and handled one head at a time, as the
 * progress engine's lists are.
 */
void srq_soft_resp_send_acks(srq_soft_dev_t *dev, bool all)
{
    srq_soft_list_t todo, *e;
    srq_soft_qp_t *qp;
    uint32_t psn;
    int ret;

    srq_soft_list_take(&todo, &dev->ack_qps);
    while (!srq_soft_list_empty(&todo)) {
        e  = todo.next;
        qp = srq_soft_container_of(e, srq_soft_qp_t, ack_link);
        srq_soft_list_del(e);
        if (srq_soft_resp_ack_waits(qp, all)) {
            srq_soft_list_add_tail(&dev->ack_qps, e);
            continue;
        }
        psn = qp->nak ? qp->nak_psn : srq_soft_psn_add(qp->epsn, 0xffffff);
        /* atomic results first: their PSNs are older */
        ret = srq_soft_resp_atomic_flush(qp);
        if (ret == 0) {
            ret = srq_soft_resp_ctrl(qp, qp->nak, psn);
        }
        if (ret == EAGAIN) {
            /* its queue is full: next time */
            srq_soft_list_add_tail(&dev->ack_qps, e);
            continue;
        }
        if (ret == 0) {
            dev->stats.acks_sent += !qp->nak;
            if (qp->ack_call != 0) {
                qp->ack_defer = false; /* waited, and no reply came */
            }
        }
        qp->ack_pending = false;
        qp->ack_call    = 0;
        qp->nak         = 0;
        if (ret != 0) {
            srq_soft_liveness_check(dev, qp->peer);
        }
    }
}
