/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the progress thread of an instance (every instance has one).
 */
#ifndef SRQ_SOFT_THREAD_H_
#define SRQ_SOFT_THREAD_H_

typedef struct srq_soft_dev srq_soft_dev_t;

/* Start it (0 or an errno value); stop and join it (nothing if not
 * started) */
int  srq_soft_thread_start(srq_soft_dev_t *dev);
void srq_soft_thread_stop(srq_soft_dev_t *dev);

#endif
