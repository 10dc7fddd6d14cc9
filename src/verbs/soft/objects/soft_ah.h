/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: address handles, and the soft address a QP or an
 * AH points at (a GID: fe80:0:<port id>, or a LID), which the QP number
 * it goes with routes to an instance of that port.
 */
#ifndef SRQ_SOFT_AH_H_
#define SRQ_SOFT_AH_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_lock.h"
#include "../fabric/soft_shm.h"

#include <stdint.h>

typedef struct srq_soft_peer srq_soft_peer_t;
typedef struct srq_soft_dev  srq_soft_dev_t;

typedef struct srq_soft_ah {
    struct ibv_ah     ibv;
    uint8_t           addr[SRQ_SOFT_INST_LEN]; /* port (or instance) id */
    uint8_t           tclass;  /* the GRH's traffic class (0 without) */
    /* the instances datagrams went to (srq_soft_ah_route), held until
     * the AH goes, since queued datagrams point at them: as many as the
     * port has contexts (UCX keeps one AH per address, for every
     * interface behind it); the last one used first. Changed under the
     * device lock and the AH's own; read under either (a post without
     * the device takes the AH's to find its peer there) */
    srq_soft_peer_t **peers;
    unsigned          npeers, peers_cap, last;
    srq_soft_lock_t   lock;
} srq_soft_ah_t;

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr);
int  srq_soft_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah);
/*
 * The port @ah points at, its id into @addr: by its GID when it has a
 * GRH, else by its LID. EINVAL: no soft address; ENOENT: no live port has
 * that LID. (A GID may also name one instance: the test hooks' address.)
 */
int srq_soft_ah_addr(const struct ibv_ah_attr *ah, uint8_t *addr);
/*
 * The instance a packet to QP @qpn at @addr goes to, into @instance: the
 * owner of @qpn when it is an instance of port @addr, as every context of
 * an HCA port shares the port's address and the QP number picks the QP.
 * ENOENT: the port has no live QP @qpn. An instance address is itself.
 */
int srq_soft_ah_route(const uint8_t *addr, uint32_t qpn, uint8_t *instance);
/* Under dev->lock: the peer a datagram through @ah to @qpn goes to, or
 * NULL and errno: EHOSTUNREACH (or another) when it goes nowhere, lost
 * as on a fabric; a limit of ours (srq_soft_err_is_limit: no memory or
 * descriptor to map the peer) when it could not be sent */
srq_soft_peer_t *srq_soft_ah_peer(srq_soft_dev_t *dev, srq_soft_ah_t *ah,
                                  uint32_t qpn);
/* The same for a post without the device: 0 and the peer in *peer_p
 * (NULL: the datagram goes nowhere) when the AH has the instance already;
 * EAGAIN when it has not (srq_soft_ah_peer maps it, under dev->lock) */
int srq_soft_ah_peer_known(srq_soft_ah_t *ah, uint32_t qpn,
                           srq_soft_peer_t **peer_p);

#endif
