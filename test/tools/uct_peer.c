/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_peer: a separate process with an rc_srq interface on soft0:1, for
 * tests that need a real peer process (one they can kill). It prints
 *   <device address hex> <interface address hex>
 * on one line of stdout, then progresses its worker, counting the active
 * messages (id 1) it receives, until it is killed or stdin closes.
 *
 *   uct_peer DEV_HEX IFACE_HEX
 * first connects to that interface and sends it one active message (id 1),
 * acknowledged before the address line is printed: the test's interface
 * then holds a connection a peer asked for.
 *
 *   uct_peer DEV_HEX IFACE_HEX req
 * only sends the handshake's REQ, prints the address line and waits for
 * stdin to close without progressing again: with UCX_RC_SRQ_ASYNC_INTERVAL
 * long, nothing answers the test interface's REP (a client that dies
 * between its REQ and its RTU).
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long received;

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++received;
    return UCS_OK;
}

static int from_hex(const char *hex, char *buf, size_t max)
{
    size_t len = strlen(hex) / 2, i;
    unsigned v;

    for (i = 0; (i < len) && (i < max); ++i) {
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        buf[i] = (char)v;
    }
    return (len <= max) ? 0 : -1;
}

static void print_hex(const void *p, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        printf("%02x", ((const unsigned char*)p)[i]);
    }
}

#define CHECK(_e) \
    do { \
        ucs_status_t _s = (_e); \
        if (_s != UCS_OK) { \
            fprintf(stderr, "uct_peer: %s: %s\n", #_e, ucs_status_string(_s)); \
            return 1; \
        } \
    } while (0)

int main(int argc, char **argv)
{
    uct_iface_params_t params = {};
    uct_component_h *components, srq = NULL;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_iface_config_t *config;
    ucs_async_context_t *async;
    uct_iface_attr_t attr;
    uct_worker_h worker;
    uct_iface_h iface;
    unsigned num, i;
    char dev[64], addr[64];
    uct_md_h md;

    CHECK(uct_query_components(&components, &num));
    for (i = 0; i < num; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &cattr) == UCS_OK) &&
            !strcmp(cattr.name, "srq")) {
            srq = components[i];
        }
    }
    if (srq == NULL) {
        fprintf(stderr, "uct_peer: component srq not registered\n");
        return 1;
    }

    CHECK(uct_md_config_read(srq, NULL, NULL, &md_config));
    CHECK(uct_md_open(srq, "soft0", md_config, &md));
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async));
    CHECK(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker));
    CHECK(uct_md_iface_config_read(md, "rc_srq", NULL, NULL, &config));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    CHECK(uct_iface_open(md, worker, &params, config, &iface));
    CHECK(uct_iface_set_am_handler(iface, 1, am_cb, NULL, 0));
    CHECK(uct_iface_query(iface, &attr));
    CHECK(uct_iface_get_device_address(iface, (uct_device_addr_t*)dev));
    CHECK(uct_iface_get_address(iface, (uct_iface_addr_t*)addr));
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    if ((argc == 3) || (argc == 4)) {
        char peer_dev[64], peer_iface[64];
        uct_ep_params_t ep_params = {};
        uct_ep_h ep;

        if ((from_hex(argv[1], peer_dev, sizeof(peer_dev)) != 0) ||
            (from_hex(argv[2], peer_iface, sizeof(peer_iface)) != 0)) {
            fprintf(stderr, "uct_peer: bad address\n");
            return 1;
        }
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = iface;
        ep_params.dev_addr   = (const uct_device_addr_t*)peer_dev;
        ep_params.iface_addr = (const uct_iface_addr_t*)peer_iface;
        CHECK(uct_ep_create(&ep_params, &ep));
        while ((argc == 4) && (uct_worker_progress(worker) > 0)) {
        }
        while ((argc == 3) && (uct_ep_am_short(ep, 1, 0, NULL, 0) != UCS_OK)) {
            uct_worker_progress(worker);
        }
        while ((argc == 3) && (uct_ep_flush(ep, 0, NULL) != UCS_OK)) {
            uct_worker_progress(worker);
        }
    }

    print_hex(dev, attr.device_addr_len);
    printf(" ");
    print_hex(addr, attr.iface_addr_len);
    printf("\n");
    fflush(stdout);

    if (argc == 4) { /* no progress: stdin closes, or we are killed */
        char c;
        while (read(0, &c, 1) > 0) {
        }
        return 0;
    }
    /* serve until stdin closes (the test ended) or we are killed */
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    for (;;) {
        char c;
        ssize_t n;

        uct_worker_progress(worker);
        n = read(0, &c, 1);
        if (n == 0) {
            break;
        }
    }

    uct_iface_close(iface);
    uct_config_release(config);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    uct_config_release(md_config);
    uct_release_component_list(components);
    fprintf(stderr, "uct_peer: received %lu messages\n", received);
    return 0;
}
