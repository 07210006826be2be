//! Terminal colour codes around a log line's words.
//!
//! Wrappers and jobs colour their output (`\x1b[36mconnect() timed out`, a whole line
//! in red ending in a reset). Patterns are written plain; [`tolerate`] rewrites a
//! pattern so that colour codes where it asks for a word boundary at its start, or
//! for the start or end of the line, do not stop it matching. The built-in packs and
//! the evidence phrases ([`crate::evidence`]) are compiled through it.

/// What a pattern's opening `\b` becomes: wrappers can put a colour code right before
/// the text (`\x1b[36mconnect() timed out`), and `m` is a word character, so a bare
/// word boundary would miss the line.
const COLOUR_OR_BOUNDARY: &str = r"(?:\b|\[[\d;]*m)";

/// Terminal colour codes (SGR: `ESC [ 1;31 m`), any number: what may stand between a
/// line's text and its start or end. A job whose whole line is coloured
/// (`\x1b[31mFailed to open device\x1b[0m`) ends in a reset, which `…\s*$` would miss.
const COLOURS: &str = r"(?:\x1b\[[\d;]*m)*";

/// `p` with every `\b` that opens the pattern or one of its top-level alternatives
/// replaced by [`COLOUR_OR_BOUNDARY`], every `^` (outside a class) followed by
/// [`COLOURS`] and every `$` preceded by it. Packs and the evidence phrases write the
/// plain `\b`, `^` and `$`; this is the one place the tolerance lives. Leading flag
/// groups (`(?i)`) are skipped; `\b{start}` and boundaries inside groups or later in an
/// alternative are left alone.
pub(crate) fn tolerate(p: &str) -> String {
    let b = p.as_bytes();
    let mut out = Vec::with_capacity(p.len() + 16);
    let (mut depth, mut class, mut i, mut at_start) = (0usize, 0usize, 0, true);
    while i < b.len() {
        if at_start && depth == 0 && b[i..].starts_with(b"(?") {
            // A bare flag group such as `(?i)` keeps us at the alternative's start.
            if let Some(end) = b[i + 2..]
                .iter()
                .position(|c| !(c.is_ascii_alphabetic() || *c == b'-'))
            {
                if b[i + 2 + end] == b')' {
                    out.extend_from_slice(&b[i..i + 3 + end]);
                    i += 3 + end;
                    continue;
                }
            }
        }
        if at_start && depth == 0 && b[i..].starts_with(br"\b") && b.get(i + 2) != Some(&b'{') {
            out.extend_from_slice(COLOUR_OR_BOUNDARY.as_bytes());
            i += 2;
            at_start = false;
            continue;
        }
        at_start = false;
        let step = match b[i] {
            b'\\' => 2,
            b'[' => {
                class += 1;
                1
            }
            b']' if class > 0 => {
                class -= 1;
                1
            }
            b'(' if class == 0 => {
                depth += 1;
                1
            }
            b')' if class == 0 => {
                depth = depth.saturating_sub(1);
                1
            }
            b'|' if class == 0 && depth == 0 => {
                at_start = true;
                1
            }
            b'^' if class == 0 => {
                out.push(b'^');
                out.extend_from_slice(COLOURS.as_bytes());
                i += 1;
                continue;
            }
            b'$' if class == 0 => {
                out.extend_from_slice(COLOURS.as_bytes());
                1
            }
            _ => 1,
        };
        let end = (i + step).min(b.len());
        out.extend_from_slice(&b[i..end]);
        i = end;
    }
    // Only ASCII was inserted, between whole characters of `p`.
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_word_boundaries_also_allow_a_colour_code() {
        let c = COLOUR_OR_BOUNDARY;
        for (given, want) in [
            (r"\bfoo", format!("{c}foo")),
            (r"(?i)\bfoo|bar|\bbaz", format!("(?i){c}foo|bar|{c}baz")),
            (
                r"x\b|(?:\ba|b)|[|\b]\b",
                r"x\b|(?:\ba|b)|[|\b]\b".to_string(),
            ),
            (r"\b{start}x|\(|\bé", format!(r"\b{{start}}x|\(|{c}é")),
            (r"(?P<a>y)|\bz", format!("(?P<a>y)|{c}z")),
            (
                r"(?:^|\s)a[$^]\$\^b\s*$",
                format!(r"(?:^{COLOURS}|\s)a[$^]\$\^b\s*{COLOURS}$"),
            ),
        ] {
            assert_eq!(tolerate(given), want, "{given}");
        }
    }
}
