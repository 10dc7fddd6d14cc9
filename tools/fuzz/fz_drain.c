/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: waiting for the device: async events, receive queues
 * topped up for the messages in flight, and the drain that polls every CQ
 * until nothing the model expects is missing - each completion to the
 * send or the receive side's check.
 */
#include "fz.h"

#include <time.h>

/* Like an empty poll, a look that finds no event is counted apart */
void fz_async(fz_t *fz)
{
    struct ibv_async_event ev;

    while (fz->dev.be->get_async_event(&fz->dev, &ev) == 0) {
        ++fz->calls;
        if ((ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) &&
            (ev.element.srq == fz->srq)) {
            fz_post(fz, FZ_P(ibv_modify_srq, limit_one_shot),
                    fz->srq_m.limit != 0 && !fz->srq_m.limit_fired,
                    "IBV_EVENT_SRQ_LIMIT_REACHED with no limit armed");
            fz->srq_m.limit_fired = true;
            fz->srq_m.limit       = 0;
        }
        FZ_BE(fz, ack_async_event, &ev);
    }
    ++fz->idle_polls;
}

void fz_top_up(fz_t *fz)
{
    struct { fz_qp_t *q; fz_rq_t *rq; fz_qp_t *to; } t[] = {
        { NULL, &fz->srq_m, &fz->b }, { &fz->a, &fz->rq_a, &fz->a },
        { &fz->ua, &fz->rq_u, &fz->ua },
    };
    unsigned i;

    for (i = 0; i < sizeof(t) / sizeof(t[0]); ++i) {
        if ((t[i].to->state == IBV_QPS_ERR) || (t[i].rq->num >= t[i].to->in_num)) {
            continue;
        }
        fz_post_rwrs(fz, t[i].q, t[i].to->in_num - t[i].rq->num, FZ_RWR_GOOD);
    }
}

static long fz_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Nothing left that the model waits for? */
static bool fz_settled(fz_t *fz)
{
    fz_qp_t *qps[] = { &fz->a, &fz->b, &fz->ua, &fz->ub };
    unsigned i, j;

    for (i = 0; i < sizeof(qps) / sizeof(qps[0]); ++i) {
        if (qps[i]->sq_num != 0) {
            return false;
        }
        /* messages still to come: those not known to have failed */
        for (j = 0; j < qps[i]->in_num; ++j) {
            if ((qps[i]->in[j].send_status < 0) ||
                (qps[i]->in[j].send_status == IBV_WC_SUCCESS)) {
                return false;
            }
        }
        if ((qps[i]->state == IBV_QPS_ERR) && (qps[i]->rq != NULL) &&
            (qps[i]->rq->num != 0)) {
            return false; /* flushes to come */
        }
    }
    return true;
}

static void fz_dispatch(fz_t *fz, struct ibv_cq *cq, const struct ibv_wc *wc)
{
    fz_qp_t *q = fz_qp_by_num(fz, wc->qp_num);

    if (!fz_post(fz, FZ_P(ibv_poll_cq, valid_fields), q != NULL,
                 "a completion (wr_id 0x%llx, %s) with qp_num %u, no QP's",
                 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
                 wc->qp_num)) {
        fz->broken = true;
        return;
    }
    if (cq == fz->scq) {
        fz_send_wc(fz, q, wc);
    } else {
        fz_recv_wc(fz, q, wc);
    }
}

static bool fz_poll_all(fz_t *fz)
{
    struct ibv_cq *cqs[] = { fz->scq, fz->rcq_srq, fz->rcq_rq, fz->ucq };
    struct ibv_wc wc[16];
    bool any = false;
    unsigned c;
    int n, i, max;

    for (c = 0; c < sizeof(cqs) / sizeof(cqs[0]); ++c) {
        max = (int)fz_range(&fz->rnd, 1, 16);
        n   = fz_poll(fz, cqs[c], max, wc);
        if (n != 0) {
            fz_post(fz, FZ_P(ibv_poll_cq, count_bounded), (n > 0) && (n <= max),
                    "ibv_poll_cq(%d) returned %d", max, n);
        }
        for (i = 0; (i < n) && (i < max) && !fz->broken; ++i) {
            fz_dispatch(fz, cqs[c], &wc[i]);
            any = true;
        }
    }
    return any;
}

void fz_drain(fz_t *fz)
{
    long deadline = fz_now_ms() + FZ_WAIT_MS;
    fz_qp_t *qps[] = { &fz->a, &fz->b, &fz->ua, &fz->ub };
    unsigned i, j;

    while (!fz->broken && !fz_settled(fz)) {
        fz_top_up(fz);
        if (!fz_poll_all(fz) && (fz_now_ms() > deadline)) {
            for (i = 0; i < sizeof(qps) / sizeof(qps[0]); ++i) {
                if (qps[i]->sq_num || qps[i]->in_num) {
                    fz_violation(fz, "completions", "%s: %u send WRs and %u "
                                 "messages still outstanding after %d ms",
                                 qps[i]->name, qps[i]->sq_num, qps[i]->in_num,
                                 FZ_WAIT_MS);
                }
                if ((qps[i]->state == IBV_QPS_ERR) && (qps[i]->rq != NULL) &&
                    (qps[i]->rq->num != 0)) {
                    fz_violation(fz, "completions", "%s is in error, but %u "
                                 "of its receive WRs did not flush in %d ms",
                                 qps[i]->name, qps[i]->rq->num, FZ_WAIT_MS);
                }
            }
            fz->broken = true;
        }
        fz_async(fz);
    }
    if (fz->broken) {
        return;
    }
    /* nothing more may come */
    fz_poll_all(fz);
    fz_async(fz);
    for (i = 0; i < sizeof(qps) / sizeof(qps[0]); ++i) {
        for (j = 0; j < qps[i]->in_num; ++j) {
            fz_post(fz, FZ_P(ibv_post_send, rc_in_order),
                    qps[i]->in[j].send_status != IBV_WC_SUCCESS,
                    "message %u to %s completed at its sender but never arrived",
                    qps[i]->in[j].seq, qps[i]->name);
        }
        qps[i]->in_num = 0;
    }
}
