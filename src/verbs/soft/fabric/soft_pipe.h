/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the wake pipe. An owner about to sleep sets
 * wake_req in its queue's header; the next producer that queues a packet
 * for it clears the word and writes a byte into the owner's pipe, whose
 * read end is in the epoll set of every completion channel of the owner.
 * The pipe is anonymous: a peer opens its write end through
 * /proc/<owner pid>/fd (soft_shm.c), so it has no name to leave behind.
 */
#ifndef SRQ_SOFT_PIPE_H_
#define SRQ_SOFT_PIPE_H_

typedef struct srq_soft_fab  srq_soft_fab_t;
typedef struct srq_soft_peer srq_soft_peer_t;

/* Our pipe (fab->pipe_fd: the read end, fab->pipe_wfd: the write end) */
int  srq_soft_pipe_create(srq_soft_fab_t *fab);
void srq_soft_pipe_destroy(srq_soft_fab_t *fab);

/* After publishing a packet to @peer: poke its pipe if it asked */
void srq_soft_pipe_wake(srq_soft_peer_t *peer);

/* Poke @peer's pipe whether or not it asked: its device stopped moving
 * while our packets wait in its queue (soft_progress.c) */
void srq_soft_pipe_nudge(srq_soft_peer_t *peer);

/* Poke our own pipe: whoever watches it (the progress thread, or a
 * sleeper on the channel that holds it) runs the device */
void srq_soft_pipe_poke(srq_soft_fab_t *fab);

/* Read everything a non-blocking wakeup fd (pipe, eventfd, timerfd) holds */
void srq_soft_fd_drain(int fd);

#endif
