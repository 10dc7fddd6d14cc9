/*
 * ucx-srq: memory pools of registered buffers.
 */
#include "srq_mem.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/sys.h>
#include <sys/mman.h>

/* In front of every chunk, where the mpool does not see it */
typedef struct uct_srq_chunk_hdr {
    struct ibv_mr  *mr;
    size_t          size;   /* of the whole mapping, header included */
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_srq_chunk_hdr_t;

typedef struct uct_srq_mpool_priv {
    uct_srq_md_t   *md;
    size_t          bytes;  /* registered bytes held */
} uct_srq_mpool_priv_t;

static ucs_status_t uct_srq_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                        void **chunk_p)
{
    uct_srq_mpool_priv_t *priv = ucs_mpool_priv(mp);
    uct_srq_chunk_hdr_t *hdr;
    size_t size;

    size = ucs_align_up(*size_p + sizeof(*hdr), ucs_get_page_size());
    hdr  = mmap(NULL, size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hdr == MAP_FAILED) {
        ucs_error("srq: failed to allocate %zu bytes for %s: %m", size,
                  ucs_mpool_name(mp));
        return UCS_ERR_NO_MEMORY;
    }

    hdr->mr = srq_verbs_reg_mr(priv->md->dev, priv->md->pd, hdr, size,
                               IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ);
    if (hdr->mr == NULL) {
        ucs_error("srq: failed to register %zu bytes for %s: %m", size,
                  ucs_mpool_name(mp));
        munmap(hdr, size);
        return UCS_ERR_IO_ERROR;
    }

    hdr->size    = size;
    priv->bytes += size;
    *size_p      = size - sizeof(*hdr);
    *chunk_p     = hdr + 1;
    return UCS_OK;
}

static void uct_srq_chunk_release(ucs_mpool_t *mp, void *chunk)
{
    uct_srq_mpool_priv_t *priv = ucs_mpool_priv(mp);
    uct_srq_chunk_hdr_t *hdr   = (uct_srq_chunk_hdr_t*)chunk - 1;

    srq_verbs_dereg_mr(priv->md->dev, hdr->mr);
    priv->bytes -= hdr->size;
    munmap(hdr, hdr->size);
}

static void uct_srq_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_srq_chunk_hdr_t *hdr = (uct_srq_chunk_hdr_t*)chunk - 1;

    ((uct_srq_desc_t*)obj)->lkey = hdr->mr->lkey;
}

static ucs_mpool_ops_t uct_srq_mpool_ops = {
    .chunk_alloc   = uct_srq_chunk_alloc,
    .chunk_release = uct_srq_chunk_release,
    .obj_init      = uct_srq_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

ucs_status_t uct_srq_mpool_init(ucs_mpool_t *mp, uct_srq_md_t *md,
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
    priv->md    = md;
    priv->bytes = 0;
    return UCS_OK;
}

size_t uct_srq_mpool_bytes(ucs_mpool_t *mp)
{
    return ((uct_srq_mpool_priv_t*)ucs_mpool_priv(mp))->bytes;
}
