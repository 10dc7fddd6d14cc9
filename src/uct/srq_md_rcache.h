/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the md's registration cache (srq_md_rcache.c). It knows the
 * device, the PD and the access its regions are registered with, and
 * nothing else of the md: the md calls it, it calls nothing of the md's.
 */
#ifndef UCT_SRQ_MD_RCACHE_H_
#define UCT_SRQ_MD_RCACHE_H_

#include "srq_memh.h"

#include <ucs/config/types.h>
#include <ucs/memory/rcache.h>

typedef struct uct_srq_md_rcache {
    ucs_rcache_t     *rcache;   /* NULL: none, every registration goes to
                                   the device */
    srq_verbs_dev_t  *dev;
    struct ibv_pd    *pd;
    int               access;   /* IBV_ACCESS_* of every cached region */
} uct_srq_md_rcache_t;

/* Created per UCX_SRQ_RCACHE (@mode; auto: for rdma-core devices, where
 * registering pins and maps pages), regions registered with @access; used
 * by mem_reg/mem_dereg when there is one */
ucs_status_t uct_srq_md_rcache_init(uct_srq_md_rcache_t *rc,
                                    srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    int access,
                                    ucs_ternary_auto_value_t mode);
void uct_srq_md_rcache_cleanup(uct_srq_md_rcache_t *rc);
ucs_status_t uct_srq_md_rcache_reg(uct_srq_md_rcache_t *rc, void *address,
                                   size_t length, unsigned flags,
                                   uct_srq_memh_t **memh_p);
void uct_srq_md_rcache_dereg(uct_srq_md_rcache_t *rc, uct_srq_memh_t *memh);

#endif
