"""Compiles stop when asked: a CompileCancel set before or from another thread, and a
time limit, each raising StackmaskError with its `kind`; neither changes a compile it
does not stop."""

from __future__ import annotations

import json
import threading
import time

import pytest

import stackmask

from conftest import SHARED

SCHEMA = '{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}'


def test_a_set_token_or_a_passed_limit_raises_its_kind(gpt2):
    compiler = stackmask.GrammarCompiler(gpt2)
    token = stackmask.CompileCancel()
    token.cancel()
    assert token.cancelled
    with pytest.raises(stackmask.StackmaskError) as e:
        compiler.compile_json_schema(SCHEMA, cancel=token)
    assert e.value.kind == "cancelled"
    with pytest.raises(stackmask.StackmaskError) as e:
        compiler.compile_lark('start: "a"+', cancel=token)
    assert e.value.kind == "cancelled"
    with pytest.raises(stackmask.StackmaskError) as e:
        compiler.compile_json_schema(SCHEMA, time_limit_ms=0)
    assert e.value.kind == "time_limit"
    with pytest.raises(stackmask.StackmaskError) as e:
        compiler.compile_regex("[a-z]+", time_limit_ms=0)
    assert e.value.kind == "time_limit"
    token.reset()
    plain = compiler.compile_json_schema(SCHEMA).serialize()
    bounded = compiler.compile_json_schema(SCHEMA, cancel=token, time_limit_ms=3_600_000)
    assert bounded.serialize() == plain


def test_another_thread_cancels_a_large_compile(gpt2):
    path = SHARED / "maskbench" / "Kubernetes---kb_1161_Normalized.json"
    if not path.exists():
        pytest.skip(f"needs {path}")
    schema = json.dumps(json.loads(path.read_text())["schema"])
    compiler = stackmask.GrammarCompiler(gpt2)
    token = stackmask.CompileCancel()
    set_at = []

    def cancel():
        token.cancel()
        set_at.append(time.monotonic())

    timer = threading.Timer(0.05, cancel)
    timer.start()
    # The compile releases the GIL, so the timer's thread runs while it compiles.
    with pytest.raises(stackmask.StackmaskError) as e:
        compiler.compile_json_schema(schema, cancel=token)
    returned = time.monotonic()
    timer.join()
    assert e.value.kind == "cancelled"
    print(f"returned {1e3 * (returned - set_at[0]):.1f} ms after cancel()")
