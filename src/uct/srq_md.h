/*
 * ucx-srq: the memory domain (one per verbs device).
 */
#ifndef UCT_SRQ_MD_H_
#define UCT_SRQ_MD_H_

#include "srq_component.h"

#include <uct/base/uct_md.h>
#include <verbs/srq_verbs.h>
#include <ucs/datastruct/list.h>
#include <pthread.h>

typedef struct uct_srq_rx uct_srq_rx_t;

typedef struct uct_srq_md_config {
    uct_md_config_t           super;
    ucs_ternary_auto_value_t  soft;  /* UCX_SRQ_SOFT */
} uct_srq_md_config_t;

typedef struct uct_srq_md {
    uct_md_t          super;
    srq_verbs_dev_t  *dev;
    struct ibv_pd    *pd;
    uint64_t          cap_flags;    /* UCT_MD_FLAG_xx this device really has */
    int               atomic_access;/* the device takes IBV_ACCESS_REMOTE_ATOMIC */
    int               async_fd;     /* watched for async events, or -1 */
    pthread_mutex_t   srqs_lock;    /* the async thread reads srqs */
    ucs_list_link_t   srqs;         /* uct_srq_rx_t of the device's ifaces */
} uct_srq_md_t;

/* Packed remote key: the device rkey, little endian on the wire */
typedef struct uct_srq_packed_rkey {
    uint32_t rkey;
} UCS_S_PACKED uct_srq_packed_rkey_t;

extern ucs_config_field_t uct_srq_md_config_table[];

ucs_status_t uct_srq_query_md_resources(uct_component_t *component,
                                        uct_md_resource_desc_t **resources_p,
                                        unsigned *num_resources_p);
ucs_status_t uct_srq_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p);
ucs_status_t uct_srq_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p);

/* Async events of an SRQ go to @rx while it is on the md's list */
void uct_srq_md_add_srq(uct_srq_md_t *md, uct_srq_rx_t *rx);
void uct_srq_md_remove_srq(uct_srq_md_t *md, uct_srq_rx_t *rx);

/* The verbs device of an srq md, or NULL for another md (for tests: the
 * soft device's hooks, soft_test_hooks.h, take it) */
srq_verbs_dev_t *uct_srq_md_verbs_dev(uct_md_h md);

/* The verbs device list as configured by UCX_SRQ_SOFT */
ucs_status_t uct_srq_md_device_list(srq_verbs_dev_info_t **list_p, int *num_p);

#endif
