/*
 * ucx-srq soft device: a receive WQE as the responder sees it (soft_rview.c).
 */
#ifndef SRQ_SOFT_RVIEW_H_
#define SRQ_SOFT_RVIEW_H_

#include "soft_dev.h"
#include "soft_pkt.h"
#include "soft_qp.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct srq_soft_srq srq_soft_srq_t;

/* A receive WQE as the responder sees it, from an SRQ or an RQ */
typedef struct srq_soft_rview {
    uint64_t         wr_id;
    uint32_t         num_sge;
    struct ibv_sge   sge[SRQ_SOFT_MAX_SGE];
    srq_soft_srq_t  *srq;
    uint16_t         srq_idx;
} srq_soft_rview_t;

/* The next receive WQE of @qp, without taking it */
bool srq_soft_rview_peek(srq_soft_qp_t *qp, srq_soft_rview_t *v);
/* Take it */
void srq_soft_rview_consume(srq_soft_qp_t *qp, srq_soft_rview_t *v);
/* Local keys of the part of the scatter list that [0, len) touches:
 * IBV_WC_SUCCESS or IBV_WC_LOC_PROT_ERR */
int  srq_soft_rview_check(srq_soft_qp_t *qp, const srq_soft_rview_t *v,
                          uint64_t len);
/* Copy @len bytes to offset @off of the scatter list (checked before) */
void srq_soft_rview_copy(const srq_soft_rview_t *v, uint64_t off,
                         const uint8_t *src, uint64_t len);
/* Pull @len bytes from the sender's (@pid) buffers into the scatter list */
bool srq_soft_rview_pull(const srq_soft_rview_t *v, pid_t pid,
                         const srq_soft_pkt_iov_t *riov, uint16_t nsge,
                         uint64_t len);

#endif
