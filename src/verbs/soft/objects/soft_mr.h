/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: memory regions. Their keys live in a table in the
 * device's shared tables, so that a peer validates an rkey without our CPU.
 */
#ifndef SRQ_SOFT_MR_H_
#define SRQ_SOFT_MR_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_shm.h"

#include <stdint.h>

/* A key with this bit is a memory window's (soft_mw.h), never a region's:
 * the two kinds share the key space */
#define SRQ_SOFT_MR_KEY_WINDOW_BIT  0x80000000u

typedef struct srq_soft_dev srq_soft_dev_t;

typedef struct srq_soft_mr {
    struct ibv_mr  ibv;
    uint32_t       index;
    int            access;   /* as registered (ibv_rereg_mr keeps it) */
    uint64_t       iova;     /* where remote accesses address it */
    /* a region of device memory (soft_dm.c): that memory's count of the
     * regions on it, dropped when this one is deregistered; else NULL */
    _Atomic uint32_t *dm_users;
} srq_soft_mr_t;

struct ibv_mr *srq_soft_reg_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                               void *addr, size_t length, int access);
/* A region that remote accesses address from @iova on; zero-based
 * (IBV_ACCESS_ZERO_BASED): from 0, whatever @iova */
struct ibv_mr *srq_soft_reg_mr_iova(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    void *addr, size_t length, uint64_t iova,
                                    int access);
/* A zero-based region that local SGEs address by offset too, as remote
 * accesses do (device memory's, soft_dm.c): [addr, addr + length) in
 * this process is the memory behind it */
struct ibv_mr *srq_soft_reg_mr_offsets(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                       void *addr, size_t length, int access,
                                       _Atomic uint32_t *users);
int  srq_soft_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr);
/* ibv_rereg_mr: 0 (@mr changed, its keys kept), or an errno and @mr
 * unchanged */
int  srq_soft_rereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr, int flags,
                       struct ibv_pd *pd, void *addr, size_t length,
                       int access);
/* ibv_advise_mr (soft_mr_advise.c): 0 or an errno value */
int  srq_soft_advise_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                        enum ibv_advise_mr_advice advice, uint32_t flags,
                        struct ibv_sge *sg_list, uint32_t num_sge);
/* Does @key grant @access to [addr, addr + len) (virtual addresses: an
 * lkey's SGE) to a QP (or SRQ) of the protection domain @pd (its handle),
 * in the table of @seg? 0 or EACCES; EFAULT where an ODP region of ours
 * has pages there with nothing mapped, which the access would fault on */
int  srq_soft_mr_check(const srq_soft_seg_t *seg, uint32_t key, uint64_t addr,
                       uint64_t len, int access, uint32_t pd);
/* The same, for the key alone: no access follows, so the pages of an ODP
 * region need not be mapped (srq_soft_mr_check: EFAULT then) */
int  srq_soft_mr_check_key(const srq_soft_seg_t *seg, uint32_t key,
                           uint64_t addr, uint64_t len, int access,
                           uint32_t pd);
/* Where the local SGE (@key, @addr, @len) lies in this process: @addr
 * itself, except in a region addressed by offsets
 * (srq_soft_reg_mr_offsets), where an offset outside it gives an address
 * no check grants */
uint64_t srq_soft_mr_local_va(const srq_soft_seg_t *seg, uint32_t key,
                              uint64_t addr, uint64_t len);
/* The same, for the data path: no lookup while @dev has no such region */
#define srq_soft_mr_local_addr(_dev, _key, _addr, _len) \
    ((atomic_load_explicit(&(_dev)->mr_offsets, memory_order_relaxed) == 0) ? \
     (_addr) : srq_soft_mr_local_va(&(_dev)->fab.seg, _key, _addr, _len))
/* Fault in [addr, addr + len) of this process as an access would, for
 * write if @write (soft_mr_fault.c): 0, or EFAULT where the access would
 * fault (nothing mapped there, or not with the access) */
int  srq_soft_mr_fault(uint64_t addr, uint64_t len, bool write);
/* Not verbs' access flags, asked with them of srq_soft_mr_check_iova:
 * the key and range alone, no access follows (a window's bind); the
 * access that follows writes (through a window, which grants it) */
#define SRQ_SOFT_MR_KEY_ONLY    (1 << 28)
#define SRQ_SOFT_MR_WILL_WRITE  (1 << 29)
/* The same for [iova, iova + len) as remote accesses address the region
 * (its IOVA, soft_shm.h); where that is in its owner's memory in *va */
int  srq_soft_mr_check_iova(const srq_soft_seg_t *seg, uint32_t key,
                            uint64_t iova, uint64_t len, int access,
                            uint32_t pd, uint64_t *va);

#endif
