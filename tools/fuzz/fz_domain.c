/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: thread domains and parent domains. Refused allocations,
 * each the contract's failure, and one whole life: a TD (or none), a
 * parent domain on the scene's PD with the fuzzer's allocators (or the
 * device's), an SRQ made in it, the EBUSYs while it lives, and every
 * block the allocator gave back once the SRQ is gone. Each op frees what
 * it allocated. The scene (fz_scene.c) makes its SRQ, QPs and AH in a
 * parent domain some iterations, through fz_domain_scene_create().
 */
#include "fz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void *fz_domain_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
                             size_t alignment, uint64_t resource_type)
{
    fz_domain_heap_t *h = pd_context;
    void *p = NULL;

    (void)resource_type;
    if (posix_memalign(&p, (alignment < sizeof(void*)) ? sizeof(void*) :
                       alignment, size ? size : 1) != 0) {
        return NULL;
    }
    h->allocs++;
    h->foreign += (pd != h->pd) && (h->pd != NULL);
    return p;
}

static void fz_domain_free(struct ibv_pd *pd, void *pd_context, void *ptr,
                           uint64_t resource_type)
{
    fz_domain_heap_t *h = pd_context;

    (void)resource_type;
    h->frees++;
    h->foreign += (pd != h->pd);
    free(ptr);
}

static struct ibv_pd *fz_domain_parent(fz_t *fz, struct ibv_pd *pd,
                                       struct ibv_td *td, uint32_t comp_mask,
                                       fz_domain_heap_t *heap, bool alloc,
                                       bool free_)
{
    struct ibv_parent_domain_init_attr attr = {
        .pd = pd, .td = td, .comp_mask = comp_mask,
        .alloc = alloc ? fz_domain_alloc : NULL,
        .free  = free_ ? fz_domain_free : NULL,
        .pd_context = heap
    };

    errno = 0;
    return FZ_BE(fz, alloc_parent_domain, &attr);
}

/* A refused allocation: an unknown comp_mask bit, a parent domain as the
 * protection PD, allocators with one callback only, a TD with a mask */
static void fz_domain_bad(fz_t *fz, fz_domain_heap_t *heap)
{
    const uint32_t both = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                          IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    struct ibv_td_init_attr tattr = { 1u << fz_range(&fz->rnd, 0, 31) };
    struct ibv_pd *parent, *pd;
    struct ibv_td *td;

    switch (fz_range(&fz->rnd, 0, 3)) {
    case 0:
        pd = fz_domain_parent(fz, fz->pd, NULL,
                              1u << fz_range(&fz->rnd, 2, 31), heap, 0, 0);
        fz_create_fails(fz, FZ_F(ibv_alloc_parent_domain, comp_mask_invalid),
                        pd, errno);
        break;
    case 1:
        parent = fz_domain_parent(fz, fz->pd, NULL, 0, heap, 0, 0);
        if (!fz_ok(fz, "ibv_alloc_parent_domain",
                   (parent != NULL) ? 0 : errno)) {
            return;
        }
        pd = fz_domain_parent(fz, parent, NULL, 0, heap, 0, 0);
        fz_create_fails(fz, FZ_F(ibv_alloc_parent_domain, pd_invalid), pd,
                        errno);
        fz_ok(fz, "ibv_dealloc_pd", FZ_BE(fz, dealloc_pd, parent));
        break;
    case 2:
        pd = fz_domain_parent(fz, fz->pd, NULL, both, heap,
                              fz_chance(&fz->rnd, 50), 0);
        if (pd == NULL) {
            fz_create_fails(fz, FZ_F(ibv_alloc_parent_domain,
                                     allocators_incomplete), pd, errno);
            break;
        }
        fz_violation(fz, "ibv_alloc_parent_domain allocators_incomplete",
                     "a parent domain with free NULL was made");
        FZ_BE(fz, dealloc_pd, pd);
        break;
    default:
        errno = 0;
        td    = FZ_BE(fz, alloc_td, &tattr);
        fz_create_fails(fz, FZ_F(ibv_alloc_td, comp_mask_invalid), td, errno);
        break;
    }
}

/* An SRQ in @parent: the domain cannot go while it lives; with the
 * fuzzer's allocators its ring came from them and goes back to them */
static void fz_domain_srq(fz_t *fz, struct ibv_pd *parent,
                          fz_domain_heap_t *heap, bool allocators)
{
    struct ibv_srq_init_attr attr = { .attr = { .max_wr = 8, .max_sge = 1 } };
    struct ibv_srq *srq;

    errno = 0;
    srq   = FZ_BE(fz, create_srq, parent, &attr);
    if (!fz_ok(fz, "ibv_create_srq in a parent domain",
               (srq != NULL) ? 0 : errno)) {
        return;
    }
    if (allocators) {
        fz_post(fz, FZ_P(ibv_alloc_parent_domain, allocator_result),
                heap->allocs > 0, "an SRQ in the domain took nothing "
                "from its allocator");
    }
    fz_fails(fz, FZ_F(ibv_dealloc_pd, in_use), FZ_BE(fz, dealloc_pd, parent));
    fz_ok(fz, "ibv_destroy_srq", FZ_BE(fz, destroy_srq, srq));
    fz_post(fz, FZ_P(ibv_alloc_parent_domain, allocator_result),
            (heap->allocs == heap->frees) && (heap->foreign == 0),
            "allocator: %lu blocks given, %lu back, %lu for another domain",
            heap->allocs, heap->frees, heap->foreign);
}

void fz_domain(fz_t *fz)
{
    fz_domain_heap_t heap = { 0 };
    struct ibv_td_init_attr tattr = { 0 };
    struct ibv_td *td = NULL;
    struct ibv_pd *parent;
    bool allocators;

    if (fz_chance(&fz->rnd, 30)) {
        fz_domain_bad(fz, &heap);
        return;
    }
    if (fz_chance(&fz->rnd, 50)) {
        errno = 0;
        td    = FZ_BE(fz, alloc_td, &tattr);
        if (!fz_ok(fz, "ibv_alloc_td", (td != NULL) ? 0 : errno)) {
            return;
        }
    }
    allocators = fz_chance(&fz->rnd, 50);
    parent     = fz_domain_parent(fz, fz->pd, td, allocators ?
                                  (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) : 0,
                                  &heap, allocators, allocators);
    if (fz_ok(fz, "ibv_alloc_parent_domain", (parent != NULL) ? 0 : errno)) {
        heap.pd = parent;
        if (td != NULL) {
            fz_fails(fz, FZ_F(ibv_dealloc_td, in_use),
                     FZ_BE(fz, dealloc_td, td));
        }
        fz_domain_srq(fz, parent, &heap, allocators);
        fz_ok(fz, "ibv_dealloc_pd", FZ_BE(fz, dealloc_pd, parent));
    }
    if (td != NULL) {
        fz_ok(fz, "ibv_dealloc_td", FZ_BE(fz, dealloc_td, td));
    }
}

bool fz_domain_scene_create(fz_t *fz)
{
    struct ibv_td_init_attr tattr = { 0 };
    uint32_t mask;

    fz->qpd = fz->pd;
    memset(&fz->heap, 0, sizeof(fz->heap));
    if (!fz_chance(&fz->rnd, 35)) {
        return true;
    }
    if (fz_chance(&fz->rnd, 50)) {
        errno   = 0;
        fz->td  = FZ_BE(fz, alloc_td, &tattr);
        if (!fz_ok(fz, "ibv_alloc_td", (fz->td != NULL) ? 0 : errno)) {
            return false;
        }
    }
    fz->allocators = fz_chance(&fz->rnd, 50);
    mask           = fz->allocators ? (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) : 0;
    fz->parent     = fz_domain_parent(fz, fz->pd, fz->td, mask, &fz->heap,
                                      fz->allocators, fz->allocators);
    if (!fz_ok(fz, "ibv_alloc_parent_domain",
               (fz->parent != NULL) ? 0 : errno)) {
        return false;
    }
    fz->heap.pd = fz->parent;
    fz->qpd     = fz->parent;
    return true;
}

void fz_domain_scene_destroy(fz_t *fz)
{
    if (fz->parent != NULL) {
        fz_ok(fz, "ibv_dealloc_pd", FZ_BE(fz, dealloc_pd, fz->parent));
        if (fz->allocators) {
            fz_post(fz, FZ_P(ibv_alloc_parent_domain, allocator_result),
                    (fz->heap.allocs > 0) &&
                    (fz->heap.allocs == fz->heap.frees) &&
                    (fz->heap.foreign == 0),
                    "the scene's allocator: %lu blocks given, %lu back, %lu "
                    "for another domain", fz->heap.allocs, fz->heap.frees,
                    fz->heap.foreign);
        }
    }
    if (fz->td != NULL) {
        fz_ok(fz, "ibv_dealloc_td", FZ_BE(fz, dealloc_td, fz->td));
    }
    fz->parent     = NULL;
    fz->td         = NULL;
    fz->qpd        = NULL;
    fz->allocators = false;
}
