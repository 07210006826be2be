//! Required literals: for a pattern, a few strings at least one of which is in
//! every line it matches.
//!
//! [`crate::TriggerSet`] uses them to leave the patterns uncompiled until a line
//! holds one of a pattern's literals: one Aho-Corasick pass over a line says
//! which patterns may match it, and only those are compiled (each alone, the
//! first time) and run. Compiling all 750 built-in patterns and vetoes into the
//! which-patterns set and the chunk filter costs a twelfth of a second; a short
//! log, or the first seconds of a followed one, needs a few of them.
//!
//! The literals are lower-cased and the search ignores ASCII case, so a literal
//! found is a superset of a literal matched: the gate lets through every line a
//! pattern may match, and the pattern itself decides. A pattern with no literal
//! every match must hold (`\d+ errors?` has `error`; `[a-z]+: failed` has
//! `: failed`; `\w+` has none) is tried on every line.
//!
//! Extracting the literals needs the pattern's syntax tree, and parsing the
//! built-in packs is a third of compiling them; so the built-in patterns'
//! literals are worked out once, when the packs change, and kept in
//! `packs/literals.tsv`, keyed by a hash of each pattern's text
//! ([`builtin`]). A unit test fails when the file is out of date and rewrites
//! it with `TRIPCAP_BLESS=1`. Patterns not in it (a user's own triggers, or the
//! packs edited without refreshing the file) are parsed at start, as before.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_syntax::hir::{Class, Hir, HirKind};

/// Most strings a finite part of a pattern may stand for when its alternatives
/// are multiplied out (`ibv_(post_send|post_recv)` is two); beyond that the part
/// is cut into shorter required literals.
const MAX_EXACT: usize = 64;

/// What one node of a syntax tree says about the literals of its matches.
#[derive(Debug, Clone, PartialEq)]
enum Lits {
    /// It matches exactly one of these strings (lower-cased; `""` for an
    /// assertion, which matches no text).
    Exact(Vec<Vec<u8>>),
    /// Each match holds one of these (non-empty) strings.
    Required(Vec<Vec<u8>>),
    /// Nothing is known.
    Unknown,
}

/// The strings (lower-cased) at least one of which every match of `hir` holds,
/// or `None` when no such set was found.
pub(crate) fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let mut set: Vec<Vec<u8>> = best(lits(hir))?
        .iter()
        .map(|l| window(l).to_vec())
        .collect();
    set.sort();
    set.dedup();
    Some(set)
}

/// The required set `l` offers, if any.
fn best(l: Lits) -> Option<Vec<Vec<u8>>> {
    match l {
        Lits::Exact(s) | Lits::Required(s) if !s.is_empty() && s.iter().all(|x| !x.is_empty()) => {
            Some(s)
        }
        _ => None,
    }
}

/// Longest literal kept. Any part of a required literal is required too, so a
/// long one is cut to the part of this length that looks rarest ([`window`]):
/// the gate's automaton is built at every start, and its cost grows with the
/// bytes of its literals (3,210 literals of 89 KB took 41 M instructions to
/// build, two thirds of starting up).
const MAX_LITERAL: usize = 16;

/// The part of `lit`, at most [`MAX_LITERAL`] long, least likely in a healthy
/// log by a rough measure: spaces and the commonest letters count least,
/// punctuation most (`nccl warn net/ib : got completion` keeps `et/ib : got comp`).
fn window(lit: &[u8]) -> &[u8] {
    if lit.len() <= MAX_LITERAL {
        return lit;
    }
    let weight = |b: &u8| match b {
        b' ' => 0u32,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' | b'h' | b'l' | b'd' | b'c'
        | b'u' => 1,
        b'a'..=b'z' | b'0'..=b'9' => 2,
        _ => 3,
    };
    let mut best = (0, 0);
    for start in 0..=lit.len() - MAX_LITERAL {
        let w: u32 = lit[start..start + MAX_LITERAL].iter().map(weight).sum();
        if w > best.0 {
            best = (w, start);
        }
    }
    &lit[best.1..best.1 + MAX_LITERAL]
}

/// How rare a required set is: its shortest literal, then the fewer the better.
fn score(set: &[Vec<u8>]) -> (usize, isize) {
    let shortest = set.iter().map(Vec::len).min().unwrap_or(0);
    (shortest.min(MAX_LITERAL), -(set.len() as isize))
}

/// The better of two required sets.
fn better(a: Option<Vec<Vec<u8>>>, b: Option<Vec<Vec<u8>>>) -> Option<Vec<Vec<u8>>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if score(&b) > score(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The bytes one class stands for, when it stands for one byte or for one ASCII
/// letter in either case: lower-cased.
fn class_byte(class: &Class) -> Option<u8> {
    let bytes: Vec<(u32, u32)> = match class {
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        Class::Unicode(c) => c
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
    };
    let ascii = |v: u32| u8::try_from(v).ok().filter(u8::is_ascii);
    match bytes.as_slice() {
        [(a, b)] if a == b => ascii(*a).map(|c| c.to_ascii_lowercase()),
        [(a, b), (c, d)] if a == b && c == d => {
            let (x, y) = (ascii(*a)?, ascii(*c)?);
            x.eq_ignore_ascii_case(&y).then(|| x.to_ascii_lowercase())
        }
        _ => None,
    }
}

/// Every concatenation of one string of `a` and one of `b`, if not too many.
fn product(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if a.len() * b.len() > MAX_EXACT {
        return None;
    }
    Some(
        a.iter()
            .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y].concat()))
            .collect(),
    )
}

fn lits(hir: &Hir) -> Lits {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Lits::Exact(vec![Vec::new()]),
        HirKind::Literal(l) => {
            // A literal of non-ASCII bytes is kept as it is: case-insensitive
            // matching only folds ASCII, and the literal is what the text holds.
            Lits::Exact(vec![l.0.to_ascii_lowercase()])
        }
        HirKind::Class(c) => match class_byte(c) {
            Some(b) => Lits::Exact(vec![vec![b]]),
            None => Lits::Unknown,
        },
        HirKind::Capture(c) => lits(&c.sub),
        HirKind::Repetition(r) => match (r.min, lits(&r.sub)) {
            (0, _) => Lits::Unknown,
            (1, l) if r.max == Some(1) => l,
            // `x{2,}` holds `x` (the repetition of a literal is not multiplied
            // out: `=+` would be endless).
            (_, l) => best(l).map_or(Lits::Unknown, Lits::Required),
        },
        HirKind::Alternation(alts) => {
            let each: Vec<Lits> = alts.iter().map(lits).collect();
            if each.iter().all(|l| matches!(l, Lits::Exact(_))) {
                let all: Vec<Vec<u8>> = each
                    .iter()
                    .flat_map(|l| match l {
                        Lits::Exact(s) => s.clone(),
                        _ => Vec::new(),
                    })
                    .collect();
                if all.len() <= MAX_EXACT {
                    return Lits::Exact(all);
                }
            }
            let mut union = Vec::new();
            for l in each {
                match best(l) {
                    Some(s) => union.extend(s),
                    None => return Lits::Unknown,
                }
            }
            Lits::Required(union)
        }
        HirKind::Concat(items) => {
            // Runs of exact parts are multiplied out into longer literals; the
            // best run, or the best required set of a part that is not exact,
            // is what the whole requires.
            let mut found: Option<Vec<Vec<u8>>> = None;
            let mut run: Vec<Vec<u8>> = vec![Vec::new()];
            let mut all_exact = true;
            for item in items {
                match lits(item) {
                    Lits::Exact(s) => match product(&run, &s) {
                        Some(p) => run = p,
                        None => {
                            all_exact = false;
                            found = better(found, best(Lits::Exact(std::mem::take(&mut run))));
                            run = s;
                        }
                    },
                    other => {
                        all_exact = false;
                        found = better(found, best(Lits::Exact(std::mem::take(&mut run))));
                        found = better(found, best(other));
                        run = vec![Vec::new()];
                    }
                }
            }
            if all_exact {
                return Lits::Exact(run);
            }
            found = better(found, best(Lits::Exact(run)));
            found.map_or(Lits::Unknown, Lits::Required)
        }
    }
}

/// FNV-1a of a pattern's text: the key of [`builtin`]'s table (stable across
/// builds and machines, unlike the standard library's hasher).
pub(crate) fn key(pattern: &str) -> u64 {
    pattern.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What `packs/literals.tsv` knows of one built-in pattern.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Known {
    /// It compiles, and every match holds one of these.
    Required(Vec<Vec<u8>>),
    /// It compiles, and no literal is required.
    Any,
}

/// The table of the built-in patterns' literals, by [`key`] of the pattern.
pub(crate) fn builtin() -> &'static HashMap<u64, Known> {
    static TABLE: OnceLock<HashMap<u64, Known>> = OnceLock::new();
    TABLE.get_or_init(|| parse_table(include_str!("packs/literals.tsv")))
}

fn parse_table(text: &str) -> HashMap<u64, Known> {
    let mut table = HashMap::new();
    for row in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut fields = row.split('\t');
        let Some(k) = fields.next().and_then(|k| u64::from_str_radix(k, 16).ok()) else {
            continue;
        };
        let lits: Vec<Vec<u8>> = fields.map(unescape).collect();
        // A row without literals (or with an empty one) promises nothing: the
        // pattern is tried on every line rather than never.
        let known = match lits.as_slice() {
            [only] if only == b"*" => Known::Any,
            _ if lits.is_empty() || lits.iter().any(Vec::is_empty) => Known::Any,
            _ => Known::Required(lits),
        };
        table.insert(k, known);
    }
    table
}

#[cfg(test)]
/// A literal as the table writes it: printable ASCII but `\`, `*` and space as
/// they are, anything else `\xNN`.
fn escape(lit: &[u8]) -> String {
    lit.iter()
        .map(|&b| match b {
            b'\\' | b'*' => format!("\\x{b:02x}"),
            0x21..=0x7e | b' ' => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1] == b'x' {
            if let Some(v) = std::str::from_utf8(&b[i + 2..i + 4])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// The table's text for `patterns` (each parsed as [`crate::TriggerSet`]
/// parses it), one row per distinct pattern.
#[cfg(test)]
fn table_text(patterns: &[String]) -> String {
    let mut rows = std::collections::BTreeMap::new();
    for p in patterns {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(p)
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        let cells = match required(&hir) {
            Some(set) => set.iter().map(|l| escape(l)).collect::<Vec<_>>().join("\t"),
            None => "*".to_string(),
        };
        rows.insert(format!("{:016x}", key(p)), cells);
    }
    let mut text = String::from(
        "# The built-in patterns' required literals (triggers/src/literals.rs), by FNV-1a of the pattern.\n\
         # Generated: TRIPCAP_BLESS=1 cargo test -p tripcap-triggers --lib literals\n",
    );
    for (k, cells) in rows {
        text.push_str(&format!("{k}\t{cells}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(p: &str) -> Option<Vec<String>> {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(p)
            .expect("valid");
        required(&hir).map(|s| {
            s.into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect()
        })
    }

    #[test]
    fn literals_of_shapes() {
        assert_eq!(req("abc"), Some(vec!["abc".into()]));
        assert_eq!(
            req(r"(?i)Watchdog caught"),
            Some(vec!["watchdog caught".into()])
        );
        assert_eq!(
            req(r"NET/IB : Got completion"),
            Some(vec!["et/ib : got comp".into()])
        );
        assert_eq!(
            req(r"ibv_(post_send|post_recv) failed"),
            Some(vec!["ibv_post_recv fa".into(), "ibv_post_send fa".into()])
        );
        assert_eq!(req(r"\d+ errors?"), Some(vec![" error".into()]));
        assert_eq!(req(r"[a-z]+: failed"), Some(vec![": failed".into()]));
        assert_eq!(req(r"\w+"), None);
        assert_eq!(req(r"(?:foo)?bar"), Some(vec!["bar".into()]));
        assert_eq!(req(r"(?:abc|\d+)x"), Some(vec!["x".into()]));
        assert_eq!(req(r"(?:abcd|\d+x)"), Some(vec!["abcd".into(), "x".into()]));
        assert_eq!(req(r"(?:abcd|\d*)"), None);
        assert_eq!(
            req(r"(?:\b|\[[\d;]*m)connect\(\) timed"),
            Some(vec!["connect() timed".into()])
        );
        assert_eq!(req(r"^$"), None);
    }

    /// A required literal is in every match: checked on random matches of random
    /// patterns built from the shapes the packs use.
    #[test]
    fn every_match_holds_a_literal() {
        let parts = [
            "ab",
            "(?i)Cd",
            r"\d+",
            r"\w*",
            "(?:ef|gh)",
            "(?:ij)?",
            r"\s",
            "[kK]",
            "x{2,3}",
            r"\b",
            "(?:lm|[0-9]+)",
            ".",
            "(?:no|pq)+",
            "[rs]",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let texts: Vec<String> = (0..400)
            .map(|_| {
                let alphabet = b"abcdefghijklmnopqrsxKCD0123 ";
                (0..next(24))
                    .map(|_| char::from(alphabet[next(alphabet.len())]))
                    .collect()
            })
            .collect();
        for _ in 0..600 {
            let p: String = (0..1 + next(5)).map(|_| parts[next(parts.len())]).collect();
            let re = regex::bytes::Regex::new(&format!("(?-u){p}")).expect("valid");
            let Some(set) = req(&format!("(?-u){p}")) else {
                continue;
            };
            for t in &texts {
                if re.is_match(t.as_bytes()) {
                    let lower = t.to_ascii_lowercase();
                    assert!(
                        set.iter().any(|l| lower.contains(l.as_str())),
                        "{p:?} matches {t:?} but holds none of {set:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn escapes_round_trip() {
        for lit in [&b"a\\b*c d"[..], b"\x1b[\tm", b"\xff\xfe", b"*"] {
            assert_eq!(unescape(&escape(lit)), lit);
        }
        // A row that names no literal, or an empty one, cannot rule a line out.
        let table = parse_table("00000000000000a1\n00000000000000a2\t\tx\n00000000000000a3\t*\n");
        assert!(table.values().all(|k| *k == Known::Any), "{table:?}");
    }

    /// `packs/literals.tsv` is what the built-in packs give now (rewritten by
    /// `TRIPCAP_BLESS=1`).
    #[test]
    fn builtin_table_is_current() {
        let patterns: Vec<String> = crate::all_packs()
            .into_iter()
            .flat_map(|d| d.patterns.into_iter().chain(d.unless))
            .collect();
        let want = table_text(&patterns);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/packs/literals.tsv");
        let have = std::fs::read_to_string(path).unwrap_or_default();
        if have != want {
            if std::env::var_os("TRIPCAP_BLESS").is_some() {
                std::fs::write(path, &want).expect("write literals.tsv");
            } else {
                panic!(
                    "triggers/src/packs/literals.tsv is out of date with the packs: \
                     run TRIPCAP_BLESS=1 cargo test -p tripcap-triggers --lib literals"
                );
            }
        }
        assert_eq!(parse_table(&want).len(), {
            let mut keys: Vec<u64> = patterns.iter().map(|p| key(p)).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.len()
        });
    }
}
