# SPDX-License-Identifier: BSD-3-Clause
"""Trace lines: one verbs call per line, `verb key=value ...`.

    ibv_post_srq_recv srq=srq0 wr[0].wr_id=0x10 wr[0].sg_list[0].addr=buf0+64 \
        wr[0].sg_list[0].length=64 wr[0].sg_list[0].lkey=mr0.lkey wr[0].num_sge=1 ret=0

Keys are paths into the verb's parameters as its contract gives them
(`param.field[index].field`); `out.` prefixes a value the call returned
through a parameter; `ret` is the return value (an errno name for verbs
that return one, an object name for verbs that create one), `errno` the
errno of a failed create, `repeat` how many identical calls one line
stands for (polls that found nothing). Lines starting with '#' are
comments.

Values: numbers (decimal, 0x hex), IBV_* names (flags joined by |),
objects named by kind and creation order (ctx0 pd0 mr0 cq0 ch0 srq0 qp0
ah0), NULL, and references the replay resolves on its own device:
bufN+OFF (an address inside registered buffer N), mrN.lkey / mrN.rkey,
qpN.qp_num, ctxN.portP.lid, ctxN.portP.gid, gid:<32 hex digits>, and
wr[I] (a WR of the call's list, for *bad_wr).
"""
import re

META_KEYS = ("ret", "errno", "repeat")
OBJECT_PREFIX = {"context": "ctx", "pd": "pd", "mr": "mr", "cq": "cq",
                 "comp_channel": "ch", "srq": "srq", "qp": "qp", "ah": "ah",
                 "mw": "mw", "dm": "dm", "td": "td", "xrcd": "xrcd"}
PREFIX_KIND = {v: k for k, v in OBJECT_PREFIX.items()}

_SEG = re.compile(r"^([a-z_][a-z0-9_]*)(?:\[(\d+)\])?$")
_OBJ = re.compile(r"^(ctx|pd|mr|cq|ch|srq|qp|ah|dm|td|xrcd)(\d+)$")


class TraceError(Exception):
    pass


def read_lines(path):
    """The lines of the trace file @path, as text. A trace is printable
    ASCII (the tracer writes nothing else); anything else is refused with
    its line number, before it reaches a C comment or string"""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("ascii")
            except UnicodeDecodeError:
                raise TraceError("%s:%d: not ASCII text" % (path, lineno))
            if re.search(r"[^\t\n\r\x20-\x7e]", line):
                raise TraceError("%s:%d: a control character" % (path, lineno))
            yield line


def parse_path(key):
    """'wr[0].sg_list[1].lkey' -> [('wr', 0), ('sg_list', 1), ('lkey', None)]"""
    out = []
    for seg in key.split("."):
        m = _SEG.match(seg)
        if not m:
            raise TraceError("bad key segment %r in %r" % (seg, key))
        out.append((m.group(1), int(m.group(2)) if m.group(2) is not None else None))
    return out


def split_line(line):
    """'verb k=v k=v' -> (verb, [(k, v), ...]); None for blank and comments"""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    parts = line.split()
    verb = parts[0]
    if not re.match(r"^ibv_[a-z_]+$", verb):
        raise TraceError("not a verb: %r" % verb)
    items = []
    for p in parts[1:]:
        if "=" not in p:
            raise TraceError("%s: %r is not key=value" % (verb, p))
        k, v = p.split("=", 1)
        items.append((k, v))
    return verb, items


def object_kind(value):
    """'qp3' -> 'qp'; None if @value names no object"""
    m = _OBJ.match(value)
    return PREFIX_KIND[m.group(1)] if m else None


def object_name(kind, index):
    return "%s%d" % (OBJECT_PREFIX[kind], index)


def is_number(value):
    return re.match(r"^-?(0x[0-9a-fA-F]+|\d+)$", value) is not None


def to_int(value):
    return int(value, 0) if not value.startswith("-") else -int(value[1:], 0)


def check_number(value, bits):
    """Raise TraceError unless the number @value fits in @bits bits, as a
    signed or an unsigned value (a C compiler would otherwise cut it, or
    take it for a wider type, without a word)"""
    n = to_int(value)
    if not -(1 << (bits - 1)) <= n < (1 << bits):
        raise TraceError("%s does not fit in %d bits" % (value, bits))


def check_value(kind, value, enum=None, object_kind_=None):
    """Raise TraceError unless @value is a well-formed value of @kind"""
    ok = True
    if value == "NULL" and kind in ("object", "ptr", "buffer", "addr", "callback"):
        return
    if kind in ("int", "uint", "hex"):
        ok = is_number(value)
    elif kind in ("enum", "flags"):
        names = value.split("|") if kind == "flags" else [value]
        for n in names:
            if is_number(n):
                continue
            if enum is not None and n not in enum["values"]:
                raise TraceError("%r is not a value of this enum" % n)
    elif kind == "object":
        ok = object_kind(value) == object_kind_
    elif kind in ("addr", "buffer"):
        ok = is_number(value) or re.match(r"^buf\d+(\+(0x[0-9a-f]+|\d+))?$", value) is not None
    elif kind in ("lkey", "rkey"):
        ok = is_number(value) or re.match(r"^mr\d+\.[lr]key$", value) is not None
    elif kind == "qpn":
        ok = is_number(value) or re.match(r"^qp\d+\.qp_num$", value) is not None
    elif kind == "lid":
        ok = is_number(value) or re.match(r"^ctx\d+\.port\d+\.lid$", value) is not None
    elif kind == "gid":
        ok = re.match(r"^(ctx\d+\.port\d+\.gid|gid:[0-9a-f]{32})$", value) is not None
    elif kind == "chain_ref":
        ok = re.match(r"^[a-z_]+\[\d+\]$", value) is not None or value == "NULL"
    elif kind == "ptr":
        ok = is_number(value)
    elif kind == "callback":
        ok = value == "given"
    elif kind == "device":
        ok = re.match(r"^[A-Za-z0-9_.:-]+$", value) is not None
    if not ok:
        raise TraceError("%r is not a %s value" % (value, kind))
