/*
 * ucx-srq: the rc_srq interface: one SRQ, one send CQ and one receive CQ
 * for all the RC connections of the interface.
 */
#ifndef UCT_SRQ_IFACE_H_
#define UCT_SRQ_IFACE_H_

#include "srq_md.h"
#include "srq_rx.h"
#include "srq_check.h"
#include "srq_conn.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>

/* Completions taken from a CQ per poll call */
#define UCT_SRQ_POLL_BATCH      16
/* Progress calls that may skip the send CQ in a row (uct_srq_iface_progress) */
#define UCT_SRQ_TX_POLL_PERIOD  16

/* AM id byte of internal messages (never handed to a user handler) */
#define UCT_SRQ_AM_ID_KEEPALIVE 0xff

typedef struct uct_srq_iface_config {
    uct_iface_config_t  super;
    unsigned            tx_queue_len;  /* send queue length of a QP */
    unsigned            tx_cq_len;     /* send CQ length */
    unsigned            tx_max_bufs;   /* send descriptors, at most */
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
    struct {
        uint64_t              wrs;      /* send WRs posted */
        uint64_t              bytes;    /* bytes they carried */
        uint64_t              atomics;  /* of them, IB atomic WRs */
        uint64_t              atomic_retries; /* compare-and-swaps that
                                           found another value */
    } tx_stats;
    char                     *counters_file;
    struct {
        unsigned              tx_queue_len;
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


#endif
