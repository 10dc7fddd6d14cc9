/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the requester's memory (soft_req_mem.c) - the
 * local keys of a send WQE, and one-sided RDMA by cross-memory attach in
 * chunks, checked as the target's responder would check it.
 */
#ifndef SRQ_SOFT_REQ_MEM_H_
#define SRQ_SOFT_REQ_MEM_H_

#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/uio.h>

/* srq_soft_req_rdma's results that are not a WC status */
#define SRQ_SOFT_REQ_DROPPED    (-1) /* the target dropped the request */
#define SRQ_SOFT_REQ_PEER_GONE  (-2) /* the target's process is gone */

/* Do the local keys of @wqe's gather (READ, atomics: scatter) list still
 * check out? 0 or EACCES. Inline: every transmission checks them */
static inline int
srq_soft_req_check_lkeys(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe)
{
    const struct ibv_sge *sge = srq_soft_swqe_sge(qp, wqe);
    int access = ((wqe->opcode == IBV_WR_RDMA_READ) ||
                  srq_soft_swqe_is_atomic(wqe)) ? IBV_ACCESS_LOCAL_WRITE : 0;
    uint32_t i;

    if (wqe->is_inline) {
        return 0; /* lkeys of inline data are ignored (IB spec) */
    }
    for (i = 0; i < wqe->num_sge; ++i) {
        if (srq_soft_mr_check(&qp->dev->fab.seg, sge[i].lkey, sge[i].addr,
                              sge[i].length, access, srq_soft_pd_id(qp->ibv.pd)) !=
            0) {
            return EACCES;
        }
    }
    return 0;
}

/* A one-sided copy between our memory and the target's (the QP's peer),
 * checked in its tables as its responder would check it */
typedef struct srq_soft_req_xfer {
    const struct iovec *local;    /* ours */
    int                 n;
    uint32_t            rkey;     /* the target's */
    uint64_t            remote_addr;
    uint32_t            length;
    bool                read;     /* else write */
    /* our local keys, checked again between chunks: 0 or EACCES */
    int               (*lkeys)(srq_soft_qp_t *qp, const void *arg);
    const void         *arg;
} srq_soft_req_xfer_t;

/* ... done: IBV_WC_SUCCESS, an IBV_WC_* error status, SRQ_SOFT_REQ_DROPPED
 * or SRQ_SOFT_REQ_PEER_GONE */
int srq_soft_req_xfer(srq_soft_qp_t *qp, const srq_soft_req_xfer_t *x);

/* RDMA_WRITE/RDMA_READ (or WRITE_WITH_IMM's data) of @wqe, done here:
 * IBV_WC_SUCCESS, an IBV_WC_* error status, SRQ_SOFT_REQ_DROPPED or
 * SRQ_SOFT_REQ_PEER_GONE */
int srq_soft_req_rdma(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe);

#endif
