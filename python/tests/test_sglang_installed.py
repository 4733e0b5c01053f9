"""stackmask as a grammar backend inside an installed SGLang (CPU tensors): registered
through SGLang's own registry, compiled through its backend base class's dispatch and
cache, masks applied by the CPU kernel SGLang's own backend uses. Skipped where SGLang's
grammar-backend module does not import (`.ci/vllm-env` installs it beside vLLM)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "sglang.srt.constrained.base_grammar_backend",
    reason="SGLang's grammar backend is not importable in this environment",
)

import torch  # noqa: E402
from sglang.srt.constrained.base_grammar_backend import (  # noqa: E402
    GRAMMAR_BACKEND_REGISTRY,
    InvalidGrammarObject,
)
from transformers import PreTrainedTokenizerFast  # noqa: E402

import stackmask  # noqa: E402
from conftest import GPT2, SCHEMA, VALID, allowed  # noqa: E402
from stackmask.integrations.sglang import StackmaskGrammar, register  # noqa: E402

PADDED = 50304  # a model's padded vocabulary (GPT-2 has 50,257 ids)


@pytest.fixture(scope="module")
def backend():
    register()
    hf = PreTrainedTokenizerFast(tokenizer_file=str(GPT2))
    # As SGLang's `create_grammar_backend` calls a registered backend.
    return GRAMMAR_BACKEND_REGISTRY["stackmask"](None, hf, PADDED, {50256})


def grammar_for(backend, key):
    """The request grammar SGLang's base class makes for `key`: dispatched on its
    executor the first time, copied from its cache after."""
    value, hit = backend.get_cached_or_future_value(key, False)
    grammar = value if hit else value.result()
    if not hit and not isinstance(grammar, InvalidGrammarObject):
        backend.set_cache(key, grammar.copy())
    return grammar


def test_requests_decode_with_masks_equal_to_the_matchers(backend, gpt2):
    """Each key kind decodes a document token by token: at every step the row SGLang
    gets allows exactly what a stackmask matcher allows (padding never), and after
    SGLang's apply the logits of every other token are -inf."""
    compiler = stackmask.GrammarCompiler(gpt2)
    lark = 'start: "x" NUM+\nNUM: /[0-9]/\n'
    gbnf = 'root ::= "x" [0-9]+\n'
    tag = (
        '{"structures": [{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}],'
        ' "triggers": ["<f>"]}'
    )
    cases = [
        (("json", SCHEMA), compiler.compile_json_schema(SCHEMA), VALID),
        (("json", "$$ANY$$"), compiler.compile_builtin_json_grammar(), '[1, {"a": null}]'),
        (("regex", "[a-c]+@[0-9]{2}"), compiler.compile_regex("[a-c]+@[0-9]{2}"), "cab@42"),
        (("ebnf", lark), compiler.compile_lark(lark), "x123"),
        (("ebnf", gbnf), compiler.compile_gbnf(gbnf), "x9"),
        (
            ("structural_tag", tag),
            compiler.compile_structural_tag(stackmask.structural_tag_spec(
                [{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}], ["<f>"]
            )),
            "Hi <f>42</f> bye",
        ),
    ]
    for key, compiled, doc in cases:
        for _ in range(2):  # the second request is a copy of the cached one
            grammar = grammar_for(backend, key)
            assert isinstance(grammar, StackmaskGrammar), (key, grammar)
            own = stackmask.GrammarMatcher(compiled)
            mask = grammar.allocate_vocab_mask(PADDED, 2, "cpu")
            for token in gpt2.encode(doc) + [50256]:
                grammar.fill_vocab_mask(mask, 1)
                row = set(stackmask.bitmask_to_token_ids(mask[1].numpy()).tolist())
                assert row == allowed(own, gpt2.vocab_size), key
                assert all(t < gpt2.vocab_size for t in row)
                logits = torch.zeros(2, PADDED)
                type(grammar).apply_vocab_mask(logits, mask)
                finite = set(torch.nonzero(torch.isfinite(logits[1])).flatten().tolist())
                assert finite == row, key
                assert token in row, key
                grammar.accept_token(token)
                own.accept_token(token)
            assert grammar.is_terminated(), key


def test_rollback_and_refusals(backend, gpt2):
    grammar = grammar_for(backend, ("json", SCHEMA))
    tokens = gpt2.encode('{"name": "A')
    for t in tokens:
        grammar.accept_token(t)
    grammar.rollback(2)
    mask = grammar.allocate_vocab_mask(PADDED, 1, "cpu")
    grammar.fill_vocab_mask(mask, 0)
    assert tokens[-2] in stackmask.bitmask_to_token_ids(mask[0].numpy()).tolist()
    with pytest.raises(ValueError, match="not allowed"):
        grammar.accept_token(gpt2.encode("}")[0])
    bad = [
        (("json", '{"type": "array", "uniqueItems": true}'), "uniqueItems"),
        (("json", "{not json"), ""),
        (("ebnf", "start: UNDEFINED\n"), "UNDEFINED"),
        (("structural_tag", '{"format": {}}'), "structures"),
    ]
    for key, why in bad:
        grammar = grammar_for(backend, key)
        assert isinstance(grammar, InvalidGrammarObject), key
        assert why in grammar.error_message, (key, grammar.error_message)
