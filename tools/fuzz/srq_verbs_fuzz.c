/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: generate verbs call sequences and WR lists from the
 * verb contracts, valid and invalid, run them on a device and check every
 * outcome against the contracts.
 *
 *   srq-verbs-fuzz [--seed N] [--iterations N] [--ops N] [--long]
 *                  [--device NAME] [--ibv] [-v]
 *
 * --ibv opens the device through libibverbs (any device it lists: soft0
 * with srq-run --verbs, an HCA); without it, through the project's verbs
 * API (the built-in soft device). The same seed gives the same calls.
 * Prints iterations, calls, checks and violations; exits 1 on a violation,
 * 2 when the device cannot be opened.
 */
#include "fz.h"
#include "srq_config.h" /* PACKAGE_VERSION */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fz_usage(FILE *f)
{
    fprintf(f,
        "usage: srq-verbs-fuzz [options]\n"
        "  --seed N        first seed (default 1); iteration i uses seed N+i\n"
        "  --iterations N  scenes built and torn down (default 20)\n"
        "  --ops N         random operations per iteration (default 60)\n"
        "  --long          a long run: 2000 iterations of 200 operations\n"
        "  --device NAME   the device (default soft0)\n"
        "  --ibv           open it through libibverbs, not the project's API\n"
        "  -v              list the contract coverage; -vv every operation\n"
        "  --version       print the version of ucx-srq it belongs to\n");
}

static int fz_parse(fz_opts_t *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "seed", required_argument, NULL, 's' },
        { "iterations", required_argument, NULL, 'i' },
        { "ops", required_argument, NULL, 'o' },
        { "long", no_argument, NULL, 'L' },
        { "device", required_argument, NULL, 'd' },
        { "ibv", no_argument, NULL, 'I' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    char *end;
    int c;

    o->seed       = 1;
    o->iterations = 20;
    o->ops        = 60;
    o->device     = "soft0";
    while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
        case 'i':
        case 'o':
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 0);
            if (errno || (*end != '\0') || ((c != 's') && ((v == 0) || (v > 10000000)))) {
                fprintf(stderr, "srq-verbs-fuzz: bad number '%s'\n", optarg);
                return -1;
            }
            if (c == 's') {
                o->seed = v;
            } else if (c == 'i') {
                o->iterations = (unsigned)v;
            } else {
                o->ops = (unsigned)v;
            }
            break;
        case 'L':
            o->iterations = 2000;
            o->ops        = 200;
            break;
        case 'd':
            o->device = optarg;
            break;
        case 'I':
            o->ibv = true;
            break;
        case 'v':
            ++o->verbose;
            break;
        case 'h':
            fz_usage(stdout);
            exit(0);
        case 'V':
            printf("srq-verbs-fuzz (ucx-srq) %s\n", PACKAGE_VERSION);
            exit(0);
        default:
            fz_usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        fz_usage(stderr);
        return -1;
    }
    return 0;
}

static void fz_iteration(fz_t *fz)
{
    unsigned op;

    fz->rnd.s           = (fz->opts.seed + fz->iter) * 0x9e3779b97f4a7c15ull + 1;
    fz->broken          = false;
    fz->iter_violations = 0;
    memset(fz->recv_status, 0xff, sizeof(fz->recv_status));
    if (fz_scene_create(fz) == 0) {
        for (op = 0; (op < fz->opts.ops) && !fz->broken; ++op) {
            fz_random_op(fz);
        }
        if (!fz->broken) {
            fz_drain(fz);
        }
        if (!fz->broken) {
            fz_teardown_in_use(fz);
        }
    }
    fz_scene_destroy(fz);
    if (fz->opts.verbose && fz->iter_violations) {
        printf("iteration %u (seed %llu): %lu violations\n", fz->iter,
               (unsigned long long)fz->opts.seed, fz->iter_violations);
    }
}

int main(int argc, char **argv)
{
    static fz_t fz;
    int ret;

    if (fz_parse(&fz.opts, argc, argv) != 0) {
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    fz.dev.be = fz.opts.ibv ? &fz_backend_ibv : &fz_backend_verbs;
    ret = fz.dev.be->open(&fz.dev, fz.opts.device);
    if (ret != 0) {
        fprintf(stderr, "srq-verbs-fuzz: cannot open %s through %s: %s\n",
                fz.opts.device, fz.dev.be->name, strerror(ret));
        return 2;
    }
    for (fz.iter = 0; fz.iter < fz.opts.iterations; ++fz.iter) {
        fz_iteration(&fz);
    }
    fz.dev.be->close(&fz.dev);
    fz_print_coverage(&fz);
    printf("srq-verbs-fuzz: %s through %s, seed %llu: %u iterations, %lu calls "
           "(and %lu polls that found nothing), %lu checks, %lu violations\n",
           fz.opts.device, fz.dev.be->name, (unsigned long long)fz.opts.seed,
           fz.opts.iterations, fz.calls, fz.idle_polls, fz.checks,
           fz.violations);
    return fz.violations ? 1 : 0;
}
