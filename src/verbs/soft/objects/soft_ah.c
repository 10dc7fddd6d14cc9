/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: address handles. An AH holds the port it points
 * at and a reference on each instance of it its datagrams went to, so
 * that UD sends find a queue without mapping it again.
 */
#include "soft_ah.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_qpn.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_port.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int srq_soft_ah_addr(const struct ibv_ah_attr *ah, uint8_t *addr)
{
    if (ah->port_num != 1) {
        return EINVAL;
    }
    if (!ah->is_global) {
        return srq_soft_port_by_lid(ah->dlid, addr);
    }
    if (memcmp(ah->grh.dgid.raw, SRQ_SOFT_ADDR_MAGIC, 4)) {
        return EINVAL;
    }
    memcpy(addr, ah->grh.dgid.raw + 4, SRQ_SOFT_INST_LEN);
    return 0;
}

int srq_soft_ah_route(const uint8_t *addr, uint32_t qpn, uint8_t *instance)
{
    if (!srq_soft_port_is_port(addr)) {
        memcpy(instance, addr, SRQ_SOFT_INST_LEN);
        return 0;
    }
    if ((srq_soft_qpn_owner(qpn, instance) != 0) ||
        !srq_soft_port_has(addr, instance)) {
        return ENOENT;
    }
    return 0;
}

/* A port whose process is gone is unreachable, as an instance that is
 * gone is (its id holds the pid, soft_port.h) */
static int srq_soft_ah_reachable(srq_soft_dev_t *dev, const uint8_t *addr)
{
    srq_soft_peer_t *peer;
    pid_t pid;

    if (!srq_soft_port_is_port(addr)) {
        peer = srq_soft_peer_get(&dev->fab, addr);
        if (peer == NULL) {
            return errno;
        }
        srq_soft_peer_put(&dev->fab, peer);
        return 0;
    }
    memcpy(&pid, addr + sizeof(uint32_t), sizeof(pid));
    if (memcmp(addr, dev->port_id, sizeof(uint32_t)) || (pid <= 0) ||
        ((kill(pid, 0) != 0) && (errno != EPERM))) {
        return EHOSTUNREACH;
    }
    return 0;
}

/* The peer of @inst the AH holds, or NULL: under the device lock (which
 * every change of the array is made under) or the AH's. `last` is a hint
 * both kinds of readers write, hence relaxed atomics */
static srq_soft_peer_t *srq_soft_ah_find(srq_soft_ah_t *ah,
                                         const uint8_t *inst)
{
    unsigned i = __atomic_load_n(&ah->last, __ATOMIC_RELAXED);

    if ((i < ah->npeers) &&
        !memcmp(inst, ah->peers[i]->instance, SRQ_SOFT_INST_LEN)) {
        return ah->peers[i];
    }
    for (i = 0; i < ah->npeers; ++i) {
        if (!memcmp(inst, ah->peers[i]->instance, SRQ_SOFT_INST_LEN)) {
            __atomic_store_n(&ah->last, i, __ATOMIC_RELAXED);
            return ah->peers[i];
        }
    }
    return NULL;
}

/* Under the device lock and the AH's: room for one more peer */
static int srq_soft_ah_grow(srq_soft_ah_t *ah)
{
    srq_soft_peer_t **peers;
    unsigned cap;

    if (ah->npeers < ah->peers_cap) {
        return 0;
    }
    cap   = (ah->peers_cap == 0) ? 4 : (2 * ah->peers_cap);
    peers = realloc(ah->peers, cap * sizeof(*peers));
    if (peers == NULL) {
        return ENOMEM;
    }
    ah->peers     = peers;
    ah->peers_cap = cap;
    return 0;
}

int srq_soft_ah_peer_known(srq_soft_ah_t *ah, uint32_t qpn,
                           srq_soft_peer_t **peer_p)
{
    uint8_t inst[SRQ_SOFT_INST_LEN];

    *peer_p = NULL;
    if (srq_soft_ah_route(ah->addr, qpn, inst) != 0) {
        return 0; /* nowhere: lost, as on a fabric */
    }
    srq_soft_lock(&ah->lock);
    *peer_p = srq_soft_ah_find(ah, inst);
    srq_soft_unlock(&ah->lock);
    return (*peer_p != NULL) ? 0 : EAGAIN;
}

/* With the device, which every change of the array is made under, the
 * lookup takes no other lock: a single-threaded post's cost is as it was
 * before the AH had a lock. The AH's lock is taken to change the array,
 * for posts without the device that look in it meanwhile; not while
 * mapping the instance (srq_soft_peer_get), which may take long */
srq_soft_peer_t *srq_soft_ah_peer(srq_soft_dev_t *dev, srq_soft_ah_t *ah,
                                  uint32_t qpn)
{
    uint8_t inst[SRQ_SOFT_INST_LEN];
    srq_soft_peer_t *peer;
    int ret;

    if (srq_soft_ah_route(ah->addr, qpn, inst) != 0) {
        errno = EHOSTUNREACH;
        return NULL;
    }
    peer = srq_soft_ah_find(ah, inst);
    if (peer != NULL) {
        return peer;
    }
    srq_soft_lock(&ah->lock);
    ret = srq_soft_ah_grow(ah);
    srq_soft_unlock(&ah->lock);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* an instance gone meanwhile (errno says so) */
    peer = srq_soft_peer_get(&dev->fab, inst);
    if (peer != NULL) {
        srq_soft_lock(&ah->lock);
        ah->peers[ah->npeers] = peer;
        __atomic_store_n(&ah->last, ah->npeers++, __ATOMIC_RELAXED);
        srq_soft_unlock(&ah->lock);
    }
    return peer;
}

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    uint8_t addr[SRQ_SOFT_INST_LEN];
    srq_soft_ah_t *ah;
    int ret;

    ret = srq_soft_dev_has(dev, pd) ? srq_soft_ah_addr(attr, addr) : EINVAL;
    if (ret == 0) {
        srq_soft_dev_lock(dev);
        ret = srq_soft_ah_reachable(dev, addr);
        srq_soft_dev_unlock(dev);
    }
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(ah->addr, addr, SRQ_SOFT_INST_LEN);
    ah->ibv.context = &dev->vctx.context;
    ah->ibv.handle  = srq_soft_handle(dev, &ah->ibv);
    ah->ibv.pd      = pd;
    ah->tclass      = attr->is_global ? attr->grh.traffic_class : 0;
    srq_soft_lock_init(&ah->lock);
    srq_soft_pd_get(pd);
    return &ah->ibv;
}

int srq_soft_destroy_ah(srq_verbs_dev_t *vdev, struct ibv_ah *ibah)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_ah_t *ah;
    unsigned i;

    if (srq_soft_dev_lock_obj(dev, ibah) != 0) {
        return ENOENT;
    }
    ah = srq_soft_container_of(ibah, srq_soft_ah_t, ibv);
    for (i = 0; i < ah->npeers; ++i) {
        srq_soft_peer_put(&dev->fab, ah->peers[i]);
    }
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(ibah->pd);
    free(ah->peers);
    free(ah);
    return 0;
}
