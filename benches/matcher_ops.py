"""The matcher's other calls, through the Python package: `rollback`, `validate_tokens`,
`find_forced_tokens` and `find_jump_forward_string`, at every step of a document.

    python3 benches/matcher_ops.py [--tokenizer PATH] [--grammar builtin:json|FILE]
        [--document FILE] [--window N] [--replays N]

At each step the matcher has accepted the document's tokens so far: `rollback(1)` right
after accepting the step's token (then that token again), `validate_tokens` of the next
`--window` tokens, and the two forced-token queries (64 bytes). Prints p50 / p99 / max
(ns) per call over all steps and replays.
"""

from __future__ import annotations

import argparse
import time

import stackmask
from replay_setup import add_workload_args, load


def pct(xs: list[int], p: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p))]


def main() -> None:
    ap = argparse.ArgumentParser()
    add_workload_args(ap)
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--replays", type=int, default=3)
    args = ap.parse_args()

    info, grammar, ids = load(args)
    clock = time.perf_counter_ns
    times: dict[str, list[int]] = {
        "rollback(1)": [],
        f"validate_tokens({args.window})": [],
        "find_forced_tokens(64)": [],
        "find_jump_forward_string(64)": [],
    }
    rollback, validate, forced, jump = times.values()
    for _ in range(args.replays):
        m = stackmask.GrammarMatcher(grammar)
        for i, t in enumerate(ids):
            a = clock()
            ok = m.validate_tokens(ids[i : i + args.window])
            validate.append(clock() - a)
            if ok != len(ids[i : i + args.window]):
                raise SystemExit(f"step {i}: the document's next tokens were refused")
            a = clock()
            m.find_forced_tokens(64)
            forced.append(clock() - a)
            a = clock()
            m.find_jump_forward_string(64)
            jump.append(clock() - a)
            if not m.accept_token(t):
                raise SystemExit(f"token {t} refused at step {i}")
            a = clock()
            m.rollback(1)
            rollback.append(clock() - a)
            if not m.accept_token(t):
                raise SystemExit(f"token {t} refused again at step {i}")
    print(f"{len(ids)} tokens x {args.replays} replays")
    for name, xs in times.items():
        print(f"{name:30} p50 {pct(xs, 0.5):>7} ns  p99 {pct(xs, 0.99):>8} ns  max {max(xs):>9} ns")


if __name__ == "__main__":
    main()
