"""A vLLM structured-output backend backed by stackmask.

vLLM (v1) drives structured output through two classes: an engine-level backend
(``compile_grammar``, ``allocate_token_bitmask``, ``destroy``) and a request-level grammar
(``accept_tokens``, ``validate_tokens``, ``rollback``, ``fill_bitmask``,
``is_terminated``, ``reset``, ``find_jump_string``). This module implements both on top of
``stackmask.GrammarMatcher``. When vLLM is importable the classes subclass vLLM's abstract
bases; otherwise they stand alone with the same methods (which is how the tests drive
them, vLLM needing torch).

The tokenizer vLLM passes is a Hugging Face fast tokenizer; its ``tokenizer.json`` text
comes from ``tokenizer.backend_tokenizer.to_str()``.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .. import GrammarCompiler, GrammarMatcher, TokenizerInfo

try:  # pragma: no cover - exercised only where vLLM is installed
    from vllm.v1.structured_output.backend_types import (
        StructuredOutputBackend as _Backend,
        StructuredOutputGrammar as _Grammar,
        StructuredOutputOptions,
    )
except ImportError:  # vLLM (and torch) absent: same interface, no base classes.
    _Backend = object
    _Grammar = object

    class StructuredOutputOptions(enum.Enum):
        """Mirror of vLLM's request kinds."""

        JSON = enum.auto()
        JSON_OBJECT = enum.auto()
        REGEX = enum.auto()
        GRAMMAR = enum.auto()
        CHOICE = enum.auto()
        STRUCTURAL_TAG = enum.auto()


def _as_numpy(bitmask: Any) -> np.ndarray:
    """A numpy view of a CPU bitmask (torch tensors share memory through ``.numpy()``)."""
    if isinstance(bitmask, np.ndarray):
        return bitmask
    to_numpy = getattr(bitmask, "numpy", None)
    if to_numpy is None:
        raise TypeError("bitmask must be a numpy array or a CPU torch tensor")
    return to_numpy()


class StackmaskGrammar(_Grammar):
    """One request's constraint state (vLLM's ``StructuredOutputGrammar``)."""

    def __init__(self, matcher: GrammarMatcher, vocab_size: int):
        self.matcher = matcher
        self.vocab_size = vocab_size
        self.num_processed_tokens = 0

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Commits all of ``tokens`` (True) or none of them (False)."""
        if self.matcher.accept_tokens(list(tokens)):
            self.num_processed_tokens += len(tokens)
            return True
        return False

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts; the state is unchanged."""
        return list(tokens[: self.matcher.validate_tokens(list(tokens))])

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        """Writes this request's allowed tokens into row ``batch_index``."""
        self.matcher.fill_next_token_bitmask(_as_numpy(bitmask), batch_index)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0

    def find_jump_string(self) -> str | None:
        """The text the grammar forces next, or None when the next token is a choice."""
        return self.matcher.find_jump_forward_string() or None


class StackmaskBackend(_Backend):
    """vLLM's engine-level ``StructuredOutputBackend`` for stackmask.

    ``tokenizer`` is the model's Hugging Face fast tokenizer; ``vocab_size`` the model's
    (padded) vocabulary size, which sets the bitmask width.
    """

    def __init__(self, vllm_config: Any, tokenizer: Any, vocab_size: int):
        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        eos = getattr(tokenizer, "eos_token_id", None)
        self.tokenizer_info = TokenizerInfo.from_tokenizer_json(
            tokenizer.backend_tokenizer.to_str(),
            eos=None if eos is None else [eos],
            vocab_size=vocab_size,
        )
        self.compiler = GrammarCompiler(self.tokenizer_info)

    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str
    ) -> StackmaskGrammar:
        """Compiles one request's constraint. JSON: a JSON Schema; JSON_OBJECT: any JSON
        value; GRAMMAR: GBNF when it uses ``::=``, else Lark; REGEX: a whole-output regular
        expression. Other kinds raise ``ValueError``."""
        kind = request_type.name
        if kind == "JSON":
            compiled = self.compiler.compile_json_schema(grammar_spec)
        elif kind == "JSON_OBJECT":
            compiled = self.compiler.compile_builtin_json_grammar()
        elif kind == "GRAMMAR":
            if "::=" in grammar_spec:
                compiled = self.compiler.compile_gbnf(grammar_spec)
            else:
                compiled = self.compiler.compile_lark(grammar_spec)
        elif kind == "REGEX" and hasattr(self.compiler, "compile_regex"):
            compiled = self.compiler.compile_regex(grammar_spec)
        else:
            raise ValueError(f"stackmask does not support {kind} requests")
        return StackmaskGrammar(GrammarMatcher(compiled), self.vocab_size)

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """An int32 bitmask ``[max_num_seqs, ceil(vocab_size / 32)]``: a torch tensor
        when torch is available (vLLM copies it to the device), else numpy."""
        shape = (max_num_seqs, (self.vocab_size + 31) // 32)
        try:
            import torch  # noqa: PLC0415 - optional dependency
        except ImportError:
            return np.full(shape, -1, dtype=np.int32)
        return torch.full(shape, -1, dtype=torch.int32)

    def destroy(self) -> None:
        """Nothing to release: compiled grammars are freed with their matchers."""
