//! `format` values that are regular languages, as value regexes (`regex-syntax` syntax,
//! matched against the whole decoded string). Formats follow RFC 3339 (date, time,
//! date-time, with leap days), RFC 4122 (uuid), RFC 2673/4291 dotted quads and IPv6
//! text forms, RFC 1123 host names and an RFC 3986 URI shape. Unknown formats are
//! annotations and constrain nothing, as in the JSON Schema specification; `regex` is
//! not a regular language and is refused by the caller.

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

/// One URI character outside the delimiters (RFC 3986 unreserved, sub-delims, `:`, `@`,
/// or a percent-encoded octet).
const UCHAR: &str = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})";
/// The same without `:` (the first segment of a relative reference).
const UCHAR_NC: &str = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=@]|%[0-9A-Fa-f]{2})";

fn tail() -> String {
    format!("(?:\\?(?:{UCHAR}|[/?])*)?(?:#(?:{UCHAR}|[/?])*)?")
}

fn uri() -> String {
    format!("[A-Za-z][A-Za-z0-9+.\\-]*:(?:{UCHAR}|/)*{}", tail())
}

fn relative_ref() -> String {
    format!(
        "(?:/(?:{UCHAR}|/)*|{UCHAR_NC}+(?:/(?:{UCHAR}|/)*)?)?{}",
        tail()
    )
}

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
        "email" => "[^@\\s\"(),:;<>\\[\\]\\\\]+@[^@\\s\"(),:;<>\\[\\]\\\\]+".to_string(),
        "uri" => uri(),
        "uri-reference" => format!("(?:{}|{})", uri(), relative_ref()),
        "json-pointer" => "(?:/(?:[^~/]|~[01])*)*".to_string(),
        "regex"
        | "relative-json-pointer"
        | "uri-template"
        | "idn-email"
        | "idn-hostname"
        | "iri"
        | "iri-reference"
        | "duration" => return Format::NotRegular,
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
}
