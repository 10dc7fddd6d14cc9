/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the wake pipe (soft_pipe.h): ours, and the poke a
 * producer gives a peer's.
 */
#define _GNU_SOURCE
#include "soft_pipe.h"
#include "soft_fab.h"
#include "soft_peer.h"
#include "soft_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

int srq_soft_pipe_create(srq_soft_fab_t *fab)
{
    int fds[2];

    /* we hold the write end too: the read end never reports EOF/POLLHUP
     * when no peer holds it open */
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        return errno;
    }
    fab->pipe_fd  = fds[0];
    fab->pipe_wfd = fds[1];
    return 0;
}

void srq_soft_pipe_destroy(srq_soft_fab_t *fab)
{
    if (fab->pipe_fd >= 0) {
        close(fab->pipe_fd);
        fab->pipe_fd = -1;
    }
    if (fab->pipe_wfd >= 0) {
        close(fab->pipe_wfd);
        fab->pipe_wfd = -1;
    }
}

/* Called after publishing a packet: the owner asked to be woken */
void srq_soft_pipe_wake(srq_soft_peer_t *peer)
{
    _Atomic uint32_t *req = (_Atomic uint32_t*)&peer->seg.hdr->wake_req;

    /* No fence (a busy sender would pay it on every packet): an owner
     * that asks after our claim orders itself with us through the queue's
     * lock and waits for our frame (srq_soft_wake_arm) */
    if (atomic_load_explicit(req, memory_order_acquire) == 0) {
        return; /* fast path: the owner is polling, not sleeping */
    }
    if (atomic_exchange(req, 0) == 0) {
        return; /* another producer woke it */
    }
    srq_soft_pipe_nudge(peer);
}

void srq_soft_pipe_nudge(srq_soft_peer_t *peer)
{
    ssize_t ret;

    if (peer->pipe_fd < 0) {
        return; /* ourselves: we are running */
    }
    /* EAGAIN: the pipe is full of wakeups already */
    ret = write(peer->pipe_fd, "w", 1);
    (void)ret;
}

void srq_soft_pipe_poke(srq_soft_fab_t *fab)
{
    ssize_t ret = write(fab->pipe_wfd, "w", 1); /* EAGAIN: poked already */

    (void)ret;
}

void srq_soft_fd_drain(int fd)
{
    uint8_t buf[256];

    while ((fd >= 0) && (read(fd, buf, sizeof(buf)) > 0)) {
    }
}
