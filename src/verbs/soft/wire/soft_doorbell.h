/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the send queue's doorbell - how WQEs a post wrote
 * without the device lock reach the engine.
 *
 * ibv_post_send writes its WQEs under the QP's own send lock and
 * publishes them in the QP's doorbell record (sq_db, soft_qp.h). A post
 * that finds the device free runs the requester from its own call, the
 * low-latency path; one that finds it taken leaves the QP on the
 * device's doorbell stack and returns, as a post to an HCA returns once
 * the doorbell is rung. Whoever has the device takes the stack in before
 * it lets go (srq_soft_doorbell_unlock): a poll's progress, the progress
 * thread, a sleeper's wakeup, another post. A control verb's holder does
 * not run the engine: for it, the post pokes our wake pipe
 * (soft_doorbell.c), and the thread or a sleeper takes them in.
 */
#ifndef SRQ_SOFT_DOORBELL_H_
#define SRQ_SOFT_DOORBELL_H_

typedef struct srq_soft_dev srq_soft_dev_t;
typedef struct srq_soft_qp  srq_soft_qp_t;

/* The WQEs @qp's posts published, into the requester: sent as far as
 * they can go now, or flushed if the QP is in error (under dev->lock) */
void srq_soft_doorbell_take(srq_soft_qp_t *qp);

/* Release the device lock, after taking in every doorbell rung */
void srq_soft_doorbell_unlock(srq_soft_dev_t *dev);

#endif
