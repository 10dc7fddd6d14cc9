/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: device memory (ibv_alloc_dm). The device is
 * software in its owner's process, so the memory it holds is host memory
 * of that process, reached by programs only through ibv_memcpy_to_dm /
 * ibv_memcpy_from_dm and by QPs through regions registered on it. It is
 * no faster than any other host memory.
 */
#ifndef SRQ_SOFT_DM_H_
#define SRQ_SOFT_DM_H_

#include "../srq_soft_api.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What one context holds in all, as ibv_query_device_ex reports it
 * (max_dm_size): the size of an HCA's on-chip memory */
#define SRQ_SOFT_MAX_DM_SIZE    (256u * 1024u)
/* ibv_memcpy_to_dm / _from_dm offsets and lengths: multiples of this, as
 * HCAs' device memory is reached in 32-bit words */
#define SRQ_SOFT_DM_WORD        4u
/* The largest alignment ibv_alloc_dm honours (log_align_req): a page */
#define SRQ_SOFT_DM_MAX_LOG_ALIGN 12u

typedef struct srq_soft_dm {
    struct ibv_dm     ibv;
    void             *buf;      /* the memory: never handed out */
    size_t            length;   /* as asked for */
    size_t            charged;  /* what it takes of the context's capacity */
    _Atomic uint32_t  users;    /* regions registered on it */
} srq_soft_dm_t;

/* The verbs (ibv_alloc_dm, ibv_free_dm, ibv_reg_dm_mr): srq_soft_api.h */

#endif
