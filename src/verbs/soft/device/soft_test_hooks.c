/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the test hooks (soft_test_hooks.h). They reach into
 * the device as a misbehaving peer, a dying producer or a failing post
 * would; nothing else in the device calls them. The armed post fault is
 * checked (and disarmed) by the post verbs, soft_post.c.
 */
#include "soft_test_hooks.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_proc.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../wire/soft_post.h"
#include "soft_thread.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* Take a queue's producer lock, never release it */
int srq_soft_test_hold_lock(srq_verbs_dev_t *vdev)
{
    srq_soft_shm_hdr_t *hdr;
    uint64_t start, cur = 0;
    int ret;

    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    hdr = srq_soft_dev(vdev)->fab.seg.hdr;
    ret = srq_soft_proc_start_time(getpid(), &start);
    if ((ret == 0) &&
        !atomic_compare_exchange_strong((_Atomic uint64_t*)&hdr->prod_lock,
                                        &cur, srq_soft_proc_id(getpid(),
                                                               start))) {
        ret = EBUSY;
    }
    return ret;
}

int srq_soft_test_release_lock(srq_verbs_dev_t *vdev)
{
    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    srq_soft_ring_unlock(srq_soft_dev(vdev)->fab.seg.hdr);
    return 0;
}

int srq_soft_test_with_dev_lock(srq_verbs_dev_t *vdev, void (*fn)(void *arg),
                                void *arg)
{
    srq_soft_dev_t *dev;

    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    dev = srq_soft_dev(vdev);
    srq_soft_dev_lock(dev);
    fn(arg);
    srq_soft_dev_unlock(dev);
    return 0;
}

int srq_soft_test_cq_pending(struct ibv_cq *ibcq)
{
    srq_soft_cq_t *cq = srq_soft_cq(ibcq);

    return (int)(srq_soft_cq_load(&cq->pi) - srq_soft_cq_load(&cq->ci));
}

/* The device stops answering for itself: only polls move it */
int srq_soft_test_stop_thread(srq_verbs_dev_t *vdev)
{
    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    srq_soft_thread_stop(srq_soft_dev(vdev));
    return 0;
}

int srq_soft_test_thread_look(srq_verbs_dev_t *vdev, unsigned ms)
{
    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    atomic_store(&srq_soft_dev(vdev)->thread_look_fixed_ms, ms);
    return 0;
}

static void srq_soft_inject_scribble(srq_soft_shm_hdr_t *hdr, uint8_t *ring,
                                     const uint8_t *buf, size_t len)
{
    uint64_t tail = hdr->tail;
    size_t i;

    for (i = 0; i < len; ++i) {
        ring[(tail + i) & (SRQ_SOFT_RING_SIZE - 1)] = buf[i];
    }
    atomic_store_explicit((_Atomic uint64_t*)&hdr->tail, tail + len,
                          memory_order_release);
}

/* The frame the last SRQ_SOFT_INJECT_CLAIM left claimed */
static srq_soft_tx_t srq_soft_inject_claimed;

/* Claim under this process's id: a child forked after the device was
 * opened has its parent's */
static int srq_soft_inject_own_id(srq_soft_dev_t *dev)
{
    uint64_t start;
    int ret;

    ret = srq_soft_proc_start_time(getpid(), &start);
    if (ret == 0) {
        dev->fab.lock_id = srq_soft_proc_id(getpid(), start);
    }
    return ret;
}

static int srq_soft_inject_publish(srq_soft_dev_t *dev, srq_soft_peer_t *peer)
{
    srq_soft_tx_t *tx = &srq_soft_inject_claimed;

    if (tx->pkt == NULL) {
        return ENOENT;
    }
    tx->peer = peer;
    srq_soft_ring_commit(&dev->fab, tx);
    tx->pkt = NULL;
    return 0;
}

/* A misbehaving producer (or one stopped while filling its frame) */
static int srq_soft_inject_raw(srq_soft_dev_t *dev, srq_soft_peer_t *peer,
                               const void *buf, size_t len, int mode)
{
    bool scribble = (mode == SRQ_SOFT_INJECT_SCRIBBLE);
    srq_soft_tx_t tx;
    uint32_t frame_len;
    uint64_t claim;
    int ret;

    if (len > SRQ_SOFT_RING_SIZE / 4) {
        return EINVAL;
    }
    if (scribble) {
        ret = srq_soft_ring_lock(&dev->fab, peer->seg.hdr);
        if (ret != 0) {
            return ret;
        }
        srq_soft_inject_scribble(peer->seg.hdr, peer->seg.ring, buf, len);
        srq_soft_ring_unlock(peer->seg.hdr);
        srq_soft_pipe_wake(peer);
        return 0;
    }

    frame_len = srq_soft_frame_len(len > sizeof(srq_soft_pkt_t) ?
                                   len - sizeof(srq_soft_pkt_t) : 0);
    if ((mode == SRQ_SOFT_INJECT_CLAIM) &&
        ((ret = srq_soft_inject_own_id(dev)) != 0)) {
        return ret;
    }
    ret = srq_soft_ring_reserve(&dev->fab, peer, frame_len, &tx);
    if (ret != 0) {
        return ret;
    }
    /* keep the framing valid (the claim set pos and frame_len, commit sets
     * magic and pos) so that content validation is what is tested */
    claim = tx.pkt->pos;
    memcpy(tx.pkt, buf, (len < frame_len) ? len : frame_len);
    tx.pkt->pos       = claim;
    tx.pkt->frame_len = frame_len;
    if (mode == SRQ_SOFT_INJECT_CLAIM) {
        srq_soft_inject_claimed = tx;
        return 0;
    }
    srq_soft_ring_commit(&dev->fab, &tx);
    return 0;
}

int srq_soft_test_instance(srq_verbs_dev_t *dev, uint8_t *id)
{
    if ((dev == NULL) || (dev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    memcpy(id, srq_soft_dev(dev)->fab.instance, SRQ_SOFT_INST_LEN);
    return 0;
}

int srq_soft_inject(srq_verbs_dev_t *from, srq_verbs_dev_t *to,
                    const void *buf, size_t len, int mode)
{
    srq_soft_dev_t *dev;
    srq_soft_peer_t *peer;
    int ret;

    if ((from == NULL) || (from->kind != SRQ_VERBS_DEV_SOFT) ||
        (to == NULL) || (to->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    dev = srq_soft_dev(from);
    srq_soft_dev_lock(dev);
    /* the instance, not its port: two of one process share the port */
    peer = srq_soft_peer_get(&dev->fab, srq_soft_dev(to)->fab.instance);
    if (peer == NULL) {
        ret = errno;
    } else {
        ret = (mode == SRQ_SOFT_INJECT_PUBLISH) ?
              srq_soft_inject_publish(dev, peer) :
              srq_soft_inject_raw(dev, peer, buf, len, mode);
        srq_soft_peer_put(&dev->fab, peer);
    }
    srq_soft_dev_unlock(dev);
    return ret;
}

/* ---- srq_soft_test_fail_post ------------------------------------------
 *
 * The product's receive posts know nothing of it: arming a fault puts the
 * wrappers below in the device's context ops (what ibv_post_recv and
 * ibv_post_srq_recv call), and they stay there, costing nothing disarmed.
 * One fault per device: wr_index << 32 | (uint32_t)err, 0 when none.
 */
#define SRQ_SOFT_TEST_FAULT_DEVS 16

static struct {
    _Atomic(srq_soft_dev_t*) dev;
    _Atomic uint64_t         armed;
} srq_soft_test_faults[SRQ_SOFT_TEST_FAULT_DEVS];

static _Atomic unsigned srq_soft_test_fault_next;

/* @dev's fault word; with @add, a slot for it when it has none: the next
 * in turn, whatever device held it (one that is gone, as a rule: a live
 * one loses its armed fault only with more devices armed at once than the
 * table holds). A device at a freed one's address finds that one's slot,
 * which is harmless: only a device that armed a fault has the wrappers,
 * and arming replaces the word. */
static _Atomic uint64_t *srq_soft_test_fault_of(srq_soft_dev_t *dev, bool add)
{
    unsigned i;

    for (i = 0; i < SRQ_SOFT_TEST_FAULT_DEVS; ++i) {
        if (atomic_load(&srq_soft_test_faults[i].dev) == dev) {
            return &srq_soft_test_faults[i].armed;
        }
    }
    if (!add) {
        return NULL;
    }
    i = atomic_fetch_add(&srq_soft_test_fault_next, 1) %
        SRQ_SOFT_TEST_FAULT_DEVS;
    atomic_store(&srq_soft_test_faults[i].armed, 0);
    atomic_store(&srq_soft_test_faults[i].dev, dev);
    return &srq_soft_test_faults[i].armed;
}

/* Has the chain a WR number @index? */
static bool srq_soft_test_chain_reaches(const struct ibv_recv_wr *wr,
                                        unsigned index)
{
    for (; wr != NULL; wr = wr->next) {
        if (index-- == 0) {
            return true;
        }
    }
    return false;
}

/* Does this receive post hit @dev's armed fault? If so it is disarmed
 * (only one of racing posts wins it) and its WR index and error returned */
static bool srq_soft_test_post_fault(srq_soft_dev_t *dev,
                                     const struct ibv_recv_wr *wr,
                                     unsigned *index_p, int *err_p)
{
    _Atomic uint64_t *fault = srq_soft_test_fault_of(dev, false);
    uint64_t armed = (fault == NULL) ? 0 : atomic_load(fault);

    while (armed != 0) {
        if (!srq_soft_test_chain_reaches(wr, (unsigned)(armed >> 32))) {
            return false; /* too short: stays armed */
        }
        if (atomic_compare_exchange_weak(fault, &armed, 0)) {
            *index_p = (unsigned)(armed >> 32);
            *err_p   = (int)(uint32_t)armed;
            return true;
        }
    }
    return false;
}

typedef int (*srq_soft_test_post_fn_t)(void *queue, struct ibv_recv_wr *wr,
                                       struct ibv_recv_wr **bad_wr);

/* Post the WRs before @fail_at one at a time through the device's own
 * post, each a copy ending the chain - the caller's list is never written
 * - then fail as a post-time check would */
static int srq_soft_test_post_faulty(srq_soft_test_post_fn_t post,
                                     void *queue, struct ibv_recv_wr *wr,
                                     struct ibv_recv_wr **bad_wr,
                                     unsigned fail_at, int err)
{
    struct ibv_recv_wr one, *bad;
    unsigned i;
    int ret;

    for (i = 0; i < fail_at; ++i, wr = wr->next) {
        one      = *wr;
        one.next = NULL;
        ret      = post(queue, &one, &bad);
        if (ret != 0) {
            *bad_wr = wr;
            return ret;
        }
    }
    *bad_wr = wr;
    errno   = err;
    return err;
}

static int srq_soft_test_post_recv_one(void *qp, struct ibv_recv_wr *wr,
                                       struct ibv_recv_wr **bad_wr)
{
    return srq_soft_post_recv(qp, wr, bad_wr);
}

static int srq_soft_test_post_srq_recv_one(void *srq, struct ibv_recv_wr *wr,
                                           struct ibv_recv_wr **bad_wr)
{
    return srq_soft_post_srq_recv(srq, wr, bad_wr);
}

static int srq_soft_test_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                                   struct ibv_recv_wr **bad_wr)
{
    unsigned fail_at;
    int err;

    if (srq_soft_test_post_fault(srq_soft_ctx_dev(qp->context), wr, &fail_at,
                                 &err)) {
        return srq_soft_test_post_faulty(srq_soft_test_post_recv_one, qp, wr,
                                         bad_wr, fail_at, err);
    }
    return srq_soft_post_recv(qp, wr, bad_wr);
}

static int srq_soft_test_post_srq_recv(struct ibv_srq *srq,
                                       struct ibv_recv_wr *wr,
                                       struct ibv_recv_wr **bad_wr)
{
    unsigned fail_at;
    int err;

    if (srq_soft_test_post_fault(srq_soft_ctx_dev(srq->context), wr, &fail_at,
                                 &err)) {
        return srq_soft_test_post_faulty(srq_soft_test_post_srq_recv_one, srq,
                                         wr, bad_wr, fail_at, err);
    }
    return srq_soft_post_srq_recv(srq, wr, bad_wr);
}

int srq_soft_test_fail_post(srq_verbs_dev_t *vdev, unsigned wr_index, int err)
{
    srq_soft_dev_t *dev;
    _Atomic uint64_t *fault;

    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT) || (err == 0)) {
        return EINVAL;
    }
    dev   = srq_soft_dev(vdev);
    fault = srq_soft_test_fault_of(dev, true);
    __atomic_store_n(&dev->vctx.context.ops.post_recv,
                     srq_soft_test_post_recv, __ATOMIC_RELEASE);
    __atomic_store_n(&dev->vctx.context.ops.post_srq_recv,
                     srq_soft_test_post_srq_recv, __ATOMIC_RELEASE);
    atomic_store(fault, ((uint64_t)wr_index << 32) | (uint32_t)err);
    return 0;
}
