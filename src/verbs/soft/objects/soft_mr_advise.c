/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: ibv_advise_mr, prefetching on-demand paging
 * regions.
 *
 * soft0 has no page table of its own: every access to a region is made
 * by virtual address when it happens (soft_mr.c), and the kernel's page
 * tables are the only ones there are. So a prefetch is what an HCA's
 * page-fault handler does ahead of the I/O, made by the kernel for us:
 * the fault an access takes (soft_mr_fault.c: madvise's
 * MADV_POPULATE_READ / _WRITE, for write breaking copy-on-write) without
 * changing a byte of them.
 * PREFETCH_NO_FAULT makes present pages visible to the device; soft0
 * sees every present page already, so it only checks.
 *
 * The checks are an HCA's (man ibv_advise_mr): an unknown flag or a PD
 * not of this device: EINVAL; an unknown advice: EOPNOTSUPP; an SGE whose
 * lkey is no ODP region of @pd, outside its bounds, or (PREFETCH_WRITE)
 * without local write: EFAULT. Every SGE is checked before any is
 * prefetched. With IBV_ADVISE_MR_FLAG_FLUSH the call returns when the
 * pages are in, and a range that is not (all) mapped is EFAULT; without
 * it the prefetch is asynchronous on an HCA and its outcome is not
 * reported, so a range that cannot be faulted in is not an error here
 * either (the work is still done before return).
 */
#include "soft_dev.h"
#include "soft_mr.h"
#include "soft_pd.h"

#include <errno.h>
#include <stdint.h>

/* What an SGE's region must grant for @advice */
static int srq_soft_mr_advise_access(enum ibv_advise_mr_advice advice)
{
    return IBV_ACCESS_ON_DEMAND |
           ((advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE) ?
            IBV_ACCESS_LOCAL_WRITE : 0);
}

static int srq_soft_mr_advise_check(srq_soft_dev_t *dev, struct ibv_pd *pd,
                                    enum ibv_advise_mr_advice advice,
                                    uint32_t flags,
                                    const struct ibv_sge *sg_list,
                                    uint32_t num_sge)
{
    int need = srq_soft_mr_advise_access(advice);
    uint32_t i;

    if (!srq_soft_dev_has(dev, pd) || (flags & ~IBV_ADVISE_MR_FLAG_FLUSH)) {
        return EINVAL;
    }
    if ((advice != IBV_ADVISE_MR_ADVICE_PREFETCH) &&
        (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE) &&
        (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)) {
        return EOPNOTSUPP;
    }
    if ((sg_list == NULL) && (num_sge > 0)) {
        return EFAULT;
    }
    for (i = 0; i < num_sge; ++i) {
        /* the ODP bit is asked for as an access: a region without it
         * (pinned, on an HCA) has nothing to prefetch */
        if (srq_soft_mr_check_key(&dev->fab.seg, sg_list[i].lkey,
                                  sg_list[i].addr, sg_list[i].length, need,
                                  srq_soft_pd_id(pd)) != 0) {
            return EFAULT;
        }
    }
    return 0;
}

int srq_soft_advise_mr(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                       enum ibv_advise_mr_advice advice, uint32_t flags,
                       struct ibv_sge *sg_list, uint32_t num_sge)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    bool write          = (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
    uint32_t i;
    int ret;

    ret = srq_soft_mr_advise_check(dev, pd, advice, flags, sg_list, num_sge);
    if ((ret != 0) || (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)) {
        return ret;
    }
    for (i = 0; i < num_sge; ++i) {
        if (sg_list[i].length == 0) {
            continue;
        }
        ret = srq_soft_mr_fault(sg_list[i].addr, sg_list[i].length, write);
        if ((ret != 0) && (flags & IBV_ADVISE_MR_FLAG_FLUSH)) {
            return ret;
        }
    }
    return 0;
}
