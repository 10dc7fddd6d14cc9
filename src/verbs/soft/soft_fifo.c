/*
 * ucx-srq soft device: the wake pipe (soft_fifo.h): ours, and the poke a
 * producer gives a peer's.
 */
#define _GNU_SOURCE
#include "soft_fifo.h"
#include "soft_dev.h"
#include "soft_peer.h"
#include "soft_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

int srq_soft_fifo_create(srq_soft_dev_t *dev)
{
    int fds[2];

    /* we hold the write end too: the read end never reports EOF/POLLHUP
     * when no peer holds it open */
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        return errno;
    }
    dev->fifo_fd  = fds[0];
    dev->fifo_wfd = fds[1];
    return 0;
}

void srq_soft_fifo_destroy(srq_soft_dev_t *dev)
{
    if (dev->fifo_fd >= 0) {
        close(dev->fifo_fd);
        dev->fifo_fd = -1;
    }
    if (dev->fifo_wfd >= 0) {
        close(dev->fifo_wfd);
        dev->fifo_wfd = -1;
    }
}

/*
 * A write to a peer's pipe whose owner died (no reader left) fails with
 * EPIPE, and must not raise SIGPIPE in the program that happened to send:
 * the signal is blocked around the write and, if the write raised it,
 * taken back (unless one was pending already). Only on the slow path, when
 * the owner sleeps.
 */
static ssize_t srq_soft_fifo_write(int fd, const void *buf, size_t len)
{
    const struct timespec zero = {0, 0};
    sigset_t pipe_set, old, pending;
    int was_pending;
    ssize_t ret;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ret = write(fd, buf, len);
    if ((ret < 0) && (errno == EPIPE) && !was_pending) {
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ret;
}

/* Called after publishing a packet: the owner asked to be woken */
void srq_soft_fifo_wake(srq_soft_peer_t *peer)
{
    _Atomic uint32_t *req = (_Atomic uint32_t*)&peer->seg.hdr->wake_req;
    ssize_t ret;

    if (atomic_load_explicit(req, memory_order_acquire) == 0) {
        return; /* fast path: the owner is polling, not sleeping */
    }
    if (atomic_exchange(req, 0) == 0) {
        return; /* another producer woke it */
    }
    /* EAGAIN: the pipe is full of wakeups already */
    ret = srq_soft_fifo_write(peer->fifo_fd, "w", 1);
    (void)ret;
}

void srq_soft_fd_drain(int fd)
{
    uint8_t buf[256];

    while ((fd >= 0) && (read(fd, buf, sizeof(buf)) > 0)) {
    }
}
