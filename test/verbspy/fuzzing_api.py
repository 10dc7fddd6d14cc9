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


class ResourceValue(Value):
    def __init__(self, value=None, resource_type=None, mutable=True):
        if not resource_type:
            raise ValueError("a ResourceValue needs a resource type")
        Value.__init__(self, value, mutable)
        self.resource_type = resource_type


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
        out = []
        for name, (typ, init, array) in self.variables.items():
            out.append("static %s %s%s%s;" % (typ, name, array or "",
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
    CTYPE = "struct ibv_send_wr"
    SCALARS = ("opcode", "send_flags", "imm_data")
