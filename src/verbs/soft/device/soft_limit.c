/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the object limits ibv_query_device reports, held.
 *
 * The PDs, CQs, SRQs, QPs and AHs of an instance (an ibv_open_device) are
 * counted, and a create past the limit the device reports fails with
 * ENOMEM, as the kernel's does (MRs are counted by their table, also per
 * instance: soft_mr.c). Counted per instance, as the objects are: what a
 * program leaves behind goes with its context. A count is taken before
 * the object is made and given back when it could not be, or when it is
 * destroyed.
 */
#include "soft_limit.h"
#include "../objects/soft_ah.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_create.h"
#include "../objects/soft_srq.h"
#include "../wire/soft_qp_ex.h"

#include <errno.h>
#include <stdatomic.h>

/* What srq_soft_query_device reports (soft_dev.h) */
static const uint32_t srq_soft_lim_max[SRQ_SOFT_LIM_LAST] = {
    [SRQ_SOFT_LIM_PD]  = SRQ_SOFT_MAX_PD,
    [SRQ_SOFT_LIM_CQ]  = SRQ_SOFT_MAX_CQ,
    [SRQ_SOFT_LIM_SRQ] = SRQ_SOFT_MAX_SRQ,
    [SRQ_SOFT_LIM_QP]  = SRQ_SOFT_MAX_QP,
    [SRQ_SOFT_LIM_AH]  = SRQ_SOFT_MAX_AH,
};

/* One more object of @kind on @vdev: false (errno ENOMEM) at the limit */
static bool srq_soft_lim_take(srq_verbs_dev_t *vdev, srq_soft_lim_t kind)
{
    _Atomic uint32_t *count = &srq_soft_dev(vdev)->lim_count[kind];
    uint32_t n = atomic_load_explicit(count, memory_order_relaxed);

    do {
        if (n >= srq_soft_lim_max[kind]) {
            errno = ENOMEM;
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(count, &n, n + 1,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

static void srq_soft_lim_give(srq_verbs_dev_t *vdev, srq_soft_lim_t kind)
{
    atomic_fetch_sub_explicit(&srq_soft_dev(vdev)->lim_count[kind], 1,
                              memory_order_relaxed);
}

/* A create's result: its count given back when it made nothing */
static void *srq_soft_lim_made(srq_verbs_dev_t *vdev, srq_soft_lim_t kind,
                               void *obj)
{
    if (obj == NULL) {
        srq_soft_lim_give(vdev, kind);
    }
    return obj;
}

/* A destroy's result: its count given back when the object went */
static int srq_soft_lim_gone(srq_verbs_dev_t *vdev, srq_soft_lim_t kind,
                             int ret)
{
    if (ret == 0) {
        srq_soft_lim_give(vdev, kind);
    }
    return ret;
}

struct ibv_pd *srq_soft_limit_alloc_pd(srq_verbs_dev_t *dev)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_PD) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_PD, srq_soft_alloc_pd(dev));
}

/* a parent domain is counted as a PD: ibv_dealloc_pd gives either back */
struct ibv_pd *srq_soft_limit_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_PD) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_PD,
                             srq_soft_alloc_parent_domain(dev, attr));
}

int srq_soft_limit_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd)
{
    return srq_soft_lim_gone(dev, SRQ_SOFT_LIM_PD, srq_soft_dealloc_pd(dev, pd));
}

struct ibv_cq *srq_soft_limit_create_cq_pd(srq_verbs_dev_t *dev, int cqe,
                                           void *cq_context,
                                           struct ibv_comp_channel *channel,
                                           int comp_vector, struct ibv_pd *pd)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_CQ) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_CQ,
                             srq_soft_create_cq_pd(dev, cqe, cq_context,
                                                   channel, comp_vector, pd));
}

struct ibv_cq *srq_soft_limit_create_cq(srq_verbs_dev_t *dev, int cqe,
                                        void *cq_context,
                                        struct ibv_comp_channel *channel,
                                        int comp_vector)
{
    return srq_soft_limit_create_cq_pd(dev, cqe, cq_context, channel,
                                       comp_vector, NULL);
}

int srq_soft_limit_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq)
{
    return srq_soft_lim_gone(dev, SRQ_SOFT_LIM_CQ, srq_soft_destroy_cq(dev, cq));
}

struct ibv_srq *srq_soft_limit_create_srq(srq_verbs_dev_t *dev,
                                          struct ibv_pd *pd,
                                          struct ibv_srq_init_attr *attr)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_SRQ) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_SRQ,
                             srq_soft_create_srq(dev, pd, attr));
}

int srq_soft_limit_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq)
{
    return srq_soft_lim_gone(dev, SRQ_SOFT_LIM_SRQ, srq_soft_destroy_srq(dev, srq));
}

struct ibv_qp *srq_soft_limit_create_qp(srq_verbs_dev_t *dev,
                                        struct ibv_pd *pd,
                                        struct ibv_qp_init_attr *attr)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_QP) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_QP,
                             srq_soft_create_qp(dev, pd, attr));
}

static struct ibv_qp *srq_soft_limit_create_qp_in(srq_verbs_dev_t *dev,
                                                  struct ibv_pd *pd,
                                                  struct ibv_qp_init_attr *attr,
                                                  struct ibv_xrcd *xrcd,
                                                  int *xrcd_users)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_QP) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_QP,
                             srq_soft_create_qp_in(dev, pd, attr, xrcd,
                                                   xrcd_users));
}

/* its checks first, then the QP as srq_soft_limit_create_qp makes it */
struct ibv_qp *srq_soft_limit_create_qp_ex(srq_verbs_dev_t *dev,
                                           struct ibv_qp_init_attr_ex *attr)
{
    return srq_soft_create_qp_ex(dev, attr, srq_soft_limit_create_qp_in);
}

int srq_soft_limit_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                              int (*destroy)(srq_verbs_dev_t*,
                                             struct ibv_qp*))
{
    return srq_soft_lim_gone(dev, SRQ_SOFT_LIM_QP, destroy(dev, qp));
}

struct ibv_ah *srq_soft_limit_create_ah(srq_verbs_dev_t *dev,
                                        struct ibv_pd *pd,
                                        struct ibv_ah_attr *attr)
{
    return !srq_soft_lim_take(dev, SRQ_SOFT_LIM_AH) ? NULL :
           srq_soft_lim_made(dev, SRQ_SOFT_LIM_AH,
                             srq_soft_create_ah(dev, pd, attr));
}

int srq_soft_limit_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah)
{
    return srq_soft_lim_gone(dev, SRQ_SOFT_LIM_AH, srq_soft_destroy_ah(dev, ah));
}
