/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: peers, the other instances we send packets to.
 *
 * A peer is mapped once per device and shared by the RC QPs connected to it
 * and the address handles pointing at it. Its liveness is checked on a
 * timer, only while we have outstanding work toward it (busy_peers) or when
 * a send to it fails. A dead peer is marked here, its QPs fail above, in
 * soft_liveness.c (srq_soft_liveness_peer_dead), then it is forgotten here
 * (its memory goes with our last mapping of it).
 */
#include "soft_peer.h"
#include "../srq_soft_api.h"
#include "soft_clock.h"
#include "soft_fab.h"
#include "soft_list.h"
#include "soft_proc.h"
#include "soft_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static srq_soft_peer_t *srq_soft_peer_find(srq_soft_fab_t *fab,
                                           const uint8_t *instance)
{
    srq_soft_list_t *e;
    srq_soft_peer_t *peer;

    for (e = fab->peers.next; e != &fab->peers; e = e->next) {
        peer = srq_soft_container_of(e, srq_soft_peer_t, link);
        if (!memcmp(peer->instance, instance, SRQ_SOFT_INST_LEN)) {
            return peer;
        }
    }
    return NULL;
}

static void srq_soft_peer_init(srq_soft_peer_t *peer, const uint8_t *instance)
{
    srq_soft_list_init(&peer->link);
    srq_soft_list_init(&peer->busy_link);
    srq_soft_list_init(&peer->dying_link);
    srq_soft_list_init(&peer->qps);
    memcpy(peer->instance, instance, SRQ_SOFT_INST_LEN);
    peer->pipe_fd = -1;
}

static void srq_soft_peer_free(srq_soft_peer_t *peer);

/* Take a reference on the peer at @instance, mapping it if needed.
 * NULL + errno: unreachable (no such live instance). */
srq_soft_peer_t *srq_soft_peer_get(srq_soft_fab_t *fab,
                                   const uint8_t *instance)
{
    srq_soft_peer_t *peer;
    int ret;

    if (!memcmp(instance, fab->instance, SRQ_SOFT_INST_LEN)) {
        ++fab->self.refcnt;
        return &fab->self;
    }
    peer = srq_soft_peer_find(fab, instance);
    if ((peer != NULL) && !peer->dead) {
        ++peer->refcnt;
        return peer;
    }

    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_peer_init(peer, instance);
    ret = srq_soft_shm_map_peer(instance, &peer->seg, &peer->pipe_fd);
    if (ret != 0) {
        free(peer);
        errno = ret;
        return NULL;
    }
    peer->pid        = peer->seg.tab->owner_pid;
    peer->start_time = peer->seg.tab->owner_start;
    if (!srq_soft_owner_alive(peer->pid, peer->start_time)) {
        srq_soft_peer_free(peer);
        errno = EHOSTUNREACH;
        return NULL;
    }
    peer->refcnt = 1;
    srq_soft_list_add_tail(&fab->peers, &peer->link);
    return peer;
}

static void srq_soft_peer_free(srq_soft_peer_t *peer)
{
    if (srq_soft_list_linked(&peer->link)) {
        srq_soft_list_del(&peer->link);
    }
    if (srq_soft_list_linked(&peer->busy_link)) {
        srq_soft_list_del(&peer->busy_link);
    }
    if (srq_soft_list_linked(&peer->dying_link)) {
        srq_soft_list_del(&peer->dying_link);
    }
    if (peer->pipe_fd >= 0) {
        close(peer->pipe_fd);
    }
    srq_soft_shm_unmap(&peer->seg);
    free(peer);
}

void srq_soft_peer_put(srq_soft_fab_t *fab, srq_soft_peer_t *peer)
{
    if (--peer->refcnt > 0) {
        return;
    }
    if (peer->is_self) {
        peer->refcnt = 0;
        return;
    }
    srq_soft_peer_free(peer);
}

void srq_soft_peers_destroy(srq_soft_fab_t *fab)
{
    while (!srq_soft_list_empty(&fab->peers)) {
        srq_soft_peer_free(srq_soft_container_of(fab->peers.next,
                                                 srq_soft_peer_t, link));
    }
}

/* Still alive? A closed segment counts as dead: nobody consumes it. */
bool srq_soft_peer_alive(const srq_soft_peer_t *peer)
{
    uint32_t state;

    if (peer->dead) {
        return false;
    }
    if (peer->is_self) {
        return true;
    }
    state = atomic_load_explicit((_Atomic uint32_t*)&peer->seg.tab->state,
                                 memory_order_acquire);
    return (state == SRQ_SOFT_SEG_ACTIVE) &&
           srq_soft_owner_alive(peer->pid, peer->start_time);
}

/* The peer is gone: mark it so, before its QPs fail (a QP that leaves
 * the busy list must not put a dead peer back on its own) */
bool srq_soft_peer_mark_dead(srq_soft_fab_t *fab, srq_soft_peer_t *peer)
{
    if (peer->dead || peer->is_self) {
        return false;
    }
    peer->dead = true;
    ++fab->stats->peers_dead;
    return true;
}

/* Its QPs have failed: forget it. Its memory (memfds) goes with the last
 * mapping of it: ours when the last QP/AH lets go. */
void srq_soft_peer_release_dead(srq_soft_fab_t *fab, srq_soft_peer_t *peer)
{
    if (srq_soft_list_linked(&peer->busy_link)) {
        srq_soft_list_del(&peer->busy_link);
    }
    /* new lookups map afresh */
    srq_soft_list_del(&peer->link);
    if (peer->refcnt == 0) {
        srq_soft_peer_free(peer);
    }
}

/* Count QPs with outstanding send work toward a peer: only such peers are
 * checked for liveness. */
