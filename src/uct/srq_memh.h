/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: a memory handle (uct_mem_h) of the srq md, which its
 * registration cache hands out too. Header only.
 */
#ifndef UCT_SRQ_MEMH_H_
#define UCT_SRQ_MEMH_H_

#include <verbs/srq_verbs.h>
#include <ucs/memory/rcache.h>

/* A memory handle (uct_mem_h): a registration of the device, made for this
 * handle or shared through the registration cache */
typedef struct uct_srq_memh {
    uint32_t              lkey;
    uint32_t              rkey;
    struct ibv_mr        *mr;
    ucs_rcache_region_t  *region;  /* the cache's, or NULL */
} uct_srq_memh_t;

#endif
