/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: receive-queue management: the interface's one shared receive
 * queue (or, as the baseline, one receive queue per QP), its descriptors,
 * posting and refill against thresholds, adaptive depth, and delivery of
 * received active messages.
 */
#ifndef UCT_SRQ_RX_H_
#define UCT_SRQ_RX_H_

#include "srq_types.h"
#include "srq_rx_depth.h"

#include <verbs/srq_verbs.h>

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/time/time.h>

/* Per-QP mode: receive CQ entries, so at most this / RX_QP_LEN QPs */
#define UCT_SRQ_RX_QP_CQ_LEN    65536

extern ucs_config_field_t uct_srq_rx_config_table[];

/* Shortest RX_ADAPT_INTERVAL, in seconds: a period is at least one look of
 * the progress loop, and a clock read per progress call is not free */
#define UCT_SRQ_RX_MIN_INTERVAL 1e-5

/* Check the receive configuration against the device, before anything is
 * created: UCS_ERR_INVALID_PARAM with an error naming the variable */
ucs_status_t uct_srq_rx_check_config(const uct_srq_rx_config_t *config,
                                     const struct ibv_device_attr *attr);

/* The receive side of @iface; its descriptors leave the user's rx_headroom
 * before the payload and align it as @params ask (am_alignment,
 * am_align_offset; by default to a cache line) */
ucs_status_t uct_srq_rx_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                             const uct_srq_rx_config_t *config,
                             size_t seg_size,
                             const uct_iface_params_t *params);
void uct_srq_rx_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Receive CQ entries the configuration needs, besides the handshake's */
unsigned uct_srq_rx_cq_len(const uct_srq_rx_config_t *config);

/* Post buffers where queues are below their thresholds */
void uct_srq_rx_refill(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* One receive completion of a connection's QP: an active message goes to
 * its handler (the descriptor back to the pool, or kept by the handler);
 * anything else (a flushed receive, a retire send, garbage) gives its
 * descriptor back */
void uct_srq_rx_deliver(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                         const struct ibv_wc *wc);

/* Where a descriptor's payload starts (its receive buffer; with tag
 * matching, the TMH is just before it) */
static inline void *uct_srq_rx_desc_buffer(const uct_srq_rx_t *rx,
                                           uct_srq_rx_desc_t *desc)
{
    return UCS_PTR_BYTE_OFFSET(desc, rx->data_offset);
}

/* The descriptor of a receive completion, no longer posted */
uct_srq_rx_desc_t *uct_srq_rx_take(uct_srq_rx_t *rx, const struct ibv_wc *wc);

/* A handler saw @payload of @desc and said @status: UCS_INPROGRESS keeps
 * the descriptor (released with uct_iface_release_desc), anything else
 * gives it back to the pool */
void uct_srq_rx_done(uct_srq_rx_t *rx, uct_srq_rx_desc_t *desc,
                     void *payload, ucs_status_t status);

/* @n completions were polled from the receive CQ (of at most @batch):
 * count a full poll (the receiver saturated), then refill */
static inline void uct_srq_rx_polled(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                     int n, int batch)
{
    ++rx->adapt.polls;
    rx->adapt.full_polls += (n == batch);
    uct_srq_rx_refill(rx, iface);
}

/* The receive CQ had nothing: refill a queue the pool could not fill (its
 * descriptors were held), and adapt the depth now and then */
static inline void uct_srq_rx_refill_adapt(uct_srq_rx_t *rx,
                                           uct_srq_iface_t *iface)
{
    if (ucs_unlikely(((rx->srq != NULL) && (rx->posted < rx->low)) ||
                     !ucs_list_is_empty(&rx->refill_rqs))) {
        uct_srq_rx_refill(rx, iface);
    }
    ++rx->adapt.polls;
    if (ucs_unlikely(++rx->adapt.idle_polls >= 256)) {
        rx->adapt.idle_polls = 0;
        uct_srq_rx_tick(rx, iface);
    }
}

/* Per-QP mode: give a new QP its receive queue, filled; cleanup is a no-op
 * for a queue never set up (SRQ mode) */
ucs_status_t uct_srq_rx_rq_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                uct_srq_rx_rq_t *rq, struct ibv_qp *qp);
void uct_srq_rx_rq_cleanup(uct_srq_rx_t *rx, uct_srq_rx_rq_t *rq);

#endif
