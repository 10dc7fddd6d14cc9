/*
 * rx_memory: receive memory of one rc_srq interface with N connected peers,
 * idle, under a many-to-one flood, and quiet again after it.
 *
 *   rx_memory [-f TOTAL] [-q MAX_QUIET_MS] srq|qp N [N...]
 *
 * srq: the receiver keeps its defaults (one shared receive queue, adaptive
 * depth); qp: the receiver gives every QP its own queue (UCX_RC_SRQ_SRQ=n),
 * the baseline. In both modes the receiver reconsiders its depth every 5 ms
 * and shrinks after 100 ms of quiet (RX_ADAPT_INTERVAL, RX_SHRINK_DELAY),
 * so that the quiet phase fits in a benchmark; the other defaults stay.
 *
 * For each N: one receiving interface and N peer interfaces (sharing one
 * memory domain and worker, as many interfaces of one process would) on
 * soft0:1; the peers have small queues, they receive nothing. Phases:
 *   idle  - every peer connected and sent one active message
 *   flood - every peer sent a burst of max(4, TOTAL / N) messages (TOTAL
 *           default 20000), as fast as its send queue takes them, while the
 *           receiver progresses in the same loop; read as the last arrives
 *   quiet - the worker progresses with no traffic until the receiver's
 *           memory and depth have not moved for 3 shrink delays (at most
 *           MAX_QUIET_MS, default 5000)
 * Prints one line per phase, the receiver's counters (the event counters
 * count since the receiver opened):
 *
 *   mode <m> peers <N> phase <p> conns <c> held <bytes> target <buffers>
 *     now <buffers> peak <buffers> limit <n> rnr <n> grows <n> shrinks <n>
 *     retired <n> msgs <n> ms <phase duration>
 *
 * Run it under srq-run (the plugin must be loaded). It measures, never
 * judges: the exit status is non-zero only when the run itself fails.
 */
#include "bench_uct.h"

#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the receiver's pace, for the benchmark only (see the header) */
#define RXM_ADAPT_INTERVAL  "5ms"
#define RXM_SHRINK_DELAY    "100ms"
#define RXM_SHRINK_DELAY_MS 100
/* any phase that has not finished by then is a hang, not a measurement */
#define RXM_PHASE_LIMIT_S   60

typedef struct {
    const char    *mode;        /* "srq" or "qp" */
    int           peers;
    uct_md_h      md;
    ucs_async_context_t *async;
    uct_worker_h  worker;
    uct_iface_h   server;
    uct_iface_h   *clients;
    uct_ep_h      *eps;
    unsigned long *left;        /* messages each peer has still to send */
} rxm_run_t;

static query_func_t query;
static unsigned long received;

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++received;
    return UCS_OK;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The peers receive nothing: the smallest queues the transport allows
 * (RX_QUEUE_MIN must be >= RX_BATCH), so that only the receiver's memory
 * grows with the number of peers */
static void config_peer(uct_iface_config_t *config)
{
    CHECK(uct_config_modify(config, "RX_BATCH", "8"));
    CHECK(uct_config_modify(config, "RX_QUEUE_MIN", "8"));
    CHECK(uct_config_modify(config, "RX_QUEUE_MAX", "8"));
    CHECK(uct_config_modify(config, "TX_QUEUE_LEN", "16"));
    CHECK(uct_config_modify(config, "TX_CQ_LEN", "64"));
    CHECK(uct_config_modify(config, "CONN_QUEUE_LEN", "8"));
}

static void config_receiver(uct_iface_config_t *config, const char *mode)
{
    CHECK(uct_config_modify(config, "RX_ADAPT_INTERVAL", RXM_ADAPT_INTERVAL));
    CHECK(uct_config_modify(config, "RX_SHRINK_DELAY", RXM_SHRINK_DELAY));
    if (!strcmp(mode, "qp")) {
        CHECK(uct_config_modify(config, "SRQ", "n"));
    }
}

static uct_iface_h open_iface(uct_md_h md, uct_worker_h worker,
                              const char *receiver_mode)
{
    uct_iface_params_t params = {};
    uct_iface_config_t *config;
    uct_iface_h iface;

    CHECK(uct_md_iface_config_read(md, "rc_srq", NULL, NULL, &config));
    if (receiver_mode != NULL) {
        config_receiver(config, receiver_mode);
    } else {
        config_peer(config);
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

static void report(const rxm_run_t *r, const char *phase, unsigned long msgs,
                   double ms)
{
    uct_srq_iface_counters_t c;

    CHECK(query(r->server, &c));
    printf("mode %s peers %d phase %s conns %lu held %lu target %lu now %lu "
           "peak %lu limit %lu rnr %lu grows %lu shrinks %lu retired %lu "
           "msgs %lu ms %.0f\n", r->mode, r->peers, phase,
           (unsigned long)c.conns, (unsigned long)c.rx_bytes_held,
           (unsigned long)c.rx_queue_target, (unsigned long)c.rx_queue_now,
           (unsigned long)c.rx_queue_peak, (unsigned long)c.rx_limit_events,
           (unsigned long)c.rx_rnr, (unsigned long)c.rx_grows,
           (unsigned long)c.rx_shrinks, (unsigned long)c.rx_retired, msgs, ms);
    fflush(stdout);
}

/* Every peer with messages left sends until its send queue is full; then
 * one progress call, for the receiver and the peers alike, as one process
 * with all these interfaces would. Returns when all @total arrived. */
static void send_all(rxm_run_t *r, unsigned long total, const char *phase)
{
    double deadline = now_ms() + RXM_PHASE_LIMIT_S * 1e3;

    received = 0;
    while (received < total) {
        for (int i = 0; i < r->peers; ++i) {
            while ((r->left[i] > 0) &&
                   (uct_ep_am_short(r->eps[i], 1, r->left[i], NULL, 0) == UCS_OK)) {
                --r->left[i];
            }
        }
        uct_worker_progress(r->worker);
        if (now_ms() > deadline) {
            fprintf(stderr, "rx_memory: %s %d peers %s: %lu of %lu messages "
                    "after %d s\n", r->mode, r->peers, phase, received, total,
                    RXM_PHASE_LIMIT_S);
            exit(1);
        }
    }
}

/* Quiet until the receiver's memory and depth stay put for 3 shrink
 * delays: by then it has shrunk as far as it will */
static void quiet(rxm_run_t *r, double max_ms)
{
    double start = now_ms(), stable_since = start, now;
    uct_srq_iface_counters_t c;
    uint64_t held = 0, target = 0;

    do {
        uct_worker_progress(r->worker);
        CHECK(query(r->server, &c));
        now = now_ms();
        if ((c.rx_bytes_held != held) || (c.rx_queue_target != target)) {
            held         = c.rx_bytes_held;
            target       = c.rx_queue_target;
            stable_since = now;
        }
    } while ((now - stable_since < 3 * RXM_SHRINK_DELAY_MS) &&
             (now - start < max_ms));
    report(r, "quiet", 0, now - start);
}

static void setup(rxm_run_t *r, uct_component_h srq)
{
    uct_md_config_t *md_config;
    uct_ep_params_t ep_params = {};
    char dev[64], addr[64];

    CHECK(uct_md_config_read(srq, NULL, NULL, &md_config));
    CHECK(uct_md_open(srq, "soft0", md_config, &r->md));
    uct_config_release(md_config);
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &r->async));
    CHECK(uct_worker_create(r->async, UCS_THREAD_MODE_SINGLE, &r->worker));

    r->server = open_iface(r->md, r->worker, r->mode);
    CHECK(uct_iface_set_am_handler(r->server, 1, am_cb, NULL, 0));
    CHECK(uct_iface_get_device_address(r->server, (uct_device_addr_t*)dev));
    CHECK(uct_iface_get_address(r->server, (uct_iface_addr_t*)addr));

    r->clients = calloc(r->peers, sizeof(*r->clients));
    r->eps     = calloc(r->peers, sizeof(*r->eps));
    r->left    = calloc(r->peers, sizeof(*r->left));
    if ((r->clients == NULL) || (r->eps == NULL) || (r->left == NULL)) {
        fprintf(stderr, "rx_memory: out of memory\n");
        exit(1);
    }
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.dev_addr   = (uct_device_addr_t*)dev;
    ep_params.iface_addr = (uct_iface_addr_t*)addr;
    for (int i = 0; i < r->peers; ++i) {
        r->clients[i]   = open_iface(r->md, r->worker, NULL);
        ep_params.iface = r->clients[i];
        CHECK(uct_ep_create(&ep_params, &r->eps[i]));
    }
}

static void teardown(rxm_run_t *r)
{
    for (int i = 0; i < r->peers; ++i) {
        uct_ep_destroy(r->eps[i]);
        uct_iface_close(r->clients[i]);
    }
    uct_iface_close(r->server);
    free(r->clients);
    free(r->eps);
    free(r->left);
    uct_worker_destroy(r->worker);
    ucs_async_context_destroy(r->async);
    uct_md_close(r->md);
}

static void run(uct_component_h srq, const char *mode, int peers,
                unsigned long flood_total, double max_quiet_ms)
{
    rxm_run_t r = {.mode = mode, .peers = peers};
    unsigned long burst = (flood_total + peers - 1) / peers;
    double start;

    setup(&r, srq);

    start = now_ms();
    for (int i = 0; i < peers; ++i) {
        r.left[i] = 1;
    }
    send_all(&r, peers, "connecting");
    report(&r, "idle", peers, now_ms() - start);

    if (burst < 4) {
        burst = 4;
    }
    for (int i = 0; i < peers; ++i) {
        r.left[i] = burst;
    }
    start = now_ms();
    send_all(&r, burst * peers, "flood");
    report(&r, "flood", burst * peers, now_ms() - start);

    quiet(&r, max_quiet_ms);
    teardown(&r);
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-f TOTAL] [-q MAX_QUIET_MS] srq|qp N [N...]\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned long flood_total = 20000;
    double max_quiet_ms       = 5000;
    uct_component_h srq;
    const char *mode;
    int opt;

    bench_prog = "rx_memory";
    while ((opt = getopt(argc, argv, "f:q:")) != -1) {
        switch (opt) {
        case 'f':
            flood_total = strtoul(optarg, NULL, 0);
            break;
        case 'q':
            max_quiet_ms = atof(optarg);
            break;
        default:
            usage(argv[0]);
        }
    }
    if ((argc - optind < 2) ||
        (strcmp(argv[optind], "srq") && strcmp(argv[optind], "qp"))) {
        usage(argv[0]);
    }
    mode  = argv[optind];
    srq   = bench_srq_component();
    query = bench_counters_query();
    for (int i = optind + 1; i < argc; ++i) {
        run(srq, mode, atoi(argv[i]), flood_total, max_quiet_ms);
    }
    return 0;
}
