/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: what the trace wrappers (srq_verbs_trace_ops.c)
 * use of the trace runtime (srq_verbs_trace.c).
 */
#ifndef SRQ_VERBS_TRACE_INT_H_
#define SRQ_VERBS_TRACE_INT_H_

#include "srq_verbs_trace_gen.h"

#include <pthread.h>
#include <stdbool.h>

#define SRQ_VERBS_TRACE_MAX_PORTS  8

/* Object kinds, in the order of their name prefixes (ctx, pd, mr, ...) */
enum {
    SRQ_VERBS_TRACE_CTX, SRQ_VERBS_TRACE_PD, SRQ_VERBS_TRACE_MR,
    SRQ_VERBS_TRACE_CQ, SRQ_VERBS_TRACE_CH, SRQ_VERBS_TRACE_SRQ,
    SRQ_VERBS_TRACE_QP, SRQ_VERBS_TRACE_AH, SRQ_VERBS_TRACE_TD
};

/* One traced call: its line, and errno as the call left it */
typedef struct srq_verbs_trace_call {
    srq_verbs_trace_buf_t b;
    int                   err;
} srq_verbs_trace_call_t;

/* Is SRQ_VERBS_TRACE set and its file open? (opens it the first time) */
bool srq_verbs_trace_enabled(void);

/* begin: lock, format the inputs; pause: unlock for the call; resume:
 * keep errno, lock, format the outputs; end: write the line, unlock,
 * restore errno; cancel: unlock without writing */
void srq_verbs_trace_begin(srq_verbs_trace_call_t *t);
void srq_verbs_trace_pause(srq_verbs_trace_call_t *t);
void srq_verbs_trace_resume(srq_verbs_trace_call_t *t);
void srq_verbs_trace_end(srq_verbs_trace_call_t *t);
void srq_verbs_trace_cancel(srq_verbs_trace_call_t *t);

/* A poll of @cq that found nothing: counted, written later as one line */
void srq_verbs_trace_idle_poll(const struct ibv_cq *cq, int num_entries);

/* Name an opened context (" ret=ctxN") and remember its ports' LIDs and
 * GIDs (index 1..num_ports), which address vectors refer to. Locked. */
void srq_verbs_trace_add_context(const struct ibv_context *ctx,
                                 srq_verbs_trace_buf_t *b, int num_ports,
                                 const uint16_t *lid,
                                 const union ibv_gid *gid);

#endif
