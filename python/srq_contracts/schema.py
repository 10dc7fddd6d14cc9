# SPDX-License-Identifier: BSD-3-Clause
"""A JSON Schema validator for the subset of draft 2020-12 that
contracts/schema.json uses (python3 stdlib only).

Any keyword outside that subset is an error, not silently ignored: the
schema cannot use a feature this validator would skip.
"""
import re

_ANNOTATIONS = {"$schema", "$id", "title", "description"}
_TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool,
    "null": type(None),
}


class SchemaError(Exception):
    """The instance does not validate: .path says where."""

    def __init__(self, path, message):
        super().__init__("%s: %s" % (path or "/", message))
        self.path = path


def _is_type(value, name):
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


class Validator:
    def __init__(self, schema):
        self.root = schema

    def validate(self, instance):
        self._check(self.root, instance, "")

    def _ref(self, ref):
        if not ref.startswith("#/"):
            raise SchemaError("", "only local $ref is supported: %s" % ref)
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def _check(self, schema, inst, path):
        if schema is True:
            return
        if schema is False:
            raise SchemaError(path, "no value is allowed here")
        for key, arg in schema.items():
            if key in _ANNOTATIONS or key == "$defs" or key in ("then",):
                continue
            handler = getattr(self, "_kw_" + key.lstrip("$"), None)
            if handler is None:
                raise SchemaError(path, "schema keyword %r is not supported" % key)
            handler(arg, inst, path, schema)

    # ---- keywords
    def _kw_ref(self, ref, inst, path, schema):
        self._check(self._ref(ref), inst, path)

    def _kw_type(self, name, inst, path, schema):
        names = name if isinstance(name, list) else [name]
        if not any(_is_type(inst, n) for n in names):
            raise SchemaError(path, "expected %s, got %s" % (name, type(inst).__name__))

    def _kw_enum(self, values, inst, path, schema):
        if inst not in values:
            raise SchemaError(path, "%r is not one of %s" % (inst, values))

    def _kw_const(self, value, inst, path, schema):
        if inst != value:
            raise SchemaError(path, "%r is not %r" % (inst, value))

    def _kw_pattern(self, pattern, inst, path, schema):
        if isinstance(inst, str) and not re.search(pattern, inst):
            raise SchemaError(path, "%r does not match %s" % (inst, pattern))

    def _kw_minLength(self, n, inst, path, schema):
        if isinstance(inst, str) and len(inst) < n:
            raise SchemaError(path, "shorter than %d" % n)

    def _kw_minItems(self, n, inst, path, schema):
        if isinstance(inst, list) and len(inst) < n:
            raise SchemaError(path, "fewer than %d items" % n)

    def _kw_minProperties(self, n, inst, path, schema):
        if isinstance(inst, dict) and len(inst) < n:
            raise SchemaError(path, "fewer than %d properties" % n)

    def _kw_items(self, sub, inst, path, schema):
        if isinstance(inst, list):
            for i, item in enumerate(inst):
                self._check(sub, item, "%s/%d" % (path, i))

    def _kw_required(self, names, inst, path, schema):
        if isinstance(inst, dict):
            for n in names:
                if n not in inst:
                    raise SchemaError(path, "%r is required" % n)

    def _kw_properties(self, props, inst, path, schema):
        if isinstance(inst, dict):
            for k, sub in props.items():
                if k in inst:
                    self._check(sub, inst[k], "%s/%s" % (path, k))

    def _kw_patternProperties(self, pats, inst, path, schema):
        if isinstance(inst, dict):
            for k, v in inst.items():
                for pat, sub in pats.items():
                    if re.search(pat, k):
                        self._check(sub, v, "%s/%s" % (path, k))

    def _kw_additionalProperties(self, sub, inst, path, schema):
        if not isinstance(inst, dict):
            return
        known = set(schema.get("properties", {}))
        pats = list(schema.get("patternProperties", {}))
        for k, v in inst.items():
            if k in known or any(re.search(p, k) for p in pats):
                continue
            if sub is False:
                raise SchemaError(path, "property %r is not allowed" % k)
            self._check(sub, v, "%s/%s" % (path, k))

    def _kw_allOf(self, subs, inst, path, schema):
        for sub in subs:
            self._check(sub, inst, path)

    def _kw_if(self, sub, inst, path, schema):
        try:
            self._check(sub, inst, path)
        except SchemaError:
            return
        if "then" in schema:
            self._check(schema["then"], inst, path)


def validate(schema, instance):
    """Raise SchemaError unless @instance validates against @schema."""
    Validator(schema).validate(instance)
