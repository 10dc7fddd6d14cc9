/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the UCT component "srq": the verbs devices there are (one
 * memory domain each, UCX_SRQ_SOFT choosing whether soft0 is one of them),
 * transport "rc_srq". Registered from the library constructor, after the
 * version guard, so that a plugin built for another UCX never touches the
 * running library's lists.
 */
#include "srq_component.h"
#include "srq_md.h"
#include "srq_version.h"

#include <ucs/debug/log_def.h>
#include <ucs/debug/memtrack.h>
#include <ucs/sys/string.h>
#include <string.h>

static srq_verbs_soft_mode_t uct_srq_soft_mode(ucs_ternary_auto_value_t value)
{
    switch (value) {
    case UCS_NO:
        return SRQ_VERBS_SOFT_NO;
    case UCS_YES:
        return SRQ_VERBS_SOFT_YES;
    default:
        return SRQ_VERBS_SOFT_AUTO;
    }
}

/* The verbs devices, as UCX_SRQ_SOFT says */
static ucs_status_t uct_srq_device_list(srq_verbs_dev_info_t **list_p,
                                        int *num_p)
{
    uct_srq_md_config_t config;
    ucs_status_t status;
    int ret;

    /* query_md_resources gets no config object: read ours from the env */
    status = uct_srq_config_fill(&config, &uct_srq_component.md_config,
                                 UCS_DEFAULT_ENV_PREFIX);
    if (status != UCS_OK) {
        return status;
    }

    ret = srq_verbs_get_device_list(uct_srq_soft_mode(config.soft), list_p,
                                    num_p);
    ucs_config_parser_release_opts(&config, uct_srq_md_config_table);
    if (ret != 0) {
        ucs_error("srq: failed to list verbs devices: %s", strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* One memory domain per verbs device */
static ucs_status_t
uct_srq_query_md_resources(uct_component_t *component,
                           uct_md_resource_desc_t **resources_p,
                           unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    srq_verbs_dev_info_t *list;
    ucs_status_t status;
    int num, i;

    status = uct_srq_device_list(&list, &num);
    if (status != UCS_OK) {
        return status;
    }

    resources = ucs_calloc(num ? num : 1, sizeof(*resources), "srq md resources");
    if (resources == NULL) {
        srq_verbs_free_device_list(list);
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < num; ++i) {
        ucs_strncpy_zero(resources[i].md_name, list[i].name,
                         sizeof(resources[i].md_name));
    }
    srq_verbs_free_device_list(list);

    *resources_p     = resources;
    *num_resources_p = num;
    return UCS_OK;
}

uct_component_t uct_srq_component = {
    .name               = UCT_SRQ_COMPONENT_NAME,
    .query_md_resources = uct_srq_query_md_resources,
    .md_open            = uct_srq_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_srq_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                              ucs_empty_function_return_success,
    .md_config          = {
        .name           = "srq memory domain",
        .prefix         = UCT_SRQ_MD_CONFIG_PREFIX,
        .table          = uct_srq_md_config_table,
        .size           = sizeof(uct_srq_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_srq_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};

static int uct_srq_registered = 0;

/*
 * Whether UCT already lists a component of our name: a second copy of this
 * library in the process (preloaded, and found again under another file name
 * by the plugin scan of UCX 1.22+) must leave the first one alone. Its
 * global symbols may even resolve to the first copy's objects, so
 * registering again would link the same list nodes twice.
 */
static int uct_srq_component_listed(void)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, UCT_SRQ_COMPONENT_NAME)) {
            return 1;
        }
    }
    return 0;
}

static void UCS_F_CTOR uct_srq_init(void)
{
    /* First: under another UCX, uct_component_t may have another layout
     * (1.18 has a method more than 1.13 before its list link), so walking
     * UCT's component list would read the wrong fields */
    if (uct_srq_version_check() != UCS_OK) {
        return;
    }

    if (uct_srq_component_listed()) {
        ucs_diag("ucx-srq: component '%s' is already registered by another "
                 "copy of the plugin; this one stays inactive",
                 UCT_SRQ_COMPONENT_NAME);
        return;
    }

    ucs_list_add_tail(&uct_srq_component.tl_list, &uct_rc_srq_tl.list);
    ucs_list_add_tail(&ucs_config_global_list, &uct_rc_srq_tl.config.list);
    uct_component_register(&uct_srq_component);
    uct_srq_registered = 1;
}

static void UCS_F_DTOR uct_srq_cleanup(void)
{
    if (!uct_srq_registered) {
        return;
    }

    /* The component's memory goes away with this library: unlink it */
    uct_component_unregister(&uct_srq_component);
    ucs_list_del(&uct_srq_component.list);
    ucs_list_del(&uct_rc_srq_tl.config.list);
    ucs_list_del(&uct_rc_srq_tl.list);
    uct_srq_registered = 0;
}
