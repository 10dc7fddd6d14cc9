# SPDX-License-Identifier: BSD-3-Clause
"""The helpers the generated verbs.py classes share (verbspy.py emits this
file's text once, before the classes).

This module is not imported by the package: it is source text, written
into the output of `python3 -m srq_contracts verbs-py`, where it runs
among the names a verbs.py of the Python RDMA fuzzing framework imports
(ResourceValue, ConstantValue, IbvRecvWR, IbvSendWR, IbvSge, State, ...).
It uses those names only through the framework's documented constructors
and attributes, so that the same text works there and against the
project's stand-in of that API (test/verbspy/).
"""
# ---- begin runtime (copied verbatim into the generated source) ----
import re as _srq_re

_SRQ_NUMBER = _srq_re.compile(r"^-?(0x[0-9a-fA-F]+|[0-9]+)$")
_SRQ_FLAGS = _srq_re.compile(r"^[A-Z][A-Z0-9_]*(\|[A-Z][A-Z0-9_]*)+$")
_SRQ_OBJECT = _srq_re.compile(r"^(ctx|pd|mr|cq|ch|srq|qp|ah)[0-9]+$")
_SRQ_LVALUE = _srq_re.compile(r"^[A-Za-z_]\w*(\[[0-9]+\])*((\.|->)[A-Za-z_]\w*(\[[0-9]+\])*)*$")
_SRQ_OFFSET = _srq_re.compile(r"^([A-Za-z_]\w*(\[[0-9]+\])*)\+(0x[0-9a-fA-F]+|[0-9]+)$")
_SRQ_CHAIN_KEY = _srq_re.compile(r"^([a-z_]+)\[([0-9]+)\]\.(.+)$")
# an SGE of a WR: sg_list[j].field, or inside a member (tm.add.sg_list[j])
_SRQ_SGE_KEY = _srq_re.compile(r"^(?:[a-z_]+\.)*sg_list\[([0-9]+)\]\.(addr|length|lkey|mr)$")


def _srq_kv(info):
    """'k=v k2=v2' (blanks or commas between) -> {k: v}; words without '='
    (a verb name at the start of a line) are skipped"""
    out = {}
    for tok in str(info or "").replace(",", " ").split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _srq_c(value, kind="int"):
    """A trace value as a C expression, or ValueError. Numbers, NULL, IBV_
    names and flags (A|B), object references (mr0.lkey -> mr0->lkey,
    qp1.qp_num), C variables and members (port_attr.lid, bufs[0]) and an
    offset into one (bufs[0]+64)"""
    v = str(getattr(value, "value", value)).strip()
    if _SRQ_NUMBER.match(v):
        if kind in ("ptr", "buffer"):
            return "(void *)(uintptr_t)%s" % v
        return v if int(v, 0) <= 0x7fffffff else v + "ULL"
    if v == "NULL":
        return v
    if _SRQ_FLAGS.match(v):
        return "(" + " | ".join(v.split("|")) + ")"
    head, _, rest = v.partition(".")
    if rest and _SRQ_OBJECT.match(head) and _SRQ_LVALUE.match(rest):
        v = "%s->%s" % (head, rest)
    m = _SRQ_OFFSET.match(v)
    if m:
        v = "(%s + %s)" % (m.group(1), m.group(3))
    elif not _SRQ_LVALUE.match(v):
        raise ValueError("%r is no value that can be written in C" % value)
    if kind == "addr" and not v.startswith("(uint64_t)"):
        return "(uint64_t)(uintptr_t)%s" % v
    return v


def _srq_value(value, kind="int"):
    """A trace value as the framework's value: a number of an integer kind
    as an IntValue (the mutator can move it), anything else as a
    ConstantValue of its C"""
    text = str(_srq_unwrap(value)).strip()
    if kind in ("int", "uint", "hex") and _SRQ_NUMBER.match(text):
        return IntValue(int(text, 0))
    return ConstantValue(_srq_c(text, kind))


def _srq_var(given, stem, owner):
    """The C variable a call keeps an argument or result in: the name the
    trace gave (an identifier), else STEM_OWNER"""
    if given is not None:
        if not _srq_re.match(r"^[A-Za-z_]\w*$", str(given)):
            raise ValueError("%r is no C variable name" % (given,))
        return ConstantValue(str(given))
    return ConstantValue(stem + ("_" + _srq_re.sub(r"\W", "", str(owner)) if owner is not None else ""))


def _srq_unwrap(v):
    """The plain value inside the framework's value wrappers (OptionalValue,
    ListValue, IntValue, ConstantValue); a ResourceValue stays itself"""
    while v is not None and type(v).__name__.endswith("Value") and not isinstance(v, ResourceValue):
        v = v.value
    return v


def _srq_chain(head):
    """The WR objects of a chain, following next"""
    out, cur = [], _srq_unwrap(head)
    while cur is not None and all(cur is not w for w in out):
        out.append(cur)
        cur = _srq_unwrap(getattr(cur, "next", None))
    return out


def _srq_chain_mrs(head):
    """The MR names the SGEs of every WR of a chain name, in order, once"""
    names = []
    for wr in _srq_chain(head):
        for sge in _srq_unwrap(getattr(wr, "sg_list", None)) or []:
            mr = getattr(_srq_unwrap(sge), "mr", None)
            name = getattr(mr, "value", None)
            if isinstance(name, str) and name and name != "NULL" and name not in names:
                names.append(name)
    return names


def _srq_resource(rtype, name):
    """A ResourceValue for a named object, ConstantValue('NULL') for none"""
    if name is None or str(name) == "NULL":
        return ConstantValue("NULL")
    if isinstance(name, ResourceValue):
        return name
    if not _SRQ_LVALUE.match(str(name)):
        raise ValueError("%r is no %s name" % (name, rtype))
    return ResourceValue(resource_type=rtype, value=str(name))


def _srq_sges(fields):
    """IbvSge objects from {index: {addr|length|lkey|mr: value}}: an SGE
    names its MR (mr=mr0, or lkey=mr0.lkey); addr, length and lkey given
    in the trace override what the MR gives (a bad lkey, an offset)"""
    sges = []
    for i in range(max(fields) + 1 if fields else 0):
        f = fields.get(i, {})
        mr = f.get("mr")
        if mr is None and _srq_re.match(r"^mr[0-9]+\.lkey$", f.get("lkey", "")):
            mr = f["lkey"].split(".")[0]
        length = int(f["length"], 0) if _SRQ_NUMBER.match(f.get("length", "")) else None
        sge = IbvSge(mr=mr, length=length)
        for key in ("addr", "lkey"):
            if key in f and not (key == "lkey" and f[key] == "%s.lkey" % mr):
                setattr(sge, key, ConstantValue(_srq_c(f[key], "addr" if key == "addr" else "int")))
        if "length" in f and length is None:
            sge.length = ConstantValue(_srq_c(f["length"]))
        sges.append(sge)
    return sges


def _srq_wr_chain(kv, param, wr_class, scalars):
    """The WR chain a trace gives as param[i].field=value keys, built with
    the framework's WR class (IbvRecvWR or IbvSendWR) and IbvSge; None when
    the trace has no such key"""
    wrs = {}
    for key, value in kv.items():
        m = _SRQ_CHAIN_KEY.match(key)
        if not m or m.group(1) != param:
            continue
        wr = wrs.setdefault(int(m.group(2)), {"sges": {}})
        s = _SRQ_SGE_KEY.match(m.group(3))
        if s:
            wr["sges"].setdefault(int(s.group(1)), {})[s.group(2)] = value
        elif m.group(3) in scalars:
            wr[m.group(3)] = value
        else:
            raise ValueError("%s: %s is no field from_trace can set (%s, sg_list[j].addr|length|lkey|mr)"
                             % (param, key, "|".join(sorted(scalars))))
    if not wrs:
        return None
    head = None
    for i in sorted(wrs, reverse=True):
        f = wrs[i]
        args = {"next_wr": head, "sg_list": _srq_sges(f["sges"])}
        for name in scalars:
            if name in f:
                args[name] = int(f[name], 0) if _SRQ_NUMBER.match(f[name]) else _srq_c(f[name])
        head = wr_class(**args)
    return head


class SrqStruct:
    """An argument struct given field by field (attr.max_wr=16): the
    fields the contract defines, each a ResourceValue (an object such as
    send_cq) or a ConstantValue; to_cxx() writes it into a C variable the
    way the framework's Ibv* attribute classes do, so either can be
    passed where a generated class takes a struct. Contract paths
    (qp_init_attr_obj.send_cq) read its fields as attributes."""

    def __init__(self, ctype, fields, values=None):
        self.ctype = ctype
        self.FIELDS = fields          # path -> (value kind, object kind)
        self.values = {}
        for path, value in (values or {}).items():
            self.set(path, value)

    def set(self, path, value):
        if path not in self.FIELDS:
            raise ValueError("%s has no field %s (it has: %s)" %
                             (self.ctype, path, " ".join(sorted(self.FIELDS))))
        kind, obj = self.FIELDS[path]
        if kind == "object":
            self.values[path] = _srq_resource(obj, value)
        else:
            self.values[path] = _srq_value(value, kind)

    @property
    def MUTABLE_FIELDS(self):
        """The fields given, by their first name (attr for attr.max_wr):
        where the framework's mutator looks"""
        return sorted(set(p.split(".")[0] for p in self.__dict__.get("values", {})))

    def __getattr__(self, name):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        sub = {p[len(name) + 1:]: v for p, v in values.items() if p.startswith(name + ".")}
        if sub:
            view = SrqStruct.__new__(SrqStruct)
            view.__dict__.update(ctype=name, FIELDS={}, values=sub)
            return view
        raise AttributeError(name)

    def to_cxx(self, varname, ctx=None):
        if ctx:
            ctx.alloc_variable(varname, self.ctype)
        s = "\n    memset(&%s, 0, sizeof(%s));\n" % (varname, varname)
        for path, value in sorted(self.values.items()):
            s += "    %s.%s = %s;\n" % (varname, path, value)
        return s

    def to_dict(self):
        return {"type": "SrqStruct", "ctype": self.ctype,
                "value": {p: v.to_dict() if hasattr(v, "to_dict") else str(v)
                          for p, v in sorted(self.values.items())}}


class SrqOpsWR:
    """A struct ibv_ops_wr (ibv_post_srq_ops), which the framework has no
    class for: built as its IbvRecvWR is (wr_id, next, an IbvSge list) with
    the operation's scalars by their paths (opcode, flags, tm.handle,
    tm.add.tag, ...); its scatter list is tm.add.sg_list"""

    CTYPE = "struct ibv_ops_wr"

    def __init__(self, wr_id=None, next_wr=None, sg_list=None, **scalars):
        self.wr_id = ConstantValue(wr_id) if wr_id is not None else None
        self.next = OptionalValue(next_wr)
        self.sg_list = OptionalValue(ListValue(sg_list or []))
        self.scalars = {k: ConstantValue(v) for k, v in scalars.items() if v is not None}
        if sg_list and "tm.add.num_sge" not in self.scalars:
            self.scalars["tm.add.num_sge"] = ConstantValue(len(sg_list))

    @property
    def MUTABLE_FIELDS(self):
        return ["wr_id"] + sorted(self.scalars)

    def to_cxx(self, varname, ctx=None):
        if ctx:
            ctx.alloc_variable(varname, self.CTYPE)
        s = "    memset(&%s, 0, sizeof(%s));\n" % (varname, varname)
        if self.wr_id is not None:
            s += "    %s.wr_id = %s;\n" % (varname, _srq_unwrap(self.wr_id))
        for path, value in sorted(self.scalars.items()):
            s += "    %s.%s = %s;\n" % (varname, path, _srq_unwrap(value))
        sges = _srq_unwrap(self.sg_list) or []
        if sges:
            arr = varname + "_sg_list"
            if ctx:
                ctx.alloc_variable(arr, "struct ibv_sge", None, "[%d]" % len(sges))
            for i, sge in enumerate(sges):
                s += _srq_unwrap(sge).to_cxx("%s[%d]" % (arr, i), ctx)
            s += "    %s.tm.add.sg_list = %s;\n" % (varname, arr)
        nxt = _srq_unwrap(self.next)
        if nxt is not None:
            s += nxt.to_cxx(varname + "_next", ctx)
            s += "    %s.next = &%s_next;\n" % (varname, varname)
        return s

    def to_dict(self):
        nxt = _srq_unwrap(self.next)
        return {"type": "SrqOpsWR", "wr_id": str(_srq_unwrap(self.wr_id)),
                "scalars": {k: str(_srq_unwrap(v)) for k, v in sorted(self.scalars.items())},
                "sg_list": [_srq_unwrap(s).to_dict() for s in _srq_unwrap(self.sg_list) or []],
                "next": nxt.to_dict() if nxt is not None else None}


def _srq_struct(kv, param, ctype, fields):
    """The struct a trace gives as param.path=value keys (None if none)"""
    given = {k[len(param) + 1:]: v for k, v in kv.items() if k.startswith(param + ".")}
    return SrqStruct(ctype, fields, given) if given else None


def _srq_state(value):
    """IBV_QPS_INIT -> State.INIT; None where the framework has no state"""
    name = str(_srq_unwrap(value) or "")
    return getattr(State, name[len("IBV_QPS_"):], None) if name.startswith("IBV_QPS_") else None


def _srq_check_keys(kv, verb, known, prefixes):
    """Every key of a trace line must mean something to the class"""
    meta = ("ret", "errno", "repeat")
    for key in kv:
        if key in known or key in meta or key.startswith("out."):
            continue
        if any(key.startswith(p) for p in prefixes):
            continue
        raise ValueError("%s: %s is no parameter of the call (it takes: %s)" %
                         (verb, key, " ".join(sorted(known | set(p.rstrip(".[") for p in prefixes)))))


def _srq_errno_check(var, verb, what, failures):
    """C that names the contract's failure for the errno in @var, and
    flags an errno the contract does not list"""
    cases = "".join('%s == %s ? "%s" : ' % (var, e, "|".join(ids)) for e, ids in failures)
    return ('        fprintf(stderr, "[warn] %s(%s) failed: %%s (contract failure: %%s)\\n",\n'
            '                strerror(%s), %s"not in the contract");\n'
            % (verb, what, var, cases))


def _srq_bad_wr_check(head, bad, idx, wr_type):
    """C that finds *bad_wr in the chain (its index into @idx) and flags a
    *bad_wr outside it (postcondition bad_wr_on_failure)"""
    return ("        {\n"
            "            %s *p_ = &%s;\n"
            "            for (%s = 0; p_ != NULL && p_ != %s; p_ = p_->next) {\n"
            "                ++%s;\n"
            "            }\n"
            "            if (p_ == NULL) {\n"
            "                %s = -1;\n"
            "                fprintf(stderr, \"[contract] bad_wr_on_failure: \"\n"
            "                        \"*bad_wr is no WR of the chain\\n\");\n"
            "            } else {\n"
            "                fprintf(stderr, \"[warn] WRs before %%d posted, \"\n"
            "                        \"WR %%d and those after it not\\n\", %s, %s);\n"
            "            }\n"
            "        }\n" % (wr_type, head, idx, bad, idx, idx, idx, idx))


def _srq_guard(names, body):
    """@body inside the framework's IF_OK_PTR guard of every object it uses"""
    names = [n for n in names if n and n != "NULL"]
    return "".join("    IF_OK_PTR(%s, {\n" % n for n in names) + body + \
        "".join("    });\n" for _ in names)


def _srq_to_dict(call):
    d = {"verb": type(call).__name__, "contract": call.CONTRACT_SOURCE}
    for field in call.EXPORT_FIELDS:
        value = getattr(call, field, None)
        d[field] = value.to_dict() if hasattr(value, "to_dict") else value
    return d
# ---- end runtime ----
