/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: what a request packet must be before the responder
 * (soft_resp.c) trusts it - its opcode, flags and sizes consistent with the
 * frame it came in. It comes from another process: nothing in it is
 * believed before these checks. Inline: every packet goes through them.
 */
#ifndef SRQ_SOFT_RESP_PKT_H_
#define SRQ_SOFT_RESP_PKT_H_

#include "../fabric/soft_pkt.h"

#include <stdbool.h>
#include <stdint.h>

/* A CMP_SWAP, FETCH_ADD or ATOMIC_WRITE request */
static inline bool srq_soft_resp_is_atomic(const srq_soft_pkt_t *pkt)
{
    return (pkt->opcode == SRQ_SOFT_OP_CMP_SWAP) ||
           (pkt->opcode == SRQ_SOFT_OP_FETCH_ADD) ||
           (pkt->opcode == SRQ_SOFT_OP_ATOMIC_WRITE);
}

/* Payload sizes consistent with the frame? */
static inline bool srq_soft_resp_pkt_ok(const srq_soft_pkt_t *pkt,
                                        const uint8_t *payload)
{
    const srq_soft_pkt_iov_t *iov = (const srq_soft_pkt_iov_t*)payload;
    uint64_t room = pkt->frame_len - sizeof(*pkt), sum = 0;
    uint16_t i;

    if (pkt->length > SRQ_SOFT_MAX_MSG) {
        return false;
    }
    if ((pkt->flags & SRQ_SOFT_PKT_F_UC) &&
        ((pkt->flags & SRQ_SOFT_PKT_F_UD) ||
         ((pkt->opcode != SRQ_SOFT_OP_SEND) &&
          (pkt->opcode != SRQ_SOFT_OP_WRITE) &&
          (pkt->opcode != SRQ_SOFT_OP_WRITE_IMM)))) {
        return false; /* UC has no READ, atomics or refusal notices */
    }
    if (srq_soft_resp_is_atomic(pkt)) {
        return !(pkt->flags & (SRQ_SOFT_PKT_F_PULL | SRQ_SOFT_PKT_F_UD |
                               SRQ_SOFT_PKT_F_IMM)) &&
               (pkt->length == sizeof(uint64_t)) &&
               (room >= sizeof(srq_soft_pkt_atomic_t));
    }
    if (pkt->opcode == SRQ_SOFT_OP_WRITE_IMM) {
        return !(pkt->flags & (SRQ_SOFT_PKT_F_PULL | SRQ_SOFT_PKT_F_UD));
    }
    if (pkt->opcode == SRQ_SOFT_OP_ACCESS_ERR) {
        /* F_IMM: the refused request was a WRITE with immediate */
        return !(pkt->flags & ~SRQ_SOFT_PKT_F_IMM) && (pkt->length == 0);
    }
    if ((pkt->opcode == SRQ_SOFT_OP_WRITE) ||
        (pkt->opcode == SRQ_SOFT_OP_READ)) {
        /* where it goes, then (WRITE, with immediate or not) what a
         * SEND would carry */
        if ((pkt->flags & SRQ_SOFT_PKT_F_UD) ||
            (room < sizeof(srq_soft_pkt_rdma_t))) {
            return false;
        }
        if (pkt->opcode == SRQ_SOFT_OP_READ) {
            /* larger than a response frame: the requester reads it */
            return !(pkt->flags & SRQ_SOFT_PKT_F_IMM) &&
                   ((pkt->flags & SRQ_SOFT_PKT_F_PULL) ?
                    (pkt->length > SRQ_SOFT_PKT_INLINE_MAX) :
                    (pkt->length <= SRQ_SOFT_PKT_INLINE_MAX));
        }
        room    -= sizeof(srq_soft_pkt_rdma_t);
        iov      = (const srq_soft_pkt_iov_t*)(payload +
                                               sizeof(srq_soft_pkt_rdma_t));
    }
    if (!(pkt->flags & SRQ_SOFT_PKT_F_PULL)) {
        return (pkt->length <= SRQ_SOFT_PKT_INLINE_MAX) &&
               (pkt->length <= room);
    }
    if ((pkt->flags & SRQ_SOFT_PKT_F_UD) || (pkt->nsge == 0) ||
        (pkt->nsge > SRQ_SOFT_MAX_SGE) ||
        (pkt->nsge * sizeof(*iov) > room)) {
        return false;
    }
    for (i = 0; i < pkt->nsge; ++i) {
        sum += iov[i].len;
    }
    return sum == pkt->length;
}

#endif
