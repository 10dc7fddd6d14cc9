/*
 * ucx-srq: receive-queue management.
 *
 * A receive descriptor: [ uct_srq_desc_t | ... | buffer ]. The buffer
 * (seg_size bytes, posted to the SRQ) receives [ am_id | payload ]. Before
 * the payload handed to an AM handler lie the user's rx_headroom and, right
 * before that, the release pointer of a kept descriptor: UCT's convention
 * is that the descriptor released with uct_iface_release_desc() is the
 * start of the headroom, with its uct_recv_desc_t pointer just before it.
 */
#include "srq_rx.h"
#include "srq_iface.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>

/* At most this many WRs in one chain */
#define UCT_SRQ_RX_MAX_BATCH  64

static const char *uct_srq_rx_post_names[] = {
    [UCT_SRQ_RX_POST_VERBS] = "verbs",
    [UCT_SRQ_RX_POST_RING]  = "ring",
    [UCT_SRQ_RX_POST_AUTO]  = "auto",
    [UCT_SRQ_RX_POST_LAST]  = NULL
};

ucs_config_field_t uct_srq_rx_config_table[] = {
    {"RX_POST", "auto",
     "How receive buffers are posted to the shared receive queue:\n"
     " verbs - ibv_post_srq_recv, one call per batch\n"
     " ring  - WQEs written straight into the SRQ's ring (mlx5 linked-list\n"
     "         layout), one doorbell-record update per batch; refused where\n"
     "         the device does not share its ring with the verbs (mlx5 would\n"
     "         need direct CQ polling, not implemented)\n"
     " auto  - ring where the device shares it (soft0), else verbs",
     ucs_offsetof(uct_srq_rx_config_t, post_mode),
     UCS_CONFIG_TYPE_ENUM(uct_srq_rx_post_names)},

    {"RX_QUEUE_LEN", "256",
     "Receive buffers kept posted on the interface's shared receive queue.\n"
     "All connections of the interface share them: the receive memory of an\n"
     "interface is RX_QUEUE_LEN x SEG_SIZE, whatever the number of peers.",
     ucs_offsetof(uct_srq_rx_config_t, queue_len), UCS_CONFIG_TYPE_UINT},

    {"RX_BATCH", "32",
     "Receive buffers posted with one ibv_post_srq_recv call (a chain of WRs)\n"
     "when the progress loop refills the shared receive queue (1..64).",
     ucs_offsetof(uct_srq_rx_config_t, batch), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_BUFS", "-1",
     "Receive descriptors the interface may allocate, posted or held by\n"
     "active-message handlers that keep them (UCT_CB_PARAM_FLAG_DESC).\n"
     "-1 is unlimited.",
     ucs_offsetof(uct_srq_rx_config_t, max_bufs), UCS_CONFIG_TYPE_UINT},

    {NULL}
};

static void *uct_srq_rx_buffer(uct_srq_rx_t *rx, void *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, rx->data_offset);
}

/* @desc: the start of the user's headroom of a kept descriptor */
static void uct_srq_rx_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_srq_rx_t *rx = ucs_container_of(self, uct_srq_rx_t, release);

    /* the payload is rx_headroom after it, one byte (the am_id) into the
     * buffer */
    ucs_mpool_put(UCS_PTR_BYTE_OFFSET(desc, (ptrdiff_t)rx->rx_headroom - 1 -
                                            (ptrdiff_t)rx->data_offset));
}

/* The ring path needs a ring the device shares with its verbs: completions
 * then come back through ibv_poll_cq with the right wr_id */
static ucs_status_t uct_srq_rx_init_post_mode(uct_srq_rx_t *rx,
                                              uct_srq_iface_t *iface,
                                              unsigned mode)
{
    int ret;

    rx->use_ring = 0;
    if (mode == UCT_SRQ_RX_POST_VERBS) {
        return UCS_OK;
    }

    ret = srq_verbs_srq_ring(iface->dev, rx->srq, &rx->ring);
    if ((ret == 0) && (rx->ring.flags & SRQ_VERBS_RING_F_SHARED)) {
        rx->use_ring = 1;
        return UCS_OK;
    }
    if (ret == 0) {
        srq_verbs_srq_ring_release(&rx->ring);
    }
    if (mode == UCT_SRQ_RX_POST_AUTO) {
        return UCS_OK;
    }
    ucs_error("srq: UCX_RC_SRQ_RX_POST=ring is not supported on %s (%s)",
              srq_verbs_dev_name(iface->dev),
              ret ? strerror(ret) : "the ring is not shared with the verbs");
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_srq_rx_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                             const uct_srq_rx_config_t *config,
                             size_t seg_size, unsigned rx_headroom)
{
    struct ibv_srq_init_attr srq_attr = {};
    uct_srq_md_t *md = ucs_derived_of(iface->super.md, uct_srq_md_t);
    ucs_status_t status;

    if ((config->batch < 1) || (config->batch > UCT_SRQ_RX_MAX_BATCH)) {
        ucs_error("srq: UCX_RC_SRQ_RX_BATCH=%u is out of range (1..%d)",
                  config->batch, UCT_SRQ_RX_MAX_BATCH);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->queue_len < config->batch) ||
        (config->queue_len > (unsigned)iface->dev_attr.max_srq_wr)) {
        ucs_error("srq: UCX_RC_SRQ_RX_QUEUE_LEN=%u is out of range (%u..%d)",
                  config->queue_len, config->batch,
                  iface->dev_attr.max_srq_wr);
        return UCS_ERR_INVALID_PARAM;
    }

    rx->depth       = config->queue_len;
    rx->batch       = config->batch;
    rx->seg_size    = seg_size;
    rx->posted      = 0;
    rx->rx_headroom = rx_headroom;
    /* room for the user's headroom and the release pointer before the
     * payload; the payload, one byte (the am_id) into the buffer, starts a
     * cache line */
    rx->data_offset = ucs_align_up(sizeof(uct_srq_desc_t) + rx_headroom +
                                   sizeof(uct_recv_desc_t*) + 1,
                                   UCS_SYS_CACHE_LINE_SIZE) - 1;
    rx->release.cb  = uct_srq_rx_release_desc;
    memset(&rx->stats, 0, sizeof(rx->stats));

    status = uct_srq_mpool_init(&rx->mp, md, rx->data_offset + seg_size,
                                rx->data_offset + 1, config->batch * 4,
                                config->max_bufs, "srq_rx_desc");
    if (status != UCS_OK) {
        return status;
    }

    srq_attr.attr.max_wr  = rx->depth;
    srq_attr.attr.max_sge = 1;
    rx->srq = srq_verbs_create_srq(iface->dev, iface->pd, &srq_attr);
    if (rx->srq == NULL) {
        ucs_error("srq: failed to create a shared receive queue of %u on %s: %m",
                  rx->depth, srq_verbs_dev_name(iface->dev));
        ucs_mpool_cleanup(&rx->mp, 0);
        return UCS_ERR_IO_ERROR;
    }

    status = uct_srq_rx_init_post_mode(rx, iface, config->post_mode);
    if (status != UCS_OK) {
        srq_verbs_destroy_srq(iface->dev, rx->srq);
        ucs_mpool_cleanup(&rx->mp, 0);
    }
    return status;
}

void uct_srq_rx_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    if (rx->use_ring) {
        srq_verbs_srq_ring_release(&rx->ring);
    }
    /* Destroying the SRQ returns its buffers; they go with the pool */
    srq_verbs_destroy_srq(iface->dev, rx->srq);
    ucs_mpool_cleanup(&rx->mp, 0);
}

/* Post up to @count buffers as one chain; returns how many were posted */
static unsigned uct_srq_rx_post(uct_srq_rx_t *rx, unsigned count)
{
    struct ibv_recv_wr wrs[UCT_SRQ_RX_MAX_BATCH], *bad_wr, *wr;
    struct ibv_sge sges[UCT_SRQ_RX_MAX_BATCH];
    uct_srq_desc_t *desc;
    unsigned i, n;
    int ret;

    for (n = 0; n < count; ++n) {
        desc = ucs_mpool_get_inline(&rx->mp);
        if (desc == NULL) {
            break;
        }
        sges[n].addr   = (uintptr_t)uct_srq_rx_buffer(rx, desc);
        sges[n].length = rx->seg_size;
        sges[n].lkey   = desc->lkey;
        wrs[n].wr_id   = (uintptr_t)desc;
        wrs[n].sg_list = &sges[n];
        wrs[n].num_sge = 1;
        wrs[n].next    = &wrs[n + 1];
    }
    if (n == 0) {
        return 0;
    }
    wrs[n - 1].next = NULL;

    /* both paths: one chain, one doorbell, the same bad_wr contract */
    ret = rx->use_ring ? srq_verbs_ring_post(&rx->ring, wrs, &bad_wr) :
                         ibv_post_srq_recv(rx->srq, wrs, &bad_wr);
    if (ret != 0) {
        /* the WRs before bad_wr are posted; the rest go back to the pool */
        ucs_debug("srq: posting receives failed at WR %zd of %u: %s",
                  bad_wr - wrs, n, strerror(ret));
        for (wr = bad_wr; wr != NULL; wr = wr->next) {
            ucs_mpool_put_inline((void*)(uintptr_t)wr->wr_id);
        }
        i = bad_wr - wrs;
    } else {
        i = n;
    }

    rx->posted        += i;
    rx->stats.posted  += i;
    rx->stats.refills += 1;
    return i;
}

void uct_srq_rx_refill(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    unsigned want;

    while (rx->posted < rx->depth) {
        want = ucs_min(rx->depth - rx->posted, rx->batch);
        if (uct_srq_rx_post(rx, want) < want) {
            break; /* no descriptor or queue full: try again next progress */
        }
    }
}

void uct_srq_rx_complete(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                         const struct ibv_wc *wc)
{
    void *desc = (void*)(uintptr_t)wc->wr_id;
    uct_recv_desc_t *release;
    uint8_t *buf, am_id;
    void *payload;
    ucs_status_t status;

    --rx->posted;
    ++rx->stats.consumed;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR) {
            ucs_diag("srq: receive completed with error: %s",
                     ibv_wc_status_str(wc->status));
        }
        ucs_mpool_put_inline(desc);
        return;
    }

    buf   = uct_srq_rx_buffer(rx, desc);
    am_id = buf[0];
    if (ucs_unlikely((wc->byte_len < 1) || (am_id >= UCT_AM_ID_MAX))) {
        if ((wc->byte_len < 1) || (am_id != UCT_SRQ_AM_ID_KEEPALIVE)) {
            ++rx->stats.dropped;
            ucs_diag("srq: dropped a malformed message (%u bytes, am_id %u)",
                     wc->byte_len, wc->byte_len ? am_id : 0);
        }
        ucs_mpool_put_inline(desc);
        return;
    }

    rx->stats.bytes += wc->byte_len;
    payload = buf + 1;
    status  = uct_iface_invoke_am(&iface->super, am_id, payload,
                                  wc->byte_len - 1, UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_OK) {
        ucs_mpool_put_inline(desc);
    } else {
        /* kept: the handler may have used its headroom, not what is before;
         * with an odd-sized headroom the pointer is not aligned */
        release = &rx->release;
        memcpy(UCS_PTR_BYTE_OFFSET(payload, -(ptrdiff_t)rx->rx_headroom -
                                            (ptrdiff_t)sizeof(release)),
               &release, sizeof(release));
    }
}
