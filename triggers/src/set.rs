//! Matching lines against many triggers: [`TriggerSet`] and [`LineMatch`].
//!
//! [`TriggerSet`] compiles every pattern (and every `unless` veto) of every
//! trigger into one automaton, which says which of them match a line
//! ([`crate::which`]) however many triggers are configured; capture groups are
//! extracted only for the patterns that matched (each pattern's own regex is
//! compiled the first time it fires).
//! Lines are bytes, not `str`: logs hold non-UTF-8 garbage and ANSI colour
//! codes, and a line that is not valid UTF-8 must still be able to fire.
//!
//! To read a whole log, [`TriggerSet::lines_that_may_fire`] finds in one pass
//! over a chunk of many lines the few that [`TriggerSet::match_line`] then has to
//! look at ([`crate::scan`]).

use std::ops::Range;
use std::sync::OnceLock;

use regex::bytes::Regex;
use regex_syntax::hir::Hir;

use crate::def::TriggerDef;
use crate::scan::{self, FilterCache, LineFilter};
use crate::which::WhichPatterns;

/// Cache of each lazy DFA (per matching thread, grown only as states are
/// built). When the set was one unanchored regex, 2 MiB was far too small for
/// ~100 patterns with `.*?` parts (rebuilt over and over, then given up for the
/// 12× slower PikeVM), and with ~300 patterns 64 MiB still cleared now and then.
/// The anchored walk of [`crate::which`] builds far smaller states, but a log of
/// many distinct failures still builds many; the chunk filter ([`crate::scan`])
/// of a 100 MB log of healthy lines builds a few MiB. So: 256 MiB at most.
const SET_DFA_CACHE: usize = 256 << 20;

/// Longest compiled program a single pattern may take (guards against patterns
/// like `a{1000}{1000}` that would eat memory at start).
const PATTERN_SIZE_LIMIT: usize = 16 << 20;

/// Longest compiled program of the whole set.
const SET_SIZE_LIMIT: usize = 4 * PATTERN_SIZE_LIMIT;

/// Errors building a [`TriggerSet`].
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A pattern is not a valid regex.
    #[error("trigger `{trigger}`: pattern {index} is not a valid regex: {message}")]
    BadPattern {
        /// Trigger name.
        trigger: String,
        /// Index of the pattern within the trigger.
        index: usize,
        /// What the regex compiler said, on one line.
        message: String,
    },
    /// An `unless` pattern is not a valid regex.
    #[error("trigger `{trigger}`: unless pattern {index} is not a valid regex: {message}")]
    BadUnless {
        /// Trigger name.
        trigger: String,
        /// Index of the pattern within the trigger's `unless` list.
        index: usize,
        /// What the regex compiler said, on one line.
        message: String,
    },
    /// A trigger has no pattern at all.
    #[error("trigger `{0}` has no pattern: add `pattern = \"...\"`")]
    NoPattern(String),
    /// Two triggers share a name.
    #[error("two triggers are named `{0}`: names must be unique")]
    DuplicateName(String),
}

/// One trigger that matched one line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineMatch {
    /// Index of the trigger in [`TriggerSet::defs`].
    pub trigger: usize,
    /// Index of the first pattern of that trigger that matched.
    pub pattern: usize,
    /// Named capture groups of that pattern that took part in the match
    /// (lossy UTF-8), in the order they appear in the pattern.
    pub groups: Vec<(String, String)>,
}

/// What one regex of the set is for.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// Pattern `index` of trigger `trigger`: fires it.
    Fire { trigger: usize, pattern: usize },
    /// `unless` pattern `index` of trigger `trigger`: vetoes it.
    Veto { trigger: usize, index: usize },
}

impl Role {
    /// The error naming this pattern of `defs`, for `message`.
    fn error(self, defs: &[TriggerDef], message: String) -> Error {
        match self {
            Role::Fire { trigger, pattern } => Error::BadPattern {
                trigger: defs[trigger].name.clone(),
                index: pattern,
                message,
            },
            Role::Veto { trigger, index } => Error::BadUnless {
                trigger: defs[trigger].name.clone(),
                index,
                message,
            },
        }
    }
}

/// Every pattern of every trigger, compiled for one pass per line.
#[derive(Debug, Clone)]
pub struct TriggerSet {
    defs: Vec<TriggerDef>,
    /// Every pattern and veto: which of them match a line.
    set: WhichPatterns,
    /// Same order as `set`.
    roles: Vec<Role>,
    /// Same order as `set`: the pattern's own regex, for its capture groups,
    /// compiled the first time it fires (`None` for vetoes, for a pattern
    /// without named groups, and should it not compile alone: no groups then).
    captures: Vec<OnceLock<Option<Regex>>>,
    /// The firing patterns over whole chunks of lines; `None` when there are
    /// none, or their automaton is too big (then every line is looked at).
    filter: Option<LineFilter>,
}

/// `here()` on this thread while `there()` runs on another (or after it, on
/// this one, should no thread be had).
fn side_by_side<A, B: Send>(here: impl FnOnce() -> A, there: impl Fn() -> B + Sync) -> (A, B) {
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new().spawn_scoped(scope, &there);
        let a = here();
        let b = match other {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            Err(_) => there(),
        };
        (a, b)
    })
}

/// `f` of every item, in order, half of them on each of two threads.
fn on_two_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let (first, second) = items.split_at(items.len() / 2);
    let each = |part: &[T]| part.iter().map(&f).collect::<Vec<R>>();
    let (mut out, rest) = side_by_side(|| each(first), || each(second));
    out.extend(rest);
    out
}

/// Squeeze a regex error (several lines with a caret diagram) onto one line.
fn one_line(err: &dyn std::fmt::Display) -> String {
    let text = err.to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // The parser's message ends with "error: <what>"; keep that and the pattern.
    match lines.iter().rev().find(|l| l.starts_with("error:")) {
        Some(last) => format!(
            "{} (in `{}`)",
            last.trim_start_matches("error:").trim(),
            lines.get(1).unwrap_or(&"")
        ),
        None => lines.join(" "),
    }
}

/// The syntax tree of `pattern`, parsed as `regex::bytes` parses it; an error
/// (on one line) when it is not a valid regex.
fn parse(pattern: &str) -> Result<Hir, String> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(|e| one_line(&e))
}

/// An error (on one line) when `hir` alone compiles to more than
/// [`PATTERN_SIZE_LIMIT`]. Asked only when the whole set does not compile, to
/// say which pattern is to blame: compiling each pattern alone as well cost a
/// tenth of starting up.
fn too_big(hir: &Hir) -> Option<String> {
    scan::nfa_compiler(PATTERN_SIZE_LIMIT)
        .build_from_hir(hir)
        .err()
        .map(|e| one_line(&e))
}

/// The error for a set that does not compile: the first pattern too big on its
/// own, named, else the set as a whole.
fn blame(defs: &[TriggerDef], roles: &[Role], hirs: &[Hir], message: String) -> Error {
    let culprit = roles
        .iter()
        .zip(hirs)
        .find_map(|(role, hir)| too_big(hir).map(|e| (*role, e)));
    match culprit {
        Some((role, message)) => role.error(defs, message),
        None => Error::BadPattern {
            trigger: "(all)".to_string(),
            index: 0,
            message,
        },
    }
}

/// `pattern` alone, for its capture groups.
fn compile(pattern: &str) -> Option<Regex> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .ok()
}

/// Whether `hir` has a named capture group.
fn has_named_group(hir: &Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Capture(c) => c.name.is_some() || has_named_group(&c.sub),
        HirKind::Repetition(r) => has_named_group(&r.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().any(has_named_group),
        _ => false,
    }
}

/// The which-patterns automaton of `hirs`.
fn build_set(hirs: &[Hir]) -> Result<WhichPatterns, String> {
    WhichPatterns::new(hirs, SET_SIZE_LIMIT, SET_DFA_CACHE).map_err(|e| one_line(&e))
}

impl TriggerSet {
    /// Compile `defs`. Fails on the first invalid or empty trigger, naming it.
    ///
    /// Starting up is mostly parsing the patterns, then compiling the set and
    /// the chunk filter; each of the two is done on two threads (with the
    /// filter's trie in one arena, `triggers test` of an empty log with the
    /// built-in packs went from 84 to 60 ms).
    pub fn new(defs: Vec<TriggerDef>) -> Result<Self, Error> {
        // The patterns, each with its role, up to the first trigger that is
        // wrong whatever its patterns (its error comes after theirs).
        let mut jobs: Vec<(&str, Role)> = Vec::new();
        let mut wrong = None;
        for (t, def) in defs.iter().enumerate() {
            if defs[..t].iter().any(|d| d.name == def.name) {
                wrong = Some(Error::DuplicateName(def.name.clone()));
            } else if def.patterns.is_empty() {
                wrong = Some(Error::NoPattern(def.name.clone()));
            }
            if wrong.is_some() {
                break;
            }
            for (p, pat) in def.patterns.iter().enumerate() {
                jobs.push((
                    pat,
                    Role::Fire {
                        trigger: t,
                        pattern: p,
                    },
                ));
            }
            for (u, pat) in def.unless.iter().enumerate() {
                jobs.push((
                    pat,
                    Role::Veto {
                        trigger: t,
                        index: u,
                    },
                ));
            }
        }
        let parsed = on_two_threads(&jobs, |(pattern, _)| parse(pattern));
        let mut hirs = Vec::with_capacity(jobs.len());
        let mut roles = Vec::with_capacity(jobs.len());
        let mut captures = Vec::with_capacity(jobs.len());
        for (hir, &(_, role)) in parsed.into_iter().zip(&jobs) {
            let hir = hir.map_err(|message| role.error(&defs, message))?;
            // Vetoes, and patterns without named groups, never need their own regex.
            captures.push(match role {
                Role::Fire { .. } if has_named_group(&hir) => OnceLock::new(),
                _ => OnceLock::from(None),
            });
            hirs.push(hir);
            roles.push(role);
        }
        if let Some(wrong) = wrong {
            return Err(wrong);
        }
        let firing = || -> Option<LineFilter> {
            let firing: Vec<Hir> = hirs
                .iter()
                .zip(&roles)
                .filter(|(_, role)| matches!(role, Role::Fire { .. }))
                .map(|(hir, _)| scan::trim_ends(&scan::for_buffers(hir)))
                .collect();
            match firing.is_empty() {
                true => None,
                false => LineFilter::new(&firing, SET_SIZE_LIMIT, SET_DFA_CACHE),
            }
        };
        let (set, filter) = side_by_side(|| build_set(&hirs), firing);
        let set = set.map_err(|message| blame(&defs, &roles, &hirs, message))?;
        Ok(TriggerSet {
            defs,
            set,
            roles,
            captures,
            filter,
        })
    }

    /// A set with no triggers: matches nothing.
    pub fn empty() -> Self {
        TriggerSet {
            defs: Vec::new(),
            set: build_set(&[]).unwrap_or_else(|_| unreachable!("an empty set compiles")),
            roles: Vec::new(),
            captures: Vec::new(),
            filter: None,
        }
    }

    /// The triggers, in the order given.
    pub fn defs(&self) -> &[TriggerDef] {
        &self.defs
    }

    /// Whether no trigger is defined.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// A cache for [`TriggerSet::lines_that_may_fire`] (one per scanning thread).
    pub fn scan_cache(&self) -> ScanCache {
        ScanCache(self.filter.as_ref().map(LineFilter::cache))
    }

    /// Push onto `out` the range (without its `\n`) of every line of `chunk`
    /// that [`TriggerSet::match_line`] may fire on, in order; lines not pushed
    /// fire nothing. `chunk` holds whole lines: it starts at the start of a
    /// line and ends after a `\n` or at the end of the input.
    /// One pass over the chunk (see [`crate::scan`]), far cheaper than
    /// `match_line` on every line when few lines fire.
    pub fn lines_that_may_fire(
        &self,
        chunk: &[u8],
        cache: &mut ScanCache,
        out: &mut Vec<Range<usize>>,
    ) {
        match (&self.filter, &mut cache.0) {
            (Some(filter), Some(cache)) => filter.lines(cache, chunk, out),
            // No firing pattern: nothing fires.
            _ if self.defs.is_empty() => {}
            // No filter (too big), or a cache of another set: every line.
            _ => scan::all_lines(chunk, out),
        }
    }

    /// Whether [`TriggerSet::match_line`] may fire on `line` (one line, without
    /// its newline): the chunk filter's answer for it alone. `false` means it
    /// fires nothing. For lines that arrive one at a time (followed logs, `tripcap
    /// wrap`): most fire nothing, and the filter says so for less than half of
    /// what finding which patterns match costs (BENCHMARKS.md, "triggers").
    pub fn may_fire(&self, line: &[u8], cache: &mut ScanCache) -> bool {
        match (&self.filter, &mut cache.0) {
            (Some(filter), Some(cache)) => filter.may_match(cache, line),
            // No firing pattern: nothing fires.
            _ if self.defs.is_empty() => false,
            // No filter (too big), or a cache of another set.
            _ => true,
        }
    }

    /// Match `line` (without its newline) against every trigger; push one
    /// [`LineMatch`] per trigger that fired into `out` (cleared first), in
    /// trigger order, so `out[0]` is the first trigger that fired. A trigger
    /// one of whose `unless` patterns matches does not fire.
    /// Returns whether anything matched.
    pub fn match_line(&self, line: &[u8], out: &mut Vec<LineMatch>) -> bool {
        out.clear();
        if self.defs.is_empty() {
            return false;
        }
        self.set.with_matches(line, |hits| {
            let vetoed = |trigger: usize| {
                hits.iter().any(
                    |i| matches!(self.roles[i.as_usize()], Role::Veto { trigger: v, .. } if v == trigger),
                )
            };
            for i in hits.iter().map(|id| id.as_usize()) {
                let Role::Fire { trigger, pattern } = self.roles[i] else {
                    continue;
                };
                if out.iter().any(|m| m.trigger == trigger) || vetoed(trigger) {
                    continue; // one match per trigger: the first pattern wins
                }
                let re = self.captures[i]
                    .get_or_init(|| compile(&self.defs[trigger].patterns[pattern]));
                let mut groups = Vec::new();
                if let Some(caps) = re.as_ref().and_then(|re| re.captures(line)) {
                    for name in re.iter().flat_map(|re| re.capture_names()).flatten() {
                        if let Some(m) = caps.name(name) {
                            let value = String::from_utf8_lossy(m.as_bytes()).into_owned();
                            groups.push((name.to_string(), value));
                        }
                    }
                }
                out.push(LineMatch {
                    trigger,
                    pattern,
                    groups,
                });
            }
        });
        // Fallbacks only where nothing specific fired, and one of them at most.
        let fallback = |m: &LineMatch| self.defs[m.trigger].fallback;
        if out.iter().any(|m| !fallback(m)) {
            out.retain(|m| !fallback(m));
        } else {
            out.truncate(1);
        }
        !out.is_empty()
    }
}

/// What [`TriggerSet::lines_that_may_fire`] keeps between chunks.
#[derive(Debug, Clone)]
pub struct ScanCache(Option<FilterCache>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_bytes_anywhere_with_groups() {
        let set = TriggerSet::new(vec![
            TriggerDef::new(
                "wd",
                vec![r"Watchdog caught collective operation timeout.*Timeout\(ms\)=(?P<timeout_ms>\d+)".into()],
            ),
            TriggerDef::new("other", vec!["never".into()]),
        ])
        .expect("valid");
        let mut out = Vec::new();
        let line = b"\xff\xfe[rank1]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, Timeout(ms)=600000) ran";
        assert!(set.match_line(line, &mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].trigger, 0);
        assert_eq!(
            out[0].groups,
            vec![("timeout_ms".to_string(), "600000".to_string())]
        );
        assert!(!set.match_line(b"NCCL INFO all fine", &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn a_line_the_filter_rules_out_fires_nothing() {
        let set = TriggerSet::new(vec![
            TriggerDef::new("wd", vec![r"Watchdog caught .*? timeout".into()]),
            TriggerDef::new(
                "ib",
                vec![r"(?-u)\bNET/IB\b.*?error (?P<status>\d+)".into()],
            ),
        ])
        .expect("valid");
        let mut cache = set.scan_cache();
        let mut out = Vec::new();
        for (line, fires) in [
            (
                &b"[rank1]: Watchdog caught collective operation timeout"[..],
                true,
            ),
            (
                b"NCCL INFO NET/IB : Got completion from peer with error 12",
                true,
            ),
            (b"NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE", false),
            (b"Watchdog started", false),
            (b"", false),
        ] {
            assert_eq!(set.match_line(line, &mut out), fires, "{line:?}");
            // Never a line that fires ruled out; here, the others are.
            assert_eq!(set.may_fire(line, &mut cache), fires, "{line:?}");
        }
        assert!(!TriggerSet::empty().may_fire(b"anything", &mut cache));
    }

    #[test]
    fn a_fallback_fires_only_where_nothing_specific_does_and_once() {
        let fallback = |name: &str, pattern: &str| {
            let mut d = TriggerDef::new(name, vec![pattern.into()]);
            d.fallback = true;
            d
        };
        // The fallbacks come first in the set: order does not let them win.
        let set = TriggerSet::new(vec![
            fallback("any-verbs-call", "ibv_[a-z_]+ failed"),
            fallback("any-qp-setup", "modify_qp"),
            TriggerDef::new("nccl-ib", vec!["NET/IB : ibv_modify_qp failed".into()]),
        ])
        .expect("valid");
        let mut out = Vec::new();
        assert!(set.match_line(b"NCCL WARN NET/IB : ibv_modify_qp failed", &mut out));
        let fired: Vec<usize> = out.iter().map(|m| m.trigger).collect();
        assert_eq!(fired, vec![2], "the specific trigger alone");
        assert!(set.match_line(b"app: ibv_modify_qp failed: Invalid argument", &mut out));
        let fired: Vec<usize> = out.iter().map(|m| m.trigger).collect();
        assert_eq!(fired, vec![0], "one fallback, the first that matched");
        assert!(set.match_line(b"init: modify_qp to RTR", &mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].trigger, 1);
        assert!(!set.match_line(b"all fine", &mut out));
    }

    #[test]
    fn unless_vetoes_only_its_own_trigger() {
        let mut wd = TriggerDef::new("wd", vec!["Watchdog caught".into()]);
        wd.unless = vec!["communicator was aborted".into()];
        let aborted = TriggerDef::new("aborted", vec!["communicator was aborted".into()]);
        let set = TriggerSet::new(vec![wd, aborted]).expect("valid");
        let mut out = Vec::new();
        assert!(set.match_line(b"[Rank 1] Watchdog caught collective", &mut out));
        assert_eq!(out[0].trigger, 0);
        let line =
            b"NCCL communicator was aborted on rank 2. Original reason: [Rank 2] Watchdog caught";
        assert!(set.match_line(line, &mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].trigger, 1);
    }

    #[test]
    fn bad_pattern_is_named_on_one_line() {
        let err = TriggerSet::new(vec![TriggerDef::new(
            "t",
            vec!["ok".into(), "(unclosed".into()],
        )])
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("trigger `t`: pattern 1"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("unclosed"), "{text}");
        let mut def = TriggerDef::new("u", vec!["ok".into()]);
        def.unless = vec!["[".into()];
        let text = TriggerSet::new(vec![def]).unwrap_err().to_string();
        assert!(text.starts_with("trigger `u`: unless pattern 0"), "{text}");
    }

    #[test]
    fn a_pattern_too_big_is_named() {
        // The huge pattern makes the whole set too big: it is the one named.
        let mut big = TriggerDef::new("big", vec!["fine".into(), r"(?:\w{1000}){1000}".into()]);
        big.unless = vec!["ok".into()];
        let err = TriggerSet::new(vec![TriggerDef::new("t", vec!["a".into()]), big.clone()])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("trigger `big`: pattern 1 "), "{err}");
        assert!(!err.contains('\n'), "{err}");
        big.patterns.remove(1);
        big.unless.push(r"(?:\w{1000}){1000}".into());
        let err = TriggerSet::new(vec![big]).unwrap_err().to_string();
        assert!(err.starts_with("trigger `big`: unless pattern 1 "), "{err}");
    }

    #[test]
    fn empty_and_duplicate_triggers_are_refused() {
        assert_eq!(
            TriggerSet::new(vec![TriggerDef::new("t", vec![])]).unwrap_err(),
            Error::NoPattern("t".into())
        );
        let dup = TriggerSet::new(vec![
            TriggerDef::new("t", vec!["a".into()]),
            TriggerDef::new("t", vec!["b".into()]),
        ]);
        assert_eq!(dup.unwrap_err(), Error::DuplicateName("t".into()));
    }

    #[test]
    fn the_first_wrong_trigger_is_the_one_named() {
        // Patterns are parsed half on each of two threads: the error is still
        // the first in the order given, whichever half holds it.
        let many = |bad: &[usize]| -> Vec<TriggerDef> {
            (0..40)
                .map(|i| {
                    let p = if bad.contains(&i) { "(x" } else { "ok" };
                    TriggerDef::new(format!("t{i}"), vec![p.into()])
                })
                .collect()
        };
        let named = |defs: Vec<TriggerDef>| match TriggerSet::new(defs).unwrap_err() {
            Error::BadPattern { trigger, .. } => trigger,
            other => format!("{other}"),
        };
        assert_eq!(named(many(&[3])), "t3");
        assert_eq!(named(many(&[35])), "t35");
        assert_eq!(named(many(&[30, 7])), "t7");
        // A bad pattern before an empty or duplicate trigger is named first ...
        let mut defs = many(&[5]);
        defs[20].patterns.clear();
        assert_eq!(named(defs.clone()), "t5");
        // ... and one after it is not.
        defs[5].patterns = vec!["ok".into()];
        defs[30].patterns = vec!["(x".into()];
        assert_eq!(
            named(defs),
            "trigger `t20` has no pattern: add `pattern = \"...\"`"
        );
        let mut defs = many(&[]);
        defs[25].name = "t2".into();
        defs[31].patterns = vec!["(x".into()];
        assert_eq!(
            named(defs),
            "two triggers are named `t2`: names must be unique"
        );
        // Nothing wrong: it compiles, and fires.
        let set = TriggerSet::new(many(&[])).expect("compiles");
        let mut out = Vec::new();
        assert!(set.match_line(b"ok", &mut out));
        assert_eq!(out[0].trigger, 0);
    }
}
