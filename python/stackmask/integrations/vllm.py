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

vLLM picks its structured-output backend from a fixed list, so the backend above needs a
patched vLLM. An unpatched vLLM loads :class:`StackmaskLogitsProcessor` (defined when
vLLM is importable) through its custom logits-processor interface::

    vllm serve MODEL --logits-processors stackmask.integrations.vllm:StackmaskLogitsProcessor

and a request asks for a constraint in its sampling parameters' ``extra_args`` (the
OpenAI server's ``vllm_xargs``): ``{"stackmask": {"json_schema": SCHEMA}}``, or one of
``"json_object": True``, ``"lark"``, ``"gbnf"``, ``"regex"`` with the grammar text.
Requests without it are left alone.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .. import GrammarCompiler, GrammarMatcher, TokenizerInfo
from ._common import _compile, _tokenizer_info

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


try:  # pragma: no cover - exercised only where vLLM is installed
    import torch
    from vllm.v1.sample.logits_processor import (
        LogitsProcessor as _LogitsProcessor,
        MoveDirectionality as _Move,
    )
except ImportError:
    _LogitsProcessor = None


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
        self.tokenizer_info = _tokenizer_info(tokenizer, vocab_size)
        self.compiler = GrammarCompiler(self.tokenizer_info)

    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str
    ) -> StackmaskGrammar:
        """Compiles one request's constraint. JSON: a JSON Schema; JSON_OBJECT: any JSON
        value; GRAMMAR: GBNF when it uses ``::=``, else Lark; REGEX: a whole-output regular
        expression; STRUCTURAL_TAG: tool calls in free text (``{"structures": [{"begin",
        "schema", "end"}], "triggers"}``). Other kinds raise ``ValueError``."""
        kind = {
            "JSON": "json_schema",
            "JSON_OBJECT": "json_object",
            "GRAMMAR": "gbnf" if "::=" in grammar_spec else "lark",
            "REGEX": "regex",
            "STRUCTURAL_TAG": "structural_tag",
        }.get(request_type.name)
        if kind is None:
            raise ValueError(f"stackmask does not support {request_type.name} requests")
        compiled = _compile(self.compiler, kind, grammar_spec)
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


#: The request kinds ``extra_args["stackmask"]`` may name, each with its grammar text.
REQUEST_KINDS = ("json_schema", "json_object", "lark", "gbnf", "regex", "structural_tag")


def _request_spec(params: Any) -> tuple[str, str] | None:
    """The ``(kind, text)`` a request's sampling parameters ask for, or None; a malformed
    request raises ``ValueError`` (vLLM answers it with HTTP 400)."""
    extra = getattr(params, "extra_args", None) or {}
    spec = extra.get("stackmask")
    if spec is None:
        return None
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in REQUEST_KINDS:
        raise ValueError(
            f'extra_args["stackmask"] must be one of {{{", ".join(REQUEST_KINDS)}}}: '
            "TEXT (json_object: true)"
        )
    kind, text = next(iter(spec.items()))
    if kind in ("json_schema", "structural_tag") and not isinstance(text, str):
        import json  # noqa: PLC0415

        text = json.dumps(text)
    if kind == "json_object":
        text = ""
    elif not isinstance(text, str):
        raise ValueError(f'extra_args["stackmask"]["{kind}"] must be a string')
    return kind, text


if _LogitsProcessor is not None:  # pragma: no cover - exercised only where vLLM is installed

    class _Request:
        """One constrained request in the batch: its matcher and vLLM's live list of its
        output tokens (a reference: it grows as the request decodes)."""

        __slots__ = ("matcher", "output", "done")

        def __init__(self, matcher: GrammarMatcher, output: list[int]):
            self.matcher = matcher
            self.output = output
            self.done = 0

    class StackmaskLogitsProcessor(_LogitsProcessor):
        """vLLM's batch-level logits processor, constraining each request that asks for
        it (see the module docs). Masks are filled for the whole batch at once with the
        GIL released and applied with the kernel vLLM's own structured output applies
        (xgrammar's ``apply_token_bitmask_inplace``).

        The tokenizer is the model's (vLLM's tokenizer for ``vllm_config.model_config``),
        or the ``tokenizer.json`` the ``STACKMASK_TOKENIZER`` environment variable names.
        Compiled grammars are kept per request text (``max_cached`` of them).
        """

        max_cached = 64

        @classmethod
        def validate_params(cls, sampling_params: Any) -> None:
            _request_spec(sampling_params)

        def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool):
            import os  # noqa: PLC0415

            path = os.environ.get("STACKMASK_TOKENIZER")
            model = getattr(vllm_config, "model_config", None)
            if path:
                vocab_size = model.get_vocab_size() if model is not None else None
                self.info = TokenizerInfo.from_tokenizer_json(path, vocab_size=vocab_size)
            elif model is not None:
                from vllm.tokenizers import cached_tokenizer_from_config  # noqa: PLC0415

                tok = cached_tokenizer_from_config(model)
                self.info = _tokenizer_info(tok, model.get_vocab_size())
            else:
                raise ValueError(
                    "StackmaskLogitsProcessor needs the model's tokenizer: a model config, "
                    "or STACKMASK_TOKENIZER=path/to/tokenizer.json"
                )
            self.compiler = GrammarCompiler(self.info)
            self.compiled: dict[tuple[str, str], Any] = {}
            self.requests: dict[int, _Request] = {}

        def is_argmax_invariant(self) -> bool:
            return False

        def _compile(self, spec: tuple[str, str]) -> Any:
            if spec in self.compiled:
                return self.compiled[spec]
            compiled = _compile(self.compiler, *spec)
            if len(self.compiled) >= self.max_cached:
                self.compiled.pop(next(iter(self.compiled)))
            self.compiled[spec] = compiled
            return compiled

        def update_state(self, batch_update: Any) -> None:
            if batch_update is not None:
                # vLLM's order: removed, added, moved.
                for i in batch_update.removed:
                    self.requests.pop(i, None)
                for i, params, _prompt, output in batch_update.added:
                    spec = _request_spec(params)
                    if spec is None:
                        self.requests.pop(i, None)
                    else:
                        m = GrammarMatcher(self._compile(spec))
                        self.requests[i] = _Request(m, output)
                for a, b, how in batch_update.moved:
                    ra, rb = self.requests.pop(a, None), self.requests.pop(b, None)
                    if ra is not None:
                        self.requests[b] = ra
                    if how == _Move.SWAP and rb is not None:
                        self.requests[a] = rb
            # Tokens sampled since the last step (the mask allowed them).
            for r in self.requests.values():
                while r.done < len(r.output):
                    if not r.matcher.accept_token(r.output[r.done]):
                        raise RuntimeError(
                            f"token {r.output[r.done]} was sampled outside the grammar"
                        )
                    r.done += 1

        def apply(self, logits: Any) -> Any:
            if not self.requests:
                return logits
            import xgrammar  # noqa: PLC0415 - vLLM's own dependency

            from .. import fill_next_token_bitmask_batch  # noqa: PLC0415

            rows = sorted(self.requests)
            words = (logits.shape[-1] + 31) // 32
            # Filled compact (one parallel call), then placed at the rows' batch indices,
            # which is how the kernel reads them; unconstrained rows are not read.
            compact = np.empty((len(rows), words), dtype=np.int32)
            fill_next_token_bitmask_batch([self.requests[i].matcher for i in rows], compact)
            if rows == list(range(logits.shape[0])):
                full = compact
            else:
                full = np.zeros((logits.shape[0], words), dtype=np.int32)
                full[rows] = compact
            mask = torch.from_numpy(full).to(logits.device, non_blocking=True)
            xgrammar.apply_token_bitmask_inplace(logits, mask, indices=rows)
            return logits
