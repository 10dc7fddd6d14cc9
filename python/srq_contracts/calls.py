# SPDX-License-Identifier: BSD-3-Clause
"""Verb calls: one class per verb, built from its contract.

    cls = verb_class("ibv_post_srq_recv")        # or srq_contracts.calls.IbvPostSrqRecv
    call = cls.from_trace("ibv_post_srq_recv srq=srq0 wr[0].wr_id=1 ... ret=0")
    call.inputs["wr"][0]["wr_id"]                # '1'
    print(call.to_c(Program()))                  # C that makes the call on srq0

A call is checked against its contract when it is built: every key must
be a path into the verb's parameters, every value of the kind the
contract gives it. to_c() emits a C block that makes the call against
named objects (variables of the program it is part of: qp0, srq0, mr0,
buf0, ...) and compares what the call returns with what the trace
recorded; Program collects the declarations and helpers those blocks
need and renders a whole C file (the replay tool's output).
"""
import re

from . import contracts as _contracts
from . import trace as _trace
from .contracts import base_type
from .paths import _Leaf, ctype_bits, _find_field, resolve, _tree_set, _tree_get
from .program import _c_number, Program


# ---------------------------------------------------------------- calls

class VerbCall:
    """One call of a verb: its inputs, what it returned, and its outputs,
    as a trace line records them. Subclasses (one per verb) set
    `contract`; a few override to_c() where the call needs more than
    arguments (opening a device by name, allocating a buffer, waiting
    for completions)."""

    contract = None

    def __init__(self, inputs=None, outputs=None, ret=None, errno=None,
                 repeat=None, lineno=None, text=None):
        self.inputs = inputs or {}
        self.outputs = outputs or {}
        self.ret = ret
        self.errno = errno
        self.repeat = repeat
        self.lineno = lineno
        self.text = text
        self.leaves = {}      # key -> _Leaf, of every input and output

    @property
    def verb(self):
        return self.contract.verb

    @classmethod
    def from_trace(cls, line, lineno=None):
        parsed = _trace.split_line(line)
        if parsed is None:
            raise _trace.TraceError("no call in %r" % line)
        verb, items = parsed
        if verb != cls.contract.verb:
            raise _trace.TraceError("a %s line given to %s" % (verb, cls.__name__))
        call = cls(lineno=lineno, text=line.strip())
        for key, value in items:
            call._add(key, value)
        call._check_ret()
        return call

    def _add(self, key, value):
        if key in _trace.META_KEYS:
            if key == "repeat" and not _trace.is_number(value):
                raise _trace.TraceError("repeat=%r" % value)
            if _trace.is_number(value):
                _trace.check_number(value, 32)
            setattr(self, key, value)
            return
        out = key.startswith("out.")
        path = _trace.parse_path(key[4:] if out else key)
        leaf = resolve(self.contract, path)
        p = self.contract.param(path[0][0])
        if out and p["dir"] == "in":
            raise _trace.TraceError("%s: %s is not an output" % (self.verb, p["name"]))
        if not out and p["dir"] == "out":
            raise _trace.TraceError("%s: %s is an output (out.%s)" % (self.verb, p["name"], key))
        if leaf.kind != "skip":
            _trace.check_value(leaf.kind, value, self.contract.enums.get(leaf.spec.get("enum")),
                               leaf.spec.get("object"))
            for part in value.split("|"):
                if _trace.is_number(part):
                    _trace.check_number(part, ctype_bits(leaf.ctype))
        self.leaves[key] = leaf
        _tree_set(self.outputs if out else self.inputs, path, value)

    def _check_ret(self):
        rv = self.contract.returns
        if rv["value"] == "void":
            if self.ret is not None:
                raise _trace.TraceError("%s returns nothing" % self.verb)
            return
        if self.ret is None:
            raise _trace.TraceError("%s: no ret=" % self.verb)
        if rv["value"] == "errno" and not (self.ret == "0" or re.match(r"^E[A-Z0-9]+$", self.ret)
                                           or _trace.is_number(self.ret)):
            raise _trace.TraceError("%s: ret=%s is no errno" % (self.verb, self.ret))
        if rv["value"] == "object" and self.ret != "NULL" and \
                _trace.object_kind(self.ret) != rv["object"]:
            raise _trace.TraceError("%s: ret=%s is no %s" % (self.verb, self.ret, rv["object"]))
        if rv["value"] == "count" and not _trace.is_number(self.ret):
            raise _trace.TraceError("%s: ret=%s is no count" % (self.verb, self.ret))

    # ---- C
    def _lvalues(self, prog, var, p, tree, stmts, decls):
        """Assignments of the input @tree of parameter @p into C variable @var"""
        tname = base_type(p["type"])[0]
        contract = self.contract

        def walk(lval, fields, node, tname):
            for seg, sub in node.items():
                f = _find_field(fields, seg)
                if "array_len" in f:
                    et = base_type(f["type"])[0]
                    n = max(sub) + 1
                    ln = node.get(f["array_len"])
                    if ln is not None and _trace.is_number(ln) and 0 < _trace.to_int(ln) <= 64:
                        n = max(n, _trace.to_int(ln))
                    arr = prog.tmp("sg")
                    decls.append("%s %s[%d];" % (et, arr, n))
                    stmts.append("memset(%s, 0, sizeof(%s));" % (arr, arr))
                    stmts.append("%s.%s = %s;" % (lval, seg, arr))
                    for i, item in sorted(sub.items()):
                        walk("%s[%d]" % (arr, i), contract.types[et]["fields"], item, et)
                    continue
                if "fields" in f:
                    walk("%s.%s" % (lval, seg), f["fields"], sub, tname)
                    continue
                bt = base_type(f["type"])[0]
                if f.get("value") is None and bt in contract.types:
                    walk("%s.%s" % (lval, seg), contract.types[bt]["fields"], sub, bt)
                    continue
                if f["value"] in ("skip", "link"):
                    continue
                if f["value"] == "callback":
                    stmts.append("%s.%s = %s;" % (lval, seg, prog.callback(seg, sub)))
                    continue
                stmts.append("%s.%s = %s;" % (lval, seg, prog.value(f["value"], sub)))

        if p.get("list") == "next":
            n = max(tree) + 1
            decls.append("%s %s[%d];" % (tname, var, n))
            stmts.append("memset(%s, 0, sizeof(%s));" % (var, var))
            for i in range(n):
                if i + 1 < n:
                    stmts.append("%s[%d].next = &%s[%d];" % (var, i, var, i + 1))
                walk("%s[%d]" % (var, i), contract.types[tname]["fields"], tree.get(i, {}), tname)
        elif "array_len" in p:          # an input array (ibv_advise_mr's sg_list)
            n = max(tree) + 1
            decls.append("%s %s[%d];" % (tname, var, n))
            stmts.append("memset(%s, 0, sizeof(%s));" % (var, var))
            for i in range(n):
                walk("%s[%d]" % (var, i), contract.types[tname]["fields"], tree.get(i, {}), tname)
        else:
            decls.append("%s %s;" % (tname, var))
            stmts.append("memset(&%s, 0, sizeof(%s));" % (var, var))
            walk(var, contract.types[tname]["fields"], tree, tname)

    def c_args(self, prog, decls, stmts):
        """C argument expressions, declaring what they need; returns
        (args, outvars): outvars maps output parameter names to their C
        variables"""
        args, outvars = [], {}
        for p in self.contract.params:
            name = p["name"]
            bt, depth = base_type(p["type"])
            if p["dir"] == "out":
                var = prog.tmp("o_" + name + "_")
                if p.get("value") == "chain_ref":
                    decls.append("%s *%s = NULL;" % (bt, var))
                elif "array_len" in p:
                    cap = self.inputs.get(p["capacity"], "1")
                    n = max(1, min(_trace.to_int(cap), 4096)) if _trace.is_number(cap) else 1
                    decls.append("%s %s[%d];" % (bt, var, n))
                elif p.get("value") in ("object", "ptr"):
                    decls.append("%s %s = NULL;" % (base_type(p["type"][:-1])[0] + " *"
                                                  if p.get("value") == "object" else "void *", var))
                else:
                    decls.append("%s %s;" % (bt, var))
                    stmts.append("memset(&%s, 0, sizeof(%s));" % (var, var))
                args.append(var if "array_len" in p else "&" + var)
                outvars[name] = var
                continue
            value = self.inputs.get(name)
            if p.get("value") is not None:
                if value is None:
                    raise _trace.TraceError("%s: no %s=" % (self.verb, name))
                args.append(prog.value(p["value"], value))
                continue
            if value is None:           # a struct pointer not given: NULL
                args.append("NULL")
                continue
            var = prog.tmp("a_" + name + "_")
            self._lvalues(prog, var, p, value, stmts, decls)
            args.append(var if (p.get("list") == "next") or ("array_len" in p) else "&" + var)
            if p["dir"] == "inout":
                outvars[name] = var
        return args, outvars

    def c_call(self, args):
        return "%s(%s)" % (self.verb, ", ".join(args))

    def _where(self):
        return "%d" % (self.lineno or 0)

    def to_c(self, prog=None):
        """A C block that makes this call and checks its result"""
        prog = prog or Program()
        prog.calls += 1
        decls, stmts = [], ["++replay_calls;"]
        args, outvars = self.c_args(prog, decls, stmts)
        call = self.c_call(args)
        rv = self.contract.returns
        ln = self._where()
        if rv["value"] == "errno":
            stmts.append("ret = %s;" % call)
            # libibverbs' ibv_rereg_mr fails with a negative
            # IBV_REREG_MR_ERR_* (the step) and says why in errno, which
            # is what the trace recorded from the device
            stmts.append("if (ret < 0) ret = errno;")
            want = "0" if self.ret == "0" else self.ret
            stmts.append("replay_errno(%s, \"%s\", ret, %s);" % (ln, self.verb, want))
            for p in self.contract.params:
                if p.get("value") == "chain_ref" and ("out." + p["name"]) in self.leaves:
                    ref = self.outputs[p["name"]]
                    idx = int(re.search(r"\[(\d+)\]", ref).group(1)) if ref != "NULL" else -1
                    chain = [a for a, q in zip(args, self.contract.params) if q["name"] == p["chain"]][0]
                    stmts.append("if (ret != 0) replay_int(%s, \"bad_wr\", %s ? (long)(%s - %s) : -1, %d);"
                                 % (ln, outvars[p["name"]], outvars[p["name"]], chain, idx))
        elif rv["value"] == "object":
            var = prog.tmp("r")
            decls.append("%s *%s;" % (base_type(rv["type"])[0], var))
            stmts.append("errno = 0;")
            stmts.append("%s = %s;" % (var, call))
            want_ok = self.ret != "NULL"
            stmts.append("replay_created(%s, \"%s\", %s != NULL, errno, %d, %s);" %
                         (ln, self.verb, var, 1 if want_ok else 0, self.errno or "0"))
            if want_ok:
                name = prog.create(self.ret)
                # an object with a type of its own (struct ibv_cq_ex) is
                # kept as its kind's (ibv_cq_ex_to_cq is this cast)
                own = "struct ibv_%s *" % rv["object"]
                cast = "" if rv["type"] == own else "(%s)" % own
                stmts.append("%s = %s%s;" % (name, cast, var))
                stmts.extend(self.after_create(prog, name))
        elif rv["value"] == "void":
            stmts.append("%s;" % call)
        else:
            stmts.append("ret = %s;" % call)
            stmts.append("replay_int(%s, \"%s\", ret, %s);" % (ln, self.verb, self.ret))
        ok = "ret == 0" if rv["value"] == "errno" else ("%s != NULL" % var) if rv["value"] == "object" else "1"
        stmts.extend(self.check_outputs(prog, outvars, ok))
        body = "\n".join("        " + d for d in decls + stmts)
        return "    /* %s: %s */\n    {\n%s\n    }\n" % (ln, _comment(self.text or self.verb), body)

    def after_create(self, prog, name):
        if _trace.object_kind(name) == "qp":
            prog.qpns.add(name)
            return ["%s_num = %s->qp_num;" % (name, name)]
        return []

    def check_outputs(self, prog, outvars, ok):
        """Compare enum-valued outputs (states, event types): those are the
        same on any device; sizes and numbers are the device's own"""
        out = []
        for key, leaf in sorted(self.leaves.items()):
            if not key.startswith("out.") or leaf.kind != "enum":
                continue
            path = _trace.parse_path(key[4:])
            var = outvars.get(path[0][0])
            if var is None or path[0][1] is not None:
                continue
            member = ".".join(s for s, _ in path[1:])
            value = _tree_get(self.outputs, path)
            out.append("if (%s) replay_int(%s, \"%s\", %s.%s, %s);" %
                       (ok, self._where(), key, var, member, prog.value("enum", value)))
        return out


def _comment(text):
    text = text.replace("*/", "* /")
    return text if len(text) < 200 else text[:197] + "..."


# ---------------------------------------------------------------- verbs that need more

class _OpenDevice(VerbCall):
    def to_c(self, prog=None):
        prog = prog or Program()
        prog.calls += 1
        name = prog.create(self.ret) if self.ret != "NULL" else None
        dev = self.inputs["device"]
        if name is None:
            return "    /* %s: %s (failed when traced: not replayed) */\n" % (self._where(), self.text)
        prog.contexts.add(name)
        return ("    /* %s: %s */\n    %s = replay_open(%s, \"%s\", %s_port, %s_gid);\n" %
                (self._where(), _comment(self.text), name, self._where(), dev, name, name))


class _RegMr(VerbCall):
    def c_args(self, prog, decls, stmts):
        addr = self.inputs.get("addr", "NULL")
        m = re.match(r"^(buf\d+)$", addr)
        if m and _trace.is_number(self.inputs.get("length", "")):
            size = _trace.to_int(self.inputs["length"])
            prog.buffers[m.group(1)] = max(prog.buffers.get(m.group(1), 0), size)
            stmts.append("if (%s == NULL) %s = replay_buf(%s);" % (m.group(1), m.group(1),
                                                                   _c_number(self.inputs["length"])))
        return VerbCall.c_args(self, prog, decls, stmts)


class _PollCq(VerbCall):
    """Completions arrive when the device is ready: the replay polls until
    it has as many as the trace recorded (or gives up), and matches each
    to a recorded one of the same CQ by wr_id and QP, so that completions
    of different QPs may interleave differently. Polls that found
    nothing are not replayed."""

    def to_c(self, prog=None):
        prog = prog or Program()
        n = _trace.to_int(self.ret)
        cq = prog.value("object", self.inputs["cq"])
        if n == 0:
            return "    /* %s: %s (found nothing: not replayed) */\n" % (self._where(), _comment(self.text))
        prog.calls += 1
        if n < 0:
            return ("    /* %s: %s */\n    { struct ibv_wc wc[1]; replay_int(%s, \"ibv_poll_cq < 0\", "
                    "ibv_poll_cq(%s, 1, wc) < 0, 1); }\n" % (self._where(), _comment(self.text),
                                                              self._where(), cq))
        entries = prog.expect.setdefault(cq, [])
        for i in range(n):
            wc = self.outputs.get("wc", {}).get(i, {})
            fields = [".line = %s" % self._where(),
                      ".wr_id = %s" % _c_number(wc.get("wr_id", "0")),
                      ".status = %s" % wc.get("status", "IBV_WC_SUCCESS")]
            if "opcode" in wc:
                fields.append(".has_opcode = 1, .opcode = %s" % wc["opcode"])
            if "byte_len" in wc:
                fields.append(".has_len = 1, .byte_len = %s" % _c_number(wc["byte_len"]))
            qpn = wc.get("qp_num")
            if qpn is not None and not _trace.is_number(qpn):
                fields.append(".qpn = &%s" % prog.value("qpn", qpn))
            elif qpn is not None:
                fields.append(".raw_qpn = %s" % _c_number(qpn))
            entries.append("{ %s }" % ", ".join(fields))
        num = _c_number(self.inputs.get("num_entries", "1"))
        return ("    /* %s: %s */\n    replay_poll(%s, %s, %s, %d, %s_expect);\n" %
                (self._where(), _comment(self.text), self._where(), cq, num, n, cq))


def _guarded(block, cond):
    """A call's block (VerbCall.to_c) made only if @cond holds"""
    return block.replace("\n    {\n", "\n    if (%s) {\n" % cond, 1)


class _GetCqEvent(VerbCall):
    """Read only once the channel has one: a get on an empty channel never
    returns"""

    def to_c(self, prog=None):
        prog = prog or Program()
        ch = prog.value("object", self.inputs["channel"])
        return _guarded(VerbCall.to_c(self, prog),
                        "replay_wait_fd(%s, %s->fd)" % (self._where(), ch))

    def check_outputs(self, prog, outvars, ok):
        cq = self.outputs.get("cq")
        if cq is None or cq == "NULL":
            return []
        return ["if (ret == 0) replay_int(%s, \"out.cq\", %s == %s, 1);" %
                (self._where(), outvars["cq"], prog.value("object", cq))]


class _GetAsyncEvent(VerbCall):
    """replay_get_async: waits for the event, never blocks on an empty fd,
    and lets timing leave out an SRQ's limit event"""

    def to_c(self, prog=None):
        prog = prog or Program()
        prog.calls += 1
        ctx = prog.value("object", self.inputs["context"])
        want = prog.value("enum", self.outputs.get("event", {}).get("event_type", "0"))
        return ("    /* %s: %s */\n    {\n        struct ibv_async_event ev;\n"
                "        ++replay_calls;\n        replay_get_async(%s, %s, %s, &ev);\n    }\n" %
                (self._where(), _comment(self.text), self._where(), ctx, want))


class _AckAsyncEvent(VerbCall):
    """Only an event the replay read is acknowledged"""

    def to_c(self, prog=None):
        prog = prog or Program()
        etype = prog.value("enum", self.inputs.get("event", {}).get("event_type", "0"))
        return _guarded(VerbCall.to_c(self, prog), "replay_async_take(%s)" % etype)


_SPECIAL = {
    "ibv_open_device": _OpenDevice,
    "ibv_reg_mr": _RegMr,
    "ibv_poll_cq": _PollCq,
    "ibv_get_cq_event": _GetCqEvent,
    "ibv_get_async_event": _GetAsyncEvent,
    "ibv_ack_async_event": _AckAsyncEvent,
}


def class_name(verb):
    """ibv_post_srq_recv -> IbvPostSrqRecv"""
    return "".join(w.capitalize() for w in verb.split("_"))


_CLASSES = {}


def verb_classes(directory=None):
    """{verb: class} for every contract (built once per directory)"""
    key = directory or _contracts.default_dir()
    if key not in _CLASSES:
        out = {}
        for verb, c in _contracts.load(directory).items():
            base = _SPECIAL.get(verb, VerbCall)
            out[verb] = type(class_name(verb), (base,), {"contract": c, "__doc__": c.data["summary"]})
        _CLASSES[key] = out
    return _CLASSES[key]


def verb_class(verb, directory=None):
    try:
        return verb_classes(directory)[verb]
    except KeyError:
        raise _trace.TraceError("no contract for %s" % verb)


def call_from_line(line, lineno=None, directory=None):
    """The call a trace line records (None for blank lines and comments)"""
    parsed = _trace.split_line(line)
    if parsed is None:
        return None
    return verb_class(parsed[0], directory).from_trace(line, lineno)


def __getattr__(name):
    """srq_contracts.calls.IbvPostSrqRecv and friends"""
    if name.startswith("__"):
        # the import system asks for __path__ and the like: no contract
        # need be read for that (a missing folder failed every import)
        raise AttributeError(name)
    for verb, cls in verb_classes().items():
        if cls.__name__ == name:
            return cls
    raise AttributeError(name)
