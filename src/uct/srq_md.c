/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the memory domain: one per verbs device (rdma-core or soft),
 * the transport devices (its active ports), SRQ limit events and memory
 * registration. Registration is advertised only when the device really
 * registers memory. Which devices there are is the component's business
 * (srq_component.c).
 */
#include "srq_md.h"
#include "srq_async.h"
#include "srq_limit.h"

#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>
#include <ucs/debug/memtrack.h>
#include <ucs/sys/string.h>
#include <ucs/type/cpu_set.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/sys/math.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

/* UCX_SRQ_SOFT takes yes/no/auto; UCX's ternary would also take "try" */
static int uct_srq_config_sscanf_soft(const char *buf, void *dest,
                                      const void *arg)
{
    if (!strcasecmp(buf, "auto")) {
        *(int*)dest = UCS_AUTO;
        return 1;
    }
    return ucs_config_sscanf_bool(buf, dest, arg);
}

#define UCT_SRQ_CONFIG_TYPE_YES_NO_AUTO \
    {.read    = uct_srq_config_sscanf_soft, \
     .write   = ucs_config_sprintf_ternary_auto, \
     .clone   = ucs_config_clone_int, \
     .release = ucs_config_release_nop, \
     .help    = ucs_config_help_generic, \
     UCT_SRQ_CONFIG_PARSER_DOC \
     .arg     = "<yes|no|auto>"}

ucs_config_field_t uct_srq_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_srq_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"SOFT", "auto",
     "Use the built-in software HCA (device soft0, UCT device soft0:1), which\n"
     "runs RC/UD queue pairs between the processes of one host over shared\n"
     "memory and cross-memory attach:\n"
     " y    - always list soft0, besides any RDMA device\n"
     " n    - never list soft0\n"
     " auto - list soft0 only when no RDMA device is present",
     ucs_offsetof(uct_srq_md_config_t, soft), UCT_SRQ_CONFIG_TYPE_YES_NO_AUTO},

    {"RCACHE", "auto",
     "Registration cache: memory registered once stays registered until it\n"
     "is unmapped, so registering the same buffer again costs a lookup\n"
     "(UCX's ucs_rcache, as UCX's ib transports keep one):\n"
     " y    - for every device\n"
     " n    - never: every registration goes to the device\n"
     " auto - for rdma-core devices (an HCA pins and maps the pages of each\n"
     "        registration), not for the built-in soft0",
     ucs_offsetof(uct_srq_md_config_t, rcache), UCT_SRQ_CONFIG_TYPE_YES_NO_AUTO},

    {NULL}
};

/* ---- the device and its ports ------------------------------------------ */

ucs_status_t uct_srq_md_query_device(uct_srq_md_t *md,
                                     struct ibv_device_attr *attr)
{
    int ret = srq_verbs_query_device(md->dev, attr);

    if (ret != 0) {
        ucs_error("srq: query of device %s failed: %s",
                  srq_verbs_dev_name(md->dev), strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* The transport's devices: the active ports of the md's device */
ucs_status_t uct_srq_md_query_tl_devices(uct_md_h uct_md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);
    uct_tl_device_resource_t *devices;
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    ucs_status_t status;
    unsigned num = 0;
    uint8_t port;

    status = uct_srq_md_query_device(md, &dev_attr);
    if (status != UCS_OK) {
        return status;
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
        devices[num].sys_device = md->sys_device;
        ++num;
    }

    *devices_p     = devices;
    *num_devices_p = num;
    return UCS_OK;
}

/* Where the device is: its PCI function as a UCX system device (UCP
 * weighs the distance between it and the memory and CPUs in use), or
 * unknown */
static void uct_srq_md_locality_init(uct_srq_md_t *md)
{
    int ret = srq_verbs_dev_locality(md->dev, &md->locality);

    md->sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    if (ret != 0) {
        ucs_debug("srq: %s: locality unknown (%s)", srq_verbs_dev_name(md->dev),
                  strerror(ret));
        return;
    }
    if ((md->locality.pci_bdf[0] != '\0') &&
        (ucs_topo_find_device_by_bdf_name(md->locality.pci_bdf,
                                          &md->sys_device) != UCS_OK)) {
        md->sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    ucs_debug("srq: %s: PCI %s, local CPUs %s", srq_verbs_dev_name(md->dev),
              md->locality.pci_bdf[0] ? md->locality.pci_bdf : "unknown",
              md->locality.cpus_known ? "known" : "unknown");
}

/* ---- asynchronous events ------------------------------------------------ */

/*
 * The device's async events are per device, so per md, while SRQs belong to
 * interfaces: UCX's async thread reads them and hands an SRQ limit event to
 * the handler registered for that SRQ, if there still is one.
 */
static void uct_srq_md_async_event(int fd, ucs_event_set_types_t events,
                                   void *arg)
{
    uct_srq_md_t *md = arg;
    uct_srq_md_limit_handler_t *handler;
    struct ibv_async_event event;

    while (srq_verbs_get_async_event(md->dev, &event) == 0) {
        if (event.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
            pthread_mutex_lock(&md->handlers_lock);
            ucs_list_for_each(handler, &md->handlers, list) {
                if (handler->srq == event.element.srq) {
                    handler->cb(handler->arg);
                }
            }
            pthread_mutex_unlock(&md->handlers_lock);
        } else {
            ucs_debug("srq: %s: async event %s", srq_verbs_dev_name(md->dev),
                      ibv_event_type_str(event.event_type));
        }
        srq_verbs_ack_async_event(md->dev, &event);
    }
}

/* Without room for UCX's async thread the open fails; any other failure
 * costs only the SRQ limit events */
static ucs_status_t uct_srq_md_async_init(uct_srq_md_t *md)
{
    char why[2 * UCT_SRQ_STRERROR_MAX];
    ucs_status_t status;

    /* the handler may run as soon as it is registered */
    pthread_mutex_init(&md->handlers_lock, NULL);
    ucs_list_head_init(&md->handlers);
    md->async_fd = srq_verbs_async_fd(md->dev);
    status       = uct_srq_async_add_fd(md->async_fd, uct_srq_md_async_event,
                                        md, why, sizeof(why));
    if ((status == UCS_ERR_NO_RESOURCE) || (status == UCS_ERR_NO_MEMORY)) {
        ucs_error("srq: %s: UCX's async thread could not start: %s",
                  srq_verbs_dev_name(md->dev), why);
        pthread_mutex_destroy(&md->handlers_lock);
        return status;
    }
    if (status != UCS_OK) {
        ucs_diag("srq: %s: no async events (%s): SRQ limit events are not "
                 "seen", srq_verbs_dev_name(md->dev),
                 ucs_status_string(status));
        md->async_fd = -1;
    }
    return UCS_OK;
}

static void uct_srq_md_async_cleanup(uct_srq_md_t *md)
{
    if (md->async_fd >= 0) {
        uct_srq_async_remove_fd(md->async_fd);
    }
    pthread_mutex_destroy(&md->handlers_lock);
}

void uct_srq_md_add_limit_handler(uct_srq_md_t *md,
                                  uct_srq_md_limit_handler_t *handler,
                                  struct ibv_srq *srq,
                                  uct_srq_md_limit_cb_t cb, void *arg)
{
    handler->srq = srq;
    handler->cb  = cb;
    handler->arg = arg;
    pthread_mutex_lock(&md->handlers_lock);
    ucs_list_add_tail(&md->handlers, &handler->list);
    pthread_mutex_unlock(&md->handlers_lock);
}

void uct_srq_md_remove_limit_handler(uct_srq_md_t *md,
                                     uct_srq_md_limit_handler_t *handler)
{
    pthread_mutex_lock(&md->handlers_lock);
    ucs_list_del(&handler->list);
    pthread_mutex_unlock(&md->handlers_lock);
}

/* ---- open and close ----------------------------------------------------- */

static void uct_srq_md_close(uct_md_h uct_md)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);

    uct_srq_md_async_cleanup(md);
    uct_srq_md_rcache_cleanup(&md->rcache);
    srq_verbs_dealloc_pd(md->dev, md->pd);
    srq_verbs_close(md->dev);
    ucs_free(md);
}

static ucs_status_t uct_srq_md_query(uct_md_h uct_md,
                                     uct_srq_md_attr_t *md_attr)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);
    struct ibv_device_attr dev_attr;
    ucs_status_t status;
    int cpu;

    status = uct_srq_md_query_device(md, &dev_attr);
    if (status != UCS_OK) {
        return status;
    }

    uct_srq_md_attr_reset(md_attr);
    UCT_SRQ_MD_CAP(md_attr).flags            = md->cap_flags;
    UCT_SRQ_MD_CAP(md_attr).max_alloc        = ULONG_MAX;
    UCT_SRQ_MD_CAP(md_attr).max_reg          = (md->cap_flags & UCT_MD_FLAG_REG) ?
                                               dev_attr.max_mr_size : 0;
    UCT_SRQ_MD_CAP(md_attr).reg_mem_types    = (md->cap_flags & UCT_MD_FLAG_REG) ?
                                               UCS_BIT(UCS_MEMORY_TYPE_HOST) : 0;
    UCT_SRQ_MD_CAP(md_attr).access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_SRQ_MD_CAP(md_attr).detect_mem_types = 0;
    UCT_SRQ_MD_CAP(md_attr).alloc_mem_types  = 0;
#ifdef HAVE_UCX_MD_CACHE_MEM_TYPES
    /* UCP's registration cache may keep what we register (with a global
     * cache it even asserts that every registering md allows it) */
    UCT_SRQ_MD_CAP(md_attr).cache_mem_types  = UCT_SRQ_MD_CAP(md_attr).reg_mem_types;
#endif
    md_attr->rkey_packed_size     = sizeof(uct_srq_packed_rkey_t);
    /* with the cache, a registration is a lookup (UCX's ib md reckons
     * 180 ns); without it, soft0 fills a table entry and an HCA pins and
     * maps the pages */
    md_attr->reg_cost             = (md->rcache.rcache != NULL) ?
                                    ucs_linear_func_make(180e-9, 0) :
                                    ucs_linear_func_make(1e-6, 1e-10);
    ucs_strncpy_zero(md_attr->component_name, md->super.component->name,
                     sizeof(md_attr->component_name));
    /* the CPUs sysfs says are near the device; every CPU where that is not
     * known (soft0 is memory, as near to one CPU as to another) */
    UCS_CPU_ZERO(&md_attr->local_cpus);
    for (cpu = 0; cpu < ucs_min(UCS_CPU_SETSIZE, SRQ_VERBS_MAX_CPUS); ++cpu) {
        if (!md->locality.cpus_known ||
            (md->locality.cpus.bits[cpu / 64] & (1ull << (cpu % 64)))) {
            UCS_CPU_SET(cpu, &md_attr->local_cpus);
        }
    }
    return UCS_OK;
}

/* A registration of its own for this handle */
static ucs_status_t uct_srq_md_reg_direct(uct_srq_md_t *md, void *address,
                                          size_t length, unsigned flags,
                                          uct_srq_memh_t **memh_p)
{
    uct_srq_memh_t *memh = ucs_malloc(sizeof(*memh), "srq memh");

    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->mr = srq_verbs_reg_mr(md->dev, md->pd, address, length,
                                uct_srq_md_access_flags(md, flags));
    if (memh->mr == NULL) {
        if (!(flags & UCT_MD_MEM_FLAG_HIDE_ERRORS)) {
            ucs_error("srq: %s: failed to register %p length %zu: %m",
                      srq_verbs_dev_name(md->dev), address, length);
        }
        ucs_free(memh);
        return UCS_ERR_IO_ERROR;
    }
    memh->lkey   = memh->mr->lkey;
    memh->rkey   = memh->mr->rkey;
    memh->region = NULL;
    *memh_p      = memh;
    return UCS_OK;
}

static ucs_status_t uct_srq_md_mem_reg(uct_md_h uct_md, void *address,
                                       size_t length, uct_srq_mem_reg_arg_t arg,
                                       uct_mem_h *memh_p)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);
    unsigned flags   = uct_srq_mem_reg_flags(arg);
    uct_srq_memh_t *memh;
    ucs_status_t status;

    if (!(md->cap_flags & UCT_MD_FLAG_REG)) {
        return UCS_ERR_UNSUPPORTED;
    }

    status = (md->rcache.rcache != NULL) ?
             uct_srq_md_rcache_reg(&md->rcache, address, length, flags, &memh) :
             uct_srq_md_reg_direct(md, address, length, flags, &memh);
    if (status != UCS_OK) {
        return status;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_srq_md_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
{
    uct_srq_md_t *md = ucs_derived_of(uct_md, uct_srq_md_t);
    uct_srq_memh_t *memh;
    int ret;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    memh = params->memh;
    if (memh->region != NULL) {
        uct_srq_md_rcache_dereg(&md->rcache, memh); /* stays until unmapped */
        return UCS_OK;
    }
    ret = srq_verbs_dereg_mr(md->dev, memh->mr);
    if (ret != 0) {
        ucs_error("srq: %s: failed to deregister memory: %s",
                  srq_verbs_dev_name(md->dev), strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    ucs_free(memh);
    return UCS_OK;
}

static ucs_status_t
uct_srq_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                     UCT_SRQ_MKEY_PACK_REGION_ARGS
                     const uct_md_mkey_pack_params_t *params,
                     void *rkey_buffer)
{
    uct_srq_packed_rkey_t *packed = rkey_buffer;

    packed->rkey = htole32(((uct_srq_memh_t*)memh)->rkey);
    return UCS_OK;
}

ucs_status_t uct_srq_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer,
                                 UCT_SRQ_RKEY_UNPACK_PARAMS_ARG
                                 uct_rkey_t *rkey_p, void **handle_p)
{
    const uct_srq_packed_rkey_t *packed = rkey_buffer;

    *rkey_p   = le32toh(packed->rkey);
    *handle_p = NULL;
    return UCS_OK;
}

/* Advertise registration only if the device really registers memory */
static uint64_t uct_srq_md_probe_flags(uct_srq_md_t *md)
{
    static char probe[64];
    struct ibv_mr *mr;

    mr = srq_verbs_reg_mr(md->dev, md->pd, probe, sizeof(probe),
                          IBV_ACCESS_LOCAL_WRITE);
    if (mr == NULL) {
        ucs_debug("srq: %s does not register memory (%m)",
                  srq_verbs_dev_name(md->dev));
        return 0;
    }
    srq_verbs_dereg_mr(md->dev, mr);
    return UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY;
}

static uct_md_ops_t uct_srq_md_ops = {
    .close                  = uct_srq_md_close,
    .query                  = uct_srq_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_reg                = uct_srq_md_mem_reg,
    .mem_dereg              = uct_srq_md_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)
                                  ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_srq_md_mkey_pack,
#ifdef HAVE_UCX_MD_IS_SOCKADDR_ACCESSIBLE
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)
                                  ucs_empty_function_return_zero_int,
#endif
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                                  ucs_empty_function_return_unsupported,
};

ucs_status_t uct_srq_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p)
{
    const uct_srq_md_config_t *md_config = ucs_derived_of(config,
                                                          uct_srq_md_config_t);
    struct ibv_device_attr dev_attr;
    ucs_status_t status;
    uct_srq_md_t *md;
    int ret;

    md = ucs_calloc(1, sizeof(*md), "srq md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ret = srq_verbs_open(md_name, &md->dev);
    if (ret != 0) {
        ucs_error("srq: failed to open verbs device %s: %s", md_name,
                  UCT_SRQ_STRERROR(ret));
        ucs_free(md);
        return (ret == ENODEV) ? UCS_ERR_NO_DEVICE :
                                 uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
    }

    md->pd = srq_verbs_alloc_pd(md->dev);
    if (md->pd == NULL) {
        ret = errno;
        ucs_error("srq: failed to allocate a PD on %s: %s", md_name,
                  UCT_SRQ_STRERROR(ret));
        status = uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
        goto err_close;
    }

    status = uct_srq_md_query_device(md, &dev_attr);
    if (status != UCS_OK) {
        goto err_dealloc_pd;
    }
    md->atomic_access = (dev_attr.atomic_cap != IBV_ATOMIC_NONE);
    md->cap_flags     = uct_srq_md_probe_flags(md);
    /* first: it makes sure UCX's async thread can start, and starts it;
     * the registration cache's handler then needs no descriptor more */
    status = uct_srq_md_async_init(md);
    if (status != UCS_OK) {
        goto err_dealloc_pd;
    }
    if (md->cap_flags & UCT_MD_FLAG_REG) {
        status = uct_srq_md_rcache_init(&md->rcache, md->dev, md->pd,
                                        uct_srq_md_access_flags(
                                                md, UCT_MD_MEM_ACCESS_ALL),
                                        md_config->rcache);
        if (status != UCS_OK) {
            goto err_async;
        }
    }
    uct_srq_md_locality_init(md);
    md->super.ops = &uct_srq_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;

err_async:
    uct_srq_md_async_cleanup(md);
err_dealloc_pd:
    srq_verbs_dealloc_pd(md->dev, md->pd);
err_close:
    srq_verbs_close(md->dev);
    ucs_free(md);
    return status;
}

srq_verbs_dev_t *uct_srq_md_verbs_dev(uct_md_h uct_md)
{
    return (uct_md->ops == &uct_srq_md_ops) ?
           ucs_derived_of(uct_md, uct_srq_md_t)->dev : NULL;
}
