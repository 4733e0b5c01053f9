"""stackmask: grammar-constrained decoding.

Compile a JSON Schema, Lark or GBNF grammar for a tokenizer, then at every decoding step
fill the next-token bitmask (int32, ``[batch, ceil(vocab_size / 32)]``, bit ``t % 32`` of
word ``t // 32`` is token ``t``) and accept the sampled token::

    import stackmask
    info = stackmask.TokenizerInfo.from_tokenizer_json("tokenizer.json")
    compiled = stackmask.GrammarCompiler(info).compile_json_schema(schema_text)
    matcher = stackmask.GrammarMatcher(compiled)
    bitmask = stackmask.allocate_token_bitmask(1, info.vocab_size)
    while not matcher.is_terminated():
        matcher.fill_next_token_bitmask(bitmask, 0)
        token = sample(logits, bitmask[0])          # the caller's sampler
        matcher.accept_token(token)
"""

from __future__ import annotations

import json

import numpy as np

from ._core import (
    CompileCancel,
    CompiledGrammar,
    GrammarCompiler,
    GrammarMatcher,
    StackmaskError,
    TokenizerInfo,
    __version__,
    accept_token_batch,
    fill_next_token_bitmask_batch,
)

__all__ = [
    "CompileCancel",
    "CompiledGrammar",
    "GrammarCompiler",
    "GrammarMatcher",
    "StackmaskError",
    "TokenizerInfo",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask",
    "bitmask_to_token_ids",
    "accept_token_batch",
    "fill_next_token_bitmask_batch",
    "structural_tag_spec",
]


def structural_tag_spec(tags, triggers, at_least_one: bool = False) -> str:
    """The JSON spec ``GrammarCompiler.compile_structural_tag`` takes, from xgrammar's
    ``(tags, triggers)``: each tag has ``begin``, ``schema`` (a JSON Schema as a dict or
    JSON text) and ``end``, as attributes (``xgrammar.StructuralTagItem``) or dict keys."""

    def field(tag, name):
        return tag[name] if isinstance(tag, dict) else getattr(tag, name)

    structures = []
    for tag in tags:
        schema = field(tag, "schema")
        if isinstance(schema, str):
            schema = json.loads(schema)
        structures.append(
            {"begin": field(tag, "begin"), "schema": schema, "end": field(tag, "end")}
        )
    return json.dumps(
        {
            "type": "structural_tag",
            "structures": structures,
            "triggers": list(triggers),
            "at_least_one": bool(at_least_one),
        }
    )


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A zeroed int32 bitmask of shape ``[batch_size, ceil(vocab_size / 32)]``."""
    if batch_size < 0 or vocab_size < 0:
        raise ValueError("batch_size and vocab_size must be non-negative")
    return np.zeros((batch_size, (vocab_size + 31) // 32), dtype=np.int32)


def bitmask_to_token_ids(row: np.ndarray, vocab_size: int | None = None) -> np.ndarray:
    """The token ids whose bits are set in one bitmask row (for tests and debugging)."""
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    ids = np.flatnonzero(bits)
    return ids if vocab_size is None else ids[ids < vocab_size]


def apply_token_bitmask(logits: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Sets the logits of disallowed tokens to -inf, in place (numpy, one row)."""
    vocab = logits.shape[-1]
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    allowed = np.zeros(vocab, dtype=bool)
    n = min(vocab, bits.shape[0])
    allowed[:n] = bits[:n].astype(bool)
    logits[..., ~allowed] = -np.inf
    return logits
