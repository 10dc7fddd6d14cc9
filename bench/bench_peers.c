/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A measured interface and its peers in other processes (bench_peers.h).
 */
#include "bench_peers.h"

#include <string.h>

/* commands on a peer process's socket: the low byte, and an argument */
enum {
    CMD_CONNECT = 1, /* connect this process's peers (bench_connect) */
    CMD_HELLO,      /* argument: 1 if the server says hello back */
    CMD_FLOOD,      /* argument: messages per peer */
    CMD_EXIT
};
#define CMD(_c, _arg)  (((uint64_t)(_arg) << 8) | (_c))

/* how often a flood's sampler is called, and how seldom the clock is read
 * for it (the receive loop is what is measured) */
#define SAMPLE_US      1000
#define SAMPLE_EVERY   256

static double deadline_from_now(void)
{
    return bench_now_us() + BENCH_WAIT_LIMIT_S * 1e6;
}

static void check_deadline(double deadline, const char *what)
{
    bench_check_stop();
    if (bench_now_us() > deadline) {
        bench_die("%s did not complete in %d s", what, BENCH_WAIT_LIMIT_S);
    }
}

static ucs_status_t count_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    ++*(uint64_t*)arg;
    return UCS_OK;
}

static ucs_status_t flood_cb(void *arg, void *data, size_t length,
                             unsigned flags)
{
    bench_peers_t *p = arg;

    p->last_flood_us = bench_now_us();
    if (p->floods++ == 0) {
        p->first_flood_us = p->last_flood_us;
    }
    return UCS_OK;
}

static void *calloc_or_die(size_t count, size_t size)
{
    void *ptr = calloc(count ? count : 1, size);

    if (ptr == NULL) {
        bench_die("out of memory");
    }
    return ptr;
}

static pid_t spawn_peer(const bench_peers_t *p, int count,
                        const bench_peers_opts_t *opts, int *fd)
{
    char parent[16], n[16], small_tx[4], block[4];
    char *argv[] = {(char*)bench_prog, "--peer", parent,
                    (char*)p->server->tl->tl_name,
                    (char*)p->server->tl->dev_name, n, small_tx, block, NULL};

    snprintf(parent, sizeof(parent), "%d", (int)getpid());
    snprintf(n, sizeof(n), "%d", count);
    snprintf(small_tx, sizeof(small_tx), "%d", !!opts->small_tx);
    snprintf(block, sizeof(block), "%d", !!opts->block);
    return bench_spawn(argv, fd);
}

/* Every peer of processes [@first, @last) sends one message to the
 * server, and the server one to each of their peers where it has
 * endpoints (@ep_first: its first endpoint to them); returns once all
 * arrived and are flushed: every connection of theirs is up */
static void hello(bench_peers_t *p, int first, int last, int ep_first)
{
    bench_iface_t *server = p->server;
    uint64_t before       = p->hellos, expect = 0;
    double deadline       = deadline_from_now();
    int num_eps           = 0;

    for (int i = first; i < last; ++i) {
        bench_write_u64(p->fds[i], CMD(CMD_HELLO, p->server_eps));
        expect  += p->peers_of[i];
    }
    num_eps = p->server_eps ? (int)expect : 0;
    for (int i = ep_first; i < ep_first + num_eps; ++i) {
        bench_am_short(server->tl, server->eps[i], BENCH_AM_HELLO, 0);
    }
    while (p->hellos - before < expect) {
        uct_worker_progress(server->tl->worker);
        check_deadline(deadline, "hello");
    }
    bench_iface_flush(server);
    for (int i = first; i < last; ++i) {
        bench_read_u64(p->fds[i], bench_progress, server->tl, "hello");
    }
}

void bench_peers_start(bench_peers_t *p, bench_iface_t *server, int peers,
                       const bench_peers_opts_t *opts)
{
    int procs = (opts->procs < 1) ? 1 : (opts->procs > peers) ? peers :
                opts->procs;
    int ep_first;

    memset(p, 0, sizeof(*p));
    p->server     = server;
    p->peers      = peers;
    p->num_procs  = procs;
    p->server_eps = server->to_ep || opts->server_eps;
    p->pids       = calloc_or_die(procs, sizeof(*p->pids));
    p->fds        = calloc_or_die(procs, sizeof(*p->fds));
    p->peers_of   = calloc_or_die(procs, sizeof(*p->peers_of));
    CHECK(uct_iface_set_am_handler(server->iface, BENCH_AM_HELLO, count_cb,
                                   &p->hellos, 0));
    CHECK(uct_iface_set_am_handler(server->iface, BENCH_AM_FLOOD, flood_cb,
                                   p, 0));
    /* all processes start (and open their devices) at once */
    for (int i = 0; i < procs; ++i) {
        p->peers_of[i] = peers / procs + (i < peers % procs);
        p->pids[i]     = spawn_peer(p, p->peers_of[i], opts, &p->fds[i]);
    }
    /*
     * Then one process at a time connects, each of its connections
     * confirmed by a hello before the next process starts. A process waits
     * for its turn blocked, and once connected it blocks again: connecting
     * all processes at once, those waiting for their turn spun on the CPU
     * (2 cores, 16 processes: 1024 connections took over 30 s), and one
     * connection's handshake could need an answer from a process already
     * blocked - with 1024 peers the server's side timed out (CONN_TIMEOUT,
     * 30 s) before the hello made that process progress again.
     */
    for (int i = 0; i < procs; ++i) {
        ep_first = server->num_eps;
        bench_write_u64(p->fds[i], CMD(CMD_CONNECT, 0));
        for (int j = 0; j < p->peers_of[i]; ++j) {
            bench_connect(server, p->fds[i], p->server_eps);
        }
        bench_read_u64(p->fds[i], bench_progress, server->tl, "connect");
        hello(p, i, i + 1, ep_first);
    }
}

static void read_replies(bench_peers_t *p, const char *what)
{
    for (int i = 0; i < p->num_procs; ++i) {
        bench_read_u64(p->fds[i], bench_progress, p->server->tl, what);
    }
}

void bench_peers_flood(bench_peers_t *p, uint64_t per_peer,
                       void (*sample)(void *arg), void *arg)
{
    uint64_t total  = per_peer * p->peers;
    double deadline = deadline_from_now(), next = 0, now;
    unsigned n      = 0;

    p->floods = 0;
    for (int i = 0; i < p->num_procs; ++i) {
        bench_write_u64(p->fds[i], CMD(CMD_FLOOD, per_peer));
    }
    while (p->floods < total) {
        uct_worker_progress(p->server->tl->worker);
        if (++n % SAMPLE_EVERY) {
            continue;
        }
        now = bench_now_us();
        if ((sample != NULL) && (now >= next)) {
            sample(arg);
            next = now + SAMPLE_US;
        }
        check_deadline(deadline, "flood");
    }
}

void bench_peers_flood_done(bench_peers_t *p)
{
    read_replies(p, "flood flushed");
}

int bench_peers_stop(bench_peers_t *p)
{
    int failed;

    for (int i = 0; i < p->num_procs; ++i) {
        bench_write_u64(p->fds[i], CMD(CMD_EXIT, 0));
    }
    failed = bench_reap(p->pids, p->num_procs, 30);
    for (int i = 0; i < p->num_procs; ++i) {
        close(p->fds[i]);
    }
    free(p->pids);
    free(p->fds);
    free(p->peers_of);
    return failed;
}

/* --- the peer process ----------------------------------------------------- */

typedef struct {
    bench_tl_t    tl;
    bench_iface_t *ifaces;
    int           num_ifaces;
    uct_ep_h      *eps;
    int           num_eps;
    uint64_t      hellos;         /* from the server, arrived */
    uint64_t      server_hellos;  /* from the server, sent so far */
} peer_proc_t;

static void peer_open(peer_proc_t *pp, const char *tl, const char *dev,
                      int count, int small_tx)
{
    const char *const *config = bench_peer_config(tl, small_tx);

    bench_tl_open(&pp->tl, tl, dev);
    pp->ifaces = calloc_or_die(count, sizeof(*pp->ifaces));
    pp->eps    = calloc_or_die(count, sizeof(*pp->eps));
    bench_iface_open(&pp->tl, config, &pp->ifaces[0]);
    /* an endpoint is a connection: one interface holds them all */
    pp->num_ifaces = pp->ifaces[0].to_ep ? 1 : count;
    for (int i = 1; i < pp->num_ifaces; ++i) {
        bench_iface_open(&pp->tl, config, &pp->ifaces[i]);
    }
    for (int i = 0; i < pp->num_ifaces; ++i) {
        CHECK(uct_iface_set_am_handler(pp->ifaces[i].iface, BENCH_AM_HELLO,
                                       count_cb, &pp->hellos, 0));
    }
    pp->num_eps = count;
}

static void peer_connect(peer_proc_t *pp)
{
    for (int i = 0; i < pp->num_eps; ++i) {
        pp->eps[i] = bench_connect(&pp->ifaces[i % pp->num_ifaces],
                                   BENCH_CHILD_FD, 1);
    }
}

static void peer_flush(peer_proc_t *pp)
{
    for (int i = 0; i < pp->num_ifaces; ++i) {
        bench_iface_flush(&pp->ifaces[i]);
    }
}

static void peer_hello(peer_proc_t *pp, int server_says_hello)
{
    double deadline = deadline_from_now();
    uint64_t expect;

    /* counted from the start: the server's hello may come before its
     * command is read, even before bench_connect returned here */
    pp->server_hellos += server_says_hello ? pp->num_eps : 0;
    expect             = pp->server_hellos;

    for (int i = 0; i < pp->num_eps; ++i) {
        bench_am_short(&pp->tl, pp->eps[i], BENCH_AM_HELLO, 0);
    }
    while (pp->hellos < expect) {
        uct_worker_progress(pp->tl.worker);
        check_deadline(deadline, "hello from the server");
    }
    peer_flush(pp);
}

/* Every endpoint sends until its send queue is full, round robin, then one
 * progress call */
static void peer_flood(peer_proc_t *pp, uint64_t per_peer)
{
    uint64_t *left  = calloc_or_die(pp->num_eps, sizeof(*left));
    uint64_t total  = per_peer * pp->num_eps;
    double deadline = deadline_from_now();
    ucs_status_t status;

    for (int i = 0; i < pp->num_eps; ++i) {
        left[i] = per_peer;
    }
    while (total > 0) {
        for (int i = 0; i < pp->num_eps; ++i) {
            while (left[i] > 0) {
                status = uct_ep_am_short(pp->eps[i], BENCH_AM_FLOOD, left[i],
                                         NULL, 0);
                if (status == UCS_ERR_NO_RESOURCE) {
                    break;
                }
                CHECK(status);
                --left[i];
                --total;
            }
        }
        uct_worker_progress(pp->tl.worker);
        check_deadline(deadline, "flood");
    }
    free(left);
    peer_flush(pp);
}

int bench_peers_main(int argc, char **argv)
{
    peer_proc_t pp = {};
    uint64_t cmd;
    int block;

    if (argc != 8) {
        fprintf(stderr, "usage: %s --peer PARENT_PID TL DEV COUNT SMALL_TX "
                "BLOCK\n", argv[0]);
        return 2;
    }
    bench_catch_signals();
    bench_watch_parent(atoi(argv[2]));
    block = atoi(argv[7]);
    peer_open(&pp, argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
    do {
        cmd = bench_read_u64(BENCH_CHILD_FD, block ? NULL : bench_progress,
                             &pp.tl, "waiting for a command");
        switch (cmd & 0xff) {
        case CMD_CONNECT:
            peer_connect(&pp);
            break;
        case CMD_HELLO:
            peer_hello(&pp, cmd >> 8);
            break;
        case CMD_FLOOD:
            peer_flood(&pp, cmd >> 8);
            break;
        case CMD_EXIT:
            break;
        default:
            bench_die("unknown command %#lx", (unsigned long)cmd);
        }
        if ((cmd & 0xff) != CMD_EXIT) {
            bench_write_u64(BENCH_CHILD_FD, pp.num_eps);
        }
    } while ((cmd & 0xff) != CMD_EXIT);
    bench_tl_close(&pp.tl);
    free(pp.ifaces);
    free(pp.eps);
    return 0;
}
