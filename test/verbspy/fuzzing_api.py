# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for the base API of the Python RDMA verbs fuzzer
(liuyi-thu/rdma-fuzzing, lib/): the names its verbs.py imports, written
here from their documented interface so that test/verbs_py.sh can run the
classes `srq_contracts verbs-py` generates without fetching anything.

Only what the generated classes touch: State, RequireSpec, ProduceSpec,
TransitionSpec, Contract, ContractTable (ctx.contracts: a state per named
resource, apply_contract() checking requirements and recording products
and transitions, with the framework's paths: a.b, a[*], a.** along a WR
chain's next), the values (ConstantValue, ResourceValue, IntValue,
OptionalValue, ListValue), ObjectTracker (ctx.tracker), CodeGenContext
(variables of the generated program), VerbCall, and the WR objects
IbvSge, IbvRecvWR, IbvSendWR with to_cxx(). Their C is plain C here
(the framework's own WR classes emit C++).
"""
import enum
import re


# ---------------------------------------------------------------- contracts

class State(enum.Enum):
    ALLOCATED = 1
    RESET = 2
    INIT = 3
    RTR = 4
    RTS = 5
    DESTROYED = 6
    IMPORTED = 7
    USED = 8


class ContractError(RuntimeError):
    pass


class RequireSpec:
    def __init__(self, rtype, state, name_attr, exclude_states=None):
        self.rtype, self.state, self.name_attr = rtype, state, name_attr
        self.exclude_states = exclude_states


class ProduceSpec:
    def __init__(self, rtype, state, name_attr, metadata_fields=None):
        self.rtype, self.state, self.name_attr = rtype, state, name_attr
        self.metadata_fields = metadata_fields


class TransitionSpec:
    def __init__(self, rtype, from_state, to_state, name_attr):
        self.rtype, self.from_state, self.to_state = rtype, from_state, to_state
        self.name_attr = name_attr


class Contract:
    def __init__(self, requires, produces, transitions):
        self.requires, self.produces, self.transitions = requires, produces, transitions


def _plain(v):
    """A value wrapper's content; a resource stays the name it holds"""
    while isinstance(v, Value):
        v = v.value
    return v


def _items(v):
    v = _plain(v)
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _along_next(node):
    out = []
    while node is not None and all(node is not n for n in out):
        out.append(node)
        node = _plain(getattr(node, "next", None))
    return out


def resolve(obj, path):
    """The names a contract path reaches from a verb call"""
    nodes = [obj]
    for seg in path.split("."):
        if seg == "**":
            nodes = [n for x in nodes for n in _along_next(_plain(x))]
            continue
        m = re.match(r"^(\w+)(\[\*\])?$", seg)
        if not m:
            raise ContractError("bad path segment %r in %r" % (seg, path))
        nxt = []
        for n in nodes:
            child = getattr(_plain(n), m.group(1), None)
            nxt.extend(_items(child) if m.group(2) else [_plain(child)] if _plain(child) is not None else [])
        nodes = nxt
    return [str(n) for n in nodes if n is not None and str(n) != "NULL"]


class ContractTable:
    """The state of every named resource of a generated program"""

    def __init__(self):
        self.states = {}     # (rtype, name) -> (State, metadata)
        # what the framework's table holds from the start: the server's QPs
        # a client QP pairs with, the template's buffers
        for i in range(100):
            self.put("remote_qp", "srv%d" % i, State.ALLOCATED)
            self.put("buf", "bufs[%d]" % i, State.ALLOCATED)

    def require(self, rtype, name, state=None, exclude_states=None):
        rec = self.states.get((rtype, name))
        if rec is None:
            raise ContractError("required resource not found: %s %s" % (rtype, name))
        if state is not None and rec[0] is not state:
            raise ContractError("%s %s is %s, %s required" % (rtype, name, rec[0].name, state.name))
        if exclude_states and rec[0] in exclude_states:
            raise ContractError("%s %s is %s, excluded" % (rtype, name, rec[0].name))

    def put(self, rtype, name, state, metadata=None):
        rec = self.states.get((rtype, name))
        if rec is not None and rec[0] is not State.DESTROYED:
            raise ContractError("resource already exists: %s %s" % (rtype, name))
        self.states[(rtype, name)] = (state, metadata or {})

    def transition(self, rtype, name, to_state, from_state=None):
        rec = self.states.get((rtype, name))
        if rec is None:
            raise ContractError("transition target not found: %s %s" % (rtype, name))
        if from_state is not None and rec[0] not in (from_state, to_state):
            raise ContractError("%s %s: %s -> %s" % (rtype, name, rec[0].name, to_state.name))
        self.states[(rtype, name)] = (to_state, rec[1])

    def apply_contract(self, verb, contract):
        contract = verb.get_contract()
        for spec in contract.requires:
            for name in resolve(verb, spec.name_attr):
                self.require(spec.rtype, name, spec.state, spec.exclude_states)
        for spec in contract.transitions:
            for name in resolve(verb, spec.name_attr):
                self.transition(spec.rtype, name, spec.to_state, spec.from_state)
        for spec in contract.produces:
            meta = {f: resolve(verb, f) for f in spec.metadata_fields or []}
            for name in resolve(verb, spec.name_attr):
                self.put(spec.rtype, name, spec.state, meta)

    def snapshot(self):
        return {k: (v[0], v[1]) for k, v in self.states.items()}


# ---------------------------------------------------------------- values

class Value:
    def __init__(self, value, mutable=True):
        self.value, self.mutable = value, mutable

    def __str__(self):
        return str(self.value)

    def to_dict(self):
        return {"type": type(self).__name__, "value": self.value}


class ConstantValue(Value):
    def __init__(self, value=None):
        Value.__init__(self, value, False)


class IntValue(Value):
    def __init__(self, value=None, range=None, step=None, rng=None, mutable=True):
        Value.__init__(self, value, mutable)
        self.range = range

    def mutate(self, snap=None, contract=None, rng=None, path=None, global_snap=None):
        if self.mutable:
            self.value = (self.value or 0) + 1


class _TypedValue(Value):
    """A value of a named type the framework requires: a resource type,
    a flag type"""
    TYPE = None

    def __init__(self, value=None, type_=None, mutable=True):
        if not type_:
            raise ValueError("a %s needs a %s" % (type(self).__name__, self.TYPE.replace("_", " ")))
        Value.__init__(self, value, mutable)
        setattr(self, self.TYPE, type_)


class ResourceValue(_TypedValue):
    TYPE = "resource_type"

    def __init__(self, value=None, resource_type=None, mutable=True):
        _TypedValue.__init__(self, value, resource_type, mutable)


class FlagValue(_TypedValue):
    """Flags (a name, NAME | NAME, or a number) of a named flag type the
    mutator picks from (IBV_ACCESS_FLAGS_ENUM, IBV_QP_ATTR_MASK_ENUM)"""
    TYPE = "flag_type"

    def __init__(self, value=None, flag_type=None, mutable=True):
        _TypedValue.__init__(self, value, flag_type, mutable)


class EnumValue(Value):
    def __init__(self, value=None, enum_type=None, mutable=True):
        Value.__init__(self, value, mutable)
        self.enum_type = enum_type


class LocalResourceValue(_TypedValue):
    """A name of this side of the pair (a buffer: "buf"; the server QP a QP
    pairs with: "remote_qp")"""
    TYPE = "resource_type"

    def __init__(self, value=None, resource_type=None, mutable=True):
        _TypedValue.__init__(self, value, resource_type, mutable)


class OptionalValue(Value):
    def __init__(self, value=None, factory=None, mutable=True):
        Value.__init__(self, value, mutable)

    def __bool__(self):
        return self.value is not None

    def to_cxx(self, varname, ctx=None):
        return self.value.to_cxx(varname, ctx) if self.value is not None else ""


class ListValue(Value):
    def __init__(self, value=None, factory=None, mutable=True, on_after_mutate=None):
        Value.__init__(self, list(value or []), mutable)

    def __iter__(self):
        return iter(self.value)

    def __len__(self):
        return len(self.value)


# ---------------------------------------------------------------- tracker, context

class ObjectTracker:
    SUPPORTED_TYPES = ["context", "pd", "cq", "qp", "mr", "srq", "mw", "ah", "channel", "dm", "td", "xrcd"]

    def __init__(self):
        self.objs = {t: {} for t in self.SUPPORTED_TYPES}

    def create(self, typ, name, **attrs):
        if name in self.objs[typ] and self.objs[typ][name]["alive"]:
            raise ValueError("object %s of type %s already exists" % (name, typ))
        self.objs[typ][name] = dict(attrs, alive=True)

    def use(self, typ, name, **attrs):
        if name is None:
            return
        if name not in self.objs[typ]:
            raise ValueError("object %s of type %s does not exist" % (name, typ))
        self.objs[typ][name].update(attrs, used=True)

    def destroy(self, typ, name):
        if name in self.objs[typ]:
            self.objs[typ][name]["alive"] = False


class CodeGenContext:
    def __init__(self):
        self.tracker = ObjectTracker()
        self.contracts = ContractTable()
        self.variables = {}
        self.dev_list = "dev_list"
        self.ib_ctx = "ctx"              # the program's context, as the template names it
        self.alloc_variable("bufs", "char", None, "[16][1024]")

    def alloc_variable(self, name, type, init_value=None, array_size=None):
        if name in self.variables:
            if self.variables[name][0] != type:
                raise ValueError("variable %s is a %s, not a %s" % (name, self.variables[name][0], type))
            return False
        self.variables[name] = [type, init_value, array_size]
        return True

    def gen_var_name(self, prefix="var", sep="_"):
        i = 0
        while "%s%s%d" % (prefix, sep, i) in self.variables:
            i += 1
        return "%s%s%d" % (prefix, sep, i)

    def generate_variable_definitions_all(self):
        """as the framework writes them: globals, not static (one file)"""
        out = []
        for name, (typ, init, array) in self.variables.items():
            out.append("%s %s%s%s;" % (typ, name, array or "",
                                              " = %s" % init if init is not None else ""))
        return "\n".join(out)


class VerbCall:
    def get_contract(self):
        return self.CONTRACT


# ---------------------------------------------------------------- WR objects

def _assign(var, field, value):
    return "    %s.%s = %s;\n" % (var, field, _plain(value)) if _plain(value) is not None else ""


def _to_dict(obj, fields):
    d = {"type": type(obj).__name__}
    for f in fields:
        v = _plain(getattr(obj, f, None))
        if isinstance(v, list):
            v = [x.to_dict() for x in v]
        elif hasattr(v, "to_dict"):
            v = v.to_dict()
        d[f] = v
    return d


class IbvSge:
    FIELD_LIST = ["addr", "length", "lkey"]

    def __init__(self, addr=None, length=None, lkey=None, mr=None):
        self.addr = ConstantValue(addr) if addr is not None else None
        self.length = ConstantValue(length) if length is not None else None
        self.lkey = ConstantValue(lkey) if lkey is not None else None
        self.mr = ResourceValue(value=str(mr), resource_type="mr") if mr is not None else None
        if mr is not None:
            self.addr = ConstantValue("(uint64_t)(uintptr_t)%s->addr" % mr)
            self.lkey = ConstantValue("%s->lkey" % mr)
            if length is None:
                self.length = ConstantValue("(uint32_t)%s->length" % mr)

    def to_cxx(self, varname, ctx=None):
        return "".join(_assign(varname, f, getattr(self, f)) for f in self.FIELD_LIST)

    def to_dict(self):
        return _to_dict(self, self.FIELD_LIST + ["mr"])


class _WR:
    SCALARS = ()
    CTYPE = None

    def __init__(self, wr_id=None, next_wr=None, sg_list=None, num_sge=None, **scalars):
        self.wr_id = IntValue(wr_id) if wr_id is not None else None
        self.next = OptionalValue(next_wr)
        self.sg_list = OptionalValue(ListValue(sg_list or []))
        n = len(sg_list or [])
        self.num_sge = IntValue(max(n, num_sge) if num_sge is not None else n)
        for name in self.SCALARS:
            v = scalars.pop(name, None)
            setattr(self, name, ConstantValue(v) if v is not None else None)
        if scalars:
            raise TypeError("unexpected %s" % ", ".join(scalars))

    def to_dict(self):
        return _to_dict(self, ["wr_id", "next", "sg_list", "num_sge"] + list(self.SCALARS))

    def to_cxx(self, varname, ctx=None):
        if ctx:
            ctx.alloc_variable(varname, self.CTYPE)
        s = "    memset(&%s, 0, sizeof(%s));\n" % (varname, varname)
        s += _assign(varname, "wr_id", self.wr_id)
        sges = _plain(self.sg_list) or []
        if sges:
            arr = ctx.gen_var_name(prefix=varname + "_sg_list") if ctx else varname + "_sg_list"
            if ctx:
                ctx.alloc_variable(arr, "struct ibv_sge", None, "[%d]" % len(sges))
            for i, sge in enumerate(sges):
                s += sge.to_cxx("%s[%d]" % (arr, i), ctx)
            s += "    %s.sg_list = %s;\n" % (varname, arr)
        s += _assign(varname, "num_sge", self.num_sge)
        for name in self.SCALARS:
            s += _assign(varname, name, getattr(self, name))
        if self.next:
            s += self.next.to_cxx(varname + "_next", ctx)
            s += "    %s.next = &%s_next;\n" % (varname, varname)
        return s


class IbvRecvWR(_WR):
    CTYPE = "struct ibv_recv_wr"


class IbvSendWR(_WR):
    """The framework's send WR: the wr union's members are objects
    (rdma=IbvRdmaInfo, atomic=IbvAtomicInfo, ud=IbvUdInfo) whose to_cxx()
    fills a variable of their own, which the WR copies field by field
    (fields below) into wr.rdma, wr.atomic, wr.ud"""
    CTYPE = "struct ibv_send_wr"
    SCALARS = ("opcode", "send_flags", "imm_data")
    MEMBERS = {"rdma": ("remote_addr", "rkey"),
               "atomic": ("remote_addr", "compare_add", "swap", "rkey"),
               "ud": ("ah", "remote_qpn", "remote_qkey")}

    def __init__(self, wr_id=None, next_wr=None, sg_list=None, num_sge=None, rdma=None, atomic=None,
                 ud=None, **scalars):
        _WR.__init__(self, wr_id, next_wr, sg_list, num_sge, **scalars)
        self.rdma, self.atomic, self.ud = (OptionalValue(rdma), OptionalValue(atomic), OptionalValue(ud))

    def to_cxx(self, varname, ctx=None):
        s = _WR.to_cxx(self, varname, ctx)
        for member, fields in self.MEMBERS.items():
            obj = _plain(getattr(self, member))
            if obj is not None:
                s += obj.to_cxx("%s_%s" % (varname, member), ctx)
                s += "".join("    %s.wr.%s.%s = %s_%s.%s;\n" % (varname, member, f, varname, member, f)
                             for f in fields)
        return s


# ---------------------------------------------------------------- attribute structs

class _Attr:
    """The framework's Ibv*Attr classes as its scaffolds build them: keyword
    fields, objects named by string (send_cq="cq0"), nested attrs (cap=,
    attr=, ah_attr=, grh=); to_cxx() fills the C struct"""
    CTYPE = None
    FIELD_LIST = []
    RESOURCES = {}

    def __init__(self, **fields):
        for f in self.FIELD_LIST:
            setattr(self, f, None)
        for k, v in fields.items():
            if k not in self.FIELD_LIST:
                raise TypeError("%s() got an unexpected keyword argument '%s'" % (type(self).__name__, k))
            if k in self.RESOURCES and v is not None:
                v = ResourceValue(value=v, resource_type=self.RESOURCES[k])
            setattr(self, k, v)
        self.MUTABLE_FIELDS = list(self.FIELD_LIST)

    def _fields(self, prefix):
        s = ""
        for f in self.FIELD_LIST:
            v = getattr(self, f)
            if isinstance(v, _Attr):
                s += v._fields("%s.%s" % (prefix, f))
            elif v is not None:
                s += "    %s.%s = %s;\n" % (prefix, f, _plain(v))
        return s

    def to_cxx(self, varname, ctx=None):
        if ctx:
            ctx.alloc_variable(varname, self.CTYPE)
        return "    memset(&%s, 0, sizeof(%s));\n" % (varname, varname) + self._fields(varname)


class IbvQPCap(_Attr):
    CTYPE = "struct ibv_qp_cap"
    FIELD_LIST = ["max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge", "max_inline_data"]


class IbvQPInitAttr(_Attr):
    CTYPE = "struct ibv_qp_init_attr"
    FIELD_LIST = ["qp_context", "send_cq", "recv_cq", "srq", "cap", "qp_type", "sq_sig_all"]
    RESOURCES = {"send_cq": "cq", "recv_cq": "cq", "srq": "srq"}


class IbvSrqAttr(_Attr):
    CTYPE = "struct ibv_srq_attr"
    FIELD_LIST = ["max_wr", "max_sge", "srq_limit"]


class IbvSrqInitAttr(_Attr):
    CTYPE = "struct ibv_srq_init_attr"
    FIELD_LIST = ["srq_context", "attr"]


class IbvGlobalRoute(_Attr):
    CTYPE = "struct ibv_global_route"
    FIELD_LIST = ["dgid", "flow_label", "sgid_index", "hop_limit", "traffic_class"]


class IbvAHAttr(_Attr):
    CTYPE = "struct ibv_ah_attr"
    FIELD_LIST = ["grh", "dlid", "sl", "src_path_bits", "static_rate", "is_global", "port_num"]


class IbvAllocDmAttr(_Attr):
    CTYPE = "struct ibv_alloc_dm_attr"
    FIELD_LIST = ["length", "log_align_req", "comp_mask"]


class IbvQPAttr(_Attr):
    CTYPE = "struct ibv_qp_attr"
    FIELD_LIST = ["qp_state", "path_mtu", "qkey", "rq_psn", "sq_psn", "dest_qp_num", "qp_access_flags",
                  "ah_attr", "pkey_index", "max_rd_atomic", "max_dest_rd_atomic", "min_rnr_timer",
                  "port_num", "timeout", "retry_cnt", "rnr_retry"]


# ---------------------------------------------------------------- the generator's prelude

class GetDeviceList(VerbCall):
    """What the framework's generator puts before every program's calls
    (GetDeviceList, OpenDevice - a class of verbs.py, here the generated
    one - FreeDeviceList, QueryGID): the device list, and a GID of index 1
    the program stops at if it cannot read"""
    def __init__(self, dev_list="dev_list"):
        self.dev_list = dev_list

    def apply(self, ctx):
        ctx.alloc_variable(self.dev_list, "struct ibv_device **", "NULL")

    def generate_c(self, ctx):
        return ("    %s = ibv_get_device_list(NULL);\n    if (%s == NULL) {\n        return -1;\n    }\n"
                % (self.dev_list, self.dev_list))


class QueryPortAttr(VerbCall):
    def apply(self, ctx):
        ctx.alloc_variable("port_attr", "struct ibv_port_attr")

    def generate_c(self, ctx):
        return ("    if (ibv_query_port(%s, 1, &port_attr)) {\n        return -1;\n    }\n" % ctx.ib_ctx)


class FreeDeviceList(VerbCall):
    def apply(self, ctx):
        pass

    def generate_c(self, ctx):
        return "    ibv_free_device_list(%s);\n" % ctx.dev_list


class QueryGID(VerbCall):
    def __init__(self, port_num=1, index=1):
        self.port_num, self.index = port_num, index

    def apply(self, ctx):
        ctx.alloc_variable("gid", "union ibv_gid")
        ctx.gid_var = "gid"

    def generate_c(self, ctx):
        return ("    if (ibv_query_gid(%s, %d, %d, &gid)) {\n"
                "        fprintf(stderr, \"Failed to query GID\\n\");\n        return -1;\n    }\n"
                % (ctx.ib_ctx, self.port_num, self.index))


def render(verbs, open_device):
    """The framework's generator: its prelude, then the calls; every apply()
    before any generate_c(); returns (variables, body)"""
    ctx = CodeGenContext()
    verbs = [GetDeviceList("dev_list"), open_device("dev_list"), FreeDeviceList(), QueryPortAttr(),
             QueryGID()] + verbs
    for v in verbs:
        v.apply(ctx)
    body = "".join(v.generate_c(ctx) for v in verbs)
    return ctx.generate_variable_definitions_all(), body
