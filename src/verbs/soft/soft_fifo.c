/*
 * ucx-srq soft device: the wake FIFO (soft_fifo.h): ours, created in a
 * private directory and named in our segment, and the poke a producer
 * gives a peer's.
 */
#include "soft_fifo.h"
#include "soft_dev.h"
#include "soft_peer.h"
#include "soft_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A private directory of our own, made by mkdtemp: mode 0700, under a name
 * nobody can guess and so create first. (A fixed /tmp/srq-soft-<uid> could
 * be created by another user before us, and then every open failed.)
 */
static int srq_soft_fifo_dir(char *buf, size_t len)
{
    const char *base = getenv("XDG_RUNTIME_DIR");

    if ((base == NULL) || (base[0] != '/') || (access(base, W_OK) != 0)) {
        base = "/tmp";
    }
    if (snprintf(buf, len, "%s/srq-soft-XXXXXX", base) >= (int)len) {
        return ENAMETOOLONG;
    }
    return (mkdtemp(buf) == NULL) ? errno : 0;
}

int srq_soft_fifo_create(srq_soft_dev_t *dev)
{
    char dir[96], hex[2 * SRQ_SOFT_INST_LEN + 1];
    int ret, i;

    ret = srq_soft_fifo_dir(dir, sizeof(dir));
    if (ret != 0) {
        return ret;
    }
    for (i = 0; i < SRQ_SOFT_INST_LEN; ++i) {
        snprintf(hex + 2 * i, 3, "%02x", dev->instance[i]);
    }
    if (strlen(dir) + 1 + strlen(hex) >= sizeof(dev->fifo_path)) {
        rmdir(dir);
        return ENAMETOOLONG;
    }
    strcpy(dev->fifo_path, dir);
    strcat(dev->fifo_path, "/");
    strcat(dev->fifo_path, hex);
    if (mkfifo(dev->fifo_path, 0600) < 0) {
        ret = errno;
        rmdir(dir);
        return ret;
    }
    /* O_RDWR: we are always a writer too, so the read end never reports
     * EOF/POLLHUP when no peer holds it open */
    dev->fifo_fd = open(dev->fifo_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (dev->fifo_fd < 0) {
        ret = errno;
        srq_soft_unlink_with_dir(dev->fifo_path);
        return ret;
    }
    return 0;
}

void srq_soft_fifo_destroy(srq_soft_dev_t *dev)
{
    if (dev->fifo_fd >= 0) {
        close(dev->fifo_fd);
        dev->fifo_fd = -1;
        srq_soft_unlink_with_dir(dev->fifo_path);
    }
}

static int srq_soft_fifo_open(srq_soft_peer_t *peer)
{
    const char *path = peer->seg.hdr->fifo_path;
    char copy[sizeof(peer->seg.hdr->fifo_path)];

    /* the path comes from shared memory: take a bounded copy */
    memcpy(copy, path, sizeof(copy));
    copy[sizeof(copy) - 1] = '\0';
    if (copy[0] != '/') {
        return -1;
    }
    peer->fifo_fd = open(copy, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    return peer->fifo_fd;
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
    if ((peer->fifo_fd < 0) && (srq_soft_fifo_open(peer) < 0)) {
        return;
    }
    /* EAGAIN: the FIFO is full of wakeups already */
    ret = write(peer->fifo_fd, "w", 1);
    (void)ret;
}

void srq_soft_fd_drain(int fd)
{
    uint8_t buf[256];

    while ((fd >= 0) && (read(fd, buf, sizeof(buf)) > 0)) {
    }
}
