/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the WQE layout of a soft SRQ's receive queue.
 *
 * The queue is wqe_cnt WQEs of stride bytes (both powers of two). A WQE is
 * a 16-byte next segment followed by max_sge 16-byte data segments, all
 * fields big-endian (the layout of a linked-list SRQ on an HCA, so that
 * the device side reads what a hardware device would):
 *
 *     { u8 rsvd0[2]; be16 next_wqe_index; u8 signature; u8 rsvd1[11]; }
 *     max_sge x { be32 byte_count; be32 lkey; be64 addr; }
 *
 * Free WQEs form a list linked by next_wqe_index from head to tail; the
 * tail WQE is a sentinel that is never handed to the device (so head ==
 * tail means full). Posting writes WQEs at head and follows their links,
 * then publishes the new posted-WQE counter, once per batch, in the
 * doorbell record (big-endian). The device consumes WQEs in posting order
 * by following the same links. A data segment list shorter than max_sge
 * ends with byte_count 0 and lkey SRQ_SOFT_SRQ_INVALID_LKEY.
 */
#ifndef SRQ_SOFT_SRQ_WQE_H_
#define SRQ_SOFT_SRQ_WQE_H_

#include <stddef.h>
#include <stdint.h>

#define SRQ_SOFT_SRQ_INVALID_LKEY  0x100u

typedef struct srq_soft_srq_next_seg {
    uint8_t   rsvd0[2];
    uint16_t  next_wqe_index;  /* big-endian */
    uint8_t   signature;
    uint8_t   rsvd1[11];
} srq_soft_srq_next_seg_t;

typedef struct srq_soft_srq_data_seg {
    uint32_t  byte_count;      /* big-endian */
    uint32_t  lkey;            /* big-endian */
    uint64_t  addr;            /* big-endian */
} srq_soft_srq_data_seg_t;

_Static_assert(sizeof(srq_soft_srq_next_seg_t) == 16, "WQE layout");
_Static_assert(sizeof(srq_soft_srq_data_seg_t) == 16, "WQE layout");

static inline srq_soft_srq_next_seg_t *srq_soft_srq_wqe(void *buf,
                                                        uint32_t stride,
                                                        uint32_t idx)
{
    return (srq_soft_srq_next_seg_t*)((uint8_t*)buf + (size_t)idx * stride);
}

static inline srq_soft_srq_data_seg_t *
srq_soft_srq_dseg(srq_soft_srq_next_seg_t *wqe)
{
    return (srq_soft_srq_data_seg_t*)(wqe + 1);
}

#endif
