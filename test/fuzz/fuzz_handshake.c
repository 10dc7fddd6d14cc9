/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq fuzzer: rc_srq's connection handshake (src/uct/srq_hs.c).
 *
 * An rc_srq interface T on soft0 and a second one, P, on the same memory
 * domain. Each input becomes a few handshake datagrams delivered to T's
 * handshake UD QP (pushed into the soft device's inbound queue as UD
 * packets, srq_soft_inject), built from the input's choices: REQ, REP and
 * RTU from P's real address and handshake QP, from T itself, from
 * addresses that exist nowhere or name ports and device kinds T does not
 * have; QP numbers near real ones and random; magic, version and type
 * right and wrong; datagrams cut short and longer than T's buffers; the
 * right Q_Key and others. Then both interfaces progress. Every 64 inputs
 * a new interface must still connect to T and deliver a message: forged
 * datagrams cost nothing but themselves.
 *
 * Runs under srq-run with a plugin built with AddressSanitizer and UBSan
 * (test/Makefile.inc: test/fuzz/plugin); the soft device's hooks and the
 * verbs calls come from that plugin (dlsym), so there is one device.
 */
#include "fuzz_input.h"

#include "verbs/srq_verbs.h"
#include "verbs/soft/fabric/soft_pkt.h"

#include <uct/api/uct.h>
#include <uct/ucx_srq.h>
#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <endian.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define FH_QKEY         0x1ee75a5cu  /* rc_srq's handshake Q_Key */
#define FH_MAGIC        0x43515253u  /* "SRQC" */
#define FH_VERSION      2            /* UCT_SRQ_HS_VERSION */
#define FH_AM_ID        5
#define FH_MAX_DGRAMS   4
#define FH_CHECK_EVERY  64

#define FH_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_handshake: %s:%d: %s\n", __FILE__, \
                    __LINE__, #_cond); \
            abort(); \
        } \
    } while (0)

/* A handshake datagram as srq_hs.c lays it out (little endian) */
typedef struct fh_msg {
    uint32_t               magic;
    uint8_t                version;
    uint8_t                type;
    uint16_t               reserved;
    srq_verbs_port_addr_t  dev;
    uint32_t               ud_qpn;
    uint32_t               rc_qpn;
} __attribute__((packed)) fh_msg_t;

typedef srq_verbs_dev_t *(*fh_md_dev_t)(uct_md_h);
typedef int (*fh_inject_t)(srq_verbs_dev_t*, srq_verbs_dev_t*,
                           const void*, size_t, int);

typedef struct fh_iface {
    uct_iface_h            iface;
    srq_verbs_port_addr_t  dev_addr;
    uint32_t               ud_qpn;
    uint8_t                iface_addr[64];
} fh_iface_t;

static struct {
    uct_component_h       comp;
    uct_md_config_t      *md_config;
    uct_md_h              md;
    ucs_async_context_t  *async;
    uct_worker_h          worker;
    uct_iface_config_t   *config;
    srq_verbs_dev_t      *dev;
    fh_inject_t           inject;
    fh_iface_t            t, p;
    unsigned long         inputs;
    unsigned              received;
} fh;

/* ---- setup --------------------------------------------------------- */

static void *fh_plugin_symbol(const char *name)
{
    void *plugin = dlopen("libuct_srq.so", RTLD_LAZY | RTLD_NOLOAD);
    void *sym    = (plugin != NULL) ? dlsym(plugin, name) : NULL;

    FH_CHECK(sym != NULL);
    return sym;
}

static uct_component_h fh_component(void)
{
    uct_component_h *comps, found = NULL;
    uct_component_attr_t attr;
    unsigned i, n;

    FH_CHECK(uct_query_components(&comps, &n) == UCS_OK);
    for (i = 0; i < n; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srq")) {
            found = comps[i];
        }
    }
    uct_release_component_list(comps);
    FH_CHECK(found != NULL);
    return found;
}

static ucs_status_t fh_am(void *arg, void *data, size_t length,
                          unsigned flags)
{
    ++fh.received;
    return UCS_OK;
}

static void fh_iface_open(fh_iface_t *f)
{
    uct_iface_params_t params = {0};
    uct_iface_attr_t attr;

    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    FH_CHECK(uct_iface_open(fh.md, fh.worker, &params, fh.config,
                            &f->iface) == UCS_OK);
    FH_CHECK(uct_iface_query(f->iface, &attr) == UCS_OK);
    FH_CHECK((attr.device_addr_len == sizeof(f->dev_addr)) &&
             (attr.iface_addr_len <= sizeof(f->iface_addr)));
    FH_CHECK(uct_iface_get_device_address(f->iface,
                                          (uct_device_addr_t*)&f->dev_addr) ==
             UCS_OK);
    FH_CHECK(uct_iface_get_address(f->iface,
                                   (uct_iface_addr_t*)f->iface_addr) ==
             UCS_OK);
    memcpy(&f->ud_qpn, f->iface_addr, sizeof(f->ud_qpn));
    f->ud_qpn = le32toh(f->ud_qpn);
    FH_CHECK(uct_iface_set_am_handler(f->iface, FH_AM_ID, fh_am, NULL, 0) ==
             UCS_OK);
    uct_iface_progress_enable(f->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void fh_setup(void)
{
    static bool done;
    fh_md_dev_t md_dev;

    if (done) {
        return;
    }
    done = true;
    fh.comp = fh_component();
    FH_CHECK(uct_md_config_read(fh.comp, NULL, NULL, &fh.md_config) ==
             UCS_OK);
    FH_CHECK(uct_md_open(fh.comp, "soft0", fh.md_config, &fh.md) == UCS_OK);
    FH_CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &fh.async) == UCS_OK);
    FH_CHECK(uct_worker_create(fh.async, UCS_THREAD_MODE_SINGLE,
                               &fh.worker) == UCS_OK);
    FH_CHECK(uct_md_iface_config_read(fh.md, "rc_srq", NULL, NULL,
                                      &fh.config) == UCS_OK);
    /* forged half-open connections time out soon (UCX 1.13 takes the
     * name as given, later releases with the table's prefix) */
    FH_CHECK((uct_config_modify(fh.config, "CONN_TIMEOUT", "0.2s") ==
              UCS_OK) ||
             (uct_config_modify(fh.config, "RC_SRQ_CONN_TIMEOUT", "0.2s") ==
              UCS_OK));
    md_dev    = (fh_md_dev_t)fh_plugin_symbol("uct_srq_md_verbs_dev");
    fh.inject = (fh_inject_t)fh_plugin_symbol("srq_soft_inject");
    fh.dev    = md_dev(fh.md);
    FH_CHECK(fh.dev != NULL);
    fh_iface_open(&fh.t);
    fh_iface_open(&fh.p);
}

static void fh_progress(unsigned rounds)
{
    while (rounds-- > 0) {
        uct_worker_progress(fh.worker);
    }
}

/* A new interface connects to T and delivers a message: the handshake
 * still works for a genuine peer */
static void fh_check_connect(void)
{
    unsigned before = fh.received, i;
    uct_ep_params_t params = {0};
    fh_iface_t g;
    uct_ep_h ep;
    bool sent = false;

    fh_iface_open(&g);
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = g.iface;
    params.dev_addr   = (const uct_device_addr_t*)&fh.t.dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)fh.t.iface_addr;
    FH_CHECK(uct_ep_create(&params, &ep) == UCS_OK);
    for (i = 0; (i < 2000000) && (fh.received == before); ++i) {
        if (!sent) {
            sent = (uct_ep_am_short(ep, FH_AM_ID, 0, NULL, 0) == UCS_OK);
        }
        uct_worker_progress(fh.worker);
    }
    FH_CHECK(fh.received > before);
    uct_ep_destroy(ep);
    uct_iface_close(g.iface);
}

/* ---- datagrams ----------------------------------------------------- */

static void fh_dev_addr(fuzz_in_t *in, srq_verbs_port_addr_t *a)
{
    switch (fuzz_pick(in, 8)) {
    case 0:
        *a = fh.t.dev_addr; /* T itself */
        break;
    case 1:
        fuzz_fill(in, a, sizeof(*a)); /* anything */
        break;
    case 2:
        *a = fh.p.dev_addr; /* P, on a port it does not have */
        a->port_num = FUZZ_ONE_OF(in, ((const uint8_t[]){0, 2, 255}));
        break;
    case 3:
        *a = fh.p.dev_addr; /* P, somewhere else (another instance) */
        fuzz_fill(in, a->gid + 4 + fuzz_pick(in, 12), 1);
        break;
    case 4:
        *a = fh.p.dev_addr;
        a->kind = fuzz_u8(in);
        break;
    default:
        *a = fh.p.dev_addr;
    }
}

static uint32_t fh_qpn(fuzz_in_t *in, uint32_t real)
{
    switch (fuzz_pick(in, 6)) {
    case 0:  return fuzz_u32(in);
    case 1:  return (1u << 16) | fuzz_pick(in, 64);  /* a small QP number */
    case 2:  return real ^ (1u << 16);               /* another generation */
    case 3:  return 0;
    default: return real;
    }
}

/* One datagram to T's handshake QP, built from the input */
static void fh_datagram(fuzz_in_t *in)
{
    union {
        srq_soft_pkt_t h;
        uint8_t        bytes[SRQ_SOFT_PKT_HDR + SRQ_SOFT_UD_MTU];
    } f;
    fh_msg_t *msg = (fh_msg_t*)(f.bytes + sizeof(f.h));
    size_t dlen = sizeof(*msg);

    memset(&f, 0, sizeof(f.h) + sizeof(*msg));
    msg->magic    = htole32(fuzz_pick(in, 16) ? FH_MAGIC : fuzz_u32(in));
    msg->version  = fuzz_pick(in, 16) ? FH_VERSION : fuzz_u8(in);
    msg->type     = fuzz_pick(in, 8) ? 1 + fuzz_pick(in, 3) : fuzz_u8(in);
    msg->reserved = fuzz_pick(in, 8) ? 0 : fuzz_u16(in);
    fh_dev_addr(in, &msg->dev);
    msg->ud_qpn   = htole32(fuzz_pick(in, 2) ? fh.p.ud_qpn :
                                                fh_qpn(in, fh.p.ud_qpn));
    msg->rc_qpn   = htole32(fh_qpn(in, fh.p.ud_qpn + 1));
    switch (fuzz_pick(in, 8)) {
    case 0: /* cut short */
        dlen = fuzz_pick(in, sizeof(*msg));
        break;
    case 1: /* longer: past T's receive buffer too */
        dlen += fuzz_u16(in) % (SRQ_SOFT_UD_MTU - sizeof(*msg) + 1);
        fuzz_fill(in, (uint8_t*)msg + sizeof(*msg), 64);
        break;
    }

    f.h.opcode  = SRQ_SOFT_OP_SEND;
    f.h.flags   = SRQ_SOFT_PKT_F_UD;
    f.h.dst_qpn = fuzz_pick(in, 16) ? fh.t.ud_qpn : fh_qpn(in, fh.t.ud_qpn);
    /* the source QP is the device's to say, and a UD QP of this process
     * (P) or nothing that could ever be one: a datagram may claim any
     * source (msg), but no real QP can be impersonated here, or a new
     * interface's key could be taken ahead of time by a "device" no HCA
     * is (fh_check_connect would fail) */
    switch (fuzz_pick(in, 4)) {
    case 0:  f.h.src_qpn = fuzz_u16(in);                       break;
    case 1:  f.h.src_qpn = fuzz_u32(in) | 0x01000000u;         break;
    default: f.h.src_qpn = fh.p.ud_qpn;
    }
    f.h.aux     = fuzz_pick(in, 16) ? FH_QKEY : fuzz_u32(in);
    f.h.length  = (uint32_t)dlen;
    f.h.src_lid = fh.p.dev_addr.lid;
    memcpy(f.h.src_inst, fh.p.dev_addr.gid + 4, SRQ_SOFT_INST_LEN);
    fh.inject(fh.dev, fh.dev, f.bytes, sizeof(f.h) + dlen,
              0 /* SRQ_SOFT_INJECT_FRAME */);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    unsigned i, n;

    fh_setup();
    n = 1 + fuzz_pick(&in, FH_MAX_DGRAMS);
    for (i = 0; i < n; ++i) {
        fh_datagram(&in);
    }
    fh_progress(8);
    if ((++fh.inputs % FH_CHECK_EVERY) == 0) {
        fh_check_connect();
    }
    return 0;
}

#ifndef SRQ_FUZZ_LIBFUZZER
/* Everything goes, so that LeakSanitizer sees what a close leaves */
static void fh_teardown(void)
{
    uct_iface_close(fh.t.iface);
    uct_iface_close(fh.p.iface);
    uct_config_release(fh.config);
    uct_worker_destroy(fh.worker);
    ucs_async_context_destroy(fh.async);
    uct_md_close(fh.md);
    uct_config_release(fh.md_config);
}

int main(int argc, char **argv)
{
    typedef ucs_status_t (*query_t)(uct_iface_h, uct_srq_iface_counters_t*);
    uct_srq_iface_counters_t c;
    int ret = fuzz_main(argc, argv, "fuzz_handshake", 10000);
    query_t query;

    /* where the datagrams went */
    if ((ret == 0) && (fh.t.iface != NULL)) {
        query = (query_t)fh_plugin_symbol("uct_srq_iface_query_counters");
        FH_CHECK(query(fh.t.iface, &c) == UCS_OK);
        printf("fuzz_handshake: datagrams dropped %lu; connections live %lu, "
               "failed %lu; handshake datagrams sent %lu; genuine connects "
               "%lu\n", (unsigned long)c.conn_dropped,
               (unsigned long)c.conns, (unsigned long)c.conns_failed,
               (unsigned long)c.conn_sent,
               (unsigned long)(fh.inputs / FH_CHECK_EVERY));
        fh_teardown();
    }
    return ret;
}
#endif
