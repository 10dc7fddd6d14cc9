/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the trace file and the names in it.
 *
 * Objects are named by kind and creation order (ctx0, pd0, mr0, cq0, ch0,
 * srq0, qp0, ah0, td0; a parent domain is a pd) and never renamed; registered memory by buffer (buf0,
 * ...); keys, QP numbers, LIDs and GIDs by the object they belong to, so
 * that a replay on another device resolves them to its own. Everything is
 * under one lock: the wrappers (srq_verbs_trace_ops.c) format a call's
 * inputs, make the call unlocked, then format its outputs and write the
 * line with one write(2).
 */
#include "srq_verbs_trace_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct srq_verbs_trace_obj {
    const void *obj;          /* NULL once destroyed */
    int         kind;
    int         index;
    uint32_t    qp_num;       /* qp */
    uint32_t    lkey, rkey;   /* mr */
    int         buf;          /* mr: the buffer its address is in */
} srq_verbs_trace_obj_t;

typedef struct srq_verbs_trace_bufrec {
    uint64_t addr, length;
} srq_verbs_trace_bufrec_t;

typedef struct srq_verbs_trace_ctxrec {
    const struct ibv_context *ctx;
    int                       index;
    int                       num_ports;
    uint16_t                  lid[SRQ_VERBS_TRACE_MAX_PORTS + 1];
    union ibv_gid             gid[SRQ_VERBS_TRACE_MAX_PORTS + 1];
} srq_verbs_trace_ctxrec_t;

typedef struct srq_verbs_trace_idle {
    const struct ibv_cq *cq;
    int                  num_entries;
    unsigned long        count;
} srq_verbs_trace_idle_t;

static const char *const srq_verbs_trace_kinds[] = {
    "ctx", "pd", "mr", "cq", "ch", "srq", "qp", "ah", "td"
};
static const char *const srq_verbs_trace_kind_names[] = {
    "context", "pd", "mr", "cq", "comp_channel", "srq", "qp", "ah", "td"
};
/* The user address space of x86-64 and aarch64 (48 bits, half of it
 * the kernel's): no buffer of a process is longer */
#define SRQ_VERBS_TRACE_MAX_BUF  (1ull << 47)

#define SRQ_VERBS_TRACE_KINDS \
    (sizeof(srq_verbs_trace_kinds) / sizeof(srq_verbs_trace_kinds[0]))

static struct {
    pthread_mutex_t            lock;
    int                        fd;        /* -1: not open (yet) */
    int                        state;     /* 0 unknown, 1 on, -1 off */
    srq_verbs_trace_obj_t     *objs;
    size_t                     num_objs, cap_objs;
    int                        next[SRQ_VERBS_TRACE_KINDS];
    srq_verbs_trace_bufrec_t  *bufs;
    size_t                     num_bufs, cap_bufs;
    srq_verbs_trace_ctxrec_t  *ctxs;
    size_t                     num_ctxs, cap_ctxs;
    srq_verbs_trace_idle_t    *idle;
    size_t                     num_idle, cap_idle;
} srq_verbs_trace = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fd   = -1,
};

/* ---- growing arrays ----------------------------------------------------- */

static void *srq_verbs_trace_grow(void *arr, size_t *cap, size_t num,
                                  size_t size)
{
    void *p;

    if (num < *cap) {
        return arr;
    }
    p = realloc(arr, (*cap ? *cap * 2 : 16) * size);
    if (p != NULL) {
        *cap = *cap ? *cap * 2 : 16;
    }
    return p;
}

#define SRQ_VERBS_TRACE_PUSH(_arr, _num, _cap) \
    ({ \
        __typeof__(_arr) _p = srq_verbs_trace_grow(_arr, &(_cap), _num, \
                                                   sizeof(*(_arr))); \
        if (_p != NULL) { \
            (_arr) = _p; \
        } \
        (_p != NULL) ? &(_arr)[(_num)++] : NULL; \
    })

/* ---- the file ----------------------------------------------------------- */

/* The file name, with %p replaced by the process id (one file per process
 * of a job) */
static void srq_verbs_trace_path(const char *tmpl, char *path, size_t len)
{
    size_t n = 0;

    for (; *tmpl && (n + 24 < len); ++tmpl) {
        if ((tmpl[0] == '%') && (tmpl[1] == 'p')) {
            n += snprintf(path + n, len - n, "%d", (int)getpid());
            ++tmpl;
        } else {
            path[n++] = *tmpl;
        }
    }
    path[n] = '\0';
}

/* The trace file, opened for writing from its start: only a regular file
 * of ours. Never a FIFO (its open would wait for a reader; O_NONBLOCK
 * makes it fail or, with a reader, the check refuses it), never through a
 * symlink (in /tmp another user could point it at a file of ours, which
 * O_TRUNC would empty), never another user's file; emptied only once it
 * is known to be ours. -1 with errno on refusal */
static int srq_verbs_trace_open(const char *path)
{
    struct stat st;
    int fd, err;

    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
                    O_CLOEXEC, 0600);
    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
    } else if (st.st_uid != geteuid()) {
        err = EPERM;
    } else if (ftruncate(fd, 0) != 0) {
        err = errno;
    } else {
        return fd;
    }
    close(fd);
    errno = err;
    return -1;
}

bool srq_verbs_trace_enabled(void)
{
    const char *tmpl;
    char path[4096], head[96];
    int len;

    pthread_mutex_lock(&srq_verbs_trace.lock);
    if (srq_verbs_trace.state == 0) {
        tmpl = getenv(SRQ_VERBS_TRACE_ENV);
        srq_verbs_trace.state = -1;
        if ((tmpl != NULL) && (*tmpl != '\0')) {
            srq_verbs_trace_path(tmpl, path, sizeof(path));
            srq_verbs_trace.fd = srq_verbs_trace_open(path);
            if (srq_verbs_trace.fd < 0) {
                /* the one thing a library may say: the user asked for a
                 * file and gets none */
                fprintf(stderr, "ucx-srq: %s=%s: %s; not tracing (only a "
                        "regular file of this user, not through a "
                        "symlink)\n", SRQ_VERBS_TRACE_ENV, path,
                        strerror(errno));
            } else {
                srq_verbs_trace.state = 1;
                len = snprintf(head, sizeof(head),
                               "# ucx-srq verbs trace, pid %d\n",
                               (int)getpid());
                if (write(srq_verbs_trace.fd, head, len) != len) {
                    /* a file that takes no writes (full, or one of /proc) */
                    fprintf(stderr, "ucx-srq: %s=%s: cannot write: %s; not "
                            "tracing\n", SRQ_VERBS_TRACE_ENV, path,
                            strerror(errno));
                    srq_verbs_trace.state = -1;
                }
            }
        }
    }
    pthread_mutex_unlock(&srq_verbs_trace.lock);
    return srq_verbs_trace.state > 0;
}

static srq_verbs_trace_obj_t *srq_verbs_trace_find(const void *obj)
{
    size_t i;

    for (i = srq_verbs_trace.num_objs; i-- > 0;) {
        if (srq_verbs_trace.objs[i].obj == obj) {
            return &srq_verbs_trace.objs[i];
        }
    }
    return NULL;
}

static void srq_verbs_trace_name(srq_verbs_trace_buf_t *b,
                                 const srq_verbs_trace_obj_t *o)
{
    srq_verbs_trace_printf(b, "%s%d", srq_verbs_trace_kinds[o->kind],
                           o->index);
}

void srq_verbs_trace_object(srq_verbs_trace_buf_t *b, const char *pfx,
                            const char *name, const void *obj)
{
    const srq_verbs_trace_obj_t *o;

    srq_verbs_trace_key(b, pfx, name);
    if (obj == NULL) {
        srq_verbs_trace_printf(b, "NULL");
        return;
    }
    o = srq_verbs_trace_find(obj);
    if (o != NULL) {
        srq_verbs_trace_name(b, o);
    } else {
        /* not created through a traced device: an address means nothing
         * to a replay, but says that something foreign was passed */
        srq_verbs_trace_printf(b, "%#" PRIxPTR, (uintptr_t)obj);
    }
}

void srq_verbs_trace_ptr(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, const void *p)
{
    srq_verbs_trace_key(b, pfx, name);
    srq_verbs_trace_printf(b, "%#" PRIxPTR, (uintptr_t)p);
}

void srq_verbs_trace_callback(srq_verbs_trace_buf_t *b, const char *pfx,
                              const char *name, int given)
{
    srq_verbs_trace_key(b, pfx, name);
    srq_verbs_trace_printf(b, "%s", given ? "given" : "NULL");
}

static int srq_verbs_trace_buf_of(uint64_t addr)
{
    size_t i;

    for (i = srq_verbs_trace.num_bufs; i-- > 0;) {
        if ((addr >= srq_verbs_trace.bufs[i].addr) &&
            (addr - srq_verbs_trace.bufs[i].addr <
             srq_verbs_trace.bufs[i].length)) {
            return (int)i;
        }
    }
    return -1;
}

static const srq_verbs_trace_obj_t *srq_verbs_trace_mr_by_key(uint32_t key,
                                                              int remote)
{
    const srq_verbs_trace_obj_t *o;
    size_t i;

    for (i = srq_verbs_trace.num_objs; i-- > 0;) {
        o = &srq_verbs_trace.objs[i];
        if ((o->obj != NULL) && (o->kind == SRQ_VERBS_TRACE_MR) &&
            ((remote ? o->rkey : o->lkey) == key)) {
            return o;
        }
    }
    return NULL;
}

void srq_verbs_trace_addr(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, uint64_t addr, uint32_t key)
{
    const srq_verbs_trace_obj_t *mr = srq_verbs_trace_mr_by_key(key, 0);
    int buf = -1;

    if (mr == NULL) {
        mr = srq_verbs_trace_mr_by_key(key, 1);
    }
    if ((mr != NULL) && (addr >= srq_verbs_trace.bufs[mr->buf].addr) &&
        (addr - srq_verbs_trace.bufs[mr->buf].addr <=
         srq_verbs_trace.bufs[mr->buf].length)) {
        buf = mr->buf;
    } else {
        buf = srq_verbs_trace_buf_of(addr);
    }
    srq_verbs_trace_key(b, pfx, name);
    if (buf < 0) {
        srq_verbs_trace_printf(b, "0x%" PRIx64, addr);
    } else {
        srq_verbs_trace_printf(b, "buf%d+%" PRIu64, buf,
                               addr - srq_verbs_trace.bufs[buf].addr);
    }
}

void srq_verbs_trace_mkey(srq_verbs_trace_buf_t *b, const char *pfx,
                          const char *name, uint32_t key, int remote)
{
    const srq_verbs_trace_obj_t *mr = srq_verbs_trace_mr_by_key(key, remote);

    srq_verbs_trace_key(b, pfx, name);
    if (mr == NULL) {
        srq_verbs_trace_printf(b, "0x%" PRIx32, key);
    } else {
        srq_verbs_trace_printf(b, "mr%d.%s", mr->index, remote ? "rkey" : "lkey");
    }
}

void srq_verbs_trace_qpn(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, uint32_t qpn)
{
    const srq_verbs_trace_obj_t *o;
    size_t i;

    srq_verbs_trace_key(b, pfx, name);
    for (i = srq_verbs_trace.num_objs; i-- > 0;) {
        o = &srq_verbs_trace.objs[i];
        if ((o->obj != NULL) && (o->kind == SRQ_VERBS_TRACE_QP) &&
            (o->qp_num == qpn)) {
            srq_verbs_trace_printf(b, "qp%d.qp_num", o->index);
            return;
        }
    }
    srq_verbs_trace_printf(b, "%" PRIu32, qpn); /* another process's */
}

void srq_verbs_trace_lid(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, uint16_t lid)
{
    const srq_verbs_trace_ctxrec_t *c;
    size_t i;
    int p;

    srq_verbs_trace_key(b, pfx, name);
    for (i = 0; (lid != 0) && (i < srq_verbs_trace.num_ctxs); ++i) {
        c = &srq_verbs_trace.ctxs[i];
        for (p = 1; p <= c->num_ports; ++p) {
            if ((c->ctx != NULL) && (c->lid[p] == lid)) {
                srq_verbs_trace_printf(b, "ctx%d.port%d.lid", c->index, p);
                return;
            }
        }
    }
    srq_verbs_trace_printf(b, "%u", lid);
}

void srq_verbs_trace_gid(srq_verbs_trace_buf_t *b, const char *pfx,
                         const char *name, const union ibv_gid *gid)
{
    const srq_verbs_trace_ctxrec_t *c;
    size_t i;
    int p;

    srq_verbs_trace_key(b, pfx, name);
    for (i = 0; i < srq_verbs_trace.num_ctxs; ++i) {
        c = &srq_verbs_trace.ctxs[i];
        for (p = 1; p <= c->num_ports; ++p) {
            if ((c->ctx != NULL) && !memcmp(&c->gid[p], gid, sizeof(*gid))) {
                srq_verbs_trace_printf(b, "ctx%d.port%d.gid", c->index, p);
                return;
            }
        }
    }
    srq_verbs_trace_printf(b, "gid:");
    for (p = 0; p < 16; ++p) {
        srq_verbs_trace_printf(b, "%02x", gid->raw[p]);
    }
}

void srq_verbs_trace_buffer(srq_verbs_trace_buf_t *b, const char *name,
                            const void *addr, size_t length)
{
    uint64_t a = (uintptr_t)addr;
    srq_verbs_trace_bufrec_t *rec;
    int buf = srq_verbs_trace_buf_of(a);

    srq_verbs_trace_key(b, "", name);
    /* longer than any user address space: no memory of its own (the
     * implicit ODP region, NULL and SIZE_MAX; a length a device refuses).
     * It is its address: recorded as a buffer it would swallow every
     * address after it */
    if (length > SRQ_VERBS_TRACE_MAX_BUF) {
        srq_verbs_trace_printf(b, "0x%" PRIx64, a);
        return;
    }
    /* inside a known buffer: the same memory in a replay too */
    if ((buf >= 0) &&
        (length <= srq_verbs_trace.bufs[buf].length -
                   (a - srq_verbs_trace.bufs[buf].addr))) {
        srq_verbs_trace_printf(b, "buf%d+%" PRIu64, buf,
                               a - srq_verbs_trace.bufs[buf].addr);
        return;
    }
    rec = SRQ_VERBS_TRACE_PUSH(srq_verbs_trace.bufs, srq_verbs_trace.num_bufs,
                               srq_verbs_trace.cap_bufs);
    if (rec == NULL) {
        srq_verbs_trace_printf(b, "0x%" PRIx64, a);
        return;
    }
    rec->addr   = a;
    rec->length = length;
    srq_verbs_trace_printf(b, "buf%zu", srq_verbs_trace.num_bufs - 1);
}

void srq_verbs_trace_device(srq_verbs_trace_buf_t *b, const char *name,
                            const struct ibv_device *device)
{
    srq_verbs_trace_key(b, "", name);
    srq_verbs_trace_printf(b, "%s", device ? device->name : "NULL");
}

void srq_verbs_trace_chain_ref(srq_verbs_trace_buf_t *b, const char *name,
                               const void *bad, const void *first,
                               size_t next_offset, const char *chain)
{
    const void *w = first;
    int i;

    srq_verbs_trace_key(b, "", name);
    for (i = 0; (w != NULL) && (i < SRQ_VERBS_TRACE_MAX_CHAIN); ++i) {
        if (w == bad) {
            srq_verbs_trace_printf(b, "%s[%d]", chain, i);
            return;
        }
        w = *(const void *const*)((const char*)w + next_offset);
    }
    /* outside the list: a device bug the line must show */
    srq_verbs_trace_printf(b, "%#" PRIxPTR, (uintptr_t)bad);
}

static srq_verbs_trace_obj_t *srq_verbs_trace_add(const void *obj, int kind)
{
    srq_verbs_trace_obj_t *o;

    o = SRQ_VERBS_TRACE_PUSH(srq_verbs_trace.objs, srq_verbs_trace.num_objs,
                             srq_verbs_trace.cap_objs);
    if (o != NULL) {
        memset(o, 0, sizeof(*o));
        o->obj   = obj;
        o->kind  = kind;
        o->index = srq_verbs_trace.next[kind]++;
    }
    return o;
}

static int srq_verbs_trace_kind(const char *kind)
{
    size_t i;

    for (i = 0; i < SRQ_VERBS_TRACE_KINDS; ++i) {
        if (!strcmp(srq_verbs_trace_kind_names[i], kind)) {
            return (int)i;
        }
    }
    return -1;
}

void srq_verbs_trace_ret_object(srq_verbs_trace_buf_t *b, const void *obj,
                                const char *kind, int err)
{
    const struct ibv_mr *mr = obj;
    srq_verbs_trace_obj_t *o;
    int k = srq_verbs_trace_kind(kind);

    if (obj == NULL) {
        const char *name = srq_verbs_trace_errno_name(err);

        if (name != NULL) {
            srq_verbs_trace_printf(b, " ret=NULL errno=%s", name);
        } else {
            srq_verbs_trace_printf(b, " ret=NULL errno=%d", err);
        }
        return;
    }
    o = (k < 0) ? NULL : srq_verbs_trace_add(obj, k);
    if (o == NULL) {
        srq_verbs_trace_printf(b, " ret=%#" PRIxPTR, (uintptr_t)obj);
        return;
    }
    if (k == SRQ_VERBS_TRACE_QP) {
        o->qp_num = ((const struct ibv_qp*)obj)->qp_num;
    } else if (k == SRQ_VERBS_TRACE_MR) {
        o->lkey = mr->lkey;
        o->rkey = mr->rkey;
        o->buf  = srq_verbs_trace_buf_of((uintptr_t)mr->addr);
    }
    srq_verbs_trace_printf(b, " ret=");
    srq_verbs_trace_name(b, o);
}

void srq_verbs_trace_forget(const void *obj)
{
    srq_verbs_trace_obj_t *o = srq_verbs_trace_find(obj);
    size_t i;

    if (o != NULL) {
        o->obj = NULL;
    }
    for (i = 0; i < srq_verbs_trace.num_ctxs; ++i) {
        if (srq_verbs_trace.ctxs[i].ctx == obj) {
            srq_verbs_trace.ctxs[i].ctx = NULL;
        }
    }
}

/* ---- calls --------------------------------------------------------------- */

/* Polls that found nothing, written as one line each (with repeat=) before
 * the next line: a progress loop polls empty CQs all the time */
static void srq_verbs_trace_flush_idle(srq_verbs_trace_buf_t *b)
{
    srq_verbs_trace_idle_t *idle;
    const srq_verbs_trace_obj_t *o;
    size_t i;

    for (i = 0; i < srq_verbs_trace.num_idle; ++i) {
        idle = &srq_verbs_trace.idle[i];
        o    = srq_verbs_trace_find(idle->cq);
        if ((idle->count == 0) || (o == NULL)) {
            continue;
        }
        srq_verbs_trace_printf(b, "ibv_poll_cq cq=cq%d num_entries=%d ret=0 "
                               "repeat=%lu\n", o->index, idle->num_entries,
                               idle->count);
    }
    srq_verbs_trace.num_idle = 0;
}

void srq_verbs_trace_idle_poll(const struct ibv_cq *cq, int num_entries)
{
    srq_verbs_trace_idle_t *idle;
    size_t i;

    pthread_mutex_lock(&srq_verbs_trace.lock);
    for (i = 0; i < srq_verbs_trace.num_idle; ++i) {
        idle = &srq_verbs_trace.idle[i];
        if ((idle->cq == cq) && (idle->num_entries == num_entries)) {
            ++idle->count;
            goto out;
        }
    }
    idle = SRQ_VERBS_TRACE_PUSH(srq_verbs_trace.idle, srq_verbs_trace.num_idle,
                                srq_verbs_trace.cap_idle);
    if (idle != NULL) {
        idle->cq          = cq;
        idle->num_entries = num_entries;
        idle->count       = 1;
    }
out:
    pthread_mutex_unlock(&srq_verbs_trace.lock);
}

void srq_verbs_trace_begin(srq_verbs_trace_call_t *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&srq_verbs_trace.lock);
}

void srq_verbs_trace_pause(srq_verbs_trace_call_t *t)
{
    pthread_mutex_unlock(&srq_verbs_trace.lock);
}

void srq_verbs_trace_resume(srq_verbs_trace_call_t *t)
{
    t->err = errno;
    pthread_mutex_lock(&srq_verbs_trace.lock);
}

void srq_verbs_trace_end(srq_verbs_trace_call_t *t)
{
    srq_verbs_trace_buf_t line = {0};
    ssize_t n = 0;

    srq_verbs_trace_flush_idle(&line);
    srq_verbs_trace_printf(&line, "%.*s\n", (int)t->b.len,
                           t->b.p ? t->b.p : "");
    if ((line.p != NULL) && (srq_verbs_trace.fd >= 0)) {
        n = write(srq_verbs_trace.fd, line.p, line.len);
    }
    (void)n; /* a full disk loses trace lines, not the program */
    pthread_mutex_unlock(&srq_verbs_trace.lock);
    free(line.p);
    free(t->b.p);
    errno = t->err;
}

void srq_verbs_trace_cancel(srq_verbs_trace_call_t *t)
{
    pthread_mutex_unlock(&srq_verbs_trace.lock);
    free(t->b.p);
    errno = t->err;
}

void srq_verbs_trace_add_context(const struct ibv_context *ctx,
                                 srq_verbs_trace_buf_t *b, int num_ports,
                                 const uint16_t *lid,
                                 const union ibv_gid *gid)
{
    srq_verbs_trace_ctxrec_t *c;
    srq_verbs_trace_obj_t *o;

    o = srq_verbs_trace_add(ctx, SRQ_VERBS_TRACE_CTX);
    c = SRQ_VERBS_TRACE_PUSH(srq_verbs_trace.ctxs, srq_verbs_trace.num_ctxs,
                             srq_verbs_trace.cap_ctxs);
    if ((o == NULL) || (c == NULL)) {
        srq_verbs_trace_printf(b, " ret=%#" PRIxPTR, (uintptr_t)ctx);
        return;
    }
    memset(c, 0, sizeof(*c));
    c->ctx       = ctx;
    c->index     = o->index;
    c->num_ports = (num_ports > SRQ_VERBS_TRACE_MAX_PORTS) ?
                   SRQ_VERBS_TRACE_MAX_PORTS : num_ports;
    memcpy(c->lid, lid, sizeof(c->lid));
    memcpy(c->gid, gid, sizeof(c->gid));
    srq_verbs_trace_printf(b, " ret=ctx%d", o->index);
}
