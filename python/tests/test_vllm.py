"""The vLLM shim against a fake of vLLM's backend interface (vLLM needs torch)."""

from __future__ import annotations

import numpy as np
import pytest

import stackmask
from conftest import GPT2, SCHEMA, VALID
from stackmask.integrations.vllm import StackmaskBackend, StructuredOutputOptions


class FakeBackendTokenizer:
    def __init__(self, text: str):
        self.text = text

    def to_str(self) -> str:
        return self.text


class FakeHfTokenizer:
    """What vLLM hands a backend: a fast tokenizer with its tokenizer.json and EOS."""

    def __init__(self):
        self.backend_tokenizer = FakeBackendTokenizer(GPT2.read_text())
        self.eos_token_id = 50256


@pytest.fixture(scope="module")
def backend(gpt2):
    return StackmaskBackend(vllm_config=None, tokenizer=FakeHfTokenizer(), vocab_size=50304)


def decode_loop(backend, grammar, ids):
    """What vLLM's scheduler and sampler do per step: fill, check, accept."""
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.shape == (4, (50304 + 31) // 32) and bitmask.dtype == np.int32
    for t in ids:
        grammar.fill_bitmask(bitmask, 2)
        row = stackmask.bitmask_to_token_ids(bitmask[2])
        assert t in row and row.max() < 50257
        assert grammar.accept_tokens("req-1", [t])


def test_json_schema_request(backend, gpt2):
    g = backend.compile_grammar(StructuredOutputOptions.JSON, SCHEMA)
    ids = gpt2.encode(VALID)
    decode_loop(backend, g, ids)
    assert g.num_processed_tokens == len(ids)
    assert not g.is_terminated()
    assert g.accept_tokens("req-1", [50256])
    assert g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()
    g.reset()
    assert g.num_processed_tokens == 0


def test_speculative_validation_and_rollback(backend, gpt2):
    g = backend.compile_grammar(StructuredOutputOptions.JSON_OBJECT, "")
    ids = gpt2.encode('{"a": [1, 2]}')
    draft = ids[:4] + gpt2.encode("}}}")
    accepted = g.validate_tokens(draft)
    assert accepted == draft[: len(accepted)] and 4 <= len(accepted) < len(draft)
    assert g.num_processed_tokens == 0
    assert g.accept_tokens("r", accepted)
    g.rollback(len(accepted) - 4)
    decode_loop(backend, g, ids[4:])


def test_grammar_and_regex_requests(backend, gpt2):
    lark = backend.compile_grammar(StructuredOutputOptions.GRAMMAR, 'start: "yes" | "no"')
    gbnf = backend.compile_grammar(StructuredOutputOptions.GRAMMAR, 'root ::= "yes" | "no"')
    regex = backend.compile_grammar(StructuredOutputOptions.REGEX, "(yes|no)")
    for g in (lark, gbnf, regex):
        decode_loop(backend, g, gpt2.encode("yes"))
        assert g.accept_tokens("r", [50256]) and g.is_terminated()
    with pytest.raises(ValueError, match="CHOICE"):
        backend.compile_grammar(StructuredOutputOptions.CHOICE, '["a"]')
    backend.destroy()


def test_structural_tag_request(backend, gpt2):
    # vLLM passes the request's structural tag as JSON text: structures and triggers.
    spec = (
        '{"structures": [{"begin": "<f=add>", "schema": {"type": "integer"}, "end": "</f>"}],'
        ' "triggers": ["<f="]}'
    )
    g = backend.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, spec)
    decode_loop(backend, g, gpt2.encode("Sum: <f=add>42</f> ok"))
    assert g.accept_tokens("r", [50256]) and g.is_terminated()
    bad = backend.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, spec)
    assert not bad.accept_tokens("r", gpt2.encode("<f=sub>"))


def test_jump_forward_string(backend, gpt2):
    g = backend.compile_grammar(StructuredOutputOptions.GRAMMAR, 'start: "answer: " ("yes" | "no")')
    assert g.find_jump_string() == "answer: "
    assert g.accept_tokens("r", gpt2.encode("answer: "))
    assert g.find_jump_string() is None


def test_request_spec_takes_structural_tags_as_json_or_text():
    import json
    from types import SimpleNamespace

    from stackmask.integrations.vllm import _request_spec

    tag = {"structures": [{"begin": "<f>", "schema": {}, "end": "</f>"}], "triggers": ["<f>"]}
    for given in (tag, json.dumps(tag)):
        params = SimpleNamespace(extra_args={"stackmask": {"structural_tag": given}})
        kind, text = _request_spec(params)
        assert kind == "structural_tag" and json.loads(text) == tag
    with pytest.raises(ValueError, match="must be one of"):
        _request_spec(SimpleNamespace(extra_args={"stackmask": {"structural_tags": tag}}))
