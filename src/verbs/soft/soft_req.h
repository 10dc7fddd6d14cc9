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
/* Do the local keys of @wqe's gather (READ, atomics: scatter) list still
 * check out? 0 or EACCES */
int srq_soft_req_check_lkeys(srq_soft_qp_t *qp, const srq_soft_swqe_t *wqe);

#endif
