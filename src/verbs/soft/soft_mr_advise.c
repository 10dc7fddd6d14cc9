/*
 * ucx-srq soft device: ibv_advise_mr, prefetching on-demand paging
 * regions.
 *
 * soft0 has no page table of its own: every access to a region is made
 * by virtual address when it happens (soft_mr.c), and the kernel's page
 * tables are the only ones there are. So a prefetch is what an HCA's
 * page-fault handler does ahead of the I/O, made by the kernel for us:
 * madvise(MADV_POPULATE_READ / MADV_POPULATE_WRITE) faults the pages in
 * (for write: breaking copy-on-write) without changing a byte of them.
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
#define _GNU_SOURCE /* process_vm_readv */
#include "soft_mr.h"
#include "soft_dev.h"
#include "soft_pd.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 5.14's values, for headers older than the kernel */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Read-fault [addr, addr + len) through the kernel, a chunk at a time
 * (what is read is thrown away): the prefetch of a kernel without
 * MADV_POPULATE_*, read-only even for PREFETCH_WRITE, since faulting a
 * page in for write without MADV_POPULATE_WRITE means writing to it */
static int srq_soft_mr_advise_touch(uintptr_t addr, uint64_t len)
{
    uint8_t scratch[16384];
    struct iovec local, remote;
    size_t n;

    while (len > 0) {
        n              = (len < sizeof(scratch)) ? len : sizeof(scratch);
        local.iov_base = scratch;
        local.iov_len  = n;
        remote.iov_base = (void*)addr;
        remote.iov_len  = n;
        if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
            (ssize_t)n) {
            return EFAULT;
        }
        addr += n;
        len  -= n;
    }
    return 0;
}

/* Fault in the pages of [addr, addr + len), for write if @write */
static int srq_soft_mr_advise_populate(uint64_t addr, uint64_t len,
                                       bool write)
{
    uintptr_t page  = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)addr & ~(page - 1);
    size_t span     = (size_t)(addr + len - start);

    if (madvise((void*)start, span,
                write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0) {
        return 0;
    }
    if (errno == EINVAL) {
        /* a kernel older than 5.14 knows no MADV_POPULATE_* */
        return srq_soft_mr_advise_touch((uintptr_t)addr, len);
    }
    /* ENOMEM: not mapped; EFAULT: a page that cannot be had */
    return EFAULT;
}

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
        if (srq_soft_mr_check(&dev->seg, sg_list[i].lkey, sg_list[i].addr,
                              sg_list[i].length, need,
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
        ret = srq_soft_mr_advise_populate(sg_list[i].addr, sg_list[i].length,
                                          write);
        if ((ret != 0) && (flags & IBV_ADVISE_MR_FLAG_FLUSH)) {
            return ret;
        }
    }
    return 0;
}
