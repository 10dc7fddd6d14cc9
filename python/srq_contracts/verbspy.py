# SPDX-License-Identifier: BSD-3-Clause
"""verbs.py classes from the contracts (python3 -m srq_contracts verbs-py).

The Python RDMA verbs fuzzer liuyi-thu/rdma-fuzzing describes each verb
in its lib/verbs.py as a VerbCall subclass: MUTABLE_FIELDS,
EXPORT_FIELDS, a CONTRACT of RequireSpec/ProduceSpec/TransitionSpec,
__init__ over ResourceValue/ConstantValue and its WR objects, apply(ctx),
from_trace(info, ctx), generate_c(ctx), to_dict(). generate() writes such
a class for each verb from its contract, as source text to paste into
that file, so that the contract stays the one description: the class's
requirements, products and transitions come from the contract's
requires/produces/consumes, its C checks from the contract's failures,
and it carries the rest (FAILURES, POSTCONDITIONS, OWNERSHIP, ...) as
class data for the framework's mutator.

The output uses only names that verbs.py imports (and what verbspy_rt.py,
emitted once at the top, defines); test/verbspy/ holds the project's
stand-in of that API, against which test/verbs_py.sh imports, applies,
compiles and runs every class.
"""
import os
import pprint

from .contracts import base_type
from .verbspy_fw import CLASS_NAME, framework

# object kinds as the framework names its resource types
RTYPE = {"context": "context", "pd": "pd", "mr": "mr", "cq": "cq",
         "comp_channel": "channel", "srq": "srq", "qp": "qp", "ah": "ah",
         "mw": "mw", "dm": "dm", "td": "td", "xrcd": "xrcd"}
_UPPER = {"pd", "cq", "qp", "srq", "mr", "ah", "mw", "dm", "td", "xrcd"}
# contract states to the framework's State members
_STATE = {"created": "ALLOCATED", "allocated": "ALLOCATED", "registered": "ALLOCATED",
          "open": "ALLOCATED", "IBV_QPS_RESET": "RESET", "IBV_QPS_INIT": "INIT",
          "IBV_QPS_RTR": "RTR", "IBV_QPS_RTS": "RTS"}
_QP_STATES = ("RESET", "INIT", "RTR", "RTS")
# the framework's WR classes and the fields their constructors take
_WR_CLASS = {"struct ibv_recv_wr": ("IbvRecvWR", ("wr_id", "num_sge")),
             "struct ibv_send_wr": ("IbvSendWR", ("wr_id", "num_sge", "opcode", "send_flags",
                                                  "imm_data")),
             # the framework has none: the runtime's own (verbspy_rt.py)
             "struct ibv_ops_wr": ("SrqOpsWR", ("wr_id", "opcode", "flags", "tm.unexpected_cnt",
                                                "tm.handle", "tm.add.recv_wr_id", "tm.add.num_sge",
                                                "tm.add.tag", "tm.add.mask"))}
_DEFAULT = {"int": "0", "uint": "0", "hex": "0", "flags": "0", "enum": "0", "ptr": "NULL", "callback": "NULL",
            "buffer": "NULL", "addr": "0", "device": "dev_list[0]"}


def class_name(verb):
    """ibv_post_srq_recv -> PostSRQRecv, as verbs.py names its classes"""
    if verb in CLASS_NAME:
        return CLASS_NAME[verb]
    words = verb.split("_")[1:]
    return "".join(w.upper() if w in _UPPER else w.capitalize() for w in words)


def runtime_source():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "verbspy_rt.py")) as f:
        text = f.read()
    begin = text.index("# ---- begin runtime")
    end = text.index("# ---- end runtime")
    return text[text.index("\n", begin) + 1:end]


# ---------------------------------------------------------------- analysis

def _struct_fields(contract, tname, prefix=""):
    """{path: (value kind, object kind)} of every scalar a struct holds,
    nested structs and anonymous unions flattened into dotted paths"""
    return _flatten(contract, contract.types[tname]["fields"], prefix)


def _flatten(contract, fields, prefix):
    out = {}
    for f in fields:
        path = prefix + f["name"] if f["name"] else prefix.rstrip(".")
        if f.get("value") in ("skip", "link") or "array_len" in f:
            continue
        if "fields" in f:     # inline struct or union; an anonymous one adds no name
            out.update(_flatten(contract, f["fields"], path + "." if f["name"] else prefix))
            continue
        bt = base_type(f["type"])[0]
        if f.get("value") is None and bt in contract.types:
            out.update(_struct_fields(contract, bt, path + "."))
            continue
        out[path] = (f["value"], RTYPE.get(f.get("object"), f.get("object")))
    return out


class _Param:
    """One parameter and the role it plays in the generated class"""

    def __init__(self, contract, p):
        self.p = p
        self.name = p["name"]
        self.ctype, self.depth = base_type(p["type"])
        self.kind = p.get("value")
        self.dir = p["dir"]
        self.rtype = RTYPE.get(p.get("object"), p.get("object"))
        self.struct = self.ctype if self.ctype in contract.types else None
        if self.dir == "in" and self.kind == "object":
            self.role = "resource"
        elif p.get("list") == "next":
            self.role = "chain"
        elif self.kind == "chain_ref":
            self.role = "bad_wr"
        elif self.dir in ("in", "inout") and self.struct:
            self.role = "struct"
        elif self.dir == "in":
            self.role = "scalar"
        elif "array_len" in p:
            self.role = "out_array"
        else:
            self.role = "out"
        # an array of structs the call reads (ibv_advise_mr's sg_list)
        self.array = self.role == "struct" and "array_len" in p
        self.attr = {"chain": self.name + "_obj", "struct": self.name + "_obj"}.get(self.role, self.name)
        self.var = self.name + "_var"


class _Verb:
    def __init__(self, contract):
        self.c = contract
        self.verb = contract.verb
        self.cls = class_name(self.verb)
        self.params = [_Param(contract, p) for p in contract.params]
        rv = contract.returns
        self.ret = rv["value"]
        self.product = None
        if self.ret == "object":
            kind = RTYPE[rv["object"]]
            self.product = (kind, "struct ibv_%s *" % rv["object"])
        self.destroys = [RTYPE[k] for k in contract.consumed_objects()]
        self.fw = framework(self.verb)
        alias = self.fw.alias if self.fw else {}
        # the attribute the object made lives in (the framework's name for it)
        self.pattr = alias.get("@product", self.product[0] if self.product else None)
        for p in self.params:
            a = alias.get(p.name)
            if isinstance(a, tuple):
                p.attr, p.var = a
            elif a and p.role in ("resource", "scalar"):
                p.attr = a
            elif a:
                p.var = a
        # what the framework's classes leave to its CodeGenContext where the
        # caller names none: the context the program opened (ctx.ib_ctx)
        self.implicit = [p for p in self.params if self.fw and p.role == "resource"
                         and p.rtype == "context"]

    def role(self, role):
        return [p for p in self.params if p.role == role]

    def resources(self):
        return self.role("resource")


# ---------------------------------------------------------------- the contract

def _state_args(states):
    """(state, exclude_states) source for the contract's allowed states"""
    if states == ["any"]:
        return "None", "[State.DESTROYED]"
    mapped = [_STATE[s] for s in states if s in _STATE]
    if len(set(mapped)) == 1 and len(mapped) == len([s for s in states if s != "null"]):
        return "State.%s" % mapped[0], "None"
    excl = [s for s in _QP_STATES if s not in mapped] + ["DESTROYED"]
    return "None", "[%s]" % ", ".join("State.%s" % s for s in excl)


def _framework_path(v, path):
    """A contract path (qp_init_attr.send_cq, wr[].wr.ud.ah) as a path on
    the generated object (qp_init_attr_obj.send_cq, wr_obj.**.ud.ah): the
    framework's send WR holds the wr union's members directly"""
    root, _, rest = path.partition(".")
    chain = root.endswith("[]")
    root = root.rstrip("[]")
    p = [q for q in v.params if q.name == root][0]
    if chain:
        if rest.startswith("wr."):
            rest = rest[3:]
        return "%s.**.%s" % (p.attr, rest)
    return "%s.%s" % (p.attr, rest) if rest else p.attr


def _contract_source(v):
    req, prod, trans = [], [], []
    for r in v.c.data["requires"]:
        state, excl = _state_args(r["states"])
        why = r.get("failure")
        req.append('RequireSpec("%s", %s, "%s"%s),%s' %
                   (RTYPE[r["object"]], state, _framework_path(v, r["param"]),
                    ", exclude_states=%s" % excl if excl != "None" else "",
                    "  # else %s" % why if why else ""))
    for p in v.role("chain"):
        if _chain_has_lkey(v.c, p):
            lk = "lkey_invalid" if "lkey_invalid" in v.c.failures else None
            req.append('RequireSpec("mr", State.ALLOCATED, "%s.**.sg_list[*].mr"),%s' %
                       (p.attr, "  # else %s (at completion)" % lk if lk else ""))
    if v.product:
        kind = v.product[0]
        meta = [p.attr for p in v.resources() if p not in v.implicit]
        prod.append('ProduceSpec("%s", State.%s, "%s", metadata_fields=%r),' %
                    (kind, "RESET" if kind == "qp" else "ALLOCATED", v.pattr, meta))
    if v.fw and "remote_qp" in v.fw.extra:
        # the framework's pair runtime: the server's QP this one pairs with
        req.append('RequireSpec("remote_qp", State.ALLOCATED, "remote_qp"),')
        trans.append('TransitionSpec("remote_qp", from_state=State.ALLOCATED, to_state=State.USED,'
                     ' name_attr="remote_qp"),')
    for kind in v.destroys:
        p = [q for q in v.resources() if q.rtype == kind][0]
        trans.append('TransitionSpec("%s", from_state=None, to_state=State.DESTROYED, name_attr="%s"),'
                     % (kind, p.attr))
    ind = "\n            "

    def block(items):
        return "[%s%s\n        ]" % (ind, ind.join(items)) if items else "[]"
    return ("    CONTRACT = Contract(\n        requires=%s,\n        produces=%s,\n"
            "        transitions=%s,\n    )\n" % (block(req), block(prod), block(trans)))


def _chain_has_lkey(contract, p):
    for f in contract.types[p.ctype]["fields"]:
        if "array_len" in f:
            et = base_type(f["type"])[0]
            return any(g.get("value") == "lkey" for g in contract.types.get(et, {}).get("fields", []))
    return False


# ---------------------------------------------------------------- one class

def _data(name, value):
    text = pprint.pformat(value, indent=1, width=96, sort_dicts=True)
    return "    %s = %s\n" % (name, text.replace("\n", "\n    " + " " * (len(name) + 3)))


def _signature(c):
    args = ", ".join("%s%s%s" % (p["type"], "" if p["type"].endswith("*") else " ", p["name"])
                     for p in c.params)
    rt = c.returns["type"]
    return "%s%s%s(%s)" % (rt, "" if rt.endswith("*") else " ", c.verb, args)


def _docstring(v):
    c = v.c
    lines = ["%s: %s" % (v.verb, c.data["summary"]), "", _signature(c), ""]
    for p in c.params:
        lines.append("    %s -- %s" % (p["name"], p.get("doc", "")))
    lines += ["", "Generated by srq-verbs-py from the ucx-srq contract %s.json:"
              " regenerate, do not edit." % v.verb]
    safe = [l.replace('"""', "'''").replace("\\", "\\\\") for l in lines]
    body = "\n".join(("    " + l) if l else "" for l in safe)
    return '    """%s\n    """\n' % body.lstrip()


def _slots(v):
    """{constructor argument: (what it sets, the parameter)}, in the order
    the contract gives them"""
    slots = {}
    if v.product:
        slots[v.pattr] = ("product", None)
    for p in v.params:
        if p.role in ("resource", "scalar", "chain", "struct"):
            slots[p.attr] = (p.role, p)
    for p in v.params:
        if p.role in ("chain", "struct", "bad_wr", "out", "out_array"):
            slots[p.var] = ("var", p)
    if v.ret in ("errno", "count"):
        slots["ret_var"] = ("ret", None)
    for name, wrap in (v.fw.extra.items() if v.fw else ()):
        slots[name] = ("extra", wrap)
    return slots


def _wrap_arg(v, attr):
    """The framework's value wrapper of a field, as an argument of _srq_value"""
    w = v.fw.wrap.get(attr) if v.fw else None
    return ', "%s"' % w if w else ""


def _init_source(v):
    """The framework's constructor where it has one (its parameters, their
    order and defaults), then what the contract adds, by keyword"""
    slots = _slots(v)
    order = v.fw.params() if v.fw else []
    unknown = [n for n in order if n not in slots]
    if unknown:
        raise KeyError("%s: the framework's %s has no counterpart in the contract"
                       % (v.cls, ", ".join(unknown)))
    defaults = dict(v.fw.signature) if v.fw else {}
    fill = v.fw.fill if v.fw else {}
    rest = [n for n in slots if n not in order]
    args = ["self"] + ["%s=%r" % (n, defaults[n]) for n in order]
    if rest:
        args += (["*"] if v.fw else []) + ["%s=None" % n for n in rest]
    stem = v.verb[4:]
    owner = v.pattr or (v.resources()[0].attr if v.resources() else "None")
    body = []
    for name, (what, p) in slots.items():
        if what == "product" and name in fill:
            body.append("%s = %s or %r" % (name, name, fill[name]))
        if what == "product":
            body.append('%s = _srq_product(%s, "%s")' % (name, name, v.product[0]))
            body.append('if not %s:\n            raise ValueError("%s: the name of the new %s must be given")'
                        % (name, v.cls, v.product[0]))
            body.append('self.%s = ResourceValue(resource_type="%s", value=str(%s), mutable=False)'
                        % (name, v.product[0], name))
        elif what == "resource":
            nullable = any("null" in r["states"] for r in v.c.data["requires"] if r["param"] == p.name)
            if p in v.implicit:     # the framework's CodeGenContext names it (ctx.ib_ctx)
                body.append('self.%s = _srq_resource("%s", %s) if %s is not None else None'
                            % (name, p.rtype, name, name))
                continue
            if not nullable:
                body.append('if not %s:\n            raise ValueError("%s: %s must be given")'
                            % (name, v.cls, name))
            body.append('self.%s = _srq_resource("%s", %s)' % (name, p.rtype, name))
        elif what == "scalar":
            dflt = fill.get(name, "1" if p.name == "num_entries" else _DEFAULT.get(p.kind, "0"))
            body.append('self.%s = _srq_value(%s if %s is not None else %r, "%s"%s)'
                        % (name, name, name, dflt, p.kind, _wrap_arg(v, name)))
        elif what in ("chain", "struct"):
            body.append("self.%s = %s" % (name, name))
        elif what == "var":
            # WR chains by their type, so that ibv_post_recv and ibv_post_send
            # on one QP keep apart
            stem_var = {"chain": p.ctype[len("struct ibv_"):],
                        "bad_wr": "bad_" + p.ctype[len("struct ibv_"):]}.get(p.role, p.name)
            body.append('self.%s = _srq_var(%s, "%s", %s)' % (name, name, stem_var, owner))
        elif what == "ret":
            body.append('self.ret_var = _srq_var(ret_var, "ret_%s", %s)' % (stem, owner))
        elif what == "extra":
            body.append("self.%s = _srq_extra(%s, %r)" % (name, name, p))
    body += ["self.tracker = None", "self.required_resources = []", "self.allocated_resources = []",
             # the framework's mutator calls .mutate() on every field it is
             # given: only those this call has (not an implicit context, a
             # struct not given); its summary printer reads the class's list
             "self.MUTABLE_FIELDS = [f for f in type(self).MUTABLE_FIELDS if getattr(self, f, None) is not None]"]
    return ("    def __init__(%s):\n        %s\n" % (",\n                 ".join(args),
                                                    "\n        ".join(body)))


def _apply_source(v):
    b = ["self.required_resources = []", "self.allocated_resources = []",
         "self.tracker = ctx.tracker if ctx else None", "if ctx:"]
    if v.product:
        b.append('    ctx.alloc_variable(str(self.%s), "%s", "NULL")' % (v.pattr, v.product[1]))
        if v.product[0] == "context":
            # the program's context (ctx.ib_ctx, what calls naming none use)
            # is the first one opened: generate_c runs after every apply
            b.append('    if not ctx.__dict__.get("_srq_ib_ctx_set"):')
            b.append('        ctx.ib_ctx = str(self.%s)' % v.pattr)
            b.append('        ctx._srq_ib_ctx_set = True')
    if v.ret in ("errno", "count"):
        b.append('    ctx.alloc_variable(str(self.ret_var), "int", "0")')
    for p in v.role("scalar"):
        if p.kind in ("addr", "buffer", "ptr"):
            # memory a trace names (buf0, buf0+64) is memory of the program
            length = [q.attr for q in v.role("scalar") if q.name == "length"]
            b.append('    _srq_buffer(ctx, self.%s, %s)' % (p.attr, "self." + length[0] if length else "None"))
    for p in v.params:
        if p.role == "bad_wr":
            b.append('    ctx.alloc_variable(str(self.%s), "%s *", "NULL")' % (p.var, p.ctype))
            b.append('    ctx.alloc_variable(str(self.%s) + "_idx", "int", "-1")' % p.var)
        elif p.role == "out" and p.struct:
            b.append('    ctx.alloc_variable(str(self.%s), "%s")' % (p.var, p.ctype))
        elif p.role == "out":
            # a pointer is NULL until the call fills it, a number 0
            b.append('    ctx.alloc_variable(str(self.%s), "%s%s", "%s")' %
                     (p.var, p.ctype, " *" * (p.depth - 1),
                      "NULL" if p.depth > 1 else "0"))
        elif p.role == "out_array":
            cap = [q.attr for q in v.params if q.name == p.p.get("capacity")][0]
            b.append('    _srq_array(ctx, str(self.%s), "%s", _srq_count(self.%s))' % (p.var, p.ctype, cap))
    if b[-1] == "if ctx:":
        b.pop()
    b.append("if self.tracker:")
    n = len(b)
    for p in v.resources():
        b.append('    if isinstance(self.%s, ResourceValue):' % p.attr)
        b.append('        self.tracker.use("%s", self.%s.value)' % (p.rtype, p.attr))
        b.append('        self.required_resources.append({"type": "%s", "name": self.%s.value,'
                 ' "position": "%s"})' % (p.rtype, p.attr, p.attr))
    for p in v.role("chain"):
        # the SGEs' MRs are the chain's to replace (set_resource_recursively),
        # not an attribute of the call: no position
        b.append('    for mr in _srq_chain_mrs(self.%s):' % p.attr)
        b.append('        self.tracker.use("mr", mr)')
    if v.product:
        kind = v.product[0]
        meta = ", ".join("%s=str(self.%s)" % (p.rtype, p.attr) for p in v.resources() if p not in v.implicit)
        b.append('    self.tracker.create("%s", self.%s.value%s)' % (kind, v.pattr, ", " + meta if meta else ""))
        b.append('    self.allocated_resources.append(("%s", self.%s.value))' % (kind, v.pattr))
    for kind in v.destroys:
        p = [q for q in v.resources() if q.rtype == kind][0]
        b.append('    self.tracker.destroy("%s", self.%s.value)' % (kind, p.attr))
    if len(b) == n:
        b.pop()
    if v.fw and v.fw.pair:
        b.append("_srq_pair_apply(self, ctx, %r)" % v.fw.pair)
    b.append('if hasattr(ctx, "contracts"):')
    b.append("    ctx.contracts.apply_contract(self, self.get_contract())")
    return "    def apply(self, ctx):\n        %s\n" % "\n        ".join(b)


def _from_trace_source(v):
    known, prefixes, b = set(), [], ["kv = _srq_kv(info)"]
    args = []
    if v.product:
        kind = v.product[0]
        known.add(kind)
        args.append('%s=kv.get("%s", kv.get("ret"))' % (v.pattr, kind))
    for p in v.params:
        if p.role in ("resource", "scalar"):
            known.add(p.name)
            args.append('%s=kv.get("%s")' % (p.attr, p.name))
        elif p.role == "chain":
            wr_cls, fields = _WR_CLASS[p.ctype]
            prefixes.append(p.name + "[")
            args.append('%s=_srq_wr_chain(kv, "%s", %s, %r)' % (p.attr, p.name, wr_cls, fields))
        elif p.role == "struct" and p.array:
            prefixes += [p.name + ".", p.name + "["]
            args.append('%s=_srq_struct_array(kv, "%s", "%s", cls.STRUCT_FIELDS["%s"])'
                        % (p.attr, p.name, p.ctype, p.name))
        elif p.role == "struct":
            prefixes.append(p.name + ".")
            args.append('%s=_srq_struct(kv, "%s", "%s", cls.STRUCT_FIELDS["%s"])'
                        % (p.attr, p.name, p.ctype, p.name))
        if p.role in ("chain", "struct", "bad_wr", "out", "out_array"):
            known.add(p.name + "_var")     # the trace's key, whatever the framework calls it
            args.append('%s=kv.get("%s_var")' % (p.var, p.name))
    if v.ret in ("errno", "count"):
        known.add("ret_var")
        args.append('ret_var=kv.get("ret_var")')
    b.append('_srq_check_keys(kv, "%s", {%s}, %r)' % (v.cls, ", ".join(repr(k) for k in sorted(known)),
                                                      tuple(prefixes)))
    b.append("call = cls(%s)" % (",\n                   ".join(args)))
    b.append('call._srq_traced = (kv.get("ret"), kv.get("errno"))')
    b.append("return call")
    keys = sorted(known | {q[:-1] + ("[i]..." if q.endswith("[") else ".*") for q in prefixes})
    return ("    @classmethod\n    def from_trace(cls, info, ctx=None):\n"
            '        """A call from a trace line: key=value words, as the framework\'s traces\n'
            "        write them; the keys are the contract's parameter paths (%s)\"\"\"\n"
            "        %s\n" % (", ".join(keys), "\n        ".join(b)))


def _call_failures(c):
    """[(errno, [failure ids])] of the failures the call itself reports"""
    out = {}
    for f in c.data["failures"]:
        if f["detected"] == "call" and f.get("errno"):
            out.setdefault(f["errno"], []).append(f["id"])
    return sorted(out.items())


def _bad_var(v):
    """The attribute naming the variable *bad_wr is written to"""
    return [p for p in v.params if p.role == "bad_wr"][0].var


def _generate_c_source(v):
    c = v.c
    b = ['code = ""', "uses = []"]
    call_args = []
    chain = None
    for p in v.params:
        if p.role == "resource" and p in v.implicit:
            call_args.append("_srq_ib_ctx(self.%s, ctx)" % p.attr)
        elif p.role == "resource":
            b.append("uses.append(str(self.%s))" % p.attr)
            call_args.append("str(self.%s)" % p.attr)
        elif p.role == "scalar" and p.kind == "device":
            call_args.append("_srq_device(self.%s, ctx)" % p.attr)
        elif p.role == "scalar":
            call_args.append("str(self.%s)" % p.attr)
        elif p.role == "chain":
            chain = p
            b.append("uses.extend(_srq_chain_mrs(self.%s))" % p.attr)
            b.append("if self.%s is None:\n            raise ValueError(\"%s: no %s to post\")"
                     % (p.attr, v.cls, p.name))
            b.append("code += self.%s.to_cxx(str(self.%s), ctx)" % (p.attr, p.var))
            call_args.append('"&" + str(self.%s)' % p.var)
        elif p.role == "struct" and p.array:
            b.append('code += _srq_array_cxx(self.%s, str(self.%s), "%s", ctx)' % (p.attr, p.var, p.ctype))
            call_args.append("str(self.%s)" % p.var)
        elif p.role == "struct":
            b.append("if self.%s is not None:" % p.attr)
            b.append("    code += self.%s.to_cxx(str(self.%s), ctx)" % (p.attr, p.var))
            b.append("elif str(self.%s) not in getattr(ctx, \"variables\", {}):" % p.var)
            b.append('    ctx.alloc_variable(str(self.%s), "%s")' % (p.var, p.ctype))
            b.append('    code += "    memset(&%%s, 0, sizeof(%%s));\\n" %% (self.%s, self.%s)'
                     % (p.var, p.var))
            call_args.append('"&" + str(self.%s)' % p.var)
        elif p.role in ("bad_wr", "out", "out_array"):
            call_args.append(('"&" + ' if p.role != "out_array" else "") + "str(self.%s)" % p.var)
    b.append('args = ", ".join([%s])' % ", ".join(call_args))
    first = v.resources()[0] if v.resources() else None
    what = ('""' if first is None else "_srq_ib_ctx(self.%s, ctx)" % first.attr if first in v.implicit
            else "str(self.%s)" % first.attr)
    fails = _call_failures(c)
    completion = [f["id"] for f in c.data["failures"] if f["detected"] != "call"]
    if completion:
        b.append('code += "    /* not checked here: %s report at completion or as an event */\\n"'
                 % ", ".join(completion))
    if v.ret == "object":
        kind = v.product[0]
        # a verb whose object has a type of its own (ibv_create_cq_ex's
        # struct ibv_cq_ex) gives it as the kind's type, as
        # ibv_cq_ex_to_cq does
        own = "struct ibv_%s *" % c.returns["object"]
        cast = "" if c.returns["type"] == own else "(%s)" % own
        b.append('code += "    errno = 0;\\n    %%s = %s%s(%%s);\\n" %% (self.%s, args)'
                 % (cast, v.verb, v.pattr))
        b.append('code += "    if (%%s == NULL) {\\n" %% self.%s' % v.pattr)
        b.append('code += _srq_errno_check("errno", "%s", %s, %r)' % (v.verb, what, fails))
        b.append('code += "    }\\n"')
    elif v.ret == "errno":
        if chain is not None:      # no stale index from an earlier failed post
            b.append('code += "    %%s_idx = -1;\\n" %% self.%s' % _bad_var(v))
        b.append('code += "    %%s = %s(%%s);\\n" %% (self.ret_var, args)' % v.verb)
        b.append('code += "    if (%s != 0) {\\n" % self.ret_var')
        b.append('code += _srq_errno_check(str(self.ret_var), "%s", %s, %r)' % (v.verb, what, fails))
        if chain is not None:
            bad = _bad_var(v)
            b.append('code += _srq_bad_wr_check(str(self.%s), str(self.%s), str(self.%s) + "_idx", "%s")'
                     % (chain.var, bad, bad, chain.ctype))
        b.append('code += "    }\\n"')
    elif v.verb == "ibv_poll_cq":
        # polls until the completions it waits for came, as the framework's
        # PollCQ does (one, ~10 ms) and as its trace saw them (ret=N, 10 s):
        # a program made from a trace consumes them where the trace did
        b.append('code += _srq_poll_c(self, ctx, str(self.ret_var), str(self.cq), str(self.num_entries), '
                 'str(self.wc_var))')
    elif v.ret == "count":
        b.append('code += "    %%s = %s(%%s);\\n" %% (self.ret_var, args)' % v.verb)
        b.append('code += "    if (%s < 0) {\\n" % self.ret_var')
        b.append('code += "        fprintf(stderr, \\"[warn] %s(%%s) failed: %%%%d\\\\n\\", %%s);\\n"'
                 ' %% (%s, self.ret_var)' % (v.verb, what))
        b.append('code += "    }\\n"')
    else:
        b.append('code += "    %s(%%s);\\n" %% args' % v.verb)
    if v.fw and v.fw.pair:     # the framework's pair runtime: announce, or wait for the peer
        b.append("code = _srq_pair_c(self, ctx, %r, code)" % v.fw.pair)
    b.append("code = _srq_device_list(_srq_ports(code, ctx), ctx)")
    b.append('return "\\n    /* %s (contract %s.json) */\\n" + _srq_guard(uses, code)' % (v.verb, v.verb))
    return "    def generate_c(self, ctx):\n        %s\n" % "\n        ".join(b)


def _get_contract_source(v):
    """CONTRACT, but none for a call its trace saw fail (what a contract
    requires is what success needs; a trace records failures too); for
    ibv_modify_qp plus the move to the state attr.qp_state names, a
    transition only an instance knows"""
    b = ['    def get_contract(self):\n',
         '        """CONTRACT; none for a call its trace saw fail%s"""\n'
         % ("; plus the move to attr.qp_state" if v.verb == "ibv_modify_qp" else ""),
         '        if _srq_failed(self, "%s"):\n' % v.ret,
         '            return Contract(requires=[], produces=[], transitions=[])\n']
    if v.verb != "ibv_modify_qp":
        return "".join(b + ["        return self.CONTRACT\n\n"])
    return "".join(b + [
        '        to = _srq_state(getattr(self.attr_obj, "qp_state", None)) if self.attr_obj else None\n',
        '        if to is None:\n',
        '            return self.CONTRACT\n',
        '        return Contract(requires=list(self.CONTRACT.requires), produces=[],\n',
        '                        transitions=[TransitionSpec("qp", from_state=None, to_state=to,\n',
        '                                                    name_attr="qp")])\n\n'])


def class_source(contract):
    v = _Verb(contract)
    c = contract
    mutable = [v.pattr] if v.product else []
    for p in v.params:
        if p.role in ("resource", "chain", "struct", "scalar"):
            mutable.append(p.attr)
    export = list(mutable) + [p.var for p in v.params
                              if p.role in ("chain", "struct", "bad_wr", "out", "out_array")]
    if v.ret in ("errno", "count"):
        export.append("ret_var")
    if v.fw:    # the framework's lists first, as its mutator and to_dict() know them
        mutable = v.fw.mutable + [f for f in mutable if f not in v.fw.mutable]
        export = v.fw.export + [f for f in export if f not in v.fw.export]
    structs = {p.name: _struct_fields(c, p.ctype) for p in v.params if p.role == "struct"}
    out = ["class %s(VerbCall):\n" % v.cls, _docstring(v), "\n",
           "    MUTABLE_FIELDS = %r\n" % mutable,
           "    EXPORT_FIELDS = %r\n" % export,
           _contract_source(v),
           '    CONTRACT_SOURCE = "%s"\n' % v.verb,
           '    C_SIGNATURE = "%s"\n' % _signature(c),
           _data("FAILURES", {f["id"]: {k: x for k, x in f.items() if k != "id"}
                              for f in c.data["failures"]}),
           _data("POSTCONDITIONS", {p["id"]: p["doc"] for p in c.data["postconditions"]}),
           _data("PRODUCES", c.data["produces"]),
           _data("CONSUMES", c.data["consumes"]),
           _data("OWNERSHIP", c.data["ownership"]),
           _data("STRUCT_FIELDS", structs),
           "\n", _init_source(v), "\n", _get_contract_source(v), _apply_source(v), "\n",
           _from_trace_source(v), "\n", _generate_c_source(v), "\n",
           "    def to_dict(self):\n        return _srq_to_dict(self)\n"]
    return "".join(out)


def generate(contracts, verbs=None):
    """The source text: the shared helpers, then one class per verb"""
    names = verbs or sorted(contracts)
    missing = [n for n in names if n not in contracts]
    if missing:
        raise KeyError("no contract for %s (verbs with one: %s)" %
                       (", ".join(missing), " ".join(sorted(contracts))))
    head = (BEGIN + "\n"
            "# python3 -m srq_contracts verbs-py%s\n"
            "# For lib/verbs.py of the rdma-fuzzing framework: `srq-verbs-py --into\n"
            "# lib/verbs.py` puts this block at the end of that file, after the\n"
            "# framework's own classes, so that these take their names (by hand: append\n"
            "# it there; above VerbCall's definition it cannot load, and above the\n"
            "# framework's classes they would override these). It uses VerbCall,\n"
            "# Contract, RequireSpec, ProduceSpec, TransitionSpec, State and the values\n"
            "# and WR classes the file imports. Regenerate rather than edit: the\n"
            "# contracts are the source.\n\n" % "".join(" " + v for v in verbs or []))
    parts = [head, runtime_source()]
    for name in names:
        parts.append("\n\n" + class_source(contracts[name]))
    parts.append("\n\nSRQ_VERB_CLASSES = {%s}\n" %
                 ", ".join('"%s": %s' % (n, class_name(n)) for n in names))
    parts.append(END + "\n")
    return "".join(parts)


BEGIN = "# ---- ucx-srq: verbs.py classes generated from its verb contracts ----"
END = "# ---- end of the ucx-srq classes ----"


def install(path, text):
    """@text (generate()'s) into the verbs.py at @path: at the end of the
    file, where its names replace the framework's classes of the same
    names; a block an earlier run put there is replaced, the rest of the
    file kept byte for byte, so that a second run changes nothing"""
    with open(path) as f:
        old = f.read()
    if "class VerbCall" not in old:
        raise OSError("%s defines no VerbCall: not the framework's lib/verbs.py" % path)
    body = old
    if BEGIN in old:
        a = old.index(BEGIN)
        if END not in old[a:]:
            raise OSError("%s: the ucx-srq block has no end line (%s); restore the file" % (path, END))
        b = old.index(END, a) + len(END)
        b += 1 if old[b:b + 1] == "\n" else 0
        body = old[:a] + old[b:]
        # the blank lines this function put before the block
        if body.endswith("\n\n\n") and old[:a].endswith("\n\n\n"):
            body = body[:-2]
    new = body + ("" if body.endswith("\n") else "\n") + "\n\n" + text
    if new == old:
        return "%s: the ucx-srq classes are in place already (unchanged)" % path
    tmp = path + ".srq-tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)
    n = text.count("(VerbCall):\n")
    return "%s: %d ucx-srq classes %s at its end" % (path, n, "replaced" if BEGIN in old else "added")
