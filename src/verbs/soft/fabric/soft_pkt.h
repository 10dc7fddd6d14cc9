/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the packets of the inbound queue (soft_ring.c), as
 * the requester writes them and the responder and completer read them.
 */
#ifndef SRQ_SOFT_PKT_H_
#define SRQ_SOFT_PKT_H_

#include "soft_shm.h"

#include <stddef.h>
#include <stdint.h>

#define SRQ_SOFT_PKT_MAGIC      0x5153u /* "SQ" */
#define SRQ_SOFT_PKT_HDR        56u

enum {
    SRQ_SOFT_OP_PAD       = 1,  /* fills the ring up to its end */
    SRQ_SOFT_OP_SEND      = 2,
    SRQ_SOFT_OP_WRITE_IMM = 3,  /* data already written; consumes a recv */
    SRQ_SOFT_OP_ACK       = 4,
    SRQ_SOFT_OP_NAK       = 5,
    SRQ_SOFT_OP_CMP_SWAP  = 6,  /* payload: srq_soft_pkt_atomic_t */
    SRQ_SOFT_OP_FETCH_ADD = 7,  /* payload: srq_soft_pkt_atomic_t */
    SRQ_SOFT_OP_ATOMIC_ACK = 8, /* psn: the atomic's; payload: the original
                                   value (8 bytes) */
    SRQ_SOFT_OP_ACCESS_ERR = 9, /* a one-sided request the requester found
                                   the target refuses (no payload): the
                                   target's responder goes to error */
    /* RDMA behind unacknowledged requests, executed by the responder in
     * PSN order (the requester does them itself once nothing before them
     * is outstanding). Payload: srq_soft_pkt_rdma_t, then for WRITE the
     * data (or with F_PULL the iovecs the responder pulls) */
    SRQ_SOFT_OP_WRITE     = 10,
    SRQ_SOFT_OP_READ      = 11, /* length: the bytes to read; with F_PULL
                                   (over SRQ_SOFT_PKT_INLINE_MAX) the
                                   requester reads them itself */
    SRQ_SOFT_OP_READ_RESP = 12, /* psn: the READ's; payload: its data, or
                                   with F_PULL none: executed in order,
                                   the requester reads the data now */
    SRQ_SOFT_OP_ATOMIC_WRITE = 13, /* payload: srq_soft_pkt_atomic_t, the
                                      8 bytes in swap; answered by an
                                      ATOMIC_ACK whose value means nothing */
    SRQ_SOFT_OP_LAST
};

enum {
    SRQ_SOFT_PKT_F_IMM    = 1u << 0,
    SRQ_SOFT_PKT_F_PULL   = 1u << 1,  /* payload: remote iovecs to pull;
                                         READ, READ_RESP: see above */
    SRQ_SOFT_PKT_F_UD     = 1u << 2,
    SRQ_SOFT_PKT_F_SE     = 1u << 3,  /* solicited event */
    SRQ_SOFT_PKT_F_ACK    = 1u << 4,  /* RC request that also acknowledges
                                         every PSN up to aux the other way */
    SRQ_SOFT_PKT_F_INV    = 1u << 5,  /* SEND with invalidate: the rkey in
                                         imm (soft_mw.c) */
    SRQ_SOFT_PKT_F_UC     = 1u << 6,  /* from a UC QP: SEND, WRITE_IMM or
                                         WRITE only, never NAKed */
    SRQ_SOFT_PKT_F_XRC    = 1u << 7   /* from an XRC initiator: aux is
                                         the target's SRQ number */
};

enum {
    SRQ_SOFT_NAK_RNR      = 1,  /* no receive WQE: retry after a timer */
    SRQ_SOFT_NAK_INV_REQ  = 2,  /* message too long for the receive WQE */
    SRQ_SOFT_NAK_REM_OP   = 3,  /* responder could not complete it */
    SRQ_SOFT_NAK_REM_ACCESS = 4 /* rkey, bounds or MR access refused */
};

/* 56 bytes: a small payload shares the header's cache line */
typedef struct srq_soft_pkt {
    uint64_t  pos;         /* srq_soft_pos_tag(ring position): written last,
                              publishes the frame */
    uint16_t  magic;
    uint8_t   opcode;
    uint8_t   flags;
    uint32_t  frame_len;   /* whole frame, a multiple of SRQ_SOFT_CELL */
    uint32_t  dst_qpn;
    uint32_t  src_qpn;
    uint32_t  psn;         /* ACK/NAK: the PSN acknowledged / refused */
    uint32_t  imm;         /* as given by the user (network order) */
    uint32_t  length;      /* message length */
    uint32_t  aux;         /* UD: qkey; NAK: syndrome | rnr timer << 8;
                              F_XRC: the SRQ number;
                              RC request with F_ACK: the PSN acknowledged */
    uint8_t   src_inst[12];
    union {
        uint16_t  nsge;    /* F_PULL: number of srq_soft_pkt_iov_t */
        uint16_t  tclass;  /* UD (never F_PULL): the GRH's traffic class */
    };
    uint16_t  src_lid;     /* the sender's LID (wc.slid) */
} srq_soft_pkt_t;

typedef struct srq_soft_pkt_iov {
    uint64_t  addr;
    uint64_t  len;
} srq_soft_pkt_iov_t;

/* Where an RDMA request executed by the responder goes */
typedef struct srq_soft_pkt_rdma {
    uint64_t  addr;        /* remote address */
    uint32_t  rkey;
    uint32_t  reserved;
} srq_soft_pkt_rdma_t;

/* What an atomic request carries; the target's responder executes it */
typedef struct srq_soft_pkt_atomic {
    uint64_t  addr;        /* remote address, 8-byte aligned */
    uint64_t  compare_add; /* CMP_SWAP: compare; FETCH_ADD: add */
    uint64_t  swap;        /* CMP_SWAP: the new value */
    uint32_t  rkey;
    uint32_t  reserved;
} srq_soft_pkt_atomic_t;

#ifdef __cplusplus
static_assert(sizeof(srq_soft_pkt_t) == SRQ_SOFT_PKT_HDR, "header size");
#else
_Static_assert(sizeof(srq_soft_pkt_t) == SRQ_SOFT_PKT_HDR, "header size");
#endif

/* What a published frame holds in pos: never 0, so that zeroed memory is
 * not a frame */
static inline uint64_t srq_soft_pos_tag(uint64_t pos)
{
    return pos | (1ull << 63);
}

static inline uint32_t srq_soft_frame_len(size_t payload)
{
    return (uint32_t)((sizeof(srq_soft_pkt_t) + payload + SRQ_SOFT_CELL - 1) &
                      ~(size_t)(SRQ_SOFT_CELL - 1));
}

#endif
