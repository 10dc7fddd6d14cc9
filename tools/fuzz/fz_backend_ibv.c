/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: any libibverbs device, through libibverbs' own calls
 * (soft0 with srq-run --verbs, an HCA, rxe, ...).
 */
#include "fz.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

static int fz_ibv_open(fz_dev_t *d, const char *name)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    int i, flags;

    for (i = 0; (list != NULL) && (list[i] != NULL); ++i) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            d->ctx = ibv_open_device(list[i]);
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (d->ctx == NULL) {
        return ENODEV;
    }
    /* async events are polled for, as the fuzzer never waits blindly */
    flags = fcntl(d->ctx->async_fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(d->ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        return errno;
    }
    return ibv_query_device(d->ctx, &d->attr);
}

static void fz_ibv_close(fz_dev_t *d)
{
    ibv_close_device(d->ctx);
}

static struct ibv_pd *fz_ibv_alloc_pd(fz_dev_t *d)
{
    return ibv_alloc_pd(d->ctx);
}

static int fz_ibv_dealloc_pd(fz_dev_t *d, struct ibv_pd *pd)
{
    return ibv_dealloc_pd(pd);
}

static struct ibv_mr *fz_ibv_reg_mr(fz_dev_t *d, struct ibv_pd *pd,
                                    void *addr, size_t len, int access)
{
    return ibv_reg_mr(pd, addr, len, access);
}

static int fz_ibv_dereg_mr(fz_dev_t *d, struct ibv_mr *mr)
{
    return ibv_dereg_mr(mr);
}

/* libibverbs answers with the step that failed (IBV_REREG_MR_ERR_*) and
 * says why in errno */
static int fz_ibv_rereg_mr(fz_dev_t *d, struct ibv_mr *mr, int flags,
                           struct ibv_pd *pd, void *addr, size_t len,
                           int access)
{
    errno = 0;
    if (ibv_rereg_mr(mr, flags, pd, addr, len, access) == 0) {
        return 0;
    }
    return (errno != 0) ? errno : -1;
}

static int fz_ibv_advise_mr(fz_dev_t *d, struct ibv_pd *pd,
                            enum ibv_advise_mr_advice advice, uint32_t flags,
                            struct ibv_sge *sg_list, uint32_t num_sge)
{
    return ibv_advise_mr(pd, advice, flags, sg_list, num_sge);
}

static int fz_ibv_resize_cq(fz_dev_t *d, struct ibv_cq *cq, int cqe)
{
    return ibv_resize_cq(cq, cqe);
}

static struct ibv_cq *fz_ibv_create_cq(fz_dev_t *d, int cqe)
{
    return ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
}

static int fz_ibv_destroy_cq(fz_dev_t *d, struct ibv_cq *cq)
{
    return ibv_destroy_cq(cq);
}

static struct ibv_srq *fz_ibv_create_srq(fz_dev_t *d, struct ibv_pd *pd,
                                         struct ibv_srq_init_attr *attr)
{
    return ibv_create_srq(pd, attr);
}

static int fz_ibv_modify_srq(fz_dev_t *d, struct ibv_srq *srq,
                             struct ibv_srq_attr *attr, int mask)
{
    return ibv_modify_srq(srq, attr, mask);
}

static int fz_ibv_query_srq(fz_dev_t *d, struct ibv_srq *srq,
                            struct ibv_srq_attr *attr)
{
    return ibv_query_srq(srq, attr);
}

static int fz_ibv_destroy_srq(fz_dev_t *d, struct ibv_srq *srq)
{
    return ibv_destroy_srq(srq);
}

static struct ibv_qp *fz_ibv_create_qp(fz_dev_t *d, struct ibv_pd *pd,
                                       struct ibv_qp_init_attr *attr)
{
    return ibv_create_qp(pd, attr);
}

static struct ibv_qp *fz_ibv_create_qp_ex(fz_dev_t *d,
                                          struct ibv_qp_init_attr_ex *attr)
{
    return ibv_create_qp_ex(d->ctx, attr);
}

static int fz_ibv_modify_qp(fz_dev_t *d, struct ibv_qp *qp,
                            struct ibv_qp_attr *attr, int mask)
{
    return ibv_modify_qp(qp, attr, mask);
}

static int fz_ibv_query_qp(fz_dev_t *d, struct ibv_qp *qp,
                           struct ibv_qp_attr *attr, int mask,
                           struct ibv_qp_init_attr *init)
{
    return ibv_query_qp(qp, attr, mask, init);
}

static int fz_ibv_destroy_qp(fz_dev_t *d, struct ibv_qp *qp)
{
    return ibv_destroy_qp(qp);
}

static struct ibv_ah *fz_ibv_create_ah(fz_dev_t *d, struct ibv_pd *pd,
                                       struct ibv_ah_attr *attr)
{
    return ibv_create_ah(pd, attr);
}

static int fz_ibv_destroy_ah(fz_dev_t *d, struct ibv_ah *ah)
{
    return ibv_destroy_ah(ah);
}

/* Port 1 by its GID (what a RoCE port needs) and its LID (IB) */
static int fz_ibv_self_ah_attr(fz_dev_t *d, struct ibv_ah_attr *attr)
{
    struct ibv_port_attr port;
    int ret = ibv_query_port(d->ctx, 1, &port);

    if (ret != 0) {
        return ret;
    }
    memset(attr, 0, sizeof(*attr));
    attr->port_num  = 1;
    attr->dlid      = port.lid;
    attr->is_global = 1;
    attr->grh.hop_limit = 64;
    return ibv_query_gid(d->ctx, 1, 0, &attr->grh.dgid);
}

static int fz_ibv_get_async_event(fz_dev_t *d, struct ibv_async_event *ev)
{
    return (ibv_get_async_event(d->ctx, ev) == 0) ? 0 :
           (errno == EWOULDBLOCK) ? EAGAIN : errno;
}

static void fz_ibv_ack_async_event(fz_dev_t *d, struct ibv_async_event *ev)
{
    ibv_ack_async_event(ev);
}

static uint64_t fz_ibv_max_dm(fz_dev_t *d)
{
    struct ibv_device_attr_ex attr;

    return (ibv_query_device_ex(d->ctx, NULL, &attr) == 0) ?
           attr.max_dm_size : 0;
}

static struct ibv_dm *fz_ibv_alloc_dm(fz_dev_t *d,
                                      struct ibv_alloc_dm_attr *attr)
{
    return ibv_alloc_dm(d->ctx, attr);
}

static struct ibv_xrcd *fz_ibv_open_xrcd(fz_dev_t *d,
                                         struct ibv_xrcd_init_attr *attr)
{
    return ibv_open_xrcd(d->ctx, attr);
}

static int fz_ibv_close_xrcd(fz_dev_t *d, struct ibv_xrcd *xrcd)
{
    return ibv_close_xrcd(xrcd);
}

static struct ibv_srq *fz_ibv_create_srq_ex(fz_dev_t *d,
                                            struct ibv_srq_init_attr_ex *attr)
{
    return ibv_create_srq_ex(d->ctx, attr);
}

static int fz_ibv_get_srq_num(fz_dev_t *d, struct ibv_srq *srq,
                              uint32_t *srq_num)
{
    return ibv_get_srq_num(srq, srq_num);
}

static int fz_ibv_free_dm(fz_dev_t *d, struct ibv_dm *dm)
{
    return ibv_free_dm(dm);
}

static struct ibv_mr *fz_ibv_reg_dm_mr(fz_dev_t *d, struct ibv_pd *pd,
                                       struct ibv_dm *dm, uint64_t offset,
                                       size_t len, unsigned int access)
{
    return ibv_reg_dm_mr(pd, dm, offset, len, access);
}

static struct ibv_td *fz_ibv_alloc_td(fz_dev_t *d,
                                      struct ibv_td_init_attr *attr)
{
    return ibv_alloc_td(d->ctx, attr);
}

static int fz_ibv_dealloc_td(fz_dev_t *d, struct ibv_td *td)
{
    return ibv_dealloc_td(td);
}

static struct ibv_pd *fz_ibv_alloc_parent_domain(
        fz_dev_t *d, struct ibv_parent_domain_init_attr *attr)
{
    return ibv_alloc_parent_domain(d->ctx, attr);
}

const fz_backend_t fz_backend_ibv = {
    .name            = "libibverbs",
    .open            = fz_ibv_open,
    .close           = fz_ibv_close,
    .alloc_pd        = fz_ibv_alloc_pd,
    .dealloc_pd      = fz_ibv_dealloc_pd,
    .reg_mr          = fz_ibv_reg_mr,
    .dereg_mr        = fz_ibv_dereg_mr,
    .rereg_mr        = fz_ibv_rereg_mr,
    .advise_mr       = fz_ibv_advise_mr,
    .max_dm          = fz_ibv_max_dm,
    .alloc_dm        = fz_ibv_alloc_dm,
    .free_dm         = fz_ibv_free_dm,
    .open_xrcd       = fz_ibv_open_xrcd,
    .close_xrcd      = fz_ibv_close_xrcd,
    .create_srq_ex   = fz_ibv_create_srq_ex,
    .get_srq_num     = fz_ibv_get_srq_num,
    .reg_dm_mr       = fz_ibv_reg_dm_mr,
    .alloc_td        = fz_ibv_alloc_td,
    .dealloc_td      = fz_ibv_dealloc_td,
    .alloc_parent_domain = fz_ibv_alloc_parent_domain,
    .create_cq       = fz_ibv_create_cq,
    .destroy_cq      = fz_ibv_destroy_cq,
    .resize_cq       = fz_ibv_resize_cq,
    .create_srq      = fz_ibv_create_srq,
    .modify_srq      = fz_ibv_modify_srq,
    .query_srq       = fz_ibv_query_srq,
    .destroy_srq     = fz_ibv_destroy_srq,
    .create_qp       = fz_ibv_create_qp,
    .create_qp_ex    = fz_ibv_create_qp_ex,
    .modify_qp       = fz_ibv_modify_qp,
    .query_qp        = fz_ibv_query_qp,
    .destroy_qp      = fz_ibv_destroy_qp,
    .create_ah       = fz_ibv_create_ah,
    .destroy_ah      = fz_ibv_destroy_ah,
    .self_ah_attr    = fz_ibv_self_ah_attr,
    .get_async_event = fz_ibv_get_async_event,
    .ack_async_event = fz_ibv_ack_async_event,
};
