/*
 * ucx-srq soft device: asynchronous events (SRQ limit, QP last WQE, CQ
 * overrun), queued for srq_verbs_get_async_event.
 */
#ifndef SRQ_SOFT_ASYNC_H_
#define SRQ_SOFT_ASYNC_H_

#include "../srq_verbs.h"

typedef struct srq_soft_dev srq_soft_dev_t;

/* A pending asynchronous event */
typedef struct srq_soft_async_ev {
    struct ibv_async_event     ev;
    struct srq_soft_async_ev  *next;
} srq_soft_async_ev_t;

int  srq_soft_async_init(srq_soft_dev_t *dev);
void srq_soft_async_cleanup(srq_soft_dev_t *dev);
/* @element: the soft CQ, SRQ or QP the event is about */
void srq_soft_async_raise(srq_soft_dev_t *dev, enum ibv_event_type type,
                          void *element);
/* Before an SRQ or QP is freed: in uverbs mode libibverbs acks its events
 * on the object itself (@mutex, @cond, @completed), as a kernel device's;
 * true once the @reported ones were acked, false if that did not happen
 * within a second (the caller must then keep the object allocated) */
int  srq_soft_async_wait_acked(pthread_mutex_t *mutex, pthread_cond_t *cond,
                               const uint32_t *completed, uint32_t reported);
int  srq_soft_async_fd(srq_verbs_dev_t *dev);
int  srq_soft_get_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);
void srq_soft_ack_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);

#endif
