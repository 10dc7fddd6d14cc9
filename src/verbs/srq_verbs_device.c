/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: device list, open, and dispatch of control-path
 * calls to the device kind (rdma-core or soft).
 */
#include "srq_verbs.h"
#include "dev/srq_verbs_dev.h"
#include "srq_verbs_trace.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool srq_verbs_list_has(const srq_verbs_dev_info_t *list, int num,
                               const char *name)
{
    int i;

    for (i = 0; i < num; ++i) {
        if (strcmp(list[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* Append the devices of @add whose names are not listed yet: a soft device
 * that libibverbs already shows (srq-run --verbs) is listed once, as the
 * rdma-core device it is there, and opened through rdma-core */
static int srq_verbs_append_list(srq_verbs_dev_info_t **list_p, int *num_p,
                                 srq_verbs_dev_info_t *add, int num_add)
{
    srq_verbs_dev_info_t *list;
    int i;

    if (num_add == 0) {
        return 0;
    }
    list = realloc(*list_p, sizeof(*list) * (*num_p + num_add));
    if (list == NULL) {
        return ENOMEM;
    }
    *list_p = list;
    for (i = 0; i < num_add; ++i) {
        if (!srq_verbs_list_has(list, *num_p, add[i].name)) {
            list[(*num_p)++] = add[i];
        }
    }
    return 0;
}

int srq_verbs_get_device_list(srq_verbs_soft_mode_t soft_mode,
                              srq_verbs_dev_info_t **list_p, int *num_p)
{
    srq_verbs_dev_info_t *list = NULL, *part;
    int num = 0, num_part, ret;

    /* No rdma-core device (or no kernel support) is not an error */
    if (srq_verbs_rdma_get_device_list(&part, &num_part) == 0) {
        ret = srq_verbs_append_list(&list, &num, part, num_part);
        free(part);
        if (ret != 0) {
            goto err;
        }
    }

    if ((soft_mode == SRQ_VERBS_SOFT_YES) ||
        ((soft_mode == SRQ_VERBS_SOFT_AUTO) && (num == 0))) {
        ret = srq_soft_get_device_list(&part, &num_part);
        if (ret != 0) {
            goto err;
        }
        ret = srq_verbs_append_list(&list, &num, part, num_part);
        free(part);
        if (ret != 0) {
            goto err;
        }
    }

    *list_p = list;
    *num_p  = num;
    return 0;

err:
    free(list);
    return ret;
}

void srq_verbs_free_device_list(srq_verbs_dev_info_t *list)
{
    free(list);
}

int srq_verbs_open(const char *name, srq_verbs_dev_t **dev_p)
{
    srq_verbs_dev_info_t *list;
    int num, i, ret;

    ret = srq_verbs_get_device_list(SRQ_VERBS_SOFT_YES, &list, &num);
    if (ret != 0) {
        return ret;
    }

    ret = ENODEV;
    for (i = 0; i < num; ++i) {
        if (strcmp(list[i].name, name) != 0) {
            continue;
        }
        ret = (list[i].kind == SRQ_VERBS_DEV_SOFT) ?
              srq_soft_open(name, dev_p) : srq_verbs_rdma_open(name, dev_p);
        if (ret == 0) {
            srq_verbs_trace_attach(*dev_p); /* SRQ_VERBS_TRACE, if set */
        }
        break;
    }

    srq_verbs_free_device_list(list);
    return ret;
}

void srq_verbs_close(srq_verbs_dev_t *dev)
{
    dev->ops->close(dev);
}

srq_verbs_dev_kind_t srq_verbs_dev_kind(const srq_verbs_dev_t *dev)
{
    return dev->kind;
}

const char *srq_verbs_dev_name(const srq_verbs_dev_t *dev)
{
    return dev->name;
}

struct ibv_context *srq_verbs_context(srq_verbs_dev_t *dev)
{
    return dev->context;
}

/*
 * On an HCA a failing control verb is a failing system call: the errno it
 * returns is in errno too, and programs read either (libibverbs' own
 * entry points for a device served here pass our value on unchanged)
 */
static int srq_verbs_errno(int ret)
{
    if (ret != 0) {
        errno = ret;
    }
    return ret;
}

int srq_verbs_query_device(srq_verbs_dev_t *dev, struct ibv_device_attr *attr)
{
    return srq_verbs_errno(dev->ops->query_device(dev, attr));
}

int srq_verbs_query_device_ex(srq_verbs_dev_t *dev,
                              struct ibv_device_attr_ex *attr)
{
    return srq_verbs_errno(dev->ops->query_device_ex(dev, attr));
}

int srq_verbs_query_port(srq_verbs_dev_t *dev, uint8_t port_num,
                         struct ibv_port_attr *attr)
{
    return srq_verbs_errno(dev->ops->query_port(dev, port_num, attr));
}

int srq_verbs_port_addr(srq_verbs_dev_t *dev, uint8_t port_num,
                        srq_verbs_port_addr_t *addr)
{
    return dev->ops->port_addr(dev, port_num, addr);
}

int srq_verbs_dev_locality(srq_verbs_dev_t *dev, srq_verbs_locality_t *loc)
{
    const char *dir;

    memset(loc, 0, sizeof(*loc));
    if (dev->kind != SRQ_VERBS_DEV_RDMA) {
        return ENOTSUP;
    }
    dir = dev->context->device->ibdev_path;
    return (dir[0] == '\0') ? ENOTSUP : srq_verbs_sysfs_locality(dir, loc);
}

int srq_verbs_ah_attr(srq_verbs_dev_t *dev, uint8_t port_num,
                      const srq_verbs_port_addr_t *addr,
                      struct ibv_ah_attr *ah_attr)
{
    if (addr->kind != dev->kind) {
        return EINVAL; /* a soft address is never reachable from an HCA */
    }
    return dev->ops->ah_attr(dev, port_num, addr, ah_attr);
}

struct ibv_pd *srq_verbs_alloc_pd(srq_verbs_dev_t *dev)
{
    return dev->ops->alloc_pd(dev);
}

int srq_verbs_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd)
{
    return srq_verbs_errno(dev->ops->dealloc_pd(dev, pd));
}

struct ibv_td *srq_verbs_alloc_td(srq_verbs_dev_t *dev,
                                  struct ibv_td_init_attr *attr)
{
    return dev->ops->alloc_td(dev, attr);
}

int srq_verbs_dealloc_td(srq_verbs_dev_t *dev, struct ibv_td *td)
{
    return srq_verbs_errno(dev->ops->dealloc_td(dev, td));
}

struct ibv_pd *srq_verbs_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr)
{
    return dev->ops->alloc_parent_domain(dev, attr);
}

struct ibv_mr *srq_verbs_reg_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                void *addr, size_t length, int access)
{
    return dev->ops->reg_mr(dev, pd, addr, length, access);
}

struct ibv_mr *srq_verbs_reg_mr_iova(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     void *addr, size_t length, uint64_t iova,
                                     int access)
{
    return dev->ops->reg_mr_iova(dev, pd, addr, length, iova, access);
}

int srq_verbs_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr)
{
    return srq_verbs_errno(dev->ops->dereg_mr(dev, mr));
}

int srq_verbs_rereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr, int flags,
                       struct ibv_pd *pd, void *addr, size_t length,
                       int access)
{
    return srq_verbs_errno(dev->ops->rereg_mr(dev, mr, flags, pd, addr,
                                              length, access));
}

int srq_verbs_advise_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                        enum ibv_advise_mr_advice advice, uint32_t flags,
                        struct ibv_sge *sg_list, uint32_t num_sge)
{
    return srq_verbs_errno(dev->ops->advise_mr(dev, pd, advice, flags,
                                               sg_list, num_sge));
}

struct ibv_comp_channel *srq_verbs_create_comp_channel(srq_verbs_dev_t *dev)
{
    return dev->ops->create_comp_channel(dev);
}

int srq_verbs_destroy_comp_channel(srq_verbs_dev_t *dev,
                                   struct ibv_comp_channel *channel)
{
    return srq_verbs_errno(dev->ops->destroy_comp_channel(dev, channel));
}

struct ibv_cq *srq_verbs_create_cq(srq_verbs_dev_t *dev, int cqe,
                                   void *cq_context,
                                   struct ibv_comp_channel *channel,
                                   int comp_vector)
{
    return dev->ops->create_cq(dev, cqe, cq_context, channel, comp_vector);
}

int srq_verbs_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq)
{
    return srq_verbs_errno(dev->ops->destroy_cq(dev, cq));
}

struct ibv_cq_ex *srq_verbs_create_cq_ex(srq_verbs_dev_t *dev,
                                         struct ibv_cq_init_attr_ex *attr)
{
    return dev->ops->create_cq_ex(dev, attr);
}

int srq_verbs_resize_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq, int cqe)
{
    return srq_verbs_errno(dev->ops->resize_cq(dev, cq, cqe));
}

int srq_verbs_get_cq_event(srq_verbs_dev_t *dev,
                           struct ibv_comp_channel *channel,
                           struct ibv_cq **cq_p, void **cq_context_p)
{
    return srq_verbs_errno(dev->ops->get_cq_event(dev, channel, cq_p, cq_context_p));
}

void srq_verbs_ack_cq_events(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                             unsigned nevents)
{
    dev->ops->ack_cq_events(dev, cq, nevents);
}

struct ibv_srq *srq_verbs_create_srq(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     struct ibv_srq_init_attr *attr)
{
    return dev->ops->create_srq(dev, pd, attr);
}

int srq_verbs_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                         struct ibv_srq_attr *attr, int attr_mask)
{
    return srq_verbs_errno(dev->ops->modify_srq(dev, srq, attr, attr_mask));
}

int srq_verbs_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                        struct ibv_srq_attr *attr)
{
    return srq_verbs_errno(dev->ops->query_srq(dev, srq, attr));
}

int srq_verbs_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq)
{
    return srq_verbs_errno(dev->ops->destroy_srq(dev, srq));
}

struct ibv_srq *srq_verbs_create_srq_ex(srq_verbs_dev_t *dev,
                                        struct ibv_srq_init_attr_ex *attr)
{
    return dev->ops->create_srq_ex(dev, attr);
}

int srq_verbs_post_srq_ops(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                           struct ibv_ops_wr *wr, struct ibv_ops_wr **bad_wr)
{
    return srq_verbs_errno(dev->ops->post_srq_ops(dev, srq, wr, bad_wr));
}

struct ibv_qp *srq_verbs_create_qp(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                   struct ibv_qp_init_attr *attr)
{
    return dev->ops->create_qp(dev, pd, attr);
}

struct ibv_qp *srq_verbs_create_qp_ex(srq_verbs_dev_t *dev,
                                      struct ibv_qp_init_attr_ex *attr)
{
    return dev->ops->create_qp_ex(dev, attr);
}

int srq_verbs_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                        struct ibv_qp_attr *attr, int attr_mask)
{
    return srq_verbs_errno(dev->ops->modify_qp(dev, qp, attr, attr_mask));
}

int srq_verbs_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                       struct ibv_qp_attr *attr, int attr_mask,
                       struct ibv_qp_init_attr *init_attr)
{
    return srq_verbs_errno(dev->ops->query_qp(dev, qp, attr, attr_mask, init_attr));
}

int srq_verbs_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp)
{
    return srq_verbs_errno(dev->ops->destroy_qp(dev, qp));
}

struct ibv_ah *srq_verbs_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                   struct ibv_ah_attr *attr)
{
    return dev->ops->create_ah(dev, pd, attr);
}

int srq_verbs_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah)
{
    return srq_verbs_errno(dev->ops->destroy_ah(dev, ah));
}

int srq_verbs_async_fd(srq_verbs_dev_t *dev)
{
    return dev->ops->async_fd(dev);
}

int srq_verbs_get_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event)
{
    return srq_verbs_errno(dev->ops->get_async_event(dev, event));
}

void srq_verbs_ack_async_event(srq_verbs_dev_t *dev,
                               struct ibv_async_event *event)
{
    dev->ops->ack_async_event(dev, event);
}

int srq_verbs_query_srq_rnr(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                            uint64_t *count_p)
{
    return dev->ops->query_srq_rnr(dev, srq, count_p);
}
