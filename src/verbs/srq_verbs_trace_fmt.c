/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the values of a trace line that need no object's
 * name - the line's buffer, keys, numbers, enums, flags and errno names.
 * Stateless: the names of objects, buffers and addresses are the trace
 * runtime's (srq_verbs_trace.c), which uses these.
 */
#include "srq_verbs_trace_fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* the names a return value or errno is written with */
static const struct { int value; const char *name; } srq_verbs_trace_errnos[] = {
    { EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" },
    { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EACCES, "EACCES" },
    { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
    { ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" },
    { EMFILE, "EMFILE" }, { ENOSYS, "ENOSYS" }, { EOPNOTSUPP, "EOPNOTSUPP" },
    { EHOSTUNREACH, "EHOSTUNREACH" }, { ETIMEDOUT, "ETIMEDOUT" },
    { ECONNRESET, "ECONNRESET" }, { EPIPE, "EPIPE" }, { ESRCH, "ESRCH" },
};

void srq_verbs_trace_printf(srq_verbs_trace_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    size_t room;
    char *p;
    int n;

    for (;;) {
        room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if ((n < 0) || ((size_t)n < room)) {
            b->len += (n > 0) ? n : 0;
            return;
        }
        p = realloc(b->p, b->cap + n + 256);
        if (p == NULL) {
            return; /* the line is cut, nothing else goes wrong */
        }
        b->p    = p;
        b->cap += n + 256;
    }
}

void srq_verbs_trace_subkey(char *sub, const char *pfx, const char *name,
                            int index)
{
    const char *dot = *pfx ? "." : "";

    if (index >= 0) {
        snprintf(sub, SRQ_VERBS_TRACE_KEY_MAX, "%s%s%s[%d]", pfx, dot, name,
                 index);
    } else {
        snprintf(sub, SRQ_VERBS_TRACE_KEY_MAX, "%s%s%s", pfx, dot, name);
    }
}

void srq_verbs_trace_key(srq_verbs_trace_buf_t *b, const char *pfx,
                                const char *name)
{
    srq_verbs_trace_printf(b, " %s%s%s=", pfx, *pfx ? "." : "", name);
}

void srq_verbs_trace_int(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, long long v)
{
    srq_verbs_trace_key(b, pfx, name);
    srq_verbs_trace_printf(b, "%lld", v);
}

void srq_verbs_trace_uint(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, unsigned long long v)
{
    srq_verbs_trace_key(b, pfx, name);
    srq_verbs_trace_printf(b, "%llu", v);
}

void srq_verbs_trace_hex(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, unsigned long long v)
{
    srq_verbs_trace_key(b, pfx, name);
    srq_verbs_trace_printf(b, "0x%llx", v);
}

void srq_verbs_trace_enum(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, long v,
                          const srq_verbs_trace_name_t *names)
{
    srq_verbs_trace_key(b, pfx, name);
    for (; names->name != NULL; ++names) {
        if (names->value == v) {
            srq_verbs_trace_printf(b, "%s", names->name);
            return;
        }
    }
    srq_verbs_trace_printf(b, "%ld", v);
}

void srq_verbs_trace_flags(srq_verbs_trace_buf_t *b, const char *pfx,
                           const char *name, unsigned long v,
                           const srq_verbs_trace_name_t *names)
{
    const char *sep = "";

    srq_verbs_trace_key(b, pfx, name);
    if (v == 0) {
        srq_verbs_trace_printf(b, "0");
        return;
    }
    for (; (names->name != NULL) && (v != 0); ++names) {
        if ((names->value != 0) && ((v & names->value) == (unsigned long)names->value)) {
            srq_verbs_trace_printf(b, "%s%s", sep, names->name);
            v  &= ~(unsigned long)names->value;
            sep = "|";
        }
    }
    if (v != 0) {
        srq_verbs_trace_printf(b, "%s0x%lx", sep, v);
    }
}

const char *srq_verbs_trace_errno_name(int err)
{
    size_t i;

    for (i = 0; i < sizeof(srq_verbs_trace_errnos) /
                    sizeof(srq_verbs_trace_errnos[0]); ++i) {
        if (srq_verbs_trace_errnos[i].value == err) {
            return srq_verbs_trace_errnos[i].name;
        }
    }
    return NULL;
}

void srq_verbs_trace_ret_errno(srq_verbs_trace_buf_t *b, int ret)
{
    const char *name = srq_verbs_trace_errno_name(ret);

    if ((ret != 0) && (name != NULL)) {
        srq_verbs_trace_printf(b, " ret=%s", name);
    } else {
        srq_verbs_trace_printf(b, " ret=%d", ret);
    }
}

void srq_verbs_trace_ret_count(srq_verbs_trace_buf_t *b, int ret)
{
    srq_verbs_trace_printf(b, " ret=%d", ret);
}
