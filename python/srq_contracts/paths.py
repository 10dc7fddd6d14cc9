# SPDX-License-Identifier: BSD-3-Clause
"""Paths into a verb's contract: a trace key such as wr[0].sg_list[1].lkey
resolved to the C field it names, and set or read in a tree of values
(calls.py builds its calls with these)."""
from . import trace as _trace
from .contracts import base_type


class _Leaf:
    """What the contract says about the value at a path"""

    def __init__(self, spec, ctype):
        self.spec = spec
        self.ctype = ctype
        self.kind = spec.get("value")


def ctype_bits(ctype):
    """The width of a C type of the contracts, in bits (pointers and
    unknown types: 64)"""
    t = ctype.replace("const ", "").strip()
    if "*" in t:
        return 64
    for bits, names in ((8, ("uint8_t", "int8_t", "char", "unsigned char")),
                        (16, ("uint16_t", "int16_t", "__be16")),
                        (32, ("uint32_t", "int32_t", "__be32", "int", "unsigned",
                              "unsigned int"))):
        if t in names or (bits == 32 and t.startswith("enum ")):
            return bits
    return 64


def _find_field(fields, name):
    """A field by name; anonymous unions/structs are looked through"""
    for f in fields:
        if f["name"] == name:
            return f
        if not f["name"] and "fields" in f:
            sub = _find_field(f["fields"], name)
            if sub is not None:
                return sub
    return None


def resolve(contract, path):
    """The _Leaf a key path names, or TraceError"""
    name, idx = path[0]
    try:
        p = contract.param(name)
    except KeyError:
        raise _trace.TraceError("%s has no parameter %r" % (contract.verb, name))
    indexed = p.get("list") == "next" or "array_len" in p
    if indexed != (idx is not None):
        raise _trace.TraceError("%s: %s %s an index" % (contract.verb, name,
                                "needs" if indexed else "takes no"))
    if p.get("value") is not None:
        if len(path) != 1:
            raise _trace.TraceError("%s: %s is a scalar" % (contract.verb, name))
        return _Leaf(p, p["type"])
    tname = base_type(p["type"])[0]
    fields = contract.types[tname]["fields"]
    for seg, idx in path[1:]:
        f = _find_field(fields, seg)
        if f is None:
            raise _trace.TraceError("%s: no field %r in %s" % (contract.verb, seg, tname))
        if ("array_len" in f) != (idx is not None):
            raise _trace.TraceError("%s: %s %s an index" % (contract.verb, seg,
                                    "needs" if "array_len" in f else "takes no"))
        if "fields" in f:
            fields, tname = f["fields"], "%s.%s" % (tname, seg)
            continue
        bt = base_type(f["type"])[0]
        if f.get("value") is None and bt in contract.types:
            fields, tname = contract.types[bt]["fields"], bt
            continue
        if seg != path[-1][0] or f.get("value") is None:
            raise _trace.TraceError("%s: %s is a scalar" % (contract.verb, seg))
        return _Leaf(f, f["type"])
    raise _trace.TraceError("%s: %s names a struct, not a value" %
                            (contract.verb, ".".join(s for s, _ in path)))


def _tree_set(tree, path, value):
    node = tree
    for i, (seg, idx) in enumerate(path):
        last = i == len(path) - 1
        if idx is None:
            if last:
                node[seg] = value
            else:
                node = node.setdefault(seg, {})
        else:
            lst = node.setdefault(seg, {})
            if last:
                lst[idx] = value
            else:
                node = lst.setdefault(idx, {})


def _tree_get(tree, path):
    node = tree
    for seg, idx in path:
        node = node[seg]
        if idx is not None:
            node = node[idx]
    return node
