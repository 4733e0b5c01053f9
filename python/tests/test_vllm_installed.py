"""The logits processor inside an installed vLLM (CPU tensors): loaded by vLLM's own
loader from its class name, fed vLLM's own batch updates, masks applied by the kernel
vLLM's structured output uses. Skipped where vLLM is not installed (it needs torch and a
few GB: `.ci/vllm-env` makes the environment CI runs this file in)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this environment")

import torch  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdateBuilder,
    MoveDirectionality,
    build_logitsprocs,
    validate_logits_processors_parameters,
)

import stackmask  # noqa: E402
from conftest import GPT2, SCHEMA, VALID, allowed  # noqa: E402
from stackmask.integrations.vllm import StackmaskLogitsProcessor  # noqa: E402

FQCN = "stackmask.integrations.vllm:StackmaskLogitsProcessor"
PADDED = 50304  # a model's padded vocabulary (GPT-2 has 50,257 ids)


@pytest.fixture(scope="module")
def processor():
    os.environ["STACKMASK_TOKENIZER"] = str(GPT2)
    procs = build_logitsprocs(VllmConfig(), torch.device("cpu"), False, False, [FQCN])
    ours = [p for p in procs.non_argmax_invariant if isinstance(p, StackmaskLogitsProcessor)]
    assert len(ours) == 1, "vLLM's loader made the processor from its class name"
    return ours[0]


def test_bad_requests_are_refused_by_vllms_validation():
    for bad in ({"nope": "x"}, {"lark": 3}, "json", {"lark": "a", "gbnf": "b"}):
        with pytest.raises(VLLMValidationError):
            validate_logits_processors_parameters(
                [FQCN], SamplingParams(extra_args={"stackmask": bad})
            )
    validate_logits_processors_parameters([FQCN], SamplingParams(extra_args={}))


def test_batch_masks_follow_vllms_batch_updates(processor, gpt2):
    """Three requests (a JSON Schema, an unconstrained one, any JSON), decoded together:
    at every step each constrained row allows exactly what the request's own matcher
    allows (padding ids never), the unconstrained row is untouched; rows swap and one is
    removed partway, as vLLM's persistent batch does."""
    compiler = stackmask.GrammarCompiler(gpt2)
    any_json = '{"a": [1, 2.5, {"b": null}], "c": "d"}'
    docs = {
        "schema": gpt2.encode(VALID),
        "free": gpt2.encode("any text at all, unconstrained"),
        "json": gpt2.encode(any_json),
    }
    own = {
        "schema": stackmask.GrammarMatcher(compiler.compile_json_schema(SCHEMA)),
        "json": stackmask.GrammarMatcher(compiler.compile_builtin_json_grammar()),
    }
    params = {
        "schema": SamplingParams(extra_args={"stackmask": {"json_schema": SCHEMA}}),
        "free": SamplingParams(),
        "json": SamplingParams(extra_args={"stackmask": {"json_object": True}}),
    }
    outputs = {name: [] for name in docs}
    slot = {"schema": 0, "free": 1, "json": 2}
    builder = BatchUpdateBuilder()
    for name, i in slot.items():
        builder.added.append((i, params[name], None, outputs[name]))
    steps = min(len(d) for d in docs.values())
    checked = 0
    for step in range(steps):
        if step == 3:  # the schema and JSON requests swap rows
            builder.moved.append((0, 2, MoveDirectionality.SWAP))
            slot["schema"], slot["json"] = 2, 0
        if step == 5:  # the unconstrained request finishes
            builder.removed_append(slot.pop("free"))
        processor.update_state(builder.get_and_reset(3))
        logits = torch.zeros((3, PADDED))
        processor.apply(logits)
        for name, i in slot.items():
            open_ids = set(torch.nonzero(logits[i] != float("-inf")).flatten().tolist())
            if name in own:
                want = allowed(own[name], gpt2.vocab_size)
                assert open_ids == want, f"{name} step {step}"
                assert docs[name][step] in open_ids
                checked += 1
            else:
                assert open_ids == set(range(PADDED)), f"{name} step {step}: touched"
        for name in slot:  # what the sampler picked: the document's next token
            outputs[name].append(docs[name][step])
            if name in own:
                assert own[name].accept_token(docs[name][step])
    assert checked == 2 * steps
