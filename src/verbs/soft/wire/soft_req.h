/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the requester - send WQEs to packets in the peer's
 * queue, one-sided operations by cross-memory attach.
 */
#ifndef SRQ_SOFT_REQ_H_
#define SRQ_SOFT_REQ_H_

typedef struct srq_soft_qp   srq_soft_qp_t;
typedef struct srq_soft_swqe srq_soft_swqe_t;

/* Transmit what the QP's send queue holds, as far as the peer takes it */
void srq_soft_req_progress(srq_soft_qp_t *qp);
/* The QP has send work it cannot do now: progress comes back to it */
void srq_soft_req_sched(srq_soft_qp_t *qp);
/* The responder answered @wqe, a READ over SRQ_SOFT_PKT_INLINE_MAX,
 * without its data (in PSN order, checked): read it now, one-sided. The
 * WQE is then done, or failed, or (its target QP gone since) left to the
 * transport timeout, which resends the READ */
void srq_soft_req_pull_read(srq_soft_qp_t *qp, srq_soft_swqe_t *wqe);

#endif
