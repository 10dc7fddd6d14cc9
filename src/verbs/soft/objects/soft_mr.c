/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: memory regions.
 *
 * The key table lives in the instance's shared tables so that a peer's
 * requester validates an rkey (bounds, access, protection domain) without
 * our CPU, as an HCA would. lkey == rkey.
 *
 * Keys do not come back: they are handed out in increasing order, and a
 * key's table slot is its low 16 bits, so a key is skipped when its slot
 * is taken. A key repeats only after 2^32 keys, where a (generation,
 * index) pair reused its index at once and repeated after 65535
 * re-registrations of one slot.
 *
 * ibv_dereg_mr withdraws the key, then waits for any peer's one-sided
 * access under it that is still copying (soft_inflight.c): once it
 * returns, nothing lands in the region. ibv_rereg_mr does the same, then
 * publishes the region as it is now under the same key: HCAs keep an MR's
 * keys across ibv_rereg_mr (the man page lets them change, rdma-core's
 * tests count on them not), so a peer's rkey reaches only what the region
 * is now.
 *
 * A zero-length region is allowed (the IB spec's zero-length accesses
 * need no memory): every access of a byte or more through it fails.
 *
 * On-demand paging (IBV_ACCESS_ON_DEMAND) is what soft0 always does: it
 * pins nothing, and every access to a region is made when it happens, by
 * virtual address (memcpy here, process_vm_readv/writev from a peer), so
 * the kernel faults the pages in then and an access sees the mapping as
 * it is now. An ODP region is therefore an ordinary one whose access
 * says so (ibv_advise_mr asks for it, soft_mr_advise.c). Registration
 * never probes the range, ODP or not: the range need not be mapped yet.
 * The implicit ODP region (addr NULL, length SIZE_MAX, IOVA 0) covers
 * the whole address space, as mlx5's does; the range checks below do not
 * overflow on it.
 *
 * IBV_ACCESS_HUGETLB is the program's promise that huge pages back the
 * region (the man page: for an explicit ODP region), which lets an HCA
 * map it with one translation entry per huge page. soft0 has no
 * translation entries: it accepts the promise, on any region as the
 * kernel does, and it changes nothing.
 *
 * Remote accesses address a region by its IOVA (the entry's iova, the
 * start of the region as peers see it): its address, 0 when zero-based
 * (IBV_ACCESS_ZERO_BASED: by offset), or what ibv_reg_mr_iova said.
 * Local SGEs address it by virtual address, as before. ibv_rereg_mr with a
 * new translation puts the IOVA at the new address (0 when zero-based).
 */
#include "soft_mr.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_shm.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_srq_wqe.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A slot's key while its region is deregistered: taken, matching no key */
#define SRQ_SOFT_MR_WITHDRAWN    SRQ_SOFT_SRQ_INVALID_LKEY

#define SRQ_SOFT_MR_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | \
                                  IBV_ACCESS_REMOTE_WRITE | \
                                  IBV_ACCESS_REMOTE_READ | \
                                  IBV_ACCESS_REMOTE_ATOMIC | \
                                  IBV_ACCESS_MW_BIND | \
                                  IBV_ACCESS_ZERO_BASED | \
                                  IBV_ACCESS_ON_DEMAND | \
                                  IBV_ACCESS_HUGETLB | \
                                  IBV_ACCESS_RELAXED_ORDERING)

/* In a table entry's access only (no verb passes it, so no access asks
 * for it): local SGEs address the region by offset, as remote accesses
 * do (device memory's regions: srq_soft_mr_local_va) */
#define SRQ_SOFT_MR_ENT_OFFSETS  (1u << 30)

/* The accesses that write the region's pages */
#define SRQ_SOFT_MR_WRITES       (IBV_ACCESS_LOCAL_WRITE | \
                                  IBV_ACCESS_REMOTE_WRITE | \
                                  IBV_ACCESS_REMOTE_ATOMIC | \
                                  SRQ_SOFT_MR_WILL_WRITE)

static uint32_t srq_soft_mr_slot(uint32_t key)
{
    return key & (SRQ_SOFT_MR_TABLE_SIZE - 1);
}

/* Where remote accesses address a region registered with @access at
 * @iova */
static uint64_t srq_soft_mr_iova(uint64_t iova, int access)
{
    return (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
}

/* The implicit ODP region: the whole address space (ibv_reg_mr's
 * addr NULL, length SIZE_MAX, with IBV_ACCESS_ON_DEMAND) */
static bool srq_soft_mr_implicit(const void *addr, size_t length, int access)
{
    return (addr == NULL) && (length == SIZE_MAX) &&
           (access & IBV_ACCESS_ON_DEMAND);
}

static int srq_soft_mr_check_args(srq_soft_dev_t *dev, struct ibv_pd *pd,
                                  void *addr, size_t length, uint64_t iova,
                                  int access)
{
    if (!srq_soft_dev_has(dev, pd)) {
        return EINVAL;
    }
    if (srq_soft_mr_implicit(addr, length, access)) {
        /* addressed by virtual address only: an IOVA of its own is
         * refused, as mlx5 refuses it */
        if (iova != 0) {
            return EINVAL;
        }
    } else if ((length > SRQ_SOFT_MAX_MR_SIZE) ||
               ((uintptr_t)addr + length < (uintptr_t)addr) ||
               (iova + length < iova)) {
        return EINVAL;
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
                                uint64_t addr, uint64_t length, uint64_t iova,
                                int access, uint32_t pd)
{
    /* peers read these while the key is not theirs to match yet */
    __atomic_store_n(&ent->addr, addr, __ATOMIC_RELAXED);
    __atomic_store_n(&ent->iova, iova, __ATOMIC_RELAXED);
    __atomic_store_n(&ent->length, length, __ATOMIC_RELAXED);
    __atomic_store_n(&ent->access, (uint32_t)access, __ATOMIC_RELAXED);
    __atomic_store_n(&ent->pd, pd, __ATOMIC_RELAXED);
    atomic_store_explicit((_Atomic uint32_t*)&ent->key, key,
                          memory_order_release);
}

/* The next key whose slot is free (slot 0 is never used: key 0 is none).
 * SRQ_SOFT_SRQ_INVALID_LKEY is never a key: in an SRQ WQE it ends the
 * scatter list (an SGE with it would cut the list short); it also marks a
 * slot whose region is being deregistered (SRQ_SOFT_MR_WITHDRAWN) */
static uint32_t srq_soft_mr_next_key(srq_soft_dev_t *dev)
{
    uint32_t key = dev->mr_last_key;

    do {
        key = (key + 1) & ~SRQ_SOFT_MR_KEY_WINDOW_BIT;
    } while ((srq_soft_mr_slot(key) == 0) ||
             (key == SRQ_SOFT_SRQ_INVALID_LKEY) ||
             (dev->fab.seg.mrs[srq_soft_mr_slot(key)].key != 0));
    dev->mr_last_key = key;
    return key;
}

/* Is a window bound to the region of @key? The windows, above us, tell
 * (dev->mr_has_windows, soft_mw.c's) */
static bool srq_soft_mr_windows(srq_soft_dev_t *dev, uint32_t key)
{
    return dev->mr_has_windows(dev, key);
}

struct ibv_mr *srq_soft_reg_mr(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                               void *addr, size_t length, int access)
{
    return srq_soft_reg_mr_iova(vdev, pd, addr, length, (uintptr_t)addr,
                                access);
}

/* A region; @ent_flags go into its table entry's access only */
static struct ibv_mr *srq_soft_mr_create(srq_soft_dev_t *dev,
                                         struct ibv_pd *pd, void *addr,
                                         size_t length, uint64_t iova,
                                         int access, uint32_t ent_flags)
{
    srq_soft_mr_t *mr;
    uint32_t key;
    int ret;

    iova = srq_soft_mr_iova(iova, access);
    ret  = srq_soft_mr_check_args(dev, pd, addr, length, iova, access);
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
    if (dev->mr_count >= SRQ_SOFT_MAX_MR) {
        srq_soft_dev_unlock(dev);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    key = srq_soft_mr_next_key(dev);
    ++dev->mr_count;
    srq_soft_mr_publish(&dev->fab.seg.mrs[srq_soft_mr_slot(key)], key,
                        (uintptr_t)addr, length, iova,
                        (int)((uint32_t)access | ent_flags),
                        srq_soft_pd_id(pd));
    srq_soft_dev_unlock(dev);

    mr->index       = srq_soft_mr_slot(key);
    mr->access      = access;
    mr->iova        = iova;
    mr->ibv.context = &dev->vctx.context;
    mr->ibv.pd      = pd;
    srq_soft_pd_get(pd);
    mr->ibv.addr    = addr;
    mr->ibv.length  = length;
    mr->ibv.handle  = srq_soft_handle(dev, &mr->ibv);
    mr->ibv.lkey    = key;
    mr->ibv.rkey    = key;
    return &mr->ibv;
}

struct ibv_mr *srq_soft_reg_mr_iova(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                    void *addr, size_t length, uint64_t iova,
                                    int access)
{
    return srq_soft_mr_create(srq_soft_dev(vdev), pd, addr, length, iova,
                              access, 0);
}

struct ibv_mr *srq_soft_reg_mr_offsets(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                       void *addr, size_t length, int access,
                                       _Atomic uint32_t *users)
{
    struct ibv_mr *ibmr;

    if (!(access & IBV_ACCESS_ZERO_BASED)) {
        errno = EINVAL; /* offsets are what zero-based means */
        return NULL;
    }
    /* counted first: the memory cannot be freed under a region being
     * made on it */
    atomic_fetch_add(users, 1);
    ibmr = srq_soft_mr_create(srq_soft_dev(vdev), pd, addr, length, 0,
                              access, SRQ_SOFT_MR_ENT_OFFSETS);
    if (ibmr == NULL) {
        atomic_fetch_sub(users, 1);
        return NULL;
    }
    srq_soft_container_of(ibmr, srq_soft_mr_t, ibv)->dm_users = users;
    atomic_fetch_add(&srq_soft_dev(vdev)->mr_offsets, 1);
    return ibmr;
}

/*
 * Withdraw @mr's key: once this returns, no access under it runs or can
 * start. The key is withdrawn before the device lock (sequentially
 * consistent: see soft_inflight.c): a copy under it that runs under the
 * lock (this process's requester or responder, in chunks) sees it at its
 * next chunk and stops, so taking the lock waits for one chunk, not for
 * the whole WRITE or READ. The slot stays taken (a marker no key equals)
 * until the lock is ours, so a registration meanwhile cannot get it.
 * Returns with dev->lock held, or EINVAL (not this MR's key) without it.
 */
static int srq_soft_mr_withdraw(srq_soft_dev_t *dev, srq_soft_mr_t *mr)
{
    srq_soft_mr_ent_t *ent = &dev->fab.seg.mrs[mr->index];
    uint32_t key           = mr->ibv.lkey;

    if (!atomic_compare_exchange_strong_explicit(
            (_Atomic uint32_t*)&ent->key, &key, SRQ_SOFT_MR_WITHDRAWN,
            memory_order_seq_cst, memory_order_relaxed)) {
        return EINVAL;
    }
    srq_soft_dev_lock(dev);
    /* then no peer's copy under it may still be running when we return */
    srq_soft_inflight_wait_all(&dev->fab, mr->ibv.lkey);
    atomic_store_explicit((_Atomic uint32_t*)&ent->key, 0,
                          memory_order_release);
    return 0;
}

int srq_soft_dereg_mr(srq_verbs_dev_t *vdev, struct ibv_mr *ibmr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_mr_t *mr   = srq_soft_container_of(ibmr, srq_soft_mr_t, ibv);

    if (!srq_soft_dev_has(dev, ibmr)) {
        return ENOENT;
    }
    if (srq_soft_mr_windows(dev, ibmr->lkey)) {
        return EBUSY; /* a memory window is bound to it */
    }
    if (srq_soft_mr_withdraw(dev, mr) != 0) {
        return EINVAL;
    }
    --dev->mr_count;
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(ibmr->pd);
    if (mr->dm_users != NULL) {
        atomic_fetch_sub(&dev->mr_offsets, 1);
        atomic_fetch_sub(mr->dm_users, 1);
    }
    free(mr);
    return 0;
}

#define SRQ_SOFT_REREG_FLAGS (IBV_REREG_MR_CHANGE_TRANSLATION | \
                              IBV_REREG_MR_CHANGE_PD | \
                              IBV_REREG_MR_CHANGE_ACCESS)

/*
 * ibv_rereg_mr: what @flags name changes, the rest stays, the keys too.
 * Every check is made before anything changes: a failure leaves the
 * region as it was.
 */
int srq_soft_rereg_mr(srq_verbs_dev_t *vdev, struct ibv_mr *ibmr, int flags,
                      struct ibv_pd *pd, void *addr, size_t length, int access)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_mr_t *mr   = srq_soft_container_of(ibmr, srq_soft_mr_t, ibv);
    struct ibv_pd *old_pd;
    uint64_t iova;
    int ret;

    if (!srq_soft_dev_has(dev, ibmr) || (flags == 0) ||
        (flags & ~SRQ_SOFT_REREG_FLAGS)) {
        return EINVAL;
    }
    if (mr->dm_users != NULL) {
        /* its translation is the device memory's: not implemented */
        return EOPNOTSUPP;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_PD)) {
        pd = ibmr->pd;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
        addr   = ibmr->addr;
        length = ibmr->length;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
        access = mr->access;
    }
    /* a new translation, or no longer zero-based: at the address */
    iova = ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) ||
            (mr->access & IBV_ACCESS_ZERO_BASED)) ? (uintptr_t)addr :
                                                     mr->iova;
    iova = srq_soft_mr_iova(iova, access);
    ret  = srq_soft_mr_check_args(dev, pd, addr, length, iova, access);
    if (ret != 0) {
        return ret;
    }
    if (srq_soft_mr_windows(dev, ibmr->lkey)) {
        return EBUSY; /* a window bound to it grants what it granted */
    }
    if (srq_soft_mr_withdraw(dev, mr) != 0) {
        return EINVAL;
    }
    /* no access under the key runs now, and none starts before this: the
     * key comes back with what the region is now */
    srq_soft_mr_publish(&dev->fab.seg.mrs[mr->index], ibmr->lkey,
                        (uintptr_t)addr, length, iova, access,
                        srq_soft_pd_id(pd));
    srq_soft_dev_unlock(dev);
    mr->iova     = iova;

    old_pd       = ibmr->pd;
    srq_soft_pd_get(pd);
    srq_soft_pd_put(old_pd);
    mr->access   = access;
    ibmr->pd     = pd;
    ibmr->addr   = addr;
    ibmr->length = length;
    return 0;
}

/* A consistent copy of the entry of @key in @seg: false if it is not a
 * live region's. The entry is read between two loads of its key: a key
 * that did not change (keys do not repeat) means the fields are that
 * region's */
static bool srq_soft_mr_ent_get(const srq_soft_seg_t *seg, uint32_t key,
                                srq_soft_mr_ent_t *v)
{
    const srq_soft_mr_ent_t *ent = &seg->mrs[srq_soft_mr_slot(key)];
    _Atomic uint32_t *kp         = (_Atomic uint32_t*)&ent->key;

    if ((key == 0) || (atomic_load_explicit(kp, memory_order_seq_cst) != key)) {
        return false;
    }
    v->addr   = __atomic_load_n(&ent->addr, __ATOMIC_RELAXED);
    v->iova   = __atomic_load_n(&ent->iova, __ATOMIC_RELAXED);
    v->length = __atomic_load_n(&ent->length, __ATOMIC_RELAXED);
    v->access = __atomic_load_n(&ent->access, __ATOMIC_RELAXED);
    v->pd     = __atomic_load_n(&ent->pd, __ATOMIC_RELAXED);
    /* the region may have been deregistered while we read it */
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(kp, memory_order_relaxed) == key;
}

/* Does region @e grant @access to [start, start + len), @start counted
 * from @base (its address or its IOVA)? */
static int srq_soft_mr_grants(const srq_soft_mr_ent_t *e, uint64_t base,
                              uint64_t start, uint64_t len, int access,
                              uint32_t pd)
{
    if ((e->pd != pd) || (start < base) || (start - base > e->length) ||
        (len > e->length - (start - base))) {
        return EACCES;
    }
    return ((uint32_t)access & ~e->access &
            ~(uint32_t)(SRQ_SOFT_MR_KEY_ONLY | SRQ_SOFT_MR_WILL_WRITE)) ?
           EACCES : 0;
}

/* An access to ODP region @e made here, when @seg's regions are this
 * process's memory, takes its page fault first (soft_mr_fault.c): 0 or
 * EFAULT. Other regions are not faulted, so that their data path makes
 * no system call: their pages are the program's to keep mapped while
 * registered, as an HCA keeps them pinned. A peer's memory is reached
 * with process_vm_readv/writev, which answer EFAULT themselves. */
static int srq_soft_mr_fault_in(const srq_soft_seg_t *seg,
                                const srq_soft_mr_ent_t *e, uint64_t va,
                                uint64_t len, int access)
{
    if (!seg->own || !(e->access & IBV_ACCESS_ON_DEMAND)) {
        return 0;
    }
    return srq_soft_mr_fault(va, len, access & SRQ_SOFT_MR_WRITES);
}

/* Local read is always granted; a zero-length access checks nothing (IB
 * spec). @probe: an access follows, here (srq_soft_mr_fault_in) */
static int srq_soft_mr_check_local(const srq_soft_seg_t *seg, uint32_t key,
                                   uint64_t addr, uint64_t len, int access,
                                   uint32_t pd, bool probe)
{
    srq_soft_mr_ent_t e;
    int ret;

    if (len == 0) {
        return 0;
    }
    if (!srq_soft_mr_ent_get(seg, key, &e)) {
        return EACCES;
    }
    ret = srq_soft_mr_grants(&e, e.addr, addr, len, access, pd);
    return ((ret != 0) || !probe) ? ret :
           srq_soft_mr_fault_in(seg, &e, addr, len, access);
}

int srq_soft_mr_check(const srq_soft_seg_t *seg, uint32_t key, uint64_t addr,
                      uint64_t len, int access, uint32_t pd)
{
    return srq_soft_mr_check_local(seg, key, addr, len, access, pd, true);
}

int srq_soft_mr_check_key(const srq_soft_seg_t *seg, uint32_t key,
                          uint64_t addr, uint64_t len, int access, uint32_t pd)
{
    return srq_soft_mr_check_local(seg, key, addr, len, access, pd, false);
}

uint64_t srq_soft_mr_local_va(const srq_soft_seg_t *seg, uint32_t key,
                              uint64_t addr, uint64_t len)
{
    srq_soft_mr_ent_t e;

    if ((len == 0) || !srq_soft_mr_ent_get(seg, key, &e) ||
        !(e.access & SRQ_SOFT_MR_ENT_OFFSETS)) {
        return addr; /* the check that follows decides */
    }
    if ((addr > e.length) || (len > e.length - addr)) {
        return UINT64_MAX; /* past any region's end */
    }
    return e.addr + addr;
}

int srq_soft_mr_check_iova(const srq_soft_seg_t *seg, uint32_t key,
                           uint64_t iova, uint64_t len, int access,
                           uint32_t pd, uint64_t *va)
{
    srq_soft_mr_ent_t e;
    int ret;

    *va = iova;
    if (len == 0) {
        return 0;
    }
    if (!srq_soft_mr_ent_get(seg, key, &e)) {
        return EACCES;
    }
    ret = srq_soft_mr_grants(&e, e.iova, iova, len, access, pd);
    if (ret == 0) {
        *va = e.addr + (iova - e.iova);
        ret = (access & SRQ_SOFT_MR_KEY_ONLY) ? 0 :
              srq_soft_mr_fault_in(seg, &e, *va, len, access);
    }
    return ret;
}
