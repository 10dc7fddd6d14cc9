/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the values of a trace line that need no object's
 * name (srq_verbs_trace_fmt.c) - the line's buffer, keys, numbers, enums,
 * flags, return values. What the generated formatters and the trace
 * runtime (srq_verbs_trace.h) write with.
 */
#ifndef SRQ_VERBS_TRACE_FMT_H_
#define SRQ_VERBS_TRACE_FMT_H_

#include <stddef.h>

#define SRQ_VERBS_TRACE_KEY_MAX    160

/* A line being formatted; grows as it is written */
typedef struct srq_verbs_trace_buf {
    char   *p;
    size_t  len, cap;
} srq_verbs_trace_buf_t;

/* A value's name, for enums and flags (a list ends with name NULL) */
typedef struct srq_verbs_trace_name {
    long        value;
    const char *name;
} srq_verbs_trace_name_t;

void srq_verbs_trace_printf(srq_verbs_trace_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "pfx.name[index]" (no index when @index < 0, no "pfx." when empty) */
void srq_verbs_trace_subkey(char *sub, const char *pfx, const char *name,
                            int index);

void srq_verbs_trace_int(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, long long v);
void srq_verbs_trace_uint(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, unsigned long long v);
void srq_verbs_trace_hex(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, unsigned long long v);
void srq_verbs_trace_enum(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, long v,
                          const srq_verbs_trace_name_t *names);
void srq_verbs_trace_flags(srq_verbs_trace_buf_t *b, const char *pfx,
                           const char *name, unsigned long v,
                           const srq_verbs_trace_name_t *names);
/* " pfx.name=", before a value the caller writes */
void srq_verbs_trace_key(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name);
/* "EPERM" for EPERM, ...; NULL for a value without a name */
const char *srq_verbs_trace_errno_name(int err);
void srq_verbs_trace_ret_errno(srq_verbs_trace_buf_t *b, int ret);
void srq_verbs_trace_ret_count(srq_verbs_trace_buf_t *b, int ret);

#endif
