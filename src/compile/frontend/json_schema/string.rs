//! JSON string literals as regular languages over their source bytes.
//!
//! A JSON Schema constrains the *decoded* value of a string, but the lexer reads the
//! literal as written, where a character may be spelled raw, with a short escape
//! (`\n`, `\"`, `\/`…) or as `\uXXXX` (hex in either case, astral characters as a
//! surrogate pair). One spelling rule narrows this: `\uXXXX` spells only what a JSON
//! serializer ever escapes that way — C0 controls, DEL and non-ASCII characters — never
//! printable ASCII (`\u0061` for `a`). Serializers (Python's `json.dumps` in both
//! `ensure_ascii` modes, serde_json, `JSON.stringify`) never write those, and allowing
//! them gave every character of every key and enum literal six more lexer states.
//! [`spell`] maps a regular language of values (a `regex-syntax` HIR
//! over Unicode scalar values) to the regular language of their literal spellings, so a
//! constrained string terminal accepts exactly the literals whose value satisfies the
//! constraint. [`parse_pattern`] reads an ECMA-262 `pattern` (search semantics, ASCII
//! `\d \w`, `.` excluding line terminators) into such a HIR. This module depends only on
//! `regex-syntax`.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};

/// The generic JSON string literal (any value), quotes included, under the spelling
/// rule: `\u` escapes of code points 0x00–0x1F and 0x7F–0xFFFF only (lone surrogates
/// included, as JSON's grammar allows them).
pub const ANY_STRING: &str = r#""([^"\\\x00-\x1f]|\\(["\\/bfnrt]|u(00[01][0-9a-fA-F]|007[fF]|00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})))*""#;

/// Below this, only C0 controls (`< 0x20`) have `\u` spellings: printable ASCII is
/// written raw or with its short escape.
const FIRST_ESCAPED_ABOVE_CONTROLS: u32 = 0x7F;

/// Why a value language cannot be spelled as literals.
pub type SpellError = String;

fn class(ranges: &[(u32, u32)]) -> Hir {
    let rs = ranges.iter().filter_map(|&(a, b)| {
        Some(ClassUnicodeRange::new(
            char::from_u32(a)?,
            char::from_u32(b)?,
        ))
    });
    Hir::class(Class::Unicode(ClassUnicode::new(rs)))
}

/// Hex digit `v`'s spellings as a class (lower and upper case letters).
fn hex_digit_class(a: u8, b: u8) -> Hir {
    let mut rs: Vec<(u32, u32)> = Vec::new();
    for v in a..=b {
        let c = if v < 10 { b'0' + v } else { b'a' + v - 10 } as u32;
        rs.push((c, c));
        if v >= 10 {
            let u = (b'A' + v - 10) as u32;
            rs.push((u, u));
        }
    }
    class(&rs)
}

/// Splits `[lo, hi]` into sequences of per-digit ranges over `width` digits of `base`
/// (the classic range-to-regex split; at most `2·width − 1` sequences).
pub(super) fn digit_seqs(lo: u128, hi: u128, width: u32, base: u128) -> Vec<Vec<(u8, u8)>> {
    debug_assert!(lo <= hi);
    if width == 1 {
        return vec![vec![(lo as u8, hi as u8)]];
    }
    let unit = base.pow(width - 1);
    let (dl, rl) = (lo / unit, lo % unit);
    let (dh, rh) = (hi / unit, hi % unit);
    let prefixed = |d: u128, rest: Vec<Vec<(u8, u8)>>| {
        rest.into_iter()
            .map(|mut s| {
                s.insert(0, (d as u8, d as u8));
                s
            })
            .collect::<Vec<_>>()
    };
    if dl == dh {
        return prefixed(dl, digit_seqs(rl, rh, width - 1, base));
    }
    let mut out = Vec::new();
    let mut first_full = dl;
    if rl != 0 {
        out.extend(prefixed(dl, digit_seqs(rl, unit - 1, width - 1, base)));
        first_full = dl + 1;
    }
    let tail_partial = rh != unit - 1;
    let last_full = if tail_partial { dh - 1 } else { dh };
    if first_full <= last_full {
        let mut s = vec![(first_full as u8, last_full as u8)];
        s.extend(std::iter::repeat_n(
            (0u8, (base - 1) as u8),
            (width - 1) as usize,
        ));
        out.push(s);
    }
    if tail_partial {
        out.extend(prefixed(dh, digit_seqs(0, rh, width - 1, base)));
    }
    out
}

/// `\u` followed by four hex digits whose value is in `[lo, hi]`.
fn u_escape(lo: u32, hi: u32) -> Hir {
    let seqs = digit_seqs(lo as u128, hi as u128, 4, 16);
    Hir::alternation(
        seqs.into_iter()
            .map(|s| {
                let mut parts = vec![Hir::literal(*b"\\u")];
                parts.extend(s.into_iter().map(|(a, b)| hex_digit_class(a, b)));
                Hir::concat(parts)
            })
            .collect(),
    )
}

/// The `\uXXXX` spellings of the code points in `[lo, hi]` (surrogates excluded; astral
/// code points as surrogate pairs).
fn u_spellings(lo: u32, hi: u32, out: &mut Vec<Hir>) {
    let bmp = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi.min(0xFFFF))];
    for (a, b) in bmp {
        if a <= b {
            out.push(u_escape(a, b));
        }
    }
    let (a, b) = (lo.max(0x10000), hi);
    if a > b {
        return;
    }
    let split = |c: u32| {
        let v = c - 0x10000;
        (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
    };
    let ((hl, ll), (hh, lh)) = (split(a), split(b));
    let pair =
        |h: (u32, u32), l: (u32, u32)| Hir::concat(vec![u_escape(h.0, h.1), u_escape(l.0, l.1)]);
    if hl == hh {
        out.push(pair((hl, hl), (ll, lh)));
    } else {
        out.push(pair((hl, hl), (ll, 0xDFFF)));
        if hl + 1 < hh {
            out.push(pair((hl + 1, hh - 1), (0xDC00, 0xDFFF)));
        }
        out.push(pair((hh, hh), (0xDC00, lh)));
    }
}

/// Every spelling of one character drawn from `ranges` inside a JSON string literal
/// (under the module's spelling rule for `\u`).
fn spell_class(ranges: &[(u32, u32)]) -> Hir {
    const SHORT: [(u32, &[u8]); 8] = [
        ('"' as u32, b"\\\""),
        ('\\' as u32, b"\\\\"),
        ('/' as u32, b"\\/"),
        (0x08, b"\\b"),
        (0x0C, b"\\f"),
        ('\n' as u32, b"\\n"),
        ('\r' as u32, b"\\r"),
        ('\t' as u32, b"\\t"),
    ];
    let contains = |c: u32| ranges.iter().any(|&(a, b)| a <= c && c <= b);
    // Raw: anything but `"`, `\` and C0 controls.
    let mut raw: Vec<(u32, u32)> = Vec::new();
    for &(a, b) in ranges {
        let a = a.max(0x20);
        if a > b {
            continue;
        }
        let mut start = a;
        for cut in ['"' as u32, '\\' as u32] {
            if start <= cut && cut <= b {
                if start < cut {
                    raw.push((start, cut - 1));
                }
                start = cut + 1;
            }
        }
        if start <= b {
            raw.push((start, b));
        }
    }
    let mut alts = Vec::new();
    if !raw.is_empty() {
        alts.push(class(&raw));
    }
    for (c, spelling) in SHORT {
        if contains(c) {
            alts.push(Hir::literal(spelling));
        }
    }
    for &(a, b) in ranges {
        if a < 0x20 {
            u_spellings(a, b.min(0x1F), &mut alts);
        }
        if b >= FIRST_ESCAPED_ABOVE_CONTROLS {
            u_spellings(a.max(FIRST_ESCAPED_ABOVE_CONTROLS), b, &mut alts);
        }
    }
    Hir::alternation(alts)
}

/// The spellings of `c` alone.
fn spell_char(c: char) -> Hir {
    spell_class(&[(c as u32, c as u32)])
}

/// Maps a language of string values to the language of their JSON literal bodies
/// (without the quotes). Anchors and other look-around must already be gone.
pub fn spell(h: &Hir) -> Result<Hir, SpellError> {
    Ok(match h.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).map_err(|_| "a non-UTF-8 literal".to_string())?;
            Hir::concat(s.chars().map(spell_char).collect())
        }
        HirKind::Class(Class::Unicode(c)) => {
            let rs: Vec<(u32, u32)> = c
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect();
            spell_class(&rs)
        }
        HirKind::Class(Class::Bytes(_)) => return Err("a byte class".into()),
        HirKind::Look(_) => return Err("an anchor or assertion inside the pattern".into()),
        HirKind::Repetition(r) => {
            let mut sub = spell(&r.sub)?;
            if matches!(sub.kind(), HirKind::Repetition(_)) {
                // The HIR printer writes a repeated repetition without a group (`x+?` for
                // `(?:x+)?`), which reads back as a lazy `+`. A group keeps its meaning;
                // the index is irrelevant because the text is parsed again.
                sub = Hir::capture(regex_syntax::hir::Capture {
                    index: 1,
                    name: None,
                    sub: Box::new(sub),
                });
            }
            Hir::repetition(Repetition {
                min: r.min,
                max: r.max,
                greedy: r.greedy,
                sub: Box::new(sub),
            })
        }
        HirKind::Capture(c) => spell(&c.sub)?,
        HirKind::Concat(v) => Hir::concat(v.iter().map(spell).collect::<Result<_, _>>()?),
        HirKind::Alternation(v) => Hir::alternation(v.iter().map(spell).collect::<Result<_, _>>()?),
    })
}

/// Any one character (a Unicode scalar value).
pub fn any_char() -> Hir {
    class(&[(0, 0x10FFFF)])
}

/// The quoted terminal regex for a value language.
pub fn quoted_regex(value: &Hir) -> Result<String, SpellError> {
    let body = spell(value)?;
    Ok(Hir::concat(vec![Hir::literal(*b"\""), body, Hir::literal(*b"\"")]).to_string())
}

/// The quoted terminal regex matching every spelling of exactly `value`.
pub fn literal_regex(value: &str) -> String {
    let body = Hir::concat(value.chars().map(spell_char).collect());
    Hir::concat(vec![Hir::literal(*b"\""), body, Hir::literal(*b"\"")]).to_string()
}

/// Fewest and most characters of a value in `h`'s language (`None`: unbounded).
pub fn char_len(h: &Hir) -> (u32, Option<u32>) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => (0, Some(0)),
        HirKind::Literal(lit) => {
            let n = String::from_utf8_lossy(&lit.0).chars().count() as u32;
            (n, Some(n))
        }
        HirKind::Class(_) => (1, Some(1)),
        HirKind::Repetition(r) => {
            let (a, b) = char_len(&r.sub);
            let max = match (b, r.max) {
                (Some(0), _) => Some(0),
                (Some(b), Some(m)) => b.checked_mul(m),
                _ => None,
            };
            (a.saturating_mul(r.min), max)
        }
        HirKind::Capture(c) => char_len(&c.sub),
        HirKind::Concat(v) => v.iter().map(char_len).fold((0, Some(0)), |(a, b), (c, d)| {
            (
                a.saturating_add(c),
                b.zip(d).and_then(|(x, y)| x.checked_add(y)),
            )
        }),
        HirKind::Alternation(v) => {
            let parts: Vec<_> = v.iter().map(char_len).collect();
            let min = parts.iter().map(|p| p.0).min().unwrap_or(0);
            let max = parts.iter().try_fold(0u32, |m, p| p.1.map(|x| m.max(x)));
            (min, max)
        }
    }
}

/// Whether `h` repeats something a bounded number of times other than as an option
/// (`x{4}`, `x{2,8}`, not `x?`): such a pattern counts characters itself.
pub fn has_bounded_repetition(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) | HirKind::Literal(_) | HirKind::Class(_) => false,
        HirKind::Repetition(r) => r.max.is_some_and(|m| m > 1) || has_bounded_repetition(&r.sub),
        HirKind::Capture(c) => has_bounded_repetition(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(has_bounded_repetition),
    }
}

/// Rewrites ECMA-262 pattern syntax into `regex-syntax` syntax with the same meaning:
/// ASCII `\d \w \s`-style classes, `.` without line terminators, `[` literal inside a
/// class, `{` literal unless it starts a quantifier. Look-around and back-references
/// are refused.
fn ecma_to_rust(p: &str) -> Result<String, String> {
    const WS: &str = r"\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err("a trailing backslash".into());
                };
                i += 2;
                match n {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str("[0-9A-Za-z_]"),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    's' => out.push_str(&format!("[{WS}]")),
                    'S' => out.push_str(&format!("[^{WS}]")),
                    'b' if in_class => out.push_str(r"\x08"),
                    'b' | 'B' => return Err("a word-boundary assertion".into()),
                    '1'..='9' => return Err("a back-reference".into()),
                    '0' => out.push_str(r"\x00"),
                    'c' => return Err("a control escape (\\c)".into()),
                    'k' => return Err("a named back-reference".into()),
                    'p' | 'P' => {
                        out.push('\\');
                        out.push(n);
                    }
                    'u' if chars.get(i) == Some(&'{') => {
                        out.push_str(r"\x");
                    }
                    'u' => {
                        let hex: String = chars.iter().skip(i).take(4).collect();
                        if hex.len() == 4 && hex.chars().all(|h| h.is_ascii_hexdigit()) {
                            out.push_str(&format!(r"\x{{{hex}}}"));
                            i += 4;
                        } else {
                            out.push('u');
                        }
                    }
                    'x' => {
                        let hex: String = chars.iter().skip(i).take(2).collect();
                        if hex.len() == 2 && hex.chars().all(|h| h.is_ascii_hexdigit()) {
                            out.push_str(&format!(r"\x{{{hex}}}"));
                            i += 2;
                        } else {
                            out.push('x');
                        }
                    }
                    'n' | 'r' | 't' | 'f' | 'v' => {
                        out.push_str(match n {
                            'n' => r"\n",
                            'r' => r"\r",
                            't' => r"\t",
                            'f' => r"\x0C",
                            _ => r"\x0B",
                        });
                    }
                    c if c.is_ascii_alphanumeric() => {
                        return Err(format!("the escape \\{c}"));
                    }
                    c => out.push_str(&regex_syntax::escape(&c.to_string())),
                }
                continue;
            }
            '[' if in_class => out.push_str(r"\["),
            '[' => {
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    return Err("an empty character class".into());
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.get(i + 1) == Some(&'-') => out.push_str(r"\-"),
            '.' if !in_class => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            '(' if !in_class && chars.get(i + 1) == Some(&'?') => {
                let rest: String = chars.iter().skip(i + 2).take(2).collect();
                if rest.starts_with('=')
                    || rest.starts_with('!')
                    || rest.starts_with("<=")
                    || rest.starts_with("<!")
                {
                    return Err("a look-around assertion".into());
                }
                out.push('(');
            }
            '{' if !in_class => {
                let rest: String = chars[i..].iter().collect();
                let quant = rest.find('}').map(|e| &rest[1..e]).is_some_and(|body| {
                    let mut parts = body.splitn(2, ',');
                    let a = parts.next().unwrap_or("");
                    !a.is_empty()
                        && a.chars().all(|d| d.is_ascii_digit())
                        && parts
                            .next()
                            .is_none_or(|b| b.chars().all(|d| d.is_ascii_digit()))
                });
                out.push_str(if quant { "{" } else { r"\{" });
            }
            '}' if !in_class => {
                // A closing brace belongs to a quantifier iff an open one is pending.
                let opened = out
                    .rfind('{')
                    .is_some_and(|o| !out[..o].ends_with('\\') && !out[o..].contains('}'));
                out.push_str(if opened { "}" } else { r"\}" });
            }
            _ => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err("an unclosed character class".into());
    }
    Ok(out)
}

fn is_look(h: &Hir, look: Look) -> bool {
    match h.kind() {
        HirKind::Look(l) => *l == look,
        HirKind::Capture(c) => is_look(&c.sub, look),
        _ => false,
    }
}

fn has_look(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Look(_) => true,
        HirKind::Repetition(r) => has_look(&r.sub),
        HirKind::Capture(c) => has_look(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(has_look),
        _ => false,
    }
}

/// One top-level alternative with its anchors stripped: (body, anchored at start, at end).
fn strip_anchors(h: &Hir) -> (Hir, bool, bool) {
    match h.kind() {
        HirKind::Capture(c) => strip_anchors(&c.sub),
        HirKind::Look(Look::Start) => (Hir::empty(), true, false),
        HirKind::Look(Look::End) => (Hir::empty(), false, true),
        HirKind::Concat(v) => {
            let mut items: &[Hir] = v;
            let mut start = false;
            let mut end = false;
            while let Some(first) = items.first().filter(|f| is_look(f, Look::Start)) {
                let _ = first;
                start = true;
                items = &items[1..];
            }
            while let Some(_last) = items.last().filter(|l| is_look(l, Look::End)) {
                end = true;
                items = &items[..items.len() - 1];
            }
            (Hir::concat(items.to_vec()), start, end)
        }
        _ => (h.clone(), false, false),
    }
}

/// One way a pattern can match: whether it needs the value's start (`^`) and end (`$`)
/// there, and the text it matches, free of anchors.
type Anchored = (bool, bool, Hir);

/// The ways `h` can match (see [`Anchored`]). `^` and `$` hold only at the ends of the
/// value (ECMA-262 without the `m` flag), so a part after a `$` or before a `^` must match
/// the empty string there, and a way where it cannot is dropped.
fn anchored_ways(h: &Hir) -> Result<Vec<Anchored>, String> {
    let matches_empty = |h: &Hir| h.properties().minimum_len() == Some(0);
    // Parts without anchors stay whole: splitting their alternations would multiply the
    // ways (and the search automaton's states) for nothing.
    if !has_look(h) {
        return Ok(vec![(false, false, h.clone())]);
    }
    match h.kind() {
        HirKind::Look(Look::Start) => Ok(vec![(true, false, Hir::empty())]),
        HirKind::Look(Look::End) => Ok(vec![(false, true, Hir::empty())]),
        HirKind::Look(_) => Err("a word-boundary assertion".into()),
        HirKind::Capture(c) => anchored_ways(&c.sub),
        // `(…$)?` is one alternation; a repeated anchor is not compiled.
        HirKind::Repetition(r) if has_look(&r.sub) && r.max == Some(1) => {
            let mut out = anchored_ways(&r.sub)?;
            if r.min == 0 {
                out.push((false, false, Hir::empty()));
            }
            Ok(out)
        }
        HirKind::Repetition(r) if has_look(&r.sub) => Err("an anchor under a repetition".into()),
        HirKind::Alternation(v) => {
            let mut out = Vec::new();
            for alt in v {
                out.extend(anchored_ways(alt)?);
            }
            Ok(out)
        }
        HirKind::Concat(v) => {
            let mut ways: Vec<(bool, bool, Vec<Hir>)> = vec![(false, false, Vec::new())];
            for item in v {
                let next_ways = anchored_ways(item)?;
                let mut joined = Vec::new();
                for (s, e, parts) in &ways {
                    for (s2, e2, body) in &next_ways {
                        let mut parts = parts.clone();
                        if *s2 {
                            // `^` here: everything before it matched nothing.
                            if !parts.iter().all(matches_empty) {
                                continue;
                            }
                            parts.clear();
                        }
                        if *e {
                            // After a `$`: this part matches nothing.
                            if !matches_empty(body) {
                                continue;
                            }
                        } else {
                            parts.push(body.clone());
                        }
                        joined.push((*s || *s2, *e || *e2, parts));
                    }
                }
                ways = joined;
            }
            Ok(ways
                .into_iter()
                .map(|(s, e, parts)| (s, e, Hir::concat(parts)))
                .collect())
        }
        _ => Ok(vec![(false, false, h.clone())]),
    }
}

/// An ECMA-262 pattern as written (match semantics, anchors kept).
fn parse_ecma(pattern: &str) -> Result<Hir, String> {
    let rust = ecma_to_rust(pattern)?;
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(&rust)
        .map_err(|e| {
            let msg = e.to_string();
            msg.lines().last().unwrap_or("invalid").trim().to_string()
        })
}

/// The language of values matched by an ECMA-262 `pattern` under JSON Schema's search
/// semantics (a value is valid iff the pattern matches somewhere in it).
pub fn parse_pattern(pattern: &str) -> Result<Hir, String> {
    let h = parse_ecma(pattern)?;
    let any = Hir::repetition(Repetition {
        min: 0,
        max: None,
        greedy: true,
        sub: Box::new(any_char()),
    });
    let mut branches = Vec::new();
    for (start, end, body) in anchored_ways(&h)? {
        let mut parts = Vec::new();
        if !start {
            parts.push(any.clone());
        }
        parts.push(body);
        if !end {
            parts.push(any.clone());
        }
        branches.push(Hir::concat(parts));
    }
    Ok(Hir::alternation(branches))
}

/// What a `pattern` says about property names, for `patternProperties` beside
/// additional properties: the names it does *not* match must be told apart from those it
/// does. For the common shapes the complement is written out as a small regex; other
/// patterns are subtracted from the any-name terminal in the lexer builder instead.
pub enum PatternSplit {
    /// `^literal$`: exactly one name.
    Name(String),
    /// The pattern matches every string.
    All,
    /// The value language of the names the pattern does not match.
    Complement(Hir),
}

/// Splits `pattern` (ECMA-262, search semantics) for `patternProperties`, or `None` when
/// its complement is not one of the handled shapes: a single class repetition
/// `C{m,n}` — or one character, or nothing — anchored at both ends, at one, or (for
/// `m <= 1`) at neither.
pub fn split_pattern(pattern: &str) -> Option<PatternSplit> {
    let h = parse_ecma(pattern).ok()?;
    if matches!(h.kind(), HirKind::Alternation(_)) {
        return None;
    }
    let (body, start, end) = strip_anchors(&h);
    if has_look(&body) {
        return None;
    }
    if start && end {
        if let Some(name) = literal_text(&body) {
            return Some(PatternSplit::Name(name));
        }
    }
    if start != end {
        if let Some(lit) = literal_text(&body).filter(|l| l.chars().count() > 1) {
            return Some(PatternSplit::Complement(affix_complement(&lit, start)));
        }
    }
    let (c, min, max) = class_repetition(&body)?;
    let mut not_c = c.clone();
    not_c.negate();
    let not_c = Hir::class(Class::Unicode(not_c));
    let c = Hir::class(Class::Unicode(c));
    let any = || rep(any_char(), 0, None);
    // Strings of fewer than `min` characters, all in C (short of the required run).
    let short = (min > 0).then(|| rep(c.clone(), 0, Some(min - 1)));
    let mut alts: Vec<Hir> = Vec::new();
    match (start, end) {
        (true, true) => {
            alts.push(Hir::concat(vec![any(), not_c, any()]));
            alts.extend(short);
            if let Some(n) = max {
                alts.push(rep(c, n + 1, None));
            }
        }
        (true, false) if min > 0 => {
            alts.extend(short.clone());
            alts.push(Hir::concat(vec![
                short.unwrap_or_else(Hir::empty),
                not_c,
                any(),
            ]));
        }
        (false, true) if min > 0 => {
            alts.extend(short.clone());
            alts.push(Hir::concat(vec![
                any(),
                not_c,
                short.unwrap_or_else(Hir::empty),
            ]));
        }
        // Anchored at one end (or neither) with no required character: every string.
        (_, _) if min == 0 => return Some(PatternSplit::All),
        (false, false) if min == 1 => alts.push(rep(not_c, 0, None)),
        _ => return None,
    }
    Some(PatternSplit::Complement(Hir::alternation(alts)))
}

/// The strings that do not start (`prefix`) or end with `lit`: a proper prefix (suffix)
/// of it, or one that departs from it at some character.
fn affix_complement(lit: &str, prefix: bool) -> Hir {
    let mut chars: Vec<char> = lit.chars().collect();
    if !prefix {
        chars.reverse();
    }
    let lit_hir = |cs: &[char]| {
        let mut v: Vec<Hir> = cs
            .iter()
            .map(|&c| Hir::literal(c.to_string().into_bytes()))
            .collect();
        if !prefix {
            v.reverse();
        }
        Hir::concat(v)
    };
    let mut alts = Vec::new();
    for j in 0..chars.len() {
        let kept = lit_hir(&chars[..j]);
        alts.push(kept.clone());
        let mut other = ClassUnicode::new([ClassUnicodeRange::new(chars[j], chars[j])]);
        other.negate();
        let mut seq = vec![
            kept,
            Hir::class(Class::Unicode(other)),
            rep(any_char(), 0, None),
        ];
        if !prefix {
            seq.reverse();
        }
        alts.push(Hir::concat(seq));
    }
    Hir::alternation(alts)
}

fn rep(sub: Hir, min: u32, max: Option<u32>) -> Hir {
    Hir::repetition(Repetition {
        min,
        max,
        greedy: true,
        sub: Box::new(sub),
    })
}

/// The text of a literal HIR (captures looked through), if it is one.
fn literal_text(h: &Hir) -> Option<String> {
    match h.kind() {
        HirKind::Capture(c) => literal_text(&c.sub),
        HirKind::Literal(l) => String::from_utf8(l.0.to_vec()).ok(),
        HirKind::Empty => Some(String::new()),
        HirKind::Concat(v) => v.iter().map(literal_text).collect(),
        _ => None,
    }
}

/// `C{min,max}` for a Unicode class C (one character is `C{1,1}`, nothing `C{0,0}`).
fn class_repetition(h: &Hir) -> Option<(ClassUnicode, u32, Option<u32>)> {
    match h.kind() {
        HirKind::Capture(c) => class_repetition(&c.sub),
        HirKind::Empty => Some((ClassUnicode::empty(), 0, Some(0))),
        HirKind::Class(Class::Unicode(c)) => Some((c.clone(), 1, Some(1))),
        HirKind::Literal(l) => {
            let s = std::str::from_utf8(&l.0).ok()?;
            let mut chars = s.chars();
            let ch = chars.next()?;
            chars.next().is_none().then(|| {
                (
                    ClassUnicode::new([ClassUnicodeRange::new(ch, ch)]),
                    1,
                    Some(1),
                )
            })
        }
        HirKind::Repetition(r) => {
            let (c, 1, Some(1)) = class_repetition(&r.sub)? else {
                return None;
            };
            Some((c, r.min, r.max))
        }
        _ => None,
    }
}

/// Parses a value-language regex written in `regex-syntax` syntax (the built-in formats).
pub fn parse_value_regex(re: &str) -> Hir {
    // The callers pass fixed, tested regexes.
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(re)
        .expect("built-in value regex")
}

/// A matcher deciding whether a decoded string value is in a value language (the
/// intersection of one or more, minus the union of others).
pub struct ValueMatcher {
    all: Vec<regex_automata::meta::Regex>,
    none: Vec<regex_automata::meta::Regex>,
    /// Fewest and most characters, when checked by counting (long lengths, which have
    /// no regex here).
    lengths: Option<(u64, Option<u64>)>,
}

fn full_match(h: &Hir) -> Result<regex_automata::meta::Regex, String> {
    let anchored = Hir::concat(vec![
        Hir::look(Look::Start),
        h.clone(),
        Hir::look(Look::End),
    ]);
    regex_automata::meta::Regex::builder()
        .build_from_hir(&anchored)
        .map_err(|e| e.to_string())
}

impl ValueMatcher {
    /// Builds the full-match matcher for `h`.
    pub fn new(h: &Hir) -> Result<Self, String> {
        Self::all(std::slice::from_ref(h))
    }

    /// The matcher of the intersection of the languages `hs`.
    pub fn all(hs: &[Hir]) -> Result<Self, String> {
        Ok(ValueMatcher {
            all: hs.iter().map(full_match).collect::<Result<_, _>>()?,
            none: Vec::new(),
            lengths: None,
        })
    }

    /// The strings of `lo` to `hi` characters.
    pub fn lengths(lo: u64, hi: Option<u64>) -> Self {
        ValueMatcher {
            all: Vec::new(),
            none: Vec::new(),
            lengths: Some((lo, hi)),
        }
    }

    /// This language, of `lo` to `hi` characters only.
    pub fn with_lengths(mut self, lo: u64, hi: Option<u64>) -> Self {
        self.lengths = Some((lo, hi));
        self
    }

    /// This language minus the languages `hs`.
    pub fn except(mut self, hs: &[Hir]) -> Result<Self, String> {
        for h in hs {
            self.none.push(full_match(h)?);
        }
        Ok(self)
    }

    /// Whether `value` is in the language.
    pub fn is_match(&self, value: &str) -> bool {
        let counted = self.lengths.is_none_or(|(lo, hi)| {
            let n = value.chars().count() as u64;
            lo <= n && hi.is_none_or(|h| n <= h)
        });
        counted
            && self.all.iter().all(|r| r.is_match(value))
            && !self.none.iter().any(|r| r.is_match(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta::Regex;

    fn full(re: &str) -> Regex {
        Regex::new(&format!("^(?:{re})$")).unwrap()
    }

    #[test]
    fn bounded_repetitions_are_found_at_any_depth() {
        let bounded = |p: &str| has_bounded_repetition(&regex_syntax::parse(p).unwrap());
        for p in ["a{4}", "a{2,8}", "(?:x|(?:ab){0,3})+", "[0-9]{4}-[0-9]{2}"] {
            assert!(bounded(p), "{p}");
        }
        for p in ["a?", "a+", r"\S+@\S+", "(?:ab)*c?", "a{2,}", "a{1}"] {
            assert!(!bounded(p), "{p}");
        }
    }

    #[test]
    fn literal_spellings_decode_to_the_value() {
        let r = full(&literal_regex("a/é\"\n😀"));
        assert!(r.is_match(r#""a/é\"\n😀""#));
        assert!(r.is_match(r#""a\/\u00E9\"\u000a\ud83d\uDE00""#));
        assert!(!r.is_match(r#""a/é"\n😀""#));
        assert!(!r.is_match(r#""b/é\"\n😀""#));
        assert!(!r.is_match(r#""\u0062/é\"\n😀""#));
        // A raw newline is not a JSON string character.
        assert!(!r.is_match("\"a/é\\\"\n😀\""));
    }

    /// The spelling rule, character by character over ASCII and a few others: raw unless
    /// `"`, `\` or a control; the short escape if JSON has one; `\u` in either hex case
    /// only for controls, DEL and non-ASCII. `ANY_STRING` agrees on one-character strings.
    #[test]
    fn u_escapes_spell_only_controls_del_and_non_ascii() {
        let any = full(ANY_STRING);
        let short = |c: char| match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            _ => None,
        };
        let chars = (0u32..0x80)
            .chain([0xE9, 0x2028, 0xFFFF])
            .filter_map(char::from_u32);
        for c in chars {
            let r = full(&literal_regex(&c.to_string()));
            let code = c as u32;
            let raw_ok = code >= 0x20 && c != '"' && c != '\\';
            let u_ok = !(0x20..0x7F).contains(&code);
            let mut cases = vec![(format!("\"{c}\""), raw_ok)];
            cases.push((format!("\"\\u{code:04x}\""), u_ok));
            cases.push((format!("\"\\u{code:04X}\""), u_ok));
            if let Some(e) = short(c) {
                cases.push((format!("\"{e}\""), true));
            }
            for (text, ok) in cases {
                assert_eq!(r.is_match(&text), ok, "{text} for U+{code:04X}");
                assert_eq!(any.is_match(&text), ok, "ANY_STRING on {text}");
            }
        }
        assert!(
            any.is_match(r#""\ud800""#),
            "JSON's grammar allows a lone surrogate"
        );
    }

    #[test]
    fn hex_ranges_cover_exactly() {
        for (lo, hi) in [(0u128, 0xFFFF), (0x12, 0x3456), (0xD7FF, 0xE001), (7, 7)] {
            let seqs = digit_seqs(lo, hi, 4, 16);
            let covered = |v: u128| {
                seqs.iter().any(|s| {
                    (0..4).all(|i| {
                        let d = ((v >> (4 * (3 - i))) & 15) as u8;
                        s[i].0 <= d && d <= s[i].1
                    })
                })
            };
            let probes = [
                0,
                lo,
                hi,
                lo.saturating_sub(1),
                hi + 1,
                (lo + hi) / 2,
                0xFFFF,
            ];
            for v in probes.into_iter().filter(|&v| v <= 0xFFFF) {
                assert_eq!(covered(v), lo <= v && v <= hi, "{v:x} in [{lo:x},{hi:x}]");
            }
        }
    }

    #[test]
    fn patterns_use_search_semantics_and_ecma_classes() {
        let lit = |p: &str| full(&quoted_regex(&parse_pattern(p).unwrap()).unwrap());
        let r = lit("^[a-z]+\\d$");
        assert!(r.is_match(r#""ab1""#));
        assert!(
            !r.is_match(r#""\u0061b1""#),
            "printable ASCII is never \\u-escaped"
        );
        assert!(!r.is_match(r#""ab١""#), "ECMA \\d is ASCII only");
        assert!(!r.is_match(r#""xab1 ""#));
        let r = lit("ab");
        assert!(r.is_match(r#""xxaby""#));
        assert!(!r.is_match(r#""a b""#));
        let r = lit("^a.c$");
        assert!(r.is_match(r#""abc""#));
        assert!(!r.is_match(r#""a\nc""#), "ECMA . excludes line terminators");
        assert!(parse_pattern("(?=a)").is_err());
        assert!(parse_pattern("(a)\\1").is_err());
        assert!(parse_pattern("a\\bc").is_err());
        let r = lit("^x{2}{$");
        assert!(r.is_match(r#""xx{""#));
        // A repeated repetition keeps its grouping through printing.
        let r = lit("^a:([b-c]+)?:d$");
        assert!(r.is_match(r#""a::d""#) && r.is_match(r#""a:bcb:d""#));
        let r = lit("^(?:x+)?y$");
        assert!(r.is_match(r#""xxxy""#) && r.is_match(r#""y""#));
    }

    #[test]
    fn anchors_anywhere_match_only_at_the_ends() {
        // Search semantics by a regex engine (Rust's `^`/`$` are ECMA's without `m`).
        let words = {
            let mut all = vec![String::new()];
            let mut last = all.clone();
            for _ in 0..4 {
                last = last
                    .iter()
                    .flat_map(|w| ["a", "b", "c"].map(|c| format!("{w}{c}")))
                    .collect();
                all.extend(last.iter().cloned());
            }
            all
        };
        for p in [
            "^$|^b$",
            "^a$|^b$",
            "^(a|b$)",
            "a^b",
            "(^a|b)c$",
            "x$|^y|c",
            "^(ab|a$)",
            "(a$)?b",
            "b(^|a)",
            "(a|^)b$",
            "^(?:a*$|b)",
            "a?^b",
            "(c|)^b$",
            "a$b?",
        ] {
            let ours = ValueMatcher::new(&parse_pattern(p).unwrap()).unwrap();
            let theirs = regex_automata::meta::Regex::new(p).unwrap();
            for w in &words {
                assert_eq!(ours.is_match(w), theirs.is_match(w), "/{p}/ on {w:?}");
            }
        }
        assert!(parse_pattern("(^a)*b").is_err());
    }

    #[test]
    fn pattern_splits_are_exact_complements() {
        let alphabet = ["a", "b", "_", "x", "-", "\n", "é", "1", "L"];
        let mut probes = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = probes
                .iter()
                .filter(|p| p.chars().count() == probes.last().unwrap().chars().count())
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            probes.extend(longer);
        }
        probes.push("x_Localised".into());
        probes.push("_Localise".into());
        let patterns = [
            "^[a-z_]+$",
            ".*",
            "^.+$",
            ".+",
            "^.*$",
            ".",
            ".{1,}",
            "^[a-z1]*$",
            "a",
            "^x-",
            "_L$",
            "^[ab]{2,3}$",
            "^a{2}",
            "b{0,}$",
            "(^[ab]$)",
            "^é+",
        ];
        for p in patterns {
            let matched = ValueMatcher::new(&parse_pattern(p).unwrap()).unwrap();
            match split_pattern(p) {
                Some(PatternSplit::Complement(h)) => {
                    let not = ValueMatcher::new(&h).unwrap();
                    for v in &probes {
                        assert_ne!(matched.is_match(v), not.is_match(v), "/{p}/ on {v:?}");
                    }
                }
                Some(PatternSplit::All) => {
                    assert!(
                        probes.iter().all(|v| matched.is_match(v)),
                        "/{p}/ is not universal"
                    )
                }
                _ => panic!("/{p}/ should split"),
            }
        }
        assert!(
            matches!(split_pattern("^billing_id$"), Some(PatternSplit::Name(n)) if n == "billing_id")
        );
        for p in ["ab", "^a|b", "\\d{2}", "^(a|b)c$", "^a+b$"] {
            assert!(split_pattern(p).is_none(), "/{p}/ has no simple complement");
        }
    }

    #[test]
    fn value_matcher_is_a_full_match() {
        let m = ValueMatcher::new(&parse_pattern("^ab?$").unwrap()).unwrap();
        assert!(m.is_match("a") && m.is_match("ab") && !m.is_match("abb"));
        assert_eq!(char_len(&parse_pattern("^ab?$").unwrap()), (1, Some(2)));
        assert_eq!(char_len(&parse_pattern("ab").unwrap()).1, None);
    }
}
