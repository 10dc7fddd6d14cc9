# SPDX-License-Identifier: BSD-3-Clause
"""Reading the verb contracts (contracts/*.json) and checking them.

A contract describes one verbs call; see contracts/schema.json for its
shape and contracts/README.md for what each part means. load() validates
every file against the schema and then checks what a schema cannot say:
every type and enum a contract uses is defined in it, the same struct is
defined the same way in every file, conditions and lengths name fields
that exist, ids are unique.
"""
import json
import os
import re

from . import schema as _schema

OBJECT_KINDS = ("context", "pd", "mr", "cq", "comp_channel", "srq", "qp", "ah", "mw", "dm", "td", "xrcd")


class ContractError(Exception):
    pass


def default_dir():
    """contracts/ beside python/ in a source tree, or where make install
    put it: beside python/ too by default, PREFIX/share/ucx-srq/contracts
    when the module went to PREFIX/lib/python3/dist-packages (configure
    --with-python-dir, Debian's python3-srq-contracts); $SRQ_CONTRACTS_DIR
    wins"""
    env = os.environ.get("SRQ_CONTRACTS_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "contracts"),
                 os.path.join(here, "..", "..", "..", "..", "share", "ucx-srq",
                              "contracts")):
        if os.path.isfile(os.path.join(cand, "schema.json")):
            return os.path.normpath(cand)
    return os.path.normpath(os.path.join(here, "..", "..", "contracts"))


def base_type(ctype):
    """'struct ibv_sge *' -> ('struct ibv_sge', 1): the type and its
    pointer depth"""
    t = ctype.strip()
    depth = 0
    while t.endswith("*"):
        t = t[:-1].strip()
        depth += 1
    return t, depth


class Contract:
    """One verb: the parsed JSON plus lookups"""

    def __init__(self, data, path=None):
        self.data = data
        self.path = path
        self.verb = data["verb"]
        self.params = data["signature"]["params"]
        self.returns = data["signature"]["returns"]
        self.types = data["types"]
        self.enums = data["enums"]
        self.failures = {f["id"]: f for f in data["failures"]}
        self.postconditions = {p["id"]: p for p in data["postconditions"]}

    def param(self, name):
        for p in self.params:
            if p["name"] == name:
                return p
        raise KeyError(name)

    def struct(self, ctype):
        """The definition of a struct/union type, or None for a scalar"""
        return self.types.get(base_type(ctype)[0])

    def failure(self, fid):
        return self.failures[fid]

    def consumed_objects(self):
        return [c["what"] for c in self.data["consumes"] if c["what"] in OBJECT_KINDS]

    def __repr__(self):
        return "<Contract %s>" % self.verb


def _walk_fields(fields, prefix=""):
    """(path, field) of every field, inline unions/structs included"""
    for f in fields:
        name = f["name"]
        path = prefix + name if name else prefix.rstrip(".") if prefix else ""
        yield (prefix + name if name else prefix), f
        if "fields" in f:
            sub = (prefix + name + ".") if name else prefix
            yield from _walk_fields(f["fields"], sub)


def _cond_fields(cond):
    """The sibling fields a condition reads"""
    if "all" in cond:
        for c in cond["all"]:
            yield from _cond_fields(c)
    elif "field" in cond:
        yield cond["field"]


def _lint_type(c, tname, tdef, errors):
    def member_names(fields):
        out = set()
        for f in fields:
            if f["name"]:
                out.add(f["name"])
            elif "fields" in f:   # anonymous: its members are ours
                out |= member_names(f["fields"])
        return out

    top = member_names(tdef["fields"])
    # an array's count is a member of the struct it is in: the top one, or
    # the inline struct that holds it (ibv_ops_wr's tm.add.num_sge)
    def counts(fields):
        names = member_names(fields)
        for f in fields:
            if "array_len" in f and f["array_len"] not in names | top:
                errors.append("%s: %s.%s: array_len %s is no field of %s" %
                              (c.verb, tname, f["name"], f["array_len"], tname))
            if "fields" in f:
                counts(f["fields"])

    counts(tdef["fields"])
    for _, f in _walk_fields(tdef["fields"]):
        bt, _depth = base_type(f["type"])
        if bt.startswith(("struct ibv_", "union ibv_")) and bt not in c.types \
                and f.get("value") not in ("skip", "object", "gid", "link", "hex", "ptr"):
            errors.append("%s: %s.%s uses %s, not defined in the file" % (c.verb, tname, f["name"], bt))
        if f.get("enum") and f["enum"] not in c.enums:
            errors.append("%s: %s.%s uses %s, not defined in the file" % (c.verb, tname, f["name"], f["enum"]))
        if f.get("value") in ("enum", "flags") and not f.get("enum"):
            errors.append("%s: %s.%s: enum value without an enum" % (c.verb, tname, f["name"]))
        if f.get("value") == "object" and not f.get("object"):
            errors.append("%s: %s.%s: object value without an object kind" % (c.verb, tname, f["name"]))
        if "key_field" in f:
            pass  # a sibling in the same (inline) struct; checked by the C generator
        if f["type"] in ("struct", "union") and "fields" not in f:
            errors.append("%s: %s.%s: inline %s without fields" % (c.verb, tname, f["name"], f["type"]))
        if "fields" not in f and "value" not in f and not (bt in c.types):
            errors.append("%s: %s.%s: a scalar needs a value kind" % (c.verb, tname, f["name"]))
        for sib in _cond_fields(f.get("when", {})):
            if sib not in top:
                errors.append("%s: %s.%s: condition reads %s, no field of %s" % (c.verb, tname, f["name"], sib, tname))
        for cond in _flat_conds(f.get("when", {})):
            _lint_cond_values(c, cond, errors, "%s.%s" % (tname, f["name"]))
            if "param" in cond:
                try:
                    c.param(cond["param"])
                except KeyError:
                    # a struct shared by several verbs may look at a parameter
                    # only some of them have: then the condition is false
                    pass


def _flat_conds(cond):
    if "all" in cond:
        for s in cond["all"]:
            yield from _flat_conds(s)
    elif cond:
        yield cond


def _lint_cond_values(c, cond, errors, where):
    for v in cond.get("in", []) + ([cond["has"]] if "has" in cond else []):
        if not re.match(r"^IBV_[A-Z0-9_]+$", v):
            errors.append("%s: %s: condition value %r is not an IBV_ name" % (c.verb, where, v))


def lint(c):
    """Consistency a schema cannot express; returns a list of problems"""
    errors = []
    names = [p["name"] for p in c.params]
    if len(set(names)) != len(names):
        errors.append("%s: parameter names repeat" % c.verb)
    for p in c.params:
        bt, depth = base_type(p["type"])
        if p.get("value") is None and bt not in c.types:
            errors.append("%s: parameter %s: a scalar needs a value kind" % (c.verb, p["name"]))
        if bt.startswith(("struct ibv_", "union ibv_")) and p.get("value") is None and bt not in c.types:
            errors.append("%s: parameter %s uses %s, not defined" % (c.verb, p["name"], bt))
        if p.get("enum") and p["enum"] not in c.enums:
            errors.append("%s: parameter %s uses %s, not defined" % (c.verb, p["name"], p["enum"]))
        if p.get("value") == "chain_ref" and p.get("chain") not in names:
            errors.append("%s: parameter %s: chain %s is no parameter" % (c.verb, p["name"], p.get("chain")))
        for key in ("capacity", "size_param"):
            if key in p and p[key] not in names:
                errors.append("%s: parameter %s: %s %s is no parameter" % (c.verb, p["name"], key, p[key]))
        if "array_len" in p and p["array_len"] != "ret" and p["array_len"] not in names:
            errors.append("%s: parameter %s: array_len %s is no parameter" % (c.verb, p["name"], p["array_len"]))
    for tname, tdef in c.types.items():
        _lint_type(c, tname, tdef, errors)
    ids = [f["id"] for f in c.data["failures"]]
    if len(set(ids)) != len(ids):
        errors.append("%s: failure ids repeat" % c.verb)
    pids = [p["id"] for p in c.data["postconditions"]]
    if len(set(pids)) != len(pids):
        errors.append("%s: postcondition ids repeat" % c.verb)
    for r in c.data["requires"]:
        if r.get("failure") and r["failure"] not in c.failures:
            errors.append("%s: requirement on %s names failure %s, not listed" % (c.verb, r["param"], r["failure"]))
        root = re.split(r"[.\[]", r["param"])[0]
        if root not in names:
            errors.append("%s: requirement on %s: no such parameter" % (c.verb, r["param"]))
    rv = c.returns
    if rv["value"] == "object" and not rv.get("object"):
        errors.append("%s: returns an object without a kind" % c.verb)
    return errors


def lint_all(contracts):
    """Problems across files: one definition per struct and enum"""
    errors = []
    seen = {}
    for c in contracts.values():
        for kind, table in (("type", c.types), ("enum", c.enums)):
            for name, d in table.items():
                key = (kind, name)
                if key in seen and seen[key][1] != d:
                    errors.append("%s %s differs between %s and %s" % (kind, name, seen[key][0], c.verb))
                seen.setdefault(key, (c.verb, d))
    return errors


def load_schema(directory=None):
    directory = directory or default_dir()
    with open(os.path.join(directory, "schema.json")) as f:
        return json.load(f)


def load(directory=None, check=True):
    """{verb: Contract} of every contract in @directory; raises
    ContractError (listing every problem) unless they all validate"""
    directory = directory or default_dir()
    sch = load_schema(directory)
    out = {}
    errors = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name == "schema.json":
            continue
        path = os.path.join(directory, name)
        with open(path) as f:
            try:
                data = json.load(f)
            except ValueError as e:
                errors.append("%s: %s" % (name, e))
                continue
        try:
            _schema.validate(sch, data)
        except _schema.SchemaError as e:
            errors.append("%s: %s" % (name, e))
            continue
        if data["verb"] + ".json" != name:
            errors.append("%s: holds %s (one verb per file, named after it)" % (name, data["verb"]))
        c = Contract(data, path)
        if check:
            errors.extend(lint(c))
        out[c.verb] = c
    if check:
        errors.extend(lint_all(out))
    if errors:
        raise ContractError("\n".join(errors))
    return out
