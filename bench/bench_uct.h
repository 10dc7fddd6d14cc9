/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The UCT layer the benchmark programs share: open any transport on a
 * device (rc_srq, rc_verbs, ud_verbs, posix, tcp, ...) from whichever
 * component offers it, and connect endpoints to a peer process through a
 * socket, to the peer's interface or to its endpoint as the transport's
 * capabilities say. One piece of code for both kinds of connection, so
 * that rc_srq (connect-to-iface) and UCX's rc_verbs (connect-to-ep) are
 * measured by the same program.
 *
 * Everything opened here is closed by bench_tl_close, and also when a
 * benchmark dies (bench_die, a signal), so that a failed run leaves no
 * device segment behind.
 */
#ifndef BENCH_UCT_H_
#define BENCH_UCT_H_

#include "bench_proc.h"

#include <uct/api/uct.h>
#include <uct/ucx_srq.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(_e) \
    do { \
        ucs_status_t _s = (_e); \
        if (_s != UCS_OK) { \
            bench_die("%s: %s", #_e, ucs_status_string(_s)); \
        } \
    } while (0)

typedef struct bench_iface bench_iface_t;

/* A transport on a device: its memory domain (from the component that
 * offers the transport there), an async context and a worker; any number
 * of interfaces share them, as interfaces of one process would */
typedef struct {
    const char          *tl_name;
    const char          *dev_name;
    char                component[UCT_COMPONENT_NAME_MAX];
    char                md_name[UCT_MD_NAME_MAX];
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    bench_iface_t       **ifaces;   /* opened on it, closed with it */
    int                 num_ifaces;
} bench_tl_t;

struct bench_iface {
    bench_tl_t       *tl;
    uct_iface_h      iface;
    uct_iface_attr_t attr;
    int              to_ep;   /* connects to a peer's endpoint (else to its
                                 interface) */
    uct_ep_h         *eps;    /* bench_connect's, destroyed at close */
    int              num_eps;
};

/*
 * The options every UCT benchmark takes (getopt string BENCH_OPTS): -t TL
 * (default rc_srq), -d DEV (soft0:1), -l LABEL (the transport's name), and
 * -o KEY=VALUE, an interface setting for bench_iface_open (repeatable).
 */
#define BENCH_OPTS       "t:d:l:o:"
#define BENCH_MAX_CONFIG 32

typedef struct bench_opts {
    const char *tl_name;
    const char *dev_name;
    const char *label;
    const char *config[BENCH_MAX_CONFIG + 1]; /* NULL-terminated */
    int         num_config;
} bench_opts_t;

void bench_opts_init(bench_opts_t *o);
/* @opt (with @arg) if it is one of them: 1; 0 if not. Exits on too many -o */
int bench_opts_take(bench_opts_t *o, int opt, const char *arg);

static inline const char *bench_opts_label(const bench_opts_t *o)
{
    return (o->label != NULL) ? o->label : o->tl_name;
}

/*
 * Open @tl_name on @dev_name: the first component with a memory domain
 * that offers it there (under srq-run --verbs, md "soft0" is in both the
 * "srq" and UCX's "ib" component: rc_srq comes from one, rc_verbs and
 * ud_verbs from the other). Exits when no component offers it.
 */
void bench_tl_open(bench_tl_t *tl, const char *tl_name, const char *dev_name);

/* Destroy the endpoints and close the interfaces, then the transport */
void bench_tl_close(bench_tl_t *tl);

/*
 * Open an interface of @tl into @bi, configured from the environment
 * (UCX_<TL>_*) and then by @config: "KEY=VALUE" strings (the transport's
 * variable names without the UCX_<TL>_ prefix), NULL-terminated, NULL for
 * none; a key the transport does not have is an error. Send and receive
 * progress are enabled.
 */
void bench_iface_open(bench_tl_t *tl, const char *const *config,
                      bench_iface_t *bi);

/*
 * Settings for peers that receive (almost) nothing: the smallest receive
 * queue the transport takes, and with @small_tx also the smallest send
 * queues (for many idle peers in one process). NULL-terminated; empty for
 * a transport without such settings.
 */
const char *const *bench_peer_config(const char *tl_name, int small_tx);

/*
 * Connect @bi to the peer process at the other end of @fd, which calls
 * bench_connect on its side at the same time (each call makes one
 * connection). Both sides send their addresses (device, and interface or
 * endpoint address by the transport's kind), then:
 *  - connect-to-ep: both create an endpoint before and connect it to the
 *    peer's after the exchange, and confirm it to each other;
 *  - connect-to-iface: a side with @want_ep creates an endpoint to the
 *    peer's interface (the transport connects in band).
 * The local worker is progressed while waiting. Returns the endpoint, or
 * NULL (connect-to-iface without @want_ep).
 */
uct_ep_h bench_connect(bench_iface_t *bi, int fd, int want_ep);

/* uct_worker_progress of @arg, a bench_tl_t: the idle function of the
 * socket reads (bench_read_u64) that must keep the transport going */
void bench_progress(void *arg);

/* One active message of an 8-byte header, retried (with progress) until
 * the transport takes it */
void bench_am_short(bench_tl_t *tl, uct_ep_h ep, uint8_t id, uint64_t hdr);

/* Flush every endpoint of the interface (progress until done) */
void bench_iface_flush(bench_iface_t *bi);

/*
 * The rc_srq counters of an interface (uct_srq_iface_query_counters, found
 * in the loaded plugin): 1 when filled, 0 when @bi is not an rc_srq
 * interface or the plugin is not loaded.
 */
int bench_counters(const bench_iface_t *bi, uct_srq_iface_counters_t *c);

#endif
