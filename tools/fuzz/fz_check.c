/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: checking outcomes against the contracts, and counting.
 * A violation names the contract entry it breaks (verb and failure or
 * post-condition id), the seed and iteration that reproduce it.
 */
#include "fz.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fz_violation(fz_t *fz, const char *what, const char *fmt, ...)
{
    va_list ap;

    ++fz->violations;
    ++fz->iter_violations;
    printf("VIOLATION seed %llu iteration %u: %s: ",
           (unsigned long long)fz->opts.seed, fz->iter, what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

bool fz_ok(fz_t *fz, const char *verb, int ret)
{
    ++fz->checks;
    if (ret != 0) {
        fz_violation(fz, verb, "failed with %d (%s) on a valid call", ret,
                     strerror(ret));
        fz->broken = true;
        return false;
    }
    return true;
}

static bool fz_errno_allowed(const fz_failure_t *f, int err)
{
    int i;

    for (i = 0; (i < FZ_MAX_ERRNOS) && (f->errnos[i] != 0); ++i) {
        if (f->errnos[i] == err) {
            return true;
        }
    }
    return false;
}

bool fz_fails(fz_t *fz, int fid, int ret)
{
    const fz_failure_t *f = &fz_failures[fid];
    char what[128];

    ++fz->checks;
    ++fz->fail_hits[fid];
    if (fz_errno_allowed(f, ret)) {
        return true;
    }
    snprintf(what, sizeof(what), "%s %s", f->verb, f->id);
    fz_violation(fz, what, "returned %d (%s), the contract says %s (%s)", ret,
                 ret ? strerror(ret) : "success", strerror(f->errnos[0]),
                 f->condition);
    return false;
}

bool fz_create_fails(fz_t *fz, int fid, const void *obj, int err)
{
    const fz_failure_t *f = &fz_failures[fid];
    char what[128];

    if (obj == NULL) {
        return fz_fails(fz, fid, err);
    }
    ++fz->checks;
    ++fz->fail_hits[fid];
    snprintf(what, sizeof(what), "%s %s", f->verb, f->id);
    fz_violation(fz, what, "succeeded, the contract says %s (%s)",
                 strerror(f->errnos[0]), f->condition);
    return false;
}

bool fz_wc_is(fz_t *fz, int fid, const struct ibv_wc *wc)
{
    const fz_failure_t *f = &fz_failures[fid];
    char what[128];

    ++fz->checks;
    ++fz->fail_hits[fid];
    if ((int)wc->status == f->wc_status) {
        return true;
    }
    snprintf(what, sizeof(what), "%s %s", f->verb, f->id);
    fz_violation(fz, what, "wr_id 0x%llx completed with %s, the contract says %s",
                 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
                 ibv_wc_status_str(f->wc_status));
    return false;
}

bool fz_post(fz_t *fz, int pid, bool ok, const char *fmt, ...)
{
    const fz_post_t *p = &fz_posts[pid];
    char what[128], msg[512];
    va_list ap;

    ++fz->checks;
    ++fz->post_hits[pid];
    if (ok) {
        return true;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(what, sizeof(what), "%s %s", p->verb, p->id);
    fz_violation(fz, what, "%s (the contract: %s)", msg, p->doc);
    return false;
}

void fz_print_coverage(const fz_t *fz)
{
    int i, failures = 0, posts = 0;

    for (i = 0; i < FZ_NUM_FAILURES; ++i) {
        failures += (fz->fail_hits[i] != 0);
        if (fz->opts.verbose) {
            printf("  %8lu  failure        %s %s\n", fz->fail_hits[i],
                   fz_failures[i].verb, fz_failures[i].id);
        }
    }
    for (i = 0; i < FZ_NUM_POSTS; ++i) {
        posts += (fz->post_hits[i] != 0);
        if (fz->opts.verbose) {
            printf("  %8lu  postcondition  %s %s\n", fz->post_hits[i],
                   fz_posts[i].verb, fz_posts[i].id);
        }
    }
    printf("contract coverage: %d of %d failures, %d of %d post-conditions "
           "exercised%s\n", failures, FZ_NUM_FAILURES, posts, FZ_NUM_POSTS,
           fz->opts.verbose ? "" : " (-v lists them)");
}

int fz_post_send(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad)
{
    ++fz->calls;
    *bad = NULL;
    return ibv_post_send(q->qp, wr, bad);
}

int fz_post_recv(fz_t *fz, fz_qp_t *q, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad)
{
    ++fz->calls;
    *bad = NULL;
    return ibv_post_recv(q->qp, wr, bad);
}

int fz_post_srq_recv(fz_t *fz, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    ++fz->calls;
    *bad = NULL;
    return ibv_post_srq_recv(fz->srq, wr, bad);
}

/* A poll that finds nothing is counted apart: drains spin on them */
int fz_poll(fz_t *fz, struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    int ret = ibv_poll_cq(cq, n, wc);

    if (ret == 0) {
        ++fz->idle_polls;
    } else {
        ++fz->calls;
    }
    return ret;
}
