/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's RDMA on its own memory. A WRITE or
 * READ its requester sent as a packet (behind unacknowledged requests) is
 * checked here as the requester checks one it does one-sided, and a
 * WRITE's data pulled from the requester in the same chunks
 * (soft_inflight.c's size), so that a dereg or a destroy waits for one.
 */
#define _GNU_SOURCE
#include "soft_resp_mem.h"
#include "../fabric/soft_inflight.h"
#include "../fabric/soft_peer.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mw.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp_state.h"
#include "soft_iov.h"

#include <sys/uio.h>

/* What the requester checks before it does RDMA one-sided, on our own
 * tables: 0 or the NAK that refuses it; where @req lands in our memory
 * in *va (its region's IOVA translated) */
uint8_t srq_soft_resp_rdma_check(srq_soft_qp_t *qp,
                                 const srq_soft_pkt_rdma_t *req, uint32_t len,
                                 int access, uint64_t *va)
{
    return (srq_soft_mw_check_rkey(&qp->dev->fab.seg, qp->attr.qp_access_flags,
                                     qp->req_pd_id,
                                     qp->ibv.qp_num, req->rkey, req->addr,
                                     len, access, va) != 0) ?
           SRQ_SOFT_NAK_REM_ACCESS : 0;
}

/*
 * A WRITE's data pulled from the requester into our region at @req, in
 * the chunks of a one-sided copy, its rkey checked again before each: an
 * ibv_dereg_mr withdraws the key before it waits for our lock, so it
 * waits for one chunk, never the whole WRITE; so does a destroy or reset
 * of the QP (SRQ_SOFT_RESP_REVOKED: nothing to answer, the QP is going).
 * 0, or the NAK to answer (REM_ACCESS: withdrawn meanwhile; REM_OP: the
 * requester's memory could not be read, as for a SEND)
 */
uint8_t srq_soft_resp_write_pull(srq_soft_qp_t *qp,
                                 const srq_soft_pkt_rdma_t *req,
                                 const srq_soft_pkt_iov_t *riov, uint16_t nsge,
                                 uint32_t len)
{
    struct iovec remote[SRQ_SOFT_MAX_SGE], part[SRQ_SOFT_MAX_SGE], local;
    srq_soft_pkt_rdma_t at = *req;
    size_t off, chunk;
    uint64_t va;
    uint8_t nak;
    int i, m;

    for (i = 0; i < nsge; ++i) {
        remote[i].iov_base = (void*)(uintptr_t)riov[i].addr;
        remote[i].iov_len  = riov[i].len;
    }
    for (off = 0; off < len; off += chunk) {
        chunk   = len - off;
        chunk   = (chunk < SRQ_SOFT_INFLIGHT_CHUNK) ? chunk :
                                                      SRQ_SOFT_INFLIGHT_CHUNK;
        if (srq_soft_qp_revoked(qp)) {
            return SRQ_SOFT_RESP_REVOKED;
        }
        at.addr = req->addr + off;
        nak     = srq_soft_resp_rdma_check(qp, &at, (uint32_t)chunk,
                                           IBV_ACCESS_REMOTE_WRITE, &va);
        if (nak != 0) {
            return nak;
        }
        m              = srq_soft_iov_slice(remote, nsge, off, chunk, part);
        local.iov_base = (void*)(uintptr_t)va;
        local.iov_len  = chunk;
        if (process_vm_readv(qp->peer->pid, &local, 1, part, m, 0) !=
            (ssize_t)chunk) {
            return SRQ_SOFT_NAK_REM_OP;
        }
    }
    return 0;
}
