/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: device list, open/close, device and port queries,
 * soft-specific queries (srq_soft_api.h), and the ops table.
 *
 * Opening an instance creates its shared memory (tables + inbound queue,
 * memfds that nothing outlives), its wake pipe, a timerfd and an
 * async-event eventfd.
 */
#include "../fabric/soft_clock.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_proc.h"
#include "../fabric/soft_ring.h"
#include "../fabric/soft_shm.h"
#include "../objects/soft_ah.h"
#include "../objects/soft_async.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_dm.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_mw.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_port.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../objects/soft_srq.h"
#include "../srq_soft_api.h"
#include "../wire/soft_post.h"
#include "../wire/soft_progress.h"
#include "../wire/soft_tm.h"
#include "soft_cq_poll.h"
#include "soft_limit.h"
#include "soft_thread.h"
#include "soft_wait.h"

#include <arpa/inet.h>
#include <sched.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* The vendor id of a device without an IEEE OUI */
#define SRQ_SOFT_VENDOR_ID  0xffffff

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

static void srq_soft_dev_init_lists(srq_soft_dev_t *dev)
{
    srq_soft_list_init(&dev->fab.peers);
    srq_soft_list_init(&dev->cqs);
    srq_soft_list_init(&dev->fab.busy_peers);
    srq_soft_list_init(&dev->fab.dying_peers);
    srq_soft_list_init(&dev->busy_qps);
    srq_soft_list_init(&dev->ack_qps);
    srq_soft_list_init(&dev->sched_qps);
}

/* The instance's id and its port (soft_port.h): unique among the live
 * instances of this host, and telling which instances are reachable */
static int srq_soft_dev_identity(srq_soft_dev_t *dev)
{
    int ret;

    dev->fab.pid = getpid();
    ret = srq_soft_proc_start_time(dev->fab.pid, &dev->fab.start_time);
    if (ret != 0) {
        return ret;
    }
    dev->fab.lock_id = srq_soft_proc_id(dev->fab.pid, dev->fab.start_time);
    /* no two instances give an object the same handle */
    if (getrandom(&dev->handle_salt, sizeof(dev->handle_salt), 0) < 0) {
        return errno;
    }
    return srq_soft_port_join(dev);
}

static void srq_soft_dev_init_self(srq_soft_dev_t *dev)
{
    srq_soft_peer_t *self = &dev->fab.self;

    srq_soft_list_init(&self->link);
    srq_soft_list_init(&self->busy_link);
    srq_soft_list_init(&self->qps);
    memcpy(self->instance, dev->fab.instance, SRQ_SOFT_INST_LEN);
    self->seg        = dev->fab.seg;
    self->is_self    = true;
    self->pid        = dev->fab.pid;
    self->start_time = dev->fab.start_time;
    self->pipe_fd    = dev->fab.pipe_wfd; /* ours: closed with the device */
}

/* The context's device, mutex and libibverbs' own fields are its owner's
 * when an owner allocated it (srq_soft_open_params_t) */
static void srq_soft_dev_init_ctx(srq_soft_dev_t *dev)
{
    dev->super.ops                 = &srq_soft_ops;
    dev->super.kind                = SRQ_VERBS_DEV_SOFT;
    dev->super.context             = &dev->vctx.context;
    strcpy(dev->super.name, SRQ_SOFT_DEV_NAME);
    if (dev->params.alloc == NULL) {
        dev->vctx.context.device = dev->ibv_dev;
        pthread_mutex_init(&dev->vctx.context.mutex, NULL);
    }
    dev->vctx.context.cmd_fd            = -1;
    dev->vctx.context.async_fd          = dev->async_efd;
    dev->vctx.context.num_comp_vectors  = 1;
    dev->vctx.context.ops.poll_cq       = srq_soft_poll_cq;
    dev->vctx.context.ops.req_notify_cq = srq_soft_req_notify_cq;
    dev->vctx.context.ops.post_srq_recv = srq_soft_post_srq_recv;
    dev->vctx.context.ops.post_send     = srq_soft_post_send;
    dev->vctx.context.ops.post_recv     = srq_soft_post_recv;
    dev->vctx.context.ops.alloc_mw      = srq_soft_alloc_mw;
    dev->vctx.context.ops.dealloc_mw    = srq_soft_dealloc_mw;
    dev->vctx.context.ops.bind_mw       = srq_soft_bind_mw;
    dev->srq_free_wqes                  = srq_soft_srq_free_wqes;
    dev->mr_has_windows                 = srq_soft_mw_region_has_windows;
}

/* A device object for ctx->device, so that ibv_get_device_name() works */
static struct ibv_device *srq_soft_fake_device(void)
{
    struct ibv_device *ibdev = calloc(1, sizeof(*ibdev));

    if (ibdev != NULL) {
        ibdev->node_type      = IBV_NODE_CA;
        ibdev->transport_type = IBV_TRANSPORT_IB;
        strcpy(ibdev->name, SRQ_SOFT_DEV_NAME);
        strcpy(ibdev->dev_name, SRQ_SOFT_DEV_NAME);
    }
    return ibdev;
}

static void srq_soft_dev_free(srq_soft_dev_t *dev)
{
    srq_soft_thread_stop(dev);
    srq_soft_port_leave(dev);
    srq_soft_peers_destroy(&dev->fab);
    srq_soft_shm_destroy(&dev->fab);
    srq_soft_pipe_destroy(&dev->fab);
    if (dev->timer_fd >= 0) {
        close(dev->timer_fd);
    }
    srq_soft_async_cleanup(dev);
    srq_soft_qp_table_cleanup(dev);
    free(dev->xrc_srqs);
    srq_soft_mw_cleanup(dev);
    free(dev->ibv_dev);
    if (dev->params.release != NULL) {
        dev->params.release(dev->params.arg, dev,
                            offsetof(srq_soft_dev_t, vctx));
    } else {
        free(dev);
    }
}

static int srq_soft_dev_setup(srq_soft_dev_t *dev)
{
    int ret;

    ret = srq_soft_dev_identity(dev);
    if (ret != 0) {
        return ret;
    }
    if (dev->params.alloc == NULL) {
        dev->ibv_dev = srq_soft_fake_device();
        if (dev->ibv_dev == NULL) {
            return ENOMEM;
        }
    }
    ret = srq_soft_async_init(dev);
    if (ret == 0) {
        ret = srq_soft_qp_table_init(dev);
    }
    if (ret == 0) {
        ret = srq_soft_pipe_create(&dev->fab);
    }
    if (ret != 0) {
        return ret;
    }
    dev->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (dev->timer_fd < 0) {
        return errno;
    }
    /* the tables record the wake pipe: created last */
    return srq_soft_shm_create(&dev->fab);
}

static srq_soft_dev_t *srq_soft_dev_alloc(const srq_soft_open_params_t *params)
{
    srq_soft_dev_t *dev;

    if ((params != NULL) && (params->alloc != NULL)) {
        dev = params->alloc(params->arg, sizeof(*dev),
                            offsetof(srq_soft_dev_t, vctx));
    } else {
        dev = calloc(1, sizeof(*dev));
        if (dev == NULL) {
            errno = ENOMEM;
        }
    }
    if (dev != NULL) {
        if (params != NULL) {
            dev->params = *params;
        }
        dev->fab.stats      = &dev->stats;
        dev->fab.pipe_fd    = -1;
        dev->fab.pipe_wfd   = -1;
        dev->fab.tab_fd     = -1;
        dev->fab.queue_fd   = -1;
        dev->timer_fd       = -1;
        dev->async_efd      = -1;
        dev->async_wfd      = -1;
        dev->async_nbfd     = -1;
        dev->thread_stop_fd = -1;
    }
    return dev;
}

int srq_soft_open_ex(const char *name, const srq_soft_open_params_t *params,
                     srq_verbs_dev_t **dev_p)
{
    srq_soft_dev_t *dev;
    int ret;

    if (strcmp(name, SRQ_SOFT_DEV_NAME) != 0) {
        return ENODEV;
    }
    dev = srq_soft_dev_alloc(params);
    if (dev == NULL) {
        return errno;
    }
    srq_soft_lock_init(&dev->lock);
    srq_soft_dev_init_lists(dev);

    ret = srq_soft_dev_setup(dev);
    if (ret != 0) {
        srq_soft_dev_free(dev);
        return ret;
    }
    srq_soft_dev_init_self(dev);
    srq_soft_dev_init_ctx(dev);
    /* every instance: an HCA moves packets, fires its timers and raises
     * its events whether or not its process polls (soft_thread.c) */
    ret = srq_soft_thread_start(dev);
    if (ret != 0) {
        srq_soft_dev_free(dev);
        return ret;
    }
    *dev_p = &dev->super;
    return 0;
}

int srq_soft_open(const char *name, srq_verbs_dev_t **dev_p)
{
    return srq_soft_open_ex(name, NULL, dev_p);
}

/* Objects the user did not destroy are not freed here (as with
 * ibv_close_device); the shared memory and the pipe always go. */
static void srq_soft_close(srq_verbs_dev_t *vdev)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);

    if (dev->params.alloc == NULL) {
        pthread_mutex_destroy(&dev->vctx.context.mutex);
    }
    srq_soft_dev_free(dev);
}

static int srq_soft_query_device(srq_verbs_dev_t *dev,
                                 struct ibv_device_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    strcpy(attr->fw_ver, "ucx-srq soft");
    /* one node GUID for the host's soft0, as for an HCA's every context
     * (network order, as ibv_query_device gives it) */
    attr->node_guid        = htobe64(SRQ_SOFT_NODE_GUID);
    attr->sys_image_guid   = attr->node_guid;
    attr->max_mr_size      = SRQ_SOFT_MAX_MR_SIZE;
    attr->page_size_cap    = sysconf(_SC_PAGESIZE);
    /* no IEEE OUI of its own: the value software devices use (rxe too) */
    attr->vendor_id        = SRQ_SOFT_VENDOR_ID;
    attr->max_qp           = SRQ_SOFT_MAX_QP;
    attr->max_qp_wr        = SRQ_SOFT_MAX_QP_WR;
    attr->max_sge          = SRQ_SOFT_MAX_SGE;
    attr->max_sge_rd       = SRQ_SOFT_MAX_SGE;
    attr->max_cq           = SRQ_SOFT_MAX_CQ;
    attr->max_cqe          = SRQ_SOFT_MAX_CQE;
    attr->max_mr           = SRQ_SOFT_MAX_MR;
    attr->max_mw           = SRQ_SOFT_MAX_MW;
    attr->max_pd           = SRQ_SOFT_MAX_PD;
    attr->max_qp_rd_atom   = SRQ_SOFT_MAX_RD_ATOMIC;
    attr->max_qp_init_rd_atom = SRQ_SOFT_MAX_RD_ATOMIC;
    attr->max_res_rd_atom  = SRQ_SOFT_MAX_RD_ATOMIC * SRQ_SOFT_MAX_QP;
    /* the target's responder executes atomics with CPU atomics: atomic
     * with respect to every atomic through the device and to the CPUs */
    attr->atomic_cap       = IBV_ATOMIC_HCA;
    attr->max_ah           = SRQ_SOFT_MAX_AH;
    attr->max_srq          = SRQ_SOFT_MAX_SRQ;
    attr->max_srq_wr       = SRQ_SOFT_MAX_SRQ_WR;
    attr->max_srq_sge      = SRQ_SOFT_MAX_SGE;
    attr->max_pkeys        = 1;
    attr->phys_port_cnt    = SRQ_SOFT_NUM_PORTS;
    /* no IBV_DEVICE_SRQ_RESIZE: IBV_SRQ_MAX_WR is EOPNOTSUPP */
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
                             IBV_DEVICE_XRC |
                             IBV_DEVICE_MEM_WINDOW |
                             IBV_DEVICE_MEM_WINDOW_TYPE_2B;
    return 0;
}

/*
 * On-demand paging: soft0 pins nothing and makes every access when it
 * happens, by virtual address (soft_mr.c), so every operation it carries
 * works on an ODP region, the implicit one included. RC: sends, receives
 * (its own and an SRQ's), RDMA WRITE and READ, atomics; UD: sends and
 * receives (its own and an SRQ's); XRC as RC (its receives are an
 * SRQ's). No UC.
 */
#define SRQ_SOFT_ODP_UD_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | \
                              IBV_ODP_SUPPORT_SRQ_RECV)
#define SRQ_SOFT_ODP_RC_CAPS (SRQ_SOFT_ODP_UD_CAPS | \
                              IBV_ODP_SUPPORT_WRITE | \
                              IBV_ODP_SUPPORT_READ | \
                              IBV_ODP_SUPPORT_ATOMIC)

static int srq_soft_query_device_ex(srq_verbs_dev_t *dev,
                                    struct ibv_device_attr_ex *attr)
{
    memset(attr, 0, sizeof(*attr));
    srq_soft_query_device(dev, &attr->orig_attr);
    attr->odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    attr->odp_caps.per_transport_caps.rc_odp_caps = SRQ_SOFT_ODP_RC_CAPS;
    attr->odp_caps.per_transport_caps.ud_odp_caps = SRQ_SOFT_ODP_UD_CAPS;
    attr->xrc_odp_caps     = SRQ_SOFT_ODP_RC_CAPS;
    attr->phys_port_cnt_ex = attr->orig_attr.phys_port_cnt;
    attr->max_dm_size      = SRQ_SOFT_MAX_DM_SIZE;
    srq_soft_tm_caps(&attr->tm_caps); /* RC, on a TM SRQ (soft_tm.c) */
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
    attr->gid_tbl_len     = SRQ_SOFT_GID_TBL_LEN;
    attr->max_msg_sz      = 1u << 31;
    attr->pkey_tbl_len    = 1;
    attr->lid             = srq_soft_dev(dev)->lid;
    attr->sm_lid          = srq_soft_dev(dev)->lid; /* there is no SM */
    attr->lmc             = 0;
    attr->max_vl_num      = 1;
    /* 4x EDR (about 12 GB/s): what a copy between processes moves, so
     * that a model built from the port (rc_srq's, rc_verbs') is near it */
    attr->active_width    = 2;  /* 4x */
    attr->active_speed    = 32; /* EDR */
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
    memcpy(addr->gid + 4, srq_soft_dev(dev)->port_id,
           sizeof(srq_soft_dev(dev)->port_id));
    addr->lid      = htons(srq_soft_dev(dev)->lid);
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
    /* another host, or a container that cannot see our shared memory */
    if (memcmp(addr->gid + 4, srq_soft_dev(dev)->fab.instance,
               sizeof(uint32_t))) {
        return EHOSTUNREACH;
    }
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->port_num  = port_num;
    ah_attr->dlid      = ntohs(addr->lid);
    ah_attr->is_global = 1; /* the port id routes, as a GID would */
    memcpy(ah_attr->grh.dgid.raw, addr->gid, sizeof(addr->gid));
    return 0;
}

/* ibv_query_srq answers as of now: the device first takes in what has
 * arrived, as a poll of none would. Otherwise the limit it reports would
 * depend on whether some CQ's last poll happened to run the device
 * (srq_soft_poll_cq runs it once a round) */
static int srq_soft_query_srq_now(srq_verbs_dev_t *vdev, struct ibv_srq *srq,
                                  struct ibv_srq_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);

    if (srq_soft_dev_lock_obj(dev, srq) != 0) {
        return EINVAL;
    }
    srq_soft_progress(dev);
    srq_soft_dev_unlock(dev);
    return srq_soft_query_srq(vdev, srq, attr);
}

/* The ACKs owed, sent before a QP changes state or goes: an ACK waiting
 * for a reply to carry it (soft_resp.c) must not go with the QP - a
 * program that takes its last message and destroys its QP leaves its
 * peer's send acknowledged, as an HCA would */
static int srq_soft_acks_before(srq_soft_dev_t *dev, struct ibv_qp *qp)
{
    uint64_t give_up = 0;
    bool owed;

    for (;;) {
        if (srq_soft_dev_lock_obj(dev, qp) != 0) {
            return EINVAL;
        }
        srq_soft_progress_acks(dev);
        /* still owed: the peer's queue was full or locked just now. An
         * HCA has sent it on arrival; we try for a while (the peer's
         * consumer runs on its own) before the QP takes it along */
        owed = srq_soft_list_linked(&srq_soft_qp(qp)->ack_link);
        srq_soft_dev_unlock(dev);
        if (!owed) {
            return 0;
        }
        if (give_up == 0) {
            give_up = srq_soft_now_ns() + SRQ_SOFT_ACK_FLUSH_NS;
        } else if (srq_soft_now_ns() >= give_up) {
            return 0;
        }
        sched_yield();
    }
}

/* A destroy, or a move to RESET or ERR, first stops a WRITE the responder
 * is executing on the QP (at its next chunk), then waits for the lock:
 * for one chunk, not for the whole WRITE */
static bool srq_soft_revoke_before(srq_soft_dev_t *dev, struct ibv_qp *qp)
{
    if (!srq_soft_dev_has(dev, qp)) {
        return false;
    }
    srq_soft_qp_revoke(srq_soft_qp(qp), true);
    return true;
}

static int srq_soft_modify_qp_acked(srq_verbs_dev_t *vdev, struct ibv_qp *qp,
                                    struct ibv_qp_attr *attr, int attr_mask)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    bool revoked = (attr_mask & IBV_QP_STATE) &&
                   ((attr->qp_state == IBV_QPS_RESET) ||
                    (attr->qp_state == IBV_QPS_ERR)) &&
                   srq_soft_revoke_before(dev, qp);
    int ret      = srq_soft_acks_before(dev, qp);

    if (ret == 0) {
        ret = srq_soft_modify_qp(vdev, qp, attr, attr_mask);
    }
    if (revoked) {
        srq_soft_qp_revoke(srq_soft_qp(qp), false);
    }
    return ret;
}

static int srq_soft_destroy_qp_acked(srq_verbs_dev_t *vdev, struct ibv_qp *qp)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    int ret;

    if (!srq_soft_dev_has(dev, qp)) {
        return ENOENT; /* as srq_soft_destroy_qp: no QP by that handle */
    }
    (void)srq_soft_revoke_before(dev, qp);
    ret = srq_soft_acks_before(dev, qp);
    return (ret != 0) ? ret : srq_soft_destroy_qp(vdev, qp);
}

static int srq_soft_destroy_qp_counted(srq_verbs_dev_t *vdev,
                                       struct ibv_qp *qp)
{
    return srq_soft_limit_destroy_qp(vdev, qp, srq_soft_destroy_qp_acked);
}

/* Cheap enough for a progress path: no syscall, no lock (soft_dev.h) */
static int srq_soft_query_srq_rnr(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                                  uint64_t *count_p)
{
    if (!srq_soft_dev_has(srq_soft_dev(dev), srq)) {
        return EINVAL;
    }
    *count_p = srq_soft_stat_read_shared(&srq_soft_srq(srq)->rnr_naks);
    return 0;
}

/* ---- soft-specific queries (srq_soft_api.h) ---------------------------- */

int srq_soft_query_stats(srq_verbs_dev_t *vdev, srq_soft_stats_t *stats)
{
    srq_soft_dev_t *dev;
    size_t i;

    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    dev = srq_soft_dev(vdev);
    /* every field a uint64_t; a few written outside the lock (the
     * progress thread's looks, a poll's progress count), so each is read
     * as it is written, by a relaxed atomic load */
    _Static_assert(sizeof(*stats) % sizeof(uint64_t) == 0,
                   "srq_soft_stats_t is uint64_t fields");
    srq_soft_dev_lock(dev);
    for (i = 0; i < sizeof(*stats) / sizeof(uint64_t); ++i) {
        ((uint64_t*)stats)[i] =
            srq_soft_stat_read_shared((const uint64_t*)&dev->stats + i);
    }
    srq_soft_dev_unlock(dev);
    return 0;
}

int srq_soft_segment_name(srq_verbs_dev_t *vdev, char *buf, size_t len)
{
    if ((vdev == NULL) || (vdev->kind != SRQ_VERBS_DEV_SOFT)) {
        return EINVAL;
    }
    return srq_soft_shm_path(&srq_soft_dev(vdev)->fab, buf, len);
}

static const srq_verbs_dev_ops_t srq_soft_ops = {
    .close                = srq_soft_close,
    .query_device         = srq_soft_query_device,
    .query_device_ex      = srq_soft_query_device_ex,
    .query_port           = srq_soft_query_port,
    .port_addr            = srq_soft_port_addr,
    .ah_attr              = srq_soft_ah_attr,
    .alloc_pd             = srq_soft_limit_alloc_pd,
    .dealloc_pd           = srq_soft_limit_dealloc_pd,
    .alloc_td             = srq_soft_alloc_td,
    .dealloc_td           = srq_soft_dealloc_td,
    .alloc_parent_domain  = srq_soft_limit_alloc_parent_domain,
    .reg_mr               = srq_soft_reg_mr,
    .reg_mr_iova          = srq_soft_reg_mr_iova,
    .dereg_mr             = srq_soft_dereg_mr,
    .rereg_mr             = srq_soft_rereg_mr,
    .advise_mr            = srq_soft_advise_mr,
    .create_comp_channel  = srq_soft_create_comp_channel,
    .destroy_comp_channel = srq_soft_destroy_comp_channel,
    .create_cq            = srq_soft_limit_create_cq,
    .destroy_cq           = srq_soft_limit_destroy_cq,
    .create_cq_ex         = srq_soft_create_cq_ex,
    .resize_cq            = srq_soft_resize_cq,
    .get_cq_event         = srq_soft_get_cq_event,
    .ack_cq_events        = srq_soft_ack_cq_events,
    .create_srq           = srq_soft_limit_create_srq,
    .modify_srq           = srq_soft_modify_srq,
    .query_srq            = srq_soft_query_srq_now,
    .destroy_srq          = srq_soft_limit_destroy_srq,
    .create_srq_ex        = srq_soft_create_srq_ex,
    .post_srq_ops         = srq_soft_post_srq_ops,
    .create_qp            = srq_soft_limit_create_qp,
    .create_qp_ex         = srq_soft_limit_create_qp_ex,
    .modify_qp            = srq_soft_modify_qp_acked,
    .query_qp             = srq_soft_query_qp,
    .destroy_qp           = srq_soft_destroy_qp_counted,
    .create_ah            = srq_soft_limit_create_ah,
    .destroy_ah           = srq_soft_limit_destroy_ah,
    .async_fd             = srq_soft_async_fd,
    .get_async_event      = srq_soft_get_async_event,
    .ack_async_event      = srq_soft_ack_async_event,
    .query_srq_rnr        = srq_soft_query_srq_rnr,
};
