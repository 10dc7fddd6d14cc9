/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the progress engine (ibv_poll_cq runs it:
 * soft_cq_poll.c).
 */
#ifndef SRQ_SOFT_PROGRESS_H_
#define SRQ_SOFT_PROGRESS_H_

#include "../../dev/srq_verbs_types.h"

typedef struct srq_soft_dev srq_soft_dev_t;

/* Under dev->lock: one bounded round of everything the device owes */
void srq_soft_progress(srq_soft_dev_t *dev);
/* The same, run beside the program rather than in its poll (the device's
 * thread, a completion-channel wakeup): copies into and out of its memory
 * go through the kernel (soft_mem.h) */
void srq_soft_progress_beside(srq_soft_dev_t *dev);
/* Under dev->lock: send the ACKs owed now (before a caller may sleep) */
void srq_soft_progress_acks(srq_soft_dev_t *dev);

#endif
