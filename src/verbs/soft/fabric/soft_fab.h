/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the fabric of one device instance, what it holds of
 * the host's shared memory: its identity, its own tables and queue
 * (soft_shm.c), its wake pipe (soft_pipe.c), the consumer's place in its
 * queue (soft_ring.c), and the peers it maps (soft_peer.c), itself among
 * them. The device (soft_dev.h, a layer above) embeds one and hands it to
 * the fabric's functions, which know nothing of the device.
 */
#ifndef SRQ_SOFT_FAB_H_
#define SRQ_SOFT_FAB_H_

#include "soft_list.h"
#include "soft_seg.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Progress calls between clock reads (soft_progress.c), and between looks
 * of an idle consumer at its queue's tail (soft_ring.c) */
#define SRQ_SOFT_TICK_CALLS    128

typedef struct srq_soft_peer  srq_soft_peer_t;
typedef struct srq_soft_fab   srq_soft_fab_t;
typedef struct srq_soft_stats srq_soft_stats_t;

/* Another instance we send packets to (soft_peer.h), or ourselves */
struct srq_soft_peer {
    srq_soft_list_t  link;         /* fab->peers */
    srq_soft_list_t  busy_link;    /* fab->busy_peers */
    srq_soft_list_t  dying_link;   /* fab->dying_peers */
    srq_soft_list_t  qps;          /* RC QPs connected to it */
    uint8_t          instance[SRQ_SOFT_INST_LEN];
    srq_soft_seg_t   seg;
    bool             is_self;
    bool             dead;
    bool             nudged;       /* its pipe poked since nudge_gen */
    pid_t            pid;
    uint64_t         start_time;
    int              refcnt;       /* RC QPs + AHs */
    int              pipe_fd;      /* write end of its wake pipe, or -1 */
    unsigned         busy_qps;     /* QPs with outstanding send work */
    uint32_t         nudge_gen;    /* its progress_gen at our last tick (low
                                      bits: it is only compared; both
                                      fields sit in padding, the struct's
                                      layout is the fast path's) */
    uint64_t         next_check_ns; /* liveness check due; 0: busy since
                                       the last tick, timed from the next */
    uint64_t         cached_head;  /* its consumer's head, as last read */
    uint64_t         dead_pos;     /* dead: our queue's tail when found so */
};

struct srq_soft_fab {
    uint8_t             instance[SRQ_SOFT_INST_LEN]; /* unique id */
    pid_t               pid;
    uint64_t            start_time;
    uint64_t            lock_id;      /* what we write in a queue's lock */

    /* own tables and queue (soft_seg.h): memfds peers open through
     * /proc/<pid>/fd */
    int                 tab_fd;
    int                 queue_fd;
    srq_soft_seg_t      seg;
    uint64_t            rx_head;      /* consumer position (private copy) */
    unsigned            rx_idle_polls;
    srq_soft_peer_t     self;         /* loopback peer: our own segment */

    /* wakeups: a pipe peers poke when we asked (seg.hdr->wake_req) */
    int                 pipe_fd;      /* read end */
    int                 pipe_wfd;     /* write end: the read end never sees
                                         EOF */

    srq_soft_list_t     peers;
    srq_soft_list_t     busy_peers;   /* peers we have outstanding work to */
    srq_soft_list_t     dying_peers;  /* dead, with packets still queued */

    srq_soft_stats_t   *stats;        /* the device's, which the fabric's
                                         counters are part of */
};

#endif
