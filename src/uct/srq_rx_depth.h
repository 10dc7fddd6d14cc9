/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the SRQ's adaptive depth (srq_rx_depth.c): grow under pressure,
 * shrink when idle by retiring posted buffers through a QP connected to
 * the interface itself. The receive side (srq_rx.c) calls it around its
 * refills; it changes the receive side's depth and watermark.
 */
#ifndef UCT_SRQ_RX_DEPTH_H_
#define UCT_SRQ_RX_DEPTH_H_

#include "srq_types.h"

/* wr_id of the sends that retire SRQ buffers (never a connection) */
#define UCT_SRQ_RX_RETIRE_WRID  ((uint64_t)1)

/* The control law's constants (srq_rx_depth.c): the target depth is
 * MARGIN x the drawdown; a receiver whose polls were at least SATURATED %
 * full (of at least SATURATED_MIN_POLLS in the period) is the bottleneck,
 * and does not grow its queue when it runs dry */
#define UCT_SRQ_RX_MARGIN               2
#define UCT_SRQ_RX_SATURATED            90
#define UCT_SRQ_RX_SATURATED_MIN_POLLS  16

/* Adapt the depth to what the last period saw (srq_rx_depth.c) */
void uct_srq_rx_tick(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* A send completion of the retire QP */
void uct_srq_rx_retire_complete(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                                const struct ibv_wc *wc);

/* Set the depth and the watermark that goes with it */
void uct_srq_rx_set_depth(uct_srq_rx_t *rx, unsigned depth);

void uct_srq_rx_adapt_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface);
void uct_srq_rx_adapt_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Before a refill of the SRQ: grow on limit events and sustained low fill */
void uct_srq_rx_adapt_pressure(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* After a refill of the SRQ: re-arm the limit, adapt when it is time */
void uct_srq_rx_adapt_refilled(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* A queue could not be refilled: report it if the pool is exhausted */
void uct_srq_rx_starved(uct_srq_rx_t *rx);

#endif
