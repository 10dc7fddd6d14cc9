/*
 * ucx-srq soft device: address handles, and the soft address a QP or an
 * AH points at ("soft" + instance id in the destination gid).
 */
#ifndef SRQ_SOFT_AH_H_
#define SRQ_SOFT_AH_H_

#include "../srq_verbs.h"

#include <stdint.h>

typedef struct srq_soft_peer srq_soft_peer_t;

typedef struct srq_soft_ah {
    struct ibv_ah     ibv;
    srq_soft_peer_t  *peer;
} srq_soft_ah_t;

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr);
int  srq_soft_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah);
/* The instance id @ah points at, NULL if it is no soft address */
const uint8_t *srq_soft_ah_instance(const struct ibv_ah_attr *ah);

#endif
