/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: memory pools of registered buffers.
 */
#include "srq_mem.h"
#include "srq_limit.h"
#include "srq_ucx_compat.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/sys.h>
#include <errno.h>

/* In front of every chunk, where the mpool does not see it: how the chunk
 * was allocated and registered (uct_iface_mem_alloc) */
typedef struct uct_srq_chunk_hdr {
    uct_allocated_memory_t  mem;
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_srq_chunk_hdr_t;

typedef struct uct_srq_mpool_priv {
    uct_iface_h     iface;
    size_t          bytes;  /* registered bytes held */
} uct_srq_mpool_priv_t;

/* Memory as the interface's ALLOC methods say (huge pages, transparent
 * huge pages, mmap, heap: UCX_RC_SRQ_ALLOC), registered for the device's
 * local access only: nothing here is ever a remote target */
static ucs_status_t uct_srq_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                        void **chunk_p)
{
    uct_srq_mpool_priv_t *priv = ucs_mpool_priv(mp);
    uct_allocated_memory_t mem;
    uct_srq_chunk_hdr_t *hdr;
    ucs_status_t status;

    status = uct_iface_mem_alloc(priv->iface, *size_p + sizeof(*hdr),
                                 UCT_MD_MEM_ACCESS_LOCAL_READ |
                                 UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                                 ucs_mpool_name(mp), &mem);
    if (status == UCS_ERR_NO_MEMORY) {
        /* the methods say only "no memory": which limit, if one is set */
        ucs_error("srq: failed to allocate %zu registered bytes for %s by "
                  "any method UCX_RC_SRQ_ALLOC allows: %s",
                  *size_p + sizeof(*hdr), ucs_mpool_name(mp),
                  UCT_SRQ_STRERROR(ENOMEM));
        return status;
    } else if (status != UCS_OK) {
        ucs_error("srq: failed to allocate %zu registered bytes for %s by "
                  "any method UCX_RC_SRQ_ALLOC allows: %s",
                  *size_p + sizeof(*hdr), ucs_mpool_name(mp),
                  ucs_status_string(status));
        return status;
    }

    hdr          = mem.address;
    hdr->mem     = mem;
    priv->bytes += mem.length;
    *size_p      = mem.length - sizeof(*hdr);
    *chunk_p     = hdr + 1;
    return UCS_OK;
}

static void uct_srq_chunk_release(ucs_mpool_t *mp, void *chunk)
{
    uct_srq_mpool_priv_t *priv = ucs_mpool_priv(mp);
    uct_allocated_memory_t mem = ((uct_srq_chunk_hdr_t*)chunk - 1)->mem;

    priv->bytes -= mem.length;
    uct_iface_mem_free(&mem);
}

static void uct_srq_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_srq_chunk_hdr_t *hdr = (uct_srq_chunk_hdr_t*)chunk - 1;

    ((uct_srq_desc_t*)obj)->lkey = ((uct_srq_memh_t*)hdr->mem.memh)->lkey;
}

static ucs_mpool_ops_t uct_srq_mpool_ops = {
    .chunk_alloc   = uct_srq_chunk_alloc,
    .chunk_release = uct_srq_chunk_release,
    .obj_init      = uct_srq_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

ucs_status_t uct_srq_mpool_init(ucs_mpool_t *mp, uct_iface_h iface,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, const char *name)
{
    uct_srq_mpool_priv_t *priv;
    ucs_status_t status;

    status = uct_srq_ucs_mpool_init(mp, sizeof(*priv), elem_size,
                                    align_offset, alignment,
                                    elems_per_chunk, max_elems,
                                    &uct_srq_mpool_ops, name);
    if (status != UCS_OK) {
        return status;
    }

    priv        = ucs_mpool_priv(mp);
    priv->iface = iface;
    priv->bytes = 0;
    return UCS_OK;
}

size_t uct_srq_mpool_bytes(ucs_mpool_t *mp)
{
    return ((uct_srq_mpool_priv_t*)ucs_mpool_priv(mp))->bytes;
}
