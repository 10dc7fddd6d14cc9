/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the progress thread of an instance.
 *
 * A kernel device or an HCA moves packets, fires its timers and raises
 * completion and async events with no help from the process: ACKs,
 * one-sided operations and atomics aimed at a process that never polls
 * (UCX's atomic tests' targets, a rank computing, a descheduled process
 * on a loaded machine) are answered all the same, and a peer never takes
 * a slow poller for a dead one. So each instance has a thread that runs
 * progress whenever a peer pokes the instance's wake pipe or timed work
 * falls due, and sleeps otherwise. While the owner polls, the owner's
 * polls run progress inline (the busy-polling fast path is unchanged) and
 * the thread only looks, without the lock, less and less often the longer
 * the owner keeps polling (SRQ_SOFT_THREAD_LOOK_MS to _MAX_MS), and a
 * peer whose packets wait pokes it; the device lock orders the two. While
 * the owner sleeps on the channel that holds the wake pipe (soft_cq.c), a
 * poke wakes the owner, not the thread, which again only looks.
 */
#include "soft_thread.h"
#include "../fabric/soft_report.h"
#include "../objects/soft_dev.h"
#include "soft_wait.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void *srq_soft_thread_main(void *arg)
{
    srq_soft_dev_t *dev = arg;

    while (srq_soft_wait_idle(dev, dev->thread_stop_fd)) {
    }
    return NULL;
}

int srq_soft_thread_start(srq_soft_dev_t *dev)
{
    int ret;

    dev->thread_look_ms = SRQ_SOFT_THREAD_LOOK_MS;
    dev->thread_stop_fd = eventfd(0, EFD_CLOEXEC);
    if (dev->thread_stop_fd < 0) {
        return errno;
    }
    ret = pthread_create(&dev->thread, NULL, srq_soft_thread_main, dev);
    if (ret != 0) {
        /* EAGAIN: its stack could not be mapped, or too many threads */
        srq_soft_report(ret, "starting its progress thread");
        close(dev->thread_stop_fd);
        dev->thread_stop_fd = -1;
        return ret;
    }
    dev->thread_started = true;
    return 0;
}

void srq_soft_thread_stop(srq_soft_dev_t *dev)
{
    uint64_t one = 1;
    ssize_t ret;

    if (!dev->thread_started) {
        return;
    }
    ret = write(dev->thread_stop_fd, &one, sizeof(one));
    (void)ret;
    pthread_join(dev->thread, NULL);
    close(dev->thread_stop_fd);
    dev->thread_stop_fd = -1;
    dev->thread_started = false;
}
