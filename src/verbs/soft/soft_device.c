/*
 * ucx-srq soft device: device list, open/close, device and port queries.
 */
#include "soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static const srq_verbs_dev_ops_t srq_soft_ops;

int srq_soft_get_device_list(srq_verbs_dev_info_t **list_p, int *num_p)
{
    srq_verbs_dev_info_t *list = calloc(1, sizeof(*list));

    if (list == NULL) {
        return ENOMEM;
    }
    strcpy(list->name, SRQ_SOFT_DEV_NAME);
    list->kind = SRQ_VERBS_DEV_SOFT;
    *list_p    = list;
    *num_p     = 1;
    return 0;
}

/* The data path is not implemented yet: every post/poll says so. */
static int srq_soft_poll_cq_unsupported(struct ibv_cq *cq, int num,
                                        struct ibv_wc *wc)
{
    return -EOPNOTSUPP;
}

static int srq_soft_req_notify_unsupported(struct ibv_cq *cq, int solicited)
{
    return EOPNOTSUPP;
}

static int srq_soft_post_srq_recv_unsupported(struct ibv_srq *srq,
                                              struct ibv_recv_wr *wr,
                                              struct ibv_recv_wr **bad_wr)
{
    *bad_wr = wr;
    return EOPNOTSUPP;
}

static int srq_soft_post_send_unsupported(struct ibv_qp *qp,
                                          struct ibv_send_wr *wr,
                                          struct ibv_send_wr **bad_wr)
{
    *bad_wr = wr;
    return EOPNOTSUPP;
}

static int srq_soft_post_recv_unsupported(struct ibv_qp *qp,
                                          struct ibv_recv_wr *wr,
                                          struct ibv_recv_wr **bad_wr)
{
    *bad_wr = wr;
    return EOPNOTSUPP;
}

int srq_soft_open(const char *name, srq_verbs_dev_t **dev_p)
{
    srq_soft_dev_t *dev;
    pid_t pid = getpid();

    if (strcmp(name, SRQ_SOFT_DEV_NAME) != 0) {
        return ENODEV;
    }

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        return ENOMEM;
    }

    /* pid + random: unique among the live instances of this host */
    memcpy(dev->instance, &pid, sizeof(pid));
    if (getrandom(dev->instance + sizeof(pid),
                  sizeof(dev->instance) - sizeof(pid), 0) < 0) {
        free(dev);
        return errno;
    }

    dev->super.ops                   = &srq_soft_ops;
    dev->super.kind                  = SRQ_VERBS_DEV_SOFT;
    dev->super.context               = &dev->ibv_ctx;
    strcpy(dev->super.name, SRQ_SOFT_DEV_NAME);
    dev->ibv_ctx.cmd_fd              = -1;
    dev->ibv_ctx.async_fd            = -1;
    dev->ibv_ctx.num_comp_vectors    = 1;
    dev->ibv_ctx.ops.poll_cq         = srq_soft_poll_cq_unsupported;
    dev->ibv_ctx.ops.req_notify_cq   = srq_soft_req_notify_unsupported;
    dev->ibv_ctx.ops.post_srq_recv   = srq_soft_post_srq_recv_unsupported;
    dev->ibv_ctx.ops.post_send       = srq_soft_post_send_unsupported;
    dev->ibv_ctx.ops.post_recv       = srq_soft_post_recv_unsupported;
    pthread_mutex_init(&dev->ibv_ctx.mutex, NULL);

    *dev_p = &dev->super;
    return 0;
}

static void srq_soft_close(srq_verbs_dev_t *dev)
{
    pthread_mutex_destroy(&srq_soft_dev(dev)->ibv_ctx.mutex);
    free(dev);
}

static int srq_soft_query_device(srq_verbs_dev_t *dev,
                                 struct ibv_device_attr *attr)
{
    srq_soft_dev_t *sdev = srq_soft_dev(dev);

    memset(attr, 0, sizeof(*attr));
    strcpy(attr->fw_ver, "ucx-srq soft");
    memcpy(&attr->node_guid, sdev->instance + 4, sizeof(attr->node_guid));
    attr->sys_image_guid   = attr->node_guid;
    attr->max_mr_size      = SRQ_SOFT_MAX_MR_SIZE;
    attr->page_size_cap    = sysconf(_SC_PAGESIZE);
    attr->vendor_id        = 0;
    attr->max_qp           = SRQ_SOFT_MAX_QP;
    attr->max_qp_wr        = SRQ_SOFT_MAX_QP_WR;
    attr->max_sge          = SRQ_SOFT_MAX_SGE;
    attr->max_sge_rd       = SRQ_SOFT_MAX_SGE;
    attr->max_cq           = SRQ_SOFT_MAX_CQ;
    attr->max_cqe          = SRQ_SOFT_MAX_CQE;
    attr->max_mr           = SRQ_SOFT_MAX_MR;
    attr->max_pd           = SRQ_SOFT_MAX_QP;
    attr->max_qp_rd_atom   = 16;
    attr->max_qp_init_rd_atom = 16;
    attr->atomic_cap       = IBV_ATOMIC_NONE;
    attr->max_ah           = SRQ_SOFT_MAX_QP;
    attr->max_srq          = SRQ_SOFT_MAX_SRQ;
    attr->max_srq_wr       = SRQ_SOFT_MAX_SRQ_WR;
    attr->max_srq_sge      = SRQ_SOFT_MAX_SGE;
    attr->max_pkeys        = 1;
    attr->phys_port_cnt    = SRQ_SOFT_NUM_PORTS;
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
                             IBV_DEVICE_SRQ_RESIZE;
    return 0;
}

static int srq_soft_check_port(uint8_t port_num)
{
    return ((port_num >= 1) && (port_num <= SRQ_SOFT_NUM_PORTS)) ? 0 : EINVAL;
}

static int srq_soft_query_port(srq_verbs_dev_t *dev, uint8_t port_num,
                               struct ibv_port_attr *attr)
{
    if (srq_soft_check_port(port_num) != 0) {
        return EINVAL;
    }
    memset(attr, 0, sizeof(*attr));
    attr->state           = IBV_PORT_ACTIVE;
    attr->max_mtu         = SRQ_SOFT_MTU;
    attr->active_mtu      = SRQ_SOFT_MTU;
    attr->gid_tbl_len     = 1;
    attr->max_msg_sz      = 1u << 31;
    attr->pkey_tbl_len    = 1;
    attr->lid             = 1;
    attr->sm_lid          = 1;
    attr->lmc             = 0;
    attr->max_vl_num      = 1;
    attr->active_width    = 1;  /* 1x */
    attr->active_speed    = 32; /* "EDR"-class speed code */
    attr->phys_state      = 5;  /* LinkUp */
    attr->link_layer      = IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

static int srq_soft_port_addr(srq_verbs_dev_t *dev, uint8_t port_num,
                              srq_verbs_port_addr_t *addr)
{
    if (srq_soft_check_port(port_num) != 0) {
        return EINVAL;
    }
    memset(addr, 0, sizeof(*addr));
    addr->kind     = SRQ_VERBS_DEV_SOFT;
    addr->port_num = port_num;
    memcpy(addr->gid, SRQ_SOFT_ADDR_MAGIC, 4);
    memcpy(addr->gid + 4, srq_soft_dev(dev)->instance,
           sizeof(srq_soft_dev(dev)->instance));
    return 0;
}

static int srq_soft_ah_attr(srq_verbs_dev_t *dev, uint8_t port_num,
                            const srq_verbs_port_addr_t *addr,
                            struct ibv_ah_attr *ah_attr)
{
    if ((srq_soft_check_port(port_num) != 0) ||
        memcmp(addr->gid, SRQ_SOFT_ADDR_MAGIC, 4)) {
        return EINVAL;
    }
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->port_num  = port_num;
    ah_attr->dlid      = 1;
    ah_attr->is_global = 1; /* the instance id routes, as a GID would */
    memcpy(ah_attr->grh.dgid.raw, addr->gid, sizeof(addr->gid));
    return 0;
}

static struct ibv_pd *srq_soft_alloc_pd(srq_verbs_dev_t *dev)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->context = dev->context;
    return pd;
}

static int srq_soft_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

/* Objects the soft device cannot create yet */
static void *srq_soft_create_unsupported(void)
{
    errno = EOPNOTSUPP;
    return NULL;
}

static int srq_soft_op_unsupported(void)
{
    return EOPNOTSUPP;
}

static void srq_soft_noop(void)
{
}

static int srq_soft_async_fd(srq_verbs_dev_t *dev)
{
    return -1;
}

#define SRQ_SOFT_UNSUPPORTED(_type) ((_type)srq_soft_create_unsupported)
#define SRQ_SOFT_FAILS(_type)       ((_type)srq_soft_op_unsupported)

static const srq_verbs_dev_ops_t srq_soft_ops = {
    .close                = srq_soft_close,
    .query_device         = srq_soft_query_device,
    .query_port           = srq_soft_query_port,
    .port_addr            = srq_soft_port_addr,
    .ah_attr              = srq_soft_ah_attr,
    .alloc_pd             = srq_soft_alloc_pd,
    .dealloc_pd           = srq_soft_dealloc_pd,
    .reg_mr               = SRQ_SOFT_UNSUPPORTED(struct ibv_mr *(*)(srq_verbs_dev_t*, struct ibv_pd*, void*, size_t, int)),
    .dereg_mr             = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_mr*)),
    .create_comp_channel  = SRQ_SOFT_UNSUPPORTED(struct ibv_comp_channel *(*)(srq_verbs_dev_t*)),
    .destroy_comp_channel = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_comp_channel*)),
    .create_cq            = SRQ_SOFT_UNSUPPORTED(struct ibv_cq *(*)(srq_verbs_dev_t*, int, void*, struct ibv_comp_channel*, int)),
    .destroy_cq           = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_cq*)),
    .get_cq_event         = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_comp_channel*, struct ibv_cq**, void**)),
    .ack_cq_events        = (void (*)(srq_verbs_dev_t*, struct ibv_cq*, unsigned))srq_soft_noop,
    .create_srq           = SRQ_SOFT_UNSUPPORTED(struct ibv_srq *(*)(srq_verbs_dev_t*, struct ibv_pd*, struct ibv_srq_init_attr*)),
    .modify_srq           = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_srq*, struct ibv_srq_attr*, int)),
    .query_srq            = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_srq*, struct ibv_srq_attr*)),
    .destroy_srq          = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_srq*)),
    .create_qp            = SRQ_SOFT_UNSUPPORTED(struct ibv_qp *(*)(srq_verbs_dev_t*, struct ibv_pd*, struct ibv_qp_init_attr*)),
    .modify_qp            = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_qp*, struct ibv_qp_attr*, int)),
    .query_qp             = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_qp_init_attr*)),
    .destroy_qp           = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_qp*)),
    .create_ah            = SRQ_SOFT_UNSUPPORTED(struct ibv_ah *(*)(srq_verbs_dev_t*, struct ibv_pd*, struct ibv_ah_attr*)),
    .destroy_ah           = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_ah*)),
    .async_fd             = srq_soft_async_fd,
    .get_async_event      = SRQ_SOFT_FAILS(int (*)(srq_verbs_dev_t*, struct ibv_async_event*)),
    .ack_async_event      = (void (*)(srq_verbs_dev_t*, struct ibv_async_event*))srq_soft_noop,
};
