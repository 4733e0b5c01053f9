"""What the server integrations share: the stackmask tokenizer of a Hugging Face
tokenizer, and compiling a request's constraint by kind."""

from __future__ import annotations

from typing import Any

from .. import GrammarCompiler, TokenizerInfo


def _tokenizer_info(
    hf_tokenizer: Any, vocab_size: int | None, eos: list[int] | None = None
) -> TokenizerInfo:
    """The stackmask tokenizer of a Hugging Face fast tokenizer (its ``tokenizer.json``
    text), with the model's (padded) vocabulary size and end-of-sequence ids (by default
    the tokenizer's ``eos_token_id``)."""
    if eos is None:
        own = getattr(hf_tokenizer, "eos_token_id", None)
        eos = None if own is None else [own]
    return TokenizerInfo.from_tokenizer_json(
        hf_tokenizer.backend_tokenizer.to_str(), eos=eos, vocab_size=vocab_size
    )


def _compile(compiler: GrammarCompiler, kind: str, text: str) -> Any:
    """Compiles one request's constraint of ``kind``: ``json_schema``, ``json_object``,
    ``lark``, ``gbnf``, ``regex`` or ``structural_tag``."""
    if kind == "json_schema":
        return compiler.compile_json_schema(text)
    if kind == "json_object":
        return compiler.compile_builtin_json_grammar()
    if kind == "lark":
        return compiler.compile_lark(text)
    if kind == "gbnf":
        return compiler.compile_gbnf(text)
    if kind == "regex":
        return compiler.compile_regex(text)
    if kind == "structural_tag":
        return compiler.compile_structural_tag(text)
    raise ValueError(f"unknown request kind {kind!r}")
