/*
 * ucx-srq soft device: asynchronous events.
 *
 * Events are queued in process memory and signalled through an eventfd
 * (srq_verbs_async_fd), readable while an event is pending.
 * srq_verbs_get_async_event never blocks: EAGAIN when none is pending.
 */
#include "soft_async.h"
#include "soft_cq.h"
#include "soft_dev.h"
#include "soft_qp.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

int srq_soft_async_init(srq_soft_dev_t *dev)
{
    pthread_mutex_init(&dev->async_lock, NULL);
    dev->async_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return (dev->async_efd < 0) ? errno : 0;
}

void srq_soft_async_cleanup(srq_soft_dev_t *dev)
{
    srq_soft_async_ev_t *ev;

    while ((ev = dev->async_head) != NULL) {
        dev->async_head = ev->next;
        free(ev);
    }
    if (dev->async_efd >= 0) {
        close(dev->async_efd);
        dev->async_efd = -1;
    }
    pthread_mutex_destroy(&dev->async_lock);
}

static void srq_soft_async_element(struct ibv_async_event *ev, void *element)
{
    switch (ev->event_type) {
    case IBV_EVENT_CQ_ERR:
        ev->element.cq = &((srq_soft_cq_t*)element)->ibv;
        break;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
    case IBV_EVENT_SRQ_ERR:
        ev->element.srq = &((srq_soft_srq_t*)element)->ibv;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
    case IBV_EVENT_COMM_EST:
        ev->element.qp = &((srq_soft_qp_t*)element)->ibv;
        break;
    default:
        ev->element.port_num = 1;
        break;
    }
}

void srq_soft_async_raise(srq_soft_dev_t *dev, enum ibv_event_type type,
                          void *element)
{
    srq_soft_async_ev_t *ev = calloc(1, sizeof(*ev));
    uint64_t one = 1;
    ssize_t ret;

    if (ev == NULL) {
        return; /* nothing better to do: an HCA would drop it too */
    }
    ev->ev.event_type = type;
    srq_soft_async_element(&ev->ev, element);

    pthread_mutex_lock(&dev->async_lock);
    if (dev->async_tail != NULL) {
        dev->async_tail->next = ev;
    } else {
        dev->async_head = ev;
    }
    dev->async_tail = ev;
    ret = write(dev->async_efd, &one, sizeof(one));
    (void)ret;
    pthread_mutex_unlock(&dev->async_lock);
}

int srq_soft_async_fd(srq_verbs_dev_t *vdev)
{
    return srq_soft_dev(vdev)->async_efd;
}

int srq_soft_get_async_event(srq_verbs_dev_t *vdev,
                             struct ibv_async_event *event)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_async_ev_t *ev;
    uint64_t cnt;
    ssize_t ret;

    pthread_mutex_lock(&dev->async_lock);
    ev = dev->async_head;
    if (ev == NULL) {
        pthread_mutex_unlock(&dev->async_lock);
        return EAGAIN;
    }
    dev->async_head = ev->next;
    if (dev->async_head == NULL) {
        dev->async_tail = NULL;
        /* nothing pending any more: the fd must stop being readable */
        ret = read(dev->async_efd, &cnt, sizeof(cnt));
        (void)ret;
    }
    pthread_mutex_unlock(&dev->async_lock);
    *event = ev->ev;
    free(ev);
    return 0;
}

void srq_soft_ack_async_event(srq_verbs_dev_t *vdev,
                              struct ibv_async_event *event)
{
    /* nothing is held for an event after it is taken */
}
