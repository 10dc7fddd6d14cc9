/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the send queue's doorbell (soft_doorbell.h).
 *
 * No rung doorbell is left behind, and a release of the device lock
 * stays one store (the fast path's, single-threaded, is unchanged): a
 * holder that runs the engine looks at the stack before it lets go, and
 * a post that pushed onto an empty stack tries the lock once more, then,
 * the device still taken, pokes our wake pipe - the holder may have
 * looked already, or be a control verb. The poke wakes the progress
 * thread, or a sleeper on the channel that holds the pipe, and the
 * thread's looks at a busy owner take a rung doorbell in too
 * (soft_wait.c). Later pushes onto the stack ride on that first poke.
 */
#include "soft_doorbell.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "soft_req.h"

void srq_soft_doorbell_take(srq_soft_qp_t *qp)
{
    if (!srq_soft_qp_sq_absorb(qp)) {
        return;
    }
    if (qp->state == IBV_QPS_ERR) {
        srq_soft_qp_flush(qp); /* a post that missed the move to error */
    } else {
        srq_soft_qp_busy(qp, true);
        srq_soft_req_progress(qp);
    }
}

/* Take in every QP on the doorbell stack */
static void srq_soft_doorbell_run(srq_soft_dev_t *dev)
{
    srq_soft_qp_t *qp = srq_soft_qp_doorbells(dev), *next;

    for (; qp != NULL; qp = next) {
        next = qp->db_next; /* a post may push it again once cleared */
        __atomic_store_n(&qp->db_rung, false, __ATOMIC_SEQ_CST);
        srq_soft_doorbell_take(qp);
    }
}

void srq_soft_doorbell_unlock(srq_soft_dev_t *dev)
{
    if (__builtin_expect(srq_soft_dev_doorbells(dev), 0)) {
        srq_soft_doorbell_run(dev);
    }
    srq_soft_dev_unlock(dev);
}
