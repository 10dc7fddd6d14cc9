/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the intrusive doubly-linked list every soft object
 * uses to sit on the device's work lists.
 */
#ifndef SRQ_SOFT_LIST_H_
#define SRQ_SOFT_LIST_H_

#include <stdbool.h>

typedef struct srq_soft_list {
    struct srq_soft_list *prev, *next;
} srq_soft_list_t;

static inline void srq_soft_list_init(srq_soft_list_t *l)
{
    l->prev = l->next = l;
}

static inline bool srq_soft_list_empty(const srq_soft_list_t *l)
{
    return l->next == l;
}

static inline bool srq_soft_list_linked(const srq_soft_list_t *e)
{
    return e->next != e;
}

static inline void srq_soft_list_add_tail(srq_soft_list_t *l,
                                          srq_soft_list_t *e)
{
    e->prev       = l->prev;
    e->next       = l;
    l->prev->next = e;
    l->prev       = e;
}

static inline void srq_soft_list_del(srq_soft_list_t *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    srq_soft_list_init(e);
}

/* Move all of @src to the empty @dst */
static inline void srq_soft_list_take(srq_soft_list_t *dst,
                                      srq_soft_list_t *src)
{
    if (srq_soft_list_empty(src)) {
        srq_soft_list_init(dst);
        return;
    }
    dst->next       = src->next;
    dst->prev       = src->prev;
    dst->next->prev = dst;
    dst->prev->next = dst;
    srq_soft_list_init(src);
}

#define srq_soft_container_of(_ptr, _type, _member) \
    ((_type*)((char*)(_ptr) - __builtin_offsetof(_type, _member)))

#endif
