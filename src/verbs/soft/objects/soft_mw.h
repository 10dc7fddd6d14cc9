/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: memory windows (type 1 and type 2). A bound window
 * lives in the device's shared tables beside the MRs, so that a peer's
 * requester checks an rkey of a window as it checks one of a region.
 */
#ifndef SRQ_SOFT_MW_H_
#define SRQ_SOFT_MW_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_shm.h"
#include "soft_mr.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_qp   srq_soft_qp_t;
typedef struct srq_soft_swqe srq_soft_swqe_t;

/*
 * A window's rkey: bit 31 set (an MR's key never has it, soft_mr.c), a
 * generation of its table slot (11 bits: the rkeys of a slot's windows
 * come back only after 2048 allocations of it), the slot (12 bits) and
 * the 8-bit key a type 2 bind chooses (ibv_inc_rkey).
 */
#define SRQ_SOFT_MW_KEY_BIT     SRQ_SOFT_MR_KEY_WINDOW_BIT
#define SRQ_SOFT_MW_SLOT_SHIFT  8
#define SRQ_SOFT_MW_GEN_SHIFT   20
#define SRQ_SOFT_MW_GEN_MASK    0x7ffu
#define SRQ_SOFT_MAX_MW         (SRQ_SOFT_MW_TABLE_SIZE - 1) /* slot 0 unused */

static inline bool srq_soft_mw_is_key(uint32_t key)
{
    return (key & SRQ_SOFT_MW_KEY_BIT) != 0;
}

/* The verbs (context->ops: alloc_mw, dealloc_mw; bind_mw is soft_post.c's) */
struct ibv_mw *srq_soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int srq_soft_dealloc_mw(struct ibv_mw *mw);

/* A BIND_MW or LOCAL_INV WQE at its turn in the send queue (device
 * locked): IBV_WC_SUCCESS, IBV_WC_MW_BIND_ERR (a bind the window, region,
 * QP or access do not allow) or IBV_WC_LOC_QP_OP_ERR (an rkey of no
 * type 2 window of the QP's PD to invalidate) */
int srq_soft_mw_execute(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe);
/* A SEND with invalidate arrived on @qp: the type 2 window @rkey bound
 * through @qp is invalidated (device locked). IBV_WC_SUCCESS, or
 * IBV_WC_REM_INV_REQ_ERR if there is no such window */
int srq_soft_mw_remote_inv(srq_soft_qp_t *qp, uint32_t rkey);
/* Is @rkey a type 1 window's (which a SEND with invalidate may not
 * name: IB class J, no NAK)? Under dev->lock */
bool srq_soft_mw_is_type1(srq_soft_dev_t *dev, uint32_t rkey);

/* The check a responder makes of a window's rkey (srq_soft_mw_check_rkey
 * for an rkey with SRQ_SOFT_MW_KEY_BIT): bound, to QP @qpn if type 2, in
 * @pd, granting @access to [addr, addr + len), over a region that is still
 * registered. 0 or EACCES; where it lands in the target's memory in *va */
int srq_soft_mw_check(const srq_soft_seg_t *seg, uint32_t qpn, uint32_t pd,
                      uint32_t rkey, uint64_t addr, uint64_t len, int access,
                      uint64_t *va);

/* The check an RDMA responder makes, wherever it runs (the requester's
 * one-sided copy, the target's responder): does the QP @qpn, granting
 * @qp_access (its qp_access_flags) in the protection domain @pd, serve
 * @access through @rkey (a region's, soft_mr.h, or a window's) to the
 * remote address [addr, addr + len), per the tables of @seg (the
 * target's)? 0 or EACCES; where the access goes in the target's memory
 * in *va. Here, above both kinds, as rxe's responder decides */
int srq_soft_mw_check_rkey(const srq_soft_seg_t *seg, uint32_t qp_access,
                           uint32_t pd, uint32_t qpn, uint32_t rkey,
                           uint64_t addr, uint64_t len, int access,
                           uint64_t *va);
/* Is a window of @dev bound to the region of @mr_key? (the device's
 * mr_has_windows: a region refuses deregistration while one is) */
bool srq_soft_mw_region_has_windows(srq_soft_dev_t *dev, uint32_t mr_key);

/* Is any window of @dev bound? (without the device lock) */
bool srq_soft_mw_any_bound(srq_soft_dev_t *dev);
/* Is a window of @dev bound to the region of @mr_key? (device locked) */
bool srq_soft_mw_bound_to(srq_soft_dev_t *dev, uint32_t mr_key);
/* Free the device's windows table (at close) */
void srq_soft_mw_cleanup(srq_soft_dev_t *dev);

#endif
