/*
 * What the UCT benchmark programs share (see bench_uct.h).
 */
#include "bench_uct.h"

#include <dlfcn.h>
#include <string.h>

const char *bench_prog = "bench";

uct_component_h bench_srq_component(void)
{
    uct_component_h *components, srq = NULL;
    uct_component_attr_t attr;
    unsigned num;

    CHECK(uct_query_components(&components, &num));
    for (unsigned i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srq")) {
            srq = components[i];
        }
    }
    uct_release_component_list(components);
    if (srq == NULL) {
        fprintf(stderr, "%s: component srq not registered (use srq-run)\n",
                bench_prog);
        exit(1);
    }
    return srq;
}

query_func_t bench_counters_query(void)
{
    query_func_t query;

    /* The loaded plugin by its soname: preloaded, or loaded RTLD_LOCAL by
     * the plugin scan of UCX 1.22+ where RTLD_DEFAULT does not see it */
    void *plugin = dlopen("libuct_srq.so", RTLD_LAZY | RTLD_NOLOAD);

    query = (plugin == NULL) ? NULL :
            (query_func_t)dlsym(plugin, "uct_srq_iface_query_counters");
    if (plugin != NULL) {
        dlclose(plugin); /* it stays loaded by whoever loaded it */
    }
    if (query == NULL) {
        fprintf(stderr, "%s: uct_srq_iface_query_counters not found\n",
                bench_prog);
        exit(1);
    }
    return query;
}
