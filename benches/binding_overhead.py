"""What the Python binding adds to a token: a document replayed through
`GrammarMatcher.fill_next_token_bitmask` + `accept_token`, and the same tokens replayed
by the engine alone in the same process (`stackmask._core._replay_timings`, the Rust
`Matcher::fill_mask` + `commit` on the same states), alternating, then a batch of
matchers committed one call at a time against `accept_token_batch`.

    python3 benches/binding_overhead.py [--tokenizer PATH] [--grammar builtin:json|FILE]
        [--document FILE] [--replays N] [--batch N]

Prints per-token p50 / p99 (ns) of each replay, the difference of the p50s, and the p50
of the token-by-token differences (less noisy: token i of both replays is in one state).
"""

from __future__ import annotations

import argparse
import time

import stackmask
from replay_setup import add_workload_args, load
from stackmask import _core


def pct(xs: list[int], p: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p))]


def python_replay(grammar, ids, bitmask) -> list[int]:
    m = stackmask.GrammarMatcher(grammar)
    fill, accept, clock = m.fill_next_token_bitmask, m.accept_token, time.perf_counter_ns
    out = []
    for t in ids:
        a = clock()
        fill(bitmask, 0)
        if not accept(t):
            raise SystemExit(f"token {t} refused")
        out.append(clock() - a)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    add_workload_args(ap)
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    info, grammar, ids = load(args)
    bitmask = stackmask.allocate_token_bitmask(1, info.vocab_size)
    print(f"{len(ids)} tokens, {info.vocab_size} ids; per token (mask + commit), ns")
    for r in range(args.replays):
        py = python_replay(grammar, ids, bitmask)
        rust = [a + b for a, b in _core._replay_timings(grammar, ids)]
        print(
            f"replay {r}: python p50 {pct(py, .5)} p99 {pct(py, .99)} | "
            f"rust p50 {pct(rust, .5)} p99 {pct(rust, .99)} | "
            f"binding p50 {pct(py, .5) - pct(rust, .5)}, "
            f"per-token difference p50 {pct([a - b for a, b in zip(py, rust)], .5)}"
        )

    # A batch of matchers at the start, each given the document's tokens in turn.
    n = args.batch
    steps = min(len(ids), 200)
    for r in range(args.replays if n > 0 else 0):
        one, many = [stackmask.GrammarMatcher(grammar) for _ in range(n)], [
            stackmask.GrammarMatcher(grammar) for _ in range(n)
        ]
        t_one = t_many = 0
        for t in ids[:steps]:
            a = time.perf_counter_ns()
            for m in one:
                m.accept_token(t)
            b = time.perf_counter_ns()
            stackmask.accept_token_batch(many, [t] * n)
            t_many += time.perf_counter_ns() - b
            t_one += b - a
        print(
            f"batch {r}: {n} matchers x {steps} steps, per commit: "
            f"accept_token {t_one / (n * steps):.0f} ns, accept_token_batch {t_many / (n * steps):.0f} ns"
        )


if __name__ == "__main__":
    main()
