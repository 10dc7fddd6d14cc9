/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: asynchronous events (SRQ limit, QP last WQE, CQ
 * overrun, a responder's QP errors, communication established), queued
 * for srq_verbs_get_async_event.
 */
#ifndef SRQ_SOFT_ASYNC_H_
#define SRQ_SOFT_ASYNC_H_

#include "../../dev/srq_verbs_types.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_dev srq_soft_dev_t;

/* A pending asynchronous event */
typedef struct srq_soft_async_ev {
    struct ibv_async_event     ev;
    struct srq_soft_async_ev  *next;
} srq_soft_async_ev_t;

int  srq_soft_async_init(srq_soft_dev_t *dev);
void srq_soft_async_cleanup(srq_soft_dev_t *dev);
/* @ibv_obj: the CQ, SRQ or QP the event is about, as events name it
 * (struct ibv_cq, ibv_srq, ibv_qp; NULL for a port event), @written its
 * count of events written (uverbs mode), NULL for a port event. The
 * object hands both, as it does to srq_soft_async_release: the events
 * know nothing of the objects' structs, which call down into them. */
void srq_soft_async_raise(srq_soft_dev_t *dev, enum ibv_event_type type,
                          void *ibv_obj, uint32_t *written);
/*
 * Before a CQ, SRQ or QP (@ibv_obj, as events name it) is freed, outside
 * dev->lock: its events not taken by the user yet are dropped, as the
 * kernel drops them; of the @written ones the user did take (uverbs mode),
 * libibverbs acks each on the object itself (@mutex, @cond, @completed),
 * and those acks are waited for. True once none is owed; false if they did
 * not come within a second: the caller keeps the object allocated (an ack
 * still to come writes into it).
 */
bool srq_soft_async_release(srq_soft_dev_t *dev, const void *ibv_obj,
                            uint32_t written, pthread_mutex_t *mutex,
                            pthread_cond_t *cond, const uint32_t *completed);
int  srq_soft_async_fd(srq_verbs_dev_t *dev);
int  srq_soft_get_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);
void srq_soft_ack_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);

#endif
