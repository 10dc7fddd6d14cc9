/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: ibv_create_srq_ex - a basic SRQ (as ibv_create_srq),
 * an XRC SRQ: in an XRC domain (soft_xrcd.c), numbered (the number a
 * sender names, ibv_get_srq_num), its receive completions on a CQ of its
 * own; or a TM SRQ: a list of tagged buffers besides its queue, all its
 * completions on its CQ (soft_tm.c). Its queue is the basic SRQ's
 * (soft_srq.c); the count of SRQs the device allows covers all
 * (soft_limit.c).
 */
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_srq.h"
#include "../objects/soft_xrcd.h"
#include "../srq_soft_api.h"
#include "../wire/soft_tm.h"
#include "soft_limit.h"

#include <errno.h>
#include <stdlib.h>

/* A free SRQ number (under dev->lock), 0: none; numbers are not reused
 * soon, as QP numbers are not, so that a stale one finds nothing */
static uint32_t srq_soft_xrc_srqn_alloc(srq_soft_dev_t *dev)
{
    uint32_t i, n;

    if (dev->xrc_srqs == NULL) {
        dev->xrc_srqs = calloc(SRQ_SOFT_MAX_SRQ, sizeof(*dev->xrc_srqs));
        if (dev->xrc_srqs == NULL) {
            return 0;
        }
    }
    for (i = 1; i < SRQ_SOFT_MAX_SRQ; ++i) {
        n = (dev->xrc_srq_last + i) % SRQ_SOFT_MAX_SRQ;
        if ((n != 0) && (dev->xrc_srqs[n] == NULL)) {
            dev->xrc_srq_last = n;
            return n;
        }
    }
    return 0;
}

#define SRQ_SOFT_SRQ_XRC_MASK (IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
                               IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)

static int srq_soft_srq_ex_check(srq_soft_dev_t *dev,
                                 const struct ibv_srq_init_attr_ex *attr)
{
    if ((attr->comp_mask & ~(SRQ_SOFT_SRQ_XRC_MASK | IBV_SRQ_INIT_ATTR_TM)) ||
        !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD)) {
        return EINVAL; /* fields we do not know */
    }
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
        (attr->srq_type == IBV_SRQT_BASIC)) {
        /* the sizes of a list only a TM SRQ has */
        return (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) ? EINVAL : 0;
    }
    if (attr->srq_type == IBV_SRQT_TM) {
        return (srq_soft_tm_check(attr) == 0) &&
               srq_soft_dev_has(dev, attr->cq) ? 0 : EINVAL;
    }
    if ((attr->srq_type != IBV_SRQT_XRC) ||
        (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM)) {
        return EINVAL;
    }
    if (((attr->comp_mask & SRQ_SOFT_SRQ_XRC_MASK) != SRQ_SOFT_SRQ_XRC_MASK) ||
        !srq_soft_xrcd_valid(dev, attr->xrcd) ||
        !srq_soft_dev_has(dev, attr->cq)) {
        return EINVAL;
    }
    return 0;
}

struct ibv_srq *srq_soft_create_srq_ex(srq_verbs_dev_t *vdev,
                                       struct ibv_srq_init_attr_ex *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    struct ibv_srq *ibsrq;
    srq_soft_srq_t *srq;
    int ret;

    ret = srq_soft_srq_ex_check(dev, attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* the extended attributes begin with struct ibv_srq_init_attr */
    ibsrq = srq_soft_limit_create_srq(vdev, attr->pd,
                                      (struct ibv_srq_init_attr*)attr);
    if ((ibsrq == NULL) || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
        (attr->srq_type == IBV_SRQT_BASIC)) {
        return ibsrq;
    }
    srq = srq_soft_srq(ibsrq);
    srq_soft_dev_lock(dev);
    if (attr->srq_type == IBV_SRQT_TM) {
        ret = srq_soft_tm_create(srq, attr);
        srq_soft_dev_unlock(dev);
        if (ret != 0) {
            srq_soft_limit_destroy_srq(vdev, ibsrq);
            errno = ret;
            return NULL;
        }
        return ibsrq;
    }
    srq->srqn = srq_soft_xrc_srqn_alloc(dev);
    if (srq->srqn == 0) {
        srq_soft_dev_unlock(dev);
        srq_soft_limit_destroy_srq(vdev, ibsrq);
        errno = ENOMEM;
        return NULL;
    }
    dev->xrc_srqs[srq->srqn] = srq;
    srq->xrc_cq     = attr->cq;
    srq->xrcd       = attr->xrcd;
    srq->xrcd_users = &srq_soft_xrcd(attr->xrcd)->users;
    ++srq_soft_cq(attr->cq)->qp_refs;
    ++*srq->xrcd_users;
    srq_soft_dev_unlock(dev);
    return ibsrq;
}

int srq_soft_get_srq_num(srq_verbs_dev_t *vdev, struct ibv_srq *ibsrq,
                         uint32_t *srq_num)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_srq_t *srq;

    if (srq_soft_dev_lock_obj(dev, ibsrq) != 0) {
        return EINVAL;
    }
    srq = srq_soft_srq(ibsrq);
    *srq_num = srq->srqn;
    srq_soft_dev_unlock(dev);
    return (srq->srqn != 0) ? 0 : EINVAL; /* a basic SRQ has none */
}

