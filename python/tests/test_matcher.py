"""GrammarMatcher, GrammarCompiler, TokenizerInfo and CompiledGrammar from Python."""

from __future__ import annotations

import json
import pathlib
import subprocess

import numpy as np
import pytest

import stackmask
from conftest import CLI, GPT2, INVALID, ROOT, SCHEMA, SHARED, VALID, allowed


def test_tokenizer_info_from_path_and_text(gpt2):
    assert gpt2.vocab_size == 50257
    assert gpt2.eos_token_ids == [50256]
    ids = gpt2.encode(VALID)
    assert b"".join(gpt2.token_bytes(t) for t in ids).decode() == VALID
    from_text = stackmask.TokenizerInfo.from_tokenizer_json(GPT2.read_text(), vocab_size=50304)
    assert from_text.vocab_size == 50304
    assert from_text.encode(VALID) == ids
    with pytest.raises(stackmask.StackmaskError, match="smaller"):
        stackmask.TokenizerInfo.from_tokenizer_json(str(GPT2), vocab_size=100)
    with pytest.raises(stackmask.StackmaskError):
        stackmask.TokenizerInfo.from_tokenizer_json("/nonexistent/tokenizer.json")


def test_builtin_tokenizer_needs_no_files():
    info = stackmask.TokenizerInfo.builtin("o200k")
    g = stackmask.GrammarCompiler(info).compile_builtin_json_grammar()
    m = stackmask.GrammarMatcher(g)
    for t in info.encode('{"ok": [1, 2]}'):
        assert t in allowed(m, info.vocab_size)
        assert m.accept_token(t)
    assert m.is_accepting()


def test_valid_instance_decodes_to_termination(gpt2, schema_grammar):
    m = stackmask.GrammarMatcher(schema_grammar)
    for t in gpt2.encode(VALID):
        assert t in allowed(m, gpt2.vocab_size)
        assert m.accept_token(t)
    assert m.is_accepting() and not m.is_terminated()
    assert 50256 in allowed(m, gpt2.vocab_size)
    assert m.accept_token(50256)
    assert m.is_terminated()
    assert allowed(m, gpt2.vocab_size) == {50256}
    assert m.num_accepted_tokens == len(gpt2.encode(VALID)) + 1


def test_invalid_instance_is_rejected_without_changing_state(gpt2, schema_grammar):
    m = stackmask.GrammarMatcher(schema_grammar)
    rejected = False
    for t in gpt2.encode(INVALID):
        before = allowed(m, gpt2.vocab_size)
        steps = m.num_accepted_tokens
        if not m.accept_token(t):
            assert t not in before
            assert allowed(m, gpt2.vocab_size) == before
            assert m.num_accepted_tokens == steps
            rejected = True
            break
    assert rejected
    # EOS before the document is complete is refused too.
    assert not m.accept_token(50256)


def test_masks_equal_the_cli(tmp_path, gpt2, schema_grammar):
    assert CLI.exists(), f"build the CLI first (cargo build --release): {CLI}"
    schema = tmp_path / "s.schema.json"
    schema.write_text(SCHEMA)
    doc = tmp_path / "doc.json"
    doc.write_text(VALID)
    dump = tmp_path / "masks.jsonl"
    subprocess.run(
        [str(CLI), "check", "--grammar", str(schema), "--tokenizer", str(GPT2), "--text",
         str(doc), "--engine", "dwa", "--dump-masks", str(dump)],
        check=True, capture_output=True,
    )
    cli_masks = [set(json.loads(line)) for line in dump.read_text().splitlines()]
    m = stackmask.GrammarMatcher(schema_grammar)
    ids = gpt2.encode(VALID)
    assert len(cli_masks) == len(ids)
    for step, t in enumerate(ids):
        assert allowed(m, gpt2.vocab_size) == cli_masks[step], f"step {step}"
        assert m.accept_token(t)


def test_rollback_then_recommit_gives_identical_masks(gpt2, schema_grammar):
    ids = gpt2.encode(VALID)
    m = stackmask.GrammarMatcher(schema_grammar)
    masks = []
    for t in ids:
        masks.append(allowed(m, gpt2.vocab_size))
        m.accept_token(t)
    for k in (1, 3, len(ids)):
        m.rollback(k)
        assert m.num_accepted_tokens == len(ids) - k
        for i in range(len(ids) - k, len(ids)):
            assert allowed(m, gpt2.vocab_size) == masks[i], f"rollback {k}, step {i}"
            assert m.accept_token(ids[i])
    with pytest.raises(stackmask.StackmaskError, match="roll back"):
        m.rollback(len(ids) + 1)
    assert m.num_accepted_tokens == len(ids)
    m.reset()
    assert m.num_accepted_tokens == 0
    assert allowed(m, gpt2.vocab_size) == masks[0]


def test_validate_and_accept_tokens(gpt2, schema_grammar):
    m = stackmask.GrammarMatcher(schema_grammar)
    good = gpt2.encode(VALID)
    bad = gpt2.encode(INVALID)
    assert m.validate_tokens(good) == len(good)
    first_bad = m.validate_tokens(bad)
    assert 0 < first_bad < len(bad)
    assert m.num_accepted_tokens == 0
    assert not m.accept_tokens(bad)
    assert m.num_accepted_tokens == 0
    assert m.accept_tokens(good[:5])
    assert m.num_accepted_tokens == 5
    assert m.validate_tokens(good[5:]) == len(good) - 5


def test_batch_fill_equals_single_fills(gpt2, schema_grammar):
    ids = gpt2.encode(VALID)
    matchers = []
    for n in range(0, len(ids), 3):
        m = stackmask.GrammarMatcher(schema_grammar)
        assert m.accept_tokens(ids[:n])
        matchers.append(m)
    padded = 50304  # a model's padded vocabulary: the extra bits must stay 0
    batch = np.full((len(matchers) + 2, (padded + 31) // 32), -1, dtype=np.int32)
    stackmask.fill_next_token_bitmask_batch(matchers, batch)
    single = stackmask.allocate_token_bitmask(len(matchers), padded)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(single, i)
    assert np.array_equal(batch[: len(matchers)], single)
    assert (batch[len(matchers):] == -1).all(), "rows past the matchers are untouched"
    ids_set = stackmask.bitmask_to_token_ids(batch[0])
    assert ids_set.max() < gpt2.vocab_size


def test_batch_accept_equals_single_accepts(gpt2, schema_grammar):
    ids = gpt2.encode(VALID)
    # Matchers at different steps; half get the document's next token, half a token the
    # grammar refuses there (the mask says which), which must change nothing.
    batch, single = [], []
    for n in range(0, len(ids) - 1, 2):
        a, b = stackmask.GrammarMatcher(schema_grammar), stackmask.GrammarMatcher(schema_grammar)
        assert a.accept_tokens(ids[:n]) and b.accept_tokens(ids[:n])
        batch.append(a)
        single.append(b)
    refused = []
    for m in single:
        banned = set(range(gpt2.vocab_size)) - set(allowed(m, gpt2.vocab_size))
        refused.append(min(banned))
    tokens = [ids[m.num_accepted_tokens] if i % 2 == 0 else refused[i]
              for i, m in enumerate(single)]
    got = stackmask.accept_token_batch(batch, tokens)
    want = [m.accept_token(t) for m, t in zip(single, tokens)]
    assert got == want
    assert got == [i % 2 == 0 for i in range(len(tokens))]
    for a, b in zip(batch, single):
        assert a.num_accepted_tokens == b.num_accepted_tokens
        assert allowed(a, gpt2.vocab_size) == allowed(b, gpt2.vocab_size)
    # Bad input commits nothing: an unknown id anywhere, a length mismatch, a matcher twice.
    before = [m.num_accepted_tokens for m in batch]
    with pytest.raises(stackmask.StackmaskError, match="out of range"):
        stackmask.accept_token_batch(batch[:2], [ids[0], gpt2.vocab_size])
    with pytest.raises(stackmask.StackmaskError, match="matchers for"):
        stackmask.accept_token_batch(batch[:2], [ids[0]])
    with pytest.raises(RuntimeError):
        stackmask.accept_token_batch([batch[0], batch[0]], [ids[0], ids[0]])
    assert [m.num_accepted_tokens for m in batch] == before


def test_engine_replay_timings_cover_every_token(gpt2, schema_grammar):
    ids = gpt2.encode(VALID)
    timings = stackmask._core._replay_timings(schema_grammar, ids)
    assert len(timings) == len(ids) and all(a > 0 and b > 0 for a, b in timings)
    start = set(allowed(stackmask.GrammarMatcher(schema_grammar), gpt2.vocab_size))
    refused = min(set(range(gpt2.vocab_size)) - start)
    with pytest.raises(stackmask.StackmaskError):
        stackmask._core._replay_timings(schema_grammar, [refused])


def test_serialize_roundtrip(gpt2, schema_grammar):
    data = schema_grammar.serialize()
    assert isinstance(data, bytes) and len(data) > 0
    for loaded in (
        stackmask.CompiledGrammar.deserialize(data),
        stackmask.CompiledGrammar.deserialize(data, gpt2),
    ):
        a, b = stackmask.GrammarMatcher(schema_grammar), stackmask.GrammarMatcher(loaded)
        for t in gpt2.encode(VALID)[:8]:
            assert allowed(a, gpt2.vocab_size) == allowed(b, gpt2.vocab_size)
            assert a.accept_token(t) and b.accept_token(t)
    with pytest.raises(stackmask.StackmaskError):
        stackmask.CompiledGrammar.deserialize(data[:-7])
    corrupt = bytearray(data)
    corrupt[len(corrupt) // 2] ^= 0x40
    with pytest.raises(stackmask.StackmaskError):
        stackmask.CompiledGrammar.deserialize(bytes(corrupt))
    with pytest.raises(stackmask.StackmaskError, match="another vocabulary"):
        stackmask.CompiledGrammar.deserialize(data, stackmask.TokenizerInfo.builtin())


def test_background_compile_masks_as_the_eager_one(gpt2, compiler, schema_grammar):
    # The automaton comes on another thread; until then masks walk the vocabulary. Either
    # way every mask equals the eagerly compiled grammar's, and once `wait()` returns the
    # grammar is built and serializes to an artifact that loads and masks alike.
    bg = compiler.compile_json_schema(SCHEMA, background=True)
    a, b = stackmask.GrammarMatcher(schema_grammar), stackmask.GrammarMatcher(bg)
    for t in gpt2.encode(VALID):
        assert allowed(a, gpt2.vocab_size) == allowed(b, gpt2.vocab_size)
        assert a.accept_token(t) and b.accept_token(t)
    assert b.is_accepting()
    bg.wait()
    assert bg.is_built
    loaded = stackmask.CompiledGrammar.deserialize(bg.serialize(), gpt2)
    c = stackmask.GrammarMatcher(loaded)
    b.reset()
    for t in gpt2.encode(VALID)[:6]:
        assert allowed(b, gpt2.vocab_size) == allowed(c, gpt2.vocab_size)
        assert b.accept_token(t) and c.accept_token(t)


def test_bad_bitmasks_raise_clear_errors(gpt2, schema_grammar):
    m = stackmask.GrammarMatcher(schema_grammar)
    words = (gpt2.vocab_size + 31) // 32
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.int64))
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.float32))
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(np.zeros(words, dtype=np.int32))
    with pytest.raises(stackmask.StackmaskError, match="words"):
        m.fill_next_token_bitmask(np.zeros((1, words - 1), dtype=np.int32))
    with pytest.raises(stackmask.StackmaskError, match="out of range"):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), 2)
    with pytest.raises(stackmask.StackmaskError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((2, 2 * words), dtype=np.int32)[:, ::2])
    with pytest.raises(stackmask.StackmaskError, match="rows"):
        stackmask.fill_next_token_bitmask_batch([m, m], np.zeros((1, words), dtype=np.int32))


def test_bad_tokens_and_grammars_raise_clear_errors(gpt2, compiler, schema_grammar):
    m = stackmask.GrammarMatcher(schema_grammar)
    with pytest.raises(stackmask.StackmaskError, match="out of range"):
        m.accept_token(gpt2.vocab_size)
    with pytest.raises(stackmask.StackmaskError, match="out of range"):
        m.validate_tokens([1, 2, 10**6])
    with pytest.raises(stackmask.StackmaskError, match=r"2:\d+"):
        compiler.compile_lark('start: "a"\nbad rule here\n')
    with pytest.raises(stackmask.StackmaskError, match="uniqueItems") as refused:
        compiler.compile_json_schema('{"type": "array", "uniqueItems": true}')
    assert refused.value.kind == "unsupported"
    assert refused.value.keyword == "uniqueItems" and refused.value.pointer == ""
    with pytest.raises(stackmask.StackmaskError) as big:
        compiler.compile_json_schema('{"type": "string", "format": "date"}', max_lexer_states=5)
    assert big.value.kind == "too_large" and big.value.keyword is None
    with pytest.raises(stackmask.StackmaskError):
        compiler.compile_json_schema("{not json")
    lenient = compiler.compile_json_schema(
        '{"type": "array", "uniqueItems": true}', lenient=True
    )
    assert isinstance(lenient, stackmask.CompiledGrammar)
    assert issubclass(stackmask.StackmaskError, ValueError)


def test_gbnf_and_regex_grammars(gpt2, compiler):
    g = compiler.compile_gbnf('root ::= "yes" | "no"')
    m = stackmask.GrammarMatcher(g)
    assert m.accept_tokens(gpt2.encode("no"))
    assert m.is_accepting()
    r = compiler.compile_regex(r"\d{3}-\d{4}")
    m = stackmask.GrammarMatcher(r)
    assert m.validate_tokens(gpt2.encode("555-1234")) == len(gpt2.encode("555-1234"))
    assert m.accept_tokens(gpt2.encode("555-1234")) and m.is_accepting()
    assert not stackmask.GrammarMatcher(r).accept_tokens(gpt2.encode("555-12a4"))


def test_forced_tokens_are_canonical_and_leave_the_state_alone(gpt2, compiler):
    grammar = (
        'start: "<tool_call>{\\"name\\": \\"get_weather\\", \\"city\\": " CITY "}</tool_call>"\n'
        'CITY: /"[A-Za-z]+"/\n'
    )
    doc = '<tool_call>{"name": "get_weather", "city": "Paris"}</tool_call>'
    m = stackmask.GrammarMatcher(compiler.compile_lark(grammar))
    assert m.find_jump_forward_string() == '<tool_call>{"name": "get_weather", "city": "'
    forced = m.find_forced_tokens()
    ids = gpt2.encode(doc)
    assert len(forced) >= 5 and forced == ids[: len(forced)]
    assert m.num_accepted_tokens == 0
    assert m.accept_tokens(forced)
    assert m.accept_tokens(ids[len(forced):])
    assert m.find_forced_tokens() == [] and m.is_accepting()


def test_is_rejected_on_a_viable_prefix_without_completion(gpt2, compiler):
    m = stackmask.GrammarMatcher(compiler.compile_lark('start: "x" "a" "b" | "y" "ab"\n'))
    assert not m.is_rejected()
    assert m.accept_tokens(gpt2.encode("x"))
    assert m.is_rejected() and allowed(m, gpt2.vocab_size) == set()
    m.rollback(1)
    assert m.accept_tokens(gpt2.encode("yab")) and not m.is_rejected()


def test_droppable_terminal_runs_syncode_go(gpt2):
    """SynCode's Go grammar with its parser's rule (`EOS` droppable): a program whose
    comments stand before the package clause and inside blocks decodes to the end; without
    the rule its first token is masked out; an unknown name is an error."""
    grammar = (pathlib.Path(SHARED) / "grammars" / "syncode" / "go.lark").read_text()
    doc = (ROOT / "tests" / "data" / "docs" / "comments.go").read_text()
    compiler = stackmask.GrammarCompiler(gpt2)
    m = stackmask.GrammarMatcher(compiler.compile_lark(grammar, droppable=["EOS"]))
    ids = gpt2.encode(doc)
    for t in ids:
        assert t in allowed(m, gpt2.vocab_size)
        assert m.accept_token(t)
    assert m.is_accepting()
    plain = stackmask.GrammarMatcher(compiler.compile_lark(grammar))
    assert ids[0] not in allowed(plain, gpt2.vocab_size)
    with pytest.raises(stackmask.StackmaskError, match="NOPE"):
        compiler.compile_lark(grammar, droppable=["NOPE"])


def test_indentation_runs_in_masks(gpt2):
    """Behind Lark's indenter the automaton masks blocks: every token of a nested program
    is allowed and EOS only at its end (open levels close there); a line indented to a
    level never opened is masked out where its first word would end the newline. A
    grammar whose parses cannot show the indentation (a newline between brackets) is
    refused by name, and the indenter's options are checked."""
    grammar = (
        "start: (_NL | stmt)*\n"
        'stmt: NAME "=" NAME _NL | "if" NAME ":" _NL _INDENT stmt+ _DEDENT\n'
        "NAME: /[a-z]+/\n_NL: /\\n[ \\t]*/+\n%ignore \" \"\n%declare _INDENT _DEDENT\n"
    )
    compiler = stackmask.GrammarCompiler(gpt2)
    compiled = compiler.compile_lark(grammar, tab_len=4)
    good = "if a:\n    if b:\n        x = y\n    z = w\n"
    m = stackmask.GrammarMatcher(compiled)
    for t in gpt2.encode(good):
        assert t in allowed(m, gpt2.vocab_size)
        assert m.accept_token(t)
    assert m.is_accepting() and 50256 in allowed(m, gpt2.vocab_size)
    # A block opened and empty: the document cannot end there.
    m = stackmask.GrammarMatcher(compiled)
    for t in gpt2.encode("if a:\n"):
        assert m.accept_token(t)
    assert 50256 not in allowed(m, gpt2.vocab_size)
    # Two columns: no level is open there.
    bad = "if a:\n    if b:\n        x = y\n  z = w\n"
    m = stackmask.GrammarMatcher(compiled)
    seen = b""
    for t in gpt2.encode(bad):
        if t not in allowed(m, gpt2.vocab_size):
            break
        assert m.accept_token(t)
        seen += gpt2.token_bytes(t)
    else:
        raise AssertionError("the bad dedent was allowed")
    assert seen.startswith(b"if a:\n    if b:\n        x = y\n")
    assert b"z" not in seen
    renamed = grammar.replace("_NL", "NEWLINE").replace("_INDENT", "IND").replace("_DEDENT", "DED")
    with pytest.raises(stackmask.StackmaskError, match="%declare"):
        compiler.compile_lark(renamed)
    compiler.compile_lark(renamed, indenter=("NEWLINE", "IND", "DED"))
    between = grammar.replace('NAME "=" NAME _NL', '"(" NAME _NL NAME ")" _NL')
    with pytest.raises(stackmask.StackmaskError, match="between brackets"):
        compiler.compile_lark(between)
    with pytest.raises(stackmask.StackmaskError, match="tab width"):
        compiler.compile_lark('start: "a"\n', tab_len=4)


def test_longest_match_backs_up_in_masks(gpt2):
    """Under longest match `abccc` backs up to `ab c c c`: a complete document, so EOS is
    allowed after it; under maximal munch it is only a prefix of `abccc…d`. Every token of
    it is in the mask under both."""
    grammar = 'start: (AB | ABD | C)*\nAB: "ab"\nABD: /abc+d/\nC: "c"\n'
    compiler = stackmask.GrammarCompiler(gpt2)
    for longest, complete in [(False, False), (True, True)]:
        m = stackmask.GrammarMatcher(compiler.compile_lark(grammar, longest_match=longest))
        for t in gpt2.encode("abccc"):
            assert t in allowed(m, gpt2.vocab_size)
            assert m.accept_token(t)
        assert m.is_accepting() == complete
        assert (50256 in allowed(m, gpt2.vocab_size)) == complete


def test_special_tokens_are_allowed_where_the_grammar_names_them():
    path = SHARED / "tokenizers" / "llama3.json"
    if not path.exists():
        pytest.skip(f"needs {path} (../shared beside the checkout)")
    info = stackmask.TokenizerInfo.from_tokenizer_json(str(path))
    compiler = stackmask.GrammarCompiler(info)
    header, reserved = 128006, 128010  # <|start_header_id|>, <|reserved_special_token_5|>
    g = compiler.compile_lark('start: "call " <|start_header_id|> NUM <[128010]>\nNUM: /[0-9]+/\n')
    m = stackmask.GrammarMatcher(g)
    assert header not in allowed(m, info.vocab_size)
    assert m.accept_tokens(info.encode("call "))
    now = allowed(m, info.vocab_size)
    assert header in now and reserved not in now and len(now) == 1
    assert not m.accept_token(reserved)
    assert m.accept_token(header)
    assert m.accept_tokens(info.encode("42"))
    assert reserved in allowed(m, info.vocab_size)
    assert m.validate_tokens([reserved]) == 1
    assert m.accept_token(reserved) and m.is_accepting()
    with pytest.raises(stackmask.StackmaskError, match="no special token of that name"):
        compiler.compile_lark("start: <|no_such_token|>\n")
    with pytest.raises(stackmask.StackmaskError, match="end-of-sequence"):
        compiler.compile_gbnf("root ::= <|eot_id|>\n")


def test_json_schema_rules_in_lark_grammars(gpt2, compiler):
    grammar = (
        'start: "<tool_call>" body "</tool_call>"\n'
        'body: %json {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},'
        ' "required": ["n"], "additionalProperties": false}\n'
    )
    m = stackmask.GrammarMatcher(compiler.compile_lark(grammar))
    assert m.accept_tokens(gpt2.encode('<tool_call>{"n": '))
    # `n` is an integer of at most 5: a digit up to 5, or `-`, comes next; not 7.
    assert m.validate_tokens(gpt2.encode("7")) == 0
    assert m.accept_tokens(gpt2.encode("3}</tool_call>"))
    assert m.is_accepting()
    with pytest.raises(stackmask.StackmaskError, match=r"2:7: %json schema: .*uniqueItems"):
        compiler.compile_lark('start: body\nbody: %json {"type": "array", "uniqueItems": true}\n')
    # The schema options reach `%json`: lenient drops `uniqueItems`; compact allows no
    # whitespace between the body's tokens.
    compiler.compile_lark(
        'start: body\nbody: %json {"type": "array", "uniqueItems": true}\n', lenient=True
    )
    m = stackmask.GrammarMatcher(compiler.compile_lark(grammar, compact=True))
    assert m.accept_tokens(gpt2.encode('<tool_call>{"n":'))
    assert m.validate_tokens(gpt2.encode(" 3")) == 0
    assert m.accept_tokens(gpt2.encode("3}</tool_call>"))
    assert m.is_accepting()


def test_free_text_beside_json_rules_is_lexed_contextually(gpt2, compiler):
    grammar = (
        "start: TEXT? (call TEXT?)*\n"
        "TEXT: /[^<]+/\n"
        'call: "<tool_call>" body "</tool_call>"\n'
        'body: %json {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},'
        ' "required": ["n"], "additionalProperties": false}\n'
    )
    doc = 'Sure: {"n": 9} is text.<tool_call>{"n": 3}</tool_call> Done.'
    # `auto` lexes a grammar with `%json` contextually: the text around the call is
    # `TEXT`, the body the schema's.
    for lexing in ("auto", "contextual"):
        m = stackmask.GrammarMatcher(compiler.compile_lark(grammar, lexing=lexing))
        assert m.accept_tokens(gpt2.encode(doc[: doc.index("3")]))
        assert m.validate_tokens(gpt2.encode("7")) == 0
        assert m.accept_tokens(gpt2.encode(doc[doc.index("3") :]))
        assert m.is_accepting()
    # Lexed globally, `TEXT` takes the body's text (a longer match than `{`).
    m = stackmask.GrammarMatcher(compiler.compile_lark(grammar, lexing="global"))
    prefix = doc[: doc.index("<tool_call>") + len("<tool_call>")]
    assert m.accept_tokens(gpt2.encode(prefix))
    assert m.validate_tokens(gpt2.encode('{"n"')) == 0
    with pytest.raises(ValueError, match="lexing must be"):
        compiler.compile_lark(grammar, lexing="lazy")


def test_structural_tags_in_free_text(gpt2, compiler):
    tags = [
        {
            "begin": "<function=add>",
            "schema": {
                "type": "object",
                "properties": {"a": {"type": "integer", "maximum": 5}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "end": "</function>",
        }
    ]
    spec = stackmask.structural_tag_spec(tags, ["<function="], at_least_one=True)
    m = stackmask.GrammarMatcher(compiler.compile_structural_tag(spec))
    # Free text first, with braces and quotes a body would lex differently; no call yet,
    # so the sequence may not end.
    assert m.accept_tokens(gpt2.encode('Sure, {"x"} <b>: '))
    assert not m.is_accepting()
    # After the trigger, only a structure's begin; inside the body, the schema.
    assert m.accept_tokens(gpt2.encode("<function="))
    assert m.validate_tokens(gpt2.encode("sub>")) == 0
    assert m.accept_tokens(gpt2.encode('add>{"a": '))
    assert m.validate_tokens(gpt2.encode("7")) == 0
    assert m.accept_tokens(gpt2.encode("3}</function> Done."))
    assert m.is_accepting()
    with pytest.raises(stackmask.StackmaskError, match="structures 0 and 1 have the same begin"):
        compiler.compile_structural_tag(
            stackmask.structural_tag_spec(tags + tags, ["<function="])
        )
