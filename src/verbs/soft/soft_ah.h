/*
 * ucx-srq soft device: address handles, and the soft address a QP or an
 * AH points at (a GID: fe80:0:<instance id>, or a LID).
 */
#ifndef SRQ_SOFT_AH_H_
#define SRQ_SOFT_AH_H_

#include "../srq_verbs.h"

#include <stdint.h>

typedef struct srq_soft_peer srq_soft_peer_t;
typedef struct srq_soft_dev  srq_soft_dev_t;

typedef struct srq_soft_ah {
    struct ibv_ah     ibv;
    srq_soft_peer_t  *peer;
} srq_soft_ah_t;

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr);
int  srq_soft_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah);
/*
 * The instance @ah points at, into @instance: by its GID when it has a GRH,
 * else by its LID. EINVAL: no soft address; ENOENT: no live instance has
 * that LID.
 */
int srq_soft_ah_instance(srq_soft_dev_t *dev, const struct ibv_ah_attr *ah,
                         uint8_t *instance);

#endif
