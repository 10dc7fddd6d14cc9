/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_list: print every UCT component, memory domain, transport and device
 * visible to a UCT-only program, one "component md transport device" line
 * each. Used by the tests that check what the plugin registers (or, under
 * a mismatched UCX, refuses to register).
 */
#include <uct/api/uct.h>
#include <stdio.h>

static void list_md(uct_component_h component, const char *comp_name,
                    const char *md_name)
{
    uct_tl_resource_desc_t *tls;
    uct_md_config_t *config;
    unsigned num_tls, i;
    uct_md_h md;

    if (uct_md_config_read(component, NULL, NULL, &config) != UCS_OK) {
        return;
    }
    if (uct_md_open(component, md_name, config, &md) == UCS_OK) {
        if (uct_md_query_tl_resources(md, &tls, &num_tls) == UCS_OK) {
            for (i = 0; i < num_tls; ++i) {
                printf("%s %s %s %s\n", comp_name, md_name, tls[i].tl_name,
                       tls[i].dev_name);
            }
            uct_release_tl_resource_list(tls);
        }
        uct_md_close(md);
    }
    uct_config_release(config);
}

int main(void)
{
    uct_component_h *components;
    uct_md_resource_desc_t mds[64];
    uct_component_attr_t attr;
    unsigned num, i, j;

    if (uct_query_components(&components, &num) != UCS_OK) {
        fprintf(stderr, "uct_query_components failed\n");
        return 1;
    }
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            continue;
        }
        if (attr.md_resource_count > 64) {
            attr.md_resource_count = 64;
        }
        attr.field_mask    = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources  = mds;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            continue;
        }
        printf("%s\n", attr.name);
        for (j = 0; j < attr.md_resource_count; ++j) {
            list_md(components[i], attr.name, mds[j].md_name);
        }
    }
    uct_release_component_list(components);
    return 0;
}
