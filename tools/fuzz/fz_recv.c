/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: receive WRs. Each WR gets a slot of the registered
 * buffer of its own, filled with a canary: what a message writes there is
 * checked against what was sent, and nothing may be written beyond it or
 * into a WR no message consumed.
 */
#include "fz.h"

#include <stdlib.h>
#include <string.h>

bool fz_rwr_make(fz_t *fz, fz_rwr_t *w, fz_rclass_t cls, int nsge)
{
    uint32_t total = (cls == FZ_RWR_SHORT) ? 16 : FZ_SLOT_SIZE;
    uint32_t off = 0, part;
    uint8_t *base;
    int i;

    memset(w, 0, sizeof(*w));
    w->slot = fz_slot_get(fz);
    if (w->slot < 0) {
        return false;
    }
    base       = fz_slot_addr(fz, w->slot);
    w->wr_id   = ++fz->next_wr_id;
    w->cls     = cls;
    w->num_sge = nsge;
    for (i = 0; i < nsge; ++i) {
        /* random cuts; the last element takes the rest */
        part = (i == nsge - 1) ? total - off :
               fz_range(&fz->rnd, 1, (total - off) - (nsge - 1 - i));
        w->sge[i].addr   = (uintptr_t)(base + off);
        w->sge[i].length = part;
        w->sge[i].lkey   = fz->mr->lkey;
        off += part;
    }
    if (cls == FZ_RWR_BAD_LKEY) {
        w->sge[0].lkey = fz->dead_lkey; /* the first bytes of any message */
    }
    w->len = total;
    return true;
}

void fz_rwr_to_wr(const fz_rwr_t *w, struct ibv_recv_wr *wr,
                  struct ibv_sge *sge)
{
    memcpy(sge, w->sge, sizeof(*sge) * w->num_sge);
    memset(wr, 0, sizeof(*wr));
    wr->wr_id   = w->wr_id;
    wr->sg_list = sge;
    wr->num_sge = w->num_sge;
}

static fz_rq_t *fz_rq_of(fz_t *fz, fz_qp_t *q)
{
    return (q == NULL) ? &fz->srq_m : q->rq;
}

/* Messages on their way to the WRs of @rq: some may have consumed a WR
 * whose completion is not polled yet */
static unsigned fz_rq_pending(fz_t *fz, fz_rq_t *rq)
{
    if (rq == &fz->srq_m) {
        return fz->b.in_num;
    }
    return (rq == &fz->rq_a) ? fz->a.in_num :
           (rq == &fz->rq_u) ? fz->ua.in_num : 0;
}

unsigned fz_post_rchain(fz_t *fz, fz_qp_t *q, fz_rwr_t *ws, unsigned n,
                        int bad_at, int bad_num_sge)
{
    fz_rq_t *rq = fz_rq_of(fz, q);
    const char *verb = (q == NULL) ? "ibv_post_srq_recv" : "ibv_post_recv";
    struct ibv_recv_wr wr[n], *bad;
    struct ibv_sge sge[n][FZ_MAX_SGE + 4];
    unsigned free_slots = rq->cap - rq->num, posted, i, lo, hi;
    bool full;
    int ret, fid;

    for (i = 0; i < n; ++i) {
        fz_rwr_to_wr(&ws[i], &wr[i], sge[i]);
        wr[i].next = (i + 1 < n) ? &wr[i + 1] : NULL;
    }
    if (bad_at >= 0) {
        /* more elements than the queue takes: a valid list, a bad count */
        for (i = ws[bad_at].num_sge; i < FZ_MAX_SGE + 4; ++i) {
            sge[bad_at][i] = sge[bad_at][0];
        }
        wr[bad_at].num_sge = bad_num_sge;
    }
    ret = (q == NULL) ? fz_post_srq_recv(fz, wr, &bad) :
                        fz_post_recv(fz, q, wr, &bad);
    posted = (ret == 0) ? n : (bad >= wr) && (bad < wr + n) ? (unsigned)(bad - wr) : n + 1;

    /* a device may free a slot between a WR's consumption and the poll of
     * its completion: it takes at least what is free, at most that more */
    lo = free_slots;
    hi = free_slots + fz_rq_pending(fz, rq);
    if (hi > rq->cap) {
        hi = rq->cap;
    }
    if (ret != 0) {
        fz_post(fz, q ? FZ_P(ibv_post_recv, bad_wr_on_failure) :
                        FZ_P(ibv_post_srq_recv, bad_wr_on_failure),
                posted <= n, "%s failed with %d, *bad_wr %p is not a WR of the "
                "list", verb, ret, (void*)bad);
        if (posted > n) {
            fz->broken = true;
            return 0;
        }
    }
    full = (posted < n) && (posted >= lo) && (posted <= hi) &&
           ((bad_at < 0) || (posted < (unsigned)bad_at) ||
            ((posted == (unsigned)bad_at) && (ret == ENOMEM)));
    if (full) {
        fid = q ? FZ_F(ibv_post_recv, queue_full) : FZ_F(ibv_post_srq_recv, queue_full);
        fz_fails(fz, fid, ret);
    } else if ((bad_at >= 0) && (posted == (unsigned)bad_at) && (bad_at < (int)hi + 1)) {
        fid = (bad_num_sge < 0) ?
              (q ? FZ_F(ibv_post_recv, num_sge_negative) : FZ_F(ibv_post_srq_recv, num_sge_negative)) :
              (q ? FZ_F(ibv_post_recv, num_sge_over_max) : FZ_F(ibv_post_srq_recv, num_sge_over_max));
        fz_fails(fz, fid, ret);
    } else {
        /* every WR fits and is valid up to where it stopped: it must not
         * have stopped */
        fz_post(fz, q ? FZ_P(ibv_post_recv, chain_prefix_posted) :
                        FZ_P(ibv_post_srq_recv, chain_prefix_posted),
                (ret == 0) && (n <= hi) && (bad_at < 0),
                "%s of %u WRs (%u free, bad WR at %d) returned %d with *bad_wr "
                "at %u", verb, n, free_slots, bad_at, ret, posted);
        if ((ret != 0) || (bad_at >= 0)) {
            fz->broken = true;
        }
    }
    if (posted > n) {
        posted = n;
    }
    for (i = 0; i < posted; ++i) {
        rq->wr[rq->num++] = ws[i];
    }
    for (; i < n; ++i) {
        fz_slot_put(fz, ws[i].slot);
    }
    return posted;
}

unsigned fz_post_rwrs(fz_t *fz, fz_qp_t *q, unsigned n, fz_rclass_t cls)
{
    fz_rq_t *rq = fz_rq_of(fz, q);
    fz_rwr_t ws[n ? n : 1];
    unsigned i;

    if (n > rq->cap - rq->num) {
        n = rq->cap - rq->num;
    }
    for (i = 0; i < n; ++i) {
        if (!fz_rwr_make(fz, &ws[i], cls, fz_range(&fz->rnd, 1, rq->max_sge))) {
            break;
        }
    }
    return (i == 0) ? 0 : fz_post_rchain(fz, q, ws, i, -1, 0);
}

void fz_rq_drop(fz_t *fz, fz_rq_t *rq)
{
    unsigned i;

    for (i = 0; i < rq->num; ++i) {
        fz_slot_put(fz, rq->wr[i].slot);
    }
    rq->num = 0;
}

static int fz_rq_find(fz_rq_t *rq, uint64_t wr_id)
{
    unsigned i;

    for (i = 0; i < rq->num; ++i) {
        if (rq->wr[i].wr_id == wr_id) {
            return (int)i;
        }
    }
    return -1;
}

/* The message @m landed in @w: its bytes, and nothing after them */
static void fz_check_data(fz_t *fz, fz_qp_t *q, const fz_rwr_t *w,
                          const fz_msg_t *m, uint32_t off)
{
    uint8_t want[FZ_MAX_MSG], *p = fz_slot_addr(fz, w->slot);
    uint32_t i;

    /* the scatter list is one slot, cut in order: contiguous */
    fz_fill_payload(want, m->len, m->seq);
    fz_post(fz, q->srq ? FZ_P(ibv_post_srq_recv, buffer_owned_until_polled) :
                         FZ_P(ibv_post_recv, buffer_owned_until_polled),
            !memcmp(p + off, want, m->len),
            "%s: wr_id 0x%llx does not hold message %u", q->name,
            (unsigned long long)w->wr_id, m->seq);
    for (i = off + m->len; (i < FZ_SLOT_SIZE) && (p[i] == FZ_CANARY); ++i) {
    }
    fz_post(fz, FZ_P(ibv_poll_cq, recv_byte_len), i == FZ_SLOT_SIZE,
            "%s: wr_id 0x%llx written at offset %u, after the %u bytes of "
            "message %u", q->name, (unsigned long long)w->wr_id, i,
            off + m->len, m->seq);
}

/* The next message to @q: RC in order; UD by the sequence number the
 * payload starts with */
static bool fz_take_msg(fz_t *fz, fz_qp_t *q, const fz_rwr_t *w,
                        const struct ibv_wc *wc, fz_msg_t *m)
{
    unsigned i = 0;
    uint32_t seq;

    if (q->in_num == 0) {
        return false;
    }
    if ((q->type == IBV_QPT_UD) && (wc->status == IBV_WC_SUCCESS) &&
        (wc->byte_len >= FZ_UD_GRH + 4)) {
        memcpy(&seq, fz_slot_addr(fz, w->slot) + FZ_UD_GRH, sizeof(seq));
        for (i = 0; (i < q->in_num) && (q->in[i].seq != seq); ++i) {
        }
        if (i == q->in_num) {
            return false;
        }
    }
    *m = q->in[i];
    memmove(&q->in[i], &q->in[i + 1], sizeof(*m) * (q->in_num - i - 1));
    --q->in_num;
    return true;
}

static void fz_recv_error(fz_t *fz, fz_qp_t *q, const fz_msg_t *m, int fid,
                          const struct ibv_wc *wc, int sender_status)
{
    fz_wc_is(fz, fid, wc);
    if (q->type != IBV_QPT_RC) {
        return;
    }
    /* both ends are in error now, and the sender says why */
    q->state = IBV_QPS_ERR;
    q->peer->state = IBV_QPS_ERR;
    if (m->send_status >= 0) {
        fz_post(fz, FZ_P(ibv_post_send, error_then_flush),
                m->send_status == sender_status,
                "%s: message %u failed at the receiver with %s, its sender "
                "completed with %s", q->name, m->seq,
                ibv_wc_status_str(wc->status), ibv_wc_status_str(m->send_status));
    }
}

void fz_recv_wc(fz_t *fz, fz_qp_t *q, const struct ibv_wc *wc)
{
    fz_rq_t *rq = q->rq ? q->rq : q->srq;
    uint32_t off = (q->type == IBV_QPT_UD) ? FZ_UD_GRH : 0;
    fz_rwr_t w;
    fz_msg_t m;
    int i = fz_rq_find(rq, wc->wr_id);

    if (!fz_post(fz, q->srq ? FZ_P(ibv_post_srq_recv, consumed_once) :
                              FZ_P(ibv_post_recv, in_order),
                 (i >= 0) && (q->srq || (i == 0)),
                 "%s: completion of wr_id 0x%llx (%s), %s", q->name,
                 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
                 (i < 0) ? "not posted or completed already" :
                           "WRs posted before it not completed yet")) {
        fz->broken = true;
        return;
    }
    w = rq->wr[i];
    memmove(&rq->wr[i], &rq->wr[i + 1], sizeof(w) * (rq->num - i - 1));
    --rq->num;

    if (wc->status == IBV_WC_WR_FLUSH_ERR) {
        /* only a QP's own queue flushes; an SRQ's WRs stay posted */
        fz_post(fz, FZ_P(ibv_modify_qp, error_flushes),
                (q->rq != NULL) && ((q->state == IBV_QPS_ERR) || q->may_err),
                "%s: wr_id 0x%llx flushed, QP state %d, %s", q->name,
                (unsigned long long)wc->wr_id, q->state,
                q->rq ? "own queue" : "from the SRQ");
        fz_wc_is(fz, FZ_F(ibv_post_recv, flushed), wc);
        fz_slot_put(fz, w.slot);
        return;
    }
    if (!fz_post(fz, FZ_P(ibv_post_srq_recv, consumed_once), fz_take_msg(fz, q, &w, wc, &m),
                 "%s: wr_id 0x%llx completed (%s) but no message was sent to it",
                 q->name, (unsigned long long)wc->wr_id,
                 ibv_wc_status_str(wc->status))) {
        fz->broken = true;
        fz_slot_put(fz, w.slot);
        return;
    }
    fz->recv_status[m.seq % FZ_SEQ_RING] = wc->status;
    if (off + m.len > w.len) {
        fz_recv_error(fz, q, &m, q->srq ? FZ_F(ibv_post_srq_recv, too_short) :
                                          FZ_F(ibv_post_recv, too_short),
                      wc, IBV_WC_REM_INV_REQ_ERR);
    } else if ((w.cls == FZ_RWR_BAD_LKEY) && (off + m.len > 0)) {
        fz_recv_error(fz, q, &m, q->srq ? FZ_F(ibv_post_srq_recv, lkey_invalid) :
                                          FZ_F(ibv_post_recv, lkey_invalid),
                      wc, IBV_WC_REM_OP_ERR);
    } else if ((fz->parent != NULL) &&
               !fz_post(fz, FZ_P(ibv_alloc_parent_domain, protects_as_pd),
                        wc->status != IBV_WC_LOC_PROT_ERR,
                        "%s, in a parent domain: message %u into its PD's "
                        "region completed %s", q->name, m.seq,
                        ibv_wc_status_str(wc->status))) {
        /* a key of the PD must serve its parent domain's QPs */
    } else if (fz_post(fz, FZ_P(ibv_poll_cq, recv_byte_len),
                       (wc->status == IBV_WC_SUCCESS) &&
                       (wc->opcode == IBV_WC_RECV) &&
                       (wc->byte_len == off + m.len) && (wc->qp_num == q->qp->qp_num),
                       "%s: message %u of %u bytes completed with %s opcode %d "
                       "byte_len %u qp_num %u", q->name, m.seq, m.len,
                       ibv_wc_status_str(wc->status), wc->opcode, wc->byte_len,
                       wc->qp_num)) {
        if (off != 0) {
            fz_post(fz, q->srq ? FZ_P(ibv_post_srq_recv, ud_grh) :
                                 FZ_P(ibv_post_recv, ud_grh),
                    (wc->src_qp == q->peer_src) ,
                    "%s: src_qp %u, the sender is %u", q->name, wc->src_qp,
                    q->peer_src);
        }
        fz_check_data(fz, q, &w, &m, off);
    }
    fz_slot_put(fz, w.slot);
}
