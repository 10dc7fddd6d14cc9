/*
 * ucx-srq: receive-queue management: the interface's one shared receive
 * queue, its descriptors, posting and refill, and delivery of received
 * active messages.
 */
#ifndef UCT_SRQ_RX_H_
#define UCT_SRQ_RX_H_

#include "srq_mem.h"

#include <verbs/srq_verbs_ring.h>

#include <uct/api/uct.h>
#include <ucs/datastruct/mpool.h>

typedef struct uct_srq_iface uct_srq_iface_t;

/* How receive WRs reach the SRQ (UCX_RC_SRQ_RX_POST) */
typedef enum uct_srq_rx_post_mode {
    UCT_SRQ_RX_POST_VERBS,  /* ibv_post_srq_recv */
    UCT_SRQ_RX_POST_RING,   /* WQEs written into the ring, one doorbell */
    UCT_SRQ_RX_POST_AUTO,   /* the ring where the device shares it */
    UCT_SRQ_RX_POST_LAST
} uct_srq_rx_post_mode_t;

typedef struct uct_srq_rx_config {
    unsigned  post_mode;   /* uct_srq_rx_post_mode_t */
    unsigned  queue_len;   /* receive buffers kept posted */
    unsigned  batch;       /* buffers posted per ibv_post_srq_recv */
    unsigned  max_bufs;    /* receive descriptors, at most */
} uct_srq_rx_config_t;

typedef struct uct_srq_rx {
    struct ibv_srq   *srq;
    int               use_ring;   /* post through the ring, not the verb */
    srq_verbs_srq_ring_t ring;
    ucs_mpool_t       mp;         /* registered receive descriptors */
    unsigned          posted;     /* buffers the SRQ owns now */
    unsigned          depth;      /* buffers to keep posted */
    unsigned          batch;
    size_t            seg_size;   /* bytes one buffer receives */
    size_t            data_offset;/* descriptor start -> receive buffer */
    unsigned          rx_headroom;/* the user's, before the payload */
    uct_recv_desc_t   release;    /* returns kept descriptors */
    struct {
        uint64_t      posted;     /* buffers posted in total */
        uint64_t      consumed;   /* receive completions */
        uint64_t      refills;    /* post calls (or ring doorbells) */
        uint64_t      dropped;    /* malformed messages dropped */
        uint64_t      bytes;      /* received into the buffers */
    } stats;
} uct_srq_rx_t;

extern ucs_config_field_t uct_srq_rx_config_table[];

ucs_status_t uct_srq_rx_init(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                             const uct_srq_rx_config_t *config,
                             size_t seg_size, unsigned rx_headroom);
void uct_srq_rx_cleanup(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Post buffers until the SRQ holds its depth again */
void uct_srq_rx_refill(uct_srq_rx_t *rx, uct_srq_iface_t *iface);

/* Handle one receive completion of the SRQ */
void uct_srq_rx_complete(uct_srq_rx_t *rx, uct_srq_iface_t *iface,
                         const struct ibv_wc *wc);

#endif
