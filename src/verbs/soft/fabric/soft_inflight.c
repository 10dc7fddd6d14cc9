/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: one-sided accesses in flight (soft_inflight.h).
 *
 * The announcement is srq_soft_inflight_t in the requester's tables: seq
 * is odd while an access may write. Requester and revoker each store, then
 * load the other's word, both sequentially consistent (the Dekker
 * pattern): the requester makes seq odd, then reads the target's key or
 * QP entry; the revoker withdraws the key or QP, then reads seq. At least
 * one of them sees the other's store: either the requester sees the
 * withdrawal and does not copy, or the revoker sees the access and waits
 * until seq moves on. What the revoker reads between the two loads of seq
 * belongs to that access when seq did not move; if seq moved, the access
 * it saw is over, and any later one began after the withdrawal and sees
 * it.
 */
#include "soft_inflight.h"
#include "../srq_soft_api.h"
#include "soft_fab.h"
#include "soft_list.h"
#include "soft_peer.h"
#include "soft_proc.h"
#include "soft_shm.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define SRQ_SOFT_INFLIGHT_SPINS  4096  /* between two liveness checks */

static _Atomic uint64_t *srq_soft_inflight_seq(const srq_soft_inflight_t *f)
{
    return (_Atomic uint64_t*)&f->seq;
}

void srq_soft_inflight_begin(srq_soft_fab_t *fab, const uint8_t *target,
                             uint32_t key, uint32_t qpn)
{
    srq_soft_inflight_t *f = &fab->seg.tab->inflight;
    int i;

    /* seq is even: nobody takes these for a live access's */
    for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
        atomic_store_explicit((_Atomic uint8_t*)&f->target[i], target[i],
                              memory_order_relaxed);
    }
    atomic_store_explicit((_Atomic uint32_t*)&f->key, key,
                          memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t*)&f->qpn, qpn,
                          memory_order_relaxed);
    atomic_fetch_add_explicit(srq_soft_inflight_seq(f), 1,
                              memory_order_seq_cst);
}

void srq_soft_inflight_end(srq_soft_fab_t *fab)
{
    atomic_fetch_add_explicit(srq_soft_inflight_seq(&fab->seg.tab->inflight),
                              1, memory_order_release);
}

/* Does the access announced in @f, read while seq was @seq, go into
 * @fab under @key or @qpn? */
static bool srq_soft_inflight_matches(srq_soft_fab_t *fab,
                                      const srq_soft_inflight_t *f,
                                      uint32_t key, uint32_t qpn)
{
    uint8_t target[SRQ_SOFT_INST_LEN];
    uint32_t k, q;
    int i;

    for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
        target[i] = atomic_load_explicit((_Atomic uint8_t*)&f->target[i],
                                         memory_order_relaxed);
    }
    k = atomic_load_explicit((_Atomic uint32_t*)&f->key, memory_order_relaxed);
    q = atomic_load_explicit((_Atomic uint32_t*)&f->qpn, memory_order_relaxed);
    return !memcmp(target, fab->instance, SRQ_SOFT_INST_LEN) &&
           (((key != 0) && (k == key)) || ((qpn != 0) && (q == qpn)));
}

void srq_soft_inflight_wait(srq_soft_fab_t *fab, srq_soft_peer_t *peer,
                            uint32_t key, uint32_t qpn)
{
    const srq_soft_inflight_t *f;
    unsigned spins = 0;
    uint64_t seq;

    /* our own accesses run under our lock, which the caller holds */
    if (peer->is_self || peer->dead || (peer->seg.tab == NULL)) {
        return;
    }
    f   = &peer->seg.tab->inflight;
    seq = atomic_load_explicit(srq_soft_inflight_seq(f), memory_order_seq_cst);
    if (!(seq & 1) || !srq_soft_inflight_matches(fab, f, key, qpn)) {
        return;
    }
    atomic_thread_fence(memory_order_acquire);
    while (atomic_load_explicit(srq_soft_inflight_seq(f),
                                memory_order_acquire) == seq) {
        if ((++spins % SRQ_SOFT_INFLIGHT_SPINS) == 0) {
            if (!srq_soft_owner_alive(peer->pid, peer->start_time)) {
                return; /* it died mid-copy: it writes nothing more */
            }
        }
        sched_yield();
    }
    ++fab->stats->inflight_waits;
}

void srq_soft_inflight_wait_all(srq_soft_fab_t *fab, uint32_t key)
{
    srq_soft_list_t *e;

    for (e = fab->peers.next; e != &fab->peers; e = e->next) {
        srq_soft_inflight_wait(fab, srq_soft_container_of(e, srq_soft_peer_t,
                                                          link), key, 0);
    }
}
