/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: an instance's shared memory (its layout:
 * soft_seg.h): making ours, mapping a peer's.
 */
#ifndef SRQ_SOFT_SHM_H_
#define SRQ_SOFT_SHM_H_

#include "soft_seg.h"

#include <stddef.h>
#include <stdint.h>

typedef struct srq_soft_fab srq_soft_fab_t;

/* Create and map the instance's own tables and queue (fab->seg,
 * fab->tab_fd, fab->queue_fd); the wake pipe exists already */
int  srq_soft_shm_create(srq_soft_fab_t *fab);
void srq_soft_shm_destroy(srq_soft_fab_t *fab);
/* Map the live instance @instance; *wake_fd_p: the write end of its wake
 * pipe, opened */
int  srq_soft_shm_map_peer(const uint8_t *instance, srq_soft_seg_t *seg,
                           int *wake_fd_p);
void srq_soft_shm_unmap(srq_soft_seg_t *seg);
/* Where a peer opens our tables: "/proc/<pid>/fd/<n>" */
int  srq_soft_shm_path(srq_soft_fab_t *fab, char *buf, size_t len);

#endif
