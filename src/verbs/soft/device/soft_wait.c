/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: sleeping on a completion channel.
 *
 * A thread about to sleep arms its CQ (ibv_req_notify_cq), and the device
 * then sets wake_req in our segment (srq_soft_wake_arm); the next producer
 * that queues a packet for us clears it and writes a byte to our pipe,
 * which is in the epoll set of the channel armed last (soft_cq.c) and,
 * unless that channel has an armed CQ, in the progress thread's poll. The
 * thread's timerfd covers timed work (RNR waits, transport timeouts, peer
 * liveness checks). srq_verbs_get_cq_event runs progress on every
 * wakeup.
 */
#include "soft_wait.h"
#include "../fabric/soft_clock.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_lock.h"
#include "../fabric/soft_peer.h"
#include "../fabric/soft_pipe.h"
#include "../fabric/soft_ring.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_qp_state.h"
#include "../wire/soft_doorbell.h"
#include "../wire/soft_progress.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* How long an owner about to sleep waits for a frame it found claimed to
 * be published (srq_soft_wake_arm) */
#define SRQ_SOFT_CLAIM_WAIT_NS  20000

/*
 * Ask producers to wake us; if packets are already waiting, poke ourselves
 * so that whoever sleeps next wakes at once. A producer looks at the
 * request after it publishes (srq_soft_pipe_wake) without a fence of its
 * own - a busy sender would pay it on every packet - so we pass through
 * our queue's lock after storing the request: a producer that claims a
 * frame after us sees the request; one that claimed before us has its
 * claim visible to us, and we wait for that frame to be published, since
 * its look may have passed its own publishing stores (x86 lets a load
 * pass earlier stores) and found no request. A holder that keeps the lock
 * (EBUSY), or a producer that lost its CPU between claim and publication:
 * we poke ourselves, and the sleeper looks again.
 */
static void srq_soft_wake_arm(srq_soft_dev_t *dev)
{
    bool ordered, ready;
    uint64_t end;

    atomic_store_explicit(srq_soft_wake_req(dev), 1, memory_order_seq_cst);
    dev->wake_armed = true;
    ordered = (srq_soft_ring_lock(&dev->fab, dev->fab.seg.hdr) == 0);
    if (ordered) {
        srq_soft_ring_unlock(dev->fab.seg.hdr);
    }
    if (ordered && srq_soft_ring_claimed(&dev->fab)) {
        end = srq_soft_now_ns() + SRQ_SOFT_CLAIM_WAIT_NS;
        while ((ready = srq_soft_ring_claimed(&dev->fab)) &&
               (srq_soft_now_ns() < end)) {
            srq_soft_cpu_relax();
        }
        ordered = !ready;
    }
    if (!ordered || !srq_soft_ring_empty(&dev->fab)) {
        srq_soft_pipe_poke(&dev->fab);
    }
}

static void srq_soft_wake_drain(srq_soft_dev_t *dev)
{
    srq_soft_fd_drain(dev->fab.pipe_fd);
    srq_soft_fd_drain(dev->timer_fd);
    dev->timer_due = 0; /* it may have fired: set it again */
    dev->wake_armed = (atomic_load(srq_soft_wake_req(dev)) != 0);
}

/* A tick from now, on the tick grid (srq_soft_timer_update) */
static uint64_t srq_soft_next_tick(void)
{
    return (srq_soft_now_ns() / SRQ_SOFT_TICK_NS + 1) * SRQ_SOFT_TICK_NS;
}

static void srq_soft_deadline(uint64_t *min, uint64_t t)
{
    if (t < *min) {
        *min = t;
    }
}

/* Earliest moment timed work is due, UINT64_MAX if none */
static uint64_t srq_soft_next_deadline(srq_soft_dev_t *dev)
{
    uint64_t min = UINT64_MAX, to;
    srq_soft_list_t *e;
    srq_soft_qp_t *qp;
    srq_soft_peer_t *peer;

    if (!srq_soft_list_empty(&dev->ack_qps)) {
        srq_soft_deadline(&min, srq_soft_next_tick());
    }
    for (e = dev->sched_qps.next; e != &dev->sched_qps; e = e->next) {
        qp = srq_soft_container_of(e, srq_soft_qp_t, sched_link);
        srq_soft_deadline(&min, (qp->wait != SRQ_SOFT_WAIT_NONE) ?
                          qp->wait_until : srq_soft_next_tick());
    }
    for (e = dev->busy_qps.next; e != &dev->busy_qps; e = e->next) {
        qp = srq_soft_container_of(e, srq_soft_qp_t, busy_link);
        to = srq_soft_timeout_ns(qp->attr.timeout);
        if ((to != UINT64_MAX) && (qp->sq_tx != qp->sq_ci)) {
            srq_soft_deadline(&min, qp->tx_time ? (qp->tx_time + to) :
                              (srq_soft_next_tick()));
        }
    }
    /* a producer filling a frame at our head may have missed our wake
     * request: look again soon rather than sleep past its frame */
    if (srq_soft_ring_claimed(&dev->fab)) {
        srq_soft_deadline(&min, srq_soft_next_tick());
    }
    for (e = dev->fab.busy_peers.next; e != &dev->fab.busy_peers; e = e->next) {
        peer = srq_soft_container_of(e, srq_soft_peer_t, busy_link);
        srq_soft_deadline(&min, peer->next_check_ns ? peer->next_check_ns :
                          (srq_soft_next_tick()));
    }
    return min;
}

/* Arm the timerfd for the next timed work, if someone may sleep. Each arm
 * of a CQ and each sleep asks: a deadline already set is not set again
 * (a syscall each time, on the path to every sleep), and one that is only
 * "a tick from now" is taken on the tick grid, so that the asks of one
 * tick agree */
static void srq_soft_timer_update(srq_soft_dev_t *dev)
{
    struct itimerspec its;
    uint64_t t;

    if (dev->timer_fd < 0) {
        return;
    }
    t = srq_soft_next_deadline(dev);
    if (t == dev->timer_due) {
        return;
    }
    dev->timer_due = t;
    memset(&its, 0, sizeof(its));
    if (t != UINT64_MAX) {
        t += (t == 0);
        its.it_value.tv_sec  = t / 1000000000ull;
        its.it_value.tv_nsec = t % 1000000000ull;
    }
    timerfd_settime(dev->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

int srq_soft_req_notify_cq(struct ibv_cq *ibcq, int solicited)
{
    srq_soft_cq_t *cq   = srq_soft_cq(ibcq);
    srq_soft_dev_t *dev = cq->dev;

    int ret;

    srq_soft_dev_lock(dev);
    ret = srq_soft_cq_arm(cq, solicited);
    if (ret == 0) {
        /* the caller may sleep on the channel next: owe no ACK, have
         * peers wake us, and the timer fire for timed work */
        srq_soft_progress_acks(dev);
        srq_soft_wake_arm(dev);
        srq_soft_timer_update(dev);
    }
    srq_soft_doorbell_unlock(dev);
    return ret;
}

static bool srq_soft_fd_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    return (flags >= 0) && (flags & O_NONBLOCK);
}

int srq_soft_get_cq_event(srq_verbs_dev_t *vdev,
                          struct ibv_comp_channel *channel,
                          struct ibv_cq **cq_p, void **cq_context_p)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_channel_t *ch;
    struct pollfd pfd;
    srq_soft_cq_t *cq;
    bool ring_busy;

    if (!srq_soft_dev_has_channel(dev, channel)) {
        return EINVAL;
    }
    ch = srq_soft_container_of(channel, srq_soft_channel_t, ibv);
    for (;;) {
        /* drain first: anything raised after this makes the fd readable */
        srq_soft_fd_drain(ch->efd);
        srq_soft_dev_lock(dev);
        if (!dev->thread_started) {
            srq_soft_wake_drain(dev); /* else the timer is the thread's */
        } else if (dev->pipe_channel == ch) {
            srq_soft_fd_drain(dev->fab.pipe_fd); /* a poke woke us */
        }
        srq_soft_progress_beside(dev);
        cq = srq_soft_channel_pop(ch);
        if (cq == NULL) {
            srq_soft_progress_acks(dev);
            srq_soft_wake_arm(dev);
            srq_soft_timer_update(dev);
        }
        ring_busy = !srq_soft_ring_empty(&dev->fab);
        srq_soft_doorbell_unlock(dev);

        if (cq != NULL) {
            *cq_p         = &cq->ibv;
            *cq_context_p = cq->ibv.cq_context;
            return 0;
        }
        if (srq_soft_fd_nonblocking(channel->fd)) {
            return EAGAIN;
        }
        if (ring_busy) {
            continue; /* more packets than one progress batch */
        }
        pfd.fd     = channel->fd;
        pfd.events = POLLIN;
        if ((poll(&pfd, 1, -1) < 0) && (errno != EINTR)) {
            return errno;
        }
    }
}

/* The thread's next look at a user that polls (@user_polls): each look
 * that was only a look (not a poke, not the timer) doubles the next, up to
 * @max_ms; a user that stopped polling starts it over */
static void srq_soft_thread_look_next(srq_soft_dev_t *dev, bool user_polls,
                                      unsigned max_ms)
{
    unsigned fixed = atomic_load_explicit(&dev->thread_look_fixed_ms,
                                          memory_order_relaxed);

    if (user_polls && !dev->thread_woken) {
        srq_soft_stat_inc_shared(&dev->stats.thread_looks);
    }
    if (fixed != 0) {
        dev->thread_look_ms = fixed;
        return;
    }
    if (!user_polls) {
        dev->thread_look_ms = SRQ_SOFT_THREAD_LOOK_MS;
    } else if (!dev->thread_woken) {
        dev->thread_look_ms = 2 * dev->thread_look_ms;
    }
    if (dev->thread_look_ms > max_ms) {
        dev->thread_look_ms = max_ms;
    }
}

bool srq_soft_wait_idle(srq_soft_dev_t *dev, int stop_fd)
{
    struct pollfd pfd[3];
    bool user_polls, sleeper, direct, watch, ring_busy = false;
    unsigned armed, direct_cqs, look_max;
    uint64_t raised;
    int timeout;

    uint64_t polls;

    /* A user that polls progresses the device itself: then we do not ask
     * producers to poke us, do not even take the lock (a thread preempted
     * while holding it would stall the user's spinning poll), and only look
     * again a little later. Not while a CQ is armed on a channel without
     * the pipe: its owner may be asleep on the channel (it polled once more
     * before it slept), and only a poke wakes it as an interrupt would - so
     * we move the device on every poke and ask for the next before we
     * sleep, as long as an arm waits for its event. An arm on the channel
     * that holds the pipe (@direct, soft_cq.c): a poke wakes its sleeper,
     * who moves the device itself and so raises the events of any other
     * channel; we only look, as at a polling user, in case the owner armed
     * and went on computing (then we find packets waiting), and more
     * often while CQs of other channels are armed: if the pipe's holder
     * does not sleep, our looks are what wakes their sleepers. */
    polls      = atomic_load_explicit((_Atomic uint64_t*)&dev->user_polls,
                                      memory_order_relaxed);
    user_polls = (polls != dev->thread_polls_seen);
    armed      = __atomic_load_n(&dev->armed_cqs, __ATOMIC_RELAXED);
    direct_cqs = __atomic_load_n(&dev->armed_direct, __ATOMIC_RELAXED);
    direct     = (direct_cqs != 0);
    sleeper    = !direct && (armed != 0);
    watch      = (user_polls && !sleeper) ||
                 (direct && srq_soft_ring_empty(&dev->fab));
    look_max   = (direct && (armed != direct_cqs)) ?
                 SRQ_SOFT_THREAD_LOOK_SLEEPERS_MS : SRQ_SOFT_THREAD_LOOK_MAX_MS;
    dev->thread_polls_seen = polls;
    srq_soft_thread_look_next(dev, watch, look_max);
    /* a rung doorbell whose post's poke went to a sleeper's channel
     * (soft_doorbell.c), whose owner is not asleep but polls */
    if (!watch || dev->thread_woken || srq_soft_dev_doorbells(dev)) {
        srq_soft_dev_lock(dev);
        srq_soft_stat_inc_shared(&dev->stats.thread_rounds);
        srq_soft_wake_drain(dev);
        raised = dev->events_raised;
        srq_soft_progress_beside(dev);
        /* an event we raised wakes the owner: an ACK that waits for a
         * reply to carry it (soft_resp_ack.h) may still get one - the
         * owner's next progress call or its next sleep sends it, or our
         * timer a tick from now (srq_soft_next_deadline) */
        if (dev->events_raised == raised) {
            srq_soft_progress_acks(dev);
        }
        if (!user_polls || (dev->armed_cqs != 0)) {
            srq_soft_wake_arm(dev);
            srq_soft_timer_update(dev);
        }
        ring_busy = !srq_soft_ring_empty(&dev->fab);
        srq_soft_doorbell_unlock(dev);
    }

    pfd[0].fd     = stop_fd;
    pfd[1].fd     = direct ? -1 : dev->fab.pipe_fd; /* the sleeper's poke */
    pfd[2].fd     = dev->timer_fd;
    pfd[0].events = pfd[1].events = pfd[2].events = POLLIN;
    pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
    timeout = ring_busy ? 0 :
              ((user_polls && !sleeper) || direct) ?
              (int)dev->thread_look_ms : -1;
    if ((poll(pfd, 3, timeout) < 0) && (errno != EINTR)) {
        return false; /* cannot sleep: nothing this thread can do */
    }
    dev->thread_woken = (pfd[1].revents | pfd[2].revents) & POLLIN;
    return !(pfd[0].revents & POLLIN);
}
