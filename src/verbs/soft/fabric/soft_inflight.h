/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: one-sided accesses in flight. A one-sided RDMA
 * WRITE or READ is done by the requester's CPU in the target's memory
 * (cross-memory attach), so the target cannot stop it by itself: the
 * requester announces each access in its own tables (what it targets,
 * with which rkey, through which QP), and checks the target's tables only
 * after that. A target that revokes a key (ibv_dereg_mr) or a QP
 * (destroy, reset) first withdraws it from its tables, then waits until
 * no peer announces an access under it: an access either saw the
 * withdrawal and did nothing, or it ends before the revoking call returns.
 * Accesses are copied in chunks (SRQ_SOFT_INFLIGHT_CHUNK), each checked
 * again, so the wait is one chunk at most.
 */
#ifndef SRQ_SOFT_INFLIGHT_H_
#define SRQ_SOFT_INFLIGHT_H_

#include <stdint.h>

typedef struct srq_soft_fab  srq_soft_fab_t;
typedef struct srq_soft_peer srq_soft_peer_t;

/* Bytes one chunk of a one-sided access moves: what a revoking call may
 * wait for. Each chunk is one process_vm_* call, so smaller chunks cost
 * large transfers a system call each where UCX's cma copies a message in
 * one; bench/report's put_bw and get rows beside cma show what this size
 * costs */
#define SRQ_SOFT_INFLIGHT_CHUNK  (1024u * 1024)

/* Announce an access into @target's memory with @key through its QP @qpn
 * (before checking the target's tables), and its end (after the copy) */
void srq_soft_inflight_begin(srq_soft_fab_t *fab, const uint8_t *target,
                             uint32_t key, uint32_t qpn);
void srq_soft_inflight_end(srq_soft_fab_t *fab);

/* The revoking side, after withdrawing @key (or the QP @qpn; 0: no such
 * condition) from our tables: wait until @peer announces no access into
 * us under it. A dead peer writes nothing: no wait. */
void srq_soft_inflight_wait(srq_soft_fab_t *fab, srq_soft_peer_t *peer,
                            uint32_t key, uint32_t qpn);
/* ... for every peer we have mapped */
void srq_soft_inflight_wait_all(srq_soft_fab_t *fab, uint32_t key);

#endif
