"""Shared fixtures: real tokenizers from ../shared (beside the checkout, as for the Rust
tests) and the stackmask CLI binary for cross-checks."""

from __future__ import annotations

import os
import pathlib

import pytest

import stackmask

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("STACKMASK_SHARED", ROOT.parent / "shared"))
GPT2 = SHARED / "tokenizers" / "gpt2.json"
CLI = pathlib.Path(os.environ.get("STACKMASK_BIN", ROOT / "target" / "release" / "stackmask"))

SCHEMA = """{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}
  },
  "required": ["name"],
  "additionalProperties": false
}"""

VALID = '{"name": "Ada Lovelace", "age": 36, "tags": ["a", "c"]}'
INVALID = '{"name": "Ada", "age": 151}'


@pytest.fixture(scope="session")
def gpt2() -> stackmask.TokenizerInfo:
    if not GPT2.exists():
        pytest.skip(f"needs {GPT2} (../shared beside the checkout)")
    return stackmask.TokenizerInfo.from_tokenizer_json(str(GPT2))


@pytest.fixture(scope="session")
def compiler(gpt2) -> stackmask.GrammarCompiler:
    return stackmask.GrammarCompiler(gpt2)


@pytest.fixture(scope="session")
def schema_grammar(compiler) -> stackmask.CompiledGrammar:
    return compiler.compile_json_schema(SCHEMA)


def allowed(matcher: stackmask.GrammarMatcher, vocab_size: int) -> set[int]:
    """The matcher's current mask as a set of token ids."""
    bitmask = stackmask.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return set(stackmask.bitmask_to_token_ids(bitmask[0]).tolist())
