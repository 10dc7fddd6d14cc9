/*
 * incast_rate: many senders flood one rc_srq receiver with 8-byte am_short;
 * the receiver measures the message rate. One process per role, started by
 * bench/incast (the script), which also gives the start signal:
 *
 *   incast_rate recv SENDERS MSGS
 *       opens an interface on soft0:1 (configured from the environment,
 *       UCX_RC_SRQ_*), prints "addr <device address hex>:<interface address
 *       hex>", counts the flood messages (AM id 2) and, when SENDERS x MSGS
 *       have arrived, prints
 *         done msgs <n> us <first to last> rate <msg/s> held <bytes>
 *              depth <buffers> peak <buffers> grows <n> limit <n>
 *       then progresses (acknowledging late retransmissions) until SIGTERM
 *       or SIGINT, prints "exit rnr <n> limit <n> grows <n> held <bytes>" and
 *       closes everything.
 *   incast_rate send DEVADDR_HEX:IFACEADDR_HEX MSGS GO_FIFO
 *       connects to the receiver (one AM id 1 message), prints "ready",
 *       waits until GO_FIFO has a writer (the start signal for all senders
 *       at once), sends MSGS am_short (8-byte header, no payload) as fast as
 *       its send queue takes them, flushes and exits.
 *
 * The senders are separate processes so that they race as real ones would,
 * each with its own device; the rate is the receiver's, from its first
 * flood message to its last. SIGTERM ends either role through its normal
 * cleanup, so that no soft-device segment outlives it. Run under srq-run.
 */
#include "bench_uct.h"

#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define INCAST_AM_HELLO  1
#define INCAST_AM_FLOOD  2
#define INCAST_ADDR_MAX  64
/* a run that has not ended by then is a hang, not a measurement */
#define INCAST_LIMIT_S   90

typedef struct {
    uct_component_h     srq;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
} incast_ctx_t;

static volatile sig_atomic_t stop;
static unsigned long flood_received;
static double first_us, last_us;

static void on_signal(int sig)
{
    stop = 1;
}

/* no SA_RESTART: a sender blocked opening the start FIFO must wake up */
static void catch_signals(void)
{
    struct sigaction sa = {};

    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static ucs_status_t hello_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    return UCS_OK;
}

static ucs_status_t flood_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    last_us = now_us();
    if (flood_received++ == 0) {
        first_us = last_us;
    }
    return UCS_OK;
}

/* @sender: the senders receive nothing, give them the smallest receive
 * queue (RX_QUEUE_MIN >= RX_BATCH); the receiver takes the environment's */
static void ctx_open(incast_ctx_t *ctx, int sender)
{
    uct_iface_params_t params = {};
    uct_md_config_t *md_config;
    uct_iface_config_t *config;

    ctx->srq = bench_srq_component();
    CHECK(uct_md_config_read(ctx->srq, NULL, NULL, &md_config));
    CHECK(uct_md_open(ctx->srq, "soft0", md_config, &ctx->md));
    uct_config_release(md_config);
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &ctx->async));
    CHECK(uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE, &ctx->worker));

    CHECK(uct_md_iface_config_read(ctx->md, "rc_srq", NULL, NULL, &config));
    if (sender) {
        CHECK(uct_config_modify(config, "RX_BATCH", "8"));
        CHECK(uct_config_modify(config, "RX_QUEUE_MIN", "8"));
        CHECK(uct_config_modify(config, "RX_QUEUE_MAX", "8"));
    }
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    CHECK(uct_iface_open(ctx->md, ctx->worker, &params, config, &ctx->iface));
    uct_config_release(config);
    uct_iface_progress_enable(ctx->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void ctx_close(incast_ctx_t *ctx)
{
    uct_iface_close(ctx->iface);
    uct_worker_destroy(ctx->worker);
    ucs_async_context_destroy(ctx->async);
    uct_md_close(ctx->md);
}

static void print_hex(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        printf("%02x", p[i]);
    }
}

static int parse_hex(const char *hex, uint8_t *buf, size_t max)
{
    size_t len = strlen(hex) / 2;
    unsigned byte;

    if ((strlen(hex) % 2) || (len > max)) {
        return -1;
    }
    for (size_t i = 0; i < len; ++i) {
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1) {
            return -1;
        }
        buf[i] = byte;
    }
    return 0;
}

static void print_counters(query_func_t query, uct_iface_h iface,
                           const char *what)
{
    uct_srq_iface_counters_t c;

    CHECK(query(iface, &c));
    if (!strcmp(what, "done")) {
        printf(" held %lu depth %lu peak %lu grows %lu limit %lu",
               (unsigned long)c.rx_bytes_held, (unsigned long)c.rx_queue_target,
               (unsigned long)c.rx_queue_peak, (unsigned long)c.rx_grows,
               (unsigned long)c.rx_limit_events);
    } else {
        printf(" rnr %lu limit %lu grows %lu held %lu",
               (unsigned long)c.rx_rnr, (unsigned long)c.rx_limit_events,
               (unsigned long)c.rx_grows, (unsigned long)c.rx_bytes_held);
    }
    printf("\n");
    fflush(stdout);
}

static int run_receiver(int senders, unsigned long msgs)
{
    unsigned long total = senders * msgs;
    double deadline     = now_us() + INCAST_LIMIT_S * 1e6;
    uct_iface_attr_t attr;
    incast_ctx_t ctx;
    query_func_t query;
    uint8_t dev[INCAST_ADDR_MAX], addr[INCAST_ADDR_MAX];

    query = bench_counters_query();
    ctx_open(&ctx, 0);
    CHECK(uct_iface_set_am_handler(ctx.iface, INCAST_AM_HELLO, hello_cb, NULL, 0));
    CHECK(uct_iface_set_am_handler(ctx.iface, INCAST_AM_FLOOD, flood_cb, NULL, 0));
    CHECK(uct_iface_query(ctx.iface, &attr));
    if ((attr.device_addr_len > sizeof(dev)) ||
        (attr.iface_addr_len > sizeof(addr))) {
        fprintf(stderr, "incast_rate: addresses too long\n");
        return 1;
    }
    CHECK(uct_iface_get_device_address(ctx.iface, (uct_device_addr_t*)dev));
    CHECK(uct_iface_get_address(ctx.iface, (uct_iface_addr_t*)addr));
    printf("addr ");
    print_hex(dev, attr.device_addr_len);
    printf(":");
    print_hex(addr, attr.iface_addr_len);
    printf("\n");
    fflush(stdout);

    while (!stop && (flood_received < total) && (now_us() < deadline)) {
        uct_worker_progress(ctx.worker);
    }
    if (flood_received == total) {
        printf("done msgs %lu us %.0f rate %.0f", total, last_us - first_us,
               (total > 1) ? (total - 1) * 1e6 / (last_us - first_us) : 0.0);
        print_counters(query, ctx.iface, "done");
    } else {
        fprintf(stderr, "incast_rate: received %lu of %lu messages\n",
                flood_received, total);
    }

    /* the senders flush: their last ACKs need us */
    while (!stop && (now_us() < deadline)) {
        uct_worker_progress(ctx.worker);
    }
    printf("exit");
    print_counters(query, ctx.iface, "exit");
    ctx_close(&ctx);
    return (flood_received == total) ? 0 : 1;
}

/* Block until the script opens the FIFO for writing: all senders start
 * together. Returns -1 when a signal stopped the wait. */
static int wait_start(const char *fifo)
{
    int fd;

    do {
        fd = open(fifo, O_RDONLY);
    } while ((fd < 0) && (errno == EINTR) && !stop);
    if (fd < 0) {
        if (!stop) {
            fprintf(stderr, "incast_rate: %s: %s\n", fifo, strerror(errno));
        }
        return -1;
    }
    close(fd);
    return 0;
}

static int run_sender(const char *addr_hex, unsigned long msgs,
                      const char *fifo)
{
    uint8_t dev[INCAST_ADDR_MAX], addr[INCAST_ADDR_MAX];
    double deadline = now_us() + INCAST_LIMIT_S * 1e6;
    uct_ep_params_t ep_params = {};
    char dev_hex[2 * INCAST_ADDR_MAX + 1], if_hex[2 * INCAST_ADDR_MAX + 1];
    unsigned long sent = 0;
    ucs_status_t status;
    incast_ctx_t ctx;
    uct_ep_h ep;
    int ret = 1;

    if ((sscanf(addr_hex, "%128[0-9a-f]:%128[0-9a-f]", dev_hex, if_hex) != 2) ||
        (parse_hex(dev_hex, dev, sizeof(dev)) != 0) ||
        (parse_hex(if_hex, addr, sizeof(addr)) != 0)) {
        fprintf(stderr, "incast_rate: bad address '%s'\n", addr_hex);
        return 2;
    }
    ctx_open(&ctx, 1);
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = ctx.iface;
    ep_params.dev_addr   = (uct_device_addr_t*)dev;
    ep_params.iface_addr = (uct_iface_addr_t*)addr;
    CHECK(uct_ep_create(&ep_params, &ep));

    /* connected once the hello is taken */
    while (!stop && (now_us() < deadline) &&
           (uct_ep_am_short(ep, INCAST_AM_HELLO, 0, NULL, 0) != UCS_OK)) {
        uct_worker_progress(ctx.worker);
    }
    if (stop || (now_us() >= deadline)) {
        goto out;
    }
    printf("ready\n");
    fflush(stdout);
    if (wait_start(fifo) != 0) {
        goto out;
    }

    while (!stop && (sent < msgs) && (now_us() < deadline)) {
        if (uct_ep_am_short(ep, INCAST_AM_FLOOD, sent, NULL, 0) == UCS_OK) {
            ++sent;
        } else {
            uct_worker_progress(ctx.worker);
        }
    }
    do {
        status = uct_ep_flush(ep, 0, NULL);
        uct_worker_progress(ctx.worker);
    } while ((status == UCS_INPROGRESS || status == UCS_ERR_NO_RESOURCE) &&
             !stop && (now_us() < deadline));
    ret = (sent == msgs) && (status == UCS_OK) ? 0 : 1;
    if (ret != 0) {
        fprintf(stderr, "incast_rate[%d]: sent %lu of %lu, flush %s\n",
                (int)getpid(), sent, msgs, ucs_status_string(status));
    }
out:
    uct_ep_destroy(ep);
    ctx_close(&ctx);
    return ret;
}

int main(int argc, char **argv)
{
    bench_prog = "incast_rate";
    catch_signals();
    if ((argc == 4) && !strcmp(argv[1], "recv")) {
        return run_receiver(atoi(argv[2]), strtoul(argv[3], NULL, 0));
    } else if ((argc == 5) && !strcmp(argv[1], "send")) {
        return run_sender(argv[2], strtoul(argv[3], NULL, 0), argv[4]);
    }
    fprintf(stderr, "usage: %s recv SENDERS MSGS\n"
                    "       %s send DEVADDR_HEX:IFACEADDR_HEX MSGS GO_FIFO\n",
            argv[0], argv[0]);
    return 2;
}
