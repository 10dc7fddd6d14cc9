/*
 * ucx-srq soft device: memory regions.
 *
 * The key table lives in the instance's shared segment so that a peer's
 * requester validates an rkey (bounds, access) without our CPU, as an HCA
 * would. A key is (generation << 16 | index): deregistering bumps the
 * index's generation, so a stale key never matches a later region that
 * reuses the slot. lkey == rkey.
 */
#include "soft_mr.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_shm.h"

#include <errno.h>
#include <stdlib.h>

#define SRQ_SOFT_MR_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | \
                                  IBV_ACCESS_REMOTE_WRITE | \
                                  IBV_ACCESS_REMOTE_READ | \
                                  IBV_ACCESS_REMOTE_ATOMIC | \
                                  IBV_ACCESS_RELAXED_ORDERING)
/* Access flags verbs defines that the device does not implement: memory
 * windows (max_mw is 0), zero-based MRs, on-demand paging, huge-page hints */
#define SRQ_SOFT_MR_ACCESS_UNSUPPORTED (IBV_ACCESS_MW_BIND | \
                                        IBV_ACCESS_ZERO_BASED | \
                                        IBV_ACCESS_ON_DEMAND | \
                                        IBV_ACCESS_HUGETLB)

int srq_soft_mr_init(srq_soft_dev_t *dev)
{
    uint32_t i;

    dev->mr_gen  = calloc(SRQ_SOFT_MR_TABLE_SIZE, sizeof(*dev->mr_gen));
    dev->mr_free = calloc(SRQ_SOFT_MR_TABLE_SIZE, sizeof(*dev->mr_free));
    if ((dev->mr_gen == NULL) || (dev->mr_free == NULL)) {
        srq_soft_mr_cleanup(dev);
        return ENOMEM;
    }
    /* pop low indices first; index 0 is never used */
    for (i = 1; i < SRQ_SOFT_MR_TABLE_SIZE; ++i) {
        dev->mr_free[dev->mr_free_cnt++] = SRQ_SOFT_MR_TABLE_SIZE - i;
        dev->mr_gen[i] = 1;
    }
    return 0;
}

void srq_soft_mr_cleanup(srq_soft_dev_t *dev)
{
    free(dev->mr_gen);
    free(dev->mr_free);
    dev->mr_gen  = NULL;
    dev->mr_free = NULL;
}

static int srq_soft_mr_check_args(srq_soft_dev_t *dev, struct ibv_pd *pd,
                                  void *addr, size_t length, int access)
{
    if (!srq_soft_dev_has(dev, pd)) {
        return EINVAL;
    }
    if ((length == 0) || (length > SRQ_SOFT_MAX_MR_SIZE) ||
        ((uintptr_t)addr + length < (uintptr_t)addr)) {
        return EINVAL;
    }
    if (access & SRQ_SOFT_MR_ACCESS_UNSUPPORTED) {
        return EOPNOTSUPP;
    }
    if (access & ~SRQ_SOFT_MR_ACCESS_KNOWN) {
        return EINVAL;
    }
    /* IB spec: remote write and remote atomics need local write */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        return EINVAL;
    }
    return 0;
}

static void srq_soft_mr_publish(srq_soft_mr_ent_t *ent, uint32_t key,
                                uint64_t addr, uint64_t length, int access)
{
    ent->addr   = addr;
    ent->length = length;
    ent->access = (uint32_t)access;
    atomic_store_explicit((_Atomic uint32_t*)&ent->key, key,
                          memory_order_release);
}

struct ibv_mr *srq_soft_reg_mr(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                               void *addr, size_t length, int access)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_mr_t *mr;
    uint32_t index, key;
    int ret;

    ret = srq_soft_mr_check_args(dev, pd, addr, length, access);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    srq_soft_dev_lock(dev);
    if (dev->mr_free_cnt == 0) {
        srq_soft_dev_unlock(dev);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    index = dev->mr_free[--dev->mr_free_cnt];
    key   = ((uint32_t)dev->mr_gen[index] << 16) | index;
    srq_soft_mr_publish(&dev->seg.mrs[index], key, (uintptr_t)addr, length,
                        access);
    srq_soft_dev_unlock(dev);

    mr->index       = index;
    mr->ibv.context = &dev->vctx.context;
    mr->ibv.pd      = pd;
    srq_soft_pd_get(pd);
    mr->ibv.addr    = addr;
    mr->ibv.length  = length;
    mr->ibv.handle  = index;
    mr->ibv.lkey    = key;
    mr->ibv.rkey    = key;
    return &mr->ibv;
}

int srq_soft_dereg_mr(srq_verbs_dev_t *vdev, struct ibv_mr *ibmr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_mr_t *mr   = srq_soft_container_of(ibmr, srq_soft_mr_t, ibv);
    srq_soft_mr_ent_t *ent;

    if (srq_soft_dev_lock_obj(dev, ibmr) != 0) {
        return EINVAL;
    }
    ent = &dev->seg.mrs[mr->index];
    if (ent->key != ibmr->lkey) {
        srq_soft_dev_unlock(dev);
        return EINVAL;
    }
    atomic_store_explicit((_Atomic uint32_t*)&ent->key, 0,
                          memory_order_release);
    /* the next region in this slot gets keys no stale holder can match */
    if (++dev->mr_gen[mr->index] == 0) {
        dev->mr_gen[mr->index] = 1;
    }
    dev->mr_free[dev->mr_free_cnt++] = mr->index;
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(ibmr->pd);
    free(mr);
    return 0;
}

/*
 * Does @key grant @access to [addr, addr + len) in the table of @seg (ours
 * for an lkey, the target's for an rkey)? 0 or EACCES. Local read is always
 * granted; a zero-length access checks nothing (IB spec).
 */
int srq_soft_mr_check(const srq_soft_seg_t *seg, uint32_t key, uint64_t addr,
                      uint64_t len, int access)
{
    const srq_soft_mr_ent_t *ent;
    _Atomic uint32_t *kp;
    uint64_t mr_addr, mr_len;
    uint32_t mr_access;

    if (len == 0) {
        return 0;
    }
    ent = &seg->mrs[key & (SRQ_SOFT_MR_TABLE_SIZE - 1)];
    kp  = (_Atomic uint32_t*)&ent->key;
    if ((key == 0) || (atomic_load_explicit(kp, memory_order_acquire) != key)) {
        return EACCES;
    }
    mr_addr   = ent->addr;
    mr_len    = ent->length;
    mr_access = ent->access;
    /* the region may have been deregistered while we read it */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(kp, memory_order_relaxed) != key) {
        return EACCES;
    }
    if ((addr < mr_addr) || (addr - mr_addr > mr_len) ||
        (len > mr_len - (addr - mr_addr))) {
        return EACCES;
    }
    return ((uint32_t)access & ~mr_access) ? EACCES : 0;
}
