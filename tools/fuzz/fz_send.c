/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: send WRs and their completions. A SEND is a message with a sequence
 * number; its payload is a pattern of that number, so the receiver can
 * tell which message landed where.
 */
#include "fz.h"

#include <errno.h>
#include <string.h>

#define FZ_SEND_SLOT  256

fz_qp_t *fz_qp_by_num(fz_t *fz, uint32_t qp_num)
{
    fz_qp_t *qps[] = { &fz->a, &fz->b, &fz->ua, &fz->ub, &fz->d };
    unsigned i;

    for (i = 0; i < sizeof(qps) / sizeof(qps[0]); ++i) {
        if ((qps[i]->qp != NULL) && (qps[i]->qp->qp_num == qp_num)) {
            return qps[i];
        }
    }
    return NULL;
}

/* One SEND WR of message @seq from @q: its gather list over the send
 * area, cut in up to max_send_sge pieces, or inline */
static void fz_send_wr(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr,
                       struct ibv_sge *sge, fz_swr_t *s, bool local_bad)
{
    uint32_t min = ((q->type == IBV_QPT_UD) && (fz->min_msg_len < 4)) ? 4 : fz->min_msg_len;
    uint32_t len = fz_range(&fz->rnd, min, FZ_MAX_MSG);
    uint8_t *p;
    uint32_t off = 0, part;
    int i, n;

    if (local_bad && (len == 0)) {
        len = 64; /* an empty gather list checks no key */
    }
    memset(s, 0, sizeof(*s));
    s->seq      = ++fz->next_seq;
    s->wr_id    = ++fz->next_wr_id;
    s->is_msg   = true;
    s->local_bad = local_bad;
    p = fz->sbuf + (size_t)(s->seq % 256) * FZ_SEND_SLOT;
    fz_fill_payload(p, len, s->seq);
    memset(wr, 0, sizeof(*wr));
    wr->wr_id   = s->wr_id;
    wr->opcode  = IBV_WR_SEND;
    wr->sg_list = sge;
    n = (len == 0) ? fz_range(&fz->rnd, 0, 1) :
                     fz_range(&fz->rnd, 1, q->cap.max_send_sge);
    if ((int)len < n) {
        n = len;
    }
    for (i = 0; i < n; ++i) {
        part = (i == n - 1) ? len - off : fz_range(&fz->rnd, 1, len - off - (n - 1 - i));
        sge[i].addr   = (uintptr_t)(p + off);
        sge[i].length = part;
        sge[i].lkey   = fz->smr->lkey;
        off += part;
    }
    wr->num_sge = n;
    if (local_bad) {
        sge[0].lkey = fz->dead_lkey;
    } else if ((len <= q->cap.max_inline_data) && fz_chance(&fz->rnd, 30)) {
        wr->send_flags |= IBV_SEND_INLINE;
    }
    if (q->type == IBV_QPT_UD) {
        wr->wr.ud.ah          = fz->ah;
        wr->wr.ud.remote_qpn  = q->peer->qp->qp_num;
        wr->wr.ud.remote_qkey = 0x11111111u;
    }
    s->signaled = fz_chance(&fz->rnd, 50);
}

static uint32_t fz_wr_len(const struct ibv_send_wr *wr)
{
    uint32_t len = 0;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        len += wr->sg_list[i].length;
    }
    return len;
}

/* The chain through the ibv_wr_* API of an extended QP: one batch, which
 * ibv_wr_complete posts whole or not at all */
static int fz_send_ex(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr)
{
    struct ibv_data_buf data[FZ_MAX_SGE];
    struct ibv_qp_ex *x = q->qpx;
    int i;

    ++fz->calls;
    ibv_wr_start(x);
    for (; wr != NULL; wr = wr->next) {
        x->wr_id    = wr->wr_id;
        x->wr_flags = wr->send_flags & ~IBV_SEND_INLINE;
        ibv_wr_send(x);
        if (q->type == IBV_QPT_UD) {
            ibv_wr_set_ud_addr(x, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
                               wr->wr.ud.remote_qkey);
        }
        if (!(wr->send_flags & IBV_SEND_INLINE)) {
            ibv_wr_set_sge_list(x, wr->num_sge, wr->sg_list);
            continue;
        }
        for (i = 0; i < wr->num_sge; ++i) {
            data[i].addr   = (void*)(uintptr_t)wr->sg_list[i].addr;
            data[i].length = wr->sg_list[i].length;
        }
        ibv_wr_set_inline_data_list(x, wr->num_sge, data);
    }
    return ibv_wr_complete(x);
}

/* What the batch must have done: every WR posted when the queue had room
 * for all, else ENOMEM and none. The number posted. */
static unsigned fz_send_ex_check(fz_t *fz, fz_qp_t *q, unsigned n,
                                 unsigned lo, int ret)
{
    if (n > lo) {
        fz_fails(fz, FZ_F(ibv_post_send, queue_full), ret);
    } else if (!fz_post(fz, FZ_P(ibv_create_qp_ex, wr_complete_all_or_nothing),
                        ret == 0, "%s: ibv_wr_complete of %u SENDs (%u free) "
                        "returned %d", q->name, n, lo, ret)) {
        fz->broken = true;
    }
    return (ret == 0) ? n : 0;
}

unsigned fz_send_chain(fz_t *fz, fz_qp_t *q, unsigned n, bool local_bad,
                       int bad_at, int bad_num_sge)
{
    struct ibv_send_wr wr[n], *bad;
    struct ibv_sge sge[n][FZ_MAX_SGE + 4];
    fz_swr_t s[n];
    unsigned i, posted, lo = q->cap.max_send_wr - q->sq_num, hi;
    int ret, bad_wr = local_bad ? (int)fz_range(&fz->rnd, 0, n - 1) : -1;
    bool state_ok = (q->state == IBV_QPS_RTS) || (q->state == IBV_QPS_ERR);
    bool ex;
    fz_msg_t *m;

    for (i = 0; i < n; ++i) {
        fz_send_wr(fz, q, &wr[i], sge[i], &s[i], (int)i == bad_wr);
        wr[i].next = (i + 1 < n) ? &wr[i + 1] : NULL;
        /* a chain that may be cut is signaled throughout: an unsignaled
         * WR retires only through a later completion */
        s[i].signaled |= (bad_at >= 0) || (n > lo);
    }
    /* the last is signaled: every WR retires through a completion */
    s[n - 1].signaled = true;
    for (i = 0; i < n; ++i) {
        wr[i].send_flags |= s[i].signaled ? IBV_SEND_SIGNALED : 0;
    }
    if (bad_at >= 0) {
        for (i = wr[bad_at].num_sge; i < FZ_MAX_SGE + 4; ++i) {
            sge[bad_at][i] = sge[bad_at][0];
        }
        wr[bad_at].num_sge    = bad_num_sge;
        wr[bad_at].send_flags &= ~IBV_SEND_INLINE;
    }
    ex     = (q->qpx != NULL) && (bad_at < 0) && fz_chance(&fz->rnd, 50);
    ret    = ex ? fz_send_ex(fz, q, wr) : fz_post_send(fz, q, wr, &bad);
    posted = (ret == 0) ? n : ex ? 0 :
             ((bad >= wr) && (bad < wr + n)) ? (unsigned)(bad - wr) : n + 1;
    hi     = q->cap.max_send_wr;

    if (!state_ok) {
        fz_post(fz, FZ_P(ibv_post_send, bad_wr_on_failure), (ret != 0) && (posted == 0),
                "%s in state %d: post returned %d, %u WRs taken", q->name,
                q->state, ret, posted);
        fz_fails(fz, FZ_F(ibv_post_send, bad_state), ret);
        return 0;
    }
    if (ex) {
        posted = fz_send_ex_check(fz, q, n, lo, ret);
    } else if ((ret != 0) && (posted > n)) {
        fz_post(fz, FZ_P(ibv_post_send, bad_wr_on_failure), false,
                "%s: post failed with %d, *bad_wr %p not in the list", q->name,
                ret, (void*)bad);
        fz->broken = true;
        return 0;
    } else if ((ret != 0) && (posted >= lo) && (posted <= hi) &&
        ((bad_at < 0) || (posted < (unsigned)bad_at) ||
         ((posted == (unsigned)bad_at) && (ret == ENOMEM)))) {
        fz_fails(fz, FZ_F(ibv_post_send, queue_full), ret);
    } else if ((ret != 0) && (bad_at >= 0) && (posted == (unsigned)bad_at)) {
        fz_fails(fz, (bad_num_sge < 0) ? FZ_F(ibv_post_send, num_sge_negative) :
                                         FZ_F(ibv_post_send, num_sge_over_max), ret);
    } else if (!fz_post(fz, FZ_P(ibv_post_send, chain_prefix_posted),
                        (ret == 0) && (n <= hi) && (bad_at < 0),
                        "%s: a chain of %u SENDs (%u free, bad WR at %d) "
                        "returned %d with *bad_wr at %u", q->name, n, lo,
                        bad_at, ret, posted)) {
        fz->broken = true;
    }
    if (posted > n) {
        posted = n;
    }
    for (i = 0; i < posted; ++i) {
        q->sq[q->sq_num++] = s[i];
        if (!s[i].local_bad) {
            m = &q->peer->in[q->peer->in_num++];
            m->seq         = s[i].seq;
            m->len         = 0;
            m->send_status = -1;
            m->send_wr_id  = s[i].wr_id;
            m->len         = fz_wr_len(&wr[i]);
            fz->recv_status[s[i].seq % FZ_SEQ_RING] = -1;
        }
    }
    return posted;
}

bool fz_send_rdma_denied(fz_t *fz, fz_qp_t *q)
{
    struct ibv_sge sge = { (uintptr_t)fz->sbuf, 8, fz->smr->lkey };
    struct ibv_send_wr wr, *bad;
    fz_swr_t *s;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = ++fz->next_wr_id;
    wr.opcode              = IBV_WR_RDMA_WRITE;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    /* the receive buffer: registered for local write only */
    wr.wr.rdma.remote_addr = fz_mr_raddr(fz);
    wr.wr.rdma.rkey        = fz->mr->rkey;
    if (!fz_post(fz, FZ_P(ibv_post_send, chain_prefix_posted),
                 fz_post_send(fz, q, &wr, &bad) == 0,
                 "%s: an RDMA write was refused at post", q->name)) {
        return false;
    }
    s = &q->sq[q->sq_num++];
    memset(s, 0, sizeof(*s));
    s->wr_id    = wr.wr_id;
    s->signaled = true;
    s->rkey_bad = true;
    return true;
}

unsigned fz_send_msgs(fz_t *fz, fz_qp_t *q, unsigned n, bool local_bad)
{
    return (n == 0) ? 0 : fz_send_chain(fz, q, n, local_bad, -1, 0);
}

static fz_msg_t *fz_msg_find(fz_qp_t *to, uint32_t seq)
{
    unsigned i;

    for (i = 0; i < to->in_num; ++i) {
        if (to->in[i].seq == seq) {
            return &to->in[i];
        }
    }
    return NULL;
}

void fz_send_wc(fz_t *fz, fz_qp_t *q, const struct ibv_wc *wc)
{
    unsigned i, j;
    fz_swr_t s;
    fz_msg_t *m;
    int rs;

    for (i = 0; (i < q->sq_num) && (q->sq[i].wr_id != wc->wr_id); ++i) {
    }
    if (!fz_post(fz, FZ_P(ibv_post_send, rc_in_order), i < q->sq_num,
                 "%s: completion of wr_id 0x%llx (%s), not an outstanding WR",
                 q->name, (unsigned long long)wc->wr_id,
                 ibv_wc_status_str(wc->status))) {
        fz->broken = true;
        return;
    }
    /* the WRs before it completed silently: unsignaled, and successful */
    for (j = 0; j < i; ++j) {
        fz_post(fz, FZ_P(ibv_post_send, unsignaled_silent),
                !q->sq[j].signaled && !q->sq_error && !q->sq[j].local_bad &&
                (wc->status != IBV_WC_WR_FLUSH_ERR),
                "%s: wr_id 0x%llx completed before wr_id 0x%llx posted earlier",
                q->name, (unsigned long long)wc->wr_id,
                (unsigned long long)q->sq[j].wr_id);
        if ((m = fz_msg_find(q->peer, q->sq[j].seq)) != NULL) {
            m->send_status = IBV_WC_SUCCESS;
        }
    }
    s = q->sq[i];
    q->sq_num -= i + 1;
    memmove(q->sq, q->sq + i + 1, sizeof(s) * q->sq_num);
    m  = fz_msg_find(q->peer, s.seq);
    rs = fz->recv_status[s.seq % FZ_SEQ_RING];

    if (q->sq_error || (q->state == IBV_QPS_ERR)) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            /* an error already moved the QP to ERR: the rest flushes, but
             * a WR the peer already took may still report success, and
             * the one whose receive failed its error (the receiver's
             * completion, which put both ends in ERR here, may be polled
             * first: two CQs have no order between them) */
            fz_post(fz, FZ_P(ibv_post_send, error_then_flush),
                    !q->sq_error &&
                    (((wc->status == IBV_WC_SUCCESS) && (rs >= 0)) ||
                     ((wc->status == IBV_WC_REM_OP_ERR) &&
                      (rs == IBV_WC_LOC_PROT_ERR)) ||
                     ((wc->status == IBV_WC_REM_INV_REQ_ERR) &&
                      (rs == IBV_WC_LOC_LEN_ERR))),
                    "%s: wr_id 0x%llx completed with %s after the QP went to error",
                    q->name, (unsigned long long)wc->wr_id,
                    ibv_wc_status_str(wc->status));
        } else {
            fz_wc_is(fz, FZ_F(ibv_post_send, flushed), wc);
        }
    } else if (s.dev_fid != 0) {
        fz_wc_is(fz, s.dev_fid, wc);
    } else if (s.local_bad) {
        fz_wc_is(fz, FZ_F(ibv_post_send, lkey_invalid), wc);
    } else if (s.rkey_bad) {
        fz_wc_is(fz, FZ_F(ibv_post_send, rkey_invalid), wc);
        q->peer->state = IBV_QPS_ERR; /* the responder's error too */
    } else if (wc->status == IBV_WC_REM_OP_ERR) {
        fz_post(fz, FZ_P(ibv_post_send, error_then_flush),
                (rs < 0) || (rs == IBV_WC_LOC_PROT_ERR),
                "%s: message %u: sender %s, receiver %s", q->name, s.seq,
                ibv_wc_status_str(wc->status), ibv_wc_status_str(rs));
        fz_wc_is(fz, FZ_F(ibv_post_send, remote_op_error), wc);
    } else if (wc->status == IBV_WC_REM_INV_REQ_ERR) {
        fz_post(fz, FZ_P(ibv_post_send, error_then_flush),
                (rs < 0) || (rs == IBV_WC_LOC_LEN_ERR),
                "%s: message %u: sender %s, receiver %s", q->name, s.seq,
                ibv_wc_status_str(wc->status), ibv_wc_status_str(rs));
        fz_wc_is(fz, FZ_F(ibv_post_send, remote_too_short), wc);
    } else {
        fz_post(fz, FZ_P(ibv_post_send, rc_in_order),
                (wc->status == IBV_WC_SUCCESS) && (wc->opcode == IBV_WC_SEND) &&
                (wc->qp_num == q->qp->qp_num) &&
                ((q->type != IBV_QPT_RC) || (rs < 0) || (rs == IBV_WC_SUCCESS)),
                "%s: message %u completed with %s opcode %d qp_num %u (received: %s)",
                q->name, s.seq, ibv_wc_status_str(wc->status), wc->opcode,
                wc->qp_num, (rs < 0) ? "not yet" : ibv_wc_status_str(rs));
    }
    if (m != NULL) {
        m->send_status = wc->status;
    }
    if ((wc->status != IBV_WC_SUCCESS) && (q->type == IBV_QPT_RC)) {
        q->sq_error = true;
        q->state    = IBV_QPS_ERR;
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            fz_post(fz, FZ_P(ibv_post_send, error_then_flush), true, "-");
        }
    }
}
