/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the handshake's datagrams (srq_hs_msg.c): their format, the
 * buffers they land in, and sending one. srq_hs_rx.c reads them, srq_hs.c
 * runs the handshake that sends them.
 */
#ifndef UCT_SRQ_HS_MSG_H_
#define UCT_SRQ_HS_MSG_H_

#include "srq_types.h"

#define UCT_SRQ_HS_MAGIC      0x43515253u  /* "SRQC" */
/* 2: the am id travels as the immediate (srq_am.h); a peer of another
 * version is not connected to */
#define UCT_SRQ_HS_VERSION    2
#define UCT_SRQ_HS_QKEY       0x1ee75a5cu
#define UCT_SRQ_HS_GRH_LEN    40
/* wr_id of a handshake send (a receive's is its buffer's index) */
#define UCT_SRQ_HS_SEND_WRID  UINT64_MAX

typedef enum {
    UCT_SRQ_HS_REQ  = 1,
    UCT_SRQ_HS_REP  = 2,
    UCT_SRQ_HS_RTU  = 3,
    UCT_SRQ_HS_DISC = 4   /* the sender's interface closes: its QP is gone */
} uct_srq_hs_msg_type_t;

/* A handshake datagram; integers little endian */
typedef struct uct_srq_hs_msg {
    uint32_t            magic;
    uint8_t             version;
    uint8_t             type;
    uint16_t            reserved;
    uct_srq_conn_key_t  src;      /* the sender's interface */
    uint32_t            rc_qpn;   /* the sender's RC QP for this pair */
} UCS_S_PACKED uct_srq_hs_msg_t;

#define UCT_SRQ_HS_BUF_LEN \
    ucs_align_up(UCT_SRQ_HS_GRH_LEN + sizeof(uct_srq_hs_msg_t) + 64, 64)

const char *uct_srq_hs_msg_name(uint8_t type);

/* Post the handshake's receive buffer @index: 0 or an errno */
int uct_srq_hs_post_recv(uct_srq_hs_t *hs, unsigned index);

/* Send a datagram of @type for @conn to its peer: 0, or the errno of a
 * limit of ours (uct_srq_err_is_limit); other failures are left to the
 * retransmission */
int uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                    uint8_t type);

/* The same; when a limit of ours stops it, @conn fails */
int uct_srq_hs_send_or_fail(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                            uint8_t type);

#endif
