"""stackmask as an SGLang grammar backend, through SGLang's own registry (no patch)::

    from stackmask.integrations.sglang import register
    register()   # before the server starts; then --grammar-backend stackmask

SGLang asks its grammar backend for a grammar object per request key and drives it:
``fill_vocab_mask`` writes a row of an int32 bitmask (xgrammar's layout, which is
stackmask's: bit ``t % 32`` of word ``t // 32`` is token ``t``), ``apply_vocab_mask``
masks the logits, ``accept_token`` / ``rollback`` follow the sampled tokens. Request keys:
``json`` (a JSON Schema; ``$$ANY$$`` is any JSON), ``regex``, ``ebnf`` (GBNF when it
defines ``root ::=``, else Lark) and ``structural_tag`` (``{"structures", "triggers"}``).
A grammar stackmask refuses becomes SGLang's ``InvalidGrammarObject`` with the reason.

Masks are applied by the code path SGLang's own backends use: its Triton kernel on CUDA,
xgrammar's CPU kernel on CPU (a torch fallback where xgrammar is absent).
"""

from __future__ import annotations

import json
import re
from typing import Any

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    InvalidGrammarObject,
    register_grammar_backend,
)

from .. import GrammarCompiler, GrammarMatcher, StackmaskError
from ._common import _compile, _tokenizer_info

NAME = "stackmask"

_GBNF_ROOT = re.compile(r"^\s*root\s*::=", re.MULTILINE)


def register(name: str = NAME) -> None:
    """Registers the backend with SGLang under ``name`` (``--grammar-backend name``)."""
    register_grammar_backend(name, StackmaskGrammarBackend.from_server)


def _apply_bitmask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    """Sets the logits of tokens whose bits are clear to -inf, in place."""
    if logits.device.type == "cuda":
        from sglang.kernels.ops.grammar.bitmask_ops import (  # noqa: PLC0415
            apply_token_bitmask_inplace_triton,
        )

        apply_token_bitmask_inplace_triton(logits, vocab_mask)
        return
    try:
        from xgrammar import apply_token_bitmask_inplace  # noqa: PLC0415
    except ImportError:
        bits = torch.arange(32, dtype=torch.int32, device=vocab_mask.device)
        allowed = (vocab_mask.unsqueeze(-1) >> bits) & 1
        allowed = allowed.reshape(vocab_mask.shape[0], -1)[:, : logits.shape[-1]].bool()
        logits.masked_fill_(~allowed.view(logits.shape), float("-inf"))
        return
    apply_token_bitmask_inplace(logits, vocab_mask.to(logits.device), backend="cpu")


class StackmaskGrammar(BaseGrammarObject):
    """One request's constraint state (SGLang's ``BaseGrammarObject``)."""

    def __init__(self, compiled: Any, vocab_size: int):
        super().__init__()
        self.compiled = compiled
        self.vocab_size = vocab_size
        self.matcher = GrammarMatcher(compiled)

    def accept_token(self, token: int) -> None:
        """Commits ``token``; raises ``ValueError`` if the grammar does not allow it (as
        SGLang's own backends do)."""
        if self.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(token):
            raise ValueError(f"token {token} is not allowed by the grammar here")

    def rollback(self, k: int) -> None:
        if k > 0:
            self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        # A CPU tensor shares its memory with its numpy view: the row is written in place.
        self.matcher.fill_next_token_bitmask(vocab_mask.numpy(), idx)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        _apply_bitmask(logits, vocab_mask)

    def copy(self) -> StackmaskGrammar:
        """A fresh request state over the same compiled grammar (SGLang copies its cached
        template per request)."""
        return StackmaskGrammar(self.compiled, self.vocab_size)

    def try_jump_forward(self, tokenizer: Any) -> tuple[list[int], str] | None:
        tokens = self.matcher.find_forced_tokens()
        return (list(tokens), "") if tokens else None

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        return "", -1

    def jump_and_retokenize(
        self, old_output_ids: list[int], new_output_ids: list[int], next_state: int
    ) -> None:
        pass


class StackmaskGrammarBackend(BaseGrammarBackend):
    """Compiles SGLang's request keys with stackmask (SGLang's ``BaseGrammarBackend``)."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: Any = None):
        super().__init__()
        eos = sorted(eos_token_ids) if eos_token_ids else None
        self.info = _tokenizer_info(tokenizer, vocab_size, eos)
        self.vocab_size = vocab_size
        self.compiler = GrammarCompiler(self.info)

    @classmethod
    def from_server(
        cls, server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Any = None
    ) -> StackmaskGrammarBackend:
        """The constructor SGLang's registry calls."""
        return cls(tokenizer, vocab_size, eos_token_ids)

    def _grammar(self, kind: str, text: str) -> BaseGrammarObject:
        try:
            return StackmaskGrammar(_compile(self.compiler, kind, text), self.vocab_size)
        except (StackmaskError, ValueError) as e:
            return InvalidGrammarObject(str(e))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == "$$ANY$$":
            return self._grammar("json_object", "")
        return self._grammar("json_schema", key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._grammar("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        kind = "gbnf" if _GBNF_ROOT.search(key_string) else "lark"
        return self._grammar(kind, key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        try:
            spec = json.loads(key_string)
        except ValueError as e:
            return InvalidGrammarObject(f"structural tag: {e}")
        if not isinstance(spec, dict) or "structures" not in spec:
            return InvalidGrammarObject(
                'structural tag: only the {"structures", "triggers"} form is supported'
            )
        spec.setdefault("type", "structural_tag")
        return self._grammar("structural_tag", json.dumps(spec))
