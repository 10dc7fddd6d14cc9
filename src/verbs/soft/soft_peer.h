/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: peers, the device instances (possibly ourselves)
 * we send packets to, and their liveness.
 */
#ifndef SRQ_SOFT_PEER_H_
#define SRQ_SOFT_PEER_H_

#include "soft_list.h"
#include "soft_shm.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_qp   srq_soft_qp_t;
typedef struct srq_soft_peer srq_soft_peer_t;

struct srq_soft_peer {
    srq_soft_list_t  link;         /* dev->peers */
    srq_soft_list_t  busy_link;    /* dev->busy_peers */
    srq_soft_list_t  dying_link;   /* dev->dying_peers */
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

srq_soft_peer_t *srq_soft_peer_get(srq_soft_dev_t *dev,
                                   const uint8_t *instance);
void srq_soft_peer_put(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
void srq_soft_peers_destroy(srq_soft_dev_t *dev);
/* Still alive? false for a peer found dead, now or before: the caller
 * fails its QPs (srq_soft_liveness_check does both) */
bool srq_soft_peer_alive(const srq_soft_peer_t *peer);
/* Death, in two steps around failing its QPs: mark it (false: it was
 * already dead, or is ourselves), then let it go (unmapped with its last
 * reference) */
bool srq_soft_peer_mark_dead(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
void srq_soft_peer_release_dead(srq_soft_dev_t *dev, srq_soft_peer_t *peer);
/* @qp has (@busy) or no longer has outstanding send work toward its peer:
 * only peers with such work are checked for liveness */
void srq_soft_peer_busy(srq_soft_dev_t *dev, srq_soft_qp_t *qp, bool busy);

#endif
