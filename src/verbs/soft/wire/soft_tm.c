/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: tag matching - a TM SRQ's list of tagged buffers,
 * ibv_post_srq_ops on it, and the matching of what arrives.
 *
 * List operations execute when they are posted (under dev->lock, as the
 * responder matches), so a message either finds a tag or not. A signaled
 * one (and a TAG_DEL that fails) completes on the SRQ's CQ; at most
 * max_ops such completions may wait to be polled (ENOMEM beyond, as a
 * full queue). A TAG_DEL of a tag a message consumed completes with
 * IBV_WC_TM_ERR (ibv_post_srq_ops(3)); a handle that never named a tag of
 * the list is EINVAL. A consumed tag's slot (its handle) comes back when
 * its last completion is polled, so that a stale handle never names a
 * new tag while the program may still hold it.
 *
 * Phase synchronisation (rdma-core's Documentation/tag_matching.md): a
 * message no armed tag matches is unexpected - it goes whole into an
 * ordinary receive WQE (IBV_WC_TM_RECV, no IBV_WC_TM_MATCH) and the
 * device's count of them rises. A tag added while that count and the one
 * the program last reported (IBV_OPS_TM_SYNC) differ does not match
 * (its completion says IBV_WC_TM_SYNC_REQ) until an operation reports
 * the count the device has; tags added before stay armed.
 *
 * What is not a tag-matching request - IBV_TMH_NO_TAG, a FIN, an unknown
 * opcode, a message shorter than its TMH - goes whole into an ordinary
 * receive WQE as IBV_WC_TM_NO_TAG (a FIN so arriving is how a sender on a
 * TM SRQ learns its rendezvous ended). A rendezvous request longer than
 * max_rndv_hdr_size, or too short for its RVH, is not matched: unexpected.
 */
#define _GNU_SOURCE
#include "soft_tm.h"
#include "../fabric/soft_peer.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_srq.h"
#include "../srq_soft_api.h"
#include "soft_iov.h"
#include "soft_rview.h"
#include "soft_tm_rndv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

void srq_soft_tm_caps(struct ibv_tm_caps *caps)
{
    caps->max_rndv_hdr_size = SRQ_SOFT_TM_MAX_RNDV_HDR;
    caps->max_num_tags      = SRQ_SOFT_TM_MAX_TAGS;
    caps->flags             = IBV_TM_CAP_RC;
    caps->max_ops           = SRQ_SOFT_TM_MAX_OPS;
    caps->max_sge           = SRQ_SOFT_TM_MAX_SGE;
}

#define SRQ_SOFT_TM_MASK (IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
                          IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM)

int srq_soft_tm_check(const struct ibv_srq_init_attr_ex *attr)
{
    if ((attr->comp_mask & ~SRQ_SOFT_TM_MASK) ||
        ((attr->comp_mask & SRQ_SOFT_TM_MASK) != SRQ_SOFT_TM_MASK)) {
        return EINVAL; /* a PD, a CQ and the list's sizes; no domain */
    }
    if ((attr->tm_cap.max_num_tags == 0) ||
        (attr->tm_cap.max_num_tags > SRQ_SOFT_TM_MAX_TAGS) ||
        (attr->tm_cap.max_ops == 0) ||
        (attr->tm_cap.max_ops > SRQ_SOFT_TM_MAX_OPS)) {
        return EINVAL;
    }
    return 0;
}

/* Under dev->lock: the SRQ goes (its tm_free) */
static void srq_soft_tm_destroy(srq_soft_srq_t *srq)
{
    srq_soft_tm_t *tm = srq->tm;
    srq_soft_cq_t *cq = srq_soft_cq(tm->cq);

    /* completions still in the CQ must not bump what is freed here */
    srq_soft_cq_forget_counters(cq, &tm->ops_polled, sizeof(tm->ops_polled));
    srq_soft_cq_forget_counters(cq, tm->tags,
                                tm->max_tags * sizeof(*tm->tags));
    --cq->qp_refs;
    free(tm->tags);
    free(tm);
    srq->tm = NULL;
}

int srq_soft_tm_create(srq_soft_srq_t *srq,
                       const struct ibv_srq_init_attr_ex *attr)
{
    srq_soft_tm_t *tm = calloc(1, sizeof(*tm));

    if (tm == NULL) {
        return ENOMEM;
    }
    tm->tags = calloc(attr->tm_cap.max_num_tags, sizeof(*tm->tags));
    if (tm->tags == NULL) {
        free(tm);
        return ENOMEM;
    }
    tm->cq       = attr->cq;
    tm->max_tags = attr->tm_cap.max_num_tags;
    tm->max_ops  = attr->tm_cap.max_ops;
    srq->tm      = tm;
    srq->tm_free = srq_soft_tm_destroy;
    ++srq_soft_cq(tm->cq)->qp_refs;
    return 0;
}

/* ---- list operations -------------------------------------------------- */

/* The program's count of unexpected messages, if the operation carries
 * it; in step with the device's, every tag added meanwhile may match */
static bool srq_soft_tm_sync(srq_soft_tm_t *tm, const struct ibv_ops_wr *wr)
{
    uint32_t i;

    if (wr->flags & IBV_OPS_TM_SYNC) {
        tm->sw_cnt = wr->tm.unexpected_cnt;
    }
    if (tm->sw_cnt != tm->hw_cnt) {
        return false;
    }
    for (i = 0; i < tm->max_tags; ++i) {
        tm->tags[i].armed = true;
    }
    return true;
}

/* The checks a list operation gets before it does anything: 0, EINVAL
 * or ENOMEM; @t: the tag it adds (a free slot) or removes */
static int srq_soft_tm_op_check(srq_soft_tm_t *tm, const struct ibv_ops_wr *wr,
                                srq_soft_tm_tag_t **t)
{
    if (wr->flags & ~(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)) {
        return EINVAL;
    }
    switch (wr->opcode) {
    case IBV_WR_TAG_ADD:
        if ((wr->tm.add.num_sge < 0) ||
            (wr->tm.add.num_sge > SRQ_SOFT_TM_MAX_SGE) ||
            ((wr->tm.add.num_sge > 0) && (wr->tm.add.sg_list == NULL))) {
            return EINVAL;
        }
        *t = srq_soft_tm_slot(tm);
        return (*t != NULL) ? 0 : ENOMEM; /* max_num_tags in the list */
    case IBV_WR_TAG_DEL:
        if ((wr->tm.handle == 0) || (wr->tm.handle > tm->max_tags)) {
            return EINVAL;
        }
        *t = &tm->tags[wr->tm.handle - 1];
        return 0;
    case IBV_WR_TAG_SYNC:
        return 0;
    default:
        return EINVAL;
    }
}

static void srq_soft_tm_add(srq_soft_tm_t *tm, struct ibv_ops_wr *wr,
                            srq_soft_tm_tag_t *t, bool in_sync)
{
    memset(t, 0, sizeof(*t));
    t->tag     = wr->tm.add.tag;
    t->mask    = wr->tm.add.mask;
    t->wr_id   = wr->tm.add.recv_wr_id;
    t->seq     = ++tm->seq;
    t->num_sge = (uint32_t)wr->tm.add.num_sge;
    if (t->num_sge > 0) {
        t->sge = wr->tm.add.sg_list[0];
    }
    t->state   = SRQ_SOFT_TM_TAG_POSTED;
    t->armed   = in_sync;
    wr->tm.handle = (uint32_t)(t - tm->tags) + 1;
}

static const enum ibv_wc_opcode srq_soft_tm_op_wc[] = {
    [IBV_WR_TAG_ADD]  = IBV_WC_TM_ADD,
    [IBV_WR_TAG_DEL]  = IBV_WC_TM_DEL,
    [IBV_WR_TAG_SYNC] = IBV_WC_TM_SYNC,
};

/* One list operation: 0, or the errno that stops the post before it */
static int srq_soft_tm_op(srq_soft_tm_t *tm, struct ibv_ops_wr *wr)
{
    enum ibv_wc_status status = IBV_WC_SUCCESS;
    srq_soft_tm_tag_t *t = NULL;
    srq_soft_cqe_t *cqe;
    bool in_sync;
    int ret;

    ret = srq_soft_tm_op_check(tm, wr, &t);
    if (ret != 0) {
        return ret;
    }
    /* one that may complete needs room for its completion (a TAG_DEL
     * completes when it fails) */
    if (((wr->flags & IBV_OPS_SIGNALED) || (wr->opcode == IBV_WR_TAG_DEL)) &&
        (tm->ops_made - srq_soft_cq_load(&tm->ops_polled) >= tm->max_ops)) {
        return ENOMEM;
    }
    in_sync = srq_soft_tm_sync(tm, wr);
    if (wr->opcode == IBV_WR_TAG_ADD) {
        srq_soft_tm_add(tm, wr, t, in_sync);
    } else if (wr->opcode == IBV_WR_TAG_DEL) {
        if (t->state == SRQ_SOFT_TM_TAG_POSTED) {
            t->state = SRQ_SOFT_TM_TAG_FREE;
        } else {
            status = IBV_WC_TM_ERR; /* consumed, or never added */
        }
    }
    if (!(wr->flags & IBV_OPS_SIGNALED) && (status == IBV_WC_SUCCESS)) {
        return 0;
    }
    cqe = srq_soft_tm_cqe(tm, NULL, NULL, srq_soft_tm_op_wc[wr->opcode],
                          status, wr->wr_id, in_sync ? 0 : IBV_WC_TM_SYNC_REQ);
    if (cqe != NULL) {
        cqe->rq_ci_p = &tm->ops_polled; /* its room back once polled */
        ++tm->ops_made;
        srq_soft_tm_cqe_done(tm);
    }
    return 0;
}

int srq_soft_tm_post_ops(srq_soft_srq_t *srq, struct ibv_ops_wr *wr,
                         struct ibv_ops_wr **bad_wr)
{
    srq_soft_dev_t *dev = srq->dev;
    int ret = 0;

    srq_soft_dev_lock(dev);
    if (srq->tm == NULL) {
        ret = EINVAL; /* not a TM SRQ */
    }
    /* in order, up to the first that fails: those before it stay done */
    while ((ret == 0) && (wr != NULL)) {
        ret = srq_soft_tm_op(srq->tm, wr);
        if (ret == 0) {
            wr = wr->next;
        }
    }
    srq_soft_dev_unlock(dev);
    if (ret != 0) {
        *bad_wr = wr;
        errno   = ret;
    }
    return ret;
}

int srq_soft_post_srq_ops(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq,
                          struct ibv_ops_wr *wr, struct ibv_ops_wr **bad_wr)
{
    if (!srq_soft_dev_has(srq_soft_dev(vdev), ibsrq)) {
        *bad_wr = wr;
        errno   = EINVAL;
        return EINVAL;
    }
    return srq_soft_tm_post_ops(srq_soft_srq(ibsrq), wr, bad_wr);
}

/* ---- what arrives ----------------------------------------------------- */

/* The message's iovecs at the sender (F_PULL) */
static int srq_soft_tm_remote_iov(const srq_soft_pkt_t *pkt,
                                  const uint8_t *payload, struct iovec *iov)
{
    const srq_soft_pkt_iov_t *riov = (const srq_soft_pkt_iov_t*)payload;
    int i;

    for (i = 0; i < pkt->nsge; ++i) {
        iov[i].iov_base = (void*)(uintptr_t)riov[i].addr;
        iov[i].iov_len  = riov[i].len;
    }
    return pkt->nsge;
}

/* Bytes [@off, @off + @len) of the message into @local (@n entries):
 * false when the sender's memory could not be read */
static bool srq_soft_tm_copy(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt,
                             const uint8_t *payload, const struct iovec *local,
                             int n, uint32_t off, uint32_t len)
{
    struct iovec remote[SRQ_SOFT_MAX_SGE], part[SRQ_SOFT_MAX_SGE];
    int i, m;

    if (!(pkt->flags & SRQ_SOFT_PKT_F_PULL)) {
        payload += off;
        for (i = 0; (i < n) && (len > 0); ++i) {
            m = (local[i].iov_len < len) ? (int)local[i].iov_len : (int)len;
            memcpy(local[i].iov_base, payload, (size_t)m);
            payload += m;
            len     -= (uint32_t)m;
        }
        return true;
    }
    m = srq_soft_iov_slice(remote, srq_soft_tm_remote_iov(pkt, payload, remote),
                           off, len, part);
    return process_vm_readv(qp->peer->pid, local, (unsigned long)n, part,
                            (unsigned long)m, 0) == (ssize_t)len;
}

/* The message's TMH (and RVH, if it has room for one) */
static bool srq_soft_tm_hdr(srq_soft_qp_t *qp, const srq_soft_pkt_t *pkt,
                            const uint8_t *payload, srq_soft_tm_hdr_t *h)
{
    uint8_t raw[SRQ_SOFT_TMH_LEN + SRQ_SOFT_RVH_LEN];
    struct ibv_tmh tmh;
    struct ibv_rvh rvh;
    struct iovec iov;

    memset(raw, 0, sizeof(raw));
    iov.iov_base = raw;
    iov.iov_len  = (pkt->length < sizeof(raw)) ? pkt->length : sizeof(raw);
    if (!srq_soft_tm_copy(qp, pkt, payload, &iov, 1, 0,
                          (uint32_t)iov.iov_len)) {
        return false;
    }
    memcpy(&tmh, raw, sizeof(tmh));
    memcpy(&rvh, raw + SRQ_SOFT_TMH_LEN, sizeof(rvh));
    h->opcode  = tmh.opcode;
    h->app_ctx = be32toh(tmh.app_ctx);
    h->tag     = be64toh(tmh.tag);
    h->va      = be64toh(rvh.va);
    h->rkey    = be32toh(rvh.rkey);
    h->len     = be32toh(rvh.len);
    return true;
}

/* The NAK of a receive that completed in error (as soft_resp.c's) */
static srq_soft_tm_result_t srq_soft_tm_failed(int status, uint8_t *nak)
{
    *nak = (status == IBV_WC_LOC_LEN_ERR) ? SRQ_SOFT_NAK_INV_REQ :
                                            SRQ_SOFT_NAK_REM_OP;
    return SRQ_SOFT_TM_ERR;
}

/* Not for a tag (@opcode IBV_WC_TM_NO_TAG), or unexpected
 * (IBV_WC_TM_RECV, counted): the whole message into an ordinary WQE */
static srq_soft_tm_result_t srq_soft_tm_ordinary(srq_soft_qp_t *qp,
                                                 srq_soft_tm_t *tm,
                                                 const srq_soft_pkt_t *pkt,
                                                 const uint8_t *payload,
                                                 enum ibv_wc_opcode opcode,
                                                 uint8_t *nak)
{
    srq_soft_cqe_t *cqe;
    srq_soft_rview_t v;
    int status;

    if (!srq_soft_rview_peek(qp, &v)) {
        return SRQ_SOFT_TM_RNR;
    }
    status = srq_soft_rview_place(qp, pkt, payload, &v, 0);
    if (status < 0) {
        *nak = SRQ_SOFT_NAK_REM_OP;
        return SRQ_SOFT_TM_NAK;
    }
    srq_soft_rview_consume(qp, &v);
    cqe = srq_soft_tm_cqe(tm, qp, pkt, opcode, status, v.wr_id, 0);
    if (cqe != NULL) {
        cqe->srq     = v.srq; /* the WQE is the device's until polled */
        cqe->srq_idx = v.srq_idx;
        srq_soft_tm_cqe_done(tm);
    }
    if (status != IBV_WC_SUCCESS) {
        return srq_soft_tm_failed(status, nak);
    }
    if (opcode == IBV_WC_TM_RECV) {
        ++tm->hw_cnt; /* new tags wait for the program to catch up */
    }
    return SRQ_SOFT_TM_DONE;
}

/* An eager message for tag @t: what follows its TMH into the tag's
 * buffer */
static srq_soft_tm_result_t srq_soft_tm_eager(srq_soft_qp_t *qp,
                                              srq_soft_tm_t *tm,
                                              srq_soft_tm_tag_t *t,
                                              const srq_soft_pkt_t *pkt,
                                              const uint8_t *payload,
                                              const srq_soft_tm_hdr_t *h,
                                              uint8_t *nak)
{
    uint32_t len = pkt->length - SRQ_SOFT_TMH_LEN;
    int status   = IBV_WC_SUCCESS;
    srq_soft_rview_t v;
    struct iovec iov;

    v.num_sge = t->num_sge;
    v.sge[0]  = t->sge;
    v.srq     = srq_soft_srq(qp->ibv.srq); /* its PD checks the key */
    if (len > srq_verbs_sge_len(v.sge, (int)v.num_sge)) {
        status = IBV_WC_LOC_LEN_ERR;
    } else {
        status = srq_soft_rview_check(qp, &v, len);
    }
    if ((status == IBV_WC_SUCCESS) && (len > 0)) {
        iov.iov_base = (void*)(uintptr_t)v.sge[0].addr;
        iov.iov_len  = len;
        if (!srq_soft_tm_copy(qp, pkt, payload, &iov, 1, SRQ_SOFT_TMH_LEN,
                              len)) {
            *nak = SRQ_SOFT_NAK_REM_OP; /* not taken: the tag stays */
            return SRQ_SOFT_TM_NAK;
        }
    }
    srq_soft_tm_consume(t, h);
    srq_soft_tm_tag_cqe(tm, qp, t, pkt, status, len,
                        IBV_WC_TM_MATCH |
                        ((status == IBV_WC_SUCCESS) ? IBV_WC_TM_DATA_VALID : 0));
    return (status == IBV_WC_SUCCESS) ? SRQ_SOFT_TM_DONE :
                                        srq_soft_tm_failed(status, nak);
}

srq_soft_tm_result_t srq_soft_tm_recv(srq_soft_qp_t *qp,
                                      const srq_soft_pkt_t *pkt,
                                      const uint8_t *payload, uint8_t *nak)
{
    srq_soft_tm_t *tm = srq_soft_srq(qp->ibv.srq)->tm;
    srq_soft_tm_tag_t *t;
    srq_soft_tm_hdr_t h;

    if (pkt->length < SRQ_SOFT_TMH_LEN) {
        return srq_soft_tm_ordinary(qp, tm, pkt, payload, IBV_WC_TM_NO_TAG,
                                    nak);
    }
    if (!srq_soft_tm_hdr(qp, pkt, payload, &h)) {
        *nak = SRQ_SOFT_NAK_REM_OP; /* as a SEND that cannot be read */
        return SRQ_SOFT_TM_NAK;
    }
    switch (h.opcode) {
    case IBV_TMH_EAGER:
        t = srq_soft_tm_match(tm, h.tag);
        if (t != NULL) {
            return srq_soft_tm_eager(qp, tm, t, pkt, payload, &h, nak);
        }
        break;
    case IBV_TMH_RNDV:
        t = ((pkt->length >= SRQ_SOFT_TMH_LEN + SRQ_SOFT_RVH_LEN) &&
             (pkt->length <= SRQ_SOFT_TM_MAX_RNDV_HDR)) ?
            srq_soft_tm_match(tm, h.tag) : NULL;
        if (t != NULL) {
            if (!srq_soft_tm_fin_room(qp)) {
                return SRQ_SOFT_TM_RNR; /* nothing taken: it comes again */
            }
            return srq_soft_tm_rndv(qp, tm, t, pkt, &h, nak);
        }
        break;
    default:
        return srq_soft_tm_ordinary(qp, tm, pkt, payload, IBV_WC_TM_NO_TAG,
                                    nak);
    }
    return srq_soft_tm_ordinary(qp, tm, pkt, payload, IBV_WC_TM_RECV, nak);
}
