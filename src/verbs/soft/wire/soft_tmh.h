/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the headers of tag-matching messages as they
 * travel (struct ibv_tmh, struct ibv_rvh of <infiniband/tm_types.h>,
 * big-endian), and the FIN the device itself sends (soft_tm_rndv.c puts
 * it in a send queue, the requester writes it). Below both.
 */
#ifndef SRQ_SOFT_TMH_H_
#define SRQ_SOFT_TMH_H_

#include <infiniband/tm_types.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

#define SRQ_SOFT_TMH_LEN  16 /* struct ibv_tmh */
#define SRQ_SOFT_RVH_LEN  16 /* struct ibv_rvh */

_Static_assert(sizeof(struct ibv_tmh) == SRQ_SOFT_TMH_LEN, "TMH layout");
_Static_assert(sizeof(struct ibv_rvh) == SRQ_SOFT_RVH_LEN, "RVH layout");

/* The FIN's payload: a TMH, as the request's with opcode IBV_TMH_FIN (its
 * app_ctx tells the sender which request ended) */
static inline void srq_soft_tmh_fin(uint8_t *dst, uint64_t tag,
                                    uint32_t app_ctx)
{
    struct ibv_tmh tmh;

    memset(&tmh, 0, sizeof(tmh));
    tmh.opcode  = IBV_TMH_FIN;
    tmh.app_ctx = htobe32(app_ctx);
    tmh.tag     = htobe64(tag);
    memcpy(dst, &tmh, sizeof(tmh));
}

#endif
