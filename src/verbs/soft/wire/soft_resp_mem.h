/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's RDMA on its own memory
 * (soft_resp_mem.c) - the checks the requester makes when it does RDMA
 * one-sided, and a WRITE's data pulled in chunks.
 */
#ifndef SRQ_SOFT_RESP_MEM_H_
#define SRQ_SOFT_RESP_MEM_H_

#include "../fabric/soft_pkt.h"
#include "../objects/soft_qp.h"

#include <stdint.h>

/* srq_soft_resp_write_pull: the QP is being destroyed or reset, nothing
 * to answer */
#define SRQ_SOFT_RESP_REVOKED  0xff

/* 0 or the NAK that refuses @req (@len bytes, @access); where it lands
 * in our memory in *va */
uint8_t srq_soft_resp_rdma_check(srq_soft_qp_t *qp,
                                 const srq_soft_pkt_rdma_t *req, uint32_t len,
                                 int access, uint64_t *va);
/* A WRITE's @len bytes at the requester's @riov pulled into our region at
 * @req: 0, a NAK, or SRQ_SOFT_RESP_REVOKED */
uint8_t srq_soft_resp_write_pull(srq_soft_qp_t *qp,
                                 const srq_soft_pkt_rdma_t *req,
                                 const srq_soft_pkt_iov_t *riov, uint16_t nsge,
                                 uint32_t len);

#endif
