/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the send queue's doorbell (soft_doorbell.h).
 *
 * The stack and the device lock are a pair of flags in Dekker's manner:
 * a post pushes its QP, then tries the lock; a holder releases the lock,
 * then looks at the stack, all four sequentially consistent. Either the
 * post gets the lock and takes its WQEs in itself, or the holder sees
 * the push and takes the lock again to take them in - or a third thread
 * has the lock by then, and the same holds for its release.
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
    do {
        srq_soft_doorbell_run(dev);
        srq_soft_dev_release(dev);
    } while (srq_soft_dev_doorbells(dev) && srq_soft_trylock(&dev->lock));
}
