/*
 * ucx-srq soft device: the SRQ WQE layout, byte for byte the mlx5
 * linked-list SRQ (see srq_verbs_ring.h), so that the same ring-posting
 * code serves the soft device and mlx5 hardware.
 */
#ifndef SRQ_SOFT_SRQ_H_
#define SRQ_SOFT_SRQ_H_

#include <endian.h>
#include <stdint.h>

/* = struct mlx5_wqe_srq_next_seg */
typedef struct srq_soft_srq_next_seg {
    uint8_t   rsvd0[2];
    uint16_t  next_wqe_index;  /* big-endian */
    uint8_t   signature;
    uint8_t   rsvd1[11];
} srq_soft_srq_next_seg_t;

/* = struct mlx5_wqe_data_seg */
typedef struct srq_soft_srq_data_seg {
    uint32_t  byte_count;      /* big-endian */
    uint32_t  lkey;            /* big-endian */
    uint64_t  addr;            /* big-endian */
} srq_soft_srq_data_seg_t;

_Static_assert(sizeof(srq_soft_srq_next_seg_t) == 16, "mlx5 layout");
_Static_assert(sizeof(srq_soft_srq_data_seg_t) == 16, "mlx5 layout");

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
