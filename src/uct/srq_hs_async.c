/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: UCX's async thread looks at interfaces whose owner does not
 * progress them (ASYNC_INTERVAL), and answers their peers' handshakes.
 */
#include "srq_hs_async.h"
#include "srq_async.h"
#include "srq_limit.h"
#include "srq_conn.h"
#include "srq_hs.h"
#include "srq_hs_rx.h"

#include <ucs/debug/log_def.h>
#include <ucs/async/async_fwd.h>
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Polls of the handshake CQ per look (each also runs the built-in soft
 * device: up to 64 packets) */
#define UCT_SRQ_HS_ASYNC_POLLS 16

/*
 * One timer for all interfaces of the process, ticking at the
 * ASYNC_INTERVAL of the first interface; each interface is looked at once
 * per its own interval, at the tick after it is due. The list's lock is
 * held through a tick: an interface that left the list is not looked at
 * any more.
 *
 * The timer is a timerfd that UCX's async thread waits on as an event, not
 * one of UCX's own timers: UCX 1.13's thread sleeps only in whole
 * milliseconds towards its next timer and spins through the last one
 * (epoll_wait with a timeout of 0), about a tenth of a core per process
 * at a 10 ms interval - an idle MPI rank would burn it. A timerfd lets the
 * thread sleep until it fires.
 */
static struct {
    pthread_mutex_t  lock;
    ucs_list_link_t  ifaces;     /* uct_srq_hs_t.async_link */
    int              timer_fd;   /* -1: none */
} uct_srq_hs_async = {
    .lock     = PTHREAD_MUTEX_INITIALIZER,
    .ifaces   = UCS_LIST_INITIALIZER(&uct_srq_hs_async.ifaces,
                                     &uct_srq_hs_async.ifaces),
    .timer_fd = -1
};

static void uct_srq_hs_async_wake(uct_srq_hs_t *hs)
{
    uint64_t one = 1;

    /* before the write: the owner drains the fd only when it sees this */
    __atomic_store_n(&hs->wake_pending, 1, __ATOMIC_SEQ_CST);
    if (write(hs->wake_fd, &one, sizeof(one)) < 0) {
        ucs_assert(errno == EAGAIN); /* the count is full: it is readable */
    }
}

/*
 * An owner that progressed since the last look answers its peers itself,
 * at its next call: however seldom it calls (an oversubscribed rank that
 * yields between calls), its peers wait an interval, not 1024 of its calls.
 * Otherwise take the handshake's datagrams for it - polling a CQ also runs
 * the built-in soft device, which serves one-sided operations at us -
 * unless the owner holds the lock.
 */
static void uct_srq_hs_async_look(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs    = &iface->hs;
    unsigned long calls = __atomic_load_n(&iface->progress_calls,
                                          __ATOMIC_RELAXED);
    unsigned i;

    if ((calls != hs->progress_seen) ||
        (pthread_mutex_trylock(&hs->lock) != 0)) {
        hs->progress_seen = calls;
        uct_srq_hs_look_next(hs);
        return;
    }
    uct_srq_hs_in_async = 1;
    for (i = 0; i < UCT_SRQ_HS_ASYNC_POLLS; ++i) {
        uct_srq_hs_poll(iface);
    }
    uct_srq_hs_in_async = 0;
    pthread_mutex_unlock(&hs->lock);
    /* what it left for the owner wakes an owner asleep on the interface's
     * event fd (uct_srq_iface_event_arm saw nothing left when it slept) */
    if (__atomic_load_n(&hs->async_left, __ATOMIC_RELAXED)) {
        uct_srq_hs_async_wake(hs);
    }
}

static void uct_srq_hs_async_tick(int id, ucs_event_set_types_t events,
                                  void *arg)
{
    ucs_time_t now = ucs_get_time();
    uint64_t expirations;
    uct_srq_hs_t *hs;

    /* take the expirations: the fd would stay readable otherwise (none
     * when another thread took them first, a nonblocking read) */
    if (read(id, &expirations, sizeof(expirations)) < 0) {
        ucs_assert((errno == EAGAIN) || (errno == EINTR));
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    ucs_list_for_each(hs, &uct_srq_hs_async.ifaces, async_link) {
        if (now >= hs->next_look) {
            hs->next_look = now + hs->config.async_interval;
            uct_srq_hs_async_look(ucs_container_of(hs, uct_srq_iface_t, hs));
        }
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
}

/* The periodic timerfd and its handler on UCX's async thread; called
 * with the list's lock held */
static ucs_status_t uct_srq_hs_async_timer_start(ucs_time_t interval)
{
    uint64_t ns = (uint64_t)(ucs_time_to_sec(interval) * UCS_NSEC_PER_SEC);
    char why[2 * UCT_SRQ_STRERROR_MAX];
    struct itimerspec its;
    ucs_status_t status;
    int fd, err;

    fd  = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    err = errno;
    if ((fd < 0) && uct_srq_err_is_limit(err)) {
        ucs_error("srq: failed to create the handshake's async timer: %s",
                  UCT_SRQ_STRERROR(err));
        return uct_srq_err_status(err, UCS_ERR_IO_ERROR);
    } else if (fd < 0) {
        ucs_diag("srq: timerfd_create: %s", strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    its.it_interval.tv_sec  = ns / UCS_NSEC_PER_SEC;
    its.it_interval.tv_nsec = ns % UCS_NSEC_PER_SEC;
    its.it_value            = its.it_interval;
    if (timerfd_settime(fd, 0, &its, NULL) < 0) {
        ucs_diag("srq: timerfd_settime: %m");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }
    status = uct_srq_async_add_fd(fd, uct_srq_hs_async_tick, NULL, why,
                                  sizeof(why));
    if (status != UCS_OK) {
        if ((status == UCS_ERR_NO_RESOURCE) || (status == UCS_ERR_NO_MEMORY)) {
            ucs_error("srq: UCX's async thread could not start: %s", why);
        }
        close(fd);
        return status;
    }
    uct_srq_hs_async.timer_fd = fd;
    return UCS_OK;
}

ucs_status_t uct_srq_hs_async_start(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs    = &iface->hs;
    ucs_status_t status = UCS_OK;

    /* per-QP receive queues come from the owner's pool: no answers from
     * the async thread then */
    if (iface->rx.srq == NULL) {
        return UCS_OK;
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    if (uct_srq_hs_async.timer_fd < 0) {
        status = uct_srq_hs_async_timer_start(hs->config.async_interval);
    }
    if (status == UCS_OK) {
        hs->next_look     = ucs_get_time() + hs->config.async_interval;
        /* the first look compares with the owner's calls until now */
        hs->progress_seen = __atomic_load_n(&iface->progress_calls,
                                            __ATOMIC_RELAXED);
        ucs_list_add_tail(&uct_srq_hs_async.ifaces, &hs->async_link);
        hs->async_on  = 1;
    } else if ((status != UCS_ERR_NO_RESOURCE) &&
               (status != UCS_ERR_NO_MEMORY)) {
        ucs_diag("srq: no async handshake answers (%s): an owner that does "
                 "not progress leaves its peers waiting",
                 ucs_status_string(status));
        status = UCS_OK;
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
    /* a limit of ours refuses the interface (said above): one that cannot
     * answer its peers while its owner is busy would see them time out,
     * for the wrong cause */
    return status;
}

void uct_srq_hs_async_stop(uct_srq_iface_t *iface)
{
    int timer_fd = -1;

    if (!iface->hs.async_on) {
        return;
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    ucs_list_del(&iface->hs.async_link);
    iface->hs.async_on = 0;
    if (ucs_list_is_empty(&uct_srq_hs_async.ifaces)) {
        timer_fd                  = uct_srq_hs_async.timer_fd;
        uct_srq_hs_async.timer_fd = -1;
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
    /* outside the lock: a tick under way takes it. Removed (and waited
     * for) before it is closed: the number is not reused under a tick */
    if (timer_fd >= 0) {
        uct_srq_async_remove_fd(timer_fd);
        close(timer_fd);
    }
}
