/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: the objects of an iteration. Sizes are random (seeded);
 * every create is checked against its contract's post-conditions.
 *
 *   a <-> b   RC, connected to each other; a has its own receive queue,
 *             b receives from the SRQ
 *   ub -> ua  UD; ua has its own receive queue, ub (which nothing sends
 *             to) is on the SRQ too
 *   d         RC with its own receive queue, left in RESET (wrong state)
 *
 * The SRQ, the QPs and the AH are in fz->qpd: the PD, or some iterations a
 * parent domain on it (fz_domain.c); the MRs are always the PD's.
 */
#include "fz.h"

#include <stdlib.h>
#include <string.h>

#define FZ_QKEY       0x11111111u

static struct ibv_cq *fz_cq(fz_t *fz, int cqe)
{
    struct ibv_cq *cq = FZ_BE(fz, create_cq, cqe);

    if (cq == NULL) {
        fz_ok(fz, "ibv_create_cq", errno ? errno : -1);
    } else {
        fz_post(fz, FZ_P(ibv_create_cq, size_at_least), cq->cqe >= cqe,
                "cqe %d for %d asked", cq->cqe, cqe);
    }
    return cq;
}

static bool fz_query_state(fz_t *fz, fz_qp_t *q, enum ibv_qp_state *state)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;

    if (!fz_ok(fz, "ibv_query_qp", FZ_BE(fz, query_qp, q->qp, &attr,
                                         IBV_QP_STATE | IBV_QP_CAP, &init))) {
        return false;
    }
    *state = attr.qp_state;
    return true;
}

/* The QP as ibv_create_qp_ex makes it, with the ibv_wr_* API for its
 * SENDs (@attr's cap updated as ibv_create_qp updates it) */
static struct ibv_qp *fz_qp_create_ex(fz_t *fz, struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex x;
    struct ibv_qp *qp;

    memset(&x, 0, sizeof(x));
    memcpy(&x, attr, sizeof(*attr));
    x.comp_mask      = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    x.pd             = fz->qpd;
    x.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    qp = FZ_BE(fz, create_qp_ex, &x);
    if (qp != NULL) {
        attr->cap = x.cap;
        fz_post(fz, FZ_P(ibv_create_qp_ex, qp_ex), ibv_qp_to_qp_ex(qp) != NULL,
                "a QP created with send_ops_flags has no struct ibv_qp_ex");
    }
    return qp;
}

static bool fz_qp_create(fz_t *fz, fz_qp_t *q, const char *name,
                         enum ibv_qp_type type, struct ibv_cq *rcq,
                         fz_rq_t *rq, unsigned send_wr, unsigned recv_wr)
{
    struct ibv_qp_init_attr attr;
    enum ibv_qp_state state;
    bool ex;

    memset(q, 0, sizeof(*q));
    memset(&attr, 0, sizeof(attr));
    attr.send_cq             = fz->scq;
    attr.recv_cq             = rcq;
    attr.srq                 = (rq == NULL) ? fz->srq : NULL;
    attr.qp_type             = type;
    attr.cap.max_send_wr     = send_wr;
    attr.cap.max_recv_wr     = recv_wr;
    attr.cap.max_send_sge    = fz_range(&fz->rnd, 1, FZ_MAX_SGE);
    attr.cap.max_recv_sge    = fz_range(&fz->rnd, 1, FZ_MAX_SGE);
    attr.cap.max_inline_data = fz_range(&fz->rnd, 0, 2) * 64;
    /* the trace records no ibv_wr_* post (doc/soft0.md): a traced run
     * keeps to what its replay makes again (and draws the same numbers) */
    ex    = fz_chance(&fz->rnd, 50) && (getenv("SRQ_VERBS_TRACE") == NULL);
    q->qp = ex ? fz_qp_create_ex(fz, &attr) :
                 FZ_BE(fz, create_qp, fz->qpd, &attr);
    if (q->qp == NULL) {
        return fz_ok(fz, "ibv_create_qp", errno ? errno : -1);
    }
    q->qpx = ibv_qp_to_qp_ex(q->qp);
    fz_post(fz, FZ_P(ibv_create_qp, caps_at_least),
            (attr.cap.max_send_wr >= send_wr) &&
            ((rq == NULL) || (attr.cap.max_recv_wr >= recv_wr)),
            "%s: cap max_send_wr %u max_recv_wr %u for %u %u asked", name,
            attr.cap.max_send_wr, attr.cap.max_recv_wr, send_wr, recv_wr);
    q->name  = name;
    q->type  = type;
    q->state = IBV_QPS_RESET;
    q->cap   = attr.cap;
    q->scq   = fz->scq;
    q->rcq   = rcq;
    q->rq    = rq;
    q->srq   = (rq == NULL) ? &fz->srq_m : NULL;
    q->sq    = calloc(attr.cap.max_send_wr + 8, sizeof(*q->sq));
    q->in    = calloc(1024, sizeof(*q->in));
    if (rq != NULL) {
        rq->name    = name;
        rq->cap     = attr.cap.max_recv_wr;
        rq->max_sge = attr.cap.max_recv_sge;
        rq->num     = 0;
        rq->wr      = calloc(rq->cap + 8, sizeof(*rq->wr));
    }
    if (fz_query_state(fz, q, &state)) {
        fz_post(fz, FZ_P(ibv_create_qp, state_reset), state == IBV_QPS_RESET,
                "%s is in state %d", name, state);
    }
    return (q->sq != NULL) && (q->in != NULL);
}

/* One transition with the attributes the QP type requires */
static int fz_qp_step(fz_t *fz, fz_qp_t *q, enum ibv_qp_state to,
                      fz_qp_t *peer)
{
    struct ibv_qp_attr a;
    int mask = IBV_QP_STATE;

    memset(&a, 0, sizeof(a));
    a.qp_state = to;
    if (to == IBV_QPS_INIT) {
        a.port_num        = 1;
        a.pkey_index      = 0;
        mask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
        if (q->type == IBV_QPT_UD) {
            a.qkey = FZ_QKEY;
            mask  |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
    } else if ((to == IBV_QPS_RTR) && (q->type == IBV_QPT_RC)) {
        fz->dev.be->self_ah_attr(&fz->dev, &a.ah_attr);
        a.path_mtu           = IBV_MTU_1024;
        a.dest_qp_num        = peer->qp->qp_num;
        a.rq_psn             = peer->psn;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer      = 1;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    } else if (to == IBV_QPS_RTS) {
        a.sq_psn = q->psn;
        mask    |= IBV_QP_SQ_PSN;
        if (q->type == IBV_QPT_RC) {
            a.timeout       = 14;
            a.retry_cnt     = 7;
            a.rnr_retry     = 7;  /* forever: a dry queue only delays */
            a.max_rd_atomic = 1;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC;
        }
    }
    return FZ_BE(fz, modify_qp, q->qp, &a, mask);
}

bool fz_qp_to(fz_t *fz, fz_qp_t *q, enum ibv_qp_state to, fz_qp_t *peer)
{
    if (!fz_ok(fz, "ibv_modify_qp", fz_qp_step(fz, q, to, peer))) {
        return false;
    }
    q->state = to;
    return true;
}

bool fz_qp_to_rts(fz_t *fz, fz_qp_t *q, fz_qp_t *peer)
{
    return fz_qp_to(fz, q, IBV_QPS_INIT, peer) &&
           fz_qp_to(fz, q, IBV_QPS_RTR, peer) &&
           fz_qp_to(fz, q, IBV_QPS_RTS, peer);
}

bool fz_qp_modify_state(fz_t *fz, fz_qp_t *q, enum ibv_qp_state to)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = to;
    if (!fz_ok(fz, "ibv_modify_qp", FZ_BE(fz, modify_qp, q->qp, &a,
                                          IBV_QP_STATE))) {
        return false;
    }
    q->state = to;
    return true;
}

static bool fz_srq_create(fz_t *fz)
{
    struct ibv_srq_init_attr attr;
    struct ibv_srq_attr q;
    uint32_t want_wr  = fz_range(&fz->rnd, 4, 48);
    uint32_t want_sge = fz_range(&fz->rnd, 1, FZ_MAX_SGE);

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr    = want_wr;
    attr.attr.max_sge   = want_sge;
    attr.attr.srq_limit = fz_range(&fz->rnd, 0, 3); /* ignored */
    fz->srq = FZ_BE(fz, create_srq, fz->qpd, &attr);
    if (fz->srq == NULL) {
        return fz_ok(fz, "ibv_create_srq", errno ? errno : -1);
    }
    fz_post(fz, FZ_P(ibv_create_srq, caps_at_least),
            (attr.attr.max_wr >= want_wr) && (attr.attr.max_sge >= want_sge),
            "max_wr %u max_sge %u for %u %u asked", attr.attr.max_wr,
            attr.attr.max_sge, want_wr, want_sge);
    memset(&fz->srq_m, 0, sizeof(fz->srq_m));
    fz->srq_m.name    = "srq";
    fz->srq_m.cap     = attr.attr.max_wr;
    fz->srq_m.max_sge = attr.attr.max_sge;
    fz->srq_m.wr      = calloc(attr.attr.max_wr + 8, sizeof(*fz->srq_m.wr));
    if (fz_ok(fz, "ibv_query_srq", FZ_BE(fz, query_srq, fz->srq, &q))) {
        fz_post(fz, FZ_P(ibv_create_srq, limit_disarmed), q.srq_limit == 0,
                "a new SRQ has srq_limit %u", q.srq_limit);
    }
    return fz->srq_m.wr != NULL;
}

/* The receive region: zero-based and on-demand paging half the time
 * each, where the device has them (EOPNOTSUPP: it has not; ODP goes
 * first) */
static struct ibv_mr *fz_scene_reg_mr(fz_t *fz)
{
    struct ibv_mr *mr;

    fz->mr_zero_based = fz_chance(&fz->rnd, 50);
    fz->mr_odp        = fz_chance(&fz->rnd, 50);
    for (;;) {
        mr = FZ_BE(fz, reg_mr, fz->pd, fz->buf,
                   (size_t)FZ_NUM_SLOTS * FZ_SLOT_SIZE, IBV_ACCESS_LOCAL_WRITE |
                   (fz->mr_zero_based ? IBV_ACCESS_ZERO_BASED : 0) |
                   (fz->mr_odp ? IBV_ACCESS_ON_DEMAND : 0));
        if ((mr != NULL) || (errno != EOPNOTSUPP)) {
            return mr;
        }
        if (fz->mr_odp) {
            fz->mr_odp = false;
        } else if (fz->mr_zero_based) {
            fz->mr_zero_based = false;
        } else {
            return NULL;
        }
    }
}

int fz_scene_create(fz_t *fz)
{
    struct ibv_ah_attr ah_attr;
    struct ibv_mr *dead;
    unsigned sq;

    memset(fz->slot_busy, 0, sizeof(fz->slot_busy));
    fz->pd = FZ_BE(fz, alloc_pd);
    if (fz->pd == NULL) {
        return fz_ok(fz, "ibv_alloc_pd", errno ? errno : -1) ? 0 : -1;
    }
    fz->buf  = aligned_alloc(4096, (size_t)FZ_NUM_SLOTS * FZ_SLOT_SIZE);
    fz->sbuf = aligned_alloc(4096, FZ_SEND_AREA);
    if ((fz->buf == NULL) || (fz->sbuf == NULL)) {
        return -1;
    }
    if (!fz_domain_scene_create(fz)) {
        return -1;
    }
    fz->mr  = fz_scene_reg_mr(fz);
    fz->smr = FZ_BE(fz, reg_mr, fz->pd, fz->sbuf, FZ_SEND_AREA,
                    IBV_ACCESS_LOCAL_WRITE);
    dead    = FZ_BE(fz, reg_mr, fz->pd, fz->sbuf, 4096, 0);
    if ((fz->mr == NULL) || (fz->smr == NULL) || (dead == NULL)) {
        return fz_ok(fz, "ibv_reg_mr", errno ? errno : -1) ? 0 : -1;
    }
    /* a key that was an MR's: it grants nothing once deregistered */
    fz->dead_lkey = dead->lkey;
    if (!fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, dead))) {
        return -1;
    }
    fz->scq     = fz_cq(fz, 1024);
    fz->rcq_srq = fz_cq(fz, 1024);
    fz->rcq_rq  = fz_cq(fz, 1024);
    fz->ucq     = fz_cq(fz, 1024);
    if (!fz->scq || !fz->rcq_srq || !fz->rcq_rq || !fz->ucq || !fz_srq_create(fz)) {
        return -1;
    }
    /* a send queue never holds more messages than the SRQ can take */
    sq = fz_range(&fz->rnd, 2, fz->srq_m.cap < 32 ? fz->srq_m.cap : 32);
    if (!fz_qp_create(fz, &fz->a, "a", IBV_QPT_RC, fz->rcq_rq, &fz->rq_a, sq,
                      fz_range(&fz->rnd, 2, 32)) ||
        !fz_qp_create(fz, &fz->b, "b", IBV_QPT_RC, fz->rcq_srq, NULL, sq, 0) ||
        !fz_qp_create(fz, &fz->ua, "ua", IBV_QPT_UD, fz->ucq, &fz->rq_u, 4,
                      fz_range(&fz->rnd, 2, 32)) ||
        !fz_qp_create(fz, &fz->ub, "ub", IBV_QPT_UD, fz->ucq, NULL,
                      fz_range(&fz->rnd, 2, 16), 0) ||
        !fz_qp_create(fz, &fz->d, "d", IBV_QPT_RC, fz->rcq_rq, &fz->rq_d,
                      4, fz_range(&fz->rnd, 2, 8))) {
        return -1;
    }
    fz->a.peer  = &fz->b;
    fz->b.peer  = &fz->a;
    fz->ub.peer = &fz->ua;
    fz->d.peer  = &fz->d;   /* nothing it is given may go anywhere */
    fz->ua.peer_src = fz->ub.qp->qp_num;
    fz->a.psn   = fz_range(&fz->rnd, 0, 0xffffff);
    fz->b.psn   = fz_range(&fz->rnd, 0, 0xffffff);
    if (!fz_qp_to_rts(fz, &fz->a, &fz->b) || !fz_qp_to_rts(fz, &fz->b, &fz->a) ||
        !fz_qp_to_rts(fz, &fz->ua, NULL) || !fz_qp_to_rts(fz, &fz->ub, NULL)) {
        return -1;
    }
    if (!fz_ok(fz, "self address", fz->dev.be->self_ah_attr(&fz->dev, &ah_attr))) {
        return -1;
    }
    fz->ah = FZ_BE(fz, create_ah, fz->qpd, &ah_attr);
    return (fz->ah != NULL) ? 0 : (fz_ok(fz, "ibv_create_ah", errno ? errno : -1), -1);
}

void fz_scene_recover(fz_t *fz)
{
    fz_drain(fz);
    if (fz->broken) {
        return;
    }
    if (!fz_qp_modify_state(fz, &fz->a, IBV_QPS_RESET) ||
        !fz_qp_modify_state(fz, &fz->b, IBV_QPS_RESET)) {
        return;
    }
    /* RESET empties the queues without completions: a's buffers are ours */
    fz_rq_drop(fz, &fz->rq_a);
    fz->a.sq_num = fz->b.sq_num = 0;
    fz->a.in_num = fz->b.in_num = 0;
    fz->a.sq_error = fz->b.sq_error = false;
    fz->a.may_err  = fz->b.may_err  = false;
    fz->a.psn = fz_range(&fz->rnd, 0, 0xffffff);
    fz->b.psn = fz_range(&fz->rnd, 0, 0xffffff);
    if (fz_qp_to_rts(fz, &fz->a, &fz->b)) {
        fz_qp_to_rts(fz, &fz->b, &fz->a);
    }
}

static void fz_qp_free(fz_t *fz, fz_qp_t *q)
{
    if (q->qp != NULL) {
        fz_ok(fz, "ibv_destroy_qp", FZ_BE(fz, destroy_qp, q->qp));
        q->qp = NULL;
    }
    free(q->sq);
    free(q->in);
    q->sq = NULL;
    q->in = NULL;
}

/* Receive buffers of WRs never consumed: the device must not have written
 * them (a posted buffer is the device's, but only a message may fill it) */
static void fz_check_untouched(fz_t *fz, fz_rq_t *rq)
{
    unsigned i, j;
    uint8_t *p;

    for (i = 0; i < rq->num; ++i) {
        p = fz_slot_addr(fz, rq->wr[i].slot);
        for (j = 0; (j < FZ_SLOT_SIZE) && (p[j] == FZ_CANARY); ++j) {
        }
        fz_post(fz, FZ_P(ibv_post_srq_recv, consumed_once), j == FZ_SLOT_SIZE,
                "%s: the buffer of wr_id 0x%llx, never consumed, was written "
                "at offset %u", rq->name, (unsigned long long)rq->wr[i].wr_id, j);
    }
}

void fz_scene_destroy(fz_t *fz)
{
    fz_qp_t *qps[] = { &fz->a, &fz->b, &fz->ua, &fz->ub, &fz->d };
    fz_rq_t *rqs[] = { &fz->srq_m, &fz->rq_a, &fz->rq_u, &fz->rq_d };
    struct ibv_cq *cqs[] = { fz->scq, fz->rcq_srq, fz->rcq_rq, fz->ucq };
    unsigned i;

    if (!fz->broken) {
        for (i = 0; i < sizeof(rqs) / sizeof(rqs[0]); ++i) {
            fz_check_untouched(fz, rqs[i]);
        }
    }
    for (i = 0; i < sizeof(qps) / sizeof(qps[0]); ++i) {
        fz_qp_free(fz, qps[i]);
    }
    if (fz->ah != NULL) {
        fz_ok(fz, "ibv_destroy_ah", FZ_BE(fz, destroy_ah, fz->ah));
    }
    if (fz->srq != NULL) {
        fz_ok(fz, "ibv_destroy_srq", FZ_BE(fz, destroy_srq, fz->srq));
    }
    for (i = 0; i < sizeof(cqs) / sizeof(cqs[0]); ++i) {
        if (cqs[i] != NULL) {
            fz_ok(fz, "ibv_destroy_cq", FZ_BE(fz, destroy_cq, cqs[i]));
        }
    }
    if (fz->mr != NULL) {
        fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, fz->mr));
    }
    if (fz->smr != NULL) {
        fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, fz->smr));
    }
    fz_domain_scene_destroy(fz);
    if (fz->pd != NULL) {
        fz_ok(fz, "ibv_dealloc_pd", FZ_BE(fz, dealloc_pd, fz->pd));
    }
    for (i = 0; i < sizeof(rqs) / sizeof(rqs[0]); ++i) {
        free(rqs[i]->wr);
    }
    free(fz->buf);
    free(fz->sbuf);
    fz->ah = NULL; fz->srq = NULL; fz->mr = fz->smr = NULL; fz->pd = NULL;
    fz->scq = fz->rcq_srq = fz->rcq_rq = fz->ucq = NULL;
    fz->buf = fz->sbuf = NULL;
    memset(rqs[0], 0, sizeof(*rqs[0]));
    for (i = 1; i < sizeof(rqs) / sizeof(rqs[0]); ++i) {
        memset(rqs[i], 0, sizeof(*rqs[i]));
    }
}
