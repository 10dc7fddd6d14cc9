/*
 * ucx-srq: the rc_srq interface: devices and ports, open/close, query.
 *
 * Data transfer and connection establishment are not implemented yet: the
 * interface advertises no operation and no connection mode, and every
 * endpoint call returns UCS_ERR_UNSUPPORTED.
 */
#include "srq_iface.h"

#include <ucs/debug/log_def.h>
#include <ucs/debug/memtrack.h>
#include <ucs/sys/string.h>
#include <stdlib.h>
#include <string.h>

UCS_CLASS_DECLARE(uct_srq_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*);

ucs_config_field_t uct_srq_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srq_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {NULL}
};

static ucs_status_t
uct_srq_query_devices(uct_md_h uct_md, uct_tl_device_resource_t **devices_p,
                      unsigned *num_devices_p)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);
    uct_tl_device_resource_t *devices;
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    unsigned num = 0;
    uint8_t port;
    int ret;

    ret = srq_verbs_query_device(md->dev, &dev_attr);
    if (ret != 0) {
        ucs_error("srq: query of device %s failed: %s",
                  srq_verbs_dev_name(md->dev), strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    devices = ucs_calloc(dev_attr.phys_port_cnt ? dev_attr.phys_port_cnt : 1,
                         sizeof(*devices), "srq tl devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (port = 1; port <= dev_attr.phys_port_cnt; ++port) {
        if ((srq_verbs_query_port(md->dev, port, &port_attr) != 0) ||
            (port_attr.state != IBV_PORT_ACTIVE)) {
            ucs_debug("srq: %s:%d is not active", srq_verbs_dev_name(md->dev),
                      port);
            continue;
        }
        ucs_snprintf_zero(devices[num].name, sizeof(devices[num].name),
                          "%s:%d", srq_verbs_dev_name(md->dev), port);
        devices[num].type       = UCT_DEVICE_TYPE_NET;
        devices[num].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num;
    }

    *devices_p     = devices;
    *num_devices_p = num;
    return UCS_OK;
}

/* "<verbs device>:<port>" of this md's device -> port number */
static ucs_status_t uct_srq_iface_parse_dev(uct_srq_md_t *md,
                                            const char *dev_name,
                                            uint8_t *port_p)
{
    const char *md_name = srq_verbs_dev_name(md->dev);
    size_t len          = strlen(md_name);
    char *end;
    long port;

    if (strncmp(dev_name, md_name, len) || (dev_name[len] != ':')) {
        ucs_error("srq: device '%s' is not a port of %s (expected %s:<port>)",
                  dev_name, md_name, md_name);
        return UCS_ERR_NO_DEVICE;
    }
    port = strtol(dev_name + len + 1, &end, 10);
    if ((*end != '\0') || (port < 1) || (port > UINT8_MAX)) {
        ucs_error("srq: invalid port in device name '%s'", dev_name);
        return UCS_ERR_NO_DEVICE;
    }
    *port_p = port;
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_query(uct_iface_h tl_iface,
                                        uct_iface_attr_t *iface_attr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    uct_srq_md_t *md       = ucs_derived_of(iface->super.md, uct_srq_md_t);
    int soft = (srq_verbs_dev_kind(md->dev) == SRQ_VERBS_DEV_SOFT);

    uct_base_iface_query(&iface->super, iface_attr);

    /* Nothing is advertised that the transport cannot do yet */
    iface_attr->cap.flags       = 0;
    iface_attr->cap.event_flags = 0;
    iface_attr->device_addr_len = sizeof(srq_verbs_port_addr_t);
    iface_attr->iface_addr_len  = 0;
    iface_attr->ep_addr_len     = 0;
    iface_attr->max_conn_priv   = 0;
    /* Estimates of the device itself: a shared-memory hop for soft0 */
    iface_attr->latency         = ucs_linear_func_make(soft ? 300e-9 : 1e-6, 0);
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = soft ? 8e9 : 12e9;
    iface_attr->overhead            = soft ? 50e-9 : 10e-9;
    iface_attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_srq_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    memcpy(addr, &iface->port_addr, sizeof(iface->port_addr));
    return UCS_OK;
}

/* No connection can be made yet: nothing is reachable */
static int uct_srq_iface_is_reachable(const uct_iface_h tl_iface,
                                      const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    return 0;
}

UCS_CLASS_CLEANUP_FUNC(uct_srq_iface_t)
{
}

UCS_CLASS_DEFINE_DELETE_FUNC(uct_srq_iface_t, uct_iface_t);

static uct_iface_ops_t uct_srq_iface_ops = {
    .ep_put_short             = (uct_ep_put_short_func_t)ucs_empty_function_return_unsupported,
    .ep_put_bcopy             = (uct_ep_put_bcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_put_zcopy             = (uct_ep_put_zcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_get_short             = (uct_ep_get_short_func_t)ucs_empty_function_return_unsupported,
    .ep_get_bcopy             = (uct_ep_get_bcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_get_zcopy             = (uct_ep_get_zcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_am_short              = (uct_ep_am_short_func_t)ucs_empty_function_return_unsupported,
    .ep_am_short_iov          = (uct_ep_am_short_iov_func_t)ucs_empty_function_return_unsupported,
    .ep_am_bcopy              = (uct_ep_am_bcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_am_zcopy              = (uct_ep_am_zcopy_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic_cswap64        = (uct_ep_atomic_cswap64_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic_cswap32        = (uct_ep_atomic_cswap32_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic32_post         = (uct_ep_atomic32_post_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic64_post         = (uct_ep_atomic64_post_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic32_fetch        = (uct_ep_atomic32_fetch_func_t)ucs_empty_function_return_unsupported,
    .ep_atomic64_fetch        = (uct_ep_atomic64_fetch_func_t)ucs_empty_function_return_unsupported,
    .ep_pending_add           = (uct_ep_pending_add_func_t)ucs_empty_function_return_unsupported,
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)ucs_empty_function,
    .ep_flush                 = (uct_ep_flush_func_t)ucs_empty_function_return_unsupported,
    .ep_fence                 = (uct_ep_fence_func_t)ucs_empty_function_return_unsupported,
    .ep_check                 = (uct_ep_check_func_t)ucs_empty_function_return_unsupported,
    .ep_create                = (uct_ep_create_func_t)ucs_empty_function_return_unsupported,
    .ep_destroy               = (uct_ep_destroy_func_t)ucs_empty_function,
    .ep_get_address           = (uct_ep_get_address_func_t)ucs_empty_function_return_unsupported,
    .ep_connect_to_ep         = (uct_ep_connect_to_ep_func_t)ucs_empty_function_return_unsupported,
    /* no endpoint can exist, so the interface has nothing outstanding */
    .iface_flush              = uct_base_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = (uct_iface_progress_func_t)ucs_empty_function_return_zero,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_srq_iface_t),
    .iface_query              = uct_srq_iface_query,
    .iface_get_device_address = uct_srq_iface_get_device_address,
    .iface_get_address        = (uct_iface_get_address_func_t)ucs_empty_function_return_success,
    .iface_is_reachable       = uct_srq_iface_is_reachable,
};

static uct_iface_internal_ops_t uct_srq_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported,
};

UCS_CLASS_INIT_FUNC(uct_srq_iface_t, uct_md_h tl_md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_srq_md_t *md = ucs_derived_of(tl_md, uct_srq_md_t);
    struct ibv_port_attr port_attr;
    ucs_status_t status;
    int ret;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("srq: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_srq_iface_ops,
                              &uct_srq_iface_internal_ops, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG((params->field_mask &
                                             UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                            params->stats_root : NULL)
                              UCS_STATS_ARG(params->mode.device.dev_name));

    status = uct_srq_iface_parse_dev(md, params->mode.device.dev_name,
                                     &self->port_num);
    if (status != UCS_OK) {
        return status;
    }

    ret = srq_verbs_query_port(md->dev, self->port_num, &port_attr);
    if ((ret != 0) || (port_attr.state != IBV_PORT_ACTIVE)) {
        ucs_error("srq: port %s is not usable: %s",
                  params->mode.device.dev_name,
                  ret ? strerror(ret) : "not active");
        return UCS_ERR_NO_DEVICE;
    }

    ret = srq_verbs_port_addr(md->dev, self->port_num, &self->port_addr);
    if (ret != 0) {
        ucs_error("srq: failed to read the address of %s: %s",
                  params->mode.device.dev_name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

UCS_CLASS_DEFINE(uct_srq_iface_t, uct_base_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srq_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);

UCT_TL_DEFINE_ENTRY(&uct_srq_component, rc_srq, uct_srq_query_devices,
                    uct_srq_iface_t, "RC_SRQ_", uct_srq_iface_config_table,
                    uct_srq_iface_config_t);
