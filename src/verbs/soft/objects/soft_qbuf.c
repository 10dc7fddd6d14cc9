/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: queue memory from a parent domain's allocator
 * (soft_qbuf.h).
 */
#include "soft_qbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int srq_soft_qbuf_alloc(struct ibv_pd *ibpd, size_t size, size_t align,
                        uint64_t type, srq_soft_qbuf_t *buf)
{
    srq_soft_pd_t *pd = (srq_soft_pd_t*)ibpd;
    void *ptr         = IBV_ALLOCATOR_USE_DEFAULT;

    memset(buf, 0, sizeof(*buf));
    if (srq_soft_qbuf_custom(ibpd)) {
        ptr = pd->alloc(ibpd, pd->pd_context, size, align, type);
        if (ptr == NULL) {
            return ENOMEM; /* the program's allocator refused */
        }
    }
    if (ptr != IBV_ALLOCATOR_USE_DEFAULT) {
        buf->free       = pd->free;
        buf->pd         = ibpd;
        buf->pd_context = pd->pd_context;
    } else if (posix_memalign(&ptr, align, size) != 0) {
        return ENOMEM;
    }
    /* the program's memory comes as it comes: a queue starts empty */
    memset(ptr, 0, size);
    buf->ptr  = ptr;
    buf->type = type;
    return 0;
}

void srq_soft_qbuf_free(srq_soft_qbuf_t *buf)
{
    if (buf->ptr == NULL) {
        return;
    }
    if (buf->free != NULL) {
        buf->free(buf->pd, buf->pd_context, buf->ptr, buf->type);
    } else {
        free(buf->ptr);
    }
    buf->ptr = NULL;
}
