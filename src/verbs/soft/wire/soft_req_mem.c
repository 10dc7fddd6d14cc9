/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the requester's one-sided RDMA. A WRITE or READ
 * every earlier WQE of which is acknowledged is done here, with
 * process_vm_writev/readv: no CPU of the target takes part, so what its
 * responder would check is checked in its shared tables (soft_req.c says
 * what each refusal becomes), chunk by chunk (soft_inflight.c).
 */
#define _GNU_SOURCE
#include "soft_req_mem.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pkt.h"
#include "../objects/soft_mw.h"
#include "soft_iov.h"

#include <string.h>
#include <sys/uio.h>

static int srq_soft_req_local_iov(srq_soft_qp_t *qp,
                                  const srq_soft_swqe_t *wqe,
                                  struct iovec *iov)
{
    const struct ibv_sge *sge = srq_soft_swqe_sge(qp, wqe);
    uint32_t i;

    if (wqe->is_inline) {
        iov[0].iov_base = srq_soft_swqe_inline(qp, wqe);
        iov[0].iov_len  = wqe->length;
        return 1;
    }
    for (i = 0; i < wqe->num_sge; ++i) {
        iov[i].iov_base = (void*)(uintptr_t)sge[i].addr;
        iov[i].iov_len  = sge[i].length;
    }
    return (int)wqe->num_sge;
}

/*
 * What the target's responder would check, in its tables: 0, an IBV_WC_*
 * error status, or SRQ_SOFT_REQ_DROPPED (no such QP, not ready, not ours:
 * a responder drops such a request). Our access is announced already.
 */
static int srq_soft_req_rdma_check(srq_soft_qp_t *qp,
                                   const srq_soft_req_xfer_t *x, int access,
                                   uint64_t *va)
{
    srq_soft_peer_t *peer = qp->peer;
    srq_soft_qp_ent_t ent;

    if (!srq_soft_qp_dest_takes(qp, &ent)) {
        return SRQ_SOFT_REQ_DROPPED;
    }
    if (srq_soft_mw_check_rkey(&peer->seg, ent.access, ent.pd, ent.qpn,
                                 x->rkey, x->remote_addr, x->length,
                                 access, va) != 0) {
        return IBV_WC_REM_ACCESS_ERR;
    }
    return IBV_WC_SUCCESS;
}

/* Copy [off, off + len) of the transfer, whose remote start is at @va in
 * the target's memory: 0 or an IBV_WC_* status */
static int srq_soft_req_rdma_chunk(srq_soft_qp_t *qp,
                                   const srq_soft_req_xfer_t *x,
                                   uint64_t va, size_t off, size_t len)
{
    struct iovec part[SRQ_SOFT_MAX_SGE], remote;
    pid_t pid = qp->peer->pid;
    ssize_t done;
    int m, i;

    m               = srq_soft_iov_slice(x->local, x->n, off, len, part);
    remote.iov_base = (void*)(uintptr_t)(va + off);
    remote.iov_len  = len;
    done = x->read ? process_vm_readv(pid, part, m, &remote, 1, 0) :
                     process_vm_writev(pid, part, m, &remote, 1, 0);
    if (done == (ssize_t)len) {
        return IBV_WC_SUCCESS;
    }
    if ((done < 0) && (errno == ESRCH)) {
        return SRQ_SOFT_REQ_PEER_GONE;
    }
    /* registered but not mapped any more: our side (a READ's buffer
     * written, a WRITE's read) or else the target's */
    for (i = 0; i < m; ++i) {
        if (srq_soft_mr_fault((uintptr_t)part[i].iov_base, part[i].iov_len,
                              x->read) != 0) {
            return IBV_WC_LOC_PROT_ERR;
        }
    }
    return IBV_WC_REM_ACCESS_ERR;
}

/*
 * One-sided write/read with cross-memory attach. Chunk by chunk, each
 * announced before the target's tables are checked again
 * (soft_inflight.c): a region deregistered or a QP destroyed meanwhile
 * stops it.
 */
int srq_soft_req_xfer(srq_soft_qp_t *qp, const srq_soft_req_xfer_t *x)
{
    srq_soft_dev_t *dev = qp->dev;
    int access = x->read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
    size_t off = 0, len;
    uint64_t va;
    int status;

    do {
        len = x->length - off;
        len = (len < SRQ_SOFT_INFLIGHT_CHUNK) ? len : SRQ_SOFT_INFLIGHT_CHUNK;
        srq_soft_inflight_begin(&dev->fab, qp->peer->instance, x->rkey,
                                qp->attr.dest_qp_num);
        /* the remote address as the target's memory has it (its
         * region's IOVA translated) */
        status = srq_soft_req_rdma_check(qp, x, access, &va);
        if ((status == IBV_WC_SUCCESS) && ((off > 0) || x->read) &&
            (x->lkeys(qp, x->arg) != 0)) {
            /* our own region, deregistered since the last chunk (its
             * ibv_dereg_mr withdraws it before waiting for our lock), or a
             * READ's, checked once the target's checks passed, as an HCA
             * checks it when the response lands */
            status = IBV_WC_LOC_PROT_ERR;
        }
        if ((status == IBV_WC_SUCCESS) && (len > 0)) {
            status = srq_soft_req_rdma_chunk(qp, x, va, off, len);
        }
        srq_soft_inflight_end(&dev->fab);
        off += len;
    } while ((status == IBV_WC_SUCCESS) && (off < x->length));
    return status;
}

static int srq_soft_req_wqe_lkeys(srq_soft_qp_t *qp, const void *wqe)
{
    return srq_soft_req_check_lkeys(qp, wqe);
}

int srq_soft_req_rdma(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe)
{
    struct iovec local[SRQ_SOFT_MAX_SGE];
    srq_soft_req_xfer_t x;

    x.n           = srq_soft_req_local_iov(qp, wqe, local);
    x.local       = local;
    x.rkey        = wqe->rkey;
    x.remote_addr = wqe->remote_addr;
    x.length      = wqe->length;
    x.read        = (wqe->opcode == IBV_WR_RDMA_READ);
    x.lkeys       = srq_soft_req_wqe_lkeys;
    x.arg         = wqe;
    return srq_soft_req_xfer(qp, &x);
}
