/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: the random operations. Each makes calls, valid or
 * invalid on purpose, and checks them (fz_recv.c, fz_send.c do the WR
 * lists). Operations whose outcome depends on which receive WR a message
 * lands in, or on what is in flight, first drain: the outcome must be one
 * the contract fixes, so that any difference is the device's.
 */
#include "fz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned fz_min(unsigned a, unsigned b)
{
    return (a < b) ? a : b;
}

/* num_sge for a WR that must be refused: over the queue's max, or < 0 */
static int fz_bad_num_sge(fz_t *fz, uint32_t max_sge)
{
    return fz_chance(&fz->rnd, 20) ? -1 : (int)(max_sge + fz_range(&fz->rnd, 1, 3));
}

/* ---- receive lists ------------------------------------------------------ */

static void fz_op_recv(fz_t *fz, fz_qp_t *q)
{
    fz_rq_t *rq = q ? q->rq : &fz->srq_m;

    fz_post_rwrs(fz, q, fz_range(&fz->rnd, 1, fz_min(8, rq->cap)), FZ_RWR_GOOD);
}

/* A list with a WR in the middle the queue must refuse: the ones before
 * it are posted, it and the rest are not */
static void fz_op_recv_bad_middle(fz_t *fz, fz_qp_t *q)
{
    fz_rq_t *rq = q ? q->rq : &fz->srq_m;
    unsigned n = fz_range(&fz->rnd, 2, 8), i;
    fz_rwr_t ws[8];
    int bad_at;

    if (rq->cap - rq->num < 2) {
        return;
    }
    n      = fz_min(n, rq->cap - rq->num);
    bad_at = (int)fz_range(&fz->rnd, 0, n - 1);
    for (i = 0; i < n; ++i) {
        if (!fz_rwr_make(fz, &ws[i], FZ_RWR_GOOD, fz_range(&fz->rnd, 1, rq->max_sge))) {
            return;
        }
    }
    fz_post_rchain(fz, q, ws, n, bad_at, fz_bad_num_sge(fz, rq->max_sge));
}

/* More WRs than the queue has room for */
static void fz_op_recv_full(fz_t *fz, fz_qp_t *q)
{
    fz_rq_t *rq = q ? q->rq : &fz->srq_m;
    unsigned n = rq->cap - rq->num + fz_range(&fz->rnd, 1, 3), i;
    fz_rwr_t *ws = calloc(n, sizeof(*ws));

    for (i = 0; (ws != NULL) && (i < n); ++i) {
        if (!fz_rwr_make(fz, &ws[i], FZ_RWR_GOOD, fz_range(&fz->rnd, 1, rq->max_sge))) {
            break;
        }
    }
    if ((ws != NULL) && (i == n)) {
        fz_post_rchain(fz, q, ws, n, -1, 0);
    } else {
        while (ws && i-- > 0) {
            fz_slot_put(fz, ws[i].slot);
        }
    }
    free(ws);
}

/* A receive list the QP must refuse as a whole (@fid: why) */
static void fz_recv_refused(fz_t *fz, fz_qp_t *q, int fid)
{
    struct ibv_recv_wr wr[3], *bad;
    struct ibv_sge sge[3][FZ_MAX_SGE];
    fz_rwr_t ws[3];
    unsigned n = fz_range(&fz->rnd, 1, 3), i;
    int ret;

    for (i = 0; i < n; ++i) {
        if (!fz_rwr_make(fz, &ws[i], FZ_RWR_GOOD, 1)) {
            n = i;
            break;
        }
        fz_rwr_to_wr(&ws[i], &wr[i], sge[i]);
        wr[i].next = (i + 1 < n) ? &wr[i + 1] : NULL;
    }
    if (n == 0) {
        return;
    }
    wr[n - 1].next = NULL;
    ret = fz_post_recv(fz, q, wr, &bad);
    if (fz_fails(fz, fid, ret)) {
        fz_post(fz, FZ_P(ibv_post_recv, bad_wr_on_failure), bad == &wr[0],
                "%s: *bad_wr is %p, not the first WR", q->name, (void*)bad);
    }
    for (i = 0; i < n; ++i) {
        fz_slot_put(fz, ws[i].slot);
    }
}

static void op_srq_recv(fz_t *fz)         { fz_op_recv(fz, NULL); }
static void op_srq_recv_bad(fz_t *fz)     { fz_op_recv_bad_middle(fz, NULL); }
static void op_srq_recv_full(fz_t *fz)    { fz_op_recv_full(fz, NULL); }
static void op_rq_recv(fz_t *fz)          { fz_op_recv(fz, &fz->a); }
static void op_rq_recv_bad(fz_t *fz)      { fz_op_recv_bad_middle(fz, &fz->a); }
static void op_rq_recv_full(fz_t *fz)     { fz_op_recv_full(fz, &fz->a); }

/* ibv_post_recv on a QP that receives from the SRQ */
static void op_recv_on_srq_qp(fz_t *fz)
{
    fz_recv_refused(fz, fz_chance(&fz->rnd, 50) ? &fz->b : &fz->ub,
                    FZ_F(ibv_post_recv, srq_attached));
}

/* ---- send lists ------------------------------------------------------------ */

static void op_send(fz_t *fz)
{
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;

    if (q->state == IBV_QPS_RTS) {
        fz_send_msgs(fz, q, fz_range(&fz->rnd, 1, fz_min(8, q->cap.max_send_wr)), false);
    }
}

static void op_send_bad(fz_t *fz)
{
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;
    unsigned n = fz_range(&fz->rnd, 2, 6);

    if ((q->state == IBV_QPS_RTS) && (q->cap.max_send_wr - q->sq_num >= n)) {
        fz_send_chain(fz, q, n, false, (int)fz_range(&fz->rnd, 0, n - 1),
                      fz_bad_num_sge(fz, q->cap.max_send_sge));
    }
}

static void op_send_full(fz_t *fz)
{
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;

    if (q->state == IBV_QPS_RTS) {
        fz_send_chain(fz, q, q->cap.max_send_wr - q->sq_num +
                      fz_range(&fz->rnd, 1, 3), false, -1, 0);
    }
}

static void op_ud_send(fz_t *fz)
{
    unsigned n = fz_range(&fz->rnd, 1, fz_min(4, fz->ub.cap.max_send_wr));

    if ((fz->ub.cap.max_send_wr - fz->ub.sq_num < n) ||
        (fz->rq_u.cap - fz->rq_u.num < n)) {
        fz_drain(fz);
        return;
    }
    /* a datagram with no receive WR waiting is lost: post them first */
    if (fz_post_rwrs(fz, &fz->ua, n, FZ_RWR_GOOD) == n) {
        fz_send_msgs(fz, &fz->ub, n, false);
    }
}

/* One send WR the device must fail (@fid, its completion), alone on @q
 * with nothing else in flight; @q is in error afterwards */
static void fz_send_device_error(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr,
                                 int fid)
{
    struct ibv_send_wr *bad;
    fz_swr_t *s;

    if (!fz_post(fz, FZ_P(ibv_post_send, chain_prefix_posted),
                 fz_post_send(fz, q, wr, &bad) == 0,
                 "%s: a WR the device fails was refused at post", q->name)) {
        return;
    }
    s = &q->sq[q->sq_num++];
    memset(s, 0, sizeof(*s));
    s->wr_id    = wr->wr_id;
    s->signaled = true;
    s->dev_fid  = fid;
    fz_drain(fz);
}

/* ub after a WR the device failed: back to RTS, its queue empty */
static void fz_ud_recover(fz_t *fz)
{
    fz_drain(fz);
    if (fz->broken || !fz_qp_modify_state(fz, &fz->ub, IBV_QPS_RESET)) {
        return;
    }
    fz->ub.sq_num   = 0;
    fz->ub.sq_error = false;
    fz_qp_to_rts(fz, &fz->ub, NULL);
}

/* One send WR the QP must refuse (@fid), alone in its list */
static void fz_send_refused(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr, int fid)
{
    struct ibv_send_wr *bad;
    int ret = fz_post_send(fz, q, wr, &bad);

    if (fz_fails(fz, fid, ret)) {
        fz_post(fz, FZ_P(ibv_post_send, bad_wr_on_failure), bad == wr,
                "%s: *bad_wr is %p, not the WR", q->name, (void*)bad);
    } else if (ret == 0) {
        fz->broken = true; /* a WR the model does not know is on its way */
    }
}

static void op_send_unsupported(fz_t *fz)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge = { (uintptr_t)fz->sbuf, 8, fz->smr->lkey };

    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = ++fz->next_wr_id;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (fz_chance(&fz->rnd, 50)) {
        /* RDMA on a datagram QP: the device fails it, as an HCA's */
        fz_drain(fz);
        if (fz->broken || (fz->ub.sq_num != 0)) {
            return;
        }
        wr.opcode = fz_chance(&fz->rnd, 50) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = fz_mr_raddr(fz);
        wr.wr.rdma.rkey        = fz->mr->rkey;
        fz_send_device_error(fz, &fz->ub, &wr, FZ_F(ibv_post_send, ud_rdma));
        fz_ud_recover(fz);
    } else if (fz_chance(&fz->rnd, 30)) {
        /* an atomic on 4 bytes: the device fails it */
        fz_drain(fz);
        if (fz->broken || (fz->a.state != IBV_QPS_RTS) || (fz->a.sq_num != 0)) {
            return;
        }
        wr.opcode                = fz_chance(&fz->rnd, 50) ? IBV_WR_ATOMIC_CMP_AND_SWP :
                                                             IBV_WR_ATOMIC_FETCH_AND_ADD;
        sge.length               = 4;
        wr.wr.atomic.remote_addr = fz_mr_raddr(fz) & ~7ull;
        wr.wr.atomic.rkey        = fz->mr->rkey;
        fz->a.may_err = true;
        fz_send_device_error(fz, &fz->a, &wr, FZ_F(ibv_post_send, atomic_sge_length));
        fz_scene_recover(fz);
    } else if (fz_chance(&fz->rnd, 30) && (fz->a.state == IBV_QPS_RTS) &&
               (fz->a.sq_num < fz->a.cap.max_send_wr)) {
        /* an atomic write through ibv_post_send: only ibv_wr_atomic_write
         * carries its 8 bytes */
        wr.opcode                = IBV_WR_ATOMIC_WRITE;
        wr.num_sge               = 0;
        wr.wr.atomic.remote_addr = fz_mr_raddr(fz) & ~7ull;
        wr.wr.atomic.rkey        = fz->mr->rkey;
        fz_send_refused(fz, &fz->a, &wr, FZ_F(ibv_post_send, opcode_unsupported));
    } else if ((fz->a.state == IBV_QPS_RTS) && (fz->a.sq_num < fz->a.cap.max_send_wr) &&
               (fz->a.cap.max_inline_data < FZ_MAX_MSG)) {
        /* more inline data than the QP takes */
        wr.opcode     = IBV_WR_SEND;
        wr.send_flags |= IBV_SEND_INLINE;
        sge.length    = fz_range(&fz->rnd, fz->a.cap.max_inline_data + 1, FZ_MAX_MSG);
        fz_send_refused(fz, &fz->a, &wr, FZ_F(ibv_post_send, inline_too_long));
    }
}

/* ---- states ---------------------------------------------------------------- */

/* d: posts in RESET are refused; in INIT a receive queue takes WRs and a
 * send queue does not; destroyed with WRs posted, it completes none */
static void op_wrong_state(fz_t *fz)
{
    fz_qp_t *d = &fz->d;

    switch (fz_range(&fz->rnd, 0, 3)) {
    case 0:
        if (d->state == IBV_QPS_RESET) {
            fz_recv_refused(fz, d, FZ_F(ibv_post_recv, bad_state));
        } else if (d->state == IBV_QPS_INIT) {
            fz_post_rwrs(fz, d, fz_range(&fz->rnd, 1, 2), FZ_RWR_GOOD);
        }
        break;
    case 1:
        fz_send_chain(fz, d, fz_range(&fz->rnd, 1, 3), false, -1, 0);
        break;
    case 2:
        if (d->state == IBV_QPS_RESET) {
            fz_qp_to(fz, d, IBV_QPS_INIT, NULL);
        }
        break;
    default:
        break;
    }
}

static void op_modify_invalid(fz_t *fz)
{
    fz_qp_t *d = &fz->d;
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    int ret, mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                    IBV_QP_ACCESS_FLAGS;

    memset(&attr, 0, sizeof(attr));
    if (d->state == IBV_QPS_RESET) {
        attr.qp_state = IBV_QPS_INIT;
        attr.port_num = 1;
        switch (fz_range(&fz->rnd, 0, 3)) {
        case 0:
            attr.qp_state = IBV_QPS_RTS; /* skipping INIT and RTR */
            ret = FZ_BE(fz, modify_qp, d->qp, &attr, IBV_QP_STATE);
            fz_fails(fz, FZ_F(ibv_modify_qp, bad_transition), ret);
            break;
        case 1: /* a port the device does not have */
            attr.port_num = (uint8_t)(fz->dev.attr.phys_port_cnt + 1);
            ret = FZ_BE(fz, modify_qp, d->qp, &attr, mask);
            fz_fails(fz, FZ_F(ibv_modify_qp, value_out_of_range), ret);
            break;
        case 2: /* "it is in INIT": it is not */
            attr.cur_qp_state = IBV_QPS_INIT;
            ret = FZ_BE(fz, modify_qp, d->qp, &attr, mask | IBV_QP_CUR_STATE);
            fz_fails(fz, FZ_F(ibv_modify_qp, cur_state_mismatch), ret);
            break;
        default: /* a send PSN: not an attribute of RESET -> INIT */
            ret = FZ_BE(fz, modify_qp, d->qp, &attr, mask | IBV_QP_SQ_PSN);
            fz_fails(fz, FZ_F(ibv_modify_qp, not_allowed), ret);
            break;
        }
    } else {
        attr.qp_state = IBV_QPS_RTR; /* without the path, PSN, ... */
        ret = FZ_BE(fz, modify_qp, d->qp, &attr, IBV_QP_STATE);
        fz_fails(fz, FZ_F(ibv_modify_qp, missing_required), ret);
    }
    if (fz_ok(fz, "ibv_query_qp", FZ_BE(fz, query_qp, d->qp, &attr, IBV_QP_STATE, &init))) {
        fz_post(fz, FZ_P(ibv_modify_qp, nothing_on_failure), attr.qp_state == d->state,
                "d is in state %d after a failed modify, was %d", attr.qp_state,
                d->state);
    }
}

static void op_query(fz_t *fz)
{
    struct ibv_qp_init_attr init;
    struct ibv_srq_attr sa;
    struct ibv_qp_attr qa;
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;

    fz_drain(fz); /* a QP's state moves by itself on errors in flight */
    if (fz->broken) {
        return;
    }
    if (fz_ok(fz, "ibv_query_srq", FZ_BE(fz, query_srq, fz->srq, &sa))) {
        fz_post(fz, FZ_P(ibv_query_srq, caps_as_created),
                (sa.max_wr == fz->srq_m.cap) && (sa.max_sge == fz->srq_m.max_sge),
                "max_wr %u max_sge %u, created with %u %u", sa.max_wr, sa.max_sge,
                fz->srq_m.cap, fz->srq_m.max_sge);
        fz_post(fz, FZ_P(ibv_query_srq, limit_state), sa.srq_limit == fz->srq_m.limit,
                "srq_limit %u, armed %u", sa.srq_limit, fz->srq_m.limit);
    }
    if (fz_ok(fz, "ibv_query_qp", FZ_BE(fz, query_qp, q->qp, &qa,
                                        IBV_QP_STATE | IBV_QP_CAP, &init))) {
        fz_post(fz, FZ_P(ibv_query_qp, state_current), qa.qp_state == q->state,
                "%s is in state %d, expected %d", q->name, qa.qp_state, q->state);
        fz_post(fz, FZ_P(ibv_query_qp, caps),
                (init.cap.max_send_wr == q->cap.max_send_wr) &&
                (init.cap.max_send_sge == q->cap.max_send_sge) &&
                (init.cap.max_inline_data == q->cap.max_inline_data),
                "%s: caps differ from those of the create", q->name);
    }
}

/* ---- the SRQ limit ------------------------------------------------------ */

static void op_srq_limit(fz_t *fz)
{
    struct ibv_srq_attr attr, q;
    unsigned m, limit;
    int ret;

    fz_drain(fz);
    if (fz->broken || (fz->a.state != IBV_QPS_RTS) || (fz->srq_m.limit != 0)) {
        return;
    }
    memset(&attr, 0, sizeof(attr));
    switch (fz_range(&fz->rnd, 0, 3)) {
    case 0: /* over max_wr: refused, nothing changes */
        attr.srq_limit = fz->srq_m.cap + fz_range(&fz->rnd, 1, 10);
        fz_fails(fz, FZ_F(ibv_modify_srq, limit_over_max_wr),
                 FZ_BE(fz, modify_srq, fz->srq, &attr, IBV_SRQ_LIMIT));
        if (fz_ok(fz, "ibv_query_srq", FZ_BE(fz, query_srq, fz->srq, &q))) {
            fz_post(fz, FZ_P(ibv_modify_srq, nothing_on_failure), q.srq_limit == 0,
                    "srq_limit %u after a refused modify", q.srq_limit);
        }
        return;
    case 1: /* a mask with bits no attribute has */
        fz_fails(fz, FZ_F(ibv_modify_srq, mask_unknown),
                 FZ_BE(fz, modify_srq, fz->srq, &attr, 1 << 7));
        return;
    case 2:
        if (!(fz->dev.attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
            attr.max_wr = fz->srq_m.cap * 2;
            fz_fails(fz, FZ_F(ibv_modify_srq, resize_unsupported),
                     FZ_BE(fz, modify_srq, fz->srq, &attr, IBV_SRQ_MAX_WR));
            return;
        }
        /* fall through */
    default:
        break;
    }
    if (fz->srq_m.num < 2) {
        fz_post_rwrs(fz, NULL, 4, FZ_RWR_GOOD);
    }
    if (fz->srq_m.num < 2) {
        return;
    }
    limit = fz_range(&fz->rnd, 1, fz->srq_m.num);
    attr.srq_limit = limit;
    ret = FZ_BE(fz, modify_srq, fz->srq, &attr, IBV_SRQ_LIMIT);
    if (!fz_ok(fz, "ibv_modify_srq", ret)) {
        return;
    }
    fz->srq_m.limit       = limit;
    fz->srq_m.limit_fired = false;
    /* consume some: below the limit or not */
    m = fz_range(&fz->rnd, 0, fz_min(fz->srq_m.num, fz->a.cap.max_send_wr - fz->a.sq_num));
    fz_send_msgs(fz, &fz->a, m, false);
    fz_drain(fz);
    if (fz->broken) {
        return;
    }
    fz_post(fz, FZ_P(ibv_post_srq_recv, srq_limit_event),
            fz->srq_m.limit_fired == (fz->srq_m.num < limit),
            "limit %u, %u WRs left of %u: the limit event %s", limit,
            fz->srq_m.num, fz->srq_m.num + m,
            fz->srq_m.limit_fired ? "came" : "did not come");
    if (fz_ok(fz, "ibv_query_srq", FZ_BE(fz, query_srq, fz->srq, &q))) {
        fz_post(fz, FZ_P(ibv_modify_srq, limit_one_shot),
                q.srq_limit == (fz->srq_m.limit_fired ? 0 : limit),
                "srq_limit %u after the event %s", q.srq_limit,
                fz->srq_m.limit_fired ? "came" : "did not come");
    }
}

/* ---- errors: each ends with the pair a <-> b reconnected ----------------- */

static void op_error_local_lkey(fz_t *fz)
{
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;

    fz_drain(fz);
    if (fz->broken || (q->state != IBV_QPS_RTS)) {
        return;
    }
    q->may_err = true;
    fz_send_msgs(fz, q, fz_range(&fz->rnd, 1, fz_min(4, q->cap.max_send_wr)), true);
    fz_scene_recover(fz);
}

/* The next message lands in a receive WR that cannot take it: only such
 * WRs are posted, so whichever the device picks fails */
static void op_error_remote(fz_t *fz)
{
    bool to_srq = fz_chance(&fz->rnd, 50);
    fz_qp_t *from = to_srq ? &fz->a : &fz->b, *to = from->peer;
    fz_rq_t *rq = to_srq ? &fz->srq_m : &fz->rq_a;
    fz_rclass_t cls = fz_chance(&fz->rnd, 50) ? FZ_RWR_BAD_LKEY : FZ_RWR_SHORT;

    fz_drain(fz);
    if (fz->broken || (from->state != IBV_QPS_RTS) || (to->state != IBV_QPS_RTS)) {
        return;
    }
    /* use up the good WRs first */
    if (rq->num > from->cap.max_send_wr) {
        return;
    }
    fz_send_msgs(fz, from, rq->num, false);
    fz_drain(fz);
    if (fz->broken || (rq->num != 0)) {
        return;
    }
    if (fz_post_rwrs(fz, to_srq ? NULL : to, 1, cls) != 1) {
        return;
    }
    from->may_err = to->may_err = true;
    fz->min_msg_len = 64; /* longer than a short WR, and touching a key */
    fz_send_msgs(fz, from, 1, false);
    fz->min_msg_len = 0;
    fz_scene_recover(fz);
}

/* An RDMA write the target's MR does not allow: both ends go to error */
static void op_error_rkey(fz_t *fz)
{
    fz_qp_t *q = fz_chance(&fz->rnd, 50) ? &fz->a : &fz->b;

    fz_drain(fz);
    if (fz->broken || (q->state != IBV_QPS_RTS) || (q->peer->state != IBV_QPS_RTS)) {
        return;
    }
    q->may_err = q->peer->may_err = true;
    fz_send_rdma_denied(fz, q);
    fz_scene_recover(fz);
}

/* a to ERR: what it has posted flushes, what it is given flushes */
static void op_error_modify(fz_t *fz)
{
    fz_drain(fz);
    if (fz->broken || !fz_qp_modify_state(fz, &fz->a, IBV_QPS_ERR)) {
        return;
    }
    if (fz_chance(&fz->rnd, 50)) {
        fz_post_rwrs(fz, &fz->a, fz_range(&fz->rnd, 1, 4), FZ_RWR_GOOD);
    }
    if (fz_chance(&fz->rnd, 50)) {
        fz_send_msgs(fz, &fz->a, fz_range(&fz->rnd, 1, fz_min(4, fz->a.cap.max_send_wr)),
                     false);
    }
    fz_scene_recover(fz);
}

/* Destroying what is in use is refused, and the refused objects still
 * carry messages */
static void op_destroy_in_use(fz_t *fz)
{
    fz_teardown_in_use(fz);
    op_send(fz);
    fz_drain(fz);
}

static const struct {
    const char *name;
    unsigned    weight;
    void      (*fn)(fz_t *fz);
} fz_ops[] = {
    { "srq_recv",        14, op_srq_recv },
    { "srq_recv_bad",     4, op_srq_recv_bad },
    { "srq_recv_full",    2, op_srq_recv_full },
    { "rq_recv",          8, op_rq_recv },
    { "rq_recv_bad",      3, op_rq_recv_bad },
    { "rq_recv_full",     2, op_rq_recv_full },
    { "recv_on_srq_qp",   3, op_recv_on_srq_qp },
    { "send",            16, op_send },
    { "send_bad",         4, op_send_bad },
    { "send_full",        2, op_send_full },
    { "ud_send",          5, op_ud_send },
    { "send_unsupported", 3, op_send_unsupported },
    { "uc",               1, fz_uc },
    { "xrc",              1, fz_xrc },
    { "tm",               1, fz_tm },
    { "wrong_state",      4, op_wrong_state },
    { "modify_invalid",   2, op_modify_invalid },
    { "query",            3, op_query },
    { "srq_limit",        3, op_srq_limit },
    { "error_local_lkey", 2, op_error_local_lkey },
    { "error_remote",     2, op_error_remote },
    { "error_modify",     2, op_error_modify },
    { "error_rkey",       1, op_error_rkey },
    { "create_invalid",   3, fz_create_invalid },
    { "change",           2, fz_change },
    { "advise",           2, fz_advise },
    { "dm",               2, fz_dm },
    { "domain",           2, fz_domain },
    { "destroy_in_use",   1, op_destroy_in_use },
    { "drain",            6, fz_drain },
};

void fz_random_op(fz_t *fz)
{
    unsigned total = 0, i, r;

    for (i = 0; i < sizeof(fz_ops) / sizeof(fz_ops[0]); ++i) {
        total += fz_ops[i].weight;
    }
    r = fz_range(&fz->rnd, 0, total - 1);
    for (i = 0; r >= fz_ops[i].weight; ++i) {
        r -= fz_ops[i].weight;
    }
    fz_ops[i].fn(fz);
    if (fz->opts.verbose > 1) {
        printf("  op %s\n", fz_ops[i].name);
    }
}
