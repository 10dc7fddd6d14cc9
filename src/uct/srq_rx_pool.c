/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the pool of receive descriptors (see srq_rx_pool.h).
 */
#include "srq_rx_pool.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/datastruct/mpool.inl>
#include <limits.h>

void uct_srq_rx_pool_init(uct_srq_rx_pool_t *pool, uct_iface_h iface,
                          size_t elem_size, size_t align_offset,
                          size_t alignment, unsigned floor, unsigned spare,
                          unsigned max)
{
    pool->num_tiers    = 0;
    pool->cur          = 0;
    pool->capacity     = 0;
    pool->in_use       = 0;
    pool->max          = max;
    pool->first        = ucs_min(floor + spare, max);
    pool->spare        = pool->first - ucs_min(floor, pool->first);
    pool->elem_size    = elem_size;
    pool->align_offset = align_offset;
    pool->alignment    = alignment;
    pool->iface        = iface;
}

void uct_srq_rx_pool_cleanup(uct_srq_rx_pool_t *pool)
{
    /* descriptors still posted went with their queue */
    while (pool->num_tiers > 0) {
        ucs_mpool_cleanup(&pool->tiers[--pool->num_tiers].mp, 0);
    }
    pool->capacity = 0;
}

/* A new top tier, as large as all below it but the spare: the part that
 * follows the queue's depth doubles */
static ucs_status_t uct_srq_rx_pool_add_tier(uct_srq_rx_pool_t *pool)
{
    uct_srq_rx_tier_t *tier;
    unsigned size;
    ucs_status_t status;

    if ((pool->num_tiers == UCT_SRQ_RX_POOL_TIERS) ||
        (pool->capacity >= pool->max)) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    size = (pool->num_tiers == 0) ? pool->first :
                                    ucs_max(pool->capacity - pool->spare, 1);
    size = ucs_min(size, pool->max - pool->capacity);
    tier = &pool->tiers[pool->num_tiers];
    /* one chunk, one registration: the tier can go as a whole */
    status = uct_srq_mpool_init(&tier->mp, pool->iface, pool->elem_size,
                                pool->align_offset, pool->alignment, size,
                                size,
                                "srq_rx_desc");
    if (status != UCS_OK) {
        return status;
    }

    tier->size      = size;
    tier->in_use    = 0;
    pool->capacity += size;
    ++pool->num_tiers;
    ucs_debug("srq: receive pool %p: tier %u of %u descriptors (%u in all)",
              pool, pool->num_tiers - 1, size, pool->capacity);
    return UCS_OK;
}

uct_srq_rx_desc_t *uct_srq_rx_pool_get_slow(uct_srq_rx_pool_t *pool)
{
    uct_srq_rx_desc_t *desc;

    for (;;) {
        if (pool->cur == pool->num_tiers) {
            if (uct_srq_rx_pool_add_tier(pool) != UCS_OK) {
                return NULL;
            }
        }
        desc = uct_srq_rx_pool_take(pool);
        if (desc != NULL) {
            return desc;
        }
        if (pool->tiers[pool->cur].in_use < pool->tiers[pool->cur].size) {
            return NULL; /* the chunk could not be allocated */
        }
        ++pool->cur;
    }
}

int uct_srq_rx_pool_can_shrink(const uct_srq_rx_pool_t *pool, unsigned keep)
{
    return (pool->num_tiers > 1) &&
           (pool->capacity - pool->tiers[pool->num_tiers - 1].size >= keep);
}

unsigned uct_srq_rx_pool_trim(uct_srq_rx_pool_t *pool, unsigned keep)
{
    uct_srq_rx_tier_t *top;
    unsigned n = 0;

    while (uct_srq_rx_pool_can_shrink(pool, keep)) {
        top = &pool->tiers[pool->num_tiers - 1];
        if (top->in_use != 0) {
            break;
        }
        ucs_mpool_cleanup(&top->mp, 1);
        pool->capacity -= top->size;
        --pool->num_tiers;
        pool->cur = ucs_min(pool->cur, pool->num_tiers);
        ++n;
    }
    return n;
}

size_t uct_srq_rx_pool_bytes(uct_srq_rx_pool_t *pool)
{
    size_t bytes = 0;
    unsigned t;

    for (t = 0; t < pool->num_tiers; ++t) {
        bytes += uct_srq_mpool_bytes(&pool->tiers[t].mp);
    }
    return bytes;
}
