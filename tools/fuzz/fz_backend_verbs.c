/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: the device through the project's verbs API (src/verbs):
 * the built-in soft device (or an rdma-core device by the same calls).
 */
#include "fz.h"
#include "verbs/srq_verbs.h"

#include <errno.h>

#define DEV(_d) ((srq_verbs_dev_t*)(_d)->priv)

static int fz_verbs_open(fz_dev_t *d, const char *name)
{
    srq_verbs_dev_t *dev;
    int ret = srq_verbs_open(name, &dev);

    if (ret == 0) {
        d->priv = dev;
        d->ctx  = srq_verbs_context(dev);
        ret     = srq_verbs_query_device(dev, &d->attr);
    }
    return ret;
}

static void fz_verbs_close(fz_dev_t *d)
{
    srq_verbs_close(DEV(d));
}

static struct ibv_pd *fz_verbs_alloc_pd(fz_dev_t *d)
{
    return srq_verbs_alloc_pd(DEV(d));
}

static int fz_verbs_dealloc_pd(fz_dev_t *d, struct ibv_pd *pd)
{
    return srq_verbs_dealloc_pd(DEV(d), pd);
}

static struct ibv_mr *fz_verbs_reg_mr(fz_dev_t *d, struct ibv_pd *pd,
                                      void *addr, size_t len, int access)
{
    return srq_verbs_reg_mr(DEV(d), pd, addr, len, access);
}

static int fz_verbs_dereg_mr(fz_dev_t *d, struct ibv_mr *mr)
{
    return srq_verbs_dereg_mr(DEV(d), mr);
}

static int fz_verbs_rereg_mr(fz_dev_t *d, struct ibv_mr *mr, int flags,
                             struct ibv_pd *pd, void *addr, size_t len,
                             int access)
{
    return srq_verbs_rereg_mr(DEV(d), mr, flags, pd, addr, len, access);
}

static int fz_verbs_advise_mr(fz_dev_t *d, struct ibv_pd *pd,
                              enum ibv_advise_mr_advice advice, uint32_t flags,
                              struct ibv_sge *sg_list, uint32_t num_sge)
{
    return srq_verbs_advise_mr(DEV(d), pd, advice, flags, sg_list, num_sge);
}

static int fz_verbs_resize_cq(fz_dev_t *d, struct ibv_cq *cq, int cqe)
{
    return srq_verbs_resize_cq(DEV(d), cq, cqe);
}

static struct ibv_cq *fz_verbs_create_cq(fz_dev_t *d, int cqe)
{
    return srq_verbs_create_cq(DEV(d), cqe, NULL, NULL, 0);
}

static int fz_verbs_destroy_cq(fz_dev_t *d, struct ibv_cq *cq)
{
    return srq_verbs_destroy_cq(DEV(d), cq);
}

static struct ibv_srq *fz_verbs_create_srq(fz_dev_t *d, struct ibv_pd *pd,
                                           struct ibv_srq_init_attr *attr)
{
    return srq_verbs_create_srq(DEV(d), pd, attr);
}

static int fz_verbs_modify_srq(fz_dev_t *d, struct ibv_srq *srq,
                               struct ibv_srq_attr *attr, int mask)
{
    return srq_verbs_modify_srq(DEV(d), srq, attr, mask);
}

static int fz_verbs_query_srq(fz_dev_t *d, struct ibv_srq *srq,
                              struct ibv_srq_attr *attr)
{
    return srq_verbs_query_srq(DEV(d), srq, attr);
}

static int fz_verbs_destroy_srq(fz_dev_t *d, struct ibv_srq *srq)
{
    return srq_verbs_destroy_srq(DEV(d), srq);
}

static struct ibv_qp *fz_verbs_create_qp(fz_dev_t *d, struct ibv_pd *pd,
                                         struct ibv_qp_init_attr *attr)
{
    return srq_verbs_create_qp(DEV(d), pd, attr);
}

static struct ibv_qp *fz_verbs_create_qp_ex(fz_dev_t *d,
                                            struct ibv_qp_init_attr_ex *attr)
{
    return srq_verbs_create_qp_ex(DEV(d), attr);
}

static int fz_verbs_modify_qp(fz_dev_t *d, struct ibv_qp *qp,
                              struct ibv_qp_attr *attr, int mask)
{
    return srq_verbs_modify_qp(DEV(d), qp, attr, mask);
}

static int fz_verbs_query_qp(fz_dev_t *d, struct ibv_qp *qp,
                             struct ibv_qp_attr *attr, int mask,
                             struct ibv_qp_init_attr *init)
{
    return srq_verbs_query_qp(DEV(d), qp, attr, mask, init);
}

static int fz_verbs_destroy_qp(fz_dev_t *d, struct ibv_qp *qp)
{
    return srq_verbs_destroy_qp(DEV(d), qp);
}

static struct ibv_ah *fz_verbs_create_ah(fz_dev_t *d, struct ibv_pd *pd,
                                         struct ibv_ah_attr *attr)
{
    return srq_verbs_create_ah(DEV(d), pd, attr);
}

static int fz_verbs_destroy_ah(fz_dev_t *d, struct ibv_ah *ah)
{
    return srq_verbs_destroy_ah(DEV(d), ah);
}

static int fz_verbs_self_ah_attr(fz_dev_t *d, struct ibv_ah_attr *attr)
{
    srq_verbs_port_addr_t addr;
    int ret = srq_verbs_port_addr(DEV(d), 1, &addr);

    return (ret != 0) ? ret : srq_verbs_ah_attr(DEV(d), 1, &addr, attr);
}

static int fz_verbs_get_async_event(fz_dev_t *d, struct ibv_async_event *ev)
{
    return srq_verbs_get_async_event(DEV(d), ev);
}

static void fz_verbs_ack_async_event(fz_dev_t *d, struct ibv_async_event *ev)
{
    srq_verbs_ack_async_event(DEV(d), ev);
}

/* Device memory: the project API has none (the transport uses none; a
 * soft device's own calls are reached through libibverbs, --ibv), so a
 * traced run replays */
static uint64_t fz_verbs_max_dm(fz_dev_t *d)
{
    return 0;
}

static struct ibv_td *fz_verbs_alloc_td(fz_dev_t *d,
                                        struct ibv_td_init_attr *attr)
{
    return srq_verbs_alloc_td(DEV(d), attr);
}

static int fz_verbs_dealloc_td(fz_dev_t *d, struct ibv_td *td)
{
    return srq_verbs_dealloc_td(DEV(d), td);
}

static struct ibv_pd *fz_verbs_alloc_parent_domain(
        fz_dev_t *d, struct ibv_parent_domain_init_attr *attr)
{
    return srq_verbs_alloc_parent_domain(DEV(d), attr);
}

const fz_backend_t fz_backend_verbs = {
    .name            = "project API",
    .open            = fz_verbs_open,
    .close           = fz_verbs_close,
    .alloc_pd        = fz_verbs_alloc_pd,
    .dealloc_pd      = fz_verbs_dealloc_pd,
    .reg_mr          = fz_verbs_reg_mr,
    .dereg_mr        = fz_verbs_dereg_mr,
    .rereg_mr        = fz_verbs_rereg_mr,
    .advise_mr       = fz_verbs_advise_mr,
    .max_dm          = fz_verbs_max_dm,
    .alloc_td        = fz_verbs_alloc_td,
    .dealloc_td      = fz_verbs_dealloc_td,
    .alloc_parent_domain = fz_verbs_alloc_parent_domain,
    .create_cq       = fz_verbs_create_cq,
    .destroy_cq      = fz_verbs_destroy_cq,
    .resize_cq       = fz_verbs_resize_cq,
    .create_srq      = fz_verbs_create_srq,
    .modify_srq      = fz_verbs_modify_srq,
    .query_srq       = fz_verbs_query_srq,
    .destroy_srq     = fz_verbs_destroy_srq,
    .create_qp       = fz_verbs_create_qp,
    .create_qp_ex    = fz_verbs_create_qp_ex,
    .modify_qp       = fz_verbs_modify_qp,
    .query_qp        = fz_verbs_query_qp,
    .destroy_qp      = fz_verbs_destroy_qp,
    .create_ah       = fz_verbs_create_ah,
    .destroy_ah      = fz_verbs_destroy_ah,
    .self_ah_attr    = fz_verbs_self_ah_attr,
    .get_async_event = fz_verbs_get_async_event,
    .ack_async_event = fz_verbs_ack_async_event,
};
