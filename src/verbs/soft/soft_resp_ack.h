/*
 * ucx-srq soft device: the responder's answers (soft_resp_ack.c).
 */
#ifndef SRQ_SOFT_RESP_ACK_H_
#define SRQ_SOFT_RESP_ACK_H_

#include "soft_qp.h"

#include <stdbool.h>
#include <stdint.h>

/* An ACK owed now: sent at the end of this progress call */
void srq_soft_resp_sched_ack(srq_soft_qp_t *qp);
/* A request was placed: its ACK may wait one call for a reply to carry it */
void srq_soft_resp_sched_ack_placed(srq_soft_qp_t *qp);
/* A NAK @nak of @psn owed now */
void srq_soft_resp_sched_nak(srq_soft_qp_t *qp, uint8_t nak, uint32_t psn);
/* An ACK (@nak 0) or NAK of @psn sent now: 0, EAGAIN (no room: try again
 * later) or EPIPE */
int  srq_soft_resp_ctrl(srq_soft_qp_t *qp, uint8_t nak, uint32_t psn);
/* A READ's answer: @len bytes of @data, or with @data NULL none (the
 * requester reads them itself) */
int  srq_soft_resp_read_resp(srq_soft_qp_t *qp, uint32_t psn,
                             const void *data, uint32_t len);
/* A kept result: an ATOMIC_ACK, or a READ_RESP */
int  srq_soft_resp_atomic_ack(srq_soft_qp_t *qp,
                              const srq_soft_atomic_res_t *res);
/* The atomic results not sent yet, oldest first: 0, EAGAIN or EPIPE */
int  srq_soft_resp_atomic_flush(srq_soft_qp_t *qp);
/* Send the ACK/NAK every QP on dev->ack_qps owes; @all false: not the
 * ACKs that wait one more progress call for a reply to carry them */
void srq_soft_resp_send_acks(srq_soft_dev_t *dev, bool all);

#endif
