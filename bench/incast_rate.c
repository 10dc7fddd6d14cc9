/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * incast_rate: SENDERS sender processes flood one receiver with MSGS
 * 8-byte active messages each; the receiver measures the message rate,
 * its memory and (rc_srq) its receive queue. Any transport (rc_srq with
 * any depth, UCX's rc_verbs as the reference, ...).
 *
 *   incast_rate [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... [-P]
 *               [-Q SECONDS] SENDERS MSGS
 *
 *   -t, -d  transport and device (default rc_srq on soft0:1)
 *   -l      a label for the output line (default: the transport)
 *   -o      a setting of the receiver's interface (repeatable), e.g.
 *           -o RX_QUEUE_MIN=128 -o RX_QUEUE_MAX=128; the senders get the
 *           smallest receive queue (they receive nothing)
 *   -P      pin: the receiver alone on CPU 0, the senders on the other
 *           CPUs in turn (with more busy processes than cores, where the
 *           scheduler puts the receiver would otherwise decide the rate)
 *   -Q      after the flood, keep progressing the quiet receiver for up to
 *           SECONDS, until its receive queue is back at its floor: depth
 *           RX_QUEUE_MIN and no more registered receive memory than before
 *           the flood (rc_srq)
 *
 * The receiver spawns the senders (this program, bench_peers.h: one
 * process, interface and endpoint each), connects them, has each say hello
 * (connected), resets its VmHWM, then releases them all at once (one word
 * on every sender's socket). The rate is the receiver's, from its first
 * flood message to its last; then the senders flush, and after 50 ms (the
 * interface reads its RNR count every RX_ADAPT_INTERVAL) one line:
 *
 *   incast label=<l> tl=<tl> senders=<n> msgs=<total> us=<first to last>
 *     rate=<msg/s> rss=<B> hwm=<B: the flood's peak>
 *     [held=<B> held_peak=<B> depth=<bufs> peak=<bufs> rnr=<n> grows=<n>
 *      limit=<n> [floor_ms=<ms from the last flood message to the floor,
 *      -1: not within -Q>]]
 *
 * held_peak is the most registered receive memory seen, sampled every ms.
 * It measures, never judges. Run it under srq-run (rc_srq; --verbs for
 * rc_verbs); bench/incast runs the comparison.
 */
#include "bench_peers.h"

#include <string.h>
#include <unistd.h>

#define INCAST_SETTLE_US  50000

typedef struct {
    bench_iface_t *receiver;
    uint64_t      held_peak;
    uint64_t      held_floor;  /* registered before the flood */
    int           quiet;       /* -Q given */
    double        floor_ms;    /* back to the floor after; -1: not */
} incast_t;

static void sample_held(void *arg)
{
    incast_t *in = arg;
    uct_srq_iface_counters_t c;

    if (bench_counters(in->receiver, &c) && (c.rx_bytes_held > in->held_peak)) {
        in->held_peak = c.rx_bytes_held;
    }
}

static void settle(bench_tl_t *tl, incast_t *in)
{
    double end = bench_now_us() + INCAST_SETTLE_US;

    while (bench_now_us() < end) {
        uct_worker_progress(tl->worker);
    }
    sample_held(in);
}

static int at_floor(const incast_t *in)
{
    uct_srq_iface_counters_t c;

    return bench_counters(in->receiver, &c) &&
           (c.rx_queue_target == c.rx_queue_min) &&
           (c.rx_bytes_held <= in->held_floor);
}

/* Quiet: progress until the queue is back at its floor, for at most
 * @seconds after the last flood message */
static void quiet(bench_tl_t *tl, bench_peers_t *p, incast_t *in,
                  double seconds)
{
    double end = p->last_flood_us + seconds * 1e6, now;

    while ((now = bench_now_us()) < end) {
        if (at_floor(in)) {
            in->floor_ms = (now - p->last_flood_us) / 1e3;
            return;
        }
        uct_worker_progress(tl->worker);
    }
}

static void report(const char *label, bench_peers_t *p, incast_t *in)
{
    uint64_t total = p->floods;
    double us      = p->last_flood_us - p->first_flood_us;
    uct_srq_iface_counters_t c;
    bench_mem_t mem;

    bench_mem_read(&mem);
    printf("incast label=%s tl=%s senders=%d msgs=%lu us=%.0f rate=%.0f "
           "rss=%lu hwm=%lu", label, in->receiver->tl->tl_name, p->peers,
           (unsigned long)total, us,
           ((total > 1) && (us > 0)) ? (total - 1) * 1e6 / us : 0.0,
           (unsigned long)mem.rss, (unsigned long)mem.hwm);
    if (bench_counters(in->receiver, &c)) {
        printf(" held=%lu held_peak=%lu depth=%lu peak=%lu rnr=%lu grows=%lu "
               "limit=%lu", (unsigned long)c.rx_bytes_held,
               (unsigned long)in->held_peak, (unsigned long)c.rx_queue_target,
               (unsigned long)c.rx_queue_peak, (unsigned long)c.rx_rnr,
               (unsigned long)c.rx_grows, (unsigned long)c.rx_limit_events);
        if (in->quiet) {
            printf(" floor_ms=%.0f", in->floor_ms);
        }
    }
    printf("\n");
    fflush(stdout);
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... "
            "[-P] [-Q SECONDS] SENDERS MSGS\n", prog);
    exit(2);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_peers_opts_t opts = {.server_eps = 0, .small_tx = 0, .block = 1};
    int opt, senders, failed, pin = 0, i, ncpu;
    double quiet_s = 0;
    uct_srq_iface_counters_t c0;
    unsigned long msgs;
    bench_iface_t receiver;
    incast_t in = {.receiver = &receiver};
    bench_peers_t p;
    bench_tl_t tl;

    bench_prog = "incast_rate";
    if ((argc > 1) && !strcmp(argv[1], "--peer")) {
        return bench_peers_main(argc, argv);
    }
    bench_opts_init(&o);
    while ((opt = getopt(argc, argv, BENCH_OPTS "PQ:")) != -1) {
        if (opt == 'P') {
            pin = 1;
        } else if (opt == 'Q') {
            quiet_s = atof(optarg);
        } else if (!bench_opts_take(&o, opt, optarg)) {
            usage(argv[0]);
        }
    }
    if ((argc - optind != 2) || ((senders = atoi(argv[optind])) < 1) ||
        ((msgs = strtoul(argv[optind + 1], NULL, 0)) < 1)) {
        usage(argv[0]);
    }
    bench_catch_signals();

    bench_tl_open(&tl, o.tl_name, o.dev_name);
    bench_iface_open(&tl, o.config, &receiver);
    opts.procs = senders;  /* one sender per process */
    bench_peers_start(&p, &receiver, senders, &opts);
    ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (pin && (ncpu >= 2)) {
        bench_pin(0, 0);
        for (i = 0; i < p.num_procs; ++i) {
            bench_pin(p.pids[i], 1 + i % (ncpu - 1));
        }
    }

    in.held_floor = bench_counters(&receiver, &c0) ? c0.rx_bytes_held : 0;
    bench_mem_reset_peak();
    bench_peers_flood(&p, msgs, sample_held, &in);
    bench_peers_flood_done(&p);
    settle(&tl, &in);
    if (quiet_s > 0) {
        in.quiet    = 1;
        in.floor_ms = -1;
        quiet(&tl, &p, &in, quiet_s);
    }
    report(bench_opts_label(&o), &p, &in);

    failed = bench_peers_stop(&p);
    bench_tl_close(&tl);
    if (failed) {
        fprintf(stderr, "incast_rate: %d sender process(es) failed\n", failed);
    }
    return failed ? 1 : 0;
}
