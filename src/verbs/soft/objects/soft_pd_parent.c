/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: thread domains and parent domains (soft_pd.h).
 *
 * A thread domain promises that the objects in it are used by one thread
 * at a time, so that a provider may drop their locks. soft0 cannot: its
 * device thread (soft_thread.c) works on the same QPs and CQs whenever no
 * user thread polls, whatever the program promises. A TD is therefore a
 * hint taken and ignored: it can be allocated, named in a parent domain and
 * deallocated, and changes nothing else.
 *
 * A parent domain is a PD with the protection PD's id (an MR of either
 * serves a QP of either, as on an HCA where they share one PD number) and,
 * optionally, the program's allocators for queue memory (soft_qbuf.c).
 * ibv_dealloc_pd frees it (soft_pd.c).
 */
#include "soft_dev.h"
#include "soft_pd.h"

#include <errno.h>
#include <stdlib.h>

#define SRQ_SOFT_PD_PARENT_MASK (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
                                 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

struct ibv_td *srq_soft_alloc_td(srq_verbs_dev_t *vdev,
                                 struct ibv_td_init_attr *attr)
{
    srq_soft_td_t *td;

    if ((attr == NULL) || (attr->comp_mask != 0)) {
        errno = EINVAL; /* no field of it is defined yet */
        return NULL;
    }
    td = calloc(1, sizeof(*td));
    if (td == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    td->ibv.context = vdev->context;
    td->handle      = srq_soft_handle(srq_soft_dev(vdev), &td->ibv);
    return &td->ibv;
}

static srq_soft_td_t *srq_soft_td_of(srq_soft_dev_t *dev, struct ibv_td *ibtd)
{
    srq_soft_td_t *td = (srq_soft_td_t*)ibtd;

    return ((td != NULL) && srq_soft_owns(dev, ibtd->context) &&
            (td->handle == srq_soft_handle(dev, ibtd))) ? td : NULL;
}

/* Refused (EBUSY) while a parent domain names it, as rdma-core's
 * providers refuse it */
int srq_soft_dealloc_td(srq_verbs_dev_t *vdev, struct ibv_td *ibtd)
{
    srq_soft_td_t *td = srq_soft_td_of(srq_soft_dev(vdev), ibtd);

    if (td == NULL) {
        return EINVAL;
    }
    if (atomic_load_explicit(&td->refs, memory_order_relaxed) != 0) {
        return EBUSY;
    }
    td->handle = 0; /* a second dealloc of a reused address is refused */
    free(td);
    return 0;
}

static int srq_soft_parent_check(srq_soft_dev_t *dev,
                                 const struct ibv_parent_domain_init_attr *attr)
{
    if ((attr->comp_mask & ~SRQ_SOFT_PD_PARENT_MASK) != 0) {
        return EINVAL; /* a field we do not know of */
    }
    if (!srq_soft_dev_has(dev, attr->pd) ||
        (((srq_soft_pd_t*)attr->pd)->protection != NULL)) {
        return EINVAL; /* protection comes from a PD, not a parent domain */
    }
    if ((attr->td != NULL) && (srq_soft_td_of(dev, attr->td) == NULL)) {
        return EINVAL;
    }
    if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
        ((attr->alloc == NULL) || (attr->free == NULL))) {
        return EINVAL; /* memory we could get but never give back */
    }
    return 0;
}

struct ibv_pd *srq_soft_alloc_parent_domain(
        srq_verbs_dev_t *vdev, struct ibv_parent_domain_init_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_pd_t *pd;
    int ret;

    ret = srq_soft_parent_check(dev, attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->ibv.context = vdev->context;
    pd->ibv.handle  = srq_soft_handle(dev, &pd->ibv);
    pd->protection  = (srq_soft_pd_t*)attr->pd;
    pd->id          = pd->protection->id;
    pd->td          = srq_soft_td_of(dev, attr->td);
    if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
        pd->alloc = attr->alloc;
        pd->free  = attr->free;
    }
    if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) {
        pd->pd_context = attr->pd_context;
    }
    srq_soft_pd_get(&pd->protection->ibv);
    if (pd->td != NULL) {
        atomic_fetch_add_explicit(&pd->td->refs, 1, memory_order_relaxed);
    }
    return &pd->ibv;
}
