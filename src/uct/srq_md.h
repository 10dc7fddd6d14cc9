/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the memory domain (one per verbs device).
 */
#ifndef UCT_SRQ_MD_H_
#define UCT_SRQ_MD_H_

#include "srq_component.h"
#include "srq_md_rcache.h"
#include "srq_ucx_compat.h"

#include <uct/base/uct_md.h>
#include <verbs/srq_verbs.h>
#include <ucs/datastruct/list.h>
#include <ucs/memory/rcache.h>
#include <pthread.h>

/* Called from UCX's async thread when the SRQ of a handler reached its
 * limit (IBV_EVENT_SRQ_LIMIT_REACHED) */
typedef void (*uct_srq_md_limit_cb_t)(void *arg);

/* Who wants the limit events of one SRQ of the md's device */
typedef struct uct_srq_md_limit_handler {
    ucs_list_link_t        list;  /* in the md's handlers */
    struct ibv_srq        *srq;
    uct_srq_md_limit_cb_t  cb;
    void                  *arg;
} uct_srq_md_limit_handler_t;

typedef struct uct_srq_md_config {
    uct_md_config_t           super;
    ucs_ternary_auto_value_t  soft;    /* UCX_SRQ_SOFT */
    ucs_ternary_auto_value_t  rcache;  /* UCX_SRQ_RCACHE */
} uct_srq_md_config_t;

typedef struct uct_srq_md {
    uct_md_t          super;
    srq_verbs_dev_t  *dev;
    struct ibv_pd    *pd;
    uint64_t          cap_flags;    /* UCT_MD_FLAG_xx this device really has */
    int               atomic_access;/* the device takes IBV_ACCESS_REMOTE_ATOMIC */
    srq_verbs_locality_t locality;  /* PCI address and near CPUs, if known */
    ucs_sys_device_t  sys_device;   /* UCX's handle of that PCI device */
    uct_srq_md_rcache_t rcache;     /* registration cache, if any */
    int               async_fd;     /* watched for async events, or -1 */
    pthread_mutex_t   handlers_lock;/* the async thread reads handlers */
    ucs_list_link_t   handlers;     /* uct_srq_md_limit_handler_t */
} uct_srq_md_t;

/* Packed remote key: the device rkey, little endian on the wire */
typedef struct uct_srq_packed_rkey {
    uint32_t rkey;
} UCS_S_PACKED uct_srq_packed_rkey_t;

extern ucs_config_field_t uct_srq_md_config_table[];

ucs_status_t uct_srq_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p);
ucs_status_t uct_srq_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer,
                                 UCT_SRQ_RKEY_UNPACK_PARAMS_ARG
                                 uct_rkey_t *rkey_p, void **handle_p);

/* Limit events of @srq go to @cb(@arg) until the handler is removed;
 * @handler is the caller's, and stays valid until then */
void uct_srq_md_add_limit_handler(uct_srq_md_t *md,
                                  uct_srq_md_limit_handler_t *handler,
                                  struct ibv_srq *srq,
                                  uct_srq_md_limit_cb_t cb, void *arg);

/* After this returns, no event reaches the handler: its SRQ may go */
void uct_srq_md_remove_limit_handler(uct_srq_md_t *md,
                                     uct_srq_md_limit_handler_t *handler);

/* The verbs device of an srq md, or NULL for another md (for tests: the
 * soft device's hooks, soft_test_hooks.h, take it) */
srq_verbs_dev_t *uct_srq_md_verbs_dev(uct_md_h md);

/* The device's attributes; an error (logged) when the query fails */
ucs_status_t uct_srq_md_query_device(uct_srq_md_t *md,
                                     struct ibv_device_attr *attr);

/* IBV_ACCESS_* for UCT_MD_MEM_ACCESS_* @flags (local write always) */
static inline int uct_srq_md_access_flags(const uct_srq_md_t *md,
                                          unsigned flags)
{
    int access = IBV_ACCESS_LOCAL_WRITE;

    if (flags & UCT_MD_MEM_ACCESS_REMOTE_PUT) {
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (flags & UCT_MD_MEM_ACCESS_REMOTE_GET) {
        access |= IBV_ACCESS_REMOTE_READ;
    }
    /* a device without atomics refuses the flag; nothing can use it there */
    if ((flags & UCT_MD_MEM_ACCESS_REMOTE_ATOMIC) && md->atomic_access) {
        access |= IBV_ACCESS_REMOTE_ATOMIC;
    }
    return access;
}

/* The transport's devices: "<verbs device>:<port>" of the active ports */
ucs_status_t uct_srq_md_query_tl_devices(uct_md_h md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p);

#endif
