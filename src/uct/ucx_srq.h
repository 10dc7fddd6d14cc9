/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq public API: counters of an rc_srq interface.
 *
 * The plugin is loaded with LD_PRELOAD or, on UCX 1.22+, by UCX's plugin
 * scan (UCX_PLUGIN_PATH; RTLD_LOCAL, so RTLD_DEFAULT does not see it). A
 * program finds the function either way through the plugin's soname:
 * dlsym(dlopen("libuct_srq.so", RTLD_LAZY | RTLD_NOLOAD),
 * "uct_srq_iface_query_counters"); or it links against libuct_srq.so.
 */
#ifndef UCX_SRQ_H_
#define UCX_SRQ_H_

#include <uct/api/uct.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uct_srq_iface_counters {
    /* the shared receive queue */
    uint64_t  rx_posted;        /* receive buffers posted, in total */
    uint64_t  rx_consumed;      /* receive completions, in total */
    uint64_t  rx_refills;       /* ibv_post_srq_recv calls (one chain each) */
    uint64_t  rx_dropped;       /* malformed messages dropped */
    uint64_t  rx_bytes;         /* bytes received into the SRQ's buffers */
    uint64_t  rx_queue_now;     /* buffers posted now */
    uint64_t  rx_queue_target;  /* buffers the interface keeps posted now
                                   (its depth; all QPs' in per-QP mode) */
    uint64_t  rx_bytes_held;    /* registered receive memory, posted or not */
    uint64_t  reserved0;        /* was rx_ring (the ring post is gone): 0 */
    /* connections */
    uint64_t  conns;            /* live connections (one per peer interface) */
    uint64_t  conn_sent;        /* handshake datagrams sent */
    uint64_t  conn_retries;     /* of them, retransmissions */
    uint64_t  conn_dropped;     /* malformed/unexpected datagrams dropped */
    /* sends */
    uint64_t  tx_wrs;           /* send WRs posted (sends, RDMA writes/reads;
                                   a flush's no-ops too) */
    uint64_t  reserved1;        /* was tx_bytes (it cost a loop over the
                                   gather list per post): 0 */
    uint64_t  tx_outstanding;   /* WRs posted and not completed */
    /* receive-queue management (appended: older fields keep their place) */
    uint64_t  rx_srq;           /* 1: one shared queue; 0: per-QP queues */
    uint64_t  rx_queue_peak;    /* most buffers posted at once */
    uint64_t  rx_queue_min;     /* depth floor (per QP in per-QP mode) */
    uint64_t  rx_queue_max;     /* depth ceiling */
    uint64_t  rx_limit_events;  /* IBV_EVENT_SRQ_LIMIT_REACHED seen */
    uint64_t  rx_rnr;           /* RNR NAKs the device sent (queue was dry) */
    uint64_t  rx_grows;         /* times the depth doubled */
    uint64_t  rx_shrinks;       /* times it halved */
    uint64_t  rx_retired;       /* posted buffers retired by self-sends */
    uint64_t  rx_held;          /* descriptors kept by AM handlers now */
    uint64_t  rx_starved;       /* times the pool could not refill the queue */
    uint64_t  conns_failed;     /* failed connections not yet freed: their
                                   endpoints are still there, or their QP
                                   still has WRs to flush */
    uint64_t  rx_descs_in_use;  /* receive descriptors taken from the pool
                                   (the pool's own count): between progress
                                   calls, rx_queue_now + rx_held */
    uint64_t  tx_atomics;       /* IB atomic WRs posted (fetch-add and
                                   compare-swap; also counted in tx_wrs) */
    uint64_t  tx_atomic_retries;/* of them, compare-swaps of an emulated
                                   atomic that found another value and went
                                   round again */
    uint64_t  rx_queue_demand;  /* the depth the last adaptation period's
                                   demand called for (srq_rx_depth.c) */
    uint64_t  rx_saturated;     /* pressure (the SRQ ran dry, RNR, a limit
                                   event) met while the receiver was
                                   saturated, which did not grow the queue:
                                   RNR is then the flow control */
    uint64_t  tx_completions;   /* send completions of the connections' WRs:
                                   each retires every WR of its connection
                                   up to its own (UCX_RC_SRQ_TX_CQ_MODERATION) */
    uint64_t  rx_periods;       /* adaptation periods ended: the depth's
                                   clock, which runs on progress calls (at
                                   refills, or every 256 idle polls) once
                                   RX_ADAPT_INTERVAL passed */
    /* tag-matching offload (UCX_RC_SRQ_TM_ENABLE; all 0 without it) */
    uint64_t  tm_enabled;       /* 1: the device matches tags */
    uint64_t  tm_matched;       /* tagged receives the device matched and
                                   completed (eager and rendezvous) */
    uint64_t  tm_unexpected;    /* tagged messages no posted tag matched:
                                   handed to UCP in an ordinary buffer */
    uint64_t  tm_rndv_read;     /* of tm_matched, rendezvous whose data the
                                   device read from the sender itself */
    uint64_t  tm_sw_rndv;       /* software rendezvous requests received */
    uint64_t  tm_fin;           /* FINs of our rendezvous sends */
    uint64_t  tm_list_ops;      /* tags added and removed, syncs */
} uct_srq_iface_counters_t;

/*
 * Fill @counters for @iface. UCS_ERR_INVALID_PARAM when @iface is not an
 * rc_srq interface.
 */
ucs_status_t uct_srq_iface_query_counters(uct_iface_h iface,
                                          uct_srq_iface_counters_t *counters);

#ifdef __cplusplus
}
#endif

#endif
