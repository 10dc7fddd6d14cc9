/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a TM SRQ's list of tagged buffers - a free slot
 * for a new tag, the tag a message matches, and the completions a TM SRQ
 * makes on its CQ.
 *
 * A message matches a posted, armed tag when its tag, masked with the
 * entry's mask, equals the entry's tag (ibv_post_srq_ops(3)); of several,
 * the one posted first (MPI's ordering, which tag matching keeps). A
 * consumed tag's slot is not given out again until its last completion
 * is polled: a handle the program still holds never names a new tag.
 */
#include "soft_tm_list.h"
#include "soft_cq.h"
#include "soft_qp.h"

#include <string.h>

/* ---- the list ---------------------------------------------------------- */

static bool srq_soft_tm_slot_free(const srq_soft_tm_tag_t *t)
{
    return (t->state == SRQ_SOFT_TM_TAG_FREE) ||
           ((t->state == SRQ_SOFT_TM_TAG_CONSUMED) &&
            (srq_soft_cq_load(&t->cqe.polled) == t->cqes));
}

srq_soft_tm_tag_t *srq_soft_tm_slot(srq_soft_tm_t *tm)
{
    uint32_t i;

    for (i = 0; i < tm->max_tags; ++i) {
        if (srq_soft_tm_slot_free(&tm->tags[i])) {
            return &tm->tags[i];
        }
    }
    return NULL;
}

srq_soft_tm_tag_t *srq_soft_tm_match(srq_soft_tm_t *tm, uint64_t tag)
{
    srq_soft_tm_tag_t *t, *best = NULL;
    uint32_t i;

    for (i = 0; i < tm->max_tags; ++i) {
        t = &tm->tags[i];
        if ((t->state == SRQ_SOFT_TM_TAG_POSTED) && t->armed &&
            ((tag & t->mask) == t->tag) &&
            ((best == NULL) || (t->seq < best->seq))) {
            best = t;
        }
    }
    return best;
}

/* ---- completions ----------------------------------------------------- */

srq_soft_cqe_t *srq_soft_tm_cqe(srq_soft_tm_t *tm, srq_soft_qp_t *qp,
                                const srq_soft_pkt_t *pkt,
                                enum ibv_wc_opcode opcode,
                                enum ibv_wc_status status, uint64_t wr_id,
                                unsigned flags)
{
    bool se = (pkt != NULL) && (pkt->flags & SRQ_SOFT_PKT_F_SE);
    srq_soft_cqe_t *cqe;

    cqe = srq_soft_cq_push(srq_soft_cq(tm->cq),
                           se || (status != IBV_WC_SUCCESS));
    if (cqe == NULL) {
        return NULL; /* overrun: the CQ is in error */
    }
    cqe->wc.wr_id    = wr_id;
    cqe->wc.status   = status;
    cqe->wc.opcode   = opcode;
    cqe->wc.wc_flags = flags;
    if (pkt != NULL) {
        cqe->wc.byte_len = pkt->length;
        cqe->wc.qp_num   = qp->ibv.qp_num;
        cqe->wc.src_qp   = pkt->src_qpn;
        cqe->wc.slid     = pkt->src_lid;
        if (pkt->flags & SRQ_SOFT_PKT_F_IMM) {
            /* a SEND with immediate, matched or not, reports it */
            cqe->wc.imm_data  = pkt->imm;
            cqe->wc.wc_flags |= IBV_WC_WITH_IMM;
        }
    }
    return cqe;
}

void srq_soft_tm_consume(srq_soft_tm_tag_t *t, const srq_soft_tm_hdr_t *h)
{
    t->state         = SRQ_SOFT_TM_TAG_CONSUMED;
    t->cqes          = 0;
    srq_soft_cq_store(&t->cqe.polled, 0); /* polls' counter (soft_cq.h) */
    t->cqe.info.tag  = h->tag;
    t->cqe.info.priv = h->app_ctx;
}

void srq_soft_tm_tag_cqe(srq_soft_tm_t *tm, srq_soft_qp_t *qp,
                         srq_soft_tm_tag_t *t, const srq_soft_pkt_t *pkt,
                         enum ibv_wc_status status, uint32_t byte_len,
                         unsigned flags)
{
    srq_soft_cqe_t *cqe;

    cqe = srq_soft_tm_cqe(tm, qp, pkt, IBV_WC_TM_RECV, status, t->wr_id,
                          flags);
    if (cqe == NULL) {
        return; /* nothing to poll for it */
    }
    cqe->wc.byte_len = byte_len;
    cqe->rq_ci_p     = &t->cqe.polled; /* the slot is free once polled */
    ++t->cqes;
    srq_soft_tm_cqe_done(tm);
}

void srq_soft_tm_cqe_done(srq_soft_tm_t *tm)
{
    srq_soft_cq_push_done(srq_soft_cq(tm->cq));
}
