/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: memory windows.
 *
 * A window is allocated in a PD (ibv_alloc_mw) and bound to a range of a
 * region of that PD that allows binds (IBV_ACCESS_MW_BIND): type 1 with
 * ibv_bind_mw, which posts the bind and gives the window a new rkey at
 * once; type 2 with an IBV_WR_BIND_MW WR that names the new rkey (the 8
 * bits of its key the caller's). The bind executes at its turn in the send
 * queue, as the WQEs around it, and completes in order with them. A type 2
 * window serves the QP it was bound through only, and must be invalidated
 * (IBV_WR_LOCAL_INV, a peer's IBV_WR_SEND_WITH_INV on that QP, or
 * ibv_dealloc_mw) before it is bound again; a type 1 window serves every
 * QP of its PD and is bound again over its old binding (length 0: it
 * grants nothing).
 *
 * The responder's checks of an rkey (srq_soft_mw_check) are the MR's,
 * from the same shared tables, so a peer's requester makes them without
 * our CPU: the window bound, its QP (type 2), PD, access and range, and
 * its region still registered. An invalidation withdraws the entry, then
 * waits for a peer's copy under the rkey that may still run
 * (soft_inflight.c): once it is done, nothing lands through the window.
 * ibv_dereg_mr of a region with a window bound to it is refused (EBUSY).
 *
 * A window's range is given in its region's remote addresses (its IOVA,
 * soft_mr.c), as in the kernel's rxe; a window bound with
 * IBV_ACCESS_ZERO_BASED is addressed by offset from its start.
 */
#include "soft_mw.h"
#include "../fabric/soft_inflight.h"
#include "../wire/soft_post.h"
#include "soft_dev.h"
#include "soft_mr.h"
#include "soft_pd.h"
#include "soft_qp.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* A reader gives up on an entry an owner keeps odd (it died writing) */
#define SRQ_SOFT_MW_ENT_SPINS   1024

#define SRQ_SOFT_MW_BIND_ACCESS (IBV_ACCESS_LOCAL_WRITE | \
                                 IBV_ACCESS_REMOTE_WRITE | \
                                 IBV_ACCESS_REMOTE_READ | \
                                 IBV_ACCESS_REMOTE_ATOMIC | \
                                 IBV_ACCESS_ZERO_BASED)

typedef struct srq_soft_mw {
    struct ibv_mw  ibv;
    uint32_t       slot;
    uint32_t       bound_rkey;  /* 0: not bound */
    uint32_t       qpn;         /* type 2: the QP it was bound through */
    uint32_t       mr_key;      /* the region it is bound to */
} srq_soft_mw_t;

/* A slot of the device's windows: the window, and how many windows it
 * held (the generation in their rkeys) */
typedef struct srq_soft_mw_slot {
    srq_soft_mw_t *mw;
    uint16_t       gen;
} srq_soft_mw_slot_t;

static uint32_t srq_soft_mw_slot_of(uint32_t rkey)
{
    return (rkey >> SRQ_SOFT_MW_SLOT_SHIFT) & (SRQ_SOFT_MW_TABLE_SIZE - 1);
}

/* Write the entry of @slot (device locked): a seqlock, odd meanwhile */
static void srq_soft_mw_publish(srq_soft_dev_t *dev, uint32_t slot,
                                const srq_soft_mw_ent_t *v)
{
    srq_soft_mw_ent_t *e  = &dev->fab.seg.mws[slot];
    _Atomic uint32_t *seq = (_Atomic uint32_t*)&e->seq;
    uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);

    atomic_store_explicit(seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&e->rkey, v->rkey, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, v->addr, __ATOMIC_RELAXED);
    __atomic_store_n(&e->length, v->length, __ATOMIC_RELAXED);
    __atomic_store_n(&e->access, v->access, __ATOMIC_RELAXED);
    __atomic_store_n(&e->pd, v->pd, __ATOMIC_RELAXED);
    __atomic_store_n(&e->qpn, v->qpn, __ATOMIC_RELAXED);
    __atomic_store_n(&e->mr_key, v->mr_key, __ATOMIC_RELAXED);
    atomic_store_explicit(seq, s + 2, memory_order_release);
}

/* A consistent copy of the entry of @slot in @seg: false if none could be
 * had */
static bool srq_soft_mw_ent_get(const srq_soft_seg_t *seg, uint32_t slot,
                                srq_soft_mw_ent_t *v)
{
    const srq_soft_mw_ent_t *e = &seg->mws[slot];
    _Atomic uint32_t *seq      = (_Atomic uint32_t*)&e->seq;
    uint32_t s;
    int spins;

    for (spins = 0; spins < SRQ_SOFT_MW_ENT_SPINS; ++spins) {
        s = atomic_load_explicit(seq, memory_order_acquire);
        if (s & 1) {
            continue;
        }
        v->rkey   = __atomic_load_n(&e->rkey, __ATOMIC_RELAXED);
        v->addr   = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
        v->length = __atomic_load_n(&e->length, __ATOMIC_RELAXED);
        v->access = __atomic_load_n(&e->access, __ATOMIC_RELAXED);
        v->pd     = __atomic_load_n(&e->pd, __ATOMIC_RELAXED);
        v->qpn    = __atomic_load_n(&e->qpn, __ATOMIC_RELAXED);
        v->mr_key = __atomic_load_n(&e->mr_key, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(seq, memory_order_relaxed) == s) {
            return true;
        }
    }
    return false;
}

int srq_soft_mw_check(const srq_soft_seg_t *seg, uint32_t qpn, uint32_t pd,
                      uint32_t rkey, uint64_t addr, uint64_t len, int access,
                      uint64_t *va)
{
    srq_soft_mw_ent_t e;

    *va = addr;
    if (len == 0) {
        return 0; /* a zero-length access checks nothing (IB spec) */
    }
    if (!srq_soft_mw_ent_get(seg, srq_soft_mw_slot_of(rkey), &e) ||
        (e.rkey != rkey) || ((e.qpn != 0) && (e.qpn != qpn)) ||
        (e.pd != pd) || ((uint32_t)access & ~e.access)) {
        return EACCES;
    }
    /* zero-based: an offset into the window, in the region's IOVAs then */
    if (e.access & IBV_ACCESS_ZERO_BASED) {
        if (addr > e.length) {
            return EACCES;
        }
        addr += e.addr;
    }
    if ((addr < e.addr) || (addr - e.addr > e.length) ||
        (len > e.length - (addr - e.addr))) {
        return EACCES;
    }
    /* the region under it: still registered (local read: always granted;
     * the window grants the rest) */
    return srq_soft_mr_check_iova(seg, e.mr_key, addr, len,
                                  (access & (IBV_ACCESS_REMOTE_WRITE |
                                             IBV_ACCESS_REMOTE_ATOMIC)) ?
                                  SRQ_SOFT_MR_WILL_WRITE : 0, pd, va);
}

/* ---- allocation ------------------------------------------------------- */

/* A free slot (device locked): 0 if none */
static uint32_t srq_soft_mw_free_slot(srq_soft_dev_t *dev)
{
    srq_soft_mw_slot_t *slots = dev->mw_slots;
    uint32_t i, slot;

    for (i = 1; i <= SRQ_SOFT_MW_TABLE_SIZE; ++i) {
        slot = (dev->mw_last + i) & (SRQ_SOFT_MW_TABLE_SIZE - 1);
        if ((slot != 0) && (slots[slot].mw == NULL)) {
            return slot;
        }
    }
    return 0;
}

/* Take a slot for @mw, and its first rkey (device locked): 0 or ENOMEM */
static int srq_soft_mw_take_slot(srq_soft_dev_t *dev, srq_soft_mw_t *mw)
{
    srq_soft_mw_slot_t *s;
    uint32_t slot;

    if (dev->mw_slots == NULL) {
        /* most programs never allocate a window */
        dev->mw_slots = calloc(SRQ_SOFT_MW_TABLE_SIZE,
                               sizeof(srq_soft_mw_slot_t));
        if (dev->mw_slots == NULL) {
            return ENOMEM;
        }
    }
    slot = srq_soft_mw_free_slot(dev);
    if (slot == 0) {
        return ENOMEM; /* max_mw windows exist */
    }
    s            = &((srq_soft_mw_slot_t*)dev->mw_slots)[slot];
    s->gen       = (s->gen + 1) & SRQ_SOFT_MW_GEN_MASK;
    s->mw        = mw;
    mw->slot     = slot;
    mw->ibv.rkey = SRQ_SOFT_MW_KEY_BIT |
                   ((uint32_t)s->gen << SRQ_SOFT_MW_GEN_SHIFT) |
                   (slot << SRQ_SOFT_MW_SLOT_SHIFT);
    dev->mw_last = slot;
    return 0;
}

struct ibv_mw *srq_soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    srq_soft_dev_t *dev = srq_soft_ctx_dev(pd->context);
    srq_soft_mw_t *mw;
    int ret;

    if (!srq_soft_dev_has(dev, pd) ||
        ((type != IBV_MW_TYPE_1) && (type != IBV_MW_TYPE_2))) {
        errno = EINVAL;
        return NULL;
    }
    mw = calloc(1, sizeof(*mw));
    if (mw == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_dev_lock(dev);
    ret = srq_soft_mw_take_slot(dev, mw);
    srq_soft_dev_unlock(dev);
    if (ret != 0) {
        free(mw);
        errno = ret;
        return NULL;
    }
    mw->ibv.context = pd->context;
    mw->ibv.pd      = pd;
    mw->ibv.type    = type;
    mw->ibv.handle  = srq_soft_handle(dev, &mw->ibv);
    srq_soft_pd_get(pd);
    return &mw->ibv;
}

/* Withdraw @mw's binding (device locked); then no peer's access through
 * it is still running */
static void srq_soft_mw_unbind(srq_soft_dev_t *dev, srq_soft_mw_t *mw)
{
    srq_soft_mw_ent_t none;
    uint32_t rkey = mw->bound_rkey;

    if (rkey == 0) {
        return;
    }
    memset(&none, 0, sizeof(none));
    srq_soft_mw_publish(dev, mw->slot, &none);
    mw->bound_rkey = 0;
    __atomic_store_n(&dev->mw_bound, dev->mw_bound - 1, __ATOMIC_RELAXED);
    srq_soft_inflight_wait_all(&dev->fab, rkey);
}

int srq_soft_dealloc_mw(struct ibv_mw *ibmw)
{
    srq_soft_dev_t *dev = srq_soft_ctx_dev(ibmw->context);
    srq_soft_mw_t *mw   = srq_soft_container_of(ibmw, srq_soft_mw_t, ibv);
    struct ibv_pd *pd   = ibmw->pd;

    if (srq_soft_dev_lock_obj(dev, ibmw) != 0) {
        errno = ENOENT;
        return ENOENT;
    }
    srq_soft_mw_unbind(dev, mw);
    ((srq_soft_mw_slot_t*)dev->mw_slots)[mw->slot].mw = NULL;
    srq_soft_dev_unlock(dev);
    srq_soft_pd_put(pd);
    free(mw);
    return 0;
}

void srq_soft_mw_cleanup(srq_soft_dev_t *dev)
{
    free(dev->mw_slots);
    dev->mw_slots = NULL;
}

/* ---- binding and invalidation ----------------------------------------- */

/* May @wqe bind @mw on @qp? The window is in the QP's PD; a type 2 window
 * is not bound; the region is
 * registered in the PD, grants binds (and local write, for remote write or
 * atomics) and covers the range */
static bool srq_soft_mw_bind_ok(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe,
                                srq_soft_mw_t *mw)
{
    const struct ibv_mw_bind_info *bi = &wqe->bind;
    int need = IBV_ACCESS_MW_BIND;
    uint64_t va;

    /* by PD number: a parent domain protects as its PD does */
    if ((srq_soft_pd_id(mw->ibv.pd) != srq_soft_pd_id(qp->ibv.pd)) ||
        (bi->mw_access_flags & ~SRQ_SOFT_MW_BIND_ACCESS)) {
        return false;
    }
    if ((mw->ibv.type == IBV_MW_TYPE_2) && (mw->bound_rkey != 0)) {
        return false;
    }
    if (bi->mr == NULL) {
        /* type 1 only: unbound, with nothing */
        return (mw->ibv.type == IBV_MW_TYPE_1) && (bi->length == 0);
    }
    /* the region by its key (libibverbs' MR object may be a wrapper of
     * ours, src/verbs/ibv) */
    if ((bi->mr->context != qp->ibv.context) ||
        (srq_soft_pd_id(bi->mr->pd) != srq_soft_pd_id(qp->ibv.pd))) {
        return false;
    }
    if (bi->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_ATOMIC)) {
        need |= IBV_ACCESS_LOCAL_WRITE;
    }
    /* the range in the region's remote addresses (its IOVA) */
    return srq_soft_mr_check_iova(&qp->dev->fab.seg, bi->mr->lkey, bi->addr,
                                  bi->length, need | SRQ_SOFT_MR_KEY_ONLY,
                                  srq_soft_pd_id(qp->ibv.pd), &va) == 0;
}

static int srq_soft_mw_bind(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe)
{
    srq_soft_dev_t *dev = qp->dev;
    srq_soft_mw_t *mw;
    srq_soft_mw_ent_t e;

    if (!srq_soft_dev_has(dev, wqe->mw)) {
        return IBV_WC_MW_BIND_ERR;
    }
    mw = srq_soft_container_of(wqe->mw, srq_soft_mw_t, ibv);
    if (!srq_soft_mw_bind_ok(qp, wqe, mw)) {
        return IBV_WC_MW_BIND_ERR;
    }
    srq_soft_mw_unbind(dev, mw); /* type 1: its old binding */
    if (wqe->bind.mr == NULL) {
        return IBV_WC_SUCCESS;
    }
    memset(&e, 0, sizeof(e));
    /* the consumer owns the key's low 8 bits; the rest is the window's
     * index (an HCA takes only those 8 of whatever the WR says) */
    e.rkey   = (mw->ibv.rkey & ~0xffu) | (wqe->rkey & 0xffu);
    e.addr   = wqe->bind.addr;
    e.length = wqe->bind.length;
    e.access = wqe->bind.mw_access_flags;
    e.pd     = srq_soft_pd_id(qp->ibv.pd);
    e.qpn    = (mw->ibv.type == IBV_MW_TYPE_2) ? qp->ibv.qp_num : 0;
    e.mr_key = wqe->bind.mr->lkey;
    srq_soft_mw_publish(dev, mw->slot, &e);
    mw->bound_rkey = e.rkey;
    mw->qpn        = e.qpn;
    mw->mr_key     = e.mr_key;
    mw->ibv.rkey   = e.rkey;
    __atomic_store_n(&dev->mw_bound, dev->mw_bound + 1, __ATOMIC_RELAXED);
    return IBV_WC_SUCCESS;
}

/* The window in the slot @rkey names, or NULL (its rkey may differ) */
static srq_soft_mw_t *srq_soft_mw_of_key(srq_soft_dev_t *dev, uint32_t rkey)
{
    if (!srq_soft_mw_is_key(rkey) || (dev->mw_slots == NULL)) {
        return NULL;
    }
    return ((srq_soft_mw_slot_t*)dev->mw_slots)[srq_soft_mw_slot_of(rkey)].mw;
}

/* The bound type 2 window of @dev whose rkey is @rkey, or NULL */
static srq_soft_mw_t *srq_soft_mw_find2(srq_soft_dev_t *dev, uint32_t rkey)
{
    srq_soft_mw_t *mw = srq_soft_mw_of_key(dev, rkey);

    return ((mw != NULL) && (mw->bound_rkey == rkey) &&
            (mw->ibv.type == IBV_MW_TYPE_2)) ? mw : NULL;
}

int srq_soft_mw_execute(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe)
{
    srq_soft_mw_t *mw;

    if (wqe->opcode == IBV_WR_BIND_MW) {
        return srq_soft_mw_bind(qp, wqe);
    }
    /* IBV_WR_LOCAL_INV: the rkey in imm (the WR's invalidate_rkey) */
    mw = srq_soft_mw_find2(qp->dev, wqe->imm);
    if ((mw == NULL) ||
        (srq_soft_pd_id(mw->ibv.pd) != srq_soft_pd_id(qp->ibv.pd))) {
        return IBV_WC_LOC_QP_OP_ERR;
    }
    srq_soft_mw_unbind(qp->dev, mw);
    return IBV_WC_SUCCESS;
}

int srq_soft_mw_remote_inv(srq_soft_qp_t *qp, uint32_t rkey)
{
    srq_soft_mw_t *mw = srq_soft_mw_find2(qp->dev, rkey);

    if ((mw == NULL) || (mw->qpn != qp->ibv.qp_num)) {
        return IBV_WC_REM_INV_REQ_ERR;
    }
    srq_soft_mw_unbind(qp->dev, mw);
    return IBV_WC_SUCCESS;
}

bool srq_soft_mw_is_type1(srq_soft_dev_t *dev, uint32_t rkey)
{
    srq_soft_mw_t *mw = srq_soft_mw_of_key(dev, rkey);

    return (mw != NULL) && (mw->ibv.type == IBV_MW_TYPE_1) &&
           (mw->ibv.rkey == rkey);
}

/* written under the device lock, read without it */
bool srq_soft_mw_any_bound(srq_soft_dev_t *dev)
{
    return __atomic_load_n(&dev->mw_bound, __ATOMIC_RELAXED) != 0;
}

bool srq_soft_mw_bound_to(srq_soft_dev_t *dev, uint32_t mr_key)
{
    srq_soft_mw_slot_t *slots = dev->mw_slots;
    uint32_t i;

    if (dev->mw_bound == 0) {
        return false; /* the common case: no scan */
    }
    for (i = 1; i < SRQ_SOFT_MW_TABLE_SIZE; ++i) {
        if ((slots[i].mw != NULL) && (slots[i].mw->bound_rkey != 0) &&
            (slots[i].mw->mr_key == mr_key)) {
            return true;
        }
    }
    return false;
}

int srq_soft_mw_check_rkey(const srq_soft_seg_t *seg, uint32_t qp_access,
                           uint32_t pd, uint32_t qpn, uint32_t rkey,
                           uint64_t addr, uint64_t len, int access,
                           uint64_t *va)
{
    if (!(qp_access & (uint32_t)access)) {
        return EACCES;
    }
    if (srq_soft_mw_is_key(rkey)) {
        return srq_soft_mw_check(seg, qpn, pd, rkey, addr, len, access, va);
    }
    return srq_soft_mr_check_iova(seg, rkey, addr, len, access, pd, va);
}

/* Without a bound window (the common case) the device lock is not taken:
 * a responder's WRITE holds it (soft_mr.c). A program that binds a window
 * while it deregisters the region may win: the window then grants
 * nothing, srq_soft_mw_check finds its region gone */
bool srq_soft_mw_region_has_windows(srq_soft_dev_t *dev, uint32_t mr_key)
{
    bool bound;

    if (!srq_soft_mw_any_bound(dev)) {
        return false;
    }
    srq_soft_dev_lock(dev);
    bound = srq_soft_mw_bound_to(dev, mr_key);
    srq_soft_dev_unlock(dev);
    return bound;
}
