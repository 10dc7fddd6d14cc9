/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the rc_srq interface: its port, CQs, pools and shared receive
 * queue, progress (polling both CQs), events, capabilities, and the hooks
 * its connections call.
 */
#include "srq_iface.h"
#include "srq_limit.h"
#include "srq_iface_progress.h"
#include "srq_iface_event.h"
#include "srq_iface_reach.h"
#include "srq_am.h"
#include "srq_check.h"
#include "srq_conn.h"
#include "srq_hs.h"
#include "srq_hs_async.h"
#include "srq_rx.h"
#include "srq_counters.h"
#include "srq_ep.h"
#include "srq_md.h"
#include "srq_perf.h"
#include "srq_tm.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/log_def.h>
#include <ucs/debug/memtrack.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/string.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

UCS_CLASS_DECLARE(uct_srq_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srq_iface_t, uct_iface_t);

/* Send descriptors per pool chunk, unless TX_BUFS_GROW says, and the most
 * it may say: 4096 default descriptors are 34 MB registered at once */
#define UCT_SRQ_TX_BUFS_GROW     128
#define UCT_SRQ_TX_BUFS_GROW_MAX 4096

/* Atomic operations without and with a fetched result */
#define UCT_SRQ_ATOMIC_OPS  (UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) | \
                             UCS_BIT(UCT_ATOMIC_OP_OR)  | UCS_BIT(UCT_ATOMIC_OP_XOR))
#define UCT_SRQ_ATOMIC_FOPS (UCT_SRQ_ATOMIC_OPS | UCS_BIT(UCT_ATOMIC_OP_SWAP) | \
                             UCS_BIT(UCT_ATOMIC_OP_CSWAP))

ucs_config_field_t uct_srq_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srq_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"", "", NULL,
     ucs_offsetof(uct_srq_iface_config_t, rx),
     UCS_CONFIG_TYPE_TABLE(uct_srq_rx_config_table)},

    {"", "", NULL,
     ucs_offsetof(uct_srq_iface_config_t, hs),
     UCS_CONFIG_TYPE_TABLE(uct_srq_hs_config_table)},

    {"TX_QUEUE_LEN", "256",
     "Send queue length of each RC connection: WRs in flight per peer\n"
     "before new sends wait in the pending queue (16..device max_qp_wr,\n"
     "at most 32768).",
     ucs_offsetof(uct_srq_iface_config_t, tx_queue_len), UCS_CONFIG_TYPE_UINT},

    {"TX_CQ_MODERATION", "64",
     "Tuning knob (no user needs it: leave the default).\n"
     "One send WR in so many is signaled (its completion retires those before\n"
     "it); also every one that completes an operation or returns a result,\n"
     "and every one while the send CQ runs low (1..65535; 1: all). At most\n"
     "TX_QUEUE_LEN/4 is used: a connection's slots are not all unsignaled.",
     ucs_offsetof(uct_srq_iface_config_t, tx_moderation), UCS_CONFIG_TYPE_UINT},

    {"TX_CQ_LEN", "4096",
     "Send completion queue length of the interface: WRs in flight on all\n"
     "connections together (TX_QUEUE_LEN..device max_cqe).",
     ucs_offsetof(uct_srq_iface_config_t, tx_cq_len), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_BUFS", "-1",
     "Send descriptors (bcopy data, get_bcopy buffers) the interface may\n"
     "allocate. -1 is unlimited.",
     ucs_offsetof(uct_srq_iface_config_t, tx_max_bufs), UCS_CONFIG_TYPE_UINT},

    {"TX_BUFS_GROW", "0",
     "Tuning knob (no user needs it: leave the default).\n"
     "Send descriptors allocated (and registered) at a time when the pool\n"
     "grows (0..4096); 0: the transport chooses (128). At most TX_MAX_BUFS\n"
     "are allocated.",
     ucs_offsetof(uct_srq_iface_config_t, tx_bufs_grow), UCS_CONFIG_TYPE_UINT},

    {"SEG_SIZE", "8256",
     "Size of a receive buffer and of a send descriptor: the largest\n"
     "am_bcopy/am_zcopy message (less one byte) and put/get_bcopy (256..1M).",
     ucs_offsetof(uct_srq_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"MAX_INLINE", "256",
     "Data copied into the send WR itself (IBV_SEND_INLINE): the largest\n"
     "am_short (less one byte) and put_short (16..device limit).",
     ucs_offsetof(uct_srq_iface_config_t, max_inline), UCS_CONFIG_TYPE_MEMUNITS},

    {"RNR_TIMER", "1",
     "IB min_rnr_timer code a receiver asks a sender to wait before retrying\n"
     "a send that found the shared receive queue empty (1 = 10 us ... 31 =\n"
     "491 ms; 0 = 655 ms). Senders retry forever: no message is dropped.",
     ucs_offsetof(uct_srq_iface_config_t, rnr_timer), UCS_CONFIG_TYPE_UINT},

    {"COUNTERS_FILE", "",
     "When the interface closes, append its counters (messages and bytes\n"
     "received and sent, connections, receive queue) as one line to this\n"
     "file; %p in the name becomes the process id. Empty: off.",
     ucs_offsetof(uct_srq_iface_config_t, counters_file), UCS_CONFIG_TYPE_STRING},

    {"TM_ENABLE", "no",
     "Tag-matching offload (yes, no, try): the device matches the tags of\n"
     "UCP's tagged messages (MPI's) against the posted receives, lands eager\n"
     "data in the matched buffer and reads a rendezvous sender's buffer\n"
     "itself, over the standard verbs of a TM SRQ (ibv_post_srq_ops). It\n"
     "needs a device that reports tm_caps for RC (soft0 does) and SRQ=y;\n"
     "\"yes\" fails where it cannot, \"try\" goes without. Every message\n"
     "then carries a 16-byte tag-matching header, active messages too, and\n"
     "both sides must have the same setting to reach each other.",
     ucs_offsetof(uct_srq_iface_config_t, tm_enable), UCS_CONFIG_TYPE_TERNARY},

    {"TM_LIST_SIZE", "0",
     "With TM_ENABLE: tagged receives the device's list holds at once\n"
     "(0: all it has, at most half its max_ops, so that each can be\n"
     "removed at any time). Beyond them UCP matches in software.",
     ucs_offsetof(uct_srq_iface_config_t, tm_list_size), UCS_CONFIG_TYPE_UINT},

    {"TIMEOUT", "18",
     "IB local ACK timeout code of the RC connections: 4.096 us x 2^code\n"
     "(1..31; 18 is about 1 s). A peer that does not answer for 7 such\n"
     "periods is reported to the error handler.",
     ucs_offsetof(uct_srq_iface_config_t, timeout), UCS_CONFIG_TYPE_UINT},

    {NULL}
};

/* ---- the port ------------------------------------------------------------- */

/* "<verbs device>:<port>" of this md's device -> port number */
static ucs_status_t uct_srq_iface_parse_dev(uct_srq_md_t *md,
                                            const char *dev_name,
                                            uint8_t *port_p)
{
    const char *md_name = srq_verbs_dev_name(md->dev);
    size_t len          = strlen(md_name);
    char *end;
    long port;

    if (strncmp(dev_name, md_name, len) || (dev_name[len] != ':')) {
        ucs_error("srq: device '%s' is not a port of %s (expected %s:<port>)",
                  dev_name, md_name, md_name);
        return UCS_ERR_NO_DEVICE;
    }
    port = strtol(dev_name + len + 1, &end, 10);
    if ((*end != '\0') || (port < 1) || (port > UINT8_MAX)) {
        ucs_error("srq: invalid port in device name '%s'", dev_name);
        return UCS_ERR_NO_DEVICE;
    }
    *port_p = port;
    return UCS_OK;
}

/* ---- flush, fence, addresses, capabilities ----------------------------------- */

static ucs_status_t uct_srq_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (iface->tx_outstanding == 0) {
        return UCS_OK;
    }
    uct_srq_hs_signal_tails(iface);
    return UCS_INPROGRESS;
}

static ucs_status_t uct_srq_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    uct_srq_hs_fence(iface);
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    memcpy(addr, &iface->port_addr, sizeof(iface->port_addr));
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_get_address(uct_iface_h tl_iface,
                                              uct_iface_addr_t *addr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    ((uct_srq_iface_addr_t*)addr)->ud_qpn = htole32(iface->hs.ud_qp->qp_num);
    ((uct_srq_iface_addr_t*)addr)->flags  = iface->tm.enabled ?
                                            UCT_SRQ_IFACE_ADDR_FLAG_TM : 0;
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_query(uct_iface_h tl_iface,
                                        uct_iface_attr_t *iface_attr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    size_t mtu = 128ul << iface->port_attr.active_mtu;
    size_t seg = iface->config.seg_size;
    uct_srq_perf_t perf;

    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            UCT_IFACE_FLAG_AM_ZCOPY |
                            UCT_IFACE_FLAG_PUT_SHORT |
                            UCT_IFACE_FLAG_PUT_BCOPY |
                            UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_BCOPY |
                            UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                            UCT_IFACE_FLAG_EP_CHECK;
#ifdef UCT_IFACE_FLAG_INTER_NODE
    /* an HCA reaches other hosts; soft0 only the processes of this one */
    if (srq_verbs_dev_kind(iface->dev) != SRQ_VERBS_DEV_SOFT) {
        iface_attr->cap.flags |= UCT_IFACE_FLAG_INTER_NODE;
    }
#endif
    if (iface->config.atomics) {
        /* 64-bit add, fetch-add and compare-swap by the device; the rest,
         * and 32-bit, by compare-swap loops (srq_ep.c): all of what UCP
         * asks of a device that carries its atomics */
        iface_attr->cap.flags             |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        iface_attr->cap.atomic64.op_flags  = UCT_SRQ_ATOMIC_OPS;
        iface_attr->cap.atomic64.fop_flags = UCT_SRQ_ATOMIC_FOPS;
        iface_attr->cap.atomic32.op_flags  = UCT_SRQ_ATOMIC_OPS;
        iface_attr->cap.atomic32.fop_flags = UCT_SRQ_ATOMIC_FOPS;
    }
    iface_attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                  UCT_IFACE_FLAG_EVENT_RECV |
                                  UCT_IFACE_FLAG_EVENT_FD;

    /* the am id is the immediate: an AM has the whole message (with tag
     * matching, after a TMH) */
    iface_attr->cap.am.max_short       = iface->config.max_inline -
                                         iface->rx.hdr_len;
    iface_attr->cap.am.max_bcopy       = seg;
    iface_attr->cap.am.min_zcopy       = 0;
    iface_attr->cap.am.max_zcopy       = seg - UCT_SRQ_AM_MAX_HDR;
    iface_attr->cap.am.max_hdr         = UCT_SRQ_AM_MAX_HDR;
    iface_attr->cap.am.max_iov         = iface->config.max_send_sge - 1;
    iface_attr->cap.am.opt_zcopy_align = 1;
    iface_attr->cap.am.align_mtu       = mtu;

    iface_attr->cap.put.max_short       = iface->config.max_inline;
    iface_attr->cap.put.max_bcopy       = seg;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = iface->port_attr.max_msg_sz;
    iface_attr->cap.put.max_iov         = iface->config.max_send_sge;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = mtu;

    iface_attr->cap.get.max_bcopy       = seg;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = iface->port_attr.max_msg_sz;
    iface_attr->cap.get.max_iov         = ucs_min(iface->config.max_send_sge,
                                                  iface->dev_attr.max_sge_rd);
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = mtu;

    if (iface->tm.enabled) {
        uct_srq_tm_query(&iface->tm, iface, iface_attr);
    }

    iface_attr->device_addr_len = sizeof(srq_verbs_port_addr_t);
    iface_attr->iface_addr_len  = sizeof(uct_srq_iface_addr_t);
    iface_attr->ep_addr_len     = 0;
    iface_attr->max_conn_priv   = 0;

    /* what the port says it is (soft0's port too), not a guess per kind */
    uct_srq_perf_from_port(&iface->port_attr, seg, &perf);
    iface_attr->latency             = ucs_linear_func_make(perf.latency, 0);
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = perf.bandwidth;
    iface_attr->overhead            = UCT_SRQ_PERF_OVERHEAD;
    iface_attr->priority            = 0;
    return UCS_OK;
}

/* ---- lifetime ----------------------------------------------------------------- */

/* Every range, the receive queue's and the handshake's too, before the
 * interface creates anything: a bad value is named, not met later as a
 * failing CQ, SRQ or memory pool */
static ucs_status_t uct_srq_iface_check_config(uct_srq_iface_t *iface,
                                               const uct_srq_iface_config_t *config)
{
    ucs_status_t status;

    /* fewer than 2^16 WRs of a QP in flight: see uct_srq_conn_wr_id() */
    UCT_SRQ_CHECK_RANGE("TX_QUEUE_LEN", config->tx_queue_len, 16,
                        ucs_min(iface->dev_attr.max_qp_wr, 32768));
    UCT_SRQ_CHECK_RANGE("TX_CQ_MODERATION", config->tx_moderation, 1,
                        UINT16_MAX);
    UCT_SRQ_CHECK_RANGE("TX_CQ_LEN", config->tx_cq_len, config->tx_queue_len,
                        iface->dev_attr.max_cqe);
    UCT_SRQ_CHECK_RANGE("SEG_SIZE", config->seg_size, 256, UCS_MBYTE);
    UCT_SRQ_CHECK_RANGE("MAX_INLINE", config->max_inline, 16,
                        config->seg_size);
    UCT_SRQ_CHECK_RANGE("RNR_TIMER", config->rnr_timer, 0, 31);
    UCT_SRQ_CHECK_RANGE("TIMEOUT", config->timeout, 1, 31);
    /* -1 (unlimited) is UINT_MAX; UCX's memory pools need at least one */
    UCT_SRQ_CHECK_RANGE("TX_MAX_BUFS", config->tx_max_bufs, 1, UINT_MAX);
    /* -1 would be UINT_MAX descriptors in one chunk: every send fails */
    UCT_SRQ_CHECK_RANGE("TX_BUFS_GROW", config->tx_bufs_grow, 0,
                        UCT_SRQ_TX_BUFS_GROW_MAX);

    status = uct_srq_rx_check_config(&config->rx, &iface->dev_attr);
    if (status != UCS_OK) {
        return status;
    }
    return uct_srq_hs_check_config(&config->hs);
}

/* On failure, uct_srq_iface_destroy_cqs destroys what was created */
static ucs_status_t uct_srq_iface_create_cqs(uct_srq_iface_t *iface,
                                             const uct_srq_iface_config_t *config)
{
    int err, cqe;

    /* the interface's memory is not zeroed: nothing is there yet */
    iface->send_cq = NULL;
    iface->recv_cq = NULL;
    iface->channel = srq_verbs_create_comp_channel(iface->dev);
    if (iface->channel == NULL) {
        err = errno;
        ucs_error("srq: failed to create a completion channel: %s",
                  UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    }

    iface->send_cq = srq_verbs_create_cq(iface->dev, config->tx_cq_len, iface,
                                         iface->channel, 0);
    if (iface->send_cq == NULL) {
        err = errno;
        ucs_error("srq: failed to create a send CQ of %u: %s",
                  config->tx_cq_len, UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    }

    /* every posted receive, shared or handshake, completes at most once;
     * with tag matching, so do the tags and the list operations */
    cqe = uct_srq_rx_cq_len(&config->rx) + config->hs.queue_len;
    if (iface->tm.enabled) {
        iface->recv_cq = uct_srq_tm_create_cq(&iface->tm, iface,
                                              cqe + 2 * iface->tm.num_slots +
                                              iface->tm.max_ops);
    } else {
        iface->recv_cq = srq_verbs_create_cq(iface->dev, cqe, iface,
                                             iface->channel, 0);
    }
    if (iface->recv_cq == NULL) {
        err = errno;
        ucs_error("srq: failed to create a receive CQ: %s",
                  UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    }
    return UCS_OK;
}

static void uct_srq_iface_destroy_cqs(uct_srq_iface_t *iface)
{
    if (iface->recv_cq != NULL) {
        srq_verbs_destroy_cq(iface->dev, iface->recv_cq);
    }
    if (iface->send_cq != NULL) {
        srq_verbs_destroy_cq(iface->dev, iface->send_cq);
    }
    if (iface->channel != NULL) {
        srq_verbs_destroy_comp_channel(iface->dev, iface->channel);
    }
}

static ucs_status_t uct_srq_iface_init_port(uct_srq_iface_t *iface,
                                            uct_srq_md_t *md,
                                            const char *dev_name)
{
    ucs_status_t status;
    int ret;

    status = uct_srq_iface_parse_dev(md, dev_name, &iface->port_num);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_srq_md_query_device(md, &iface->dev_attr);
    if (status != UCS_OK) {
        return UCS_ERR_NO_DEVICE;
    }
    ret = srq_verbs_query_port(md->dev, iface->port_num, &iface->port_attr);
    if ((ret != 0) || (iface->port_attr.state != IBV_PORT_ACTIVE)) {
        ucs_error("srq: port %s is not usable: %s", dev_name,
                  ret ? strerror(ret) : "not active");
        return UCS_ERR_NO_DEVICE;
    }
    ret = srq_verbs_port_addr(md->dev, iface->port_num, &iface->port_addr);
    if (ret != 0) {
        ucs_error("srq: failed to read the address of %s: %s", dev_name,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_init_pools(uct_srq_iface_t *iface,
                                             const uct_srq_iface_config_t *config)
{
    static ucs_mpool_ops_t op_mpool_ops = {
        .chunk_alloc   = ucs_mpool_chunk_malloc,
        .chunk_release = ucs_mpool_chunk_free
    };
    unsigned grow = (config->tx_bufs_grow == 0) ? UCT_SRQ_TX_BUFS_GROW :
                                                  config->tx_bufs_grow;
    ucs_status_t status;

    /* a limit below the default chunk is a smaller chunk */
    status = uct_srq_mpool_init(&iface->tx_mp, &iface->super.super,
                                sizeof(uct_srq_tx_desc_t) + config->seg_size +
                                UCT_SRQ_TM_HDR_LEN, /* tag matching: a TMH */
                                sizeof(uct_srq_tx_desc_t),
                                UCS_SYS_CACHE_LINE_SIZE,
                                ucs_min(grow, config->tx_max_bufs),
                                config->tx_max_bufs, "srq_tx_desc");
    if (status != UCS_OK) {
        return status;
    }

    /* operation records: a zcopy's, or a flush's (the largest) */
    status = uct_srq_ucs_mpool_init(&iface->op_mp, 0,
                                    sizeof(uct_srq_flush_op_t),
                                    0, 1, 256, UINT_MAX, &op_mpool_ops,
                                    "srq_op");
    if (status != UCS_OK) {
        ucs_mpool_cleanup(&iface->tx_mp, 0);
    }
    return status;
}

static uct_iface_ops_t uct_srq_iface_ops = {
    .ep_put_short             = uct_srq_ep_put_short,
    .ep_put_bcopy             = uct_srq_ep_put_bcopy,
    .ep_put_zcopy             = uct_srq_ep_put_zcopy,
    .ep_get_short             = (uct_ep_get_short_func_t)ucs_empty_function_return_unsupported,
    .ep_get_bcopy             = uct_srq_ep_get_bcopy,
    .ep_get_zcopy             = uct_srq_ep_get_zcopy,
    .ep_am_short              = uct_srq_ep_am_short,
    .ep_am_short_iov          = uct_srq_ep_am_short_iov,
    .ep_am_bcopy              = uct_srq_ep_am_bcopy,
    .ep_am_zcopy              = uct_srq_ep_am_zcopy,
    .ep_atomic_cswap64        = uct_srq_ep_atomic_cswap64,
    .ep_atomic_cswap32        = uct_srq_ep_atomic_cswap32,
    .ep_atomic32_post         = uct_srq_ep_atomic32_post,
    .ep_atomic64_post         = uct_srq_ep_atomic64_post,
    .ep_atomic32_fetch        = uct_srq_ep_atomic32_fetch,
    .ep_atomic64_fetch        = uct_srq_ep_atomic64_fetch,
    .ep_pending_add           = uct_srq_ep_pending_add,
    .ep_pending_purge         = uct_srq_ep_pending_purge,
    .ep_flush                 = uct_srq_ep_flush,
    .ep_fence                 = uct_srq_ep_fence,
    .ep_check                 = uct_srq_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_srq_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_srq_ep_t),
    .ep_get_address           = (uct_ep_get_address_func_t)ucs_empty_function_return_unsupported,
    .ep_connect_to_ep         = (uct_ep_connect_to_ep_func_t)ucs_empty_function_return_unsupported,
    .iface_flush              = uct_srq_iface_flush,
    .iface_fence              = uct_srq_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_srq_iface_progress,
    .iface_event_fd_get       = uct_srq_iface_event_fd_get,
    .iface_event_arm          = uct_srq_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_srq_iface_t),
    .iface_query              = uct_srq_iface_query,
    .iface_get_device_address = uct_srq_iface_get_device_address,
    .iface_get_address        = uct_srq_iface_get_address,
    .iface_is_reachable       = uct_srq_iface_is_reachable,
    .ep_tag_eager_short       = uct_srq_ep_tag_eager_short,
    .ep_tag_eager_bcopy       = uct_srq_ep_tag_eager_bcopy,
    .ep_tag_eager_zcopy       = uct_srq_ep_tag_eager_zcopy,
    .ep_tag_rndv_zcopy        = uct_srq_ep_tag_rndv_zcopy,
    .ep_tag_rndv_cancel       = uct_srq_ep_tag_rndv_cancel,
    .ep_tag_rndv_request      = uct_srq_ep_tag_rndv_request,
    .iface_tag_recv_zcopy     = uct_srq_tm_recv_zcopy,
    .iface_tag_recv_cancel    = uct_srq_tm_recv_cancel,
};

static uct_iface_internal_ops_t uct_srq_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
    /* ops later UCX releases call, where their headers have them */
#ifdef HAVE_UCX_IFACE_QUERY_V2
    .iface_query_v2        = uct_iface_base_query_v2,
#endif
#ifdef HAVE_UCX_IFACE_IS_REACHABLE_V2
    .iface_is_reachable_v2 = uct_srq_iface_is_reachable_v2,
    .ep_connect_to_ep_v2   = (uct_ep_connect_to_ep_v2_func_t)
                                 ucs_empty_function_return_unsupported,
#endif
#ifdef HAVE_UCX_EP_IS_CONNECTED
    .ep_is_connected       = uct_srq_ep_is_connected,
#endif
#ifdef HAVE_UCX_EP_OUTSTANDING_PURGE
    /* asserted at interface init; used only where an interface advertises
     * token queries, which this one does not */
    .ep_outstanding_purge  = (uct_ep_outstanding_purge_func_t)
                                 ucs_empty_function_return_unsupported,
#endif
};

UCS_CLASS_INIT_FUNC(uct_srq_iface_t, uct_md_h tl_md, uct_worker_h worker,
                    const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config)
{
    const uct_srq_iface_config_t *config =
            ucs_derived_of(tl_config, uct_srq_iface_config_t);
    uct_srq_md_t *md = ucs_derived_of(tl_md, uct_srq_md_t);
    ucs_status_t status;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("srq: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_srq_iface_ops,
                              &uct_srq_iface_internal_ops, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG((params->field_mask &
                                             UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                            params->stats_root : NULL)
                              UCS_STATS_ARG(params->mode.device.dev_name));

    self->dev = md->dev;
    self->pd  = md->pd;
    if (!(md->cap_flags & UCT_MD_FLAG_REG)) {
        ucs_error("srq: %s cannot register memory", srq_verbs_dev_name(md->dev));
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_srq_iface_init_port(self, md, params->mode.device.dev_name);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_srq_iface_check_config(self, config);
    if (status != UCS_OK) {
        return status;
    }

    self->config.tx_queue_len = config->tx_queue_len;
    self->config.tx_moderation = ucs_min(config->tx_moderation,
                                         config->tx_queue_len / 4);
    self->config.seg_size     = config->seg_size;
    self->config.max_inline   = config->max_inline;
    self->config.max_send_sge = ucs_min(self->dev_attr.max_sge, 8);
    self->config.rnr_timer    = config->rnr_timer;
    self->config.timeout      = config->timeout;
    /* an atomic's target must be registered for it, so the md too */
    self->config.atomics      = (self->dev_attr.atomic_cap != IBV_ATOMIC_NONE) &&
                                md->atomic_access;
    self->config.tx_cq_len    = config->tx_cq_len;
    self->tx_cq_avail         = config->tx_cq_len;
    self->tx_outstanding      = 0;
    self->tx_poll_skips       = 0;
    self->progress_calls      = 0;
    self->counters_file       = NULL;
    memset(&self->tx_stats, 0, sizeof(self->tx_stats));

    self->event_fd            = -1;
    self->timer_fd            = -1;
    status = uct_srq_tm_init(&self->tm, self, config, params);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_srq_iface_create_cqs(self, config);
    if (status != UCS_OK) {
        goto err_cqs;
    }

    status = uct_srq_rx_init(&self->rx, self, &config->rx, config->seg_size,
                             params);
    if (status != UCS_OK) {
        goto err_cqs;
    }

    status = uct_srq_iface_init_pools(self, config);
    if (status != UCS_OK) {
        goto err_rx;
    }

    status = uct_srq_hs_init(&self->hs, self, &config->hs,
                             &uct_srq_iface_conn_hooks);
    if (status != UCS_OK) {
        goto err_pools;
    }

    status = uct_srq_iface_event_init(self);
    if (status != UCS_OK) {
        goto err_event;
    }

    if (strlen(config->counters_file) > 0) {
        self->counters_file = ucs_strdup(config->counters_file,
                                         "srq counters file");
    }
    ucs_arbiter_init(&self->arbiter);
    uct_srq_rx_refill(&self->rx, self);
    if ((self->rx.srq != NULL) && (self->rx.posted == 0)) {
        ucs_error("srq: could not post any receive buffer");
        status = UCS_ERR_NO_MEMORY;
        goto err_hs;
    }
    status = uct_srq_hs_async_start(self);
    if (status != UCS_OK) {
        goto err_hs;
    }
    return UCS_OK;

err_hs:
    ucs_free(self->counters_file);
    ucs_arbiter_cleanup(&self->arbiter);
err_event:
    uct_srq_iface_event_cleanup(self);
    uct_srq_hs_cleanup(&self->hs, self);
err_pools:
    ucs_mpool_cleanup(&self->op_mp, 0);
    ucs_mpool_cleanup(&self->tx_mp, 0);
err_rx:
    uct_srq_rx_cleanup(&self->rx, self);
err_cqs:
    uct_srq_iface_destroy_cqs(self);
    uct_srq_tm_cleanup(&self->tm);
    return status;
}

UCS_CLASS_CLEANUP_FUNC(uct_srq_iface_t)
{
    uct_srq_hs_async_stop(self);
    if (self->counters_file != NULL) {
        uct_srq_counters_dump(self, self->counters_file);
        ucs_free(self->counters_file);
    }
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_srq_iface_event_cleanup(self);
    uct_srq_hs_cleanup(&self->hs, self);
    ucs_arbiter_cleanup(&self->arbiter);
    ucs_mpool_cleanup(&self->op_mp, 1);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    uct_srq_rx_cleanup(&self->rx, self);
    uct_srq_iface_destroy_cqs(self);
    uct_srq_tm_cleanup(&self->tm);
}

UCS_CLASS_DEFINE(uct_srq_iface_t, uct_base_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srq_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                          const uct_iface_params_t*, const uct_iface_config_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srq_iface_t, uct_iface_t);

UCT_TL_DEFINE_ENTRY(&uct_srq_component, rc_srq, uct_srq_md_query_tl_devices,
                    uct_srq_iface_t, "RC_SRQ_", uct_srq_iface_config_table,
                    uct_srq_iface_config_t);

