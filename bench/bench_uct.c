/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The UCT layer the benchmark programs share (see bench_uct.h).
 */
#include "bench_uct.h"

#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <string.h>

/* what one side of bench_connect sends: lengths, then the addresses */
#define BENCH_ADDR_MAGIC  0x62656e6368616464ull  /* "benchadd" */
#define BENCH_ADDR_MAX    512

typedef struct {
    uint64_t magic;
    uint16_t dev_len;
    uint16_t iface_len;
    uint16_t ep_len;
    uint16_t reserved;
} bench_addr_hdr_t;

typedef ucs_status_t (*bench_query_func_t)(uct_iface_h,
                                           uct_srq_iface_counters_t*);

/* every transport open now: closed by the exit hook when a run dies */
static bench_tl_t **open_tls;
static int num_open_tls;

static void *grow(void *array, int count, size_t elem)
{
    array = realloc(array, (count + 1) * elem);
    if (array == NULL) {
        bench_die("out of memory");
    }
    return array;
}

static void close_all(void)
{
    while (num_open_tls > 0) {
        bench_tl_close(open_tls[num_open_tls - 1]);
    }
}

/* Does @md offer @tl_name on @dev_name? */
static int md_offers(uct_md_h md, const char *tl_name, const char *dev_name)
{
    uct_tl_resource_desc_t *resources;
    unsigned num;
    int found = 0;

    if (uct_md_query_tl_resources(md, &resources, &num) != UCS_OK) {
        return 0;
    }
    for (unsigned i = 0; i < num; ++i) {
        found |= !strcmp(resources[i].tl_name, tl_name) &&
                 !strcmp(resources[i].dev_name, dev_name);
    }
    uct_release_tl_resource_list(resources);
    return found;
}

/* Open md @md_name of @component if it offers the transport: 1 if so */
static int try_md(bench_tl_t *tl, uct_component_h component,
                  const char *md_name)
{
    uct_md_config_t *config;
    uct_md_h md;

    if (uct_md_config_read(component, NULL, NULL, &config) != UCS_OK) {
        return 0;
    }
    if (uct_md_open(component, md_name, config, &md) != UCS_OK) {
        uct_config_release(config);
        return 0;
    }
    uct_config_release(config);
    if (!md_offers(md, tl->tl_name, tl->dev_name)) {
        uct_md_close(md);
        return 0;
    }
    tl->md = md;
    snprintf(tl->md_name, sizeof(tl->md_name), "%s", md_name);
    return 1;
}

static int try_component(bench_tl_t *tl, uct_component_h component)
{
    uct_component_attr_t attr = {};
    int found = 0;

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                      UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(component, &attr) != UCS_OK) {
        return 0;
    }
    attr.md_resources = calloc(attr.md_resource_count + 1,
                               sizeof(*attr.md_resources));
    if (attr.md_resources == NULL) {
        bench_die("out of memory");
    }
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    if (uct_component_query(component, &attr) == UCS_OK) {
        for (unsigned i = 0; !found && (i < attr.md_resource_count); ++i) {
            found = try_md(tl, component, attr.md_resources[i].md_name);
        }
    }
    if (found) {
        snprintf(tl->component, sizeof(tl->component), "%s", attr.name);
    }
    free(attr.md_resources);
    return found;
}

void bench_tl_open(bench_tl_t *tl, const char *tl_name, const char *dev_name)
{
    uct_component_h *components;
    unsigned num;
    int found = 0;

    bench_log_pid(); /* before any device is opened */
    memset(tl, 0, sizeof(*tl));
    tl->tl_name  = tl_name;
    tl->dev_name = dev_name;
    CHECK(uct_query_components(&components, &num));
    for (unsigned i = 0; !found && (i < num); ++i) {
        found = try_component(tl, components[i]);
    }
    uct_release_component_list(components);
    if (!found) {
        bench_die("no component offers transport %s on device %s%s", tl_name,
                  dev_name, !strcmp(tl_name, "rc_srq") ? " (use srq-run)" :
                  strstr(tl_name, "_verbs") ? " (use srq-run --verbs)" : "");
    }
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                   &tl->async));
    CHECK(uct_worker_create(tl->async, UCS_THREAD_MODE_SINGLE, &tl->worker));

    open_tls = grow(open_tls, num_open_tls, sizeof(*open_tls));
    open_tls[num_open_tls++] = tl;
    bench_set_exit_hook(close_all);
}

void bench_opts_init(bench_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->tl_name  = "rc_srq";
    o->dev_name = "soft0:1";
}

int bench_opts_take(bench_opts_t *o, int opt, const char *arg)
{
    switch (opt) {
    case 't': o->tl_name  = arg; return 1;
    case 'd': o->dev_name = arg; return 1;
    case 'l': o->label    = arg; return 1;
    case 'o':
        if (o->num_config == BENCH_MAX_CONFIG) {
            fprintf(stderr, "%s: at most %d -o settings\n", bench_prog,
                    BENCH_MAX_CONFIG);
            exit(2);
        }
        o->config[o->num_config++] = arg;
        return 1;
    default:
        return 0;
    }
}

void bench_tl_close(bench_tl_t *tl)
{
    for (int i = tl->num_ifaces - 1; i >= 0; --i) {
        bench_iface_t *bi = tl->ifaces[i];

        for (int j = 0; j < bi->num_eps; ++j) {
            uct_ep_destroy(bi->eps[j]);
        }
        free(bi->eps);
        uct_iface_close(bi->iface);
        memset(bi, 0, sizeof(*bi));
    }
    free(tl->ifaces);
    tl->ifaces     = NULL;
    tl->num_ifaces = 0;
    uct_worker_destroy(tl->worker);
    ucs_async_context_destroy(tl->async);
    uct_md_close(tl->md);
    for (int i = 0; i < num_open_tls; ++i) {
        if (open_tls[i] == tl) {
            open_tls[i] = open_tls[--num_open_tls];
            break;
        }
    }
}

/*
 * Set KEY to VALUE. ucx_info -c names a setting UCX_<TL>_<KEY>, but where
 * KEY is a field of a table the transport includes (rc_verbs' RX_QUEUE_LEN
 * is the ib interface's, posix's FIFO_SIZE the mm interface's),
 * uct_config_modify wants it with that table's prefix: those are tried
 * next.
 */
static ucs_status_t set_one(uct_iface_config_t *config, const char *key,
                            const char *value)
{
    static const char *const prefixes[] = {"", "IB_", "RC_", "UD_", "MM_"};
    ucs_status_t status = UCS_ERR_NO_ELEM;
    char name[160];

    for (size_t i = 0; (status == UCS_ERR_NO_ELEM) &&
                       (i < sizeof(prefixes) / sizeof(prefixes[0])); ++i) {
        snprintf(name, sizeof(name), "%s%s", prefixes[i], key);
        status = uct_config_modify(config, name, value);
    }
    return status;
}

static void apply_config(const bench_tl_t *tl, uct_iface_config_t *config,
                         const char *const *settings)
{
    char key[128];
    const char *eq;
    ucs_status_t status;

    for (; (settings != NULL) && (*settings != NULL); ++settings) {
        eq = strchr(*settings, '=');
        if ((eq == NULL) || (eq == *settings) ||
            ((size_t)(eq - *settings) >= sizeof(key))) {
            bench_die("'%s': a setting is KEY=VALUE", *settings);
        }
        memcpy(key, *settings, eq - *settings);
        key[eq - *settings] = '\0';
        status = set_one(config, key, eq + 1);
        if (status != UCS_OK) {
            bench_die("%s: cannot set %s to '%s': %s", tl->tl_name, key,
                      eq + 1, ucs_status_string(status));
        }
    }
}

void bench_iface_open(bench_tl_t *tl, const char *const *config,
                      bench_iface_t *bi)
{
    uct_iface_params_t params = {};
    uct_iface_config_t *iface_config;
    uint64_t flags;

    memset(bi, 0, sizeof(*bi));
    bi->tl = tl;
    CHECK(uct_md_iface_config_read(tl->md, tl->tl_name, NULL, NULL,
                                   &iface_config));
    apply_config(tl, iface_config, config);
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl->tl_name;
    params.mode.device.dev_name = tl->dev_name;
    CHECK(uct_iface_open(tl->md, tl->worker, &params, iface_config,
                         &bi->iface));
    uct_config_release(iface_config);

    tl->ifaces = grow(tl->ifaces, tl->num_ifaces, sizeof(*tl->ifaces));
    tl->ifaces[tl->num_ifaces++] = bi;

    CHECK(uct_iface_query(bi->iface, &bi->attr));
    flags = bi->attr.cap.flags;
    if (!(flags & (UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                   UCT_IFACE_FLAG_CONNECT_TO_EP))) {
        bench_die("%s connects neither to an interface nor to an endpoint",
                  tl->tl_name);
    }
    /* to the interface where the transport can: no endpoint address to
     * exchange, one connection per pair of interfaces */
    bi->to_ep = !(flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    if ((bi->attr.device_addr_len > BENCH_ADDR_MAX) ||
        (bi->attr.iface_addr_len > BENCH_ADDR_MAX) ||
        (bi->attr.ep_addr_len > BENCH_ADDR_MAX)) {
        bench_die("%s: addresses longer than %d bytes", tl->tl_name,
                  BENCH_ADDR_MAX);
    }
    uct_iface_progress_enable(bi->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

const char *const *bench_peer_config(const char *tl_name, int small_tx)
{
    /* rc_srq: RX_QUEUE_MIN must be at least RX_BATCH */
    static const char *const rc_srq[] = {
        "RX_BATCH=8", "RX_QUEUE_MIN=8", "RX_QUEUE_MAX=8", "CONN_QUEUE_LEN=8",
        "TX_QUEUE_LEN=16", "TX_CQ_LEN=64", NULL
    };
    /* rc_verbs: the receive queue takes flow-control grants; one interface
     * holds an endpoint per peer (the default limit is 256). 127, not 128:
     * UCX posts as many buffers as the SRQ it got holds (soft0, like mlx5,
     * makes 128 into 255) into a CQ of RX_QUEUE_LEN entries, which soft0
     * rounds to 128 only (mlx5: 255) - the CQ overruns */
    static const char *const rc_verbs[] = {
        "MAX_NUM_EPS=inf", "RX_QUEUE_LEN=127", "TX_QUEUE_LEN=16", NULL
    };
    /* ud_verbs: the send queue must be longer than 64 */
    static const char *const ud_verbs[] = {
        "RX_QUEUE_LEN=127", NULL
    };
    /* posix: only the local descriptor pool (a sender assumes the
     * receiver's FIFO has its own FIFO_SIZE: that one must not differ) */
    static const char *const posix[] = {
        "RX_BUFS_GROW=16", NULL
    };
    static const char *const none[] = {NULL};
    static const struct {
        const char        *tl_name;
        const char *const *config;
        int               always;  /* the first ones: also without small_tx */
    } table[] = {
        {"rc_srq",   rc_srq,   4},
        {"rc_verbs", rc_verbs, 2},
        {"ud_verbs", ud_verbs, 1},
        {"posix",    posix,    1},
    };
    static const char *rx[8];

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i) {
        if (strcmp(table[i].tl_name, tl_name)) {
            continue;
        }
        if (small_tx) {
            return table[i].config;
        }
        memcpy(rx, table[i].config, table[i].always * sizeof(*rx));
        rx[table[i].always] = NULL;
        return rx;
    }
    return none;
}

void bench_progress(void *arg)
{
    uct_worker_progress(((bench_tl_t*)arg)->worker);
}

static void add_ep(bench_iface_t *bi, uct_ep_h ep)
{
    bi->eps = grow(bi->eps, bi->num_eps, sizeof(*bi->eps));
    bi->eps[bi->num_eps++] = ep;
}

static uct_ep_h create_ep(bench_iface_t *bi, const uct_device_addr_t *dev,
                          const uct_iface_addr_t *iface_addr)
{
    uct_ep_params_t params = {};
    uct_ep_h ep;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = bi->iface;
    if (iface_addr != NULL) {
        params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                             UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.dev_addr    = dev;
        params.iface_addr  = iface_addr;
    }
    CHECK(uct_ep_create(&params, &ep));
    add_ep(bi, ep);
    return ep;
}

/* Our addresses as bench_connect sends them: header, device address, then
 * the interface or the endpoint address */
static size_t pack_addr(bench_iface_t *bi, uct_ep_h ep, uint8_t *buf)
{
    bench_addr_hdr_t *hdr = (bench_addr_hdr_t*)buf;
    uint8_t *p            = buf + sizeof(*hdr);

    memset(hdr, 0, sizeof(*hdr));
    hdr->magic   = BENCH_ADDR_MAGIC;
    hdr->dev_len = bi->attr.device_addr_len;
    CHECK(uct_iface_get_device_address(bi->iface, (uct_device_addr_t*)p));
    p += hdr->dev_len;
    if (bi->to_ep) {
        hdr->ep_len = bi->attr.ep_addr_len;
        CHECK(uct_ep_get_address(ep, (uct_ep_addr_t*)p));
        p += hdr->ep_len;
    } else {
        hdr->iface_len = bi->attr.iface_addr_len;
        CHECK(uct_iface_get_address(bi->iface, (uct_iface_addr_t*)p));
        p += hdr->iface_len;
    }
    return p - buf;
}

/* The peer's addresses: checked against what this transport sends */
static void unpack_addr(bench_iface_t *bi, int fd, uint8_t *buf)
{
    bench_addr_hdr_t *hdr = (bench_addr_hdr_t*)buf;
    size_t len;

    bench_read_all(fd, hdr, sizeof(*hdr), bench_progress, bi->tl,
                   "connect: peer address");
    if ((hdr->magic != BENCH_ADDR_MAGIC) ||
        (hdr->dev_len != bi->attr.device_addr_len) ||
        (hdr->iface_len != (bi->to_ep ? 0 : bi->attr.iface_addr_len)) ||
        (hdr->ep_len != (bi->to_ep ? bi->attr.ep_addr_len : 0))) {
        bench_die("connect: the peer's address is not one of %s (lengths "
                  "%u/%u/%u)", bi->tl->tl_name, hdr->dev_len, hdr->iface_len,
                  hdr->ep_len);
    }
    len = hdr->dev_len + hdr->iface_len + hdr->ep_len;
    bench_read_all(fd, buf + sizeof(*hdr), len, bench_progress, bi->tl,
                   "connect: peer address");
}

uct_ep_h bench_connect(bench_iface_t *bi, int fd, int want_ep)
{
    uint8_t local[sizeof(bench_addr_hdr_t) + 3 * BENCH_ADDR_MAX];
    uint8_t remote[sizeof(bench_addr_hdr_t) + 3 * BENCH_ADDR_MAX];
    const uint8_t *peer_dev = remote + sizeof(bench_addr_hdr_t);
    const uint8_t *peer_addr;
    uct_ep_h ep = NULL;

    /* connect-to-ep: the endpoint exists before its address is sent */
    if (bi->to_ep) {
        ep = create_ep(bi, NULL, NULL);
    }
    bench_write_all(fd, local, pack_addr(bi, ep, local));
    unpack_addr(bi, fd, remote);
    peer_addr = peer_dev + bi->attr.device_addr_len;
    if (bi->to_ep) {
        CHECK(uct_ep_connect_to_ep(ep, (const uct_device_addr_t*)peer_dev,
                                   (const uct_ep_addr_t*)peer_addr));
        /* neither side sends before the other's endpoint is connected */
        bench_write_u64(fd, BENCH_ADDR_MAGIC);
        if (bench_read_u64(fd, bench_progress, bi->tl, "connect: confirm") !=
            BENCH_ADDR_MAGIC) {
            bench_die("connect: the peer confirmed something else");
        }
    } else if (want_ep) {
        ep = create_ep(bi, (const uct_device_addr_t*)peer_dev,
                       (const uct_iface_addr_t*)peer_addr);
    }
    return ep;
}

static void check_deadline(double deadline, const bench_tl_t *tl,
                           const char *what)
{
    bench_check_stop();
    if (bench_now_us() > deadline) {
        bench_die("%s: %s did not complete in %d s", tl->tl_name, what,
                  BENCH_WAIT_LIMIT_S);
    }
}

void bench_am_short(bench_tl_t *tl, uct_ep_h ep, uint8_t id, uint64_t hdr)
{
    double deadline = bench_now_us() + BENCH_WAIT_LIMIT_S * 1e6;
    ucs_status_t status;

    while ((status = uct_ep_am_short(ep, id, hdr, NULL, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(tl->worker);
        check_deadline(deadline, tl, "am_short");
    }
    CHECK(status);
}

void bench_iface_flush(bench_iface_t *bi)
{
    double deadline = bench_now_us() + BENCH_WAIT_LIMIT_S * 1e6;
    ucs_status_t status;

    while ((status = uct_iface_flush(bi->iface, 0, NULL)) == UCS_INPROGRESS ||
           (status == UCS_ERR_NO_RESOURCE)) {
        uct_worker_progress(bi->tl->worker);
        check_deadline(deadline, bi->tl, "flush");
    }
    CHECK(status);
}

int bench_counters(const bench_iface_t *bi, uct_srq_iface_counters_t *c)
{
    static bench_query_func_t query;
    static int looked;
    void *plugin;

    if (!looked) {
        /* the loaded plugin by its soname: preloaded, or loaded RTLD_LOCAL
         * by the plugin scan of UCX 1.22+ where RTLD_DEFAULT misses it */
        plugin = dlopen("libuct_srq.so", RTLD_LAZY | RTLD_NOLOAD);
        if (plugin != NULL) {
            query = (bench_query_func_t)dlsym(plugin,
                                              "uct_srq_iface_query_counters");
            dlclose(plugin); /* it stays loaded by whoever loaded it */
        }
        looked = 1;
    }
    return (query != NULL) && (query(bi->iface, c) == UCS_OK);
}
