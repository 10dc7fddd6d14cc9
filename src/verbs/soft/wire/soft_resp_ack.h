/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's answers (soft_resp_ack.c); what a
 * QP owes is scheduled inline, once per message placed.
 */
#ifndef SRQ_SOFT_RESP_ACK_H_
#define SRQ_SOFT_RESP_ACK_H_

#include "../fabric/soft_list.h"
#include "../fabric/soft_pkt.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"

#include <stdbool.h>
#include <stdint.h>

/* Owed now: sent at the end of this progress call */
static inline void srq_soft_resp_sched_ack(srq_soft_qp_t *qp)
{
    qp->ack_call    = 0;
    qp->ack_pending = true;
    if (!srq_soft_list_linked(&qp->ack_link)) {
        srq_soft_list_add_tail(&qp->dev->ack_qps, &qp->ack_link);
    }
}

/* A request was placed: its ACK may wait one call for a reply to carry
 * it, if one did the last time (never longer: the call it became owed in
 * is kept while it is pending). Not in uverbs mode: a program behind
 * libibverbs may stop polling after its last message, and the progress
 * thread would send it only a tick later; and a traced run there replays
 * (test/verbs_replay.sh) only if its ACKs, which free the sender's
 * slots, come when they came in the run. The built-in owner (rc_srq)
 * progresses, or UCX's async thread runs the device for it
 * (ASYNC_INTERVAL) */
static inline void
srq_soft_resp_sched_ack_placed(srq_soft_qp_t *qp)
{
    srq_soft_dev_t *dev = qp->dev;
    uint64_t call       = dev->stats.progress_calls;

    qp->rx_call = call;
    if (qp->ack_pending) {
        return; /* owed since an earlier call, or now */
    }
    srq_soft_resp_sched_ack(qp);
    qp->ack_call = (qp->ack_defer && !dev->params.uverbs_fds) ? call : 0;
}

/* A NAK @nak of @psn owed now */
static inline void
srq_soft_resp_sched_nak(srq_soft_qp_t *qp, uint8_t nak, uint32_t psn)
{
    qp->nak     = nak;
    qp->nak_psn = psn;
    srq_soft_resp_sched_ack(qp);
}

/* An ACK (@nak 0) or NAK of @psn sent now: 0, EAGAIN (no room: try again
 * later) or EPIPE */
int  srq_soft_resp_ctrl(srq_soft_qp_t *qp, uint8_t nak, uint32_t psn);
/* A UC message no QP of ours takes: its sender is told it has left */
void srq_soft_resp_uc_lost(srq_soft_dev_t *dev, const srq_soft_pkt_t *pkt);
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
