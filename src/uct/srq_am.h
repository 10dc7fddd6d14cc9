/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: how an active message travels between rc_srq endpoints.
 *
 * An active message is one SEND with immediate data: the immediate is the
 * am id (network order), the message is the AM's header and payload and
 * nothing else. The id rides outside the message, as rc_verbs' one-byte
 * header does not, for two reasons: a short AM's packet stays small (on
 * soft0 the packet header and an 8-byte AM fill one 64-byte cache line, the
 * one line the receiver has to take from the sender's core), and the
 * payload starts the receive buffer, which the receiver aligned for it.
 *
 * A completion without an immediate, or with one above UCT_AM_ID_MAX other
 * than the keepalive id, is no active message: the receiver drops it.
 */
#ifndef UCT_SRQ_AM_H_
#define UCT_SRQ_AM_H_

#include <verbs/srq_verbs.h>
#include <uct/api/uct.h>
#include <ucs/sys/compiler_def.h>
#include <arpa/inet.h>
#include <stdint.h>

/* The am id of internal probes (never handed to a user handler): a
 * zero-length message that only checks the peer is there */
#define UCT_SRQ_AM_ID_KEEPALIVE 0xffu
/* What uct_srq_am_id says of a message that carries no id */
#define UCT_SRQ_AM_ID_NONE      UINT32_MAX

/* @wr: an active message @am_id of @num_sge pieces */
static UCS_F_ALWAYS_INLINE void
uct_srq_am_wr(struct ibv_send_wr *wr, uint8_t am_id, struct ibv_sge *sge,
              int num_sge, int send_flags)
{
    wr->opcode     = IBV_WR_SEND_WITH_IMM;
    wr->imm_data   = htonl(am_id);
    wr->sg_list    = sge;
    wr->num_sge    = num_sge;
    wr->send_flags = send_flags;
}

/* The am id of a successful receive completion (UCT_SRQ_AM_ID_NONE if it
 * has none); it is not checked against UCT_AM_ID_MAX here */
static UCS_F_ALWAYS_INLINE uint32_t uct_srq_am_id(const struct ibv_wc *wc)
{
    return (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) :
                                              UCT_SRQ_AM_ID_NONE;
}

#endif
