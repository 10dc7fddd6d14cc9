/*
 * ucx-srq: the rc_srq interface: one SRQ, one send CQ and one receive CQ
 * for all the RC connections of the interface.
 */
#ifndef UCT_SRQ_IFACE_H_
#define UCT_SRQ_IFACE_H_

#include "srq_am.h"
#include "srq_md.h"
#include "srq_rx.h"
#include "srq_check.h"
#include "srq_conn.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <string.h>

/* Completions taken from a CQ per poll call */
#define UCT_SRQ_POLL_BATCH      16
/* Progress calls that may skip the send CQ in a row (uct_srq_iface_progress) */
#define UCT_SRQ_TX_POLL_PERIOD  16

/* Largest AM header of am_zcopy (it travels in a send descriptor) */
#define UCT_SRQ_AM_MAX_HDR      128

typedef struct uct_srq_iface_config {
    uct_iface_config_t  super;
    unsigned            tx_queue_len;  /* send queue length of a QP */
    unsigned            tx_moderation; /* one signaled send WR in so many */
    unsigned            tx_cq_len;     /* send CQ length */
    unsigned            tx_max_bufs;   /* send descriptors, at most */
    unsigned            tx_bufs_grow;  /* send descriptors per pool chunk */
    size_t              seg_size;      /* bcopy/receive segment size */
    size_t              max_inline;    /* inline data of a send */
    uct_srq_rx_config_t rx;
    uct_srq_hs_config_t hs;
    unsigned            rnr_timer;     /* min_rnr_timer code */
    unsigned            timeout;       /* local ack timeout code */
    char               *counters_file; /* append counters here at close */
} uct_srq_iface_config_t;

typedef struct uct_srq_iface {
    uct_base_iface_t          super;
    srq_verbs_dev_t          *dev;
    struct ibv_pd            *pd;
    uint8_t                   port_num;
    srq_verbs_port_addr_t     port_addr;
    struct ibv_device_attr    dev_attr;
    struct ibv_port_attr      port_attr;
    struct ibv_comp_channel  *channel;
    struct ibv_cq            *send_cq;
    struct ibv_cq            *recv_cq;
    uct_srq_rx_t              rx;       /* the shared receive queue */
    uct_srq_hs_t              hs;       /* connections and their handshake */
    ucs_mpool_t               tx_mp;    /* registered send descriptors */
    ucs_mpool_t               op_mp;    /* completion records */
    ucs_arbiter_t             arbiter;  /* endpoints with pending requests */
    int                       tx_cq_avail;
    unsigned                  tx_outstanding; /* WRs posted, not completed */
    unsigned                  tx_poll_skips;  /* progress calls since the
                                                 send CQ was last polled */
    unsigned long             progress_calls; /* read by the async thread:
                                                 is the owner progressing? */
    struct {
        uint64_t              retired;  /* send WRs completed or dropped:
                                           with tx_outstanding, the WRs
                                           posted (nothing counted per post) */
        uint64_t              completions; /* send CQ entries of QP WRs */
        uint64_t              atomics;  /* IB atomic WRs posted */
        uint64_t              atomic_retries; /* compare-and-swaps that
                                           found another value */
    } tx_stats;
    char                     *counters_file;
    struct {
        unsigned              tx_queue_len;
        unsigned              tx_moderation;
        int                   tx_cq_len;
        size_t                seg_size;
        size_t                max_inline;
        unsigned              max_send_sge;
        unsigned              rnr_timer;
        unsigned              timeout;
        int                   atomics;  /* the device executes IB atomics */
    } config;
} uct_srq_iface_t;

/* Address of an interface, next to its device address */
typedef struct uct_srq_iface_addr {
    uint32_t  ud_qpn;   /* handshake QP, little endian */
} UCS_S_PACKED uct_srq_iface_addr_t;

extern ucs_config_field_t uct_srq_iface_config_table[];

/* A send WR was posted on @conn, or queued there until the connection is
 * up: it holds a send slot of the connection and of the send CQ until a
 * completion retires it (or, queued, until it is posted or dropped) */
static UCS_F_ALWAYS_INLINE void
uct_srq_iface_tx_count(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    ++conn->sn_posted;
    --conn->tx_avail;
    --iface->tx_cq_avail;
    ++iface->tx_outstanding;
}

/*
 * Is the WR about to be posted on @conn signaled? When asked (a completion
 * or a result waits on it), one in TX_CQ_MODERATION, and every one while
 * the send CQ's slots run low. So a completion always comes to give slots
 * back: a connection out of slots has TX_QUEUE_LEN >= 4 * moderation WRs
 * in flight, a signaled one among them; the WR that takes the send CQ's
 * last slot is signaled (many connections may each hold a few unsignaled
 * ones). A tail left unsignaled is signaled by a flush, or when the send
 * descriptors run out.
 */
static UCS_F_ALWAYS_INLINE int
uct_srq_iface_tx_signal(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                        int send_flags)
{
    if ((send_flags & IBV_SEND_SIGNALED) ||
        (++conn->tx_unsignaled >= iface->config.tx_moderation) ||
        (iface->tx_cq_avail <= (int)iface->config.tx_moderation)) {
        conn->tx_unsignaled = 0;
        return IBV_SEND_SIGNALED;
    }
    return 0;
}

/* Post @wr on @conn (wr_id: the connection and the WR's number), or keep
 * it there until the connection is up; @owner: the endpoint, if any */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_iface_post(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                   struct ibv_send_wr *wr, void *owner)
{
    struct ibv_send_wr *bad_wr;
    ucs_status_t status;
    int ret;

    wr->wr_id       = uct_srq_conn_wr_id(conn, conn->sn_posted + 1);
    wr->next        = NULL;
    wr->send_flags |= conn->send_flags;
    wr->send_flags |= uct_srq_iface_tx_signal(iface, conn, wr->send_flags);
    if (ucs_likely(conn->state == UCT_SRQ_CONN_CONNECTED)) {
        ret = ibv_post_send(conn->qp, wr, &bad_wr);
        if (ucs_unlikely(ret != 0)) {
            ucs_error("srq: ibv_post_send on QP 0x%x failed: %s",
                      conn->qp->qp_num, strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
    } else {
        status = uct_srq_conn_queue_wr(conn, wr, owner);
        if (status != UCS_OK) {
            return status;
        }
    }

    conn->send_flags = 0;
    uct_srq_iface_tx_count(iface, conn);
    return UCS_OK;
}

/* The opposite, for a queued WR that was never posted */
static UCS_F_ALWAYS_INLINE void
uct_srq_iface_tx_uncount(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    ++conn->sn_done;
    ++conn->tx_avail;
    ++iface->tx_cq_avail;
    --iface->tx_outstanding;
    ++iface->tx_stats.retired;
}


#endif
