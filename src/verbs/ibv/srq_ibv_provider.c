/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq libibverbs provider: the soft device as a device of libibverbs.
 *
 * libibverbs opens a device through its provider's alloc_context; a device
 * without sysfs entries gets no kernel file (cmd_fd -1), so the provider
 * builds the whole context. Its cmd_fd is /dev/null, opened for it read
 * only: a descriptor a program can dup as it dups a uverbs one
 * (libibverbs closes it with the context), on which a kernel command
 * fails (EBADF for a write, ENOTTY for an ioctl) as it failed on -1;
 * importing a context by it is refused (srq_ibv_interpose.c). Ours opens a soft instance in uverbs mode
 * (srq_soft_open_ex): libibverbs allocates the instance, with the
 * verbs_context at the place the soft device keeps it, and frees it when
 * the soft device lets go. Each provider operation is the verbs layer's
 * call of the same name (extended QPs: srq_verbs_create_qp_ex); what the soft device does not do keeps
 * libibverbs' own "not supported" entry.
 */
#include "srq_ibv.h"
#include "../soft/srq_soft_api.h"
#include "../srq_verbs_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the verbs_context is inside a soft instance (the same for all) */
static size_t srq_ibv_ctx_offset;

static const struct verbs_context_ops srq_ibv_ctx_ops;

static struct verbs_context *srq_ibv_vctx(struct ibv_context *ctx)
{
    return (struct verbs_context*)((char*)ctx -
                                   offsetof(struct verbs_context, context));
}

srq_verbs_dev_t *srq_ibv_dev(struct ibv_context *ctx)
{
    return (srq_verbs_dev_t*)((char*)srq_ibv_vctx(ctx) - srq_ibv_ctx_offset);
}

/* ---- the device ------------------------------------------------------- */

static void srq_ibv_uninit_device(struct verbs_device *device)
{
    /* static: never freed (its reference count never drops to 0) */
}

static struct verbs_context *srq_ibv_alloc_context(struct ibv_device *device,
                                                   int cmd_fd, void *priv);

static const struct verbs_device_ops srq_ibv_device_ops = {
    .name          = "ucx_srq_soft",
    .alloc_context = srq_ibv_alloc_context,
    .uninit_device = srq_ibv_uninit_device,
};

static struct verbs_device srq_ibv_vdev = {
    .device = {
        .node_type      = IBV_NODE_CA,
        .transport_type = IBV_TRANSPORT_IB,
        .name           = SRQ_IBV_DEV_NAME,
        .dev_name       = SRQ_IBV_UVERBS_NAME,
        .dev_path       = "/sys/class/infiniband_verbs/" SRQ_IBV_UVERBS_NAME,
        .ibdev_path     = "/sys/class/infiniband/" SRQ_IBV_DEV_NAME,
    },
    .ops      = &srq_ibv_device_ops,
    .refcount = 1,   /* ours: libibverbs' holds and puts never free it */
};

struct ibv_device *srq_ibv_device(void)
{
    return &srq_ibv_vdev.device;
}

bool srq_ibv_is_ours(struct ibv_context *ctx)
{
    return (ctx != NULL) && (ctx->device == &srq_ibv_vdev.device);
}

/* ---- contexts ----------------------------------------------------------- */

static void *srq_ibv_alloc(void *arg, size_t size, size_t ctx_offset)
{
    void *mem;

    srq_ibv_ctx_offset = ctx_offset;
    mem = srq_ibv_abi.init_and_alloc_context(
              arg, -1, size, (struct verbs_context*)(uintptr_t)ctx_offset,
              0 /* RDMA_DRIVER_UNKNOWN */);
    if (mem != NULL) {
        srq_ibv_abi.set_ops((struct verbs_context*)((char*)mem + ctx_offset),
                            &srq_ibv_ctx_ops);
    }
    return mem;
}

static void srq_ibv_release(void *arg, void *mem, size_t ctx_offset)
{
    /* closes the async fd, as for any device */
    srq_ibv_abi.uninit_context((struct verbs_context*)((char*)mem +
                                                       ctx_offset));
    free(mem);
}

static struct verbs_context *srq_ibv_alloc_context(struct ibv_device *device,
                                                   int cmd_fd, void *priv)
{
    srq_soft_open_params_t params = {
        .alloc      = srq_ibv_alloc,
        .release    = srq_ibv_release,
        .arg        = device,
        .uverbs_fds = 1,
    };
    struct verbs_context_ops data_ops;
    struct ibv_context *ctx;
    srq_verbs_dev_t *dev;
    int ret;

    if (cmd_fd >= 0) {
        close(cmd_fd); /* ours to close; there is none for our device */
    }
    ret = srq_soft_open_ex(SRQ_IBV_DEV_NAME, &params, &dev);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* SRQ_VERBS_TRACE: the calls served, as any device opened through the
     * verbs layer; before the data path is copied, so that it is traced */
    srq_verbs_trace_attach(dev);
    /* the data path the soft device put in ctx->ops goes into libibverbs'
     * own table too (the rest of it is already there) */
    ctx = srq_verbs_context(dev);
    ctx->cmd_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    memset(&data_ops, 0, sizeof(data_ops));
    data_ops.poll_cq       = ctx->ops.poll_cq;
    data_ops.req_notify_cq = ctx->ops.req_notify_cq;
    data_ops.post_send     = ctx->ops.post_send;
    data_ops.post_recv     = ctx->ops.post_recv;
    data_ops.post_srq_recv = ctx->ops.post_srq_recv;
    /* memory windows: context->ops entries too (ibv_alloc_mw, ibv_bind_mw
     * and ibv_dealloc_mw are inline calls through them) */
    data_ops.alloc_mw      = ctx->ops.alloc_mw;
    data_ops.bind_mw       = ctx->ops.bind_mw;
    data_ops.dealloc_mw    = ctx->ops.dealloc_mw;
    srq_ibv_abi.set_ops(srq_ibv_vctx(ctx), &data_ops);
    return srq_ibv_vctx(ctx);
}

static void srq_ibv_free_context(struct ibv_context *ctx)
{
    srq_verbs_close(srq_ibv_dev(ctx));
}

static void srq_ibv_async_event(struct ibv_context *ctx,
                                struct ibv_async_event *event)
{
    /* nothing is held for an event */
}

/* ---- device and port ---------------------------------------------------- */

static int srq_ibv_query_device_ex(struct ibv_context *ctx,
                                   const struct ibv_query_device_ex_input *in,
                                   struct ibv_device_attr_ex *attr,
                                   size_t attr_size)
{
    struct ibv_device_attr_ex full;
    int ret;

    if (attr_size < sizeof(attr->orig_attr)) {
        return EINVAL;
    }
    /* a program built against older headers passes a shorter struct: it
     * gets the part it knows */
    ret = srq_verbs_query_device_ex(srq_ibv_dev(ctx), &full);
    if (ret == 0) {
        memcpy(attr, &full, (attr_size < sizeof(full)) ? attr_size :
                                                         sizeof(full));
        if (attr_size > sizeof(full)) {
            memset((char*)attr + sizeof(full), 0, attr_size - sizeof(full));
        }
    }
    return ret;
}

static int srq_ibv_query_port(struct ibv_context *ctx, uint8_t port_num,
                              struct ibv_port_attr *attr)
{
    return srq_verbs_query_port(srq_ibv_dev(ctx), port_num, attr);
}

/* ---- PD and MR ---------------------------------------------------------- */

static struct ibv_pd *srq_ibv_alloc_pd(struct ibv_context *ctx)
{
    return srq_verbs_alloc_pd(srq_ibv_dev(ctx));
}

static int srq_ibv_dealloc_pd(struct ibv_pd *pd)
{
    return srq_verbs_dealloc_pd(srq_ibv_dev(pd->context), pd);
}

/* A thread domain is a hint soft0 ignores: its device thread works on the
 * objects whatever the program promises (soft_pd_parent.c) */
static struct ibv_td *srq_ibv_alloc_td(struct ibv_context *ctx,
                                       struct ibv_td_init_attr *attr)
{
    return srq_verbs_alloc_td(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_dealloc_td(struct ibv_td *td)
{
    return srq_verbs_dealloc_td(srq_ibv_dev(td->context), td);
}

/* ibv_dealloc_pd of it comes to dealloc_pd, as of any PD */
static struct ibv_pd *srq_ibv_alloc_parent_domain(
        struct ibv_context *ctx, struct ibv_parent_domain_init_attr *attr)
{
    return srq_verbs_alloc_parent_domain(srq_ibv_dev(ctx), attr);
}

/* libibverbs reads an MR as a struct verbs_mr: ours wraps the soft MR,
 * whose keys are all the data path uses */
typedef struct srq_ibv_mr {
    struct verbs_mr  vmr;
    struct ibv_mr   *soft;
} srq_ibv_mr_t;

static struct ibv_mr *srq_ibv_reg_mr(struct ibv_pd *pd, void *addr,
                                     size_t length, uint64_t hca_va,
                                     int access)
{
    srq_ibv_mr_t *mr;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    /* optional access bits are hints a device may ignore; hca_va: where
     * remote accesses address it, the address itself for ibv_reg_mr (the
     * verb it then is, for the trace) */
    mr->soft = (hca_va == (uintptr_t)addr) ?
               srq_verbs_reg_mr(srq_ibv_dev(pd->context), pd, addr, length,
                                access & ~IBV_ACCESS_OPTIONAL_RANGE) :
               srq_verbs_reg_mr_iova(srq_ibv_dev(pd->context), pd, addr,
                                     length, hca_va,
                                     access & ~IBV_ACCESS_OPTIONAL_RANGE);
    if (mr->soft == NULL) {
        free(mr);
        return NULL;
    }
    mr->vmr.ibv_mr = *mr->soft;
    mr->vmr.access = access;
    return &mr->vmr.ibv_mr;
}

/* Device memory: the soft device's own (srq_soft_api.h); its copies are
 * the struct ibv_dm's ops, set by the soft device */
static struct ibv_dm *srq_ibv_alloc_dm(struct ibv_context *ctx,
                                       struct ibv_alloc_dm_attr *attr)
{
    return srq_soft_alloc_dm(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_free_dm(struct ibv_dm *dm)
{
    return srq_soft_free_dm(srq_ibv_dev(dm->context), dm);
}

static struct ibv_mr *srq_ibv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
                                        uint64_t offset, size_t length,
                                        unsigned int access)
{
    srq_ibv_mr_t *mr;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    mr->soft = srq_soft_reg_dm_mr(srq_ibv_dev(pd->context), pd, dm, offset,
                                  length,
                                  access & ~IBV_ACCESS_OPTIONAL_RANGE);
    if (mr->soft == NULL) {
        free(mr);
        return NULL;
    }
    mr->vmr.ibv_mr = *mr->soft;
    mr->vmr.access = (int)access;
    return &mr->vmr.ibv_mr;
}

static int srq_ibv_advise_mr(struct ibv_pd *pd,
                             enum ibv_advise_mr_advice advice, uint32_t flags,
                             struct ibv_sge *sg_list, uint32_t num_sge)
{
    return srq_verbs_advise_mr(srq_ibv_dev(pd->context), pd, advice, flags,
                               sg_list, num_sge);
}

static int srq_ibv_dereg_mr(struct verbs_mr *vmr)
{
    srq_ibv_mr_t *mr = (srq_ibv_mr_t*)vmr;
    int ret;

    if (vmr->ibv_mr.handle != mr->soft->handle) {
        errno = ENOENT; /* corrupted: the kernel finds no such MR */
        return ENOENT;
    }
    ret = srq_verbs_dereg_mr(srq_ibv_dev(vmr->ibv_mr.context), mr->soft);
    if (ret == 0) {
        free(mr);
    }
    return ret;
}

/* libibverbs checked @flags and the arguments they need, and sets pd,
 * addr and length itself after a success: the keys are ours to update */
static int srq_ibv_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
                            void *addr, size_t length, int access)
{
    srq_ibv_mr_t *mr = (srq_ibv_mr_t*)vmr;
    int ret;

    if (vmr->ibv_mr.handle != mr->soft->handle) {
        errno = EINVAL;
        return EINVAL;
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        access &= ~IBV_ACCESS_OPTIONAL_RANGE;
    }
    ret = srq_verbs_rereg_mr(srq_ibv_dev(vmr->ibv_mr.context), mr->soft,
                             flags, pd, addr, length, access);
    if (ret != 0) {
        return ret; /* errno set */
    }
    vmr->ibv_mr.lkey = mr->soft->lkey;
    vmr->ibv_mr.rkey = mr->soft->rkey;
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        vmr->access = access;
    }
    return 0;
}

/* ---- CQ ----------------------------------------------------------------- */

static struct ibv_cq *srq_ibv_create_cq(struct ibv_context *ctx, int cqe,
                                        struct ibv_comp_channel *channel,
                                        int comp_vector)
{
    /* libibverbs sets cq_context afterwards */
    return srq_verbs_create_cq(srq_ibv_dev(ctx), cqe, NULL, channel,
                               comp_vector);
}

static struct ibv_cq_ex *srq_ibv_create_cq_ex(struct ibv_context *ctx,
                                               struct ibv_cq_init_attr_ex *attr)
{
    return srq_verbs_create_cq_ex(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    return srq_verbs_resize_cq(srq_ibv_dev(cq->context), cq, cqe);
}

static int srq_ibv_destroy_cq(struct ibv_cq *cq)
{
    return srq_verbs_destroy_cq(srq_ibv_dev(cq->context), cq);
}

static void srq_ibv_cq_event(struct ibv_cq *cq)
{
    /* the soft device counted the event when it wrote it */
}

/* ---- SRQ ---------------------------------------------------------------- */

static struct ibv_srq *srq_ibv_create_srq(struct ibv_pd *pd,
                                          struct ibv_srq_init_attr *attr)
{
    return srq_verbs_create_srq(srq_ibv_dev(pd->context), pd, attr);
}

static struct ibv_srq *srq_ibv_create_srq_ex(struct ibv_context *ctx,
                                             struct ibv_srq_init_attr_ex *attr)
{
    return srq_soft_create_srq_ex(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
                                struct ibv_ops_wr **bad_op)
{
    return srq_soft_post_srq_ops(srq_ibv_dev(srq->context), srq, op, bad_op);
}

static int srq_ibv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
    return srq_soft_get_srq_num(srq_ibv_dev(srq->context), srq, srq_num);
}

/* ---- XRC domains (soft0's own: the verbs layer has none) ---------------- */

static struct ibv_xrcd *srq_ibv_open_xrcd(struct ibv_context *ctx,
                                          struct ibv_xrcd_init_attr *attr)
{
    return srq_soft_open_xrcd(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_close_xrcd(struct ibv_xrcd *xrcd)
{
    int ret = srq_soft_close_xrcd(srq_ibv_dev(xrcd->context), xrcd);

    if (ret != 0) {
        errno = ret;
    }
    return ret;
}

static int srq_ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
                              int attr_mask)
{
    return srq_verbs_modify_srq(srq_ibv_dev(srq->context), srq, attr,
                                attr_mask);
}

static int srq_ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    return srq_verbs_query_srq(srq_ibv_dev(srq->context), srq, attr);
}

static int srq_ibv_destroy_srq(struct ibv_srq *srq)
{
    return srq_verbs_destroy_srq(srq_ibv_dev(srq->context), srq);
}

/* ---- QP and AH ---------------------------------------------------------- */

static struct ibv_qp *srq_ibv_create_qp(struct ibv_pd *pd,
                                        struct ibv_qp_init_attr *attr)
{
    return srq_verbs_create_qp(srq_ibv_dev(pd->context), pd, attr);
}

static struct ibv_qp *srq_ibv_create_qp_ex(struct ibv_context *ctx,
                                           struct ibv_qp_init_attr_ex *attr)
{
    return srq_verbs_create_qp_ex(srq_ibv_dev(ctx), attr);
}

static int srq_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                             int attr_mask)
{
    return srq_verbs_modify_qp(srq_ibv_dev(qp->context), qp, attr, attr_mask);
}

static int srq_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                            int attr_mask, struct ibv_qp_init_attr *init_attr)
{
    return srq_verbs_query_qp(srq_ibv_dev(qp->context), qp, attr, attr_mask,
                              init_attr);
}

static int srq_ibv_destroy_qp(struct ibv_qp *qp)
{
    return srq_verbs_destroy_qp(srq_ibv_dev(qp->context), qp);
}

static struct ibv_ah *srq_ibv_create_ah(struct ibv_pd *pd,
                                        struct ibv_ah_attr *attr)
{
    return srq_verbs_create_ah(srq_ibv_dev(pd->context), pd, attr);
}

static int srq_ibv_destroy_ah(struct ibv_ah *ah)
{
    return srq_verbs_destroy_ah(srq_ibv_dev(ah->context), ah);
}

static const struct verbs_context_ops srq_ibv_ctx_ops = {
    .advise_mr       = srq_ibv_advise_mr,
    .alloc_dm        = srq_ibv_alloc_dm,
    .alloc_parent_domain = srq_ibv_alloc_parent_domain,
    .alloc_pd        = srq_ibv_alloc_pd,
    .alloc_td        = srq_ibv_alloc_td,
    .async_event     = srq_ibv_async_event,
    .cq_event        = srq_ibv_cq_event,
    .create_ah       = srq_ibv_create_ah,
    .create_cq       = srq_ibv_create_cq,
    .create_cq_ex    = srq_ibv_create_cq_ex,
    .create_qp       = srq_ibv_create_qp,
    .create_qp_ex    = srq_ibv_create_qp_ex,
    .create_srq      = srq_ibv_create_srq,
    .create_srq_ex   = srq_ibv_create_srq_ex,
    .close_xrcd      = srq_ibv_close_xrcd,
    .get_srq_num     = srq_ibv_get_srq_num,
    .open_xrcd       = srq_ibv_open_xrcd,
    .post_srq_ops    = srq_ibv_post_srq_ops,
    .dealloc_pd      = srq_ibv_dealloc_pd,
    .dealloc_td      = srq_ibv_dealloc_td,
    .dereg_mr        = srq_ibv_dereg_mr,
    .free_dm         = srq_ibv_free_dm,
    .destroy_ah      = srq_ibv_destroy_ah,
    .destroy_cq      = srq_ibv_destroy_cq,
    .destroy_qp      = srq_ibv_destroy_qp,
    .destroy_srq     = srq_ibv_destroy_srq,
    .free_context    = srq_ibv_free_context,
    .modify_qp       = srq_ibv_modify_qp,
    .modify_srq      = srq_ibv_modify_srq,
    .query_device_ex = srq_ibv_query_device_ex,
    .query_port      = srq_ibv_query_port,
    .query_qp        = srq_ibv_query_qp,
    .query_srq       = srq_ibv_query_srq,
    .reg_dm_mr       = srq_ibv_reg_dm_mr,
    .reg_mr          = srq_ibv_reg_mr,
    .rereg_mr        = srq_ibv_rereg_mr,
    .resize_cq       = srq_ibv_resize_cq,
};
