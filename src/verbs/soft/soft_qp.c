/*
 * ucx-srq soft device: queue pairs (RC, UD) and address handles.
 *
 * QP numbers are (generation << 16 | table index): the inbound path finds a
 * QP by indexing, and a packet for a destroyed QP never reaches a new one
 * that reuses the slot.
 *
 * State transitions follow the IB spec's table (required and optional
 * attributes per transition); anything else is EINVAL. SQD/SQE are not
 * implemented (EOPNOTSUPP).
 */
#include "soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SRQ_SOFT_QP_TAB_INIT  64
#define SRQ_SOFT_QP_IDX_MASK  0xffffu

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

/* ---- QP table --------------------------------------------------------- */

int srq_soft_qp_table_init(srq_soft_dev_t *dev)
{
    dev->qp_tab_size = SRQ_SOFT_QP_TAB_INIT;
    dev->qps     = calloc(dev->qp_tab_size, sizeof(*dev->qps));
    dev->qp_gen  = calloc(dev->qp_tab_size, sizeof(*dev->qp_gen));
    dev->qp_free = calloc(dev->qp_tab_size, sizeof(*dev->qp_free));
    if ((dev->qps == NULL) || (dev->qp_gen == NULL) || (dev->qp_free == NULL)) {
        srq_soft_qp_table_cleanup(dev);
        return ENOMEM;
    }
    return 0;
}

void srq_soft_qp_table_cleanup(srq_soft_dev_t *dev)
{
    free(dev->qps);
    free(dev->qp_gen);
    free(dev->qp_free);
    dev->qps     = NULL;
    dev->qp_gen  = NULL;
    dev->qp_free = NULL;
}

static int srq_soft_qp_table_grow(srq_soft_dev_t *dev)
{
    uint32_t size = dev->qp_tab_size * 2;
    srq_soft_qp_t **qps;
    uint8_t *gen;
    uint32_t *fr;

    if (size > SRQ_SOFT_MAX_QP) {
        return ENOMEM;
    }
    qps = realloc(dev->qps, size * sizeof(*qps));
    if (qps != NULL) {
        dev->qps = qps;
    }
    gen = realloc(dev->qp_gen, size * sizeof(*gen));
    if (gen != NULL) {
        dev->qp_gen = gen;
    }
    fr = realloc(dev->qp_free, size * sizeof(*fr));
    if (fr != NULL) {
        dev->qp_free = fr;
    }
    if ((qps == NULL) || (gen == NULL) || (fr == NULL)) {
        return ENOMEM;
    }
    memset(qps + dev->qp_tab_size, 0,
           (size - dev->qp_tab_size) * sizeof(*qps));
    memset(gen + dev->qp_tab_size, 0, size - dev->qp_tab_size);
    dev->qp_tab_size = size;
    return 0;
}

/* Allocate a table slot; returns its qpn or 0 */
static uint32_t srq_soft_qp_table_add(srq_soft_dev_t *dev, srq_soft_qp_t *qp)
{
    uint32_t idx;

    if (dev->qp_free_cnt > 0) {
        idx = dev->qp_free[--dev->qp_free_cnt];
    } else {
        if ((dev->qp_next == dev->qp_tab_size) &&
            (srq_soft_qp_table_grow(dev) != 0)) {
            return 0;
        }
        idx = dev->qp_next++;
    }
    if (++dev->qp_gen[idx] == 0) {
        dev->qp_gen[idx] = 1;
    }
    dev->qps[idx] = qp;
    qp->index     = idx;
    return ((uint32_t)dev->qp_gen[idx] << 16) | idx;
}

static void srq_soft_qp_table_del(srq_soft_dev_t *dev, srq_soft_qp_t *qp)
{
    dev->qps[qp->index] = NULL;
    dev->qp_free[dev->qp_free_cnt++] = qp->index;
}

srq_soft_qp_t *srq_soft_qp_lookup(srq_soft_dev_t *dev, uint32_t qpn)
{
    uint32_t idx = qpn & SRQ_SOFT_QP_IDX_MASK;
    srq_soft_qp_t *qp;

    ++dev->stats.qps_inspected;
    if (idx >= dev->qp_tab_size) {
        return NULL;
    }
    qp = dev->qps[idx];
    return ((qp != NULL) && (qp->ibv.qp_num == qpn)) ? qp : NULL;
}

/* ---- create / destroy ------------------------------------------------- */

static uint32_t srq_soft_pow2(uint32_t v)
{
    uint32_t r = 1;

    while (r < v) {
        r <<= 1;
    }
    return r;
}

static int srq_soft_qp_check_init(srq_soft_dev_t *dev, struct ibv_pd *pd,
                                  const struct ibv_qp_init_attr *attr)
{
    const struct ibv_qp_cap *cap = &attr->cap;

    if ((attr->qp_type != IBV_QPT_RC) && (attr->qp_type != IBV_QPT_UD)) {
        return EOPNOTSUPP;
    }
    if ((pd == NULL) || !srq_soft_owns(dev, pd->context) ||
        (attr->send_cq == NULL) || (attr->recv_cq == NULL) ||
        !srq_soft_owns(dev, attr->send_cq->context) ||
        !srq_soft_owns(dev, attr->recv_cq->context) ||
        ((attr->srq != NULL) && !srq_soft_owns(dev, attr->srq->context))) {
        return EINVAL;
    }
    if ((cap->max_send_wr > SRQ_SOFT_MAX_QP_WR) ||
        (cap->max_send_sge > SRQ_SOFT_MAX_SGE) ||
        (cap->max_inline_data > SRQ_SOFT_MAX_INLINE)) {
        return EINVAL;
    }
    if ((attr->srq == NULL) && ((cap->max_recv_wr > SRQ_SOFT_MAX_QP_WR) ||
                                (cap->max_recv_sge > SRQ_SOFT_MAX_SGE))) {
        return EINVAL;
    }
    return 0;
}

static int srq_soft_qp_alloc_queues(srq_soft_qp_t *qp)
{
    uint32_t sq = srq_soft_pow2(qp->cap.max_send_wr ? qp->cap.max_send_wr : 1);
    uint32_t rq = srq_soft_pow2(qp->cap.max_recv_wr ? qp->cap.max_recv_wr : 1);
    uint32_t ssge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    uint32_t rsge = qp->cap.max_recv_sge ? qp->cap.max_recv_sge : 1;

    qp->sq_mask   = sq - 1;
    qp->sq        = calloc(sq, sizeof(*qp->sq));
    qp->sq_sge    = calloc((size_t)sq * ssge, sizeof(*qp->sq_sge));
    qp->sq_inline = malloc((size_t)sq * (qp->cap.max_inline_data + 1));
    if ((qp->sq == NULL) || (qp->sq_sge == NULL) || (qp->sq_inline == NULL)) {
        return ENOMEM;
    }
    if (qp->ibv.srq != NULL) {
        return 0;
    }
    qp->rq_mask = rq - 1;
    qp->rq      = calloc(rq, sizeof(*qp->rq));
    qp->rq_sge  = calloc((size_t)rq * rsge, sizeof(*qp->rq_sge));
    return ((qp->rq == NULL) || (qp->rq_sge == NULL)) ? ENOMEM : 0;
}

static void srq_soft_qp_free(srq_soft_qp_t *qp)
{
    free(qp->sq);
    free(qp->sq_sge);
    free(qp->sq_inline);
    free(qp->rq);
    free(qp->rq_sge);
    free(qp);
}

static void srq_soft_qp_init_obj(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                                 struct ibv_pd *pd,
                                 const struct ibv_qp_init_attr *attr)
{
    qp->dev             = dev;
    qp->cap             = attr->cap;
    qp->sq_sig_all      = attr->sq_sig_all != 0;
    qp->ibv.context     = &dev->ibv_ctx;
    qp->ibv.qp_context  = attr->qp_context;
    qp->ibv.pd          = pd;
    qp->ibv.send_cq     = attr->send_cq;
    qp->ibv.recv_cq     = attr->recv_cq;
    qp->ibv.srq         = attr->srq;
    qp->ibv.qp_type     = attr->qp_type;
    qp->ibv.state       = IBV_QPS_RESET;
    if (attr->srq != NULL) {
        qp->cap.max_recv_wr  = 0;
        qp->cap.max_recv_sge = 0;
    }
    srq_soft_list_init(&qp->peer_link);
    srq_soft_list_init(&qp->ack_link);
    srq_soft_list_init(&qp->sched_link);
    srq_soft_list_init(&qp->busy_link);
    pthread_mutex_init(&qp->ibv.mutex, NULL);
    pthread_cond_init(&qp->ibv.cond, NULL);
}

struct ibv_qp *srq_soft_create_qp(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                  struct ibv_qp_init_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qp_t *qp;
    int ret;

    ret = srq_soft_qp_check_init(dev, pd, attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_qp_init_obj(dev, qp, pd, attr);
    ret = srq_soft_qp_alloc_queues(qp);
    if (ret != 0) {
        srq_soft_qp_free(qp);
        errno = ret;
        return NULL;
    }

    srq_soft_dev_lock(dev);
    qp->ibv.qp_num = srq_soft_qp_table_add(dev, qp);
    if (qp->ibv.qp_num == 0) {
        srq_soft_dev_unlock(dev);
        srq_soft_qp_free(qp);
        errno = ENOMEM;
        return NULL;
    }
    qp->ibv.handle = qp->ibv.qp_num;
    ++srq_soft_cq(attr->send_cq)->qp_refs;
    ++srq_soft_cq(attr->recv_cq)->qp_refs;
    if (attr->srq != NULL) {
        ++srq_soft_srq(attr->srq)->qp_refs;
    }
    srq_soft_dev_unlock(dev);

    attr->cap = qp->cap;
    return &qp->ibv;
}

/* Leave every list and the peer: the QP does no more transport work */
static void srq_soft_qp_detach(srq_soft_qp_t *qp)
{
    srq_soft_peer_busy(qp->dev, qp, false);
    if (srq_soft_list_linked(&qp->ack_link)) {
        srq_soft_list_del(&qp->ack_link);
    }
    if (srq_soft_list_linked(&qp->sched_link)) {
        srq_soft_list_del(&qp->sched_link);
    }
    qp->ack_pending = false;
    qp->nak         = 0;
    qp->wait        = SRQ_SOFT_WAIT_NONE;
}

static void srq_soft_qp_unpeer(srq_soft_qp_t *qp)
{
    srq_soft_qp_detach(qp);
    if (qp->peer != NULL) {
        if (srq_soft_list_linked(&qp->peer_link)) {
            srq_soft_list_del(&qp->peer_link);
        }
        srq_soft_peer_put(qp->dev, qp->peer);
        qp->peer = NULL;
    }
}

int srq_soft_destroy_qp(srq_verbs_dev_t *vdev, struct ibv_qp *ibqp)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qp_t *qp;

    if ((ibqp == NULL) || !srq_soft_owns(dev, ibqp->context)) {
        return EINVAL;
    }
    qp = srq_soft_qp(ibqp);
    srq_soft_dev_lock(dev);
    srq_soft_qp_unpeer(qp);
    srq_soft_qp_table_del(dev, qp);
    srq_soft_cq_forget_qp(srq_soft_cq(ibqp->recv_cq), qp);
    --srq_soft_cq(ibqp->send_cq)->qp_refs;
    --srq_soft_cq(ibqp->recv_cq)->qp_refs;
    if (ibqp->srq != NULL) {
        --srq_soft_srq(ibqp->srq)->qp_refs;
    }
    srq_soft_dev_unlock(dev);
    pthread_mutex_destroy(&ibqp->mutex);
    pthread_cond_destroy(&ibqp->cond);
    srq_soft_qp_free(qp);
    return 0;
}

/* ---- state machine ---------------------------------------------------- */

typedef struct srq_soft_qp_trans {
    enum ibv_qp_state  from, to;
    int                rc_req, rc_opt, ud_req, ud_opt;
} srq_soft_qp_trans_t;

#define SRQ_SOFT_RTS_OPT_RC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
                             IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH | \
                             IBV_QP_PATH_MIG_STATE)

static const srq_soft_qp_trans_t srq_soft_qp_trans[] = {
    { IBV_QPS_RESET, IBV_QPS_INIT,
      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0 },
    { IBV_QPS_INIT, IBV_QPS_INIT,
      0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
      0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY },
    { IBV_QPS_INIT, IBV_QPS_RTR,
      IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
      IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
      0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY },
    { IBV_QPS_RTR, IBV_QPS_RTS,
      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
      IBV_QP_MAX_QP_RD_ATOMIC, SRQ_SOFT_RTS_OPT_RC,
      IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY },
    { IBV_QPS_RTS, IBV_QPS_RTS,
      0, SRQ_SOFT_RTS_OPT_RC,
      0, IBV_QP_CUR_STATE | IBV_QP_QKEY },
};

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
        req = (qp->ibv.qp_type == IBV_QPT_RC) ? t->rc_req : t->ud_req;
        opt = (qp->ibv.qp_type == IBV_QPT_RC) ? t->rc_opt : t->ud_opt;
        opt |= IBV_QP_CUR_STATE;
        return (((mask & req) != req) || (mask & ~(req | opt))) ? EINVAL : 0;
    }
    return EINVAL; /* not a transition of the IB state machine */
}

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
        ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && (a->max_rd_atomic > 16)) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && (a->max_dest_rd_atomic > 16)) ||
        ((mask & IBV_QP_ACCESS_FLAGS) &&
         (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE |
                                 IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ |
                                 IBV_ACCESS_REMOTE_ATOMIC)))) {
        return EINVAL;
    }
    return 0;
}

/* The address a soft QP connects to: "soft" + instance id in the dgid */
static const uint8_t *srq_soft_ah_instance(const struct ibv_ah_attr *ah)
{
    if (!ah->is_global || (ah->port_num != 1) ||
        memcmp(ah->grh.dgid.raw, SRQ_SOFT_ADDR_MAGIC, 4)) {
        return NULL;
    }
    return ah->grh.dgid.raw + 4;
}

static int srq_soft_qp_connect(srq_soft_qp_t *qp, const struct ibv_qp_attr *a)
{
    const uint8_t *inst = srq_soft_ah_instance(&a->ah_attr);
    srq_soft_peer_t *peer;

    if (inst == NULL) {
        return EINVAL;
    }
    peer = srq_soft_peer_get(qp->dev, inst);
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

/* RESET: every WQE is discarded without a completion (IB spec) */
static void srq_soft_qp_reset(srq_soft_qp_t *qp)
{
    srq_soft_qp_unpeer(qp);
    qp->sq_pi = qp->sq_tx = qp->sq_ci = 0;
    qp->rq_pi = qp->rq_hw = qp->rq_ci = 0;
    memset(&qp->attr, 0, sizeof(qp->attr));
    qp->attr_mask = 0;
    srq_soft_cq_forget_qp(srq_soft_cq(qp->ibv.recv_cq), qp);
}

void srq_soft_qp_to_error(srq_soft_qp_t *qp)
{
    if (qp->ibv.state == IBV_QPS_ERR) {
        return;
    }
    qp->ibv.state = IBV_QPS_ERR;
    srq_soft_qp_detach(qp);
    srq_soft_comp_flush(qp);
    if (qp->ibv.srq != NULL) {
        /* IB spec: an SRQ QP in error reports its last WQE */
        srq_soft_async_raise(qp->dev, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
    }
}

static int srq_soft_qp_apply(srq_soft_qp_t *qp, enum ibv_qp_state to,
                             const struct ibv_qp_attr *a, int mask)
{
    int ret;

    if (to == IBV_QPS_RESET) {
        srq_soft_qp_reset(qp);
        qp->ibv.state = IBV_QPS_RESET;
        return 0;
    }
    if (to == IBV_QPS_ERR) {
        srq_soft_qp_to_error(qp);
        return 0;
    }
    if ((qp->ibv.state == IBV_QPS_INIT) && (to == IBV_QPS_RTR) &&
        (qp->ibv.qp_type == IBV_QPT_RC)) {
        ret = srq_soft_qp_connect(qp, a);
        if (ret != 0) {
            return ret;
        }
    }
    srq_soft_qp_save_attr(qp, a, mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE));
    if (to == IBV_QPS_RTR) {
        qp->epsn = qp->attr.rq_psn;
    }
    if ((qp->ibv.state == IBV_QPS_RTR) && (to == IBV_QPS_RTS)) {
        qp->next_psn   = qp->attr.sq_psn;
        qp->rnr_left   = qp->attr.rnr_retry;
        qp->retry_left = qp->attr.retry_cnt;
    }
    qp->ibv.state = to;
    return 0;
}

int srq_soft_modify_qp(srq_verbs_dev_t *vdev, struct ibv_qp *ibqp,
                       struct ibv_qp_attr *attr, int mask)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    enum ibv_qp_state from, to;
    srq_soft_qp_t *qp;
    int ret;

    if ((ibqp == NULL) || !srq_soft_owns(dev, ibqp->context)) {
        return EINVAL;
    }
    qp = srq_soft_qp(ibqp);
    srq_soft_dev_lock(dev);
    from = ibqp->state;
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

    if ((ibqp == NULL) || !srq_soft_owns(dev, ibqp->context)) {
        return EINVAL;
    }
    qp = srq_soft_qp(ibqp);
    srq_soft_dev_lock(dev);
    *attr              = qp->attr;
    attr->qp_state     = ibqp->state;
    attr->cur_qp_state = ibqp->state;
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

/* ---- address handles -------------------------------------------------- */

struct ibv_ah *srq_soft_create_ah(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                  struct ibv_ah_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    const uint8_t *inst;
    srq_soft_ah_t *ah;

    inst = srq_soft_ah_instance(attr);
    if ((pd == NULL) || !srq_soft_owns(dev, pd->context) || (inst == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    srq_soft_dev_lock(dev);
    ah->peer = srq_soft_peer_get(dev, inst);
    srq_soft_dev_unlock(dev);
    if (ah->peer == NULL) {
        free(ah);
        return NULL; /* errno from peer_get */
    }
    ah->ibv.context = &dev->ibv_ctx;
    ah->ibv.pd      = pd;
    return &ah->ibv;
}

int srq_soft_destroy_ah(srq_verbs_dev_t *vdev, struct ibv_ah *ibah)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_ah_t *ah;

    if ((ibah == NULL) || !srq_soft_owns(dev, ibah->context)) {
        return EINVAL;
    }
    ah = srq_soft_container_of(ibah, srq_soft_ah_t, ibv);
    srq_soft_dev_lock(dev);
    srq_soft_peer_put(dev, ah->peer);
    srq_soft_dev_unlock(dev);
    free(ah);
    return 0;
}
