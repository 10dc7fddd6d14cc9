/*
 * ucx-srq soft device: address handles. An AH holds a reference on the
 * peer it points at, so that UD sends find its queue without a lookup.
 */
#include "soft_ah.h"
#include "soft_dev.h"
#include "soft_lid.h"
#include "soft_peer.h"

#include <errno.h>
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
    ah->ibv.pd      = pd;
    return &ah->ibv;
}

int srq_soft_destroy_ah(srq_verbs_dev_t *vdev, struct ibv_ah *ibah)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_ah_t *ah;

    if (srq_soft_dev_lock_obj(dev, ibah) != 0) {
        return EINVAL;
    }
    ah = srq_soft_container_of(ibah, srq_soft_ah_t, ibv);
    srq_soft_peer_put(dev, ah->peer);
    srq_soft_dev_unlock(dev);
    free(ah);
    return 0;
}
