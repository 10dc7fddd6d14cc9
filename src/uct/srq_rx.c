/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: receive-queue management: configuration, posting and refill,
 * delivery of received active messages. The depth policy (growing under
 * pressure, shrinking when idle) is in srq_rx_depth.c.
 *
 * A receive descriptor: [ uct_srq_rx_desc_t | ... | buffer ]. The buffer
 * (seg_size bytes, posted to the SRQ) receives the AM's header and payload
 * (its id is the immediate, srq_am.h) and starts a cache line. Before
 * the payload handed to an AM handler lie the user's rx_headroom and, right
 * before that, the release pointer of a kept descriptor: UCT's convention
 * is that the descriptor released with uct_iface_release_desc() is the
 * start of the headroom, with its uct_recv_desc_t pointer just before it.
 */
#include "srq_rx.h"
#include "srq_limit.h"
#include "srq_check.h"
#include "srq_am.h"
#include "srq_tmh.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/cpu.h>
#include <errno.h>
#include <limits.h>

/* At most this many WRs in one chain */
#define UCT_SRQ_RX_MAX_BATCH  64

ucs_config_field_t uct_srq_rx_config_table[] = {
    {"SRQ", "y",
     "Receive on one shared receive queue for all the connections of the\n"
     "interface (y), or give every QP its own receive queue of RX_QP_LEN\n"
     "buffers, posted with ibv_post_recv (n): the baseline the shared queue\n"
     "is measured against, whose memory grows with the number of peers.",
     ucs_offsetof(uct_srq_rx_config_t, srq), UCS_CONFIG_TYPE_BOOL},

    {"RX_QUEUE_MIN", "128",
     "Depth floor of the shared receive queue: the buffers it keeps posted\n"
     "when idle, and where it starts. All connections share them, so the\n"
     "receive memory of an interface does not depend on the number of peers.",
     ucs_offsetof(uct_srq_rx_config_t, queue_min), UCS_CONFIG_TYPE_UINT},

    {"RX_QUEUE_MAX", "4096",
     "Depth ceiling of the shared receive queue (the size it is created\n"
     "with). Between the floor and this the depth follows demand: twice the\n"
     "largest drawdown seen between refills (plus a batch), doubled when the\n"
     "queue runs dry while the receiver has time to spare, half again on an\n"
     "SRQ limit event. RX_QUEUE_MIN = RX_QUEUE_MAX gives a fixed depth.",
     ucs_offsetof(uct_srq_rx_config_t, queue_max), UCS_CONFIG_TYPE_UINT},

    {"RX_QP_LEN", "64",
     "With SRQ=n: receive buffers posted on each QP's own receive queue.",
     ucs_offsetof(uct_srq_rx_config_t, qp_len), UCS_CONFIG_TYPE_UINT},

    {"RX_BATCH", "32",
     "Tuning knob (no user needs it: leave the default).\n"
     "Receive buffers posted with one post call (a chain of WRs) when the\n"
     "progress loop refills a receive queue (1..64). A queue is refilled once\n"
     "a batch is missing, or at once below the low watermark.",
     ucs_offsetof(uct_srq_rx_config_t, batch), UCS_CONFIG_TYPE_UINT},

    {"RX_LOW_WATERMARK", "25",
     "Tuning knob (no user needs it: leave the default).\n"
     "Low watermark of a receive queue, in percent of its depth (1..90).\n"
     "Below it the queue is refilled without waiting for a full batch, and\n"
     "the SRQ limit (IBV_EVENT_SRQ_LIMIT_REACHED, an early warning that grows\n"
     "the queue by half) is armed there.",
     ucs_offsetof(uct_srq_rx_config_t, low_wm), UCS_CONFIG_TYPE_UINT},

    {"RX_ADAPT_INTERVAL", "10ms",
     "Tuning knob (no user needs it: leave the default).\n"
     "The adaptation period of the shared receive queue: its demand (the\n"
     "largest drawdown between refills, RNR NAKs, how saturated the receiver\n"
     "is) is measured per period and the depth set from it; idle memory is\n"
     "given back.",
     ucs_offsetof(uct_srq_rx_config_t, interval), UCS_CONFIG_TYPE_TIME},

    {"RX_SHRINK_DELAY", "1s",
     "Tuning knob (no user needs it: leave the default).\n"
     "How long the demand must stay at or below half the depth of the shared\n"
     "receive queue before the depth comes down to it (the largest demand of\n"
     "that time, at least RX_QUEUE_MIN); at least RX_ADAPT_INTERVAL. Posted\n"
     "buffers are never dropped: the surplus is\n"
     "retired by messages the interface sends itself, and pool memory no\n"
     "longer needed is unregistered and freed.",
     ucs_offsetof(uct_srq_rx_config_t, shrink_delay), UCS_CONFIG_TYPE_TIME},

    {"RX_MAX_BUFS", "-1",
     "Receive descriptors the interface may allocate, posted or held by\n"
     "active-message handlers that keep them (UCT_CB_PARAM_FLAG_DESC).\n"
     "-1 is unlimited. When the handlers hold so many that the queue cannot\n"
     "be refilled, a warning says so.",
     ucs_offsetof(uct_srq_rx_config_t, max_bufs), UCS_CONFIG_TYPE_UINT},

    {NULL}
};

/* @desc: the start of the user's headroom of a kept descriptor */
static void uct_srq_rx_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_srq_rx_t *rx = ucs_container_of(self, uct_srq_rx_t, release);

    /* the payload, the receive buffer, is rx_headroom after it */
    --rx->stats.held;
    uct_srq_rx_pool_put(&rx->pool,
                        UCS_PTR_BYTE_OFFSET(desc, (ptrdiff_t)rx->rx_headroom -
                                                  (ptrdiff_t)rx->data_offset));
}

ucs_status_t uct_srq_rx_check_config(const uct_srq_rx_config_t *config,
                                     const struct ibv_device_attr *attr)
{
    UCT_SRQ_CHECK_RANGE("RX_BATCH", config->batch, 1, UCT_SRQ_RX_MAX_BATCH);
    UCT_SRQ_CHECK_RANGE("RX_LOW_WATERMARK", config->low_wm, 1, 90);
    if (config->srq) {
        UCT_SRQ_CHECK_RANGE("RX_QUEUE_MAX", config->queue_max,
                               config->batch, attr->max_srq_wr);
        UCT_SRQ_CHECK_RANGE("RX_QUEUE_MIN", config->queue_min,
                               config->batch, config->queue_max);
        UCT_SRQ_CHECK_RANGE("RX_MAX_BUFS", config->max_bufs,
                               config->queue_min, UINT_MAX);
        UCT_SRQ_CHECK_UNUSED("RX_QP_LEN", "it applies with UCX_RC_SRQ_SRQ=n");
    } else {
        UCT_SRQ_CHECK_UNUSED("RX_QUEUE_MIN", "UCX_RC_SRQ_SRQ=n (RX_QP_LEN)");
        UCT_SRQ_CHECK_UNUSED("RX_QUEUE_MAX", "UCX_RC_SRQ_SRQ=n (RX_QP_LEN)");
        UCT_SRQ_CHECK_RANGE("RX_QP_LEN", config->qp_len, config->batch,
                               attr->max_qp_wr);
        UCT_SRQ_CHECK_RANGE("RX_MAX_BUFS", config->max_bufs,
                               config->qp_len, UINT_MAX);
    }
    UCT_SRQ_CHECK_TIME_RANGE("RX_ADAPT_INTERVAL", config->interval,
                             UCT_SRQ_RX_MIN_INTERVAL, 60);
    /* at least one adaptation period: the quiet is measured in periods */
    UCT_SRQ_CHECK_TIME_RANGE("RX_SHRINK_DELAY", config->shrink_delay,
                             config->interval, 3600);
    return UCS_OK;
}

unsigned uct_srq_rx_cq_len(const uct_srq_rx_config_t *config)
{
    /* per-QP mode: every QP's buffers may complete before one is polled;
     * uct_srq_rx_rq_init refuses QPs beyond what the CQ holds */
    return config->srq ? config->queue_max : UCT_SRQ_RX_QP_CQ_LEN;
}

/* With tag matching, the SRQ is the device's TM SRQ: its ordinary buffers
 * take what no tag matched, its list is the interface's tagged receives,
 * and everything of it completes on the receive CQ */
static struct ibv_srq *uct_srq_rx_create_tm_srq(uct_srq_rx_t *rx,
                                                uct_srq_iface_t *iface)
{
    struct ibv_srq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.srq_context         = rx;
    attr.attr.max_wr         = rx->config.max;
    attr.attr.max_sge        = 1;
    attr.comp_mask           = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                               IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
    attr.srq_type            = IBV_SRQT_TM;
    attr.pd                  = iface->pd;
    attr.cq                  = iface->recv_cq;
    attr.tm_cap.max_num_tags = iface->tm.num_slots;
    attr.tm_cap.max_ops      = iface->tm.max_ops;
    return srq_verbs_create_srq_ex(iface->dev, &attr);
}

static ucs_status_t uct_srq_rx_create_srq(uct_srq_rx_t *rx,
                                          uct_srq_iface_t *iface)
{
    struct ibv_srq_init_attr srq_attr = {};
    int err;

    /* created at the ceiling: growing is posting more, never resizing */
    srq_attr.srq_context  = rx;
    srq_attr.attr.max_wr  = rx->config.max;
    srq_attr.attr.max_sge = 1;
    rx->srq = iface->tm.enabled ? uct_srq_rx_create_tm_srq(rx, iface) :
              srq_verbs_create_srq(iface->dev, iface->pd, &srq_attr);
    if (rx->srq == NULL) {
        err = errno;
        ucs_error("srq: failed to create a shared receive queue of %u on %s: "
                  "%s", rx->config.max, srq_verbs_dev_name(iface->dev),
                  UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    }
    return UCS_OK;
}

ucs_status_t uct_srq_rx_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                             const uct_srq_rx_config_t *config,
                             size_t seg_size, const uct_iface_params_t *params)
{
    unsigned rx_headroom = UCT_IFACE_PARAM_VALUE(params, rx_headroom,
                                                 RX_HEADROOM, 0);
    size_t alignment, align_offset;
    ucs_status_t status;

    /* the interface checked the config (uct_srq_rx_check_config) */
    memset(rx, 0, sizeof(*rx));
    rx->config.min          = config->srq ? config->queue_min : config->qp_len;
    rx->config.max          = config->srq ? config->queue_max : config->qp_len;
    rx->config.low_wm       = config->low_wm;
    rx->config.interval     = ucs_time_from_sec(config->interval);
    rx->config.shrink_delay = ucs_time_from_sec(config->shrink_delay);
    rx->batch               = config->batch;
    rx->seg_size            = seg_size;
    rx->rx_headroom         = rx_headroom;
    rx->hdr_len             = iface->tm.enabled ? UCT_SRQ_TM_HDR_LEN : 0;
    rx->release.cb          = uct_srq_rx_release_desc;
    ucs_list_head_init(&rx->refill_rqs);
    uct_srq_rx_set_depth(rx, rx->config.min);

    /* room for the user's headroom and the release pointer before the
     * payload, the receive buffer */
    rx->data_offset = ucs_align_up(sizeof(uct_srq_rx_desc_t) + rx_headroom +
                                   sizeof(uct_recv_desc_t*) + rx->hdr_len,
                                   UCS_SYS_CACHE_LINE_SIZE);
    /* it starts a cache line, or where the user asked (the pools are made
     * later: a bad alignment is refused now, as UCX's transports do) */
    status = uct_iface_param_am_alignment(params, seg_size,
                                          rx->data_offset,
                                          rx->data_offset, &alignment,
                                          &align_offset);
    if (status != UCS_OK) {
        return status;
    }
    if (!ucs_is_pow2(alignment)) {
        ucs_error("srq: invalid AM alignment %zu: not a power of 2",
                  alignment);
        return UCS_ERR_INVALID_PARAM;
    }
    /* the user's offset (align_offset - data_offset, 0 without) is the
     * payload's, not the descriptor's: the payload moves by it within the
     * descriptor, which stays aligned (its fields are read as such) */
    rx->data_offset = ucs_align_up(align_offset, alignment) -
                      (align_offset - rx->data_offset);
    alignment       = ucs_max(alignment, sizeof(uint64_t));
    align_offset    = 0;
    /* the first tier covers the floor (one QP's queue in per-QP mode) and a
     * batch in the handlers' hands; the pool doubles from there */
    uct_srq_rx_pool_init(&rx->pool, &iface->super.super,
                         rx->data_offset + seg_size, align_offset, alignment,
                         rx->config.min, rx->batch,
                         config->max_bufs);

    if (config->srq) {
        status = uct_srq_rx_create_srq(rx, iface);
        if (status != UCS_OK) {
            return status;
        }
    }

    uct_srq_rx_adapt_init(rx, iface);
    return UCS_OK;
}

void uct_srq_rx_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uct_srq_rx_adapt_cleanup(rx, iface);
    /* Destroying the SRQ returns its buffers; they go with the pool */
    if (rx->srq != NULL) {
        srq_verbs_destroy_srq(iface->dev, rx->srq);
    }
    uct_srq_rx_pool_cleanup(&rx->pool);
}

static int uct_srq_rx_post_chain(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq,
                                 struct ibv_recv_wr *wrs,
                                 struct ibv_recv_wr **bad_wr)
{
    if (rq != NULL) {
        return ibv_post_recv(rq->qp, wrs, bad_wr);
    } else {
        return ibv_post_srq_recv(rx->srq, wrs, bad_wr);
    }
}

/* Post up to @count buffers as one chain to the SRQ (@rq NULL) or to @rq;
 * returns how many were posted */
static unsigned uct_srq_rx_post(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq,
                                unsigned count)
{
    struct ibv_recv_wr wrs[UCT_SRQ_RX_MAX_BATCH], *bad_wr, *wr;
    struct ibv_sge sges[UCT_SRQ_RX_MAX_BATCH];
    uct_srq_rx_desc_t *desc;
    unsigned i, n;
    int ret;

    for (n = 0; n < count; ++n) {
        desc = uct_srq_rx_pool_get(&rx->pool);
        if (desc == NULL) {
            break;
        }
        desc->rq       = rq;
        /* a TMH lands before the buffer (tag matching) */
        sges[n].addr   = (uintptr_t)uct_srq_rx_desc_buffer(rx, desc) -
                         rx->hdr_len;
        sges[n].length = rx->seg_size + rx->hdr_len;
        sges[n].lkey   = desc->super.lkey;
        wrs[n].wr_id   = (uintptr_t)desc;
        wrs[n].sg_list = &sges[n];
        wrs[n].num_sge = 1;
        wrs[n].next    = &wrs[n + 1];
    }
    if (n == 0) {
        return 0;
    }
    wrs[n - 1].next = NULL;

    /* all paths: one chain, one doorbell, the same bad_wr contract */
    ret = uct_srq_rx_post_chain(rx, rq, wrs, &bad_wr);
    if (ret != 0) {
        /* the WRs before bad_wr are posted; the rest go back to the pool */
        ucs_debug("srq: posting receives failed at WR %zd of %u: %s",
                  bad_wr - wrs, n, strerror(ret));
        for (wr = bad_wr; wr != NULL; wr = wr->next) {
            uct_srq_rx_pool_put(&rx->pool, (void*)(uintptr_t)wr->wr_id);
        }
        i = bad_wr - wrs;
    } else {
        i = n;
    }

    rx->posted        += i;
    rx->stats.posted  += i;
    rx->stats.refills += 1;
    rx->stats.peak     = ucs_max(rx->stats.peak, rx->posted);
    if (rq != NULL) {
        rq->posted += i;
    }
    return i;
}

/* Bring a queue holding @posted of @depth buffers back to its depth, in
 * chains of a batch; 0 when it could not (no descriptor, queue full) */
static int uct_srq_rx_fill(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq,
                           const unsigned *posted)
{
    unsigned want;

    while (*posted < rx->depth) {
        want = ucs_min(rx->depth - *posted, rx->batch);
        if (uct_srq_rx_post(rx, rq, want) < want) {
            return 0;
        }
    }
    return 1;
}

/* Worth a post call: a whole batch missing, below the watermark, or
 * buffers being retired (each one retired is replaced at once, so the
 * queue stays near its depth while it moves to other buffers) */
static int uct_srq_rx_needs_fill(const uct_srq_rx_t *rx, unsigned posted)
{
    return (posted + rx->batch <= rx->depth) || (posted < rx->low) ||
           ((rx->retire.outstanding > 0) && (posted < rx->depth));
}

static void uct_srq_rx_refill_rqs(uct_srq_rx_t *rx)
{
    uct_srq_rx_rq_t *rq, *tmp;

    ucs_list_for_each_safe(rq, tmp, &rx->refill_rqs, list) {
        if (!rq->failed && !uct_srq_rx_fill(rx, rq, &rq->posted)) {
            uct_srq_rx_starved(rx);
            return; /* out of descriptors: keep the rest queued */
        }
        ucs_list_del(&rq->list);
        rq->queued = 0;
    }
}

void uct_srq_rx_refill(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    if (rx->srq == NULL) {
        uct_srq_rx_refill_rqs(rx);
        return;
    }

    if (uct_srq_rx_needs_fill(rx, rx->posted)) {
        uct_srq_rx_adapt_pressure(rx, iface);
        if (uct_srq_rx_fill(rx, NULL, &rx->posted)) {
            rx->adapt.starved = 0;
        } else {
            uct_srq_rx_starved(rx);
        }
        uct_srq_rx_adapt_refilled(rx, iface);
    }
}

ucs_status_t uct_srq_rx_rq_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                uct_srq_rx_rq_t *rq, struct ibv_qp *qp)
{
    if (((rx->num_rqs + 1) * rx->depth) > UCT_SRQ_RX_QP_CQ_LEN) {
        ucs_error("srq: UCX_RC_SRQ_SRQ=n: %u QPs of RX_QP_LEN=%u would "
                  "overflow the receive CQ (%u entries)", rx->num_rqs + 1,
                  rx->depth, UCT_SRQ_RX_QP_CQ_LEN);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    rq->qp     = qp;
    rq->posted = 0;
    rq->failed = 0;
    rq->queued = 0;
    if (!uct_srq_rx_fill(rx, rq, &rq->posted) && (rq->posted == 0)) {
        ucs_error("srq: could not post receive buffers to QP 0x%x",
                  qp->qp_num);
        rq->qp = NULL;
        return UCS_ERR_NO_MEMORY;
    }

    ++rx->num_rqs;
    if (rq->posted < rx->depth) {
        ucs_list_add_tail(&rx->refill_rqs, &rq->list);
        rq->queued = 1;
    }
    return UCS_OK;
}

void uct_srq_rx_rq_cleanup(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq)
{
    if (rq->qp == NULL) {
        return; /* SRQ mode, or never set up */
    }
    if (rq->queued) {
        ucs_list_del(&rq->list);
        rq->queued = 0;
    }
    /* its buffers go with the QP; the pool reclaims them at cleanup */
    --rx->num_rqs;
    rx->posted -= rq->posted;
    rq->posted  = 0;
    rq->failed  = 1;
    rq->qp      = NULL;
}

/* Per-QP mode: the queue lost a buffer; queue it for a refill once that
 * is worth a post call */
static void uct_srq_rx_rq_consumed(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq,
                                   int flushed)
{
    --rq->posted;
    rq->failed |= flushed;
    if (!rq->queued && !rq->failed && uct_srq_rx_needs_fill(rx, rq->posted)) {
        ucs_list_add_tail(&rx->refill_rqs, &rq->list);
        rq->queued = 1;
    }
}

/* Not an active message (a failed receive, a retire send, a keepalive
 * probe, garbage): retire sends and garbage are counted, and the buffer
 * goes back to the pool */
static void uct_srq_rx_discard(uct_srq_rx_t *rx,
                                      const struct ibv_wc *wc,
                                      uct_srq_rx_desc_t *desc, uint32_t am_id)
{
    if (wc->status != IBV_WC_SUCCESS) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ucs_diag("srq: receive completed with error: %s",
                     ibv_wc_status_str(wc->status));
        }
    } else if ((wc->byte_len == 0) && (rx->retire.qp != NULL) &&
               (wc->qp_num == rx->retire.qp->qp_num)) {
        ++rx->stats.retired;
    } else if (am_id == UCT_SRQ_AM_ID_NONE) {
        ++rx->stats.dropped;
        ucs_diag("srq: dropped a message without an am id (%u bytes, qp 0x%x)",
                 wc->byte_len, wc->qp_num);
    } else if (am_id != UCT_SRQ_AM_ID_KEEPALIVE) {
        ++rx->stats.dropped;
        ucs_diag("srq: dropped a message with am id %u (%u bytes, qp 0x%x)",
                 am_id, wc->byte_len, wc->qp_num);
    }
    uct_srq_rx_pool_put(&rx->pool, desc);
}

/* uct_srq_rx_take, inlined into the delivery of every message */
static UCS_F_ALWAYS_INLINE uct_srq_rx_desc_t *
uct_srq_rx_take_inline(uct_srq_rx_t *rx, const struct ibv_wc *wc)
{
    uct_srq_rx_desc_t *desc = (void*)(uintptr_t)wc->wr_id;

    --rx->posted;
    ++rx->stats.consumed;
    if (desc->rq != NULL) {
        uct_srq_rx_rq_consumed(rx, desc->rq, wc->status != IBV_WC_SUCCESS);
    }
    return desc;
}

uct_srq_rx_desc_t *uct_srq_rx_take(uct_srq_rx_t *rx, const struct ibv_wc *wc)
{
    return uct_srq_rx_take_inline(rx, wc);
}

/* uct_srq_rx_done, inlined likewise */
static UCS_F_ALWAYS_INLINE void
uct_srq_rx_done_inline(uct_srq_rx_t *rx, uct_srq_rx_desc_t *desc,
                       void *payload, ucs_status_t status)
{
    uct_recv_desc_t *release;

    if (status != UCS_INPROGRESS) {
        uct_srq_rx_pool_put(&rx->pool, desc);
        return;
    }
    /* kept: the handler may have used its headroom, not what is before;
     * with an odd-sized headroom the pointer is not aligned */
    ++rx->stats.held;
    release = &rx->release;
    memcpy(UCS_PTR_BYTE_OFFSET(payload, -(ptrdiff_t)rx->rx_headroom -
                                        (ptrdiff_t)sizeof(release)),
           &release, sizeof(release));
}

void uct_srq_rx_done(uct_srq_rx_t *rx, uct_srq_rx_desc_t *desc,
                     void *payload, ucs_status_t status)
{
    uct_srq_rx_done_inline(rx, desc, payload, status);
}

void uct_srq_rx_deliver(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                         const struct ibv_wc *wc)
{
    uct_srq_rx_desc_t *desc = uct_srq_rx_take_inline(rx, wc);
    uint32_t am_id;
    void *payload;
    size_t length;
    ucs_status_t status;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        uct_srq_rx_discard(rx, wc, desc, UCT_SRQ_AM_ID_NONE);
        return;
    }
    am_id = uct_srq_am_id(wc);
    /* with tag matching, an AM is a TMH (before the buffer) and the rest */
    if (ucs_unlikely((am_id >= UCT_AM_ID_MAX) ||
                     (wc->byte_len < rx->hdr_len))) {
        uct_srq_rx_discard(rx, wc, desc, am_id);
        return;
    }

    length           = wc->byte_len - rx->hdr_len;
    rx->stats.bytes += length;
    payload = uct_srq_rx_desc_buffer(rx, desc);
    status  = uct_iface_invoke_am(&iface->super, am_id, payload, length,
                                  UCT_CB_PARAM_FLAG_DESC);
    uct_srq_rx_done_inline(rx, desc, payload, status);
}
