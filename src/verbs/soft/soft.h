/*
 * ucx-srq soft device: a userspace HCA for machines without RDMA hardware
 * or kernel RDMA support. Processes of one host talk through shared memory
 * (packets) and cross-memory attach (one-sided RDMA). Its objects are real
 * struct ibv_context/ibv_qp/ibv_srq/ibv_cq, and it fills context->ops so
 * that the standard inline data-path verbs reach it.
 */
#ifndef SRQ_SOFT_H_
#define SRQ_SOFT_H_

#include "../srq_verbs_dev.h"

#define SRQ_SOFT_DEV_NAME      "soft0"
#define SRQ_SOFT_NUM_PORTS     1

/* Device limits, as ibv_query_device reports them */
#define SRQ_SOFT_MAX_QP        65536
#define SRQ_SOFT_MAX_QP_WR     16384
#define SRQ_SOFT_MAX_SGE       16
#define SRQ_SOFT_MAX_CQ        65536
#define SRQ_SOFT_MAX_CQE       (1 << 20)
#define SRQ_SOFT_MAX_MR        (1 << 20)
#define SRQ_SOFT_MAX_MR_SIZE   (1ull << 40)
#define SRQ_SOFT_MAX_SRQ       4096
#define SRQ_SOFT_MAX_SRQ_WR    32768
#define SRQ_SOFT_MAX_INLINE    1024
#define SRQ_SOFT_MTU           IBV_MTU_4096

/* The first four bytes of a soft port address's gid field */
#define SRQ_SOFT_ADDR_MAGIC    "soft"

typedef struct srq_soft_dev {
    srq_verbs_dev_t     super;
    struct ibv_context  ibv_ctx;      /* what ibv_* data-path calls see */
    struct ibv_device  *ibv_dev;      /* a fake device object for ctx->device */
    uint8_t             instance[12]; /* unique id of this open instance */
} srq_soft_dev_t;

static inline srq_soft_dev_t *srq_soft_dev(srq_verbs_dev_t *dev)
{
    return (srq_soft_dev_t*)dev;
}

#endif
