# SPDX-License-Identifier: BSD-3-Clause
"""Generates the C that formats trace lines (src/verbs/srq_verbs_trace.c
calls it): one function pair per verb, srq_verbs_trace_in_<verb>() (the
verb's name and its inputs, before the call) and
srq_verbs_trace_out_<verb>() (the return value and outputs, after it),
and one formatter per struct. The keys are the contracts' paths, so the
tracer writes exactly what the Python side parses; every field access is
checked against <infiniband/verbs.h> at compile time (_Static_assert of
its type), so a contract that describes a struct wrongly does not build.
"""
from .contracts import base_type

_SCALAR_HELPER = {
    "int": "srq_verbs_trace_int", "uint": "srq_verbs_trace_uint", "hex": "srq_verbs_trace_hex",
    "qpn": "srq_verbs_trace_qpn", "lid": "srq_verbs_trace_lid", "ptr": "srq_verbs_trace_ptr",
}


def _ident(name):
    return name.replace("struct ", "").replace("union ", "").replace("enum ", "").replace(" ", "_")


def _cond(cond, v, c):
    """C expression of a contract condition"""
    if "all" in cond:
        return "(" + " && ".join(_cond(x, v, c) for x in cond["all"]) + ")"
    if "ret" in cond:
        return "(c->ret != 0)" if cond["ret"] == "nonzero" else "(c->ret == 0)"
    if "field" in cond:
        lhs = "%s->%s" % (v, cond["field"])
    elif "member" in cond:
        if cond["member"] != "qp_type":
            raise ValueError("condition on member %s" % cond["member"])
        lhs = "c->qp_type"
    else:
        lhs = "c->mask"
    if "in" in cond:
        return "(" + " || ".join("(%s == %s)" % (lhs, x) for x in cond["in"]) + ")"
    if "has" in cond:
        return "((%s & %s) != 0)" % (lhs, cond["has"])
    if cond.get("nonzero"):
        return "(%s != 0)" % lhs
    raise ValueError("condition %r" % cond)


class _Gen:
    def __init__(self, contracts):
        self.contracts = contracts
        self.types = {}
        self.enums = {}
        for c in contracts.values():
            self.types.update(c.types)
            self.enums.update(c.enums)
        self.out = []
        self.asserts = []

    def w(self, line=""):
        self.out.append(line)

    # ---- leaf values
    def leaf(self, f, key, access, v, container, ind):
        kind = f["value"]
        pad = " " * ind
        if kind in ("skip", "link"):
            return
        if kind in _SCALAR_HELPER:
            self.w('%s%s(b, pfx, "%s", %s);' % (pad, _SCALAR_HELPER[kind], key, access))
        elif kind in ("enum", "flags"):
            self.w('%ssrq_verbs_trace_%s(b, pfx, "%s", %s, srq_verbs_trace_names_%s);' %
                   (pad, kind, key, access, _ident(f["enum"])))
        elif kind == "object":
            self.w('%ssrq_verbs_trace_object(b, pfx, "%s", %s);' % (pad, key, access))
        elif kind == "callback":
            self.w('%ssrq_verbs_trace_callback(b, pfx, "%s", %s != NULL);' % (pad, key, access))
        elif kind == "addr":
            kf = f.get("key_field")
            keyexp = "%s->%s%s" % (v, container, kf) if kf else "0"
            self.w('%ssrq_verbs_trace_addr(b, pfx, "%s", %s, %s);' % (pad, key, access, keyexp))
        elif kind in ("lkey", "rkey"):
            self.w('%ssrq_verbs_trace_mkey(b, pfx, "%s", %s, %d);' % (pad, key, access, kind == "rkey"))
        elif kind == "gid":
            self.w('%ssrq_verbs_trace_gid(b, pfx, "%s", &%s);' % (pad, key, access))
        else:
            raise ValueError("%s: no C for value %s" % (key, kind))

    # ---- struct formatters
    def fields(self, tname, fields, v, container, keypfx, ind):
        pad = " " * ind
        for f in fields:
            name = f["name"]
            access = "%s->%s%s" % (v, container, name)
            key = keypfx + name
            if "when" in f:
                self.w("%sif (%s) {" % (pad, _cond(f["when"], v, "c")))
                ind2 = ind + 4
            else:
                ind2 = ind
            if "fields" in f:                       # inline struct/union
                sub_container = container + name + "." if name else container
                sub_key = keypfx + name + "." if name else keypfx
                self.fields(tname, f["fields"], v, sub_container, sub_key, ind2)
            elif "array_len" in f:
                et = base_type(f["type"])[0]
                p2 = " " * ind2
                self.w("%sif ((%s->%s%s > 0) && (%s->%s%s <= SRQ_VERBS_TRACE_MAX_SGE) && (%s != NULL)) {" %
                       (p2, v, container, f["array_len"], v, container, f["array_len"], access))
                self.w("%s    for (int i = 0; i < %s->%s%s; ++i) {" % (p2, v, container, f["array_len"]))
                self.w('%s        char sub[SRQ_VERBS_TRACE_KEY_MAX];' % p2)
                self.w('%s        srq_verbs_trace_subkey(sub, pfx, "%s", i);' % (p2, key))
                self.w("%s        srq_verbs_trace_fmt_%s(b, sub, &%s[i], c);" % (p2, _ident(et), access))
                self.w("%s    }" % p2)
                self.w("%s}" % p2)
                self.assert_type(tname, container + name, f["type"])
            elif f.get("value") is None:            # a named struct
                bt = base_type(f["type"])[0]
                p2 = " " * ind2
                self.w("%s{" % p2)
                self.w('%s    char sub[SRQ_VERBS_TRACE_KEY_MAX];' % p2)
                self.w('%s    srq_verbs_trace_subkey(sub, pfx, "%s", -1);' % (p2, key))
                self.w("%s    srq_verbs_trace_fmt_%s(b, sub, &%s, c);" % (p2, _ident(bt), access))
                self.w("%s}" % p2)
                self.assert_type(tname, container + name, f["type"])
            else:
                self.leaf(f, key, access, v, container, ind2)
                if name:
                    self.assert_type(tname, container + name, f["type"])
            if "when" in f:
                self.w("%s}" % pad)

    def assert_type(self, tname, member, ctype):
        if ctype in ("struct", "union") or tname.count(".") or not member:
            return
        self.asserts.append('_Static_assert(__builtin_types_compatible_p(__typeof__(((%s*)0)->%s), %s),\n'
                            '               "contract: %s.%s is %s");' % (tname, member, ctype, tname, member,
                                                                          ctype))

    def struct_fn(self, tname):
        tdef = self.types[tname]
        self.w("static __attribute__((unused)) void\nsrq_verbs_trace_fmt_%s(srq_verbs_trace_buf_t *b, const char *pfx," % _ident(tname))
        self.w("                                   const %s *v, const srq_verbs_trace_ctx_t *c)" % tname)
        self.w("{")
        self.w("    (void)c;")
        self.fields(tname, tdef["fields"], "v", "", "", 4)
        self.w("}")
        self.w()

    # ---- verbs
    def proto(self, c, phase):
        args = ["srq_verbs_trace_buf_t *b"]
        for p in c.params:
            args.append("%s%s" % (p["type"], "" if p["type"].endswith("*") else " ") + p["name"])
        if phase == "out":
            rv = c.returns
            if rv["value"] == "object":
                args.append("const void *ret, int err")
            elif rv["value"] != "void":
                args.append("int ret")
        return "void srq_verbs_trace_%s_%s(%s)" % (phase, c.verb, ", ".join(args))

    def ctx_init(self, c, ret, out=False):
        self.w("    srq_verbs_trace_ctx_t ctx = { .ret = %s };" % ret)
        self.w("    const srq_verbs_trace_ctx_t *cp = &ctx;")
        for p in c.params:
            if p.get("value") == "flags" and p["type"] == "int":
                self.w("    ctx.mask = %s;" % p["name"])
            # after a destroy the object is freed: only its address is used
            if out and p.get("object") in c.consumed_objects():
                continue
            if p.get("object") == "qp" and p["dir"] == "in":
                self.w("    ctx.qp_type = (%s != NULL) ? (int)%s->qp_type : -1;" % (p["name"], p["name"]))
        self.w("    (void)cp;")

    def param(self, p, c, out):
        name = p["name"]
        key = ("out." if out else "") + name
        bt, depth = base_type(p["type"])
        kind = p.get("value")
        pad = "    "
        if "when" in p:
            self.w("    if (%s) {" % _cond(p["when"], "NULL", "cp").replace("c->", "cp->"))
            pad = "        "
        val = "*" + name if (out and depth >= 2 and kind in ("object", "ptr")) else name
        if kind == "chain_ref":
            self.w('%ssrq_verbs_trace_chain_ref(b, "%s", *%s, %s, offsetof(%s, next), "%s");' %
                   (pad, key, name, p["chain"], bt, p["chain"]))
        elif kind == "buffer":
            self.w('%ssrq_verbs_trace_buffer(b, "%s", %s, %s);' % (pad, key, name, p["size_param"]))
        elif kind == "device":
            self.w('%ssrq_verbs_trace_device(b, "%s", %s);' % (pad, key, name))
        elif kind in ("object",):
            self.w('%ssrq_verbs_trace_object(b, "", "%s", %s);' % (pad, key, val))
        elif kind in ("ptr",):
            self.w('%ssrq_verbs_trace_ptr(b, "", "%s", %s);' % (pad, key, val))
        elif kind is not None and out and depth >= 1 and kind in _SCALAR_HELPER:
            # a number the verb writes back (ibv_get_srq_num's srq_num)
            self.w("%sif (%s != NULL) {" % (pad, name))
            self.leaf(p, key, "*" + name, "NULL", "", len(pad) + 4)
            self.out[-1] = self.out[-1].replace("(b, pfx,", '(b, "",')
            self.w("%s}" % pad)
        elif kind is not None:
            self.leaf(p, key, name, "NULL", "", len(pad))
            self.out[-1] = self.out[-1].replace("(b, pfx,", '(b, "",')
        elif p.get("list") == "next":
            self.w("%s{" % pad)
            self.w("%s    const %s *w = %s;" % (pad, bt, name))
            self.w("%s    for (int i = 0; (w != NULL) && (i < SRQ_VERBS_TRACE_MAX_CHAIN); w = w->next, ++i) {" % pad)
            self.w('%s        char sub[SRQ_VERBS_TRACE_KEY_MAX];' % pad)
            self.w('%s        srq_verbs_trace_subkey(sub, "", "%s", i);' % (pad, key))
            self.w("%s        srq_verbs_trace_fmt_%s(b, sub, w, cp);" % (pad, _ident(bt)))
            self.w("%s    }" % pad)
            self.w("%s}" % pad)
        elif "array_len" in p:
            n = "ret" if p["array_len"] == "ret" else p["array_len"]
            self.w("%sfor (int i = 0; (%s != NULL) && (i < %s); ++i) {" % (pad, name, n))
            self.w('%s    char sub[SRQ_VERBS_TRACE_KEY_MAX];' % pad)
            self.w('%s    srq_verbs_trace_subkey(sub, "", "%s", i);' % (pad, key))
            self.w("%s    srq_verbs_trace_fmt_%s(b, sub, &%s[i], cp);" % (pad, _ident(bt), name))
            self.w("%s}" % pad)
        else:
            self.w("%sif (%s != NULL) {" % (pad, name))
            self.w("%s    srq_verbs_trace_fmt_%s(b, \"%s\", %s, cp);" % (pad, _ident(bt), key, name))
            self.w("%s}" % pad)
        if "when" in p:
            self.w("    }")

    def verb_fns(self, c):
        self.w("%s" % self.proto(c, "in"))
        self.w("{")
        self.ctx_init(c, "0")
        self.w('    srq_verbs_trace_printf(b, "%s");' % c.verb)
        for p in c.params:
            if p["dir"] in ("in", "inout"):
                self.param(p, c, False)
        self.w("}")
        self.w()
        rv = c.returns
        self.w("%s" % self.proto(c, "out"))
        self.w("{")
        self.ctx_init(c, "ret" if rv["value"] in ("errno", "count") else "(ret == NULL)" if rv["value"] == "object" else "0",
                      out=True)
        if rv["value"] == "errno":
            self.w("    srq_verbs_trace_ret_errno(b, ret);")
            ok = "ret == 0"
        elif rv["value"] == "count":
            self.w("    srq_verbs_trace_ret_count(b, ret);")
            ok = "ret >= 0"
        elif rv["value"] == "object":
            self.w('    srq_verbs_trace_ret_object(b, ret, "%s", err);' % rv["object"])
            ok = "ret != NULL"
        else:
            ok = "1"
        outs = [p for p in c.params if p["dir"] in ("out", "inout")]
        if outs:
            self.w("    if (%s) {" % ok if rv["value"] != "errno" else "    {")
            for p in outs:
                self.param(p, c, True)
            self.w("    }")
        for kind in c.consumed_objects():
            for p in c.params:
                if p.get("object") == kind and p["dir"] == "in":
                    self.w("    if (%s) {" % ok)
                    self.w("        srq_verbs_trace_forget(%s);" % p["name"])
                    self.w("    }")
                    break
        self.w("}")
        self.w()
        if c.verb not in ("ibv_open_device",):
            self.signature_assert(c)

    def signature_assert(self, c):
        ret = c.returns["type"]
        args = ", ".join(p["type"] for p in c.params)
        self.asserts.append("#ifndef %s\n_Static_assert(__builtin_types_compatible_p(__typeof__(&%s), %s (*)(%s)),\n"
                            '               "contract: the signature of %s");\n#endif' %
                            (c.verb, c.verb, ret, args, c.verb))

    def enum_tables(self):
        for name, e in sorted(self.enums.items()):
            self.w("const srq_verbs_trace_name_t srq_verbs_trace_names_%s[] = {" % _ident(name))
            for v in e["values"]:
                self.w('    { %s, "%s" },' % (v, v))
            self.w("    { 0, NULL }")
            self.w("};")
            self.w()

    def struct_order(self):
        """Formatters before their users"""
        done, order = set(), []

        def visit(t):
            if t in done:
                return
            done.add(t)
            for _, f in _deep_fields(self.types[t]["fields"]):
                bt = base_type(f["type"])[0]
                if bt in self.types and f.get("value") is None:
                    visit(bt)
            order.append(t)
        for t in sorted(self.types):
            visit(t)
        return order


def _deep_fields(fields):
    for f in fields:
        yield f["name"], f
        if "fields" in f:
            yield from _deep_fields(f["fields"])


HEADER_TOP = """/* Generated from the verb contracts (contracts/ibv_VERB.json) by python/srq_contracts (ctrace.py): do not edit. */
#ifndef SRQ_VERBS_TRACE_GEN_H_
#define SRQ_VERBS_TRACE_GEN_H_

#include "verbs/srq_verbs_trace.h"
"""


def generate(contracts):
    """(header text, C text)"""
    g = _Gen(contracts)
    g.w("/* Generated from the verb contracts (contracts/ibv_VERB.json) by python/srq_contracts (ctrace.py): do not edit. */")
    g.w('#include "srq_verbs_trace_gen.h"')
    g.w()
    g.w("#include <stddef.h>")
    g.w()
    g.enum_tables()
    for t in g.struct_order():
        g.struct_fn(t)
    for verb in sorted(contracts):
        g.verb_fns(contracts[verb])
    c_text = "\n".join(g.out) + "\n/* every type and signature as the contracts give them */\n" + \
        "\n".join(g.asserts) + "\n"
    h = [HEADER_TOP]
    for name in sorted(g.enums):
        h.append("extern const srq_verbs_trace_name_t srq_verbs_trace_names_%s[];" % _ident(name))
    h.append("")
    for verb in sorted(contracts):
        h.append(g.proto(contracts[verb], "in") + ";")
        h.append(g.proto(contracts[verb], "out") + ";")
    h.append("\n#endif")
    return "\n".join(h) + "\n", c_text
