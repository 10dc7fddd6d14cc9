/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: protection domains (soft_pd.h).
 */
#include "soft_pd.h"
#include "soft_dev.h"

#include <errno.h>
#include <stdlib.h>

/* A PD's id names it in the MR and QP tables (never 0) */
struct ibv_pd *srq_soft_alloc_pd(srq_verbs_dev_t *vdev)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_pd_t *pd   = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->ibv.context = vdev->context;
    pd->ibv.handle  = srq_soft_handle(dev, &pd->ibv);
    srq_soft_dev_lock(dev);
    do {
        pd->id = ++dev->pd_last;
    } while (pd->id == 0);
    srq_soft_dev_unlock(dev);
    return &pd->ibv;
}

/* ibv_dealloc_pd(3): refused while anything belongs to the PD (as the
 * kernel's uverbs does), which stays usable; a parent domain's is the same
 * verb */
int srq_soft_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *ibpd)
{
    srq_soft_pd_t *pd = (srq_soft_pd_t*)ibpd;

    if (!srq_soft_dev_has(srq_soft_dev(dev), ibpd)) {
        return ENOENT;
    }
    if (atomic_load_explicit(&pd->refs, memory_order_relaxed) != 0) {
        return EBUSY;
    }
    if (pd->protection != NULL) {
        /* a parent domain lets go of its PD and TD */
        srq_soft_pd_put(&pd->protection->ibv);
        if (pd->td != NULL) {
            atomic_fetch_sub_explicit(&pd->td->refs, 1, memory_order_relaxed);
        }
    }
    free(pd);
    return 0;
}
