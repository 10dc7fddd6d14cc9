/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_limits: rc_srq on soft0 at a limit of the process, for
 * test/limits.sh. In a fresh process:
 *
 *   uct_limits open as KIB
 *       RLIMIT_AS set to what the process maps plus KIB, then the memory
 *       domain, an async context, a worker and an interface are opened
 *       and closed: prints "opened", "md failed" or "iface failed".
 *   uct_limits connect as KIB
 *   uct_limits connect fds N
 *       two interfaces (each on its own soft0 context: two instances,
 *       which map each other as two processes do) opened with no limit;
 *       then RLIMIT_AS set to what is mapped plus KIB, or RLIMIT_NOFILE so
 *       that exactly N descriptors can still be made, and an endpoint
 *       created from the first to the second, which sends one active
 *       message: prints "ep failed: STATUS" (uct_ep_create refused it),
 *       "delivered", or "ep error: STATUS" (the error handler ran).
 *
 * Exits 0 when it printed one of those, 2 on a setup error, 3 when the
 * message neither arrived nor failed within 60 s (a hang); an abort or
 * crash is the process's own exit status.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS      4096
#define WAIT_SECONDS 60
#define AM_ID        1

typedef struct {
    uct_md_h    md;
    uct_iface_h iface;
} side_t;

typedef struct {
    uct_component_h      srq;
    uct_md_config_t     *md_config;
    ucs_async_context_t *async;
    uct_worker_h         worker;
    int                  received;
    ucs_status_t         error;   /* what the error handler was given */
} ctx_t;

/* ---- limits --------------------------------------------------------------- */

/* RLIMIT_AS: what the process maps now, plus @kib */
static int limit_as(unsigned long kib)
{
    unsigned long pages = 0;
    struct rlimit lim;
    FILE *f = fopen("/proc/self/statm", "r");

    if ((f == NULL) || (fscanf(f, "%lu", &pages) != 1)) {
        return -1;
    }
    fclose(f);
    if (getrlimit(RLIMIT_AS, &lim) != 0) {
        return -1;
    }
    lim.rlim_cur = pages * sysconf(_SC_PAGESIZE) + kib * 1024;
    return setrlimit(RLIMIT_AS, &lim);
}

/* RLIMIT_NOFILE so that exactly @budget descriptors can still be made */
static int limit_fds(int budget)
{
    char used[MAX_FDS] = {0};
    struct rlimit lim;
    struct dirent *de;
    int fd, dfd, left = budget;
    DIR *dir = opendir("/proc/self/fd");

    if (dir == NULL) {
        return -1;
    }
    dfd = dirfd(dir);
    while ((de = readdir(dir)) != NULL) {
        fd = atoi(de->d_name);
        if ((de->d_name[0] != '.') && (fd != dfd) && (fd < MAX_FDS)) {
            used[fd] = 1;
        }
    }
    closedir(dir);
    for (fd = 0; (fd < MAX_FDS) && ((left > 0) || used[fd]); ++fd) {
        left -= !used[fd];
    }
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
        return -1;
    }
    lim.rlim_cur = fd;
    return setrlimit(RLIMIT_NOFILE, &lim);
}

static int apply_limit(const char *kind, unsigned long value)
{
    if (!strcmp(kind, "as")) {
        return limit_as(value);
    }
    return !strcmp(kind, "fds") ? limit_fds((int)value) : -1;
}

/* The soft limits back as they were: the hard ones were never lowered */
static void lift_limits(void)
{
    static const int resources[] = {RLIMIT_AS, RLIMIT_NOFILE};
    struct rlimit lim;
    unsigned i;

    for (i = 0; i < 2; ++i) {
        if (getrlimit(resources[i], &lim) == 0) {
            lim.rlim_cur = lim.rlim_max;
            setrlimit(resources[i], &lim);
        }
    }
}

/* ---- rc_srq --------------------------------------------------------------- */

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++((ctx_t*)arg)->received;
    return UCS_OK;
}

static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    ((ctx_t*)arg)->error = status;
    return UCS_OK;
}

static int ctx_init(ctx_t *ctx)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned num, i;

    memset(ctx, 0, sizeof(*ctx));
    ctx->error = UCS_OK;
    if (uct_query_components(&components, &num) != UCS_OK) {
        return -1;
    }
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srq")) {
            ctx->srq = components[i];
        }
    }
    /* the component list holds the handle: kept for the process's life */
    return ((ctx->srq == NULL) ||
            (uct_md_config_read(ctx->srq, NULL, NULL, &ctx->md_config) !=
             UCS_OK)) ? -1 : 0;
}

/* md, then (the first time) async and worker: 0, or which step failed */
static const char *side_open_md(ctx_t *ctx, side_t *side)
{
    if (uct_md_open(ctx->srq, "soft0", ctx->md_config, &side->md) != UCS_OK) {
        return "md failed";
    }
    if ((ctx->async == NULL) &&
        (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                  &ctx->async) != UCS_OK)) {
        uct_md_close(side->md);
        return "async failed";
    }
    if ((ctx->worker == NULL) &&
        (uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE,
                           &ctx->worker) != UCS_OK)) {
        uct_md_close(side->md);
        return "worker failed";
    }
    return NULL;
}

/* NULL when @side is open, else which step failed (nothing left open) */
static const char *side_open(ctx_t *ctx, side_t *side)
{
    uct_iface_params_t params = {};
    uct_iface_config_t *config;
    const char *what;
    ucs_status_t status;

    what = side_open_md(ctx, side);
    if (what != NULL) {
        return what;
    }
    if (uct_md_iface_config_read(side->md, "rc_srq", NULL, NULL, &config) !=
        UCS_OK) {
        uct_md_close(side->md);
        return "config failed";
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    params.err_handler          = err_cb;
    params.err_handler_arg      = ctx;
    status = uct_iface_open(side->md, ctx->worker, &params, config,
                            &side->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        uct_md_close(side->md);
        return "iface failed";
    }
    uct_iface_progress_enable(side->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return NULL;
}

static void side_close(side_t *side)
{
    uct_iface_close(side->iface);
    uct_md_close(side->md);
}

static void ctx_cleanup(ctx_t *ctx)
{
    if (ctx->worker != NULL) {
        uct_worker_destroy(ctx->worker);
    }
    if (ctx->async != NULL) {
        ucs_async_context_destroy(ctx->async);
    }
    uct_config_release(ctx->md_config);
}

/* ---- the commands ----------------------------------------------------------- */

static int cmd_open(ctx_t *ctx, const char *kind, unsigned long value)
{
    const char *what;
    side_t side;

    if (apply_limit(kind, value) != 0) {
        perror("uct_limits: setrlimit");
        return 2;
    }
    what = side_open(ctx, &side);
    lift_limits();
    if (what == NULL) {
        side_close(&side);
    }
    printf("%s\n", (what == NULL) ? "opened" : what);
    return 0;
}

/* The message arrives or the error handler runs: 0, or 3 after
 * WAIT_SECONDS (progress called all the while) */
static int wait_outcome(ctx_t *ctx, uct_ep_h ep)
{
    time_t end  = time(NULL) + WAIT_SECONDS;
    int sent    = 0;
    ucs_status_t status;

    while ((ctx->received == 0) && (ctx->error == UCS_OK)) {
        if (!sent) {
            status = uct_ep_am_short(ep, AM_ID, 0, NULL, 0);
            if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
                ctx->error = status;
                break;
            }
            sent = (status == UCS_OK);
        }
        uct_worker_progress(ctx->worker);
        if (time(NULL) > end) {
            return 3;
        }
    }
    if (ctx->received > 0) {
        printf("delivered\n");
    } else {
        printf("ep error: %s\n", ucs_status_string(ctx->error));
    }
    return 0;
}

static int cmd_connect(ctx_t *ctx, const char *kind, unsigned long value)
{
    uct_ep_params_t ep_params = {};
    char dev_addr[256], iface_addr[256];
    side_t a, b;
    ucs_status_t status;
    uct_ep_h ep;
    int ret;

    if ((side_open(ctx, &a) != NULL) || (side_open(ctx, &b) != NULL) ||
        (uct_iface_set_am_handler(b.iface, AM_ID, am_cb, ctx, 0) != UCS_OK) ||
        (uct_iface_get_device_address(b.iface, (void*)dev_addr) != UCS_OK) ||
        (uct_iface_get_address(b.iface, (void*)iface_addr) != UCS_OK)) {
        fprintf(stderr, "uct_limits: rc_srq on soft0:1 not usable\n");
        return 2;
    }
    if (apply_limit(kind, value) != 0) {
        perror("uct_limits: setrlimit");
        return 2;
    }
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = a.iface;
    ep_params.dev_addr   = (void*)dev_addr;
    ep_params.iface_addr = (void*)iface_addr;
    status = uct_ep_create(&ep_params, &ep);
    ret    = 0;
    if (status != UCS_OK) {
        printf("ep failed: %s\n", ucs_status_string(status));
    } else {
        ret = wait_outcome(ctx, ep);
    }
    lift_limits();
    if (status == UCS_OK) {
        uct_ep_destroy(ep);
    }
    side_close(&b);
    side_close(&a);
    return ret;
}

int main(int argc, char **argv)
{
    ctx_t ctx;
    int ret;

    if ((argc != 4) || (strcmp(argv[2], "as") && strcmp(argv[2], "fds")) ||
        (strcmp(argv[1], "open") && strcmp(argv[1], "connect"))) {
        fprintf(stderr, "usage: uct_limits open|connect as|fds VALUE\n");
        return 2;
    }
    if (ctx_init(&ctx) != 0) {
        fprintf(stderr, "uct_limits: component srq not usable\n");
        return 2;
    }
    ret = !strcmp(argv[1], "open") ?
          cmd_open(&ctx, argv[2], strtoul(argv[3], NULL, 0)) :
          cmd_connect(&ctx, argv[2], strtoul(argv[3], NULL, 0));
    ctx_cleanup(&ctx);
    fflush(stdout);
    return ret;
}
