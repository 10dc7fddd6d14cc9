/*
 * ucx-srq soft device: address handles, and the soft address a QP or an
 * AH points at (a GID: fe80:0:<instance id>, or a LID).
 */
#ifndef SRQ_SOFT_AH_H_
#define SRQ_SOFT_AH_H_

#include "../dev/srq_verbs_types.h"

#include <stdint.h>

typedef struct srq_soft_peer srq_soft_peer_t;
typedef struct srq_soft_dev  srq_soft_dev_t;

/* Other instances of this process one AH reaches (srq_soft_ah_peer) */
#define SRQ_SOFT_AH_LOCAL_PEERS  8

typedef struct srq_soft_ah {
    struct ibv_ah     ibv;
    srq_soft_peer_t  *peer;
    uint8_t           tclass;  /* the GRH's traffic class (0 without) */
    /* when @peer is an instance of this process: the other instances of
     * it datagrams went to (srq_soft_ah_route), held until the AH goes,
     * since queued datagrams point at them */
    srq_soft_peer_t  *local_peers[SRQ_SOFT_AH_LOCAL_PEERS];
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
/*
 * The address of any instance of this process is the address of them all,
 * as every context of an HCA shares its port: there @qpn (unique in the
 * process) picks the instance. Replaces @instance by the owner of @qpn when
 * @instance is one of this process's and @qpn is live.
 */
void srq_soft_ah_route(srq_soft_dev_t *dev, uint8_t *instance, uint32_t qpn);
/* Under dev->lock: the peer a datagram through @ah to @qpn goes to */
srq_soft_peer_t *srq_soft_ah_peer(srq_soft_dev_t *dev, srq_soft_ah_t *ah,
                                  uint32_t qpn);

#endif
