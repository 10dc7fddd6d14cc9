/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: device memory.
 *
 * An HCA's device memory is on-chip memory a program reaches only
 * through ibv_memcpy_to_dm / _from_dm and through regions registered on
 * it (ibv_reg_dm_mr). soft0's device is software in its owner's process,
 * so the memory it holds lives there: allocated here, its address never
 * handed out, within a fixed capacity per context (SRQ_SOFT_MAX_DM_SIZE)
 * that is enforced as an HCA's is. It must be the owner's memory: peers
 * reach a region on it as any other, with process_vm_readv/writev.
 *
 * Regions on it are zero-based and addressed by offset in local SGEs as
 * well as by remote accesses (soft_mr.c translates). The memory is freed
 * only when no region uses it (ibv_free_dm: EBUSY before).
 */
#include "soft_dm.h"
#include "soft_dev.h"
#include "soft_mr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Access a region on device memory may have: no on-demand paging (there
 * is nothing to page), no memory windows */
#define SRQ_SOFT_DM_MR_ACCESS  (IBV_ACCESS_LOCAL_WRITE | \
                                IBV_ACCESS_REMOTE_WRITE | \
                                IBV_ACCESS_REMOTE_READ | \
                                IBV_ACCESS_REMOTE_ATOMIC | \
                                IBV_ACCESS_ZERO_BASED)

/* A soft device's, as everything of srq_soft_api.h checks */
static bool srq_soft_dm_dev(srq_verbs_dev_t *vdev)
{
    return (vdev != NULL) && (vdev->kind == SRQ_VERBS_DEV_SOFT);
}

static srq_soft_dm_t *srq_soft_dm(struct ibv_dm *ibdm)
{
    return srq_soft_container_of(ibdm, srq_soft_dm_t, ibv);
}

/* Is [offset, offset + length) inside @dm, in whole words? */
static int srq_soft_dm_range(const srq_soft_dm_t *dm, uint64_t offset,
                             size_t length)
{
    if ((offset % SRQ_SOFT_DM_WORD) || (length % SRQ_SOFT_DM_WORD) ||
        (offset > dm->length) || (length > dm->length - offset)) {
        return EINVAL;
    }
    return 0;
}

/* The checks both copies make: 0, or errno set and its value */
static int srq_soft_dm_copy_check(struct ibv_dm *ibdm, uint64_t offset,
                                  size_t length)
{
    int ret = EINVAL;

    if ((ibdm != NULL) &&
        srq_soft_dev_has(srq_soft_ctx_dev(ibdm->context), ibdm)) {
        ret = srq_soft_dm_range(srq_soft_dm(ibdm), offset, length);
    }
    if (ret != 0) {
        errno = ret;
    }
    return ret;
}

static int srq_soft_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t offset,
                                 const void *host, size_t length)
{
    int ret = srq_soft_dm_copy_check(ibdm, offset, length);

    if ((ret == 0) && (length > 0)) {
        memcpy((char*)srq_soft_dm(ibdm)->buf + offset, host, length);
    }
    return ret;
}

static int srq_soft_memcpy_from_dm(void *host, struct ibv_dm *ibdm,
                                   uint64_t offset, size_t length)
{
    int ret = srq_soft_dm_copy_check(ibdm, offset, length);

    if ((ret == 0) && (length > 0)) {
        memcpy(host, (char*)srq_soft_dm(ibdm)->buf + offset, length);
    }
    return ret;
}

static int srq_soft_dm_check_attr(const struct ibv_alloc_dm_attr *attr)
{
    if ((attr == NULL) || (attr->comp_mask != 0) || (attr->length == 0) ||
        (attr->log_align_req > SRQ_SOFT_DM_MAX_LOG_ALIGN)) {
        return EINVAL;
    }
    return (attr->length > SRQ_SOFT_MAX_DM_SIZE) ? EINVAL : 0;
}

/* Take @size of the context's capacity: false if that much is not left */
static bool srq_soft_dm_charge(srq_soft_dev_t *dev, size_t size)
{
    bool ok;

    srq_soft_dev_lock(dev);
    ok = (size <= SRQ_SOFT_MAX_DM_SIZE - dev->dm_used);
    if (ok) {
        dev->dm_used += size;
    }
    srq_soft_dev_unlock(dev);
    return ok;
}

static void srq_soft_dm_uncharge(srq_soft_dev_t *dev, size_t size)
{
    srq_soft_dev_lock(dev);
    dev->dm_used -= size;
    srq_soft_dev_unlock(dev);
}

struct ibv_dm *srq_soft_alloc_dm(srq_verbs_dev_t *vdev,
                                 struct ibv_alloc_dm_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    size_t align;
    srq_soft_dm_t *dm;
    int ret;

    ret = srq_soft_dm_dev(vdev) ? srq_soft_dm_check_attr(attr) : EINVAL;
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    dm = calloc(1, sizeof(*dm));
    if (dm == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    /* charged in whole words: the unit copies move */
    dm->length  = attr->length;
    dm->charged = (attr->length + SRQ_SOFT_DM_WORD - 1) &
                  ~(size_t)(SRQ_SOFT_DM_WORD - 1);
    if (!srq_soft_dm_charge(dev, dm->charged)) {
        free(dm);
        errno = ENOMEM; /* the capacity left is smaller */
        return NULL;
    }
    align = (size_t)1 << attr->log_align_req;
    align = (align < sizeof(void*)) ? sizeof(void*) : align;
    if (posix_memalign(&dm->buf, align, dm->charged) != 0) {
        srq_soft_dm_uncharge(dev, dm->charged);
        free(dm);
        errno = ENOMEM;
        return NULL;
    }
    /* what a previous owner left there is not this program's to read */
    memset(dm->buf, 0, dm->charged);
    atomic_init(&dm->users, 0);
    dm->ibv.context        = &dev->vctx.context;
    dm->ibv.memcpy_to_dm   = srq_soft_memcpy_to_dm;
    dm->ibv.memcpy_from_dm = srq_soft_memcpy_from_dm;
    dm->ibv.comp_mask      = 0;
    dm->ibv.handle         = srq_soft_handle(dev, &dm->ibv);
    return &dm->ibv;
}

int srq_soft_free_dm(srq_verbs_dev_t *vdev, struct ibv_dm *ibdm)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_dm_t *dm;

    if (!srq_soft_dm_dev(vdev) || !srq_soft_dev_has(dev, ibdm)) {
        errno = ENOENT;
        return ENOENT;
    }
    dm = srq_soft_dm(ibdm);
    if (atomic_load(&dm->users) > 0) {
        errno = EBUSY; /* a region still reaches it */
        return EBUSY;
    }
    srq_soft_dm_uncharge(dev, dm->charged);
    free(dm->buf);
    free(dm);
    return 0;
}

struct ibv_mr *srq_soft_reg_dm_mr(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                  struct ibv_dm *ibdm, uint64_t offset,
                                  size_t length, unsigned int access)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_dm_t *dm;

    /* the man page: a region on device memory is zero-based */
    if (!srq_soft_dm_dev(vdev) || !srq_soft_dev_has(dev, ibdm) ||
        !(access & IBV_ACCESS_ZERO_BASED) ||
        (access & ~(unsigned int)SRQ_SOFT_DM_MR_ACCESS)) {
        errno = EINVAL;
        return NULL;
    }
    dm = srq_soft_dm(ibdm);
    if ((offset > dm->length) || (length > dm->length - offset)) {
        errno = EINVAL;
        return NULL;
    }
    return srq_soft_reg_mr_offsets(vdev, pd, (char*)dm->buf + offset, length,
                                   (int)access, &dm->users);
}
