/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the memory of an object's queues (QP send and
 * receive WQE arrays, CQ rings, SRQ rings), from the allocator of the
 * parent domain the object is in when it has one (ibv_alloc_parent_domain
 * with IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS), else soft0's own. All of
 * it is process-private (the device thread of the same process reads it;
 * peers reach a QP through the shared segment, never through its queues),
 * so a program's allocator can serve every one of these queues.
 */
#ifndef SRQ_SOFT_QBUF_H_
#define SRQ_SOFT_QBUF_H_

#include "../srq_soft_api.h"
#include "soft_pd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct srq_soft_qbuf {
    void          *ptr;        /* NULL: none */
    /* where it came from: the program's free gets exactly these back,
     * copied here so that a queue freed late (an ack still to come) does
     * not read a parent domain deallocated since; free == NULL: ours */
    void         (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
                         uint64_t resource_type);
    struct ibv_pd *pd;
    void          *pd_context;
    uint64_t       type;
} srq_soft_qbuf_t;

/* The least power of two not below @v (queue slots, ring sizes, strides:
 * an index is masked, never divided) */
static inline uint32_t srq_soft_qbuf_pow2(uint32_t v)
{
    uint32_t r = 1;

    while (r < v) {
        r <<= 1;
    }
    return r;
}

/* Does @pd (checked by the caller, or NULL) bring its own allocator? */
static inline bool srq_soft_qbuf_custom(const struct ibv_pd *pd)
{
    return (pd != NULL) && (((const srq_soft_pd_t*)pd)->alloc != NULL);
}

/* @size bytes, zeroed, aligned to @align (a power of two), for a queue of
 * @type (SRQ_SOFT_RES_TYPE_*) of an object in @pd (or NULL): 0 or ENOMEM */
int srq_soft_qbuf_alloc(struct ibv_pd *pd, size_t size, size_t align,
                        uint64_t type, srq_soft_qbuf_t *buf);

/* Gives @buf back to whoever provided it (none: nothing) */
void srq_soft_qbuf_free(srq_soft_qbuf_t *buf);

#endif
