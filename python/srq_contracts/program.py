# SPDX-License-Identifier: BSD-3-Clause
"""The C program a sequence of verb calls becomes (the replay tool's
output): object variables, buffers, expected completions, and the values
of a trace written as C."""
import re

from . import trace as _trace


_CNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _c_number(value):
    n = _trace.to_int(value)
    if n < 0:
        return "(%d)" % n
    if n > 0x7fffffff:
        return "%sULL" % value
    return value


class Program:
    """The C program a sequence of calls becomes: object variables,
    buffers, per-CQ expected completions, and the helpers the blocks use"""

    def __init__(self, device=None, strict=False):
        """@strict: every handle, buffer and context a call uses must have
        been made by an earlier call of this program (a whole trace, as
        the replay tool renders it); else a single call may name any"""
        self.strict = strict
        self.objects = {}     # name -> kind
        self.buffers = {}     # name -> size
        self.expect = {}      # cq name -> [C initializer of an expected wc]
        self.qpns = set()     # qp names whose numbers are kept
        self.contexts = set()
        self.created = set()  # objects a call before created
        self.device = device
        self.calls = 0
        self._tmp = 0

    def tmp(self, stem):
        self._tmp += 1
        return "%s%d" % (stem, self._tmp)

    def declare(self, name):
        kind = _trace.object_kind(name)
        if kind is None:
            raise _trace.TraceError("%r names no object" % name)
        self.objects.setdefault(name, kind)
        return name

    def create(self, name):
        """@name is made by the call being replayed"""
        self.created.add(self.declare(name))
        return name

    def use(self, name):
        """@name as the input of a call: some call before made it (else
        the program would pass a handle that was never set)"""
        if self.strict and name not in self.created:
            raise _trace.TraceError("%s is used before a call created it" % name)
        return self.declare(name)

    def value(self, kind, value, leaf=None):
        """The C expression of a trace value"""
        if value == "NULL":
            return "NULL"
        if kind in ("int", "uint", "hex"):
            return _c_number(value)
        if kind in ("enum", "flags"):
            parts = value.split("|")
            for p in parts:
                if not (_trace.is_number(p) or _CNAME.match(p)):
                    raise _trace.TraceError("bad name %r" % p)
            return "(" + "|".join(_c_number(p) if _trace.is_number(p) else p for p in parts) + ")"
        if kind == "object":
            return self.use(value)
        if kind in ("addr", "buffer"):
            if _trace.is_number(value):
                return _c_number(value) if kind == "addr" else "(void*)(uintptr_t)%s" % _c_number(value)
            m = re.match(r"^(buf\d+)(?:\+(.+))?$", value)
            if self.strict and m.group(1) not in self.buffers:
                raise _trace.TraceError("%s is used before an ibv_reg_mr allocated it" %
                                        m.group(1))
            self.buffers.setdefault(m.group(1), 0)
            off = m.group(2) or "0"
            if kind == "addr":
                return "((uint64_t)(uintptr_t)%s + %s)" % (m.group(1), off)
            return "((char*)%s + %s)" % (m.group(1), off)
        if kind in ("lkey", "rkey"):
            if _trace.is_number(value):
                return _c_number(value)
            mr, key = value.split(".")
            return "%s->%s" % (self.use(mr), key)
        if kind == "qpn":
            if _trace.is_number(value):
                return _c_number(value)
            qp = value.split(".")[0]
            self.use(qp)
            self.qpns.add(qp)
            return "%s_num" % qp
        if kind == "lid":
            if _trace.is_number(value):
                return _c_number(value)
            ctx, port, _ = value.split(".")
            return "%s_port[%s].lid" % (self._port_of(ctx, port), port[4:])
        if kind == "gid":
            if value.startswith("gid:"):
                return "replay_gid(\"%s\")" % value[4:]
            ctx, port, _ = value.split(".")
            return "%s_gid[%s]" % (self._port_of(ctx, port), port[4:])
        if kind == "ptr":
            return "(void*)(uintptr_t)%s" % _c_number(value)
        if kind == "device":
            return "\"%s\"" % value
        raise _trace.TraceError("no C for a %s value" % kind)

    def _port_of(self, ctx, port):
        """@ctx, an opened context whose @port ("portP") the arrays hold"""
        if self.strict and ctx not in self.contexts:
            raise _trace.TraceError("%s is used before an ibv_open_device opened it" % ctx)
        if not 1 <= int(port[4:]) <= 8:
            raise _trace.TraceError("%s.%s: no such port" % (ctx, port))
        return ctx

    def callback(self, name, value):
        """A function of the traced program (a parent domain's alloc or
        free): the trace says only whether it was given, so the replay
        gives its own (replay_cb_alloc/_free: aligned heap memory, each
        pointer checked when it comes back), never the traced address"""
        if value == "NULL":
            return "NULL"
        if name not in ("alloc", "free"):
            raise _trace.TraceError("no replay function for the callback %s" % name)
        return "replay_cb_%s" % name

    # ---- the whole file
    def render(self, body, source="trace"):
        decls = []
        for name, kind in sorted(self.objects.items()):
            ctype = "struct ibv_%s" % kind
            decls.append("static %s *%s;" % (ctype, name))
        for qp in sorted(self.qpns):
            decls.append("static uint32_t %s_num;" % qp)
        for ctx in sorted(self.contexts):
            decls.append("static struct ibv_port_attr %s_port[REPLAY_MAX_PORTS + 1];" % ctx)
            decls.append("static union ibv_gid %s_gid[REPLAY_MAX_PORTS + 1];" % ctx)
        for buf in sorted(self.buffers):
            decls.append("static void *%s;" % buf)
        for cq, entries in sorted(self.expect.items()):
            decls.append("static replay_wc_t %s_expect[] = {\n%s\n    { .line = 0 }\n};" %
                         (cq, "\n".join("    %s," % e for e in entries)))
        return _PRELUDE.replace("@SOURCE@", source) + "\n".join(decls) + \
            "\n\nint main(int argc, char **argv)\n{\n" \
            "    replay_device = (argc > 1) ? argv[1] : NULL;\n" \
            "    replay_strict = (getenv(\"REPLAY_LENIENT\") == NULL);\n\n" + body + \
            "\n    printf(\"replay: %d calls, %d mismatches\\n\", replay_calls, replay_mismatches);\n" \
            "    return replay_mismatches ? 1 : 0;\n}\n"


_PRELUDE = r'''/*
 * Generated by srq-verbs-replay from @SOURCE@: the verbs calls of a traced
 * run (SRQ_VERBS_TRACE), made again on any device. Build and run:
 *
 *     cc prog.c -libverbs -o prog && ./prog [DEVICE]
 *
 * Every call's result is compared with what the trace recorded (return
 * value, errno, *bad_wr, completions and their statuses); a difference is
 * printed as "MISMATCH" and makes the exit status 1.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define REPLAY_MAX_PORTS   8
#define REPLAY_TIMEOUT_MS  10000
#define REPLAY_TIMING_MS   1000   /* an event that timing may leave out */
/* a helper a program may not use (one trace needs no poll, another no buffer) */
#define REPLAY_FN          static __attribute__((unused))

typedef struct replay_wc {
    int                 line;
    uint64_t            wr_id;
    enum ibv_wc_status  status;
    int                 has_opcode, has_len;
    enum ibv_wc_opcode  opcode;
    uint32_t            byte_len;
    uint32_t           *qpn;       /* the QP's number once it exists */
    uint32_t            raw_qpn;
    int                 matched;
} replay_wc_t;

static const char *replay_device;
static int replay_strict, replay_calls, replay_mismatches, ret;

REPLAY_FN void replay_mismatch(int line, const char *what, long got, long want)
{
    printf("MISMATCH line %d: %s: got %ld, trace has %ld\n", line, what, got, want);
    ++replay_mismatches;
}

REPLAY_FN void replay_int(int line, const char *what, long got, long want)
{
    if (got != want) {
        replay_mismatch(line, what, got, want);
    }
}

REPLAY_FN void replay_errno(int line, const char *what, int got, int want)
{
    if (got != want) {
        printf("MISMATCH line %d: %s returned %d (%s), trace has %d (%s)\n", line, what,
               got, got ? strerror(got) : "success", want, want ? strerror(want) : "success");
        ++replay_mismatches;
    }
}

REPLAY_FN void replay_created(int line, const char *what, int ok, int err, int want_ok, int want_err)
{
    if (ok != want_ok) {
        printf("MISMATCH line %d: %s %s (%s), trace has %s\n", line, what,
               ok ? "succeeded" : "failed", ok ? "" : strerror(err),
               want_ok ? "success" : strerror(want_err));
        ++replay_mismatches;
    } else if (!ok && want_err && (err != want_err)) {
        replay_mismatch(line, "errno", err, want_err);
    }
}

REPLAY_FN long replay_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

REPLAY_FN struct ibv_context *replay_open(int line, const char *traced, struct ibv_port_attr *port,
                                       union ibv_gid *gid)
{
    const char *name = replay_device ? replay_device : traced;
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_device_attr attr;
    struct ibv_context *ctx = NULL;
    int i;

    for (i = 0; list && list[i]; ++i) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (list) {
        ibv_free_device_list(list);
    }
    if (ctx == NULL) {
        fprintf(stderr, "line %d: cannot open device %s\n", line, name);
        exit(2);
    }
    if (ibv_query_device(ctx, &attr) == 0) {
        for (i = 1; (i <= attr.phys_port_cnt) && (i <= REPLAY_MAX_PORTS); ++i) {
            ibv_query_port(ctx, i, &port[i]);
            ibv_query_gid(ctx, i, 0, &gid[i]);
        }
    }
    ++replay_calls;
    return ctx;
}

REPLAY_FN void *replay_buf(size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    return (p == MAP_FAILED) ? NULL : p;
}

/* A parent domain's allocators: the traced program's own cannot be called
 * (their addresses are that process's), so what was made with allocators
 * is made with these. Each block is handed out once and must come back
 * once, to the parent domain it was given for */
#define REPLAY_CB_MAX  4096
static struct { void *p; struct ibv_pd *pd; } replay_cb_live[REPLAY_CB_MAX];

REPLAY_FN void *replay_cb_alloc(struct ibv_pd *pd, void *pd_context,
                                                     size_t size, size_t alignment,
                                                     uint64_t resource_type)
{
    void *p = NULL;
    int i;

    (void)pd_context; (void)resource_type;
    for (i = 0; (i < REPLAY_CB_MAX) && (replay_cb_live[i].p != NULL); ++i) {
    }
    if ((i == REPLAY_CB_MAX) ||
        posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment,
                       size ? size : 1)) {
        return NULL;
    }
    memset(p, 0, size);
    replay_cb_live[i].p  = p;
    replay_cb_live[i].pd = pd;
    return p;
}

REPLAY_FN void replay_cb_free(struct ibv_pd *pd, void *pd_context,
                                                   void *ptr, uint64_t resource_type)
{
    int i;

    (void)pd_context; (void)resource_type;
    for (i = 0; i < REPLAY_CB_MAX; ++i) {
        if ((replay_cb_live[i].p == ptr) && (ptr != NULL)) {
            replay_int(0, "free: the parent domain alloc gave it for",
                       replay_cb_live[i].pd == pd, 1);
            replay_cb_live[i].p = NULL;
            free(ptr);
            return;
        }
    }
    printf("MISMATCH: the device freed %p, which the replay's allocator did not give\n", ptr);
    ++replay_mismatches;
}

REPLAY_FN union ibv_gid replay_gid(const char *hex)
{
    union ibv_gid gid;
    int i;

    for (i = 0; i < 16; ++i) {
        sscanf(hex + 2 * i, "%2hhx", &gid.raw[i]);
    }
    return gid;
}

/* Is an event to read on @fd within @ms? (the get that follows blocks) */
REPLAY_FN int replay_fd_ready(int fd, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    return poll(&pfd, 1, ms) > 0;
}

/* Wait for the event the trace read next: 0 (and a mismatch) if none
 * comes, and the replay reads none: a get on an empty fd never returns */
REPLAY_FN int replay_wait_fd(int line, int fd)
{
    if (!replay_fd_ready(fd, REPLAY_TIMEOUT_MS)) {
        printf("MISMATCH line %d: no event within %d ms\n", line, REPLAY_TIMEOUT_MS);
        ++replay_mismatches;
        return 0;
    }
    return 1;
}

/* Async events read and not yet acknowledged, by type: the trace's ack of
 * one the replay never read is not made (libibverbs counts acks against
 * the events it reported) */
static int replay_async_held[64];

REPLAY_FN int replay_async_take(enum ibv_event_type type)
{
    if ((type < 0) || (type >= 64) || (replay_async_held[type] == 0)) {
        return 0;
    }
    --replay_async_held[type];
    return 1;
}

/*
 * The async event the trace read next, into @ev: 1 if read. An SRQ's
 * limit event is timing: it fires when the device takes a receive WQE
 * that leaves fewer than the limit, so whether it fires, and where,
 * depends on when the device took each WQE against the program's posts,
 * and the replay skips the polls that found nothing (the traced run's
 * other progress) and has soft0's progress thread beside it. One the
 * trace read and that does not come is noted, not a mismatch; one that
 * comes where the trace read another is acknowledged and passed over.
 */
REPLAY_FN int replay_get_async(int line, struct ibv_context *ctx,
                                                    enum ibv_event_type want,
                                                    struct ibv_async_event *ev)
{
    int srq_limit = (want == IBV_EVENT_SRQ_LIMIT_REACHED);

    for (;;) {
        if (!replay_fd_ready(ctx->async_fd, srq_limit ? REPLAY_TIMING_MS : REPLAY_TIMEOUT_MS)) {
            if (srq_limit) {
                printf("note line %d: no SRQ limit event (timing, not a mismatch)\n", line);
                return 0;
            }
            printf("MISMATCH line %d: no event within %d ms\n", line, REPLAY_TIMEOUT_MS);
            ++replay_mismatches;
            return 0;
        }
        if (ibv_get_async_event(ctx, ev) != 0) {
            replay_errno(line, "ibv_get_async_event", errno, 0);
            return 0;
        }
        if ((ev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) && !srq_limit) {
            printf("note line %d: an SRQ limit event passed over (timing)\n", line);
            ibv_ack_async_event(ev);
            continue;
        }
        replay_int(line, "out.event.event_type", ev->event_type, want);
        if ((ev->event_type >= 0) && (ev->event_type < 64)) {
            ++replay_async_held[ev->event_type];
        }
        return 1;
    }
}

REPLAY_FN uint32_t replay_expect_qpn(const replay_wc_t *e)
{
    return e->qpn ? *e->qpn : e->raw_qpn;
}

/* Wait for @want completions of @cq and match each to a recorded one */
REPLAY_FN void replay_poll(int line, struct ibv_cq *cq, int num_entries, int want,
                        replay_wc_t *expect)
{
    struct ibv_wc wc[64];
    long deadline = replay_now_ms() + REPLAY_TIMEOUT_MS;
    int got = 0, n, i;
    replay_wc_t *e;

    ++replay_calls;
    while (got < want) {
        n = want - got;
        n = (n > num_entries) ? num_entries : n;
        n = ibv_poll_cq(cq, (n > 64) ? 64 : n, wc);
        if (n < 0) {
            printf("MISMATCH line %d: ibv_poll_cq returned %d\n", line, n);
            ++replay_mismatches;
            return;
        }
        for (i = 0; i < n; ++i) {
            for (e = expect; e->line != 0; ++e) {
                if (!e->matched && (e->wr_id == wc[i].wr_id) &&
                    (replay_expect_qpn(e) == wc[i].qp_num)) {
                    break;
                }
            }
            if (e->line == 0) {
                printf("MISMATCH line %d: completion wr_id 0x%llx qp_num %u status %s not in the trace\n",
                       line, (unsigned long long)wc[i].wr_id, wc[i].qp_num,
                       ibv_wc_status_str(wc[i].status));
                ++replay_mismatches;
                continue;
            }
            e->matched = 1;
            if (wc[i].status != e->status) {
                printf("MISMATCH line %d: wr_id 0x%llx status %s, trace (line %d) has %s\n", line,
                       (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status),
                       e->line, ibv_wc_status_str(e->status));
                ++replay_mismatches;
            } else if (e->has_opcode && (wc[i].opcode != e->opcode)) {
                replay_mismatch(line, "wc.opcode", wc[i].opcode, e->opcode);
            } else if (e->has_len && (wc[i].byte_len != e->byte_len)) {
                replay_mismatch(line, "wc.byte_len", wc[i].byte_len, e->byte_len);
            }
        }
        got += n;
        if ((got < want) && (replay_now_ms() > deadline)) {
            printf("MISMATCH line %d: %d of %d completions within %d ms\n", line, got, want,
                   REPLAY_TIMEOUT_MS);
            ++replay_mismatches;
            return;
        }
    }
}

'''
