"""Soundness of the JSON Schema front end, judged by the ``jsonschema`` validator.

Random small schemas (the keywords stackmask compiles, mixed with ones it refuses) and
random instances over the same few names and values: whenever a schema compiles, every
instance the compiled grammar accepts must be valid by JSON Schema 2020-12. The converse is
not checked: the documented spelling rules (property order, no exponent under bounds)
narrow what is accepted. A refusal is fine; a silently widened keyword is a failure.
"""

from __future__ import annotations

import json
import os
import random

import pytest

import stackmask

jsonschema = pytest.importorskip("jsonschema")

NAMES = ["a", "b", "c"]
STRINGS = ["", "a", "b", "ab", "abc", "ba1", "é", "a\nb", '"', "2024-01-31", "2024-13-01", "12"]
NUMBERS = [-1, 0, 1, 1.5, 2, 10, 1.0, -0.5, 100, 2.25]
PATTERNS = ["^a", "b$", "^[ab]*$", "1", "^.{2}$", "^\\d+$", "é", "^[^a]"]
FORMATS = ["date", "email", "ipv4", "uuid", "unknown-format"]
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


def scalar(r: random.Random):
    return r.choice([None, True, False, r.choice(NUMBERS), r.choice(STRINGS)])


def gen_schema(r: random.Random, depth: int):
    if depth <= 0 or r.random() < 0.2:
        return r.choice(
            [
                {},
                True,
                {"type": r.choice(TYPES)},
                {"type": r.sample(TYPES, 2)},
                {"const": scalar(r)},
                {"enum": [scalar(r) for _ in range(r.randint(1, 3))]},
                {"$ref": "#/$defs/x"},
                {"$ref": "#/$defs/list"},
            ]
        )
    kind = r.choice(["string", "number", "object", "array", "anyOf", "oneOf", "allOf", "not", "mixed"])
    d = depth - 1
    if kind == "string":
        s = {"type": "string"}
        if r.random() < 0.5:
            s["minLength"] = r.randint(0, 2)
        if r.random() < 0.5:
            s["maxLength"] = r.randint(0, 3)
        # Pattern, format and lengths together compile as an intersection.
        if r.random() < 0.4:
            s["pattern"] = r.choice(PATTERNS)
        if r.random() < 0.25:
            s["format"] = r.choice(FORMATS)
        return s
    if kind == "number":
        s = {"type": r.choice(["integer", "number"])}
        for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]:
            if r.random() < 0.3:
                s[k] = r.choice([-1, 0, 1, 2])
        if r.random() < 0.2:
            s["multipleOf"] = r.choice([1, 2])
        return s
    if kind == "object":
        s: dict = {}
        if r.random() < 0.7:
            s["type"] = "object"
        names = sorted(r.sample(NAMES, r.randint(0, 3)))
        if names:
            s["properties"] = {n: gen_schema(r, d) for n in names}
        if r.random() < 0.6:
            s["required"] = sorted(r.sample(NAMES, r.randint(1, 2)))
        if r.random() < 0.5:
            s["additionalProperties"] = r.choice([False, True, gen_schema(r, d)])
        if r.random() < 0.15:
            s["minProperties"] = r.randint(0, 2)
        if r.random() < 0.15:
            s["patternProperties"] = {r.choice(["^[ab]", "c", "^d$"]): gen_schema(r, d)}
        if r.random() < 0.05:
            s["dependentRequired"] = {"a": ["b"]}
        if r.random() < 0.05:
            s["propertyNames"] = {"maxLength": 1}
        return s
    if kind == "array":
        s = {"type": "array"}
        if r.random() < 0.3:
            s["prefixItems"] = [gen_schema(r, d) for _ in range(r.randint(1, 2))]
        if r.random() < 0.7:
            s["items"] = gen_schema(r, d) if r.random() < 0.9 else False
        if r.random() < 0.4:
            s["minItems"] = r.randint(0, 2)
        if r.random() < 0.4:
            s["maxItems"] = r.randint(0, 3)
        if r.random() < 0.1:
            s["uniqueItems"] = True
        return s
    if kind in ("anyOf", "oneOf", "allOf"):
        return {kind: [gen_schema(r, d) for _ in range(r.randint(1, 3))]}
    if kind == "not":
        return {"not": gen_schema(r, d)}
    # A node with several keywords at once, combinators included.
    s = gen_schema(r, d)
    s = dict(s) if isinstance(s, dict) else {}
    s[r.choice(["anyOf", "oneOf", "allOf"])] = [gen_schema(r, d) for _ in range(2)]
    if r.random() < 0.3:
        s["not"] = gen_schema(r, d)
    return s


def gen_root(r: random.Random, depth: int):
    """A schema with local definitions, one of them recursive, for `$ref` leaves."""
    root = gen_schema(r, depth)
    root = dict(root) if isinstance(root, dict) else ({} if root else {"not": {}})
    root["$defs"] = {
        "x": gen_schema(r, 1),
        "list": {"type": ["array", "null"], "items": {"$ref": "#/$defs/list"}, "maxItems": 2},
    }
    return root


def gen_instance(r: random.Random, depth: int):
    x = r.random()
    if depth <= 0 or x < 0.45:
        return scalar(r)
    if x < 0.7:
        return [gen_instance(r, depth - 1) for _ in range(r.randint(0, 3))]
    # Keys in name order, the order the generated schemas declare them in.
    keys = sorted(r.sample(NAMES + ["d"], r.randint(0, 3)))
    return {k: gen_instance(r, depth - 1) for k in keys}


# More cases (and another seed) for a longer sweep than CI's.
CASES = int(os.environ.get("STACKMASK_SOUNDNESS_CASES", "300"))
SEED = int(os.environ.get("STACKMASK_SOUNDNESS_SEED", "20261122"))


def test_accepted_instances_are_valid(gpt2, compiler):
    r = random.Random(SEED)
    compiled_count, accepted_count, failures = 0, 0, []
    for _ in range(CASES):
        schema = gen_root(r, 3)
        text = json.dumps(schema)
        try:
            g = compiler.compile_json_schema(text)
        except stackmask.StackmaskError:
            continue  # refused, unsatisfiable or too large: never a silent widening
        compiled_count += 1
        validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        for _ in range(40):
            inst = gen_instance(r, 3)
            doc = json.dumps(inst)
            m = stackmask.GrammarMatcher(g)
            if m.accept_tokens(gpt2.encode(doc)) and m.is_accepting():
                accepted_count += 1
                try:
                    valid = validator.is_valid(inst)
                except RecursionError:
                    # A definition that only references itself (x: {anyOf: [{$ref: x}]})
                    # has no meaning; the validator recurses forever on it.
                    continue
                if not valid:
                    failures.append(f"schema {text}\n  accepted invalid {doc}")
    assert not failures, "\n".join(failures[:20])
    # The generator must keep exercising the front end, not only its refusals.
    assert compiled_count >= CASES // 3, compiled_count
    assert accepted_count >= CASES * 3, accepted_count
