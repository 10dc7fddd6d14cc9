/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: XRC domains (ibv_open_xrcd) and the XRC SRQs that
 * live in them (ibv_create_srq_ex with IBV_SRQT_XRC, ibv_get_srq_num).
 */
#ifndef SRQ_SOFT_XRCD_H_
#define SRQ_SOFT_XRCD_H_

#include "../../dev/srq_verbs_types.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_srq  srq_soft_srq_t;
typedef struct srq_soft_xdom srq_soft_xdom_t;

/* One ibv_open_xrcd: a handle on a domain. Domains opened on one inode
 * are one domain (in this process); each open is its own handle, and
 * holds the objects made through it (users): closing it is EBUSY while
 * it has any, as uverbs refuses to close an XRCD object in use */
typedef struct srq_soft_xrcd {
    struct ibv_xrcd      ibv;     /* first: what the program holds */
    uint32_t             handle;  /* srq_soft_handle: a foreign or
                                     closed one is refused */
    srq_soft_dev_t      *dev;
    srq_soft_xdom_t     *dom;
    int                  users;   /* XRC SRQs and TGT QPs (dev->lock) */
} srq_soft_xrcd_t;

static inline srq_soft_xrcd_t *srq_soft_xrcd(struct ibv_xrcd *x)
{
    return (srq_soft_xrcd_t*)x;
}

/* Is @x one of @dev's open XRC domains? */
bool srq_soft_xrcd_valid(srq_soft_dev_t *dev, struct ibv_xrcd *x);

/* The XRC SRQ numbered @srqn on @dev, or NULL (under dev->lock) */
srq_soft_srq_t *srq_soft_xrc_srq_lookup(srq_soft_dev_t *dev, uint32_t srqn);

/* Are the SRQ's domain and the XRC target QP's domain @x one? */
bool srq_soft_xrc_same_domain(const srq_soft_srq_t *srq,
                              const struct ibv_xrcd *x);

#endif
