/*
 * ucx-srq soft device: the wake FIFO. An owner about to sleep sets
 * wake_req in its segment; the next producer that queues a packet for it
 * clears the word and writes a byte to the owner's FIFO, which is in the
 * epoll set of every completion channel of the owner.
 */
#ifndef SRQ_SOFT_FIFO_H_
#define SRQ_SOFT_FIFO_H_

typedef struct srq_soft_dev  srq_soft_dev_t;
typedef struct srq_soft_peer srq_soft_peer_t;

/* Our FIFO (dev->fifo_path, dev->fifo_fd), in a private directory */
int  srq_soft_fifo_create(srq_soft_dev_t *dev);
void srq_soft_fifo_destroy(srq_soft_dev_t *dev);

/* After publishing a packet to @peer: poke its FIFO if it asked */
void srq_soft_fifo_wake(srq_soft_peer_t *peer);

/* Read everything a non-blocking wakeup fd (FIFO, eventfd, timerfd) holds */
void srq_soft_fd_drain(int fd);

#endif
