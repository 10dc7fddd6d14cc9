/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: SRQ_VERBS_TRACE=FILE writes every verbs call a
 * device opened here makes or serves, control and data path, as one line
 * `verb key=value ...` (contracts/README.md describes the format; the keys
 * are paths into the verb's contract). srq-verbs-replay turns such a file
 * into a C program that makes the same calls on any device.
 *
 * Tracing is attached when a device is opened and only when the variable
 * is set: the device's control operations and its context's data-path
 * operations are replaced by wrappers that format a line around the real
 * call. Without the variable nothing is replaced and nothing costs.
 *
 * The formatting of each verb's arguments is generated from the contracts
 * (srq_verbs_trace_gen.c, python/srq_contracts/ctrace.py); this file is
 * what it calls: naming objects and buffers, the file; plain values are
 * written by srq_verbs_trace_fmt.h.
 */
#ifndef SRQ_VERBS_TRACE_H_
#define SRQ_VERBS_TRACE_H_

#include "srq_verbs.h"
#include "dev/srq_verbs_dev.h"
#include "srq_verbs_trace_fmt.h"

#include <stddef.h>
#include <stdint.h>

#define SRQ_VERBS_TRACE_ENV        "SRQ_VERBS_TRACE"
#define SRQ_VERBS_TRACE_MAX_CHAIN  4096  /* WRs of one list written */
#define SRQ_VERBS_TRACE_MAX_SGE    64    /* SGEs of one WR written */

/* Trace @dev when SRQ_VERBS_TRACE is set (called once it is open) */
void srq_verbs_trace_attach(srq_verbs_dev_t *dev);

/* ---- what the generated formatters use -------------------------------- */

/* What a struct's conditions may look at besides its own fields */
typedef struct srq_verbs_trace_ctx {
    long  ret;      /* the call's return value (0 in the input phase) */
    int   mask;     /* the verb's attribute mask */
    int   qp_type;  /* of the QP the call is on, -1 if none */
} srq_verbs_trace_ctx_t;

void srq_verbs_trace_object(srq_verbs_trace_buf_t *b, const char *pfx,
                            const char *name, const void *obj);
/* A function of the program (a parent domain's allocator): only whether
 * it was given, as "given" or NULL; its address means nothing elsewhere */
void srq_verbs_trace_callback(srq_verbs_trace_buf_t *b, const char *pfx,
                              const char *name, int given);
void srq_verbs_trace_ptr(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, const void *p);
/* An address: bufN+OFF when it is in a registered buffer (the one of the
 * MR @key names, if any) */
void srq_verbs_trace_addr(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, uint64_t addr, uint32_t key);
/* An lkey/rkey: mrN.lkey when a live MR has it */
void srq_verbs_trace_mkey(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, uint32_t key, int remote);
void srq_verbs_trace_qpn(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, uint32_t qpn);
void srq_verbs_trace_lid(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, uint16_t lid);
void srq_verbs_trace_gid(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, const union ibv_gid *gid);
/* The memory ibv_reg_mr is given: a buffer name, new unless inside one */
void srq_verbs_trace_buffer(srq_verbs_trace_buf_t *b, const char *name,
                            const void *addr, size_t length);
void srq_verbs_trace_device(srq_verbs_trace_buf_t *b, const char *name,
                            const struct ibv_device *device);
/* *bad_wr as the index of that WR in the list @first */
void srq_verbs_trace_chain_ref(srq_verbs_trace_buf_t *b, const char *name,
                               const void *bad, const void *first,
                               size_t next_offset, const char *chain);

/* Names (and remembers) the object a create returned */
void srq_verbs_trace_ret_object(srq_verbs_trace_buf_t *b, const void *obj,
                                const char *kind, int err);
/* The object is gone: its name is not given to anything else */
void srq_verbs_trace_forget(const void *obj);

#endif
