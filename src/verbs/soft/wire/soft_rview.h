/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a receive WQE as the responder sees it (from the
 * QP's SRQ or its own RQ): the next one, taken, its local keys checked,
 * a payload copied or pulled into its scatter list, its completion. The
 * responder's placement of a SEND and of a READ's data (soft_resp.c).
 * Inline: every message the responder places goes through these; the
 * includer defines _GNU_SOURCE (process_vm_readv).
 */
#ifndef SRQ_SOFT_RVIEW_H_
#define SRQ_SOFT_RVIEW_H_

#include "../fabric/soft_peer.h"
#include "../fabric/soft_pkt.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_srq.h"
#include "../objects/soft_srq_wqe.h"
#include "soft_mem.h"

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

/* A receive WQE as the responder sees it, from an SRQ or an RQ */
typedef struct srq_soft_rview {
    uint64_t         wr_id;
    uint32_t         num_sge;
    struct ibv_sge   sge[SRQ_SOFT_MAX_SGE];
    srq_soft_srq_t  *srq;
    uint16_t         srq_idx;
} srq_soft_rview_t;

static inline void
srq_soft_rview_srq(srq_soft_srq_t *srq, void *buf, uint16_t idx,
                               srq_soft_rview_t *v)
{
    srq_soft_srq_data_seg_t *d = srq_soft_srq_dseg(buf);
    uint32_t i, lkey;

    v->srq     = srq;
    v->srq_idx = idx;
    v->wr_id   = srq->wrid[idx];
    v->num_sge = 0;
    for (i = 0; (i < srq->max_sge) && (i < SRQ_SOFT_MAX_SGE); ++i) {
        lkey = be32toh(d[i].lkey);
        if (lkey == SRQ_SOFT_SRQ_INVALID_LKEY) {
            break; /* end of a short list */
        }
        v->sge[i].addr   = be64toh(d[i].addr);
        v->sge[i].length = be32toh(d[i].byte_count);
        v->sge[i].lkey   = lkey;
        ++v->num_sge;
    }
}

/* The next receive WQE of @qp, without taking it */
static inline bool
srq_soft_rview_peek(srq_soft_qp_t *qp, srq_soft_rview_t *v)
{
    srq_soft_srq_t *srq;
    srq_soft_rwqe_t *rwqe;
    uint32_t slot, nsge;
    uint16_t idx;
    void *buf;

    /* an XRC target's: the SRQ its request names (soft_resp.c) */
    srq = (qp->ibv.srq != NULL) ? srq_soft_srq(qp->ibv.srq) : qp->xrc_srq;
    if (srq != NULL) {
        buf = srq_soft_srq_peek(srq, &idx);
        if (buf == NULL) {
            return false;
        }
        srq_soft_rview_srq(srq, buf, idx, v);
        return true;
    }
    if (qp->rq_hw == srq_soft_qp_rq_posted(qp)) {
        return false;
    }
    slot       = qp->rq_hw & qp->rq_mask;
    nsge       = qp->cap.max_recv_sge ? qp->cap.max_recv_sge : 1;
    rwqe       = &qp->rq[slot];
    v->srq     = NULL;
    v->wr_id   = rwqe->wr_id;
    v->num_sge = rwqe->num_sge;
    memcpy(v->sge, qp->rq_sge + (size_t)slot * nsge,
           sizeof(*v->sge) * rwqe->num_sge);
    return true;
}

static inline void
srq_soft_rview_consume(srq_soft_qp_t *qp, srq_soft_rview_t *v)
{
    if (v->srq != NULL) {
        srq_soft_srq_consume(v->srq);
    } else {
        ++qp->rq_hw;
    }
}

/* Local keys of the part of the scatter list that [0, len) touches, in
 * the PD of the queue the WQE came from (the SRQ's, or the QP's). The
 * view's addresses become where the bytes go in this process (an offset
 * in a device memory region: soft_mr.h) */
static inline int
srq_soft_rview_check(srq_soft_qp_t *qp, srq_soft_rview_t *v,
                         uint64_t len)
{
    uint32_t pd = (v->srq != NULL) ? srq_soft_pd_id(v->srq->ibv.pd) :
                                     srq_soft_pd_id(qp->ibv.pd);
    uint64_t part;
    uint32_t i;

    for (i = 0; (i < v->num_sge) && (len > 0); ++i) {
        part = (v->sge[i].length < len) ? v->sge[i].length : len;
        v->sge[i].addr = srq_soft_mr_local_addr(qp->dev, v->sge[i].lkey,
                                                v->sge[i].addr,
                                                v->sge[i].length);
        if (srq_soft_mr_check(&qp->dev->fab.seg, v->sge[i].lkey, v->sge[i].addr,
                              part, IBV_ACCESS_LOCAL_WRITE, pd) != 0) {
            return IBV_WC_LOC_PROT_ERR;
        }
        len -= part;
    }
    return IBV_WC_SUCCESS;
}

/* Copy @len bytes to offset @off of the scatter list (checked before),
 * through the kernel when @guard (soft_mem.h). false: a page of it is
 * not there */
static inline bool
srq_soft_rview_copy(bool guard, const srq_soft_rview_t *v, uint64_t off,
                    const uint8_t *src, uint64_t len)
{
    uint64_t part, skip;
    uint32_t i;

    for (i = 0; (i < v->num_sge) && (len > 0); ++i) {
        if (off >= v->sge[i].length) {
            off -= v->sge[i].length;
            continue;
        }
        skip = off;
        part = v->sge[i].length - skip;
        part = (part < len) ? part : len;
        if (!srq_soft_mem_copy(guard,
                               (uint8_t*)(uintptr_t)v->sge[i].addr + skip,
                               src, part)) {
            return false;
        }
        src += part;
        len -= part;
        off  = 0;
    }
    return true;
}

/* Pull @len bytes from the sender's buffers into the scatter list */
static inline bool
srq_soft_rview_pull(const srq_soft_rview_t *v, pid_t pid,
                         const srq_soft_pkt_iov_t *riov, uint16_t nsge,
                         uint64_t len)
{
    struct iovec local[SRQ_SOFT_MAX_SGE], remote[SRQ_SOFT_MAX_SGE];
    uint64_t left = len, part;
    uint32_t i, n = 0;

    for (i = 0; (i < v->num_sge) && (left > 0); ++i, ++n) {
        part = (v->sge[i].length < left) ? v->sge[i].length : left;
        local[n].iov_base = (void*)(uintptr_t)v->sge[i].addr;
        local[n].iov_len  = part;
        left -= part;
    }
    for (i = 0; i < nsge; ++i) {
        remote[i].iov_base = (void*)(uintptr_t)riov[i].addr;
        remote[i].iov_len  = riov[i].len;
    }
    return process_vm_readv(pid, local, n, remote, nsge, 0) == (ssize_t)len;
}

/* Place the message @pkt from offset @off of the scatter list (SEND:
 * the payload; WRITE_IMM: nothing, its data is in place): an IBV_WC_*
 * status, or -1 when the sender's memory could not be read (the WQE is
 * not taken) */
static inline int
srq_soft_rview_place(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt,
                     const uint8_t *payload, srq_soft_rview_t *v,
                     uint64_t off)
{
    uint64_t need = off + ((pkt->opcode == SRQ_SOFT_OP_WRITE_IMM) ? 0 :
                           pkt->length);
    int status;

    if (need > srq_verbs_sge_len(v->sge, v->num_sge)) {
        return IBV_WC_LOC_LEN_ERR;
    }
    status = srq_soft_rview_check(qp, v, need);
    if ((status != IBV_WC_SUCCESS) || (need == off)) {
        return status;
    }
    if (!(pkt->flags & SRQ_SOFT_PKT_F_PULL)) {
        return srq_soft_rview_copy(qp->dev->guard_copies, v, off, payload,
                                   pkt->length) ? IBV_WC_SUCCESS :
                                                  IBV_WC_LOC_PROT_ERR;
    }
    return srq_soft_rview_pull(v, qp->peer->pid,
                               (const srq_soft_pkt_iov_t*)payload, pkt->nsge,
                               pkt->length) ? IBV_WC_SUCCESS : -1;
}

/* The receive completion of the WQE @v took for @pkt (its buffer stays
 * the device's until the completion is polled) */
static inline void
srq_soft_rview_complete(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt,
                        const srq_soft_rview_t *v,
                        enum ibv_wc_status status, uint32_t byte_len)
{
    bool ud = (qp->ibv.qp_type == IBV_QPT_UD);
    /* an XRC target has no CQ: its SRQ's gets the completion */
    srq_soft_cq_t *cq = srq_soft_cq((qp->ibv.recv_cq != NULL) ?
                                    qp->ibv.recv_cq : v->srq->xrc_cq);
    srq_soft_cqe_t *cqe;

    cqe = srq_soft_cq_push(cq, (pkt->flags & SRQ_SOFT_PKT_F_SE) ||
                               (status != IBV_WC_SUCCESS));
    if (cqe == NULL) {
        return;
    }
    cqe->wc.wr_id    = v->wr_id;
    cqe->wc.status   = status;
    /* a WRITE with immediate, done one-sided or here */
    cqe->wc.opcode   = ((pkt->opcode == SRQ_SOFT_OP_WRITE_IMM) ||
                        (pkt->opcode == SRQ_SOFT_OP_WRITE)) ?
                       IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    cqe->wc.byte_len = byte_len;
    cqe->wc.qp_num   = qp->ibv.qp_num;
    cqe->wc.src_qp   = pkt->src_qpn;
    cqe->wc.slid     = pkt->src_lid;
    if (pkt->flags & SRQ_SOFT_PKT_F_IMM) {
        cqe->wc.imm_data  = pkt->imm;
        cqe->wc.wc_flags |= IBV_WC_WITH_IMM;
    } else if (pkt->flags & SRQ_SOFT_PKT_F_INV) {
        cqe->wc.invalidated_rkey = pkt->imm;
        cqe->wc.wc_flags        |= IBV_WC_WITH_INV;
    }
    if (ud) {
        cqe->wc.wc_flags |= IBV_WC_GRH;
    }
    /* the buffer stays the device's until this completion is polled */
    cqe->srq     = v->srq;
    cqe->srq_idx = v->srq_idx;
    cqe->rq_ci_p = (v->srq == NULL) ? &qp->rq_ci : NULL;
    srq_soft_cq_push_done(cq);
}

#endif
