/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the md's registration cache (UCX's ucs_rcache), as UCX's own ib
 * md keeps one: registering memory with an HCA pins its pages and maps them
 * into the device, so a buffer registered again and again (every zcopy and
 * rendezvous of an MPI job) is registered once. A cached region covers
 * whole pages, is registered with every access the device offers (so one
 * region serves any later request), and is dropped when its memory is
 * unmapped (UCM's memory events) or the md closes.
 */
#include "srq_md_rcache.h"
#include "srq_ucx_compat.h"

#include <ucm/api/ucm.h>
#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <sys/mman.h>
#include <inttypes.h>
#include <limits.h>

/* Priority of the cache's memory-unmap handler among UCM's */
#define UCT_SRQ_RCACHE_EVENT_PRIO  1000

typedef struct uct_srq_rcache_region {
    ucs_rcache_region_t  super;
    uct_srq_memh_t       memh;
} uct_srq_rcache_region_t;

static ucs_status_t uct_srq_rcache_mem_reg(void *context, ucs_rcache_t *rcache,
                                           void *arg,
                                           ucs_rcache_region_t *rregion,
                                           uint16_t flags)
{
    uct_srq_md_rcache_t *rc         = context;
    uct_srq_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_srq_rcache_region_t);
    void *address = (void*)rregion->super.start;
    size_t length = rregion->super.end - rregion->super.start;
    /* the caller's wish (uct_srq_md_rcache_reg), or the cache's when it
     * merges regions */
    uint16_t hide = *(const uint16_t*)arg | flags;
    struct ibv_mr *mr;

    mr = srq_verbs_reg_mr(rc->dev, rc->pd, address, length, rc->access);
    if (mr == NULL) {
        if (!(hide & UCS_RCACHE_MEM_REG_HIDE_ERRORS)) {
            ucs_error("srq: %s: failed to register %p length %zu: %m",
                      srq_verbs_dev_name(rc->dev), address, length);
        }
        return UCS_ERR_IO_ERROR;
    }
    region->memh.mr     = mr;
    region->memh.lkey   = mr->lkey;
    region->memh.rkey   = mr->rkey;
    region->memh.region = rregion;
    return UCS_OK;
}

static void uct_srq_rcache_mem_dereg(void *context, ucs_rcache_t *rcache,
                                     ucs_rcache_region_t *rregion)
{
    uct_srq_md_rcache_t *rc         = context;
    uct_srq_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_srq_rcache_region_t);
    int ret;

    ret = srq_verbs_dereg_mr(rc->dev, region->memh.mr);
    if (ret != 0) {
        ucs_warn("srq: %s: failed to deregister a cached region: %s",
                 srq_verbs_dev_name(rc->dev), strerror(ret));
    }
}

#ifdef HAVE_UCX_RCACHE_OPS_MERGE
/* A new request overlapped cached regions: nothing of ours to carry over,
 * the merged region is registered anew */
static void uct_srq_rcache_merge(void *context, ucs_rcache_t *rcache,
                                 void *arg, ucs_rcache_region_t *region)
{
}
#endif

static void uct_srq_rcache_dump_region(void *context, ucs_rcache_t *rcache,
                                       ucs_rcache_region_t *rregion,
                                       char *buf, size_t max)
{
    uct_srq_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_srq_rcache_region_t);

    snprintf(buf, max, "lkey 0x%" PRIx32 " rkey 0x%" PRIx32,
             region->memh.lkey, region->memh.rkey);
}

static const ucs_rcache_ops_t uct_srq_rcache_ops = {
    .mem_reg     = uct_srq_rcache_mem_reg,
    .mem_dereg   = uct_srq_rcache_mem_dereg,
#ifdef HAVE_UCX_RCACHE_OPS_MERGE
    .merge       = uct_srq_rcache_merge,
#endif
    .dump_region = uct_srq_rcache_dump_region
};

ucs_status_t uct_srq_md_rcache_init(uct_srq_md_rcache_t *rc,
                                    srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                    int access,
                                    ucs_ternary_auto_value_t mode)
{
    const char *name = srq_verbs_dev_name(dev);
    ucs_rcache_params_t params = {};
    ucs_status_t status;

    rc->rcache = NULL;
    rc->dev    = dev;
    rc->pd     = pd;
    rc->access = access;
    /* soft0's own registration is a table entry: nothing to save there
     * unless asked for */
    if ((mode == UCS_NO) ||
        ((mode == UCS_AUTO) &&
         (srq_verbs_dev_kind(dev) != SRQ_VERBS_DEV_RDMA))) {
        return UCS_OK;
    }

    params.region_struct_size = sizeof(uct_srq_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED |
                                UCM_EVENT_MEM_TYPE_FREE;
    params.ucm_event_priority = UCT_SRQ_RCACHE_EVENT_PRIO;
    params.ops                = &uct_srq_rcache_ops;
    params.context            = rc;
    params.flags              = 0;
    params.max_regions        = ULONG_MAX;
    params.max_size           = SIZE_MAX;
    params.max_unreleased     = SIZE_MAX;
    uct_srq_rcache_params_align(&params, ucs_get_page_size());

    status = ucs_rcache_create(&params, name, NULL, &rc->rcache);
    if (status != UCS_OK) {
        rc->rcache = NULL;
        if (mode == UCS_YES) {
            ucs_error("srq: %s: UCX_SRQ_RCACHE=yes, but no registration "
                      "cache could be created: %s", name,
                      ucs_status_string(status));
            return status;
        }
        ucs_diag("srq: %s: no registration cache (%s): every registration "
                 "goes to the device", name, ucs_status_string(status));
    }
    return UCS_OK;
}

void uct_srq_md_rcache_cleanup(uct_srq_md_rcache_t *rc)
{
    if (rc->rcache != NULL) {
        ucs_rcache_destroy(rc->rcache);
        rc->rcache = NULL;
    }
}

ucs_status_t uct_srq_md_rcache_reg(uct_srq_md_rcache_t *rc, void *address,
                                   size_t length, unsigned flags,
                                   uct_srq_memh_t **memh_p)
{
    uint16_t reg_flags = (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                         UCS_RCACHE_MEM_REG_HIDE_ERRORS : 0;
    ucs_rcache_region_t *rregion;
    ucs_status_t status;

    status = uct_srq_rcache_get(rc->rcache, address, length,
                                ucs_get_page_size(), PROT_READ | PROT_WRITE,
                                &reg_flags, &rregion);
    if (status != UCS_OK) {
        return status;
    }
    *memh_p = &ucs_derived_of(rregion, uct_srq_rcache_region_t)->memh;
    return UCS_OK;
}

void uct_srq_md_rcache_dereg(uct_srq_md_rcache_t *rc, uct_srq_memh_t *memh)
{
    ucs_rcache_region_put(rc->rcache, memh->region);
}
