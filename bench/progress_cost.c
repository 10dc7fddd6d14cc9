/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress_cost: the cost of one uct_worker_progress call of an idle
 * interface with N idle connections, for any transport (rc_srq, posix,
 * UCX's rc_verbs, ...).
 *
 *   progress_cost [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... [-s SAMPLES]
 *                 [-m SAMPLE_MS] [-n] N
 *
 *   -t, -d, -l, -o, -n  as bench/rx_memory's (the server has an endpoint to
 *                       every peer unless -n)
 *   -s   samples (default 11); -m: each about SAMPLE_MS long (default 20)
 *
 * The server opens one interface; N peers in another process connect to
 * it, each sends one message (and gets one back), everything is flushed
 * and the peers then wait without progressing, so that nothing moves. The
 * server then calls uct_worker_progress in a loop: SAMPLES samples of as
 * many calls as take about SAMPLE_MS, after as many for warm-up. Prints
 *
 *   progress label=<l> tl=<tl> component=<c> conns=<N> ns_median=<ns>
 *     ns_min=<ns> calls=<per sample> [srq_conns=<rc_srq's count>]
 *
 * It measures, never judges. Run it under srq-run (rc_srq; --verbs for
 * rc_verbs).
 */
#include "bench_peers.h"

#include <string.h>


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* ns per call of @calls calls */
static double sample(uct_worker_h worker, unsigned long calls)
{
    double start = bench_now_us();

    for (unsigned long i = 0; i < calls; ++i) {
        uct_worker_progress(worker);
    }
    return (bench_now_us() - start) * 1e3 / calls;
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-t TL] [-d DEV] [-l LABEL] [-o KEY=VALUE]... "
            "[-s SAMPLES] [-m SAMPLE_MS] [-n] N\n", prog);
    exit(2);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_peers_opts_t opts = {.procs = 1, .server_eps = 1, .small_tx = 1,
                               .block = 1};
    int opt, peers, samples = 11, failed;
    double sample_ms = 20, *ns, probe;
    uct_srq_iface_counters_t c;
    bench_iface_t server;
    unsigned long calls;
    bench_peers_t p;
    bench_tl_t tl;

    bench_prog = "progress_cost";
    if ((argc > 1) && !strcmp(argv[1], "--peer")) {
        return bench_peers_main(argc, argv);
    }
    bench_opts_init(&o);
    while ((opt = getopt(argc, argv, BENCH_OPTS "s:m:n")) != -1) {
        if (bench_opts_take(&o, opt, optarg)) {
            continue;
        }
        switch (opt) {
        case 's': samples = atoi(optarg); break;
        case 'm': sample_ms = atof(optarg); break;
        case 'n': opts.server_eps = 0; break;
        default: usage(argv[0]);
        }
    }
    if ((argc - optind != 1) || ((peers = atoi(argv[optind])) < 1) ||
        (samples < 1) || (sample_ms <= 0)) {
        usage(argv[0]);
    }
    bench_catch_signals();

    bench_tl_open(&tl, o.tl_name, o.dev_name);
    bench_iface_open(&tl, o.config, &server);
    bench_peers_start(&p, &server, peers, &opts);

    /* calls per sample from a probe; the warm-up is as long as the run */
    probe = sample(tl.worker, 1000);
    calls = (unsigned long)(sample_ms * 1e6 / (probe > 1 ? probe : 1));
    calls = (calls < 1000) ? 1000 : calls;
    ns    = calloc(samples, sizeof(*ns));
    if (ns == NULL) {
        bench_die("out of memory");
    }
    for (int i = 0; i < samples; ++i) {
        sample(tl.worker, calls);
    }
    for (int i = 0; i < samples; ++i) {
        bench_check_stop();
        ns[i] = sample(tl.worker, calls);
    }
    qsort(ns, samples, sizeof(*ns), cmp_double);
    printf("progress label=%s tl=%s component=%s conns=%d ns_median=%.1f "
           "ns_min=%.1f calls=%lu", bench_opts_label(&o),
           o.tl_name, tl.component, peers, ns[samples / 2], ns[0], calls);
    if (bench_counters(&server, &c)) {
        printf(" srq_conns=%lu", (unsigned long)c.conns);
    }
    printf("\n");
    fflush(stdout);
    free(ns);

    failed = bench_peers_stop(&p);
    bench_tl_close(&tl);
    if (failed) {
        fprintf(stderr, "progress_cost: %d peer process(es) failed\n", failed);
    }
    return failed ? 1 : 0;
}
