/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the QP state machine.
 *
 * State transitions follow the IB spec's table (required and optional
 * attributes per transition); anything else is EINVAL. SQD/SQE are not
 * implemented (EOPNOTSUPP). Entering the error state, by ibv_modify_qp or
 * by a failure the completer or responder sees, flushes the QP.
 *
 * The device's state is qp->state. The public ibv_qp.state is what the
 * program last learned: an HCA's provider writes it only in ibv_modify_qp
 * and ibv_query_qp, and programs (UCX's rc_verbs) assert on it, so a QP that
 * fails on its own leaves it as it was.
 */
#include "soft_qp_state.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_qpn.h"
#include "soft_ah.h"
#include "soft_async.h"
#include "soft_cq.h"
#include "soft_dev.h"
#include "soft_port.h"
#include "soft_qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* IB spec table 45 (RNR NAK timer field), in units of 10 us */
static const uint32_t srq_soft_rnr_10us[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
    512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
    32768, 49152
};


uint64_t srq_soft_rnr_timer_ns(uint8_t code)
{
    return (uint64_t)srq_soft_rnr_10us[code & 31] * 10000ull;
}

/* Local ACK timeout: 4.096 us * 2^code; 0 means wait forever */
uint64_t srq_soft_timeout_ns(uint8_t code)
{
    return (code == 0) ? UINT64_MAX : (4096ull << (code & 31));
}

typedef struct srq_soft_qp_trans {
    enum ibv_qp_state  from, to;
    int                rc_req, rc_opt, ud_req, ud_opt, uc_req, uc_opt;
} srq_soft_qp_trans_t;

#define SRQ_SOFT_RTS_OPT_RC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
                             IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH | \
                             IBV_QP_PATH_MIG_STATE)
/* UC has no ACKs, no retries, no RNR and no READ/atomics: none of their
 * attributes (the kernel's ib_modify_qp_is_ok table) */
#define SRQ_SOFT_RTS_OPT_UC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
                             IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)

static const srq_soft_qp_trans_t srq_soft_qp_trans[] = {
    { IBV_QPS_RESET, IBV_QPS_INIT,
      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0,
      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0 },
    { IBV_QPS_INIT, IBV_QPS_INIT,
      0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
      0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
      0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
    { IBV_QPS_INIT, IBV_QPS_RTR,
      IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
      IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
      0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
      IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
      IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX },
    { IBV_QPS_RTR, IBV_QPS_RTS,
      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
      IBV_QP_MAX_QP_RD_ATOMIC, SRQ_SOFT_RTS_OPT_RC,
      IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY,
      IBV_QP_SQ_PSN, SRQ_SOFT_RTS_OPT_UC },
    { IBV_QPS_RTS, IBV_QPS_RTS,
      0, SRQ_SOFT_RTS_OPT_RC,
      0, IBV_QP_CUR_STATE | IBV_QP_QKEY,
      0, SRQ_SOFT_RTS_OPT_UC },
};

/* What RC requires that an XRC initiator (no responder) or target (no
 * requester) does not */
static int srq_soft_xrc_unneeded(enum ibv_qp_type type)
{
    return (type == IBV_QPT_XRC_SEND) ?
           (IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) :
           (IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int srq_soft_qp_check_mask(srq_soft_qp_t *qp, enum ibv_qp_state from,
                                  enum ibv_qp_state to, int mask)
{
    const srq_soft_qp_trans_t *t;
    int req, opt;
    size_t i;

    mask &= ~IBV_QP_STATE;
    if ((to == IBV_QPS_RESET) || (to == IBV_QPS_ERR)) {
        return (mask & ~IBV_QP_CUR_STATE) ? EINVAL : 0;
    }
    for (i = 0; i < sizeof(srq_soft_qp_trans) / sizeof(*t); ++i) {
        t = &srq_soft_qp_trans[i];
        if ((t->from != from) || (t->to != to)) {
            continue;
        }
        switch (qp->ibv.qp_type) {
        case IBV_QPT_RC: req = t->rc_req; opt = t->rc_opt; break;
        case IBV_QPT_XRC_SEND:
        case IBV_QPT_XRC_RECV:
            /* RC's, less what the half an XRC QP lacks needs (the
             * kernel's table): may be given, need not */
            req = t->rc_req & ~srq_soft_xrc_unneeded(qp->ibv.qp_type);
            opt = t->rc_opt | (t->rc_req & ~req);
            break;
        case IBV_QPT_UC: req = t->uc_req; opt = t->uc_opt; break;
        default:         req = t->ud_req; opt = t->ud_opt; break;
        }
        opt |= IBV_QP_CUR_STATE;
        return (((mask & req) != req) || (mask & ~(req | opt))) ? EINVAL : 0;
    }
    return EINVAL; /* not a transition of the IB state machine */
}

/* A QP's access flags: the remote operations it allows, and the bits of
 * a region's access that mean nothing for a QP and that HCAs ignore there
 * (rdma-core's ODP tests pass their regions' access, ON_DEMAND included) */
#define SRQ_SOFT_QP_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | \
                                  IBV_ACCESS_REMOTE_WRITE | \
                                  IBV_ACCESS_REMOTE_READ | \
                                  IBV_ACCESS_REMOTE_ATOMIC | \
                                  IBV_ACCESS_ON_DEMAND)

static int srq_soft_qp_check_values(const struct ibv_qp_attr *a, int mask)
{
    if (((mask & IBV_QP_PORT) && (a->port_num != 1)) ||
        ((mask & IBV_QP_PKEY_INDEX) && (a->pkey_index != 0)) ||
        ((mask & IBV_QP_PATH_MTU) &&
         ((a->path_mtu < IBV_MTU_256) || (a->path_mtu > IBV_MTU_4096))) ||
        ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num > 0xffffff)) ||
        ((mask & IBV_QP_RQ_PSN) && (a->rq_psn > 0xffffff)) ||
        ((mask & IBV_QP_SQ_PSN) && (a->sq_psn > 0xffffff)) ||
        ((mask & IBV_QP_RNR_RETRY) && (a->rnr_retry > 7)) ||
        ((mask & IBV_QP_RETRY_CNT) && (a->retry_cnt > 7)) ||
        ((mask & IBV_QP_TIMEOUT) && (a->timeout > 31)) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && (a->min_rnr_timer > 31)) ||
        ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
         (a->max_rd_atomic > SRQ_SOFT_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
         (a->max_dest_rd_atomic > SRQ_SOFT_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_ACCESS_FLAGS) &&
         (a->qp_access_flags & ~SRQ_SOFT_QP_ACCESS_KNOWN))) {
        return EINVAL;
    }
    return 0;
}

static int srq_soft_qp_connect(srq_soft_qp_t *qp, const struct ibv_qp_attr *a)
{
    uint8_t addr[SRQ_SOFT_INST_LEN], inst[SRQ_SOFT_INST_LEN];
    srq_soft_peer_t *peer;
    int ret;

    ret = srq_soft_ah_addr(&a->ah_attr, addr);
    if (ret != 0) {
        return ret;
    }
    /* a connection is to one QP: its instance, now. No live QP of that
     * number at that port: any instance of the port, which drops what is
     * sent (the requester times out, as on an HCA); a port with no QP at
     * all is unreachable */
    if ((srq_soft_ah_route(addr, a->dest_qp_num, inst) != 0) &&
        (srq_soft_qpn_any_owner(addr, SRQ_SOFT_PORT_SERIAL_OFF, inst) != 0)) {
        return EHOSTUNREACH;
    }
    peer = srq_soft_peer_get(&qp->dev->fab, inst);
    if (peer == NULL) {
        return errno;
    }
    qp->peer = peer;
    srq_soft_list_add_tail(&peer->qps, &qp->peer_link);
    return 0;
}

static void srq_soft_qp_save_attr(srq_soft_qp_t *qp,
                                  const struct ibv_qp_attr *a, int mask)
{
    struct ibv_qp_attr *s = &qp->attr;

#define SRQ_SOFT_SAVE(_flag, _field) \
    if (mask & (_flag)) { s->_field = a->_field; }
    SRQ_SOFT_SAVE(IBV_QP_PKEY_INDEX, pkey_index);
    SRQ_SOFT_SAVE(IBV_QP_PORT, port_num);
    SRQ_SOFT_SAVE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
    SRQ_SOFT_SAVE(IBV_QP_QKEY, qkey);
    SRQ_SOFT_SAVE(IBV_QP_AV, ah_attr);
    SRQ_SOFT_SAVE(IBV_QP_PATH_MTU, path_mtu);
    SRQ_SOFT_SAVE(IBV_QP_DEST_QPN, dest_qp_num);
    SRQ_SOFT_SAVE(IBV_QP_RQ_PSN, rq_psn);
    SRQ_SOFT_SAVE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    SRQ_SOFT_SAVE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
    SRQ_SOFT_SAVE(IBV_QP_TIMEOUT, timeout);
    SRQ_SOFT_SAVE(IBV_QP_RETRY_CNT, retry_cnt);
    SRQ_SOFT_SAVE(IBV_QP_RNR_RETRY, rnr_retry);
    SRQ_SOFT_SAVE(IBV_QP_SQ_PSN, sq_psn);
    SRQ_SOFT_SAVE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
    SRQ_SOFT_SAVE(IBV_QP_ALT_PATH, alt_ah_attr);
    SRQ_SOFT_SAVE(IBV_QP_PATH_MIG_STATE, path_mig_state);
#undef SRQ_SOFT_SAVE
    qp->attr_mask |= mask;
}

/* RESET: every WQE is discarded without a completion (IB spec), and the
 * completions not yet polled go too, as on an HCA */
static void srq_soft_qp_reset(srq_soft_qp_t *qp)
{
    srq_soft_qp_unpeer(qp);
    qp->sq_pi = qp->sq_tx = qp->sq_ci = qp->sq_free = 0;
    qp->tm_fins = 0;
    srq_soft_lock(&qp->sq_lock); /* as the receive queue's, below */
    qp->sq_post = 0;
    atomic_store((_Atomic uint32_t*)&qp->sq_db, 0);
    srq_soft_unlock(&qp->sq_lock);
    srq_soft_lock(&qp->rq_lock); /* a post racing the reset */
    qp->rq_pi = qp->rq_hw = qp->rq_ci = 0;
    srq_soft_unlock(&qp->rq_lock);
    /* the responder's kept results belong to the old connection */
    srq_soft_qp_free_atomics(qp);
    memset(&qp->attr, 0, sizeof(qp->attr));
    qp->attr_mask = 0;
    qp->comm_est  = false;
    srq_soft_cq_clean_qp(srq_soft_cq(qp->ibv.recv_cq), qp->ibv.qp_num);
    srq_soft_cq_clean_qp(srq_soft_cq(qp->ibv.send_cq), qp->ibv.qp_num);
}

static void srq_soft_qp_flush_rq(srq_soft_qp_t *qp)
{
    srq_soft_cq_t *cq = srq_soft_cq(qp->ibv.recv_cq);
    srq_soft_cqe_t *cqe;

    for (; qp->rq_hw != srq_soft_qp_rq_posted(qp); ++qp->rq_hw) {
        cqe = srq_soft_cq_push(cq, true);
        if (cqe == NULL) {
            continue;
        }
        cqe->wc.wr_id  = qp->rq[qp->rq_hw & qp->rq_mask].wr_id;
        cqe->wc.status = IBV_WC_WR_FLUSH_ERR;
        cqe->wc.opcode = IBV_WC_RECV;
        cqe->wc.qp_num = qp->ibv.qp_num;
        cqe->rq_ci_p   = &qp->rq_ci; /* the slot is free once this is polled */
        srq_soft_cq_push_done(cq);
    }
}

/* The QP is in error: complete everything it holds */
void srq_soft_qp_flush(srq_soft_qp_t *qp)
{
    srq_soft_swqe_t *wqe;

    (void)srq_soft_qp_sq_absorb(qp); /* what posts published: flushed too */
    for (; qp->sq_ci != qp->sq_pi; ++qp->sq_ci) {
        wqe = &qp->sq[qp->sq_ci & qp->sq_mask];
        srq_soft_qp_send_cqe(qp, wqe, (wqe->state == SRQ_SOFT_SWQE_DONE) ?
                                      wqe->status : IBV_WC_WR_FLUSH_ERR);
    }
    qp->sq_tx = qp->sq_ci;
    if (qp->ibv.srq == NULL) {
        srq_soft_qp_flush_rq(qp);
    }
    srq_soft_qp_busy(qp, false);
}

void srq_soft_qp_to_error(srq_soft_qp_t *qp)
{
    if (qp->state == IBV_QPS_ERR) {
        return;
    }
    srq_soft_qp_set_state(qp, IBV_QPS_ERR);
    srq_soft_qp_publish(qp); /* peers' one-sided requests are dropped */
    srq_soft_qp_detach(qp);
    srq_soft_qp_flush(qp);
    if (qp->ibv.srq != NULL) {
        /* IB spec: an SRQ QP in error reports its last WQE */
        srq_soft_async_raise(qp->dev, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->ibv,
                             &qp->events_written);
    }
}

static int srq_soft_qp_apply(srq_soft_qp_t *qp, enum ibv_qp_state to,
                             const struct ibv_qp_attr *a, int mask)
{
    int ret;

    if (to == IBV_QPS_RESET) {
        srq_soft_qp_reset(qp);
        srq_soft_qp_set_state(qp, IBV_QPS_RESET);
        return 0;
    }
    if (to == IBV_QPS_ERR) {
        srq_soft_qp_to_error(qp);
        return 0;
    }
    if ((qp->state == IBV_QPS_INIT) && (to == IBV_QPS_RTR) &&
        srq_soft_qp_is_conn(qp)) {
        ret = srq_soft_qp_connect(qp, a);
        if (ret != 0) {
            return ret;
        }
    }
    srq_soft_qp_save_attr(qp, a, mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE));
    if (to == IBV_QPS_RTR) {
        qp->epsn = qp->attr.rq_psn;
    }
    if ((qp->state == IBV_QPS_RTR) && (to == IBV_QPS_RTS)) {
        qp->next_psn   = qp->attr.sq_psn;
        qp->rnr_left   = qp->attr.rnr_retry;
        qp->retry_left = qp->attr.retry_cnt;
    }
    srq_soft_qp_set_state(qp, to);
    return 0;
}

int srq_soft_modify_qp(srq_verbs_dev_t *vdev, struct ibv_qp *ibqp,
                       struct ibv_qp_attr *attr, int mask)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    enum ibv_qp_state from, to;
    srq_soft_qp_t *qp;
    int ret;

    if (srq_soft_dev_lock_obj(dev, ibqp) != 0) {
        return EINVAL;
    }
    qp = srq_soft_qp(ibqp);
    from = qp->state;
    to   = (mask & IBV_QP_STATE) ? attr->qp_state : from;
    if ((mask & IBV_QP_CUR_STATE) && (attr->cur_qp_state != from)) {
        ret = EINVAL;
    } else if ((to == IBV_QPS_SQD) || (to == IBV_QPS_SQE)) {
        ret = EOPNOTSUPP;
    } else {
        ret = srq_soft_qp_check_mask(qp, from, to, mask);
        if (ret == 0) {
            ret = srq_soft_qp_check_values(attr, mask);
        }
        if (ret == 0) {
            ret = srq_soft_qp_apply(qp, to, attr, mask);
        }
        if (ret == 0) {
            ibqp->state = qp->state;
            srq_soft_qp_publish(qp);
        }
    }
    srq_soft_dev_unlock(dev);
    return ret;
}

int srq_soft_query_qp(srq_verbs_dev_t *vdev, struct ibv_qp *ibqp,
                      struct ibv_qp_attr *attr, int attr_mask,
                      struct ibv_qp_init_attr *init_attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qp_t *qp;

    if (srq_soft_dev_lock_obj(dev, ibqp) != 0) {
        return EINVAL;
    }
    qp = srq_soft_qp(ibqp);
    *attr              = qp->attr;
    attr->qp_state     = qp->state;
    attr->cur_qp_state = qp->state;
    if (attr_mask & IBV_QP_STATE) {
        ibqp->state = qp->state; /* the program asked: now it knows, as
                                    libibverbs records it */
    }
    attr->cap          = qp->cap;
    attr->sq_draining  = 0;
    if (init_attr != NULL) {
        memset(init_attr, 0, sizeof(*init_attr));
        init_attr->qp_context = ibqp->qp_context;
        init_attr->send_cq    = ibqp->send_cq;
        init_attr->recv_cq    = ibqp->recv_cq;
        init_attr->srq        = ibqp->srq;
        init_attr->cap        = qp->cap;
        init_attr->qp_type    = ibqp->qp_type;
        init_attr->sq_sig_all = qp->sq_sig_all;
    }
    srq_soft_dev_unlock(dev);
    return 0;
}
