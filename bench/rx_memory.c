/*
 * rx_memory: receive memory of one rc_srq interface with N connected peers.
 *
 *   rx_memory N [N...]
 *
 * For each N: one receiving interface and N peer interfaces (sharing one
 * memory domain and worker, as many interfaces of one process would) on
 * soft0:1; every peer connects and sends one active message; then the
 * receiver's counters (uct_srq_iface_query_counters) are read. Prints one
 * line per N:
 *
 *   peers <N> conns <connections> rx_bytes_held <bytes> rx_queue <buffers>
 *
 * Run it under srq-run (the plugin must be loaded).
 */
#include <uct/api/uct.h>
#include <uct/ucx_srq.h>
#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(_e) \
    do { \
        ucs_status_t _s = (_e); \
        if (_s != UCS_OK) { \
            fprintf(stderr, "rx_memory: %s: %s\n", #_e, ucs_status_string(_s)); \
            exit(1); \
        } \
    } while (0)

typedef ucs_status_t (*query_func_t)(uct_iface_h, uct_srq_iface_counters_t*);

static unsigned long received;

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++received;
    return UCS_OK;
}

static uct_component_h find_srq(void)
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
        fprintf(stderr, "rx_memory: component srq not registered (use srq-run)\n");
        exit(1);
    }
    return srq;
}

static uct_iface_h open_iface(uct_md_h md, uct_worker_h worker,
                              const char *rx_queue_len)
{
    uct_iface_params_t params = {};
    uct_iface_config_t *config;
    uct_iface_h iface;

    CHECK(uct_md_iface_config_read(md, "rc_srq", NULL, NULL, &config));
    if (rx_queue_len != NULL) {
        /* the senders receive nothing: keep them small */
        CHECK(uct_config_modify(config, "RX_QUEUE_LEN", rx_queue_len));
        CHECK(uct_config_modify(config, "RX_BATCH", "8"));
        CHECK(uct_config_modify(config, "TX_QUEUE_LEN", "16"));
        CHECK(uct_config_modify(config, "TX_CQ_LEN", "64"));
        CHECK(uct_config_modify(config, "CONN_QUEUE_LEN", "8"));
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    CHECK(uct_iface_open(md, worker, &params, config, &iface));
    uct_config_release(config);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return iface;
}

static void run(uct_component_h srq, query_func_t query, int peers)
{
    uct_md_config_t *md_config;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h server, *clients;
    uct_ep_h *eps;
    uct_iface_attr_t attr;
    uct_ep_params_t ep_params = {};
    uct_srq_iface_counters_t c;
    char dev[64], addr[64];
    int *sent, pending = peers;
    time_t deadline = time(NULL) + 120;
    uct_md_h md;

    CHECK(uct_md_config_read(srq, NULL, NULL, &md_config));
    CHECK(uct_md_open(srq, "soft0", md_config, &md));
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async));
    CHECK(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker));

    server = open_iface(md, worker, NULL);
    CHECK(uct_iface_set_am_handler(server, 1, am_cb, NULL, 0));
    CHECK(uct_iface_query(server, &attr));
    CHECK(uct_iface_get_device_address(server, (uct_device_addr_t*)dev));
    CHECK(uct_iface_get_address(server, (uct_iface_addr_t*)addr));

    clients = calloc(peers, sizeof(*clients));
    eps     = calloc(peers, sizeof(*eps));
    sent    = calloc(peers, sizeof(*sent));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.dev_addr   = (uct_device_addr_t*)dev;
    ep_params.iface_addr = (uct_iface_addr_t*)addr;
    for (int i = 0; i < peers; ++i) {
        clients[i]      = open_iface(md, worker, "8");
        ep_params.iface = clients[i];
        CHECK(uct_ep_create(&ep_params, &eps[i]));
    }

    received = 0;
    while ((pending > 0) || (received < (unsigned long)peers)) {
        for (int i = 0; i < peers; ++i) {
            if (!sent[i] && (uct_ep_am_short(eps[i], 1, i, NULL, 0) == UCS_OK)) {
                sent[i] = 1;
                --pending;
            }
        }
        uct_worker_progress(worker);
        if (time(NULL) > deadline) {
            fprintf(stderr, "rx_memory: %d peers did not all connect\n", peers);
            exit(1);
        }
    }

    CHECK(query(server, &c));
    printf("peers %d conns %lu rx_bytes_held %lu rx_queue %lu\n", peers,
           (unsigned long)c.conns, (unsigned long)c.rx_bytes_held,
           (unsigned long)c.rx_queue_target);
    fflush(stdout);

    for (int i = 0; i < peers; ++i) {
        uct_ep_destroy(eps[i]);
        uct_iface_close(clients[i]);
    }
    uct_iface_close(server);
    free(clients);
    free(eps);
    free(sent);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    uct_config_release(md_config);
}

int main(int argc, char **argv)
{
    query_func_t query;
    uct_component_h srq;

    if (argc < 2) {
        fprintf(stderr, "usage: %s N [N...]\n", argv[0]);
        return 2;
    }
    srq   = find_srq();
    query = (query_func_t)dlsym(RTLD_DEFAULT, "uct_srq_iface_query_counters");
    if (query == NULL) {
        fprintf(stderr, "rx_memory: uct_srq_iface_query_counters not found\n");
        return 1;
    }
    for (int i = 1; i < argc; ++i) {
        run(srq, query, atoi(argv[i]));
    }
    return 0;
}
