/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the interface's event fd and its arming - UCT's wakeup API, on
 * which ucp_worker_wait and programs that epoll a worker's fd sleep.
 *
 * Everything that makes work for the owner must make the fd readable, or
 * make uct_iface_event_arm answer UCS_ERR_BUSY (progress, do not sleep):
 *   - a completion on the send or the receive CQ, and a handshake datagram
 *     in (REQ, REP, RTU, DISC: the handshake's CQ): the three CQs are on
 *     the interface's completion channel, armed here. A device raises the
 *     event at once for a CQ armed with completions in it (soft0 as mlx5),
 *     so none slips in between the last poll and the arm;
 *   - what UCX's async thread did for a sleeping owner and left to it (a
 *     connection it saw established or failed): the handshake's wake_fd;
 *   - a handshake's retransmission or timeout, the idle check: a timerfd,
 *     set here to the earliest of them.
 * A peer's failure, an RNR retry or a flush is the device's: it ends in a
 * completion (with an error status, for a failure) on an armed CQ.
 *
 * The fd is an epoll set of those three: UCT gives one fd per interface.
 */
#include "srq_iface_event.h"
#include "srq_limit.h"
#include "srq_hs.h"

#include <ucs/debug/log_def.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

static int uct_srq_iface_event_add(uct_srq_iface_t *iface, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

    return epoll_ctl(iface->event_fd, EPOLL_CTL_ADD, fd, &ev);
}

ucs_status_t uct_srq_iface_event_init(uct_srq_iface_t *iface)
{
    int flags, err;

    iface->timer_due = 0;
    iface->event_fd  = epoll_create1(EPOLL_CLOEXEC);
    iface->timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                     TFD_NONBLOCK | TFD_CLOEXEC);
    if ((iface->event_fd < 0) || (iface->timer_fd < 0)) {
        err = errno;
        ucs_error("srq: failed to create the interface's event fd: %s",
                  UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    }
    /* event_arm drains the channel without blocking */
    flags = fcntl(iface->channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(iface->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("srq: failed to make the completion channel non-blocking: %m");
        return UCS_ERR_IO_ERROR;
    }
    if ((uct_srq_iface_event_add(iface, iface->channel->fd) < 0) ||
        (uct_srq_iface_event_add(iface, iface->timer_fd) < 0) ||
        (uct_srq_iface_event_add(iface, iface->hs.wake_fd) < 0)) {
        ucs_error("srq: failed to build the interface's event set: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void uct_srq_iface_event_cleanup(uct_srq_iface_t *iface)
{
    if (iface->timer_fd >= 0) {
        close(iface->timer_fd);
    }
    if (iface->event_fd >= 0) {
        close(iface->event_fd);
    }
}

ucs_status_t uct_srq_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    *fd_p = iface->event_fd;
    return UCS_OK;
}

static void uct_srq_iface_event_drain_fd(int fd)
{
    uint64_t count;

    /* a count only says "look": what to do is in the state looked at */
    while (read(fd, &count, sizeof(count)) > 0) {
    }
}

/* Take the channel's events: how many, -1 on failure. Those of the
 * handshake's CQ make the next progress call look at it */
static int uct_srq_iface_event_take(uct_srq_iface_t *iface)
{
    int fired = 0;
    struct ibv_cq *cq;
    void *cq_context;
    int ret;

    while ((ret = srq_verbs_get_cq_event(iface->dev, iface->channel, &cq,
                                         &cq_context)) == 0) {
        srq_verbs_ack_cq_events(iface->dev, cq, 1);
        if (cq == iface->hs.cq) {
            uct_srq_hs_look_next(&iface->hs);
        }
        ++fired;
    }
    if (ret != EAGAIN) {
        ucs_error("srq: reading the completion channel failed: %s",
                  strerror(ret));
        return -1;
    }
    return fired;
}

/* Fire the timer at @due (a ucs_get_time() time; UCS_TIME_INFINITY: never).
 * Every arm asks: a deadline already set is not set again */
static int uct_srq_iface_event_timer(uct_srq_iface_t *iface, ucs_time_t due,
                                     ucs_time_t now)
{
    struct itimerspec its = {};
    uint64_t ns;

    if (due == iface->timer_due) {
        return 0;
    }
    iface->timer_due = due;
    if (due != UCS_TIME_INFINITY) {
        /* at least 1 ns: a zero it_value disarms the timer */
        ns = (uint64_t)(ucs_time_to_sec(due - now) * 1e9) + 1;
        its.it_value.tv_sec  = ns / 1000000000ull;
        its.it_value.tv_nsec = ns % 1000000000ull;
    }
    return timerfd_settime(iface->timer_fd, 0, &its, NULL);
}

static int uct_srq_iface_event_arm_cqs(uct_srq_iface_t *iface,
                                       unsigned events)
{
    int ret;

    /* a handshake serves sends and receives alike */
    ret = ibv_req_notify_cq(iface->hs.cq, 0);
    if ((ret == 0) && (events & UCT_EVENT_SEND_COMP)) {
        ret = ibv_req_notify_cq(iface->send_cq, 0);
    }
    if ((ret == 0) && (events & (UCT_EVENT_RECV | UCT_EVENT_RECV_SIG))) {
        ret = ibv_req_notify_cq(iface->recv_cq, 0);
    }
    return ret;
}

ucs_status_t uct_srq_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    ucs_time_t due, now = ucs_get_time();
    int fired, ret;

    /* the fds that only say "look" are read when they may have been
     * written (a read is a syscall, on the path to every sleep) */
    if ((iface->timer_due != UCS_TIME_INFINITY) &&
        (iface->timer_due <= now)) {
        uct_srq_iface_event_drain_fd(iface->timer_fd);
        iface->timer_due = 0;
    }
    if (__atomic_exchange_n(&iface->hs.wake_pending, 0, __ATOMIC_SEQ_CST)) {
        uct_srq_iface_event_drain_fd(iface->hs.wake_fd);
    }

    /* events that fired since the last arm mean completions to progress */
    fired = uct_srq_iface_event_take(iface);
    if (fired < 0) {
        return UCS_ERR_IO_ERROR;
    }
    if (fired > 0) {
        return UCS_ERR_BUSY;
    }

    due = uct_srq_hs_due(&iface->hs);
    if (due <= now) {
        uct_srq_hs_look_next(&iface->hs);
        return UCS_ERR_BUSY;
    }

    ret = uct_srq_iface_event_arm_cqs(iface, events);
    if (ret != 0) {
        ucs_error("srq: arming a CQ failed: %s", strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    if (uct_srq_iface_event_timer(iface, due, now) != 0) {
        ucs_error("srq: setting the handshake's timer failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
