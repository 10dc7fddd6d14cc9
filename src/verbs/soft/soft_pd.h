/*
 * ucx-srq soft device: protection domains. A PD counts the objects that
 * belong to it (MRs, SRQs, QPs, AHs), so that deallocating it while one
 * exists is refused (EBUSY) instead of freeing what they point at.
 */
#ifndef SRQ_SOFT_PD_H_
#define SRQ_SOFT_PD_H_

#include "../dev/srq_verbs_dev.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct srq_soft_pd {
    struct ibv_pd     ibv;
    _Atomic unsigned  refs;   /* objects of the PD */
    uint32_t          id;     /* names it in the MR and QP tables (never 0);
                                 not the handle, which the program can
                                 write */
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

#endif
