/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the tag-matching header every message carries when tag
 * matching is on (srq_tm.h says what travels in it), and its rendezvous
 * header: their sizes and how one is filled. Header only, below the
 * receive side (which leaves room for it) and the tag offload (which
 * reads and writes it).
 */
#ifndef UCT_SRQ_TMH_H_
#define UCT_SRQ_TMH_H_

#include <uct/api/uct.h>
#include <infiniband/tm_types.h>
#include <endian.h>
#include <stdint.h>

#define UCT_SRQ_TM_HDR_LEN    sizeof(struct ibv_tmh)
#define UCT_SRQ_TM_RVH_LEN    sizeof(struct ibv_rvh)

/* A TMH of @opcode for @tag */
static inline void uct_srq_tm_fill_tmh(struct ibv_tmh *tmh, uint8_t opcode,
                                       uint32_t app_ctx, uct_tag_t tag)
{
    tmh->opcode      = opcode;
    tmh->reserved[0] = tmh->reserved[1] = tmh->reserved[2] = 0;
    tmh->app_ctx     = htobe32(app_ctx);
    tmh->tag         = htobe64(tag);
}

#endif
