/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: completion queues and completion channels.
 *
 * A CQ is a ring of completions in process memory, written by the progress
 * engine and read by ibv_poll_cq (soft_progress.c: it drives progress
 * first, so any CQ of the instance drains the instance's inbound queue).
 *
 * A completion channel's fd is an epoll set holding an eventfd, written
 * when a CQE lands on an armed CQ of the channel. The channel armed last
 * also holds the instance's wake pipe, which a peer pokes after queueing
 * a packet for a sleeping instance: its sleeper wakes and runs progress
 * itself, which raises the event (srq_soft_channel_take_pipe). Sleepers
 * on other channels get their events from that progress, or from the
 * progress thread's (soft_thread.c). On an instance without its thread (a
 * test stopped it) every set holds the wake pipe and the timerfd. So the
 * fd may be readable with no event yet: srq_verbs_get_cq_event
 * (soft_wait.c) runs progress and reports EAGAIN (non-blocking fd) or
 * waits again.
 *
 * It is the same in uverbs mode (srq_soft_open_params_t): libibverbs'
 * ibv_get_cq_event would read a struct ib_uverbs_comp_event_desc from the
 * fd, so the preloaded library stands in front of it (srq_ibv_interpose.c)
 * and calls srq_verbs_get_cq_event.
 */
#include "soft_cq.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_pipe.h"
#include "soft_async.h"
#include "soft_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int srq_soft_epoll_add(int ep, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

    return (fd < 0) ? 0 : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static srq_soft_channel_t *srq_soft_cq_channel(srq_soft_cq_t *cq)
{
    return srq_soft_container_of(cq->ibv.channel, srq_soft_channel_t, ibv);
}

/* One CQ more (@delta 1) or fewer (-1) that a sleeper may wait on. The
 * progress thread reads the device's counts without the lock */
static void srq_soft_cq_count_arm(srq_soft_cq_t *cq, int delta)
{
    srq_soft_channel_t *ch = srq_soft_cq_channel(cq);
    srq_soft_dev_t *dev    = cq->dev;

    ch->armed += delta;
    __atomic_store_n(&dev->armed_cqs, dev->armed_cqs + delta,
                     __ATOMIC_RELAXED);
    if (dev->pipe_channel == ch) {
        __atomic_store_n(&dev->armed_direct, ch->armed, __ATOMIC_RELAXED);
    }
}

/* The CQ's arm is spent (its event came) or gone with it */
static void srq_soft_cq_disarm(srq_soft_cq_t *cq)
{
    if (cq->armed != 0) {
        cq->armed = 0;
        srq_soft_cq_count_arm(cq, -1);
    }
}

/*
 * A program arms a CQ of @ch to sleep on it: the wake pipe moves into its
 * epoll set, so that a peer's poke wakes the sleeper itself, which runs
 * the device in its own progress call - one wakeup per message, as an
 * HCA's interrupt, with the progress thread left asleep. One channel at a
 * time holds the pipe: a file in several epoll sets wakes every sleeper
 * on them (UCX's async thread watches ud_verbs' channel; a poke for the
 * program would wake it as well), and the kernel bounds the nested sets
 * one file may wake (500 two deep). The last armed is the one a program
 * sleeps on in a loop; sleepers on other channels get their events from
 * whoever runs the device next (soft_wait.c). Not for a CQ that UD QPs
 * receive into: a poke cannot tell whether a datagram will complete
 * anything (an HCA raises no interrupt for one it drops: no WQE, too
 * long), and its sleeper would wake for nothing - UCX's test_uct_event
 * counts those (ud_verbs: 1.1-1.9% of its arms, against 1% allowed); the
 * thread wakes it for what completes. Under dev->lock; the epoll_ctl only
 * when the holder changes.
 */
static void srq_soft_channel_take_pipe(srq_soft_cq_t *cq)
{
    srq_soft_channel_t *ch = srq_soft_cq_channel(cq);
    srq_soft_dev_t *dev    = ch->dev;
    struct epoll_event ev  = { .events = EPOLLIN, .data.fd = dev->fab.pipe_fd };

    if ((dev->pipe_channel == ch) || !dev->thread_started ||
        (cq->ud_recv_qps != 0)) {
        return; /* without the thread, every channel holds it */
    }
    if (dev->pipe_channel != NULL) {
        epoll_ctl(dev->pipe_channel->ibv.fd, EPOLL_CTL_DEL, dev->fab.pipe_fd,
                  &ev);
        dev->pipe_channel = NULL;
    }
    /* bytes of earlier pokes (the thread's, a peer's nudge) would wake
     * the new sleeper at once: what they announced is in the queue, which
     * the arm looks at next (srq_soft_wake_arm) */
    srq_soft_fd_drain(dev->fab.pipe_fd);
    if (epoll_ctl(ch->ibv.fd, EPOLL_CTL_ADD, dev->fab.pipe_fd, &ev) == 0) {
        dev->pipe_channel = ch;
    }
    __atomic_store_n(&dev->armed_direct,
                     (dev->pipe_channel != NULL) ? ch->armed : 0,
                     __ATOMIC_RELAXED);
}

static void srq_soft_channel_free(srq_soft_channel_t *ch)
{
    if (ch->ibv.fd >= 0) {
        close(ch->ibv.fd);
    }
    if (ch->efd >= 0) {
        close(ch->efd);
    }
    free(ch);
}

/*
 * The epoll set a sleeper waits on: the channel's events, and without a
 * progress thread the wake pipe and timer, since the sleeper moves the
 * device itself. With the thread, the pipe follows the arms
 * (srq_soft_channel_take_pipe).
 */
static int srq_soft_channel_epoll(srq_soft_channel_t *ch)
{
    srq_soft_dev_t *dev = ch->dev;

    ch->efd    = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ch->ibv.fd = epoll_create1(EPOLL_CLOEXEC);
    if ((ch->efd < 0) || (ch->ibv.fd < 0) ||
        srq_soft_epoll_add(ch->ibv.fd, ch->efd)) {
        return -1;
    }
    if (!dev->thread_started &&
        (srq_soft_epoll_add(ch->ibv.fd, dev->fab.pipe_fd) ||
         srq_soft_epoll_add(ch->ibv.fd, dev->timer_fd))) {
        return -1;
    }
    return 0;
}

struct ibv_comp_channel *srq_soft_create_comp_channel(srq_verbs_dev_t *vdev)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_channel_t *ch;
    int ret;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->dev         = dev;
    ch->ibv.context = &dev->vctx.context;
    ch->ibv.fd      = -1;
    ch->efd         = -1;
    srq_soft_list_init(&ch->events);
    ret = srq_soft_channel_epoll(ch);
    if (ret != 0) {
        ret = errno;
        srq_soft_channel_free(ch);
        errno = ret;
        return NULL;
    }
    return &ch->ibv;
}

int srq_soft_destroy_comp_channel(srq_verbs_dev_t *vdev,
                                  struct ibv_comp_channel *channel)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_channel_t *ch;

    if (!srq_soft_dev_has_channel(dev, channel)) {
        return EINVAL;
    }
    srq_soft_dev_lock(dev);
    ch = srq_soft_container_of(channel, srq_soft_channel_t, ibv);
    if (ch->refcnt > 0) {
        srq_soft_dev_unlock(dev);
        return EBUSY;
    }
    if (dev->pipe_channel == ch) {
        dev->pipe_channel = NULL; /* no CQ of it left, none armed */
    }
    srq_soft_dev_unlock(dev);
    srq_soft_channel_free(ch);
    return 0;
}

/* A CQ's PD can only be a parent domain (ibv_create_cq_ex(3)) */
static bool srq_soft_cq_pd_ok(srq_soft_dev_t *dev, struct ibv_pd *pd)
{
    return (pd == NULL) || (srq_soft_dev_has(dev, pd) &&
                            (((srq_soft_pd_t*)pd)->protection != NULL));
}

struct ibv_cq *srq_soft_create_cq_pd(srq_verbs_dev_t *vdev, int cqe,
                                     void *cq_context,
                                     struct ibv_comp_channel *channel,
                                     int comp_vector, struct ibv_pd *pd)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_channel_t *ch = NULL;
    srq_soft_cq_t *cq;

    if ((cqe <= 0) || (cqe > SRQ_SOFT_MAX_CQE) || (comp_vector < 0) ||
        (comp_vector >= dev->vctx.context.num_comp_vectors) ||
        ((channel != NULL) && !srq_soft_dev_has_channel(dev, channel)) ||
        !srq_soft_cq_pd_ok(dev, pd)) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq->size = srq_soft_qbuf_pow2((uint32_t)cqe);
    if (srq_soft_qbuf_alloc(pd, cq->size * sizeof(*cq->ring), 64,
                            SRQ_SOFT_RES_TYPE_CQ, &cq->ring_buf) != 0) {
        free(cq);
        errno = ENOMEM;
        return NULL;
    }
    cq->ring           = cq->ring_buf.ptr;
    cq->pd             = pd;
    if (pd != NULL) {
        srq_soft_pd_get(pd); /* ibv_dealloc_pd: EBUSY while the CQ is */
    }
    cq->dev            = dev;
    cq->ibv.context    = &dev->vctx.context;
    cq->ibv.handle     = srq_soft_handle(dev, &cq->ibv);
    cq->ibv.channel    = channel;
    cq->ibv.cq_context = cq_context;
    cq->ibv.cqe        = (int)cq->size;
    srq_soft_lock_init(&cq->lock);
    srq_soft_list_init(&cq->ev_link);
    pthread_mutex_init(&cq->ibv.mutex, NULL);
    pthread_cond_init(&cq->ibv.cond, NULL);

    srq_soft_dev_lock(dev);
    if (channel != NULL) {
        ch = srq_soft_container_of(channel, srq_soft_channel_t, ibv);
        ++ch->refcnt;
    }
    srq_soft_list_add_tail(&dev->cqs, &cq->dev_link);
    srq_soft_cq_seen(cq, dev->stats.progress_calls); /* its first poll runs it */
    srq_soft_dev_unlock(dev);
    return &cq->ibv;
}

struct ibv_cq *srq_soft_create_cq(srq_verbs_dev_t *vdev, int cqe,
                                  void *cq_context,
                                  struct ibv_comp_channel *channel,
                                  int comp_vector)
{
    return srq_soft_create_cq_pd(vdev, cqe, cq_context, channel, comp_vector,
                                 NULL);
}

int srq_soft_destroy_cq(srq_verbs_dev_t *vdev, struct ibv_cq *ibcq)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_channel_t *ch;
    srq_soft_cq_t *cq;

    if (srq_soft_dev_lock_obj(dev, ibcq) != 0) {
        return ENOENT;
    }
    cq = srq_soft_cq(ibcq);
    if (cq->qp_refs > 0) {
        srq_soft_dev_unlock(dev);
        return EBUSY;
    }
    if (srq_soft_list_linked(&cq->ev_link)) {
        srq_soft_list_del(&cq->ev_link);
    }
    srq_soft_cq_disarm(cq);
    srq_soft_list_del(&cq->dev_link);
    if (ibcq->channel != NULL) {
        ch = srq_soft_container_of(ibcq->channel, srq_soft_channel_t, ibv);
        --ch->refcnt;
    }
    srq_soft_dev_unlock(dev);
    if (cq->pd != NULL) {
        srq_soft_pd_put(cq->pd);
    }
    /* off the device's list and unreferenced: no event can come for it */
    if (!srq_soft_async_release(dev, ibcq, cq->events_written, &ibcq->mutex,
                                &ibcq->cond, &ibcq->async_events_completed)) {
        return 0; /* an ack still to come writes here: kept allocated */
    }
    pthread_mutex_destroy(&cq->ibv.mutex);
    pthread_cond_destroy(&cq->ibv.cond);
    srq_soft_qbuf_free(&cq->ring_buf);
    free(cq);
    return 0;
}

/*
 * ibv_resize_cq. The completions waiting keep their order: each keeps its
 * index (pi and ci do not change, only the mask does), so an empty poll
 * that reads pi and ci without the lock sees nothing move. A size below
 * what the CQ holds now is EINVAL, as the kernel answers.
 */
int srq_soft_resize_cq(srq_verbs_dev_t *vdev, struct ibv_cq *ibcq, int cqe)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_qbuf_t buf, old;
    srq_soft_cqe_t *ring;
    srq_soft_cq_t *cq;
    uint32_t size, i;

    if ((cqe <= 0) || (cqe > SRQ_SOFT_MAX_CQE) ||
        !srq_soft_dev_has(dev, ibcq)) {
        return EINVAL;
    }
    size = srq_soft_qbuf_pow2((uint32_t)cqe);
    /* before the lock: may be large, and may call the program's allocator
     * (a CQ in a parent domain) */
    if (srq_soft_qbuf_alloc(srq_soft_cq(ibcq)->pd, size * sizeof(*ring), 64,
                            SRQ_SOFT_RES_TYPE_CQ, &buf) != 0) {
        return ENOMEM;
    }
    ring = buf.ptr;
    if (srq_soft_dev_lock_obj(dev, ibcq) != 0) {
        srq_soft_qbuf_free(&buf);
        return EINVAL;
    }
    cq = srq_soft_cq(ibcq);
    srq_soft_lock(&cq->lock);
    if (cq->pi - cq->ci > size) {
        srq_soft_unlock(&cq->lock);
        srq_soft_dev_unlock(dev);
        srq_soft_qbuf_free(&buf);
        return EINVAL;
    }
    for (i = cq->ci; i != cq->pi; ++i) {
        ring[i & (size - 1)] = cq->ring[i & (cq->size - 1)];
    }
    old          = cq->ring_buf;
    cq->ring_buf = buf;
    cq->ring     = ring;
    cq->size     = size;
    cq->ibv.cqe  = (int)size;
    srq_soft_unlock(&cq->lock);
    srq_soft_dev_unlock(dev);
    srq_soft_qbuf_free(&old);
    return 0;
}

/* The CQ was armed and got a CQE: queue one event on its channel */
static void srq_soft_cq_event(srq_soft_cq_t *cq)
{
    srq_soft_channel_t *ch;
    uint64_t one = 1;
    ssize_t ret;

    srq_soft_cq_disarm(cq);
    if (cq->ibv.channel == NULL) {
        return;
    }
    ch = srq_soft_container_of(cq->ibv.channel, srq_soft_channel_t, ibv);
    ++cq->dev->events_raised;
    if (!srq_soft_list_linked(&cq->ev_link)) {
        srq_soft_list_add_tail(&ch->events, &cq->ev_link);
    }
    ret = write(ch->efd, &one, sizeof(one));
    (void)ret;
}

/*
 * A CQ without a completion channel has nowhere to send an event: the
 * kernel refuses to arm it (EINVAL). Arms add up until the event: a
 * solicited-only arm after an "any" arm leaves the CQ armed for any
 * completion, as on an HCA (an arm is never narrowed).
 */
int srq_soft_cq_arm(srq_soft_cq_t *cq, int solicited_only)
{
    if (cq->ibv.channel == NULL) {
        errno = EINVAL; /* as every failing verb sets it */
        return EINVAL;
    }
    srq_soft_channel_take_pipe(cq);
    if (cq->armed == 0) {
        srq_soft_cq_count_arm(cq, 1);
    }
    if (!solicited_only) {
        cq->armed = 1;
    } else if (cq->armed == 0) {
        cq->armed = 2;
    }
    /* completions already there and not polled: the event comes now, as
     * an mlx5 HCA raises it when the arm's consumer index is behind the
     * producer's. A program that polled the CQ empty, then armed it and
     * sleeps (UCX's uct_iface_event_arm) would otherwise sleep on a
     * completion added between its poll and its arm - our own progress
     * adds them, in the very calls that arm (srq_soft_get_cq_event) */
    if (srq_soft_cq_load(&cq->pi) != srq_soft_cq_load(&cq->ci)) {
        srq_soft_cq_event(cq); /* (a poll racing it: a spurious event) */
    }
    return 0;
}

/*
 * A slot for a new completion, or NULL when the CQ is full: an overrun puts
 * the CQ in error (IBV_EVENT_CQ_ERR), as on an HCA. Under dev->lock; takes
 * the CQ's lock, which srq_soft_cq_push_done releases once the caller
 * filled the slot (a poll never sees half a completion).
 */
srq_soft_cqe_t *srq_soft_cq_push(srq_soft_cq_t *cq, bool solicited)
{
    srq_soft_cqe_t *cqe;

    srq_soft_lock(&cq->lock);
    if (cq->error) {
        srq_soft_unlock(&cq->lock);
        return NULL;
    }
    if (cq->pi - cq->ci == cq->size) {
        atomic_store_explicit((_Atomic bool*)&cq->error, true,
                              memory_order_relaxed);
        srq_soft_unlock(&cq->lock);
        srq_soft_async_raise(cq->dev, IBV_EVENT_CQ_ERR, &cq->ibv,
                             &cq->events_written);
        return NULL;
    }
    cqe = &cq->ring[cq->pi & (cq->size - 1)];
    memset(cqe, 0, sizeof(*cqe));
    cq->push_se = solicited;
    return cqe;
}

void srq_soft_cq_push_done(srq_soft_cq_t *cq)
{
    bool solicited = cq->push_se;

    srq_soft_cq_store(&cq->pi, cq->pi + 1);
    srq_soft_unlock(&cq->lock);
    /* armed and the channel are dev->lock's */
    if ((cq->armed == 1) || ((cq->armed == 2) && solicited)) {
        srq_soft_cq_event(cq);
    }
}

/* SRQ WQEs whose completions a poll took, freed together */
#define SRQ_SOFT_CQ_FREE_BATCH  32

typedef struct srq_soft_cq_frees {
    srq_soft_dev_t *dev;        /* whose srq_free_wqes gives them back */
    srq_soft_srq_t *srq;
    unsigned        n;
    uint16_t        idx[SRQ_SOFT_CQ_FREE_BATCH];
} srq_soft_cq_frees_t;

static inline void srq_soft_cq_frees_flush(srq_soft_cq_frees_t *f)
{
    if (f->n > 0) {
        f->dev->srq_free_wqes(f->srq, f->idx, f->n);
        f->n = 0;
    }
}

/* Give the resources a completion held back to their queues (an SRQ WQE
 * once @f is flushed) */
static void srq_soft_cqe_release(srq_soft_cqe_t *cqe, srq_soft_cq_frees_t *f)
{
    if (cqe->srq != NULL) {
        if ((cqe->srq != f->srq) || (f->n == SRQ_SOFT_CQ_FREE_BATCH)) {
            srq_soft_cq_frees_flush(f);
            f->srq = cqe->srq;
        }
        f->idx[f->n++] = cqe->srq_idx;
    }
    /* read by posts and the engine outside the CQ's lock */
    if (cqe->rq_ci_p != NULL) {
        srq_soft_cq_store(cqe->rq_ci_p, srq_soft_cq_load(cqe->rq_ci_p) + 1);
    }
    if (cqe->sq_free_p != NULL) {
        srq_soft_cq_store(cqe->sq_free_p, cqe->sq_free);
    }
}

/* Under dev->lock: take the channel's oldest event */
srq_soft_cq_t *srq_soft_channel_pop(srq_soft_channel_t *ch)
{
    srq_soft_cq_t *cq;

    if (srq_soft_list_empty(&ch->events)) {
        return NULL;
    }
    cq = srq_soft_container_of(ch->events.next, srq_soft_cq_t, ev_link);
    srq_soft_list_del(&cq->ev_link);
    ++cq->events_delivered;
    return cq;
}

void srq_soft_ack_cq_events(srq_verbs_dev_t *vdev, struct ibv_cq *ibcq,
                            unsigned nevents)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);

    srq_soft_dev_lock(dev);
    srq_soft_cq(ibcq)->events_acked += nevents;
    srq_soft_dev_unlock(dev);
}

/*
 * A QP moved to RESET: its completions not yet polled go, as an HCA's
 * provider removes them from the QP's CQs (rdma-core's tests reset a QP
 * in error and run traffic again on the same CQs, whose next completion
 * must be the new traffic's). The others keep their order; an SRQ WQE a
 * removed completion held goes back to its SRQ. QP numbers are unique
 * among live QPs, so a completion is the QP's by its qp_num (an SRQ
 * receive's names no QP otherwise).
 */
void srq_soft_cq_clean_qp(srq_soft_cq_t *cq, uint32_t qp_num)
{
    uint32_t mask, keep, i;
    srq_soft_cqe_t *cqe;

    srq_soft_lock(&cq->lock);
    mask = cq->size - 1;
    keep = cq->ci;
    for (i = cq->ci; i != cq->pi; ++i) {
        cqe = &cq->ring[i & mask];
        if (cqe->wc.qp_num != qp_num) {
            if (keep != i) {
                cq->ring[keep & mask] = *cqe;
            }
            ++keep;
        } else if (cqe->srq != NULL) {
            cq->dev->srq_free_wqes(cqe->srq, &cqe->srq_idx, 1);
        }
    }
    srq_soft_cq_store(&cq->pi, keep);
    srq_soft_unlock(&cq->lock);
}

/* A QP is being destroyed: its completions stay, its queues are gone */
void srq_soft_cq_forget_qp(srq_soft_cq_t *cq, const uint32_t *rq_ci_p,
                           const uint32_t *sq_free_p)
{
    srq_soft_cqe_t *cqe;
    uint32_t i;

    srq_soft_lock(&cq->lock);
    for (i = cq->ci; i != cq->pi; ++i) {
        cqe = &cq->ring[i & (cq->size - 1)];
        if (cqe->rq_ci_p == rq_ci_p) {
            cqe->rq_ci_p = NULL;
        }
        if (cqe->sq_free_p == sq_free_p) {
            cqe->sq_free_p = NULL;
        }
    }
    srq_soft_unlock(&cq->lock);
}

static void srq_soft_cq_forget_srq(srq_soft_cq_t *cq, srq_soft_srq_t *srq)
{
    uint32_t i;

    srq_soft_lock(&cq->lock);
    for (i = cq->ci; i != cq->pi; ++i) {
        if (cq->ring[i & (cq->size - 1)].srq == srq) {
            cq->ring[i & (cq->size - 1)].srq = NULL;
        }
    }
    srq_soft_unlock(&cq->lock);
}

void srq_soft_cqs_forget_srq(srq_soft_dev_t *dev, srq_soft_srq_t *srq)
{
    srq_soft_list_t *e;

    for (e = dev->cqs.next; e != &dev->cqs; e = e->next) {
        srq_soft_cq_forget_srq(srq_soft_container_of(e, srq_soft_cq_t,
                                                     dev_link), srq);
    }
}

void srq_soft_cq_forget_counters(srq_soft_cq_t *cq, const void *lo,
                                 size_t len)
{
    const uint8_t *p;
    uint32_t i;

    srq_soft_lock(&cq->lock);
    for (i = cq->ci; i != cq->pi; ++i) {
        p = (const uint8_t*)cq->ring[i & (cq->size - 1)].rq_ci_p;
        if ((p >= (const uint8_t*)lo) && (p < (const uint8_t*)lo + len)) {
            cq->ring[i & (cq->size - 1)].rq_ci_p = NULL;
        }
    }
    srq_soft_unlock(&cq->lock);
}

int srq_soft_cq_pop(srq_soft_cq_t *cq, int num, struct ibv_wc *wc)
{
    srq_soft_cq_frees_t frees;
    srq_soft_cqe_t *cqe;
    uint32_t ci;
    int n = 0;

    frees.dev = cq->dev;
    frees.srq = NULL; /* (idx needs no zeroing: an idle poll is common) */
    frees.n   = 0;
    srq_soft_lock(&cq->lock);
    ci = cq->ci;
    while ((n < num) && (ci != cq->pi)) {
        cqe     = &cq->ring[ci++ & (cq->size - 1)];
        wc[n++] = cqe->wc;
        if ((cqe->wc.wc_flags & IBV_WC_TM_MATCH) && (cqe->rq_ci_p != NULL)) {
            /* what ibv_wc_read_tm_info reads (an SRQ gone: none) */
            cq->ex_tm = srq_soft_container_of(cqe->rq_ci_p, srq_soft_cqe_tm_t,
                                              polled)->info;
        } else if (cqe->wc.wc_flags & IBV_WC_TM_MATCH) {
            memset(&cq->ex_tm, 0, sizeof(cq->ex_tm));
        }
        srq_soft_cqe_release(cqe, &frees);
    }
    srq_soft_cq_store(&cq->ci, ci);
    srq_soft_cq_frees_flush(&frees); /* the SRQ's lock, inside the CQ's */
    if ((n == 0) && cq->error) {
        n = -EIO; /* overrun: completions were lost */
    }
    srq_soft_unlock(&cq->lock);
    return n;
}
