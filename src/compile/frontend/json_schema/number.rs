//! Numbers as regular languages: integer and decimal ranges with inclusive or exclusive
//! bounds, and the spellings of one numeric value, all over JSON number syntax.
//!
//! Terminal regexes are read with leftmost-first semantics (see the design), so every
//! alternation here lists longer integer parts first: a branch never completes a match
//! on a proper prefix of a later branch's match, and the regex then accepts exactly its
//! language. Depends on nothing but [`super::string::digit_seqs`].

use super::string::digit_seqs;

/// The unconstrained JSON number.
pub const ANY_NUMBER: &str = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?";
/// The unconstrained JSON integer (no fraction, no exponent).
pub const ANY_INTEGER: &str = r"-?(0|[1-9][0-9]*)";
/// Numbers whose value is not an integer, as the spellings that show it: a fraction with
/// a nonzero digit and no exponent, or a negative exponent on a mantissa whose last digit
/// is not zero (the mantissa's digits are then not divisible by the power of ten they are
/// scaled by). Every other spelling of a non-integer (`1.55e1`, `150e-2`) is left out,
/// as [`ANY_INTEGER`] leaves out `1.0`: Python's `repr` and JavaScript's `JSON.stringify`
/// never write one. Exponent forms come first, for leftmost-first matching.
pub const NON_INTEGER: &str = concat!(
    r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9][eE]-0*[1-9][0-9]*",
    r"|-?([1-9][0-9]*[1-9]|[1-9])[eE]-0*[1-9][0-9]*",
    r"|-?(0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*",
);

/// A bound of a range: the value and whether it is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The bound's value.
    pub value: i128,
    /// Whether the bound itself is excluded.
    pub exclusive: bool,
}

fn digits(n: u128) -> u32 {
    n.checked_ilog10().map_or(1, |l| l + 1)
}

fn seq_regex(seq: &[(u8, u8)]) -> String {
    seq.iter()
        .map(|&(a, b)| {
            if a == b {
                ((b'0' + a) as char).to_string()
            } else {
                format!("[{}-{}]", a, b)
            }
        })
        .collect()
}

/// Decimal naturals (no leading zeros) in `[lo, hi]` (`hi = None`: unbounded), as
/// alternatives ordered by length, longest first.
fn naturals(lo: u128, hi: Option<u128>) -> Vec<String> {
    if hi.is_some_and(|h| h < lo) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let first_len = digits(lo);
    let last_len = hi.map(digits);
    if let Some(l) = last_len {
        for len in (first_len..=l).rev() {
            let a = if len == first_len {
                lo
            } else {
                10u128.pow(len - 1)
            };
            let b = if Some(len) == last_len {
                hi.unwrap_or(0)
            } else {
                10u128.pow(len) - 1
            };
            for s in digit_seqs(a, b, len, 10).into_iter().rev() {
                out.push(seq_regex(&s));
            }
        }
    } else {
        // Longer than `lo` first (any digits), then `lo`'s own length.
        out.push(format!("[1-9][0-9]{{{},}}", first_len));
        let b = 10u128.pow(first_len) - 1;
        for s in digit_seqs(lo, b, first_len, 10).into_iter().rev() {
            out.push(seq_regex(&s));
        }
    }
    out
}

/// Magnitudes in a nonnegative range with an integer part only.
fn int_magnitudes(lo: Bound, hi: Option<Bound>) -> Vec<String> {
    let a = if lo.exclusive { lo.value + 1 } else { lo.value }.max(0) as u128;
    let b = hi.map(|h| if h.exclusive { h.value - 1 } else { h.value });
    match b {
        Some(b) if b < a as i128 => Vec::new(),
        Some(b) => naturals(a, Some(b as u128)),
        None => naturals(a, None),
    }
}

fn alternation(parts: &[String]) -> Option<String> {
    match parts.len() {
        0 => None,
        _ => Some(format!("({})", parts.join("|"))),
    }
}

/// Both halves of a signed range: nonnegative magnitudes as given, negative values as
/// magnitudes of the negated range. `-0` counts as 0 and is allowed iff 0 is in range.
fn split_signed(lo: Option<Bound>, hi: Option<Bound>) -> [(Bound, Option<Bound>); 2] {
    let zero = Bound {
        value: 0,
        exclusive: false,
    };
    let pos_lo = match lo {
        Some(b) if b.value >= 0 => b,
        _ => zero,
    };
    let pos_hi = hi;
    let neg_lo = match hi {
        Some(b) if b.value <= 0 => Bound {
            value: -b.value,
            exclusive: b.exclusive,
        },
        _ => zero,
    };
    let neg_hi = lo.map(|b| Bound {
        value: -b.value,
        exclusive: b.exclusive,
    });
    [(pos_lo, pos_hi), (neg_lo, neg_hi)]
}

fn empty_half(lo: Bound, hi: Option<Bound>) -> bool {
    match hi {
        None => false,
        Some(h) => h.value < lo.value || (h.value == lo.value && (h.exclusive || lo.exclusive)),
    }
}

/// The integers in a range, in JSON integer syntax; `None` if the range is empty.
pub fn integer_range(lo: Option<Bound>, hi: Option<Bound>) -> Option<String> {
    let [pos, neg] = split_signed(lo, hi);
    let mut alts = Vec::new();
    if !empty_half(neg.0, neg.1) {
        if let Some(r) = alternation(&int_magnitudes(neg.0, neg.1)) {
            alts.push(format!("-{r}"));
        }
    }
    if !empty_half(pos.0, pos.1) {
        if let Some(r) = alternation(&int_magnitudes(pos.0, pos.1)) {
            alts.push(r);
        }
    }
    alternation(&alts)
}

/// Nonnegative decimals (no exponent) in a range with integer bounds.
fn decimal_magnitudes(lo: Bound, hi: Option<Bound>) -> Vec<String> {
    if empty_half(lo, hi) {
        return Vec::new();
    }
    // (integer-part regex, fraction regex) pieces; ordered by integer length later.
    let mut pieces: Vec<(u32, String)> = Vec::new();
    let any_frac = r"(\.[0-9]+)?";
    let any_lo = if lo.exclusive { lo.value + 1 } else { lo.value };
    let any_hi = hi.map(|h| h.value - 1);
    if any_hi.is_none_or(|h| h >= any_lo) {
        for alt in naturals(any_lo as u128, any_hi.map(|h| h as u128)) {
            pieces.push((digit_len_of_regex(&alt), format!("{alt}{any_frac}")));
        }
    }
    if lo.exclusive && hi.is_none_or(|h| h.value > lo.value) {
        let v = lo.value as u128;
        pieces.push((digits(v), format!(r"{v}\.[0-9]*[1-9][0-9]*")));
    }
    if let Some(h) = hi.filter(|h| !h.exclusive) {
        let v = h.value as u128;
        pieces.push((digits(v), format!(r"{v}(\.0+)?")));
    }
    pieces.sort_by_key(|p| std::cmp::Reverse(p.0));
    pieces.into_iter().map(|p| p.1).collect()
}

/// The length of the integer part an alternative from [`naturals`] matches (unbounded
/// ones sort first).
fn digit_len_of_regex(alt: &str) -> u32 {
    if alt.contains(',') {
        return u32::MAX;
    }
    let mut n = 0;
    let mut in_class = false;
    for c in alt.chars() {
        match c {
            '[' => in_class = true,
            ']' => {
                in_class = false;
                n += 1;
            }
            _ if !in_class => n += 1,
            _ => {}
        }
    }
    n
}

/// The decimals (no exponent) in a range with integer bounds, in JSON number syntax.
pub fn decimal_range(lo: Option<Bound>, hi: Option<Bound>) -> Option<String> {
    let [pos, neg] = split_signed(lo, hi);
    let mut alts = Vec::new();
    if let Some(r) = alternation(&decimal_magnitudes(neg.0, neg.1)) {
        alts.push(format!("-{r}"));
    }
    if let Some(r) = alternation(&decimal_magnitudes(pos.0, pos.1)) {
        alts.push(r);
    }
    alternation(&alts)
}

/// Which side of a bound a half-line keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Values at or above (above, when exclusive) the bound.
    Above,
    /// Values at or below (below, when exclusive) the bound.
    Below,
}

/// Fraction digits `.B` compared with the bound's fraction `f` (its digits, the last one
/// nonzero), from digit `i` on, the digits before being equal: the rest of the regex.
/// Every alternation here starts its branches with different digits and every optional
/// part is greedy, so leftmost-first matching accepts exactly the language.
fn fraction_from(f: &[u8], i: usize, side: Side, inclusive: bool) -> String {
    if i == f.len() {
        // Equal so far: B is f followed by more digits. Above: any continuation is
        // ≥ f, and > f iff some digit is nonzero. Below: only zeros, and only if equal
        // is allowed.
        return match (side, inclusive) {
            (Side::Above, true) => "[0-9]*".into(),
            (Side::Above, false) => "0*[1-9][0-9]*".into(),
            (Side::Below, true) => "0*".into(),
            (Side::Below, false) => "(?:$^)".into(),
        };
    }
    let d = f[i];
    let mut alts = Vec::new();
    match side {
        Side::Above if d < 9 => alts.push(format!("[{}-9][0-9]*", d + 1)),
        Side::Below if d > 0 => alts.push(format!("[0-{}][0-9]*", d - 1)),
        _ => {}
    }
    let rest = fraction_from(f, i + 1, side, inclusive);
    if rest != "(?:$^)" {
        alts.push(format!("{d}{rest}"));
    }
    let body = format!("(?:{})", alts.join("|"));
    // Below: B may stop here (a proper prefix of f is smaller, f's last digit being
    // nonzero); not before the first digit, which the `.` requires.
    if side == Side::Below && i > 0 {
        format!("{body}?")
    } else {
        body
    }
}

/// Nonnegative decimals (no exponent) on one side of the non-integer magnitude
/// `int.frac` (`frac`: digits, last one nonzero).
fn magnitude_side(int: u128, frac: &[u8], side: Side, inclusive: bool) -> String {
    let any_frac = r"(?:\.[0-9]+)?";
    let f = fraction_from(frac, 0, side, inclusive);
    let mut alts: Vec<String> = Vec::new();
    match side {
        Side::Above => {
            // A longer or larger integer part, then the bound's own integer part.
            for a in naturals(int + 1, None) {
                alts.push(format!("{a}{any_frac}"));
            }
            alts.push(format!(r"{int}\.{f}"));
        }
        Side::Below => {
            // The bound's integer part (fraction optional: none is below), then smaller
            // integer parts, longest first.
            alts.push(format!(r"{int}(?:\.{f})?"));
            if int > 0 {
                for a in naturals(0, Some(int - 1)) {
                    alts.push(format!("{a}{any_frac}"));
                }
            }
        }
    }
    format!("(?:{})", alts.join("|"))
}

/// Decimals (no exponent) on one side of a bound that is not an integer, in JSON number
/// syntax; `bound` is its plain decimal text (`-2.25`, `0.5`). `None` if `bound` is not
/// such a text.
pub fn decimal_half(bound: &str, exclusive: bool, side: Side) -> Option<String> {
    let (negative, mag) = match bound.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, bound),
    };
    let (int, frac) = mag.split_once('.')?;
    let frac: Vec<u8> = frac
        .trim_end_matches('0')
        .bytes()
        .map(|b| b.wrapping_sub(b'0'))
        .collect();
    if frac.is_empty() || frac.iter().any(|&d| d > 9) || int.is_empty() || int.len() > 30 {
        return None;
    }
    let int: u128 = int.parse().ok()?;
    let inclusive = !exclusive;
    let any = r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?";
    Some(match (negative, side) {
        (false, Side::Above) => magnitude_side(int, &frac, Side::Above, inclusive),
        (false, Side::Below) => format!(
            "(?:-{any}|{})",
            magnitude_side(int, &frac, Side::Below, inclusive)
        ),
        // x ≥ -c: every nonnegative number, and negatives of magnitude ≤ c (-0 among them).
        (true, Side::Above) => format!(
            "(?:-{}|{any})",
            magnitude_side(int, &frac, Side::Below, inclusive)
        ),
        (true, Side::Below) => format!("-{}", magnitude_side(int, &frac, Side::Above, inclusive)),
    })
}

/// Most endings a divisibility regex may list (`10^j / d` for a divisor `d` of `10^j`).
const MAX_ENDINGS: u128 = 1000;

/// The numbers (no exponent) that are multiples of `divisor`, given as its plain decimal
/// text, when that is a regular language written compactly here: a power of ten
/// (`0.01`: at most two fraction digits, then zeros; `100`: integers ending in `00`) or
/// an integer whose prime factors are 2 and 5 (`4`, `16`, `25`: the last digits decide).
/// The flag says whether every multiple is an integer. `None` for other divisors.
pub fn multiple_of(divisor: &str) -> Option<(String, bool)> {
    if let Some((int, frac)) = divisor.split_once('.') {
        // 10^-k: "0.0…01".
        let k = frac.len();
        if int != "0" || !frac.ends_with('1') || !frac[..k - 1].bytes().all(|b| b == b'0') {
            return None;
        }
        return Some((
            format!(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{k}}}0*)?"),
            false,
        ));
    }
    let d: u128 = divisor.parse().ok().filter(|&d| d > 0)?;
    let (mut rest, mut twos, mut fives) = (d, 0u32, 0u32);
    while rest % 2 == 0 {
        rest /= 2;
        twos += 1;
    }
    while rest % 5 == 0 {
        rest /= 5;
        fives += 1;
    }
    if rest != 1 {
        return None;
    }
    // d divides 10^j: a number is a multiple iff its last j digits are.
    let j = twos.max(fives);
    let span = 10u128.checked_pow(j)?;
    if span / d > MAX_ENDINGS {
        return None;
    }
    if j == 0 {
        return Some((ANY_INTEGER.to_string(), true));
    }
    let mut alts = Vec::new();
    {
        let endings: Vec<String> = (0..span / d)
            .map(|i| format!("{:0width$}", i * d, width = j as usize))
            .collect();
        // Longer than j digits first (leftmost-first: a listed small multiple must not
        // end a match early), then the multiples below 10^j, longest first.
        alts.push(format!("[1-9][0-9]*(?:{})", endings.join("|")));
        let mut small: Vec<String> = (1..span / d).map(|i| (i * d).to_string()).collect();
        small.sort_by_key(|x| std::cmp::Reverse(x.len()));
        alts.extend(small);
    }
    alts.push("0".into());
    Some((format!("-?(?:{})", alts.join("|")), true))
}

/// The spellings of one numeric value accepted for `enum`/`const`: its plain decimal
/// form with any number of trailing fractional zeros (`1`, `1.0`, `1.00`…; `-0` for 0).
/// Exponent spellings are not produced, so the set is a subset of the equal numbers.
pub fn value_spellings(n: &serde_json::Number) -> String {
    let text = if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        // Rust prints finite floats in plain decimal with the shortest round-trip digits.
        format!("{}", n.as_f64().unwrap_or(0.0))
    };
    let (sign, mag) = match text.strip_prefix('-') {
        Some(m) => ("-", m.to_string()),
        None => ("", text.clone()),
    };
    let zero = mag.trim_start_matches(['0', '.']).is_empty();
    let sign_re = if zero { "-?" } else { sign };
    let body = if let Some((int, frac)) = mag.split_once('.') {
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!(r"{int}(\.0+)?")
        } else {
            format!(r"{int}\.{frac}0*")
        }
    } else {
        format!(r"{mag}(\.0+)?")
    };
    format!("{sign_re}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::dfa::{dense, Automaton};
    use regex_automata::{Anchored, Input, MatchKind};

    /// Full-match under the lexer's leftmost-first semantics.
    fn lf(re: &str) -> impl Fn(&str) -> bool {
        let dfa = dense::Builder::new()
            .configure(dense::DFA::config().match_kind(MatchKind::LeftmostFirst))
            .build(&format!("^(?:{re})$"))
            .unwrap();
        move |s: &str| {
            dfa.try_search_fwd(&Input::new(s).anchored(Anchored::Yes))
                .unwrap()
                .is_some_and(|m| m.offset() == s.len())
        }
    }

    fn b(v: i128, exclusive: bool) -> Option<Bound> {
        Some(Bound {
            value: v,
            exclusive,
        })
    }

    #[test]
    fn integer_ranges_are_exact() {
        let cases = [
            (b(0, false), b(100, false)),
            (b(-15, false), b(7, true)),
            (b(3, true), None),
            (None, b(-2, false)),
            (b(-100, true), b(-99, false)),
            (b(95, false), b(1234, false)),
        ];
        for (lo, hi) in cases {
            let m = lf(&integer_range(lo, hi).unwrap());
            for v in -1300i128..1300 {
                let want = lo.is_none_or(|l| {
                    if l.exclusive {
                        v > l.value
                    } else {
                        v >= l.value
                    }
                }) && hi.is_none_or(|h| {
                    if h.exclusive {
                        v < h.value
                    } else {
                        v <= h.value
                    }
                });
                assert_eq!(m(&v.to_string()), want, "{v} in {lo:?}..{hi:?}");
            }
            let zero_in = lo.is_none_or(|l| 0 > l.value || (0 == l.value && !l.exclusive))
                && hi.is_none_or(|h| 0 < h.value || (0 == h.value && !h.exclusive));
            assert_eq!(m("-0"), zero_in);
            assert!(!m("007") && !m("1.0"));
        }
        assert_eq!(integer_range(b(5, false), b(4, false)), None);
    }

    #[test]
    fn decimal_ranges_are_exact() {
        let cases = [
            (b(0, false), b(10, false)),
            (b(0, true), b(1, false)),
            (b(-90, false), b(90, false)),
            (b(-1, true), b(1, true)),
            (b(2, false), None),
        ];
        for (lo, hi) in cases {
            let m = lf(&decimal_range(lo, hi).unwrap());
            for tenths in -1010i128..1010 {
                let v = tenths as f64 / 10.0;
                let want = lo.is_none_or(|l| {
                    if l.exclusive {
                        v > l.value as f64
                    } else {
                        v >= l.value as f64
                    }
                }) && hi.is_none_or(|h| {
                    if h.exclusive {
                        v < h.value as f64
                    } else {
                        v <= h.value as f64
                    }
                });
                let int = (tenths / 10).abs();
                let frac = (tenths % 10).abs();
                let sign = if tenths < 0 { "-" } else { "" };
                for text in [
                    format!("{sign}{int}.{frac}"),
                    format!("{sign}{int}.{frac}00"),
                ] {
                    assert_eq!(m(&text), want, "{text} in {lo:?}..{hi:?}");
                }
                if frac == 0 {
                    assert_eq!(m(&format!("{sign}{int}")), want, "{sign}{int}");
                }
            }
        }
    }

    #[test]
    fn value_spellings_are_equal_numbers() {
        let m = lf(&value_spellings(&serde_json::Number::from(12)));
        assert!(m("12") && m("12.0") && m("12.000") && !m("120") && !m("1") && !m("12.01"));
        let m = lf(&value_spellings(
            &serde_json::Number::from_f64(2.5).unwrap(),
        ));
        assert!(m("2.5") && m("2.50") && !m("2.05") && !m("25"));
        let m = lf(&value_spellings(&serde_json::Number::from(0)));
        assert!(m("0") && m("-0") && m("0.0") && !m("00"));
        let m = lf(&value_spellings(&serde_json::Number::from(-3)));
        assert!(m("-3") && !m("3"));
    }

    /// Whether a JSON number spelling's value is an integer, computed exactly: its
    /// mantissa digits `m` scaled by `10^(e - fraction digits)`.
    fn integral(text: &str) -> bool {
        let (mant, exp) = match text.find(['e', 'E']) {
            Some(i) => (&text[..i], text[i + 1..].parse::<i32>().unwrap()),
            None => (text, 0),
        };
        let mant = mant.trim_start_matches('-');
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let digits: u128 = format!("{int}{frac}").parse().unwrap();
        let shift = exp - frac.len() as i32;
        digits == 0 || shift >= 0 || digits % 10u128.pow(shift.unsigned_abs()) == 0
    }

    #[test]
    fn non_integers_are_non_integral_and_cover_printed_floats() {
        let m = lf(NON_INTEGER);
        // Soundness over a grid of spellings: accepted only when the value is fractional;
        // and without an exponent, every fractional value is accepted.
        for sign in ["", "-"] {
            for int in ["0", "1", "5", "10", "15", "150"] {
                for frac in ["", ".0", ".5", ".50", ".05", ".00", ".25"] {
                    for exp in ["", "e0", "e1", "e-1", "e-01", "E+2", "e-3", "e+0", "E-2"] {
                        let t = format!("{sign}{int}{frac}{exp}");
                        if m(&t) {
                            assert!(!integral(&t), "{t} is an integer");
                        } else if exp.is_empty() {
                            assert!(integral(&t), "{t} is not an integer");
                        }
                    }
                }
            }
        }
        // Completeness over printed floats: plain (`{}`) and scientific (`{:e}`, as
        // Python's repr and JSON.stringify write small values, also with `e-05`).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x % 2_000_000) as f64 / 64.0 * if x & 1 == 0 { 1.0 } else { 1e-9 };
            let (plain, sci) = (format!("{v}"), format!("{v:e}"));
            let padded = sci.replace("e-", "e-0");
            let fractional = v.fract() != 0.0;
            assert_eq!(m(&plain), fractional, "{plain}");
            assert_eq!(m(&padded), fractional && sci.contains("e-"), "{padded}");
            if sci.contains("e-") {
                assert_eq!(m(&sci), fractional, "{sci}");
            } else {
                // A positive exponent: never accepted (left out, integral or not).
                assert!(!m(&sci), "{sci}");
            }
        }
    }

    /// A decimal text as an exact rational `n / 10^scale` with `scale` = 6.
    fn scaled(text: &str) -> i128 {
        let (neg, mag) = match text.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, text),
        };
        let (int, frac) = mag.split_once('.').unwrap_or((mag, ""));
        let frac = format!("{frac:0<6}");
        let v: i128 = format!("{int}{frac}").parse().unwrap();
        if neg {
            -v
        } else {
            v
        }
    }

    /// Every half-line regex accepts exactly the decimals (as JSON writes them, with
    /// any number of trailing zeros, and `-0`) on its side of the bound, under the
    /// lexer's leftmost-first matching.
    #[test]
    fn decimal_halves_are_exact() {
        let mut docs: Vec<String> = Vec::new();
        for int in ["0", "1", "2", "9", "10", "12", "13", "99", "100", "123"] {
            docs.push(int.to_string());
            for frac in [
                "0", "00", "05", "1", "2", "25", "249", "25", "251", "250", "3", "5", "9", "99",
                "001",
            ] {
                docs.push(format!("{int}.{frac}"));
            }
        }
        let signed: Vec<String> = docs
            .iter()
            .flat_map(|d| [d.clone(), format!("-{d}")])
            .collect();
        for bound in [
            "0.25", "12.25", "-0.25", "-12.25", "1.05", "0.001", "99.9", "-9.99",
        ] {
            let b = scaled(bound);
            for exclusive in [false, true] {
                for side in [Side::Above, Side::Below] {
                    let re = decimal_half(bound, exclusive, side).unwrap();
                    let m = lf(&re);
                    for d in &signed {
                        let v = scaled(d);
                        let want = match (side, exclusive) {
                            (Side::Above, false) => v >= b,
                            (Side::Above, true) => v > b,
                            (Side::Below, false) => v <= b,
                            (Side::Below, true) => v < b,
                        };
                        assert_eq!(
                            m(d),
                            want,
                            "{d} vs {bound} {side:?} exclusive={exclusive}: /{re}/"
                        );
                    }
                }
            }
        }
        // Not a decimal text with a fraction: no regex.
        assert_eq!(decimal_half("12", false, Side::Above), None);
        assert_eq!(decimal_half("1e5", false, Side::Above), None);
    }

    /// The divisibility regexes accept exactly the multiples among plain decimals.
    #[test]
    fn multiples_are_exact() {
        let mut docs: Vec<String> = Vec::new();
        for n in 0..2100u32 {
            docs.push(n.to_string());
            docs.push(format!("-{n}"));
        }
        for frac in ["5", "25", "125", "05", "10", "100", "01", "001", "50"] {
            for int in ["0", "3", "12"] {
                docs.push(format!("{int}.{frac}"));
            }
        }
        for (divisor, micros) in [
            ("4", 4_000_000i128),
            ("16", 16_000_000),
            ("25", 25_000_000),
            ("10", 10_000_000),
            ("100", 100_000_000),
            ("1", 1_000_000),
            ("0.01", 10_000),
            ("0.1", 100_000),
        ] {
            let (re, integral) = multiple_of(divisor).unwrap();
            let m = lf(&re);
            for d in &docs {
                // Integral divisors take integer spellings only (like `type: integer`).
                let want = scaled(d) % micros == 0 && !(integral && d.contains('.'));
                assert_eq!(m(d), want, "{d} multiple of {divisor}: /{re}/");
            }
        }
        assert_eq!(multiple_of("3"), None);
        assert_eq!(multiple_of("0.25"), None);
    }
}
