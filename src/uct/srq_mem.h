/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: memory pools of registered buffers (receive and send
 * descriptors). Each chunk is registered once with the device; objects
 * learn their chunk's lkey when first created.
 */
#ifndef UCT_SRQ_MEM_H_
#define UCT_SRQ_MEM_H_

#include "srq_memh.h"

#include <uct/base/uct_iface.h>

#include <ucs/datastruct/mpool.h>

/* Every pooled descriptor starts with this */
typedef struct uct_srq_desc {
    uint32_t  lkey;
} uct_srq_desc_t;

/*
 * Create a pool of objects of @elem_size bytes in memory @iface allocates
 * and registers (its ALLOC methods, its md) (each starting with a
 * uct_srq_desc_t). @align_offset is the offset in the object that is
 * aligned to @alignment (a power of 2; the start of the data area).
 * @max_elems may be UINT_MAX for no limit.
 */
ucs_status_t uct_srq_mpool_init(ucs_mpool_t *mp, uct_iface_h iface,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, const char *name);

/* Bytes of registered memory the pool holds now (all chunks) */
size_t uct_srq_mpool_bytes(ucs_mpool_t *mp);

#endif
