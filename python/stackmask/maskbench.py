"""MaskBench replay driven from Python: ``python -m stackmask.maskbench DIR --tokenizer T``.

The harness other Python engines are timed in: for every JSONSchemaBench file (a
``schema`` and ``tests`` with ``valid`` labels) compile the schema (TTFM: compile wall
time), serialize each instance with ``json.dumps``, tokenize it canonically, and replay it
token by token, timing ``fill_next_token_bitmask`` + ``accept_token`` with
``time.perf_counter_ns`` (TBM); t10 is TTFM plus a file's first ten tokens' times. A
valid instance must be accepted to the end; an invalid one must be rejected at some token
or at the end. The last stdout line with ``--json`` has
exactly the keys of ``stackmask maskbench --json``.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from collections import Counter
from typing import Any

import numpy as np

from . import GrammarCompiler, GrammarMatcher, StackmaskError, TokenizerInfo

# The bounds `stackmask maskbench` uses for the automaton engine (src/cli/maskbench/replay.rs).
MAX_TRIES = 40_000
MAX_AUTOMATON_STATES = 300_000
# Tokens whose times t10 adds to the compile (as ../shared/peers/maskbench.py counts them).
T10_TOKENS = 10


def percentiles(samples: list[float]) -> dict[str, float | None]:
    """Nearest-rank p50/p90/p99/p99.9/max, rounded to 0.01 (as the Rust CLI reports)."""
    if not samples:
        return {k: None for k in ("p50", "p90", "p99", "p999", "max")}
    s = sorted(samples)

    def at(q: float) -> float:
        i = min(max(math.ceil(len(s) * q), 1), len(s)) - 1
        return round(s[i], 2)

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "p999": at(0.999), "max": at(1.0)}


def replay(matcher: GrammarMatcher, ids: list[int], bitmask: np.ndarray, tbm_us: list[float]) -> bool:
    """Replays one instance; True iff every token was allowed and the end is accepting."""
    words = bitmask.view(np.uint32)
    clock = time.perf_counter_ns
    for t in ids:
        t0 = clock()
        matcher.fill_next_token_bitmask(bitmask, 0)
        t1 = clock()
        allowed = (int(words[0, t >> 5]) >> (t & 31)) & 1 == 1
        t2 = clock()
        ok = allowed and matcher.accept_token(t)
        t3 = clock()
        tbm_us.append(((t1 - t0) + (t3 - t2)) / 1000.0)
        if not ok:
            return False
    return matcher.is_accepting()


def run(args: argparse.Namespace) -> dict[str, Any]:
    files = sorted(pathlib.Path(args.data).glob("*.json"))
    files = files[:: max(args.every, 1)]
    if args.limit is not None:
        files = files[: args.limit]
    info = TokenizerInfo.from_tokenizer_json(args.tokenizer)
    compiler = GrammarCompiler(info)
    bitmask = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    refused: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    counts = Counter()
    ttfm_ms: list[float] = []
    t10_ms: list[float] = []
    tbm_us: list[float] = []
    for n, path in enumerate(files, 1):
        if not args.quiet:
            print(f"\r[{n}/{len(files)}] {path.name[:60]:<60}", end="", file=sys.stderr, flush=True)
        try:
            spec = json.loads(path.read_text())
            schema, tests = spec["schema"], spec["tests"]
        except (ValueError, KeyError, TypeError):
            errors["bad_file"] += 1
            continue
        counts["schemas_total"] += 1
        t0 = time.perf_counter_ns()
        try:
            compiled = compiler.compile_json_schema(
                json.dumps(schema),
                max_tries=MAX_TRIES,
                max_automaton_states=MAX_AUTOMATON_STATES,
                background=args.background,
            )
        except StackmaskError as e:
            if getattr(e, "kind", None) == "unsupported":
                refused[e.keyword] += 1
            else:
                errors[getattr(e, "kind", "error")] += 1
            continue
        ttfm_ms.append((time.perf_counter_ns() - t0) / 1e6)
        first_token = len(tbm_us)
        counts["schemas_compiled"] += 1
        base = GrammarMatcher(compiled)
        for test in tests:
            text = json.dumps(test["data"], ensure_ascii=args.ensure_ascii)
            ids = info.encode(text)
            base.reset()
            accepted = replay(base, ids, bitmask, tbm_us)
            if test["valid"]:
                counts["valid_accepted" if accepted else "validation_errors"] += 1
            else:
                counts["invalidation_errors" if accepted else "invalid_rejected"] += 1
        # The compile plus the file's first ten tokens (mask and commit), where work a
        # compile defers would land.
        t10_ms.append(ttfm_ms[-1] + sum(tbm_us[first_token : first_token + T10_TOKENS]) / 1e3)
    if not args.quiet:
        print(file=sys.stderr)
    return {
        "schemas_total": counts["schemas_total"],
        "schemas_compiled": counts["schemas_compiled"],
        "schemas_refused": dict(sorted(refused.items())),
        "compile_errors": dict(sorted(errors.items())),
        "valid_accepted": counts["valid_accepted"],
        "validation_errors": counts["validation_errors"],
        "invalid_rejected": counts["invalid_rejected"],
        "invalidation_errors": counts["invalidation_errors"],
        "ttfm_ms": percentiles(ttfm_ms),
        "t10_ms": percentiles(t10_ms),
        "tbm_us": percentiles(tbm_us),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stackmask.maskbench", description=__doc__.split("\n")[0])
    p.add_argument("data", help="directory of MaskBench files (each with schema and tests)")
    p.add_argument("--tokenizer", required=True, help="a tokenizer.json")
    p.add_argument("--limit", type=int, help="only the first N files (after --every)")
    p.add_argument("--every", type=int, default=1, help="only every N-th file, in name order")
    p.add_argument("--ensure-ascii", action="store_true", help="escape non-ASCII (json.dumps default)")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    p.add_argument(
        "--background",
        action="store_true",
        help="build each automaton on another thread; masks walk the vocabulary until it is there",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
