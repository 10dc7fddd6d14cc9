/*
 * ucx-srq: the depth of the shared receive queue.
 *
 * The SRQ is created at its ceiling (RX_QUEUE_MAX) and kept filled to a
 * depth between RX_QUEUE_MIN and that ceiling:
 *  - grow (double) under pressure: an SRQ limit event (the device found the
 *    queue below the low watermark), RNR NAKs the device had to send, a
 *    refill that finds the queue empty, or RX_GROW_AFTER refills in a row
 *    that found it below the watermark;
 *  - shrink (halve) after RX_SHRINK_DELAY without pressure and with little
 *    traffic. Verbs cannot take back a posted WR, so the surplus is retired:
 *    the interface sends itself empty messages over a QP connected to
 *    itself, each consuming one buffer of the SRQ like any message. Nothing
 *    posted is dropped and nothing is reordered (a connection's messages
 *    still take buffers in order). Retiring the whole queue once moves it
 *    onto the lowest tiers of the pool, so the upper tiers empty and their
 *    memory is unregistered and freed.
 * Growing is immediate and shrinking slow: that is the hysteresis.
 */
#include "srq_rx.h"
#include "srq_iface.h"
#include "srq_qp.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/atomic.h>

/* Retire sends in flight at once */
#define UCT_SRQ_RX_RETIRE_WRS  16

static void uct_srq_rx_retire_progress(uct_srq_rx_t *rx,
                                       uct_srq_iface_t *iface);

void uct_srq_rx_set_depth(uct_srq_rx_t *rx, unsigned depth)
{
    rx->depth = depth;
    rx->low   = ucs_max(1, depth * rx->config.low_wm / 100);
}

static void uct_srq_rx_read_rnr(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                uint64_t *delta_p)
{
    uint64_t count;

    *delta_p = 0;
    if (rx->adapt.rnr_ok &&
        (srq_verbs_query_rnr(iface->dev, iface->port_num, &count) == 0)) {
        *delta_p          = count - rx->adapt.rnr_last;
        rx->adapt.rnr_last = count;
        rx->stats.rnr     += *delta_p;
    }
}

/* The md's async handler (any thread): the SRQ reached its limit; the
 * progress thread reads the count at its next refill */
static void uct_srq_rx_limit_reached(void *arg)
{
    uct_srq_rx_t *rx = arg;

    ucs_atomic_add32(&rx->adapt.limit_events, 1);
}

void uct_srq_rx_adapt_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uct_srq_md_t *md = ucs_derived_of(iface->super.md, uct_srq_md_t);
    uint64_t count;

    rx->adapt.rnr_ok      = (srq_verbs_query_rnr(iface->dev, iface->port_num,
                                                 &count) == 0);
    rx->adapt.rnr_last    = rx->adapt.rnr_ok ? count : 0;
    rx->adapt.last_tick   = ucs_get_time();
    rx->adapt.next_tick   = rx->adapt.last_tick + rx->config.interval;
    rx->adapt.last_change = ucs_get_time();
    if (rx->srq != NULL) {
        uct_srq_md_add_limit_handler(md, &rx->limit_handler, rx->srq,
                                     uct_srq_rx_limit_reached, rx);
    }
}

void uct_srq_rx_adapt_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uct_srq_md_t *md = ucs_derived_of(iface->super.md, uct_srq_md_t);

    if (rx->srq != NULL) {
        uct_srq_md_remove_limit_handler(md, &rx->limit_handler);
    }
    if (rx->retire.qp != NULL) {
        srq_verbs_destroy_qp(iface->dev, rx->retire.qp);
        rx->retire.qp = NULL;
    }
}

/* A new depth moves the watermark: a limit armed at the old one would
 * report pressure that is not there (after a shrink, retiring goes below
 * it) - disarm it; the next refill arms the new one */
static void uct_srq_rx_change_depth(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                    unsigned depth)
{
    struct ibv_srq_attr attr = {};

    uct_srq_rx_set_depth(rx, depth);
    if ((rx->adapt.limit_armed == 1) &&
        (srq_verbs_modify_srq(iface->dev, rx->srq, &attr, IBV_SRQ_LIMIT) == 0)) {
        rx->adapt.limit_armed = 0;
    }
}

static void uct_srq_rx_grow(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                            const char *why)
{
    unsigned depth = ucs_min(rx->depth * 2, rx->config.max);

    rx->adapt.low_fills   = 0;
    rx->adapt.last_change = ucs_get_time();
    if (depth == rx->depth) {
        return;
    }
    ucs_debug("srq: receive queue %p grows %u -> %u (%s)", rx, rx->depth,
              depth, why);
    uct_srq_rx_change_depth(rx, iface, depth);
    rx->retire.pending = 0; /* needed after all */
    ++rx->stats.grows;
}

void uct_srq_rx_adapt_pressure(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uint32_t events = rx->adapt.limit_events;

    if (events != rx->adapt.limit_seen) {
        rx->stats.limit_events += (uint32_t)(events - rx->adapt.limit_seen);
        rx->adapt.limit_seen    = events;
        rx->adapt.limit_armed   = 0; /* one shot: re-armed after the refill */
        uct_srq_rx_grow(rx, iface, "SRQ limit event");
    } else if ((rx->posted == 0) && (rx->stats.posted > 0)) {
        /* ran dry (not the first fill): whatever arrives now is refused */
        uct_srq_rx_grow(rx, iface, "ran dry");
    } else if (rx->posted < rx->low) {
        if (++rx->adapt.low_fills >= rx->config.grow_after) {
            uct_srq_rx_grow(rx, iface, "low fill");
        }
    } else {
        rx->adapt.low_fills = 0;
    }
}

/* The device raises IBV_EVENT_SRQ_LIMIT_REACHED (to uct_srq_md's async
 * handler) when fewer than the watermark are left */
static void uct_srq_rx_arm_limit(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    struct ibv_srq_attr attr = {};
    int ret;

    attr.srq_limit = rx->low;
    ret = srq_verbs_modify_srq(iface->dev, rx->srq, &attr, IBV_SRQ_LIMIT);
    if (ret == 0) {
        rx->adapt.limit_armed = 1;
    } else {
        ucs_debug("srq: %s cannot arm the SRQ limit: %s",
                  srq_verbs_dev_name(iface->dev), strerror(ret));
        rx->adapt.limit_armed = -1; /* never again */
    }
}

void uct_srq_rx_adapt_refilled(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    /* at the ceiling an event would change nothing, and each costs the
     * device an interrupt and the async thread a wake-up */
    if ((rx->adapt.limit_armed == 0) && (rx->depth < rx->config.max) &&
        (rx->posted > rx->low)) {
        uct_srq_rx_arm_limit(rx, iface);
    }
    if (rx->retire.pending > 0) {
        uct_srq_rx_retire_progress(rx, iface);
    }
    uct_srq_rx_tick(rx, iface);
}

void uct_srq_rx_starved(uct_srq_rx_t *rx)
{
    uct_srq_rx_pool_t *pool = &rx->pool;

    if (rx->adapt.starved || (pool->capacity < pool->max) ||
        (pool->in_use < pool->capacity)) {
        return; /* reported already, or a post failure (logged) */
    }
    rx->adapt.starved = 1;
    ++rx->stats.starved;
    /* handlers holding what the limit allows is normal to UCX (senders wait
     * until they let go): a diagnostic, and UCX's own rate-limited warning
     * of an empty pool, the one its transports give */
    ucs_diag("srq: receive queue %p holds %u of %u buffers: "
             "UCX_RC_SRQ_RX_MAX_BUFS=%u reached, %u descriptors are kept by "
             "active-message handlers", rx, rx->posted, rx->depth, pool->max,
             rx->stats.held);
    uct_iface_mpool_empty_warn(&ucs_container_of(rx, uct_srq_iface_t,
                                                 rx)->super,
                               &pool->tiers[0].mp);
}

/* ---- retiring posted buffers ------------------------------------------ */

static ucs_status_t uct_srq_rx_retire_qp(uct_srq_rx_t *rx,
                                         uct_srq_iface_t *iface)
{
    ucs_status_t status;

    status = uct_srq_qp_create(iface, UCT_SRQ_RX_RETIRE_WRS, &rx->retire.qp);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_srq_qp_connect(iface, rx->retire.qp, &iface->port_addr,
                                rx->retire.qp->qp_num);
    if (status != UCS_OK) {
        srq_verbs_destroy_qp(iface->dev, rx->retire.qp);
        rx->retire.qp = NULL;
    }
    return status;
}

static void uct_srq_rx_retire_stop(uct_srq_rx_t *rx, const char *why)
{
    ucs_diag("srq: cannot retire receive buffers (%s): the queue keeps %u",
             why, rx->posted);
    rx->retire.failed  = 1;
    rx->retire.pending = 0;
}

static void uct_srq_rx_retire_progress(uct_srq_rx_t *rx,
                                       uct_srq_iface_t *iface)
{
    struct ibv_send_wr wr = {}, *bad_wr;
    int ret;

    if ((rx->retire.pending > 0) && (rx->retire.qp == NULL) &&
        (uct_srq_rx_retire_qp(rx, iface) != UCS_OK)) {
        uct_srq_rx_retire_stop(rx, "no loopback QP");
        return;
    }

    wr.wr_id      = UCT_SRQ_RX_RETIRE_WRID;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    /* never below the watermark: retiring must not look like pressure, nor
     * leave a real message without a buffer */
    while ((rx->retire.pending > 0) &&
           (rx->retire.outstanding < UCT_SRQ_RX_RETIRE_WRS) &&
           (rx->posted > rx->low + rx->retire.outstanding + 1) &&
           (iface->tx_cq_avail > 0)) {
        ret = ibv_post_send(rx->retire.qp, &wr, &bad_wr);
        if (ret != 0) {
            uct_srq_rx_retire_stop(rx, strerror(ret));
            return;
        }
        --rx->retire.pending;
        ++rx->retire.outstanding;
        --iface->tx_cq_avail;
    }
}

void uct_srq_rx_retire_complete(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                const struct ibv_wc *wc)
{
    --rx->retire.outstanding;
    if (wc->status != IBV_WC_SUCCESS) {
        uct_srq_rx_retire_stop(rx, ibv_wc_status_str(wc->status));
        return;
    }
    uct_srq_rx_retire_progress(rx, iface);
}

static void uct_srq_rx_shrink(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    unsigned depth = ucs_max(rx->depth / 2, rx->config.min);

    ucs_debug("srq: receive queue %p shrinks %u -> %u", rx, rx->depth, depth);
    uct_srq_rx_change_depth(rx, iface, depth);
    rx->adapt.low_fills   = 0;
    rx->adapt.last_change = ucs_get_time();
    ++rx->stats.shrinks;
    if (rx->retire.failed) {
        return; /* the surplus goes as traffic consumes it */
    }

    if (uct_srq_rx_pool_can_shrink(&rx->pool, depth + rx->batch)) {
        /* cycle every posted buffer, so the refill moves the queue onto
         * the lower tiers and the upper ones empty */
        rx->retire.pending = rx->posted;
    } else {
        rx->retire.pending = (rx->posted > depth) ? rx->posted - depth : 0;
    }
    uct_srq_rx_retire_progress(rx, iface);
}

/* ---- the periodic look -------------------------------------------------- */

void uct_srq_rx_tick(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();
    uint64_t used, rnr;

    if (ucs_likely(now < rx->adapt.next_tick)) {
        return;
    }

    /* buffers the traffic took per period, since the last look (which may
     * be more than a period ago: progress is not called at a fixed rate) */
    used = (rx->stats.consumed - rx->stats.retired) - rx->adapt.consumed_last;
    used = used * rx->config.interval /
           ucs_max(now - rx->adapt.last_tick, rx->config.interval);
    rx->adapt.consumed_last = rx->stats.consumed - rx->stats.retired;
    rx->adapt.last_tick     = now;
    rx->adapt.next_tick     = now + rx->config.interval;
    uct_srq_rx_read_rnr(rx, iface, &rnr);
    if (rx->srq == NULL) {
        return; /* per-QP mode: fixed depth */
    }

    if (rnr > 0) {
        uct_srq_rx_grow(rx, iface, "RNR NAKs");
    } else if (used >= rx->low) {
        rx->adapt.last_change = now; /* busy: not the time to shrink */
    } else if ((rx->depth > rx->config.min) && (rx->retire.pending == 0) &&
               (now - rx->adapt.last_change >= rx->config.shrink_delay)) {
        uct_srq_rx_shrink(rx, iface);
    }

    if (rx->retire.pending == 0) {
        uct_srq_rx_pool_trim(&rx->pool, rx->depth + rx->batch);
    } else {
        uct_srq_rx_retire_progress(rx, iface);
    }
}
