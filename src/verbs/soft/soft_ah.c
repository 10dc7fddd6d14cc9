/*
 * ucx-srq soft device: address handles. An AH holds a reference on the
 * peer it points at, so that UD sends find its queue without a lookup.
 */
#include "soft_ah.h"
#include "soft_dev.h"
#include "soft_lid.h"
#include "soft_pd.h"
#include "soft_peer.h"
#include "soft_qpn.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int srq_soft_ah_instance(srq_soft_dev_t *dev, const struct ibv_ah_attr *ah,
                         uint8_t *instance)
{
    if (ah->port_num != 1) {
        return EINVAL;
    }
    if (!ah->is_global) {
        return srq_soft_lid_lookup(dev, ah->dlid, instance);
    }
    if (memcmp(ah->grh.dgid.raw, SRQ_SOFT_ADDR_MAGIC, 4)) {
        return EINVAL;
    }
    memcpy(instance, ah->grh.dgid.raw + 4, SRQ_SOFT_INST_LEN);
    return 0;
}

/* Is @instance one of this process's? (domain and pid: the first 8 bytes
 * of an instance id, soft_device.c) */
static bool srq_soft_ah_is_local(srq_soft_dev_t *dev, const uint8_t *instance)
{
    return memcmp(instance, dev->instance, 8) == 0;
}

void srq_soft_ah_route(srq_soft_dev_t *dev, uint8_t *instance, uint32_t qpn)
{
    uint8_t owner[SRQ_SOFT_INST_LEN];

    if (srq_soft_ah_is_local(dev, instance) &&
        (srq_soft_qpn_owner(qpn, owner) == 0)) {
        memcpy(instance, owner, SRQ_SOFT_INST_LEN);
    }
}

srq_soft_peer_t *srq_soft_ah_peer(srq_soft_dev_t *dev, srq_soft_ah_t *ah,
                                  uint32_t qpn)
{
    uint8_t inst[SRQ_SOFT_INST_LEN];
    srq_soft_peer_t *peer;
    int i;

    if (!srq_soft_ah_is_local(dev, ah->peer->instance)) {
        return ah->peer;
    }
    memcpy(inst, ah->peer->instance, SRQ_SOFT_INST_LEN);
    srq_soft_ah_route(dev, inst, qpn);
    if (!memcmp(inst, ah->peer->instance, SRQ_SOFT_INST_LEN)) {
        return ah->peer;
    }
    for (i = 0; (i < SRQ_SOFT_AH_LOCAL_PEERS) && (ah->local_peers[i] != NULL);
         ++i) {
        if (!memcmp(inst, ah->local_peers[i]->instance, SRQ_SOFT_INST_LEN)) {
            return ah->local_peers[i];
        }
    }
    /* more instances than we hold, or one gone meanwhile: the datagram
     * goes to the AH's own instance, which has no such QP and drops it */
    peer = (i < SRQ_SOFT_AH_LOCAL_PEERS) ? srq_soft_peer_get(dev, inst) : NULL;
    if (peer == NULL) {
        return ah->peer;
    }
    ah->local_peers[i] = peer;
    return peer;
}

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    uint8_t inst[SRQ_SOFT_INST_LEN];
    srq_soft_ah_t *ah;
    int ret;

    ret = srq_soft_dev_has(dev, pd) ? srq_soft_ah_instance(dev, attr, inst) :
                                      EINVAL;
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_dev_lock(dev);
    ah->peer = srq_soft_peer_get(dev, inst);
    srq_soft_dev_unlock(dev);
    if (ah->peer == NULL) {
        free(ah);
        return NULL; /* errno from peer_get */
    }
    ah->ibv.context = &dev->vctx.context;
    ah->ibv.handle  = srq_soft_handle(dev, &ah->ibv);
    ah->ibv.pd      = pd;
    ah->tclass      = attr->is_global ? attr->grh.traffic_class : 0;
    srq_soft_pd_get(pd);
    return &ah->ibv;
}

int srq_soft_destroy_ah(srq_verbs_dev_t *vdev, struct ibv_ah *ibah)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_ah_t *ah;
    int i;

    if (srq_soft_dev_lock_obj(dev, ibah) != 0) {
        return EINVAL;
    }
    ah = srq_soft_container_of(ibah, srq_soft_ah_t, ibv);
    srq_soft_peer_put(dev, ah->peer);
    for (i = 0; (i < SRQ_SOFT_AH_LOCAL_PEERS) && (ah->local_peers[i] != NULL);
         ++i) {
        srq_soft_peer_put(dev, ah->local_peers[i]);
    }
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(ibah->pd);
    free(ah);
    return 0;
}
