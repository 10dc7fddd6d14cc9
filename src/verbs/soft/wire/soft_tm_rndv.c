/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: tag matching's rendezvous (soft_tm.c matched the
 * request to a tag). The request's completion says so at once
 * (IBV_WC_TM_MATCH); then the device reads the sender's buffer, the one
 * its RVH names, into the tag's, one-sided and checked as any RDMA READ
 * of the QP (soft_req_mem.c: the sender's QP must grant remote read, its
 * rkey cover the range) - the QP's send queue takes no part, a TM QP may
 * have none; then the tag completes (IBV_WC_TM_DATA_VALID), and a FIN
 * goes back to the sender: a SEND of one TMH (opcode IBV_TMH_FIN, the
 * request's tag and app_ctx) that takes one of its receive WQEs. The FIN
 * is the device's own WQE in the QP's send queue, beyond max_send_wr, so
 * that it is retried as any SEND (RNR, loss); nothing completes for it.
 *
 * A read that fails (rkey, range, the sender's memory), or a tag's buffer
 * too small for the data, completes the tag with that error status; the
 * request's SEND is answered with a NAK, so the sender's QP and ours go
 * to error, as both would after a failed RDMA READ on an HCA.
 */
#define _GNU_SOURCE
#include "soft_tm_rndv.h"
#include "../fabric/soft_peer.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_srq.h"
#include "soft_liveness.h"
#include "soft_req.h"
#include "soft_req_mem.h"
#include "soft_rview.h"

#include <string.h>
#include <sys/uio.h>

bool srq_soft_tm_fin_room(srq_soft_qp_t *qp)
{
    int ret;

    if (qp->tm_fins >= SRQ_SOFT_TM_MAX_FIN) {
        return false;
    }
    srq_soft_lock(&qp->sq_lock); /* the program's posts fill the arrays */
    ret = srq_soft_qp_sq_reserve(qp, 1, qp->cap.max_send_wr +
                                        qp->tm_fins + 1);
    srq_soft_unlock(&qp->sq_lock);
    return ret == 0;
}

/* The FIN, into the send queue after the program's WQEs (fin_room made
 * room for it; a post that came since left it a slot: soft_post.c) */
static void srq_soft_tm_fin_post(srq_soft_qp_t *qp, const srq_soft_tm_hdr_t *h)
{
    srq_soft_swqe_t *wqe;

    srq_soft_lock(&qp->sq_lock);
    wqe = &qp->sq[qp->sq_post & qp->sq_mask];

    memset(wqe, 0, sizeof(*wqe));
    wqe->opcode      = IBV_WR_SEND;
    wqe->length      = SRQ_SOFT_TMH_LEN;
    wqe->is_inline   = true; /* written by the requester: no key */
    wqe->tm_fin      = true;
    wqe->compare_add = h->tag;
    wqe->swap        = h->app_ctx;
    wqe->state       = SRQ_SOFT_SWQE_POSTED;
    atomic_store((_Atomic uint32_t*)&qp->sq_db, ++qp->sq_post);
    srq_soft_unlock(&qp->sq_lock);
    (void)srq_soft_qp_sq_absorb(qp);
    __atomic_store_n(&qp->tm_fins, qp->tm_fins + 1, __ATOMIC_RELAXED);
    srq_soft_qp_busy(qp, true);
    srq_soft_req_sched(qp); /* sent from progress, after our ACK */
}

/* The tag's buffer, checked again between chunks of the read */
static int srq_soft_tm_rndv_lkeys(srq_soft_qp_t *qp, const void *arg)
{
    const srq_soft_rview_t *v = arg;
    uint32_t i;

    for (i = 0; i < v->num_sge; ++i) {
        if (srq_soft_mr_check(&qp->dev->fab.seg, v->sge[i].lkey, v->sge[i].addr,
                              v->sge[i].length, IBV_ACCESS_LOCAL_WRITE,
                              srq_soft_pd_id(v->srq->ibv.pd)) != 0) {
            return EACCES;
        }
    }
    return 0;
}

/* The sender's buffer into the tag's: an IBV_WC_* status */
static int srq_soft_tm_rndv_read(srq_soft_qp_t *qp, const srq_soft_tm_tag_t *t,
                                 const srq_soft_tm_hdr_t *h)
{
    struct iovec local;
    srq_soft_req_xfer_t x;
    srq_soft_rview_t v;
    int status;

    v.num_sge = t->num_sge;
    v.sge[0]  = t->sge;
    v.srq     = srq_soft_srq(qp->ibv.srq);
    if (h->len > srq_verbs_sge_len(v.sge, (int)v.num_sge)) {
        return IBV_WC_LOC_LEN_ERR;
    }
    status = srq_soft_rview_check(qp, &v, h->len);
    if (status != IBV_WC_SUCCESS) {
        return status;
    }
    v.sge[0].length = h->len; /* what the read touches */
    v.num_sge       = (h->len > 0) ? v.num_sge : 0;
    local.iov_base  = (void*)(uintptr_t)v.sge[0].addr;
    local.iov_len   = h->len;
    x.local         = &local;
    x.n             = (h->len > 0) ? 1 : 0;
    x.rkey          = h->rkey;
    x.remote_addr   = h->va;
    x.length        = h->len;
    x.read          = true;
    x.lkeys         = srq_soft_tm_rndv_lkeys;
    x.arg           = &v;
    status = srq_soft_req_xfer(qp, &x);
    if (status == SRQ_SOFT_REQ_PEER_GONE) {
        srq_soft_liveness_peer_dead(qp->dev, qp->peer);
        return IBV_WC_RETRY_EXC_ERR;
    }
    /* its QP not there for us any more: it cannot answer */
    return (status == SRQ_SOFT_REQ_DROPPED) ? IBV_WC_RETRY_EXC_ERR : status;
}

srq_soft_tm_result_t srq_soft_tm_rndv(srq_soft_qp_t *qp, srq_soft_tm_t *tm,
                                      srq_soft_tm_tag_t *t,
                                      const srq_soft_pkt_t *pkt,
                                      const srq_soft_tm_hdr_t *h,
                                      uint8_t *nak)
{
    int status;

    /* matched: told at once, the data follows */
    srq_soft_tm_consume(t, h);
    srq_soft_tm_tag_cqe(tm, qp, t, pkt, IBV_WC_SUCCESS, h->len,
                        IBV_WC_TM_MATCH);
    status = srq_soft_tm_rndv_read(qp, t, h);
    srq_soft_tm_tag_cqe(tm, qp, t, pkt, status, h->len,
                        (status == IBV_WC_SUCCESS) ? IBV_WC_TM_DATA_VALID : 0);
    if (status == IBV_WC_SUCCESS) {
        srq_soft_tm_fin_post(qp, h);
        return SRQ_SOFT_TM_DONE;
    }
    *nak = (status == IBV_WC_LOC_LEN_ERR) ? SRQ_SOFT_NAK_INV_REQ :
           (status == IBV_WC_REM_ACCESS_ERR) ? SRQ_SOFT_NAK_REM_ACCESS :
                                               SRQ_SOFT_NAK_REM_OP;
    return SRQ_SOFT_TM_ERR;
}
