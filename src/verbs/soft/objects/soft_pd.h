/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: protection domains. A PD counts the objects that
 * belong to it (MRs, SRQs, QPs, AHs), so that deallocating it while one
 * exists is refused (EBUSY) instead of freeing what they point at.
 *
 * A parent domain (ibv_alloc_parent_domain, soft_pd_parent.c) is a PD too:
 * it carries its protection PD's id, so that it protects exactly as that
 * PD does, and holds a reference on it (and on its thread domain) while it
 * lives. Its allocators, if given, provide the queue memory of the QPs,
 * CQs and SRQs made in it (soft_qbuf.h).
 */
#ifndef SRQ_SOFT_PD_H_
#define SRQ_SOFT_PD_H_

#include "../../dev/srq_verbs_dev.h"

#include <stdatomic.h>
#include <stdint.h>

/* A thread domain: a hint soft0 takes and ignores (soft_pd_parent.c) */
typedef struct srq_soft_td {
    struct ibv_td     ibv;
    uint32_t          handle; /* srq_soft_handle: a foreign TD is refused */
    _Atomic unsigned  refs;   /* parent domains in it */
} srq_soft_td_t;

typedef struct srq_soft_pd {
    struct ibv_pd     ibv;
    _Atomic unsigned  refs;   /* objects of the PD */
    uint32_t          id;     /* names it in the MR and QP tables (never 0);
                                 not the handle, which the program can
                                 write */
    /* a parent domain only (protection == NULL for a plain PD) */
    struct srq_soft_pd *protection;
    srq_soft_td_t      *td;
    void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
                   size_t alignment, uint64_t resource_type);
    void  (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
                  uint64_t resource_type);
    void               *pd_context;
} srq_soft_pd_t;

/* The number @pd (checked by the caller) has in the shared tables */
static inline uint32_t srq_soft_pd_id(const struct ibv_pd *pd)
{
    return ((const srq_soft_pd_t*)pd)->id;
}

/* An object of @pd was created / destroyed (@pd checked by the caller) */
static inline void srq_soft_pd_get(struct ibv_pd *pd)
{
    atomic_fetch_add_explicit(&((srq_soft_pd_t*)pd)->refs, 1,
                              memory_order_relaxed);
}

static inline void srq_soft_pd_put(struct ibv_pd *pd)
{
    atomic_fetch_sub_explicit(&((srq_soft_pd_t*)pd)->refs, 1,
                              memory_order_relaxed);
}

struct ibv_pd *srq_soft_alloc_pd(srq_verbs_dev_t *dev);
int srq_soft_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd);

/* soft_pd_parent.c */
struct ibv_td *srq_soft_alloc_td(srq_verbs_dev_t *dev,
                                 struct ibv_td_init_attr *attr);
int srq_soft_dealloc_td(srq_verbs_dev_t *dev, struct ibv_td *td);
struct ibv_pd *srq_soft_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr);

#endif
