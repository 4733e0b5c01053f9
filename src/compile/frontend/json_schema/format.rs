//! `format` values that are regular languages, as value regexes (`regex-syntax` syntax,
//! matched against the whole decoded string). Formats follow RFC 3339 (date, time,
//! date-time, with leap days), RFC 4122 (uuid), RFC 2673/4291 dotted quads and IPv6
//! text forms, RFC 1123 host names, an RFC 3986 URI shape and its RFC 3987 IRI
//! extension, RFC 6570 URI templates, RFC 3339 durations, JSON pointers (RFC 6901)
//! and relative JSON pointers. Unknown formats are annotations and constrain nothing, as
//! in the JSON Schema specification; `regex` (balanced groups) and `idn-hostname` (IDNA
//! tables) are not compiled and are refused by the caller.

/// What a `format` value means for the lowering.
pub enum Format {
    /// A regular language of values.
    Regular(String),
    /// Known, but not a regular language: must be refused (or dropped in lenient mode).
    NotRegular,
    /// Not an assertion stackmask knows: an annotation.
    Annotation,
}

const YEAR: &str = "[0-9]{4}";
const MONTH_DAY: &str = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))";
/// Years with a 29th of February: divisible by 4 and not by 100, or by 400.
const LEAP_YEAR: &str =
    "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
const PARTIAL_TIME: &str = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?";
const OFFSET: &str = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const H16: &str = "[0-9A-Fa-f]{1,4}";
const LABEL: &str = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";

fn date() -> String {
    format!("(?:{YEAR}-{MONTH_DAY}|{LEAP_YEAR}-02-29)")
}

fn ipv4() -> String {
    format!("{OCTET}(?:\\.{OCTET}){{3}}")
}

fn ipv6() -> String {
    // RFC 4291 §2.2: eight groups, `::` standing for one or more zero groups, and an
    // optional trailing dotted quad taking the place of two groups.
    let ls32 = format!("(?:{H16}:{H16}|{})", ipv4());
    let g = |n: usize| format!("(?:{H16}:){{{n}}}");
    let upto = |n: usize| {
        if n == 0 {
            String::new()
        } else {
            format!("(?:(?:{H16}:){{0,{}}}{H16})?", n - 1)
        }
    };
    let alts = [
        format!("{}{ls32}", g(6)),
        format!("::{}{ls32}", g(5)),
        format!("(?:{H16})?::{}{ls32}", g(4)),
        format!("{}::{}{ls32}", upto(2), g(3)),
        format!("{}::{}{ls32}", upto(3), g(2)),
        format!("{}::{H16}:{ls32}", upto(4)),
        format!("{}::{ls32}", upto(5)),
        format!("{}::{H16}", upto(6)),
        format!("{}::", upto(7)),
    ];
    format!("(?:{})", alts.join("|"))
}

/// RFC 3987 `ucschar`: the non-ASCII characters an IRI may hold anywhere.
const UCSCHAR: &str = "\\x{A0}-\\x{D7FF}\\x{F900}-\\x{FDCF}\\x{FDF0}-\\x{FFEF}\\x{10000}-\\x{1FFFD}\\x{20000}-\\x{2FFFD}\\x{30000}-\\x{3FFFD}\\x{40000}-\\x{4FFFD}\\x{50000}-\\x{5FFFD}\\x{60000}-\\x{6FFFD}\\x{70000}-\\x{7FFFD}\\x{80000}-\\x{8FFFD}\\x{90000}-\\x{9FFFD}\\x{A0000}-\\x{AFFFD}\\x{B0000}-\\x{BFFFD}\\x{C0000}-\\x{CFFFD}\\x{D0000}-\\x{DFFFD}\\x{E1000}-\\x{EFFFD}";
/// RFC 3987 `iprivate`: private-use characters, allowed in an IRI's query only.
const IPRIVATE: &str = "\\x{E000}-\\x{F8FF}\\x{F0000}-\\x{FFFFD}\\x{100000}-\\x{10FFFD}";

/// One character of a URI (`iri`: of an IRI) outside the delimiters (RFC 3986
/// unreserved, sub-delims, `:`, `@`, or a percent-encoded octet), with or
/// without `:` (the first segment of a relative reference may not hold one).
fn uchar(iri: bool, colon: bool) -> String {
    let extra = if iri { UCSCHAR } else { "" };
    let colon = if colon { ":" } else { "" };
    format!("(?:[A-Za-z0-9\\-._~!$&'()*+,;={colon}@{extra}]|%[0-9A-Fa-f]{{2}})")
}

fn tail(iri: bool) -> String {
    let c = uchar(iri, true);
    let private = if iri {
        format!("|[{IPRIVATE}]")
    } else {
        String::new()
    };
    format!("(?:\\?(?:{c}|[/?]{private})*)?(?:#(?:{c}|[/?])*)?")
}

fn uri(iri: bool) -> String {
    let c = uchar(iri, true);
    format!("[A-Za-z][A-Za-z0-9+.\\-]*:(?:{c}|/)*{}", tail(iri))
}

fn relative_ref(iri: bool) -> String {
    let (c, nc) = (uchar(iri, true), uchar(iri, false));
    format!("(?:/(?:{c}|/)*|{nc}+(?:/(?:{c}|/)*)?)?{}", tail(iri))
}

/// RFC 3339 appendix A: `P` then date parts (years, months, days, each part allowing
/// only the next smaller ones after it) with an optional time part, a time part alone,
/// or weeks.
fn duration() -> String {
    let n = "[0-9]+";
    let second = format!("{n}S");
    let minute = format!("{n}M(?:{second})?");
    let hour = format!("{n}H(?:{minute})?");
    let time = format!("T(?:{hour}|{minute}|{second})");
    let day = format!("{n}D");
    let month = format!("{n}M(?:{day})?");
    let year = format!("{n}Y(?:{month})?");
    format!("P(?:(?:{day}|{month}|{year})(?:{time})?|{time}|{n}W)")
}

/// RFC 6570 (level 4): literal characters and `{op var:len,var*}` expressions.
fn uri_template() -> String {
    let pct = "%[0-9A-Fa-f]{2}";
    let literal = format!("(?:[!#$&(-;=?-\\[\\]_a-z~{UCSCHAR}{IPRIVATE}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varspec = format!("{varchar}(?:\\.?{varchar})*(?::[1-9][0-9]{{0,3}}|\\*)?");
    let expression = format!("\\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\\}}");
    format!("(?:{literal}|{expression})*")
}

/// A JSON pointer (RFC 6901): `/`-prefixed tokens with `~` escaped as `~0` / `~1`.
const JSON_POINTER: &str = "(?:/(?:[^~/]|~[01])*)*";

/// The meaning of a `format` value.
pub fn format(name: &str) -> Format {
    let re = match name {
        "date" => date(),
        "time" => format!("{PARTIAL_TIME}{OFFSET}"),
        "date-time" => format!("{}[Tt]{PARTIAL_TIME}{OFFSET}", date()),
        "uuid" => "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
            .to_string(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "hostname" => format!("{LABEL}(?:\\.{LABEL})*"),
        // The same shape serves idn-email: its classes already admit any non-ASCII character.
        "email" | "idn-email" => {
            "[^@\\s\"(),:;<>\\[\\]\\\\]+@[^@\\s\"(),:;<>\\[\\]\\\\]+".to_string()
        }
        "uri" => uri(false),
        "uri-reference" => format!("(?:{}|{})", uri(false), relative_ref(false)),
        "iri" => uri(true),
        "iri-reference" => format!("(?:{}|{})", uri(true), relative_ref(true)),
        "uri-template" => uri_template(),
        "duration" => duration(),
        "json-pointer" => JSON_POINTER.to_string(),
        "relative-json-pointer" => format!("(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})"),
        "regex" | "idn-hostname" => return Format::NotRegular,
        _ => return Format::Annotation,
    };
    Format::Regular(re)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> regex_automata::meta::Regex {
        let Format::Regular(re) = format(name) else {
            panic!("{name} is regular")
        };
        regex_automata::meta::Regex::new(&format!("^(?:{re})$")).unwrap()
    }

    #[test]
    fn dates_and_times() {
        let d = m("date");
        for ok in ["2024-02-29", "2000-02-29", "2023-12-31", "1999-04-30"] {
            assert!(d.is_match(ok), "{ok}");
        }
        for bad in [
            "1900-02-29",
            "2023-02-29",
            "2023-04-31",
            "2023-13-01",
            "2023-1-01",
        ] {
            assert!(!d.is_match(bad), "{bad}");
        }
        let dt = m("date-time");
        assert!(dt.is_match("2024-01-05T10:20:30Z"));
        assert!(dt.is_match("2024-01-05t10:20:30.123+05:30"));
        assert!(!dt.is_match("2024-01-05T24:00:00Z"));
        assert!(!dt.is_match("2024-01-05T10:20:30"));
        assert!(m("time").is_match("23:59:60-01:00"));
    }

    #[test]
    fn addresses() {
        let v4 = m("ipv4");
        assert!(
            v4.is_match("192.168.0.255") && !v4.is_match("256.1.1.1") && !v4.is_match("01.1.1.1")
        );
        let v6 = m("ipv6");
        for ok in [
            "::",
            "::1",
            "fe80::1",
            "2001:db8::8a2e:370:7334",
            "1:2:3:4:5:6:7:8",
            "::ffff:1.2.3.4",
        ] {
            assert!(v6.is_match(ok), "{ok}");
        }
        for bad in ["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", ":1"] {
            assert!(!v6.is_match(bad), "{bad}");
        }
        assert!(m("uuid").is_match("123e4567-e89b-12d3-a456-426614174000"));
        assert!(m("email").is_match("a.b@example.com") && !m("email").is_match("a@b@c"));
        assert!(m("hostname").is_match("a-b.example.com") && !m("hostname").is_match("-a.com"));
        let u = m("uri");
        assert!(u.is_match("https://example.com/a?b=c#d") && u.is_match("urn:isbn:0451450523"));
        assert!(!u.is_match("/relative") && !u.is_match("http://a b") && !u.is_match("%zz:x"));
        let r = m("uri-reference");
        assert!(
            r.is_match("../a/b")
                && r.is_match("")
                && r.is_match("//host:80/p")
                && r.is_match("Web")
        );
        assert!(!r.is_match("://") && !r.is_match("a:b:c d"));
    }

    #[test]
    fn iris_templates_durations_pointers() {
        let i = m("iri");
        assert!(i.is_match("https://example.com") && i.is_match("http://例え.jp/パス?q=値#frag"));
        assert!(!i.is_match("not-an-iri") && !i.is_match("http://a b"));
        // Private-use characters only in the query.
        assert!(i.is_match("x:a?\u{E000}") && !i.is_match("x:a\u{E000}"));
        assert!(!m("uri").is_match("http://例え.jp"));
        let ir = m("iri-reference");
        assert!(ir.is_match("../パス") && !ir.is_match("a:b c"));
        let t = m("uri-template");
        for ok in [
            "http://example.com/{id}",
            "file:///{+path}/x{?a,b*,c:30}",
            "{#var.sub}",
            "plain",
            "",
        ] {
            assert!(t.is_match(ok), "{ok}");
        }
        for bad in [
            "http://example.com/resource/{",
            "{}",
            "{a:0}",
            "{a b}",
            "a}b",
            "a b",
        ] {
            assert!(!t.is_match(bad), "{bad}");
        }
        let d = m("duration");
        for ok in [
            "P1Y2M3DT4H5M6S",
            "P4W",
            "PT36H",
            "P1D",
            "P1MT2S",
            "PT1H0M30S",
        ] {
            assert!(d.is_match(ok), "{ok}");
        }
        // The ABNF skips no unit between two given ones: `PT1H30S` needs `0M`.
        for bad in [
            "P", "PT", "P1W2D", "P1D2M", "PT1S2M", "1Y", "P1.5D", "P1DT", "PT1H30S",
        ] {
            assert!(!d.is_match(bad), "{bad}");
        }
        let r = m("relative-json-pointer");
        assert!(r.is_match("0") && r.is_match("1/a~1b") && r.is_match("120#"));
        assert!(
            !r.is_match("/a") && !r.is_match("01/a") && !r.is_match("-1/a") && !r.is_match("0##")
        );
        assert!(m("idn-email").is_match("用户@例子.广告"));
        assert!(matches!(format("regex"), Format::NotRegular));
        assert!(matches!(format("idn-hostname"), Format::NotRegular));
    }
}
