/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the depth of the shared receive queue, from demand.
 *
 * The SRQ is created at its ceiling (RX_QUEUE_MAX) and kept filled to a
 * depth between RX_QUEUE_MIN and that ceiling. The control law:
 *
 *  Measured, per adaptation period (RX_ADAPT_INTERVAL):
 *   - the drawdown: at each refill, the buffers consumed since the last
 *     refill filled it (a depth grown since is no consumption); the period
 *     keeps the largest, D;
 *   - this SRQ's RNR NAKs (where the device counts them per SRQ), SRQ
 *     limit events, and refills that found the queue empty;
 *   - how saturated the receiver is: the share of receive-CQ polls that
 *     found completions and came back full (UCT_SRQ_POLL_BATCH).
 *
 *  Target = clamp(round_up(M x D, B), RX_QUEUE_MIN, RX_QUEUE_MAX), with
 *  the margin M = 2 (a burst twice the largest seen still finds buffers)
 *  and B = RX_BATCH (a refill's granularity).
 *
 *  Then:
 *   - the target above the depth: grow to it at once;
 *   - starvation (an RNR NAK, or a refill finding the queue empty: the
 *     drawdown is then censored at the depth, the demand unseen): double,
 *     at once (RNR NAKs read after a growth are taken as the shorter
 *     queue's, answered by that growth) - unless the receiver is
 *     saturated (at least UCT_SRQ_RX_SATURATED of its polls full): then the queue runs dry
 *     because the receiver cannot take the messages any faster, a deeper
 *     queue only holds a longer backlog (and 32 MB of buffers do not stay
 *     in cache), and RNR is the flow
 *     control that makes the senders wait;
 *   - an SRQ limit event (the device saw fewer than the low watermark
 *     posted): an early warning, and a drawdown the refills may have
 *     missed - beyond (posted - watermark) when it was armed - that goes
 *     into D as any other;
 *   - the target at or below half the depth for RX_SHRINK_DELAY: shrink in
 *     one step to the largest target seen meanwhile (and, if the targets
 *     after that largest one were at most half the new depth, once more
 *     at the next period: they were a window of their own). Growing is
 *     immediate and shrinking slow and only below half: that is the
 *     hysteresis.
 *
 * Verbs cannot take back a posted WR, so a shrink retires the surplus: the
 * interface sends itself empty messages over a QP connected to itself,
 * each consuming one buffer of the SRQ like any message. Nothing posted is
 * dropped and nothing is reordered (a connection's messages still take
 * buffers in order). Retiring the whole queue once moves it onto the
 * lowest tiers of the pool, so the upper tiers empty and their memory is
 * unregistered and freed.
 */
#include "srq_rx_depth.h"
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

/* RNR NAKs the device sent for this interface's SRQ since the last look:
 * this interface's own starvation, never another's (the device counts
 * them per SRQ, or not at all: then the limit event and an SRQ found empty
 * at refill are the signals). Only those that may have come at today's
 * depth count: after a growth since the last look they may all be the
 * shorter queue's, which the growth answered already - doubling the new
 * depth for them would overshoot; if the queue still runs dry, the next
 * look sees more. */
static uint64_t uct_srq_rx_read_rnr(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uint64_t count, delta;
    int grown;

    if (!rx->adapt.rnr_ok ||
        (srq_verbs_query_srq_rnr(iface->dev, rx->srq, &count) != 0)) {
        return 0;
    }
    delta               = count - rx->adapt.rnr_last;
    grown               = rx->depth > rx->adapt.rnr_depth;
    rx->adapt.rnr_last  = count;
    rx->adapt.rnr_depth = rx->depth;
    rx->stats.rnr      += delta;
    return grown ? 0 : delta;
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

    rx->adapt.rnr_ok      = (rx->srq != NULL) &&
                            (srq_verbs_query_srq_rnr(iface->dev, rx->srq,
                                                     &count) == 0);
    rx->adapt.rnr_last    = rx->adapt.rnr_ok ? count : 0;
    rx->adapt.rnr_depth   = rx->depth;
    rx->adapt.last_tick   = ucs_get_time();
    rx->adapt.next_tick   = rx->adapt.last_tick + rx->config.interval;
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

/* Round @need up to a whole batch, within the floor and the ceiling */
static unsigned uct_srq_rx_clamp(const uct_srq_rx_t *rx, uint64_t need)
{
    need = ucs_align_up(need, rx->batch);
    return ucs_max(rx->config.min, ucs_min(need, rx->config.max));
}

/* The depth that covers a drawdown of @drawdown buffers */
static unsigned uct_srq_rx_target(const uct_srq_rx_t *rx, unsigned drawdown)
{
    return uct_srq_rx_clamp(rx, UCT_SRQ_RX_MARGIN * (uint64_t)drawdown);
}

static void uct_srq_rx_grow(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                            uint64_t depth, const char *why)
{
    depth = uct_srq_rx_clamp(rx, depth);
    if (depth <= rx->depth) {
        return;
    }
    rx->adapt.shrink_since = 0; /* needed after all */
    ucs_debug("srq: receive queue %p grows %u -> %u (%s)", rx, rx->depth,
              (unsigned)depth, why);
    uct_srq_rx_change_depth(rx, iface, depth);
    rx->retire.pending = 0;
    ++rx->stats.grows;
}

/* Is the receiver the bottleneck: almost every poll of the receive CQ
 * (the empty ones too: a burst in an otherwise idle period is no
 * saturation) came back full, in the period so far? Until the period has
 * seen enough polls to tell, the last period's verdict. */
static int uct_srq_rx_saturated(const uct_srq_rx_t *rx)
{
    if (rx->adapt.polls < UCT_SRQ_RX_SATURATED_MIN_POLLS) {
        return rx->adapt.was_saturated;
    }
    return rx->adapt.full_polls * 100 >= rx->adapt.polls * UCT_SRQ_RX_SATURATED;
}

/* The queue ran dry at the depth @depth: the demand is unseen (censored
 * at that depth); no growth if the depth is twice that already */
static void uct_srq_rx_relieve(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                               unsigned depth)
{
    uct_srq_rx_grow(rx, iface, 2ull * depth, "ran dry");
}

/*
 * Starvation: the queue ran dry, the drawdown is censored at the depth. A
 * receiver with time to spare doubles at once, once a period (the next
 * growth waits for the period's verdict: its end); one with none is the
 * bottleneck, and a deeper queue would only hold a longer backlog: it does
 * not grow.
 */
static void uct_srq_rx_pressed(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    if (uct_srq_rx_saturated(rx)) {
        ++rx->stats.starved_saturated; /* flow control, not a short queue */
    } else if (!rx->adapt.relieved) {
        rx->adapt.relieved = 1;
        uct_srq_rx_relieve(rx, iface, rx->depth);
    } else {
        /* for the period's end: doubles the depth it happened at, not the
         * one that may have grown by then */
        rx->adapt.pressure = ucs_max(rx->adapt.pressure, rx->depth);
    }
}

/* A drawdown of @drawdown buffers was seen: the period keeps the largest,
 * and the depth grows at once to cover it */
static void uct_srq_rx_demand(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                              unsigned drawdown, const char *why)
{
    rx->adapt.drawdown = ucs_max(rx->adapt.drawdown, drawdown);
    uct_srq_rx_grow(rx, iface, uct_srq_rx_target(rx, drawdown), why);
}

void uct_srq_rx_adapt_pressure(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    uint32_t events = rx->adapt.limit_events;
    unsigned drawdown;

    if (rx->stats.posted == 0) {
        return; /* the first fill: nothing was consumed */
    }
    /* RNR NAKs belong to the period they happened in: read at each refill
     * (a load, where the device counts them per SRQ) */
    if (uct_srq_rx_read_rnr(rx, iface) > 0) {
        uct_srq_rx_pressed(rx, iface);
    }
    /* the drawdown is the traffic's, not the retiring's (which consumes
     * buffers on purpose) */
    if ((rx->retire.pending == 0) && (rx->retire.outstanding == 0)) {
        drawdown = rx->adapt.filled - ucs_min(rx->posted, rx->adapt.filled);
        uct_srq_rx_demand(rx, iface, drawdown, "demand");
    }
    if (events != rx->adapt.limit_seen) {
        rx->stats.limit_events += (uint32_t)(events - rx->adapt.limit_seen);
        rx->adapt.limit_seen    = events;
        rx->adapt.limit_armed   = 0; /* one shot: re-armed after the refill */
        /* the early warning is a measurement the refills may have missed
         * (the queue dipped between two of them): the device saw fewer
         * than the watermark posted, a drawdown beyond what was posted
         * when the limit was armed, less the watermark - not a share of
         * today's depth, which may have grown since the event was raised */
        uct_srq_rx_demand(rx, iface, rx->adapt.limit_drawdown,
                          "SRQ limit event");
    } else if ((rx->posted == 0) && (rx->depth > rx->batch)) {
        /* ran dry: whatever arrives now is refused (a queue of one batch
         * is empty at every refill by the refill rule itself) */
        uct_srq_rx_pressed(rx, iface);
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
        rx->adapt.limit_armed    = 1;
        rx->adapt.limit_drawdown = rx->posted - rx->low + 1;
    } else {
        ucs_debug("srq: %s cannot arm the SRQ limit: %s",
                  srq_verbs_dev_name(iface->dev), strerror(ret));
        rx->adapt.limit_armed = -1; /* never again */
    }
}

void uct_srq_rx_adapt_refilled(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    rx->adapt.filled = rx->posted;
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

static void uct_srq_rx_shrink(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                              unsigned depth)
{
    ucs_debug("srq: receive queue %p shrinks %u -> %u", rx, rx->depth, depth);
    uct_srq_rx_change_depth(rx, iface, depth);
    rx->adapt.shrink_since = 0;
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

/* A shrink window starts at @since with the target @target */
static void uct_srq_rx_shrink_window(uct_srq_rx_t *rx, ucs_time_t since,
                                     unsigned target, ucs_time_t now)
{
    rx->adapt.shrink_since = since;
    rx->adapt.shrink_to    = target;
    rx->adapt.shrink_to_at = now;
    rx->adapt.shrink_after = 0;
}

/* Would @target let the depth come down: at most half of it, or the
 * floor (no demand: a depth below twice the floor still goes back) */
static int uct_srq_rx_shrinkable(const uct_srq_rx_t *rx, unsigned target)
{
    return (target < rx->depth) &&
           ((target * 2 <= rx->depth) || (target <= rx->config.min));
}

/*
 * A period's target at or below half the depth (or at the floor), for
 * RX_SHRINK_DELAY in a row: shrink to the largest target of that time.
 * The window also keeps the largest target seen after that largest one:
 * the tail of a flood followed by quiet shrinks to the tail's need first,
 * and the quiet that followed the tail is then already a window of its
 * own - the floor comes one RX_SHRINK_DELAY after the quiet began, not
 * two.
 */
static void uct_srq_rx_consider_shrink(uct_srq_rx_t *rx,
                                       uct_srq_iface_t *iface,
                                       unsigned target, ucs_time_t now)
{
    ucs_time_t quiet_since;
    unsigned after;

    if (!uct_srq_rx_shrinkable(rx, target)) {
        rx->adapt.shrink_since = 0;
        return;
    }
    if (rx->retire.pending > 0) {
        return; /* the last shrink's surplus still goes: the window runs */
    }
    if (rx->adapt.shrink_since == 0) {
        uct_srq_rx_shrink_window(rx, now, target, now);
        return;
    }
    if (target >= rx->adapt.shrink_to) {
        rx->adapt.shrink_to    = target;
        rx->adapt.shrink_to_at = now;
        rx->adapt.shrink_after = 0;
    } else {
        rx->adapt.shrink_after = ucs_max(rx->adapt.shrink_after, target);
    }
    if (now - rx->adapt.shrink_since < rx->config.shrink_delay) {
        return;
    }
    quiet_since = rx->adapt.shrink_to_at;
    after       = rx->adapt.shrink_after;
    uct_srq_rx_shrink(rx, iface, rx->adapt.shrink_to);
    if ((quiet_since < now) && (after > 0) &&
        uct_srq_rx_shrinkable(rx, after)) {
        /* since the largest, all at most @after: a window already */
        uct_srq_rx_shrink_window(rx, quiet_since, after, now);
    }
}

/* ---- the periodic look -------------------------------------------------- */

void uct_srq_rx_tick(uct_srq_rx_t *rx, uct_srq_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();
    unsigned target;
    uint64_t rnr;

    if (ucs_likely(now < rx->adapt.next_tick)) {
        return;
    }

    rx->adapt.last_tick = now;
    rx->adapt.next_tick = now + rx->config.interval;
    ++rx->stats.periods;
    rnr                 = uct_srq_rx_read_rnr(rx, iface);
    if (rx->srq != NULL) {
        target = uct_srq_rx_target(rx, rx->adapt.drawdown);
        rx->stats.target = target;
        if (rnr > 0) {
            rx->adapt.relieved = 0; /* the period's end: its verdict */
            uct_srq_rx_pressed(rx, iface);
        } else if (rx->adapt.pressure) {
            /* ran dry again after this period's growth: what the period
             * says of it */
            if (uct_srq_rx_saturated(rx)) {
                ++rx->stats.starved_saturated;
            } else {
                uct_srq_rx_relieve(rx, iface, rx->adapt.pressure);
            }
        } else if (target > rx->depth) {
            uct_srq_rx_grow(rx, iface, target, "demand");
        } else {
            uct_srq_rx_consider_shrink(rx, iface, target, now);
        }
    } /* else per-QP mode: a fixed depth */

    /* a new period */
    rx->adapt.was_saturated = uct_srq_rx_saturated(rx);
    rx->adapt.relieved   = 0;
    rx->adapt.pressure   = 0;
    rx->adapt.drawdown   = 0;
    rx->adapt.polls      = 0;
    rx->adapt.full_polls = 0;
    if (rx->retire.pending == 0) {
        uct_srq_rx_pool_trim(&rx->pool, rx->depth + rx->batch);
    } else {
        uct_srq_rx_retire_progress(rx, iface);
    }
}
