"""`python -m stackmask.maskbench` agrees with `stackmask maskbench --json` on a sample."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import CLI, GPT2, SHARED
from stackmask import maskbench

KEYS = {
    "schemas_total", "schemas_compiled", "schemas_refused", "compile_errors",
    "valid_accepted", "validation_errors", "invalid_rejected", "invalidation_errors",
    "ttfm_ms", "t10_ms", "tbm_us",
}


def test_python_replay_matches_the_cli(capsys):
    data = SHARED / "maskbench"
    if not data.is_dir() or not GPT2.exists():
        pytest.skip("needs ../shared/maskbench and the GPT-2 tokenizer")
    args = [str(data), "--tokenizer", str(GPT2), "--every", "250", "--json", "--quiet"]
    assert maskbench.main(args) == 0
    py = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(py) == KEYS
    assert set(py["tbm_us"]) == {"p50", "p90", "p99", "p999", "max"}
    assert py["schemas_compiled"] >= 10 and py["invalidation_errors"] == 0
    cli = subprocess.run(
        [str(CLI), "maskbench", "--data", str(data), "--tokenizer", str(GPT2), "--engine",
         "dwa", "--every", "250", "--json"],
        check=True, capture_output=True, text=True,
    )
    rust = json.loads(cli.stdout.strip().splitlines()[-1])
    for k in KEYS - {"ttfm_ms", "t10_ms", "tbm_us"}:
        assert py[k] == rust[k], k
