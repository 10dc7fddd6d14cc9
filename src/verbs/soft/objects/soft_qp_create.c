/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: creating a queue pair (RC, UC, UD, XRC initiator
 * and target): the attributes checked against the device's limits, the
 * object filled in, its queues allocated (from the parent domain's
 * allocator when it has one), and the QP entered in the instance's table
 * and the shared one under the device's lock. The QP itself, its queues
 * and its destroy: soft_qp.c.
 */
#include "soft_qp_create.h"
#include "../fabric/soft_list.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_qbuf.h"
#include "soft_qp.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int srq_soft_qp_check_init(srq_soft_dev_t *dev, struct ibv_pd *pd,
                                  const struct ibv_qp_init_attr *attr,
                                  const struct ibv_xrcd *xrcd)
{
    const struct ibv_qp_cap *cap = &attr->cap;

    if ((attr->qp_type != IBV_QPT_RC) && (attr->qp_type != IBV_QPT_UC) &&
        (attr->qp_type != IBV_QPT_UD) && (attr->qp_type != IBV_QPT_XRC_SEND) &&
        (attr->qp_type != IBV_QPT_XRC_RECV)) {
        return EOPNOTSUPP;
    }
    if (attr->qp_type == IBV_QPT_XRC_RECV) {
        /* no PD, no queue: a domain (checked by soft_qp_ex.c) */
        return (xrcd != NULL) ? 0 : EINVAL;
    }
    if (attr->qp_type == IBV_QPT_XRC_SEND) {
        /* a send queue only: its receive CQ is the send CQ (as mlx5) */
        return (srq_soft_dev_has(dev, pd) &&
                srq_soft_dev_has(dev, attr->send_cq) && (attr->srq == NULL) &&
                (cap->max_send_wr <= SRQ_SOFT_MAX_QP_WR) &&
                (cap->max_send_sge <= SRQ_SOFT_MAX_SGE) &&
                (cap->max_inline_data <= SRQ_SOFT_MAX_INLINE)) ? 0 : EINVAL;
    }
    if (!srq_soft_dev_has(dev, pd) || !srq_soft_dev_has(dev, attr->send_cq) ||
        !srq_soft_dev_has(dev, attr->recv_cq) ||
        ((attr->srq != NULL) && !srq_soft_dev_has(dev, attr->srq))) {
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
    /* tag matching is RC's (IBV_TM_CAP_RC) */
    if ((attr->srq != NULL) && (srq_soft_srq(attr->srq)->tm != NULL) &&
        (attr->qp_type != IBV_QPT_RC)) {
        return EINVAL;
    }
    return 0;
}

/* Where the next of a queue's arrays starts in its one block */
static size_t srq_soft_qp_carve(size_t *off, size_t len)
{
    size_t at = *off;

    *off = (at + len + 63) & ~(size_t)63;
    return at;
}

/*
 * A parent domain's allocator gives the send queue at its full size in one
 * call, at creation: a queue grown later would call the program's
 * allocator from ibv_post_send, which it does not expect
 */
static int srq_soft_qp_sq_custom(srq_soft_qp_t *qp, uint32_t slots)
{
    uint32_t ssge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    size_t inl    = qp->cap.max_inline_data + 1;
    size_t off    = 0, sq, sge, il;
    uint8_t *base;

    sq  = srq_soft_qp_carve(&off, (size_t)slots * sizeof(*qp->sq));
    sge = srq_soft_qp_carve(&off, (size_t)slots * ssge * sizeof(*qp->sq_sge));
    il  = srq_soft_qp_carve(&off, (size_t)slots * inl);
    if (srq_soft_qbuf_alloc(qp->ibv.pd, off, 64, SRQ_SOFT_RES_TYPE_QP,
                            &qp->sq_buf) != 0) {
        return ENOMEM;
    }
    base          = qp->sq_buf.ptr;
    qp->sq        = (srq_soft_swqe_t*)(base + sq);
    qp->sq_sge    = (struct ibv_sge*)(base + sge);
    qp->sq_inline = base + il;
    qp->sq_mask   = slots - 1;
    return 0;
}

static int srq_soft_qp_rq_custom(srq_soft_qp_t *qp, uint32_t slots,
                                 uint32_t rsge)
{
    size_t off = 0, rq, sge;
    uint8_t *base;

    rq  = srq_soft_qp_carve(&off, (size_t)slots * sizeof(*qp->rq));
    sge = srq_soft_qp_carve(&off, (size_t)slots * rsge * sizeof(*qp->rq_sge));
    if (srq_soft_qbuf_alloc(qp->ibv.pd, off, 64, SRQ_SOFT_RES_TYPE_QP,
                            &qp->rq_buf) != 0) {
        return ENOMEM;
    }
    base       = qp->rq_buf.ptr;
    qp->rq     = (srq_soft_rwqe_t*)(base + rq);
    qp->rq_sge = (struct ibv_sge*)(base + sge);
    return 0;
}

static int srq_soft_qp_alloc_queues(srq_soft_qp_t *qp)
{
    uint32_t sq   = srq_soft_qbuf_pow2(qp->cap.max_send_wr ?: 1);
    uint32_t rq   = srq_soft_qbuf_pow2(qp->cap.max_recv_wr ?: 1);
    uint32_t rsge = qp->cap.max_recv_sge ? qp->cap.max_recv_sge : 1;
    bool custom   = srq_soft_qbuf_custom(qp->ibv.pd);

    /* the send queue starts small and grows as WQEs are outstanding: an
     * idle connection does not hold max_send_wr WQEs with inline room */
    qp->sq_mask = 0;
    if (custom ? srq_soft_qp_sq_custom(qp, sq) :
                 srq_soft_qp_sq_resize(qp, (sq < SRQ_SOFT_SQ_INITIAL) ? sq :
                                           SRQ_SOFT_SQ_INITIAL)) {
        return ENOMEM;
    }
    if (qp->ibv.srq != NULL) {
        return 0;
    }
    qp->rq_mask = rq - 1;
    if (custom) {
        return srq_soft_qp_rq_custom(qp, rq, rsge);
    }
    qp->rq      = calloc(rq, sizeof(*qp->rq));
    qp->rq_sge  = calloc((size_t)rq * rsge, sizeof(*qp->rq_sge));
    return ((qp->rq == NULL) || (qp->rq_sge == NULL)) ? ENOMEM : 0;
}

static void srq_soft_qp_init_obj(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                                 struct ibv_pd *pd,
                                 const struct ibv_qp_init_attr *attr)
{
    qp->dev             = dev;
    qp->cap             = attr->cap;
    qp->sq_sig_all      = attr->sq_sig_all != 0;
    qp->ibv.context     = &dev->vctx.context;
    qp->ibv.qp_context  = attr->qp_context;
    qp->ibv.pd          = pd;
    qp->req_pd_id       = (pd != NULL) ? srq_soft_pd_id(pd) : 0;
    qp->ibv.send_cq     = attr->send_cq;
    qp->ibv.recv_cq     = attr->recv_cq;
    qp->ibv.srq         = attr->srq;
    qp->tm              = (attr->srq != NULL) &&
                          (srq_soft_srq(attr->srq)->tm != NULL);
    qp->ibv.qp_type     = attr->qp_type;
    qp->state           = IBV_QPS_RESET;
    qp->ibv.state       = IBV_QPS_RESET;
    if ((attr->srq != NULL) || (attr->qp_type == IBV_QPT_XRC_SEND)) {
        qp->cap.max_recv_wr  = 0;
        qp->cap.max_recv_sge = 0;
    }
    if (attr->qp_type == IBV_QPT_XRC_SEND) {
        qp->ibv.recv_cq = attr->send_cq;
    } else if (attr->qp_type == IBV_QPT_XRC_RECV) {
        memset(&qp->cap, 0, sizeof(qp->cap)); /* no queue of its own */
        qp->ibv.pd      = NULL;
        qp->ibv.send_cq = NULL;
        qp->ibv.recv_cq = NULL;
        qp->ibv.srq     = NULL;
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
    return srq_soft_create_qp_in(vdev, pd, attr, NULL, NULL);
}

struct ibv_qp *srq_soft_create_qp_in(srq_verbs_dev_t *vdev, struct ibv_pd *pd,
                                     struct ibv_qp_init_attr *attr,
                                     struct ibv_xrcd *xrcd, int *xrcd_users)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qp_t *qp;
    int ret;

    ret = srq_soft_qp_check_init(dev, pd, attr, xrcd);
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
    srq_soft_lock_init(&qp->rq_lock);
    srq_soft_lock_init(&qp->sq_lock);
    if (attr->qp_type == IBV_QPT_XRC_RECV) {
        qp->ex_xrcd    = xrcd;
        qp->xrcd_users = xrcd_users;
    }
    ret = srq_soft_qp_alloc_queues(qp);
    if (ret != 0) {
        srq_soft_qp_free(qp);
        errno = ret;
        return NULL;
    }

    srq_soft_dev_lock(dev);
    ret = srq_soft_qp_table_add(dev, qp);
    if (ret != 0) {
        srq_soft_dev_unlock(dev);
        srq_soft_qp_free(qp);
        errno = ret;
        return NULL;
    }
    qp->ibv.handle = srq_soft_handle(dev, &qp->ibv);
    srq_soft_qp_publish(qp);
    srq_soft_qp_refs(qp, 1);
    srq_soft_dev_unlock(dev);

    attr->cap = qp->cap;
    return &qp->ibv;
}
