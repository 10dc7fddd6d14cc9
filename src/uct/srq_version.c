/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the UCX version guard.
 *
 * UCT has no version call in UCX 1.13; UCP's (ucp_get_version) is the
 * installation's version. When UCP is not loaded yet (an MPI rank starts
 * the plugin from LD_PRELOAD long before pml ucx loads UCP, a UCT-only
 * program never loads it), the libucp next to the libuct actually running
 * is asked: it belongs to the same installation.
 */
#define _GNU_SOURCE
#include "srq_config.h" /* PACKAGE_VERSION: ours */
#include "srq_version.h"

#include <uct/api/uct.h>
#include <ucs/debug/log_def.h>
#include <ucs/sys/string.h>

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>

typedef void (*uct_srq_get_version_func_t)(unsigned*, unsigned*, unsigned*);

static ucs_status_t uct_srq_runtime_version(unsigned *major, unsigned *minor,
                                            unsigned *release)
{
    uct_srq_get_version_func_t get_version;
    char path[PATH_MAX];
    Dl_info info;
    void *handle;

    get_version = (uct_srq_get_version_func_t)dlsym(RTLD_DEFAULT,
                                                    "ucp_get_version");
    if (get_version != NULL) {
        get_version(major, minor, release);
        return UCS_OK;
    }

    if (!dladdr((void*)uct_md_open, &info) || (info.dli_fname == NULL)) {
        ucs_error("ucx-srq: cannot locate the running libuct");
        return UCS_ERR_NO_ELEM;
    }
    ucs_strncpy_zero(path, info.dli_fname, sizeof(path));
    ucs_snprintf_zero(path + strlen(dirname(path)),
                      sizeof(path) - strlen(path), "/libucp.so.0");

    handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        ucs_error("ucx-srq: cannot tell the running UCX version: %s",
                  dlerror());
        return UCS_ERR_NO_ELEM;
    }
    get_version = (uct_srq_get_version_func_t)dlsym(handle, "ucp_get_version");
    if (get_version != NULL) {
        get_version(major, minor, release);
    }
    dlclose(handle);
    return (get_version != NULL) ? UCS_OK : UCS_ERR_NO_ELEM;
}

ucs_status_t uct_srq_version_check(void)
{
    unsigned major, minor, release;

    if (uct_srq_runtime_version(&major, &minor, &release) != UCS_OK) {
        ucs_error("ucx-srq: transport rc_srq is NOT registered");
        return UCS_ERR_UNSUPPORTED;
    }

    if ((major == UCT_VERNO_MAJOR) && (minor == UCT_VERNO_MINOR) &&
        (release == UCT_VERNO_PATCH)) {
        /* the one line that says which ucx-srq a job runs */
        ucs_info("ucx-srq %s: transport rc_srq, built for UCX %d.%d.%d",
                 PACKAGE_VERSION, UCT_VERNO_MAJOR, UCT_VERNO_MINOR,
                 UCT_VERNO_PATCH);
        return UCS_OK;
    }

    ucs_error("ucx-srq %s: plugin built for UCX %d.%d.%d but the running UCX "
              "is %u.%u.%u; transport rc_srq is NOT registered (rebuild "
              "ucx-srq against this UCX)", PACKAGE_VERSION, UCT_VERNO_MAJOR,
              UCT_VERNO_MINOR, UCT_VERNO_PATCH, major, minor, release);
    return UCS_ERR_UNSUPPORTED;
}
