/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the pool of receive descriptors, a stack of ucs_mpools ("tiers")
 * that can give memory back.
 *
 * A ucs_mpool never frees a chunk before it is destroyed, so one pool would
 * keep the peak of a burst forever. Here each tier is a ucs_mpool of one
 * registered chunk. Tier 0 holds a queue's floor plus some spare; each tier
 * after it doubles the rest (floor, floor, 2 floor, 4 floor...), so the pool
 * follows a queue depth that doubles and halves, with the same spare on
 * top. A tier is added when the others are exhausted, descriptors are taken
 * from the lowest tier that has one, and the top tier is destroyed once
 * none of its descriptors is in use and the tiers below hold enough.
 */
#ifndef UCT_SRQ_RX_POOL_H_
#define UCT_SRQ_RX_POOL_H_

#include "srq_mem.h"

#include <ucs/datastruct/mpool.inl>

#define UCT_SRQ_RX_POOL_TIERS  20

typedef struct uct_srq_rx_rq uct_srq_rx_rq_t;

/* Head of every receive descriptor */
typedef struct uct_srq_rx_desc {
    uct_srq_desc_t    super;  /* lkey of its chunk */
    uint32_t          tier;   /* the tier it belongs to */
    uct_srq_rx_rq_t  *rq;     /* per-QP mode: the queue it is posted to */
} uct_srq_rx_desc_t;

typedef struct uct_srq_rx_tier {
    ucs_mpool_t  mp;
    unsigned     size;    /* descriptors */
    unsigned     in_use;  /* taken and not returned */
} uct_srq_rx_tier_t;

typedef struct uct_srq_rx_pool {
    uct_srq_rx_tier_t  tiers[UCT_SRQ_RX_POOL_TIERS];
    unsigned           num_tiers;
    unsigned           cur;       /* no free descriptor below this tier */
    unsigned           capacity;  /* descriptors in all tiers */
    unsigned           in_use;    /* of them, taken */
    unsigned           max;       /* capacity limit */
    unsigned           first;     /* size of tier 0 */
    unsigned           spare;     /* of it, beyond the queue's floor */
    size_t             elem_size;
    size_t             align_offset;
    size_t             alignment;
    uct_iface_h        iface;     /* allocates and registers the tiers */
} uct_srq_rx_pool_t;

/* Tier 0 holds @floor + @spare descriptors; the pool never exceeds @max
 * (UINT_MAX: no limit); offset @align_offset of a descriptor is aligned to
 * @alignment (a power of 2). Nothing is allocated until the first get. */
void uct_srq_rx_pool_init(uct_srq_rx_pool_t *pool, uct_iface_h iface,
                          size_t elem_size, size_t align_offset,
                          size_t alignment, unsigned floor, unsigned spare,
                          unsigned max);
void uct_srq_rx_pool_cleanup(uct_srq_rx_pool_t *pool);

/* Slow path of uct_srq_rx_pool_get: a tier to add or to move up to */
uct_srq_rx_desc_t *uct_srq_rx_pool_get_slow(uct_srq_rx_pool_t *pool);

/* A descriptor of the current tier, NULL if it has none free (or its
 * chunk could not be allocated) */
static UCS_F_ALWAYS_INLINE uct_srq_rx_desc_t *
uct_srq_rx_pool_take(uct_srq_rx_pool_t *pool)
{
    uct_srq_rx_tier_t *tier = &pool->tiers[pool->cur];
    uct_srq_rx_desc_t *desc;

    if (tier->in_use >= tier->size) {
        return NULL;
    }
    desc = (uct_srq_rx_desc_t*)ucs_mpool_get_inline(&tier->mp);
    if (ucs_unlikely(desc == NULL)) {
        return NULL;
    }
    desc->tier = pool->cur;
    ++tier->in_use;
    ++pool->in_use;
    return desc;
}

/* A descriptor, or NULL when the pool is at its limit (or out of memory).
 * Inline: one per message received */
static UCS_F_ALWAYS_INLINE uct_srq_rx_desc_t *
uct_srq_rx_pool_get(uct_srq_rx_pool_t *pool)
{
    uct_srq_rx_desc_t *desc;

    if (ucs_likely(pool->cur < pool->num_tiers)) {
        desc = uct_srq_rx_pool_take(pool);
        if (ucs_likely(desc != NULL)) {
            return desc;
        }
    }
    return uct_srq_rx_pool_get_slow(pool);
}

static UCS_F_ALWAYS_INLINE void
uct_srq_rx_pool_put(uct_srq_rx_pool_t *pool, uct_srq_rx_desc_t *desc)
{
    unsigned t = desc->tier;

    --pool->tiers[t].in_use;
    --pool->in_use;
    ucs_mpool_put_inline(desc);
    if (t < pool->cur) {
        pool->cur = t;
    }
}

/* Destroy unused top tiers as long as at least @keep descriptors remain;
 * returns how many tiers went */
unsigned uct_srq_rx_pool_trim(uct_srq_rx_pool_t *pool, unsigned keep);

/* Would trimming to @keep free a tier, were its descriptors back? */
int uct_srq_rx_pool_can_shrink(const uct_srq_rx_pool_t *pool, unsigned keep);

/* Registered bytes the pool holds */
size_t uct_srq_rx_pool_bytes(uct_srq_rx_pool_t *pool);

#endif
