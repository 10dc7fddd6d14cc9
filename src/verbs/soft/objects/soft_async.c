/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: asynchronous events.
 *
 * Events are queued in process memory and signalled through an eventfd
 * (srq_verbs_async_fd), readable while an event is pending.
 * srq_verbs_get_async_event never blocks: EAGAIN when none is pending.
 *
 * In uverbs mode (srq_soft_open_params_t) libibverbs reads the events
 * itself from context->async_fd, as a kernel uverbs device writes them: one
 * struct ib_uverbs_async_event_desc each, into a pipe. As with the kernel,
 * destroying an object drops its events the user has not read yet (taken
 * back out of the pipe) and waits for the acks of those it has read: only
 * those are counted in the object by libibverbs' ibv_ack_async_event.
 */
#define _GNU_SOURCE /* pipe2 */
#include "soft_async.h"
#include "soft_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <rdma/ib_user_verbs.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* A second, non-blocking open of the pipe's read end: events are taken
 * back through it while the user may block in read() on its own (whose
 * flags are the user's to set). Without /proc, none: events are then not
 * taken back, and a destroy waits (bounded) for their acks. */
static void srq_soft_async_open_nb(srq_soft_dev_t *dev)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/self/fd/%d", dev->async_efd);
    dev->async_nbfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

/* The read end is blocking, as a uverbs fd is until the user says not;
 * a writer never blocks (an event that finds the pipe full is dropped, as
 * a full event queue drops it) */
static int srq_soft_async_pipe(srq_soft_dev_t *dev)
{
    int fds[2];

    if (pipe2(fds, O_CLOEXEC) != 0) {
        return errno;
    }
    if (fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
        close(fds[0]);
        close(fds[1]);
        return errno;
    }
    dev->async_efd = fds[0];
    dev->async_wfd = fds[1];
    srq_soft_async_open_nb(dev);
    return 0;
}

int srq_soft_async_init(srq_soft_dev_t *dev)
{
    pthread_mutex_init(&dev->async_lock, NULL);
    if (dev->params.uverbs_fds) {
        return srq_soft_async_pipe(dev);
    }
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
    /* in uverbs mode the read end, once it is the context's async_fd, is
     * closed by the context's owner (libibverbs) */
    if ((dev->async_efd >= 0) &&
        !(dev->params.uverbs_fds &&
          (dev->vctx.context.async_fd == dev->async_efd))) {
        close(dev->async_efd);
    }
    dev->async_efd = -1;
    if (dev->async_wfd >= 0) {
        close(dev->async_wfd);
        dev->async_wfd = -1;
    }
    if (dev->async_nbfd >= 0) {
        close(dev->async_nbfd);
        dev->async_nbfd = -1;
    }
    pthread_mutex_destroy(&dev->async_lock);
}

/* What an event is about: the one place that sorts event types */
typedef enum {
    SRQ_SOFT_EV_PORT,
    SRQ_SOFT_EV_CQ,
    SRQ_SOFT_EV_SRQ,
    SRQ_SOFT_EV_QP
} srq_soft_ev_obj_t;

static srq_soft_ev_obj_t srq_soft_async_obj(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        return SRQ_SOFT_EV_CQ;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
    case IBV_EVENT_SRQ_ERR:
        return SRQ_SOFT_EV_SRQ;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
        return SRQ_SOFT_EV_QP;
    default:
        return SRQ_SOFT_EV_PORT;
    }
}

static void srq_soft_async_element(struct ibv_async_event *ev, void *ibv_obj)
{
    switch (srq_soft_async_obj(ev->event_type)) {
    case SRQ_SOFT_EV_CQ:
        ev->element.cq = ibv_obj;
        break;
    case SRQ_SOFT_EV_SRQ:
        ev->element.srq = ibv_obj;
        break;
    case SRQ_SOFT_EV_QP:
        ev->element.qp = ibv_obj;
        break;
    default:
        ev->element.port_num = 1;
        break;
    }
}

/* The element of an event as the kernel writes it: an object's address
 * (libibverbs hands it back as the object) or a port number */
static uint64_t srq_soft_async_desc_element(const struct ibv_async_event *ev)
{
    switch (srq_soft_async_obj(ev->event_type)) {
    case SRQ_SOFT_EV_CQ:
        return (uintptr_t)ev->element.cq;
    case SRQ_SOFT_EV_SRQ:
        return (uintptr_t)ev->element.srq;
    case SRQ_SOFT_EV_QP:
        return (uintptr_t)ev->element.qp;
    default:
        return (uint64_t)ev->element.port_num;
    }
}

/* Under async_lock (srq_soft_async_take_back reorders nothing) */
static bool srq_soft_async_write_desc(srq_soft_dev_t *dev,
                                      const struct ibv_async_event *ev)
{
    struct ib_uverbs_async_event_desc desc;

    memset(&desc, 0, sizeof(desc));
    desc.element    = srq_soft_async_desc_element(ev);
    desc.event_type = ev->event_type;
    /* one write of 16 bytes into a pipe is atomic (< PIPE_BUF) */
    return write(dev->async_wfd, &desc, sizeof(desc)) == sizeof(desc);
}

/* uverbs mode: into the pipe, counted in the object when it got there (a
 * full pipe drops it, as a full event queue would) */
static void srq_soft_async_write(srq_soft_dev_t *dev, enum ibv_event_type type,
                                 void *ibv_obj, uint32_t *written)
{
    struct ibv_async_event uev = { .event_type = type };

    srq_soft_async_element(&uev, ibv_obj);
    pthread_mutex_lock(&dev->async_lock);
    if (srq_soft_async_write_desc(dev, &uev) && (written != NULL)) {
        ++*written;
    }
    pthread_mutex_unlock(&dev->async_lock);
}

void srq_soft_async_raise(srq_soft_dev_t *dev, enum ibv_event_type type,
                          void *ibv_obj, uint32_t *written)
{
    srq_soft_async_ev_t *ev;
    uint64_t one = 1;
    ssize_t ret;

    if (dev->params.uverbs_fds) {
        srq_soft_async_write(dev, type, ibv_obj, written);
        return;
    }
    ev = calloc(1, sizeof(*ev));

    if (ev == NULL) {
        return; /* nothing better to do: an HCA would drop it too */
    }
    ev->ev.event_type = type;
    srq_soft_async_element(&ev->ev, ibv_obj);

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

/* uverbs mode, under async_lock: take the events about @element the user
 * has not read out of the pipe, the others go back in order; how many */
static uint32_t srq_soft_async_take_back(srq_soft_dev_t *dev, uint64_t element)
{
    struct ib_uverbs_async_event_desc *desc;
    size_t i, n, kept = 0;
    uint32_t taken = 0;
    ssize_t got, ret;
    int avail = 0;

    if ((dev->async_nbfd < 0) ||
        (ioctl(dev->async_nbfd, FIONREAD, &avail) != 0) || (avail <= 0) ||
        ((desc = malloc(avail)) == NULL)) {
        return 0;
    }
    /* a reader of the user's may take some meanwhile: those were read */
    got = read(dev->async_nbfd, desc, avail);
    n   = (got > 0) ? (size_t)got / sizeof(*desc) : 0;
    for (i = 0; i < n; ++i) {
        if (desc[i].element == element) {
            ++taken;
        } else {
            desc[kept++] = desc[i];
        }
    }
    /* room for them: they were just in there, and writers wait for us */
    ret = (kept > 0) ? write(dev->async_wfd, desc, kept * sizeof(*desc)) : 0;
    (void)ret;
    free(desc);
    return taken;
}

/* Built-in mode, under async_lock: drop the queued events about @element */
static void srq_soft_async_drop_queued(srq_soft_dev_t *dev, uint64_t element)
{
    srq_soft_async_ev_t **pp = &dev->async_head, *ev;
    uint64_t cnt;
    ssize_t ret;

    dev->async_tail = NULL;
    while ((ev = *pp) != NULL) {
        if (srq_soft_async_desc_element(&ev->ev) == element) {
            *pp = ev->next;
            free(ev);
            continue;
        }
        dev->async_tail = ev;
        pp              = &ev->next;
    }
    if (dev->async_head == NULL) {
        ret = read(dev->async_efd, &cnt, sizeof(cnt)); /* not readable */
        (void)ret;
    }
}

bool srq_soft_async_release(srq_soft_dev_t *dev, const void *ibv_obj,
                            uint32_t written, pthread_mutex_t *mutex,
                            pthread_cond_t *cond, const uint32_t *completed)
{
    struct timespec deadline;
    uint32_t read_by_user;
    int ret = 0;
    bool acked;

    pthread_mutex_lock(&dev->async_lock);
    if (dev->params.uverbs_fds) {
        read_by_user = written - srq_soft_async_take_back(dev,
                                                          (uintptr_t)ibv_obj);
    } else {
        srq_soft_async_drop_queued(dev, (uintptr_t)ibv_obj);
        read_by_user = 0; /* nothing is held for an event once taken */
    }
    pthread_mutex_unlock(&dev->async_lock);
    if (read_by_user == 0) {
        return true;
    }
    /* the kernel waits for the acks of the events it handed out; a
     * program that never acks would wait forever, so the wait is bounded */
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    pthread_mutex_lock(mutex);
    while ((*(volatile const uint32_t*)completed != read_by_user) &&
           (ret == 0)) {
        ret = pthread_cond_timedwait(cond, mutex, &deadline);
    }
    acked = (*completed == read_by_user);
    pthread_mutex_unlock(mutex);
    return acked;
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
