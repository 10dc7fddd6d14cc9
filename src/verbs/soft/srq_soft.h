/*
 * ucx-srq soft device: soft-specific queries (counters, the name of an
 * instance's shared-memory segment) and test hooks. Everything here fails
 * with EINVAL on a device that is not a soft device.
 */
#ifndef SRQ_SOFT_PUBLIC_H_
#define SRQ_SOFT_PUBLIC_H_

#include "../srq_verbs.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct srq_soft_stats {
    uint64_t  progress_calls;
    uint64_t  qps_inspected;    /* QPs looked at by the progress engine */
    uint64_t  rx_packets;       /* valid packets taken from the inbound queue */
    uint64_t  rx_dropped;       /* invalid packets dropped */
    uint64_t  rx_out_of_seq;    /* valid but unexpected PSN */
    uint64_t  tx_packets;
    uint64_t  tx_ring_full;     /* a peer's queue had no room (retried) */
    uint64_t  rnr_naks_sent;
    uint64_t  rnr_retries;
    uint64_t  peers_dead;
    uint64_t  segs_reclaimed;   /* stale segments of dead owners removed */
    uint64_t  producer_recovered; /* producer lock taken from a dead owner */
} srq_soft_stats_t;

int srq_soft_query_stats(srq_verbs_dev_t *dev, srq_soft_stats_t *stats);

/* Name (for shm_open, starting with '/') of the device's segment */
int srq_soft_segment_name(srq_verbs_dev_t *dev, char *buf, size_t len);

enum {
    /* push as one frame through the producer protocol, content unchecked */
    SRQ_SOFT_INJECT_FRAME    = 0,
    /* write bytes at the tail and publish them, bypassing all framing */
    SRQ_SOFT_INJECT_SCRIBBLE = 1
};

/* Test hook: put @len raw bytes into the inbound queue of the instance at
 * @to, as a (misbehaving) peer would. */
int srq_soft_inject(srq_verbs_dev_t *from, const srq_verbs_port_addr_t *to,
                    const void *buf, size_t len, int mode);

/* Test hook: take the producer lock of the segment named @seg_name (as
 * srq_soft_segment_name gives it) and never release it - then die, to test
 * that producers take over a dead holder's lock. */
int srq_soft_test_hold_lock(const char *seg_name);

/*
 * Test hook: arm a one-shot fault. The next ibv_post_srq_recv or
 * ibv_post_recv on this device whose WR chain has more than @wr_index WRs
 * fails at WR number @wr_index (0-based) as a post-time check would: it
 * returns @err with *bad_wr pointing at that WR, the WRs before it are
 * posted, it and the ones after it are not. That post disarms the fault
 * even when one of its earlier WRs fails on its own; shorter chains leave
 * it armed. Arming again replaces an armed fault. Safe to call while other
 * threads post. EINVAL: not a soft device, or @err is 0.
 */
int srq_soft_test_fail_post(srq_verbs_dev_t *dev, unsigned wr_index, int err);

#ifdef __cplusplus
}
#endif

#endif
