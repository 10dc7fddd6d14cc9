/*
 * ucx-srq: the UCT component "srq": one memory domain per verbs device,
 * transport "rc_srq". Registered from the library constructor, after the
 * version guard, so that a plugin built for another UCX never touches the
 * running library's lists.
 */
#include "srq_component.h"
#include "srq_md.h"
#include "srq_version.h"

#include <ucs/debug/log_def.h>

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
        .prefix         = "SRQ_",
        .table          = uct_srq_md_config_table,
        .size           = sizeof(uct_srq_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_srq_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};

static int uct_srq_registered = 0;

static void UCS_F_CTOR uct_srq_init(void)
{
    if (uct_srq_version_check() != UCS_OK) {
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
