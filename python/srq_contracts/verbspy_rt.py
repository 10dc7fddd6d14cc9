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
_SRQ_PORT = _srq_re.compile(r"^(ctx[0-9]+)\.port([0-9])\.(lid|gid)$")
_SRQ_PORT_USE = _srq_re.compile(r"\b(ctx[0-9]+)_(?:port|gid)\[([0-9])\]")
_SRQ_NULLS = {}
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
    if _SRQ_FLAGS.match(_srq_re.sub(r"\s*\|\s*", "|", v)):    # A|B, or A | B as the framework writes
        return "(" + " | ".join(x.strip() for x in v.split("|")) + ")"
    port = _SRQ_PORT.match(v)
    if port:    # the port a context opened: its attributes and GID, queried where used
        v = ("%s_port[%s].lid" if port.group(3) == "lid" else "%s_gid[%s]") % (port.group(1), port.group(2))
        return "(uint64_t)(uintptr_t)%s" % v if kind == "addr" else v
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


def _srq_value(value, kind="int", wrap=None):
    """A value as the framework's value: a number of an integer kind as an
    IntValue (the mutator can move it); where the framework's own class
    wraps the field otherwise (wrap "flag:TYPE", "local:TYPE"), as it does;
    anything else as a ConstantValue of its C"""
    if type(value).__name__.endswith("Value") and not isinstance(value, (ConstantValue, IntValue)):
        return value            # already the framework's (a FlagValue the mutator made)
    text = str(_srq_unwrap(value)).strip()
    how, _, vtype = (wrap or "").partition(":")
    if how == "flag":
        return FlagValue(text, flag_type=vtype)
    if how == "local":      # a name the mutator can swap, written as C (0x6310... as a pointer)
        return LocalResourceValue(value=_srq_c(text, kind), resource_type=vtype)
    if kind in ("int", "uint", "hex") and _SRQ_NUMBER.match(text):
        return IntValue(int(text, 0))
    if kind == "device":        # a device list (dev_list) or a device's name (soft0)
        if not _SRQ_LVALUE.match(text):
            raise ValueError("%r is no device" % (value,))
        return ConstantValue(text)
    return ConstantValue(_srq_c(text, kind))


def _srq_extra(value, wrap):
    """A parameter only the framework has (remote_qp: the peer's QP)"""
    if value is None:
        return None
    how, _, vtype = wrap.partition(":")
    if how == "local":
        return LocalResourceValue(value=str(_srq_unwrap(value)), resource_type=vtype)
    return ConstantValue(str(_srq_unwrap(value)))


def _srq_ib_ctx(value, ctx):
    """The context a call names, else the one the program opened (the
    framework's CodeGenContext.ib_ctx)"""
    if value is not None:
        return str(value)
    return str(getattr(ctx, "ib_ctx", None) or "ctx")


def _srq_device(value, ctx):
    """ibv_open_device's argument: the first device of a device list the
    program holds (dev_list), else the device of that name (a trace's
    soft0), looked up in a list of its own (_srq_device_list): the
    framework's prelude has freed dev_list by then"""
    name = str(_srq_unwrap(value))
    if name in (str(getattr(ctx, "dev_list", "dev_list")), "dev_list"):
        return "%s[0]" % name
    if "[" in name or "->" in name:
        return name
    return ("({ struct ibv_device *d_ = NULL; "
            "for (int i_ = 0; srq_dev_list != NULL && srq_dev_list[i_] != NULL; ++i_) "
            "if (!strcmp(ibv_get_device_name(srq_dev_list[i_]), \"%s\")) d_ = srq_dev_list[i_]; d_; })"
            % name)


_SRQ_BUF = _srq_re.compile(r"^\(?([A-Za-z_]\w*)(?: \+ (0x[0-9a-fA-F]+|[0-9]+))?\)?$")


def _srq_buffer(ctx, addr, length):
    """Memory a trace names by itself (buf0, buf0 + 64) is memory the
    program must have: a char array as long as the furthest byte a call
    reaches in it (4096 without a length); a name the program already
    has (bufs[0]) is left alone"""
    text = str(_srq_unwrap(addr)).strip()
    text = _srq_re.sub(r"^\(uint64_t\)\(uintptr_t\)|^\(void \*\)\(uintptr_t\)", "", text)
    m = _SRQ_BUF.match(text)
    if not m or m.group(1) == "NULL" or not hasattr(ctx, "variables"):
        return
    name = m.group(1)
    n = int(str(_srq_unwrap(length)), 0) if _SRQ_NUMBER.match(str(_srq_unwrap(length))) else 4096
    need = (int(m.group(2), 0) if m.group(2) else 0) + max(n, 1)
    mine = ctx.__dict__.setdefault("_srq_buffers", set())
    if name in ctx.variables and name not in mine:
        return
    mine.add(name)
    _srq_array(ctx, name, "char", need)


def _srq_pair_apply(call, ctx, what):
    """The framework's pair runtime, Python half: which server QP a QP
    pairs with and its CQs; the peer's QP number for a move to RTR"""
    if not hasattr(ctx, "make_qp_binding"):
        return
    if what == "qp":
        qp = str(call.qp)
        attr = getattr(call, "init_attr_obj", None) or getattr(call, "qp_attr_obj", None)
        remote = getattr(call, "remote_qp", None)
        if remote is None:      # a QP of this process's own (a trace's): no pair
            return
        ctx.make_qp_binding(qp, remote.value)
        ctx.make_qp_recv_cq_binding(qp, getattr(attr, "recv_cq", "NULL") if attr else "NULL")
        ctx.make_qp_send_cq_binding(qp, getattr(attr, "send_cq", "NULL") if attr else "NULL")
    elif what == "rtr" and call.attr_obj is not None and hasattr(call.attr_obj, "bind_remote_qp") \
            and _srq_peer(call, ctx):
        call.attr_obj.bind_remote_qp(ctx.get_peer_qp_num(str(call.qp)))


def _srq_peer(call, ctx):
    """The server QP the framework's pair runtime pairs call.qp with, if any"""
    return (getattr(ctx, "bindings", None) or {}).get(str(call.qp))


def _srq_pair_c(call, ctx, what, code):
    """The framework's pair runtime, C half (its client template's qps[],
    mrs[], prs[] and pr_* calls): a QP or MR made is announced to the
    peer; a move to RTR first waits until the pair is BOTH_RTS. Programs
    without that template get @code as it is"""
    if not hasattr(ctx, "make_qp_binding") or (what != "mr" and not _srq_peer(call, ctx)):
        return code
    if what == "rtr":
        if _srq_state(getattr(call.attr_obj, "qp_state", None) if call.attr_obj is not None else None) \
                is not getattr(State, "RTR", None):
            return code
        return ('    pr_wait_pair_state(BUNDLE_ENV, "pair-%s-%s", "BOTH_RTS", 15000);\n'
                % (call.qp, ctx.get_peer_qp_num(str(call.qp)))) + code
    if what == "mr":
        mr = str(call.mr)
        return code + ("    IF_OK_PTR(%s, {\n"
                       "        mrs[mrs_size++] = (PR_MR){ .id = \"%s\", .addr = (uint64_t)(%s->addr),\n"
                       "                                   .length = (uint32_t)%s->length, .lkey = %s->lkey };\n"
                       "        pr_write_client_update_claimed(CLIENT_UPDATE_PATH, qps, qps_size, mrs, mrs_size,\n"
                       "                                       prs, prs_size);\n"
                       "    });\n" % (mr, mr, mr, mr, mr))
    qp = str(call.qp)
    gid = str(getattr(ctx, "gid_var", "gid"))
    return code + ("    IF_OK_PTR(%s, {\n"
                   "        qps[qps_size++] = (PR_QP){ .id = \"%s\", .qpn = %s->qp_num, .psn = 0, .port = 1,\n"
                   "                                   .lid = 0, .gid = \"\" };\n"
                   "        for (int g_ = 0; g_ < 16; ++g_) {\n"
                   "            snprintf(qps[qps_size - 1].gid + (g_ ? 3 * g_ - 1 : 0), 4, g_ ? \":%%02x\" : \"%%02x\",\n"
                   "                     %s.raw[g_]);\n"
                   "        }\n"
                   "        prs[prs_size++] = (PR_Pair){ .id = \"pair-%s-%s\", .cli_id = \"%s\", .srv_id = \"%s\" };\n"
                   "        pr_write_client_update_claimed(CLIENT_UPDATE_PATH, qps, qps_size, mrs, mrs_size,\n"
                   "                                       prs, prs_size);\n"
                   "    });\n" % (qp, qp, qp, gid, qp, call.remote_qp, qp, call.remote_qp))


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


# a function a trace says the traced program gave (alloc=given): its own
# cannot be called, so a program made from the trace gives one that leaves
# the work to the provider. C++, as the framework's client template is
_SRQ_CALLBACKS = {
    "alloc": "[](struct ibv_pd *, void *, size_t, size_t, uint64_t) -> void * "
             "{ return IBV_ALLOCATOR_USE_DEFAULT; }",
    "free": "[](struct ibv_pd *, void *, void *, uint64_t) {}",
}


def _srq_callback(path, value):
    text = str(_srq_unwrap(value)).strip()
    if text == "NULL":
        return text
    name = path.split(".")[-1]
    if text != "given" or name not in _SRQ_CALLBACKS:
        raise ValueError("%s=%s: a function of the traced program; a generated program has one for "
                         "%s=given only" % (path, text, "|".join(sorted(_SRQ_CALLBACKS))))
    return _SRQ_CALLBACKS[name]


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
        elif _SRQ_WR_INFO_KEY.match(m.group(3)) and "opcode" in scalars:
            member, field = _SRQ_WR_INFO_KEY.match(m.group(3)).groups()
            wr.setdefault("info", {}).setdefault(member, {})[field] = value
        else:
            raise ValueError("%s: %s is no field from_trace can set (%s, sg_list[j].addr|length|lkey|mr%s)"
                             % (param, key, "|".join(sorted(scalars)),
                                ", wr.rdma|atomic|ud.*" if "opcode" in scalars else ""))
    if not wrs:
        return None
    head = None
    for i in sorted(wrs, reverse=True):
        f = wrs[i]
        args = {"next_wr": head, "sg_list": _srq_sges(f["sges"])}
        for name in scalars:
            if name in f:
                args[name] = int(f[name], 0) if _SRQ_NUMBER.match(f[name]) else _srq_c(f[name])
        for member, fields in f.get("info", {}).items():
            args[member] = SrqWrInfo(member, fields)
        head = wr_class(**args)
        # the trace's values as they were: the framework's WR classes raise
        # num_sge to the SGEs given (a trace's num_sge=-1 is a test of it)
        for name in scalars:
            if name in f and "." not in name:
                _srq_force(head, name, args[name])
    return head


def _srq_force(obj, field, value):
    """@obj.@field set to @value inside the value wrappers it has"""
    cur = getattr(obj, field, None)
    while type(getattr(cur, "value", None)).__name__.endswith("Value"):
        cur = cur.value
    if cur is not None and type(cur).__name__.endswith("Value"):
        cur.value = value
    else:
        setattr(obj, field, value)


def _srq_struct_cxx(varname, ctype, fields, ctx):
    """C that declares @varname a @ctype (through ctx) and sets @fields
    ({path: value}) in it, the rest zero"""
    if ctx:
        ctx.alloc_variable(varname, ctype)
    s = "\n    memset(&%s, 0, sizeof(%s));\n" % (varname, varname)
    for path, value in sorted(fields.items()):
        s += "    %s.%s = %s;\n" % (varname, path, value)
    return s


# a send WR's wr union members, as the framework's IbvSendWR copies them out
# of its IbvRdmaInfo, IbvAtomicInfo and IbvUdInfo (their C types and fields)
_SRQ_WR_INFO = {
    "rdma": ("struct { uint64_t remote_addr; uint32_t rkey; }",
             {"remote_addr": "addr", "rkey": "int"}),
    "atomic": ("struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; }",
               {"remote_addr": "addr", "compare_add": "int", "swap": "int", "rkey": "int"}),
    "ud": ("struct { struct ibv_ah* ah; uint32_t remote_qpn; uint32_t remote_qkey; }",
           {"ah": "object", "remote_qpn": "int", "remote_qkey": "int"}),
}
_SRQ_WR_INFO_KEY = _srq_re.compile(r"^wr\.(rdma|atomic|ud)\.(\w+)$")


class SrqWrInfo:
    """A send WR's rdma, atomic or ud member as a trace gives it (the
    framework's IbvRdmaInfo and IbvAtomicInfo name the peer's MR of its
    pair runtime instead, which a trace of one process has none of): the
    fields by value, written by to_cxx() into a variable of the type the
    framework's IbvSendWR reads them from"""

    MUTABLE_FIELDS = []

    def __init__(self, member, fields):
        ctype, kinds = _SRQ_WR_INFO[member]
        self.member, self.ctype, self.fields = member, ctype, {}
        for name, value in fields.items():
            if name not in kinds:
                raise ValueError("wr.%s has no field %s (it has: %s)" % (member, name, " ".join(kinds)))
            if kinds[name] == "object":
                self.fields[name] = _srq_resource(name, value)
            else:
                self.fields[name] = ConstantValue(_srq_c(value, kinds[name]))
            setattr(self, name, self.fields[name])
        self.MUTABLE_FIELDS = sorted(self.fields)

    def to_cxx(self, varname, ctx=None):
        return _srq_struct_cxx(varname, self.ctype, self.fields, ctx)

    def to_dict(self):
        return {"type": "SrqWrInfo", "member": self.member,
                "fields": {k: str(v) for k, v in sorted(self.fields.items())}}


class SrqStruct:
    """An argument struct given field by field (attr.max_wr=16): the
    fields the contract defines, each a ResourceValue (an object such as
    send_cq) or a ConstantValue; to_cxx() writes it into a C variable the
    way the framework's Ibv* attribute classes do, so either can be
    passed where a generated class takes a struct. Contract paths
    (qp_init_attr_obj.send_cq) read its fields as attributes."""

    MUTABLE_FIELDS = []

    def __init__(self, ctype, fields, values=None):
        self.ctype = ctype
        self.MUTABLE_FIELDS = []
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
        elif kind == "callback":
            self.values[path] = ConstantValue(_srq_callback(path, value))
        else:
            self.values[path] = _srq_value(value, kind)
        # the fields given, by their first name (attr for attr.max_wr): where
        # the framework's mutator looks. Per instance; the class's is a plain
        # empty list, as its summary printer reads the class's
        self.MUTABLE_FIELDS = sorted(set(p.split(".")[0] for p in self.values))


    def __getattr__(self, name):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        sub = {p[len(name) + 1:]: v for p, v in values.items() if p.startswith(name + ".")}
        if sub:
            view = SrqStruct.__new__(SrqStruct)
            view.__dict__.update(ctype=name, FIELDS={}, values=sub,
                                 MUTABLE_FIELDS=sorted(set(p.split(".")[0] for p in sub)))
            return view
        raise AttributeError(name)

    def to_cxx(self, varname, ctx=None):
        return _srq_struct_cxx(varname, self.ctype, self.values, ctx)

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
    MUTABLE_FIELDS = []

    def __init__(self, wr_id=None, next_wr=None, sg_list=None, **scalars):
        self.wr_id = ConstantValue(wr_id) if wr_id is not None else None
        self.next = OptionalValue(next_wr)
        self.sg_list = OptionalValue(ListValue(sg_list or []))
        self.scalars = {k: ConstantValue(v) for k, v in scalars.items() if v is not None}
        if sg_list and "tm.add.num_sge" not in self.scalars:
            self.scalars["tm.add.num_sge"] = ConstantValue(len(sg_list))
        self.MUTABLE_FIELDS = ["wr_id"] + sorted(self.scalars)


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


_SRQ_ARRAY_MAX = 4096


def _srq_count(value):
    """The length of the array an output count (ibv_poll_cq's num_entries)
    fills: the count, at least 1 and at most 4096 (the mutator moves the
    number anywhere; a call may ask for 0 or fewer)"""
    n = str(_srq_unwrap(value))
    if not _SRQ_NUMBER.match(n):
        raise ValueError("%r is no count" % (n,))
    return min(max(int(n, 0), 1), _SRQ_ARRAY_MAX)


def _srq_array(ctx, name, ctype, n):
    """@name a @ctype array of @n at least: calls sharing it (the polls of
    one CQ) make it as long as the longest needs"""
    if not ctx.alloc_variable(name, ctype, None, "[%d]" % n):
        have = int(ctx.variables[name][2].strip("[]"))
        ctx.variables[name][2] = "[%d]" % max(have, n)


def _srq_poll_c(call, ctx, ret, cq, num, wc):
    """ibv_poll_cq until @call's completions came: as many as its trace saw
    (ret=N, within 10 s: a re-run consumes them where the run did), else
    one within ~10 ms (100 polls 100 us apart), as the framework's PollCQ
    waits; a trace's empty poll (ret=0) polls once"""
    traced = getattr(call, "_srq_traced", (None, None))[0]
    want = int(traced) if traced is not None and _SRQ_NUMBER.match(traced) else 1
    tries = 100000 if traced is not None else 100
    # what the call asks for, within the array (a count of 0 or less is
    # passed as it is: ibv_poll_cq fills nothing then)
    n = int(num, 0) if _SRQ_NUMBER.match(num) else _srq_count(call.num_entries)
    if n > 0:
        n = min(n, _srq_count(n), want if traced is not None else n)
    take = "%d - %s" % (n, ret) if n > 0 else "%d" % n
    return ("    %s = 0;\n"
            "    for (int t_ = 0; t_ < %d; ++t_) {\n"
            "        int n_ = ibv_poll_cq(%s, %s, %s + %s);\n"
            "        if (n_ < 0) {\n"
            "            fprintf(stderr, \"[warn] ibv_poll_cq(%s) failed: %%d\\n\", n_);\n"
            "            %s = n_;\n            break;\n        }\n"
            "        %s += n_;\n"
            "        if (%s >= %d) {\n            break;\n        }\n"
            "        usleep(100);\n    }\n"
            % (ret, tries, cq, take, wc, ret, cq, ret, ret, ret, want))


def _srq_failed(call, ret_kind):
    """Whether the trace a call came from saw it fail: an object verb
    returned NULL, an errno verb an error, a count verb a negative number"""
    ret, err = getattr(call, "_srq_traced", (None, None))
    if ret is None:
        return False
    if ret_kind == "object":
        return ret == "NULL"
    if ret_kind == "errno":
        return ret != "0"
    if ret_kind == "count":
        return ret.startswith("-") or err is not None
    return False


_SRQ_ELEM_KEY = _srq_re.compile(r"^\[([0-9]+)\]\.(.+)$")


def _srq_struct_array(kv, param, ctype, fields):
    """The array of structs a trace gives as param[i].path=value keys
    (param.path: element 0), as SrqStruct elements; None if no key"""
    elems = {}
    for k, v in kv.items():
        if not k.startswith(param) or k[len(param):len(param) + 1] not in ".[":
            continue
        rest = k[len(param):]
        m = _SRQ_ELEM_KEY.match(rest)
        i, path = (int(m.group(1)), m.group(2)) if m else (0, rest[1:])
        elems.setdefault(i, {})[path] = v
    if not elems:
        return None
    return [SrqStruct(ctype, fields, elems.get(i, {})) for i in range(max(elems) + 1)]


def _srq_array_cxx(items, varname, ctype, ctx):
    """C that declares @varname an array of @ctype as long as @items (the
    framework's list of IbvSge, or _srq_struct_array's) and fills it"""
    items = _srq_unwrap(items) or []
    _srq_array(ctx, varname, ctype, max(len(items), 1))
    s = "    memset(%s, 0, sizeof(%s));\n" % (varname, varname)
    for i, item in enumerate(items):
        item = _srq_unwrap(item)
        # an element is no variable of its own (SrqStruct would declare one)
        s += item.to_cxx("%s[%d]" % (varname, i), None if isinstance(item, SrqStruct) else ctx)
    return s


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


def _srq_ports(code, ctx):
    """@code with, before it, the queries of every context port it reads
    (ctx0_port[1].lid, ctx0_gid[1]: a trace's ctx0.port1.lid), their
    variables declared"""
    pre = ""
    for c, port in sorted(set(_SRQ_PORT_USE.findall(code))):
        ctx.alloc_variable("%s_port" % c, "struct ibv_port_attr", None, "[9]")
        ctx.alloc_variable("%s_gid" % c, "union ibv_gid", None, "[9]")
        pre += ("    if (%s != NULL && (ibv_query_port(%s, %s, &%s_port[%s]) || "
                "ibv_query_gid(%s, %s, 0, &%s_gid[%s]))) {\n"
                "        fprintf(stderr, \"[warn] %s port %s: %%s\\n\", strerror(errno));\n    }\n"
                % (c, c, port, c, port, c, port, c, port, c, port))
    return pre + code


def _srq_device_list(code, ctx):
    """@code inside the device list a named device is looked up in (see
    _srq_device): its own, freed once the device is open"""
    if "srq_dev_list" not in code:
        return code
    ctx.alloc_variable("srq_dev_list", "struct ibv_device **", "NULL")
    return ("    srq_dev_list = ibv_get_device_list(NULL);\n" + code +
            "    if (srq_dev_list != NULL) {\n        ibv_free_device_list(srq_dev_list);\n"
            "        srq_dev_list = NULL;\n    }\n")


def _srq_product(name, kind):
    """The variable of an object a call makes; a trace's ret=NULL (the call
    failed there) gets a name of its own, KIND_failedN"""
    if name is None or str(_srq_unwrap(name)) != "NULL":
        return name
    _SRQ_NULLS[kind] = _SRQ_NULLS.get(kind, -1) + 1
    return "%s_failed%d" % (kind, _SRQ_NULLS[kind])


def srq_calls_from_trace(lines, ctx=None):
    """The calls of a trace (SRQ_VERBS_TRACE's lines, or its text), as
    objects of these classes, in order: what the framework's generator
    takes. A verb without a class is refused, with its line"""
    if isinstance(lines, str):
        lines = lines.splitlines()
    calls = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cls = SRQ_VERB_CLASSES.get(line.split()[0])
        if cls is None:
            raise ValueError("line %d: no class for %s" % (n, line.split()[0]))
        try:
            calls.append(cls.from_trace(line, ctx))
        except ValueError as e:
            raise ValueError("line %d: %s" % (n, e))
    return calls


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
