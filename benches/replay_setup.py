"""What the Python replay benchmarks share: the workload's arguments (tokenizer, grammar,
document) and the compiled grammar with the document's tokens."""

from __future__ import annotations

import argparse
import pathlib

import stackmask

ROOT = pathlib.Path(__file__).resolve().parent.parent


def add_workload_args(ap: argparse.ArgumentParser) -> None:
    """`--tokenizer`, `--grammar` (builtin:json or a Lark file) and `--document`."""
    ap.add_argument("--tokenizer", default=str(ROOT.parent / "shared/tokenizers/llama3.json"))
    ap.add_argument("--grammar", default="builtin:json")
    ap.add_argument("--document", default=str(ROOT / "benches/data/catalog.json"))


def load(args: argparse.Namespace):
    """The tokenizer, the compiled grammar and the document's token ids."""
    info = stackmask.TokenizerInfo.from_tokenizer_json(args.tokenizer)
    compiler = stackmask.GrammarCompiler(info)
    if args.grammar == "builtin:json":
        grammar = compiler.compile_builtin_json_grammar()
    else:
        grammar = compiler.compile_lark(pathlib.Path(args.grammar).read_text())
    ids = info.encode(pathlib.Path(args.document).read_text())
    return info, grammar, ids
