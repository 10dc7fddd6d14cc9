/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_fd_budget N: open rc_srq on soft0 (memory domain, async context,
 * worker, interface) in a fresh process with exactly N file descriptors
 * left, then close everything and count the descriptors again.
 *
 * Prints "opened", "md failed" or "iface failed" and exits 0; exits 1 when
 * descriptors were left open afterwards (a leak), 2 on a setup error. An
 * abort or crash is the process's own exit status. test/fd_budget.sh runs
 * it for every N up to what an open needs.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_FDS 4096

static int open_fds(char *used)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0, fd, dfd;

    if (dir == NULL) {
        return -1;
    }
    dfd = dirfd(dir);
    memset(used, 0, MAX_FDS);
    while ((de = readdir(dir)) != NULL) {
        fd = atoi(de->d_name);
        if ((de->d_name[0] != '.') && (fd != dfd) && (fd < MAX_FDS)) {
            used[fd] = 1;
            ++n;
        }
    }
    closedir(dir);
    return n;
}

/* RLIMIT_NOFILE so that exactly @budget descriptors can still be made */
static int limit_fds(int budget)
{
    char used[MAX_FDS];
    struct rlimit lim;
    int fd, left = budget;

    if ((open_fds(used) < 0) || (getrlimit(RLIMIT_NOFILE, &lim) != 0)) {
        return -1;
    }
    for (fd = 0; (fd < MAX_FDS) && ((left > 0) || used[fd]); ++fd) {
        left -= !used[fd];
    }
    lim.rlim_cur = fd;
    return setrlimit(RLIMIT_NOFILE, &lim);
}

static uct_component_h find_srq(uct_component_h *components, unsigned num)
{
    uct_component_attr_t attr;
    unsigned i;

    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srq")) {
            return components[i];
        }
    }
    return NULL;
}

/* "opened", or which step failed */
static const char *open_close(uct_component_h srq, uct_md_config_t *md_config)
{
    uct_iface_params_t params = {};
    uct_iface_config_t *config;
    ucs_async_context_t *async;
    const char *what = "opened";
    uct_worker_h worker;
    uct_iface_h iface;
    uct_md_h md;

    if (uct_md_open(srq, "soft0", md_config, &md) != UCS_OK) {
        return "md failed";
    }
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                 &async) != UCS_OK) {
        uct_md_close(md);
        return "async failed";
    }
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK) {
        what = "worker failed";
        goto out_async;
    }
    if (uct_md_iface_config_read(md, "rc_srq", NULL, NULL, &config) != UCS_OK) {
        what = "config failed";
        goto out_worker;
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    if (uct_iface_open(md, worker, &params, config, &iface) == UCS_OK) {
        uct_iface_close(iface);
    } else {
        what = "iface failed";
    }
    uct_config_release(config);
out_worker:
    uct_worker_destroy(worker);
out_async:
    ucs_async_context_destroy(async);
    uct_md_close(md);
    return what;
}

int main(int argc, char **argv)
{
    uct_component_h *components, srq;
    uct_md_config_t *md_config;
    struct rlimit saved;
    char used[MAX_FDS];
    int before, after;
    const char *what;
    unsigned num;

    if ((argc != 2) || (uct_query_components(&components, &num) != UCS_OK)) {
        fprintf(stderr, "usage: uct_fd_budget DESCRIPTORS\n");
        return 2;
    }
    srq = find_srq(components, num);
    if ((srq == NULL) ||
        (uct_md_config_read(srq, NULL, NULL, &md_config) != UCS_OK) ||
        (getrlimit(RLIMIT_NOFILE, &saved) != 0)) {
        fprintf(stderr, "uct_fd_budget: component srq not usable\n");
        return 2;
    }
    before = open_fds(used);
    if (limit_fds(atoi(argv[1])) != 0) {
        perror("uct_fd_budget: setrlimit");
        return 2;
    }
    what = open_close(srq, md_config);
    setrlimit(RLIMIT_NOFILE, &saved);
    after = open_fds(used);
    printf("%s, descriptors before %d after %d\n", what, before, after);
    uct_config_release(md_config);
    uct_release_component_list(components);
    return (after == before) ? 0 : 1;
}
