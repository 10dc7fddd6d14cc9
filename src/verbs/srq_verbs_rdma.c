/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: rdma-core devices, through libibverbs.
 */
#include "srq_verbs.h"
#include "dev/srq_verbs_dev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct srq_verbs_rdma_dev {
    srq_verbs_dev_t super;
} srq_verbs_rdma_dev_t;

static const srq_verbs_dev_ops_t srq_verbs_rdma_ops;

/* libibverbs reports failure as -1/errno or as a negative/positive errno */
static int srq_verbs_rdma_ret(int ret)
{
    if (ret == 0) {
        return 0;
    }
    return (ret == -1) ? errno : abs(ret);
}

int srq_verbs_rdma_get_device_list(srq_verbs_dev_info_t **list_p, int *num_p)
{
    struct ibv_device **devices;
    srq_verbs_dev_info_t *list;
    int num, i;

    devices = ibv_get_device_list(&num);
    if (devices == NULL) {
        /* no kernel support, no devices: an empty list */
        *list_p = NULL;
        *num_p  = 0;
        return 0;
    }

    list = calloc(num ? num : 1, sizeof(*list));
    if (list == NULL) {
        ibv_free_device_list(devices);
        return ENOMEM;
    }
    for (i = 0; i < num; ++i) {
        strncpy(list[i].name, ibv_get_device_name(devices[i]),
                sizeof(list[i].name) - 1);
        list[i].kind = SRQ_VERBS_DEV_RDMA;
    }
    ibv_free_device_list(devices);

    *list_p = list;
    *num_p  = num;
    return 0;
}

int srq_verbs_rdma_open(const char *name, srq_verbs_dev_t **dev_p)
{
    struct ibv_device **devices;
    srq_verbs_rdma_dev_t *dev;
    struct ibv_context *ctx = NULL;
    int num, i, flags;

    devices = ibv_get_device_list(&num);
    if (devices == NULL) {
        return ENODEV;
    }
    for (i = 0; i < num; ++i) {
        if (!strcmp(ibv_get_device_name(devices[i]), name)) {
            ctx = ibv_open_device(devices[i]);
            break;
        }
    }
    ibv_free_device_list(devices);
    if (ctx == NULL) {
        return (i == num) ? ENODEV : errno;
    }

    /* srq_verbs_get_async_event() never blocks */
    flags = fcntl(ctx->async_fd, F_GETFL);
    if ((flags < 0) || (fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ibv_close_device(ctx);
        return errno;
    }

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        ibv_close_device(ctx);
        return ENOMEM;
    }
    dev->super.ops     = &srq_verbs_rdma_ops;
    dev->super.kind    = SRQ_VERBS_DEV_RDMA;
    dev->super.context = ctx;
    strncpy(dev->super.name, name, sizeof(dev->super.name) - 1);
    *dev_p = &dev->super;
    return 0;
}

static void srq_verbs_rdma_close(srq_verbs_dev_t *dev)
{
    ibv_close_device(dev->context);
    free(dev);
}

static int srq_verbs_rdma_query_device(srq_verbs_dev_t *dev,
                                       struct ibv_device_attr *attr)
{
    return srq_verbs_rdma_ret(ibv_query_device(dev->context, attr));
}

static int srq_verbs_rdma_query_device_ex(srq_verbs_dev_t *dev,
                                          struct ibv_device_attr_ex *attr)
{
    return srq_verbs_rdma_ret(ibv_query_device_ex(dev->context, NULL, attr));
}

static int srq_verbs_rdma_query_port(srq_verbs_dev_t *dev, uint8_t port_num,
                                     struct ibv_port_attr *attr)
{
    return srq_verbs_rdma_ret(ibv_query_port(dev->context, port_num, attr));
}

static int srq_verbs_rdma_port_addr(srq_verbs_dev_t *dev, uint8_t port_num,
                                    srq_verbs_port_addr_t *addr)
{
    struct ibv_port_attr port_attr;
    union ibv_gid gid;
    int ret;

    ret = srq_verbs_rdma_query_port(dev, port_num, &port_attr);
    if (ret != 0) {
        return ret;
    }
    ret = srq_verbs_rdma_ret(ibv_query_gid(dev->context, port_num, 0, &gid));
    if (ret != 0) {
        return ret;
    }
    memset(addr, 0, sizeof(*addr));
    addr->kind     = SRQ_VERBS_DEV_RDMA;
    addr->port_num = port_num;
    addr->lid      = htons(port_attr.lid);
    memcpy(addr->gid, gid.raw, sizeof(addr->gid));
    return 0;
}

/*
 * Can @port_num reach the port at @addr, and how? The rule UCX's ib
 * transports apply:
 *  - InfiniBand: a port of the same subnet (GID subnet prefix), addressed
 *    by the LID its subnet manager gave it; no routers are assumed, so a
 *    port of another subnet, or one without a LID (RoCE, or an IB port not
 *    yet configured), is unreachable;
 *  - RoCE (Ethernet link layer): by GID, always with a GRH; an address
 *    without a GID, or with a LID (an IB port), is unreachable.
 */
static int srq_verbs_rdma_ah_attr(srq_verbs_dev_t *dev, uint8_t port_num,
                                  const srq_verbs_port_addr_t *addr,
                                  struct ibv_ah_attr *ah_attr)
{
    static const uint8_t no_gid[sizeof(addr->gid)];
    struct ibv_port_attr port_attr;
    union ibv_gid gid;
    int ret;

    ret = srq_verbs_rdma_query_port(dev, port_num, &port_attr);
    if (ret != 0) {
        return ret;
    }
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->port_num = port_num;

    if (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        if ((addr->lid != 0) || !memcmp(addr->gid, no_gid, sizeof(no_gid))) {
            return EHOSTUNREACH;
        }
        ah_attr->is_global      = 1;
        ah_attr->grh.hop_limit  = 64;
        ah_attr->grh.sgid_index = 0;
        memcpy(ah_attr->grh.dgid.raw, addr->gid, sizeof(addr->gid));
        return 0;
    }

    ret = srq_verbs_rdma_ret(ibv_query_gid(dev->context, port_num, 0, &gid));
    if (ret != 0) {
        return ret;
    }
    if (memcmp(gid.raw, addr->gid, 8) != 0) {
        return ENETUNREACH; /* another subnet */
    }
    if (addr->lid == 0) {
        return EHOSTUNREACH;
    }
    ah_attr->dlid = ntohs(addr->lid);
    return 0;
}

static struct ibv_pd *srq_verbs_rdma_alloc_pd(srq_verbs_dev_t *dev)
{
    return ibv_alloc_pd(dev->context);
}

static int srq_verbs_rdma_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd)
{
    return srq_verbs_rdma_ret(ibv_dealloc_pd(pd));
}

static struct ibv_td *srq_verbs_rdma_alloc_td(srq_verbs_dev_t *dev,
                                              struct ibv_td_init_attr *attr)
{
    return ibv_alloc_td(dev->context, attr);
}

static int srq_verbs_rdma_dealloc_td(srq_verbs_dev_t *dev, struct ibv_td *td)
{
    return srq_verbs_rdma_ret(ibv_dealloc_td(td));
}

static struct ibv_pd *srq_verbs_rdma_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr)
{
    return ibv_alloc_parent_domain(dev->context, attr);
}

static struct ibv_mr *srq_verbs_rdma_reg_mr(srq_verbs_dev_t *dev,
                                            struct ibv_pd *pd, void *addr,
                                            size_t length, int access)
{
    return ibv_reg_mr(pd, addr, length, access);
}

static struct ibv_mr *srq_verbs_rdma_reg_mr_iova(srq_verbs_dev_t *dev,
                                                 struct ibv_pd *pd, void *addr,
                                                 size_t length, uint64_t iova,
                                                 int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

static int srq_verbs_rdma_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr)
{
    return srq_verbs_rdma_ret(ibv_dereg_mr(mr));
}

/* ibv_rereg_mr answers with an IBV_REREG_MR_ERR_* value (which step
 * failed) and says why in errno */
static int srq_verbs_rdma_rereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr,
                                   int flags, struct ibv_pd *pd, void *addr,
                                   size_t length, int access)
{
    errno = 0;
    if (ibv_rereg_mr(mr, flags, pd, addr, length, access) == 0) {
        return 0;
    }
    return (errno != 0) ? errno : EIO;
}

static int srq_verbs_rdma_advise_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    enum ibv_advise_mr_advice advice,
                                    uint32_t flags, struct ibv_sge *sg_list,
                                    uint32_t num_sge)
{
    return srq_verbs_rdma_ret(ibv_advise_mr(pd, advice, flags, sg_list,
                                            num_sge));
}

static struct ibv_comp_channel *
srq_verbs_rdma_create_comp_channel(srq_verbs_dev_t *dev)
{
    return ibv_create_comp_channel(dev->context);
}

static int srq_verbs_rdma_destroy_comp_channel(srq_verbs_dev_t *dev,
                                               struct ibv_comp_channel *channel)
{
    return srq_verbs_rdma_ret(ibv_destroy_comp_channel(channel));
}

static struct ibv_cq *srq_verbs_rdma_create_cq(srq_verbs_dev_t *dev, int cqe,
                                               void *cq_context,
                                               struct ibv_comp_channel *channel,
                                               int comp_vector)
{
    return ibv_create_cq(dev->context, cqe, cq_context, channel, comp_vector);
}

static int srq_verbs_rdma_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq)
{
    return srq_verbs_rdma_ret(ibv_destroy_cq(cq));
}

static struct ibv_cq_ex *
srq_verbs_rdma_create_cq_ex(srq_verbs_dev_t *dev,
                            struct ibv_cq_init_attr_ex *attr)
{
    return ibv_create_cq_ex(dev->context, attr);
}

static int srq_verbs_rdma_resize_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                                    int cqe)
{
    return srq_verbs_rdma_ret(ibv_resize_cq(cq, cqe));
}

static int srq_verbs_rdma_get_cq_event(srq_verbs_dev_t *dev,
                                       struct ibv_comp_channel *channel,
                                       struct ibv_cq **cq_p,
                                       void **cq_context_p)
{
    return srq_verbs_rdma_ret(ibv_get_cq_event(channel, cq_p, cq_context_p));
}

static void srq_verbs_rdma_ack_cq_events(srq_verbs_dev_t *dev,
                                         struct ibv_cq *cq, unsigned nevents)
{
    ibv_ack_cq_events(cq, nevents);
}

static struct ibv_srq *srq_verbs_rdma_create_srq(srq_verbs_dev_t *dev,
                                                 struct ibv_pd *pd,
                                                 struct ibv_srq_init_attr *attr)
{
    return ibv_create_srq(pd, attr);
}

static int srq_verbs_rdma_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                                     struct ibv_srq_attr *attr, int attr_mask)
{
    return srq_verbs_rdma_ret(ibv_modify_srq(srq, attr, attr_mask));
}

static int srq_verbs_rdma_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                                    struct ibv_srq_attr *attr)
{
    return srq_verbs_rdma_ret(ibv_query_srq(srq, attr));
}

static int srq_verbs_rdma_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq)
{
    return srq_verbs_rdma_ret(ibv_destroy_srq(srq));
}

static struct ibv_srq *
srq_verbs_rdma_create_srq_ex(srq_verbs_dev_t *dev,
                             struct ibv_srq_init_attr_ex *attr)
{
    return ibv_create_srq_ex(dev->context, attr);
}

static int srq_verbs_rdma_post_srq_ops(srq_verbs_dev_t *dev,
                                       struct ibv_srq *srq,
                                       struct ibv_ops_wr *wr,
                                       struct ibv_ops_wr **bad_wr)
{
    return ibv_post_srq_ops(srq, wr, bad_wr);
}

static struct ibv_qp *srq_verbs_rdma_create_qp(srq_verbs_dev_t *dev,
                                               struct ibv_pd *pd,
                                               struct ibv_qp_init_attr *attr)
{
    return ibv_create_qp(pd, attr);
}

static struct ibv_qp *srq_verbs_rdma_create_qp_ex(
    srq_verbs_dev_t *dev, struct ibv_qp_init_attr_ex *attr)
{
    return ibv_create_qp_ex(dev->context, attr);
}

static int srq_verbs_rdma_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                                    struct ibv_qp_attr *attr, int attr_mask)
{
    return srq_verbs_rdma_ret(ibv_modify_qp(qp, attr, attr_mask));
}

static int srq_verbs_rdma_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                                   struct ibv_qp_attr *attr, int attr_mask,
                                   struct ibv_qp_init_attr *init_attr)
{
    return srq_verbs_rdma_ret(ibv_query_qp(qp, attr, attr_mask, init_attr));
}

static int srq_verbs_rdma_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp)
{
    return srq_verbs_rdma_ret(ibv_destroy_qp(qp));
}

static struct ibv_ah *srq_verbs_rdma_create_ah(srq_verbs_dev_t *dev,
                                               struct ibv_pd *pd,
                                               struct ibv_ah_attr *attr)
{
    return ibv_create_ah(pd, attr);
}

static int srq_verbs_rdma_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah)
{
    return srq_verbs_rdma_ret(ibv_destroy_ah(ah));
}

static int srq_verbs_rdma_async_fd(srq_verbs_dev_t *dev)
{
    return dev->context->async_fd;
}

static int srq_verbs_rdma_get_async_event(srq_verbs_dev_t *dev,
                                          struct ibv_async_event *event)
{
    return srq_verbs_rdma_ret(ibv_get_async_event(dev->context, event));
}

static void srq_verbs_rdma_ack_async_event(srq_verbs_dev_t *dev,
                                           struct ibv_async_event *event)
{
    ibv_ack_async_event(event);
}

/*
 * Verbs count no RNR NAKs per SRQ; the port counter out_of_buffer (sysfs)
 * counts those of every SRQ and QP of every process on the port, so one
 * rank's RNR would read as every rank's: not a signal for one interface.
 */
static int srq_verbs_rdma_query_srq_rnr(srq_verbs_dev_t *dev,
                                        struct ibv_srq *srq,
                                        uint64_t *count_p)
{
    return ENOTSUP;
}

static const srq_verbs_dev_ops_t srq_verbs_rdma_ops = {
    .close                = srq_verbs_rdma_close,
    .query_device         = srq_verbs_rdma_query_device,
    .query_device_ex      = srq_verbs_rdma_query_device_ex,
    .query_port           = srq_verbs_rdma_query_port,
    .port_addr            = srq_verbs_rdma_port_addr,
    .ah_attr              = srq_verbs_rdma_ah_attr,
    .alloc_pd             = srq_verbs_rdma_alloc_pd,
    .dealloc_pd           = srq_verbs_rdma_dealloc_pd,
    .alloc_td             = srq_verbs_rdma_alloc_td,
    .dealloc_td           = srq_verbs_rdma_dealloc_td,
    .alloc_parent_domain  = srq_verbs_rdma_alloc_parent_domain,
    .reg_mr               = srq_verbs_rdma_reg_mr,
    .reg_mr_iova          = srq_verbs_rdma_reg_mr_iova,
    .dereg_mr             = srq_verbs_rdma_dereg_mr,
    .rereg_mr             = srq_verbs_rdma_rereg_mr,
    .advise_mr            = srq_verbs_rdma_advise_mr,
    .create_comp_channel  = srq_verbs_rdma_create_comp_channel,
    .destroy_comp_channel = srq_verbs_rdma_destroy_comp_channel,
    .create_cq            = srq_verbs_rdma_create_cq,
    .destroy_cq           = srq_verbs_rdma_destroy_cq,
    .create_cq_ex         = srq_verbs_rdma_create_cq_ex,
    .resize_cq            = srq_verbs_rdma_resize_cq,
    .get_cq_event         = srq_verbs_rdma_get_cq_event,
    .ack_cq_events        = srq_verbs_rdma_ack_cq_events,
    .create_srq           = srq_verbs_rdma_create_srq,
    .modify_srq           = srq_verbs_rdma_modify_srq,
    .query_srq            = srq_verbs_rdma_query_srq,
    .destroy_srq          = srq_verbs_rdma_destroy_srq,
    .create_srq_ex        = srq_verbs_rdma_create_srq_ex,
    .post_srq_ops         = srq_verbs_rdma_post_srq_ops,
    .create_qp            = srq_verbs_rdma_create_qp,
    .create_qp_ex         = srq_verbs_rdma_create_qp_ex,
    .modify_qp            = srq_verbs_rdma_modify_qp,
    .query_qp             = srq_verbs_rdma_query_qp,
    .destroy_qp           = srq_verbs_rdma_destroy_qp,
    .create_ah            = srq_verbs_rdma_create_ah,
    .destroy_ah           = srq_verbs_rdma_destroy_ah,
    .async_fd             = srq_verbs_rdma_async_fd,
    .get_async_event      = srq_verbs_rdma_get_async_event,
    .ack_async_event      = srq_verbs_rdma_ack_async_event,
    .query_srq_rnr        = srq_verbs_rdma_query_srq_rnr,
};
