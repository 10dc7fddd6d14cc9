/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rx_memory: the memory of a server process with one interface and N
 * connected peers in other processes, for any transport (rc_srq, UCX's
 * rc_verbs, ...): after the interface opened, with N peers connected and
 * idle, right after a many-to-one flood, and quiet again.
 *
 *   rx_memory [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... [-f TOTAL]
 *             [-p PROCS] [-w STABLE_MS] [-q MAX_QUIET_MS] [-n] N
 *
 *   -t, -d  transport and device (default rc_srq on soft0:1); found in
 *           whichever component offers them (bench_uct.h)
 *   -l      a label for the output lines (default: the transport)
 *   -o      a setting of the server's interface (repeatable), e.g.
 *           -o RX_SHRINK_DELAY=100ms; the peers get small queues
 *   -f      messages of the flood, all peers together (default 20000;
 *           every peer sends at least 4)
 *   -p      peer processes (default 1)
 *   -w, -q  quiet: until the memory has not moved for STABLE_MS (default
 *           300), at most MAX_QUIET_MS (default 5000)
 *   -n      the server makes no endpoints of its own where the transport
 *           does not need them (connect-to-iface); by default it has one
 *           to every peer, as a rank of a job whose ranks all talk
 *
 * Phases, each one line of "key=value" fields, the server's own memory
 * (/proc/self/status) and, for rc_srq, its interface's counters:
 *   base      - the memory domain and worker are open, no interface yet:
 *               what the interface costs is measured from here
 *   open      - the interface is open, no peer yet
 *   connected - N peers connected, each sent one message (and got one back
 *               where the server has endpoints), all flushed
 *   idle      - then no traffic, until the memory stays put (an adaptive
 *               queue grown by the connection burst has shrunk again)
 *   flood     - every peer sent max(4, TOTAL / N) 8-byte messages as fast
 *               as its send queue took them; read as the last one arrives.
 *               VmHWM was reset before it (/proc/self/clear_refs), so hwm
 *               is the flood's peak; held_peak samples the counters every ms
 *   quiet     - no traffic again, until the memory stays put
 *
 *   rxmem label=<l> tl=<tl> component=<c> peers=<N> phase=<p> rss=<B>
 *     hwm=<B> anon=<B> shmem=<B> ms=<phase duration>
 *     [held=<B> held_peak=<B> depth=<bufs> posted=<bufs> peak=<bufs>
 *      limit=<n> rnr=<n> grows=<n> shrinks=<n> retired=<n> conns=<n>
 *      conns_failed=<n>]
 *
 * The peers do not progress while they wait for the server's next command.
 * It measures, never judges: the exit status is not 0 only when the run
 * itself fails. Run it under srq-run (rc_srq; --verbs for rc_verbs).
 */
#include "bench_peers.h"

#include <string.h>


typedef struct {
    const char    *label;
    int           peers;
    bench_tl_t    *tl;
    bench_peers_t p;
    bench_iface_t server;
    uint64_t      held_peak;   /* most rx_bytes_held seen in the flood */
} rxm_t;

static void sample_held(void *arg)
{
    rxm_t *r = arg;
    uct_srq_iface_counters_t c;

    if (bench_counters(&r->server, &c) && (c.rx_bytes_held > r->held_peak)) {
        r->held_peak = c.rx_bytes_held;
    }
}

static void report(rxm_t *r, const char *phase, double start_us)
{
    uct_srq_iface_counters_t c;
    bench_mem_t mem;

    bench_mem_read(&mem);
    printf("rxmem label=%s tl=%s component=%s peers=%d phase=%s rss=%lu "
           "hwm=%lu anon=%lu shmem=%lu ms=%.0f", r->label,
           r->tl->tl_name, r->tl->component, r->peers, phase,
           (unsigned long)mem.rss, (unsigned long)mem.hwm,
           (unsigned long)mem.anon, (unsigned long)mem.shmem,
           (bench_now_us() - start_us) / 1e3);
    if ((r->server.iface != NULL) && bench_counters(&r->server, &c)) {
        if (c.rx_bytes_held > r->held_peak) {
            r->held_peak = c.rx_bytes_held;
        }
        printf(" held=%lu held_peak=%lu depth=%lu posted=%lu peak=%lu "
               "limit=%lu rnr=%lu grows=%lu shrinks=%lu retired=%lu conns=%lu "
               "conns_failed=%lu",
               (unsigned long)c.rx_bytes_held, (unsigned long)r->held_peak,
               (unsigned long)c.rx_queue_target, (unsigned long)c.rx_queue_now,
               (unsigned long)c.rx_queue_peak, (unsigned long)c.rx_limit_events,
               (unsigned long)c.rx_rnr, (unsigned long)c.rx_grows,
               (unsigned long)c.rx_shrinks, (unsigned long)c.rx_retired,
               (unsigned long)c.conns, (unsigned long)c.conns_failed);
    }
    printf("\n");
    fflush(stdout);
}

/* Progress with no traffic until the memory (and, for rc_srq, the bytes
 * held and the depth) has not moved for @stable_ms: by then the interface
 * has given back what it will */
static void settle(rxm_t *r, const char *phase, double stable_ms,
                   double max_ms)
{
    double start = bench_now_us(), stable_since = start, now, next = 0;
    uint64_t last[3] = {0, 0, 0}, cur[3];
    uct_srq_iface_counters_t c;
    bench_mem_t mem;

    do {
        uct_worker_progress(r->tl->worker);
        now = bench_now_us();
        if (now < next) {
            continue;
        }
        next = now + 5000;
        bench_check_stop();
        bench_mem_read(&mem);
        memset(&c, 0, sizeof(c));
        bench_counters(&r->server, &c);
        cur[0] = mem.rss;
        cur[1] = c.rx_bytes_held;
        cur[2] = c.rx_queue_target;
        if (memcmp(cur, last, sizeof(cur))) {
            memcpy(last, cur, sizeof(cur));
            stable_since = now;
        }
    } while ((now - stable_since < stable_ms * 1e3) &&
             (now - start < max_ms * 1e3));
    report(r, phase, start);
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... "
            "[-f TOTAL] [-p PROCS] [-w STABLE_MS] [-q MAX_QUIET_MS] [-n] N\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_peers_opts_t opts = {.procs = 1, .server_eps = 1, .small_tx = 1,
                               .block = 1};
    double stable_ms = 300, max_quiet_ms = 5000, start;
    unsigned long total = 20000, burst;
    int opt, failed;
    rxm_t r = {};
    bench_tl_t tl;

    bench_prog = "rx_memory";
    if ((argc > 1) && !strcmp(argv[1], "--peer")) {
        return bench_peers_main(argc, argv);
    }
    bench_opts_init(&o);
    while ((opt = getopt(argc, argv, BENCH_OPTS "f:p:w:q:n")) != -1) {
        if (bench_opts_take(&o, opt, optarg)) {
            continue;
        }
        switch (opt) {
        case 'f': total = strtoul(optarg, NULL, 0); break;
        case 'p': opts.procs = atoi(optarg); break;
        case 'w': stable_ms = atof(optarg); break;
        case 'q': max_quiet_ms = atof(optarg); break;
        case 'n': opts.server_eps = 0; break;
        default: usage(argv[0]);
        }
    }
    if ((argc - optind != 1) || ((r.peers = atoi(argv[optind])) < 1)) {
        usage(argv[0]);
    }
    r.label = bench_opts_label(&o);
    bench_catch_signals();

    start = bench_now_us();
    bench_tl_open(&tl, o.tl_name, o.dev_name);
    r.tl = &tl;
    report(&r, "base", start);
    start = bench_now_us();
    bench_iface_open(&tl, o.config, &r.server);
    report(&r, "open", start);

    start = bench_now_us();
    bench_peers_start(&r.p, &r.server, r.peers, &opts);
    report(&r, "connected", start);
    settle(&r, "idle", stable_ms, max_quiet_ms);

    burst = (total + r.peers - 1) / r.peers;
    burst = (burst < 4) ? 4 : burst;
    r.held_peak = 0;
    bench_mem_reset_peak();
    start = bench_now_us();
    bench_peers_flood(&r.p, burst, sample_held, &r);
    report(&r, "flood", start);
    bench_peers_flood_done(&r.p);

    settle(&r, "quiet", stable_ms, max_quiet_ms);

    failed = bench_peers_stop(&r.p);
    bench_tl_close(&tl);
    if (failed) {
        fprintf(stderr, "rx_memory: %d peer process(es) failed\n", failed);
    }
    return failed ? 1 : 0;
}
