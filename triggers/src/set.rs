//! Matching lines against many triggers: [`TriggerSet`] and [`LineMatch`].
//!
//! [`TriggerSet`] compiles every pattern (and every `unless` veto) of every
//! trigger into one [`regex::bytes::RegexSet`], so a line costs one pass however
//! many triggers are configured; capture groups are extracted only for the
//! patterns that matched. Lines are bytes, not `str`: logs hold non-UTF-8 garbage
//! and ANSI colour codes, and a line that is not valid UTF-8 must still be able
//! to fire.

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

use crate::def::TriggerDef;

/// Cache of the set's lazy DFA (per matching thread, grown only as states are
/// built). The default 2 MiB is too small for ~100 unanchored patterns with
/// `.*?` parts: the DFA is rebuilt over and over, then gives up for the much
/// slower PikeVM (measured: 12× slower on a log of corpus lines). With ~300
/// patterns (issue 11) 64 MiB still cleared now and then: 256 MiB, of which a
/// 100 MB log of healthy lines builds about 20 (peak RSS 34 MB).
const SET_DFA_CACHE: usize = 256 << 20;

/// Longest compiled program a single pattern may take (guards against patterns
/// like `a{1000}{1000}` that would eat memory at start).
const PATTERN_SIZE_LIMIT: usize = 16 << 20;

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
    /// An `unless` pattern of trigger `trigger`: vetoes it.
    Veto { trigger: usize },
}

/// Every pattern of every trigger, compiled for one pass per line.
#[derive(Debug, Clone)]
pub struct TriggerSet {
    defs: Vec<TriggerDef>,
    set: RegexSet,
    /// Same order as `set`.
    regexes: Vec<Regex>,
    /// Same order as `set`.
    roles: Vec<Role>,
}

/// Squeeze a regex error (several lines with a caret diagram) onto one line.
fn one_line(err: &regex::Error) -> String {
    let text = err.to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // The regex crate's message ends with "error: <what>"; keep that and the pattern.
    match lines.iter().rev().find(|l| l.starts_with("error:")) {
        Some(last) => format!(
            "{} (in `{}`)",
            last.trim_start_matches("error:").trim(),
            lines.get(1).unwrap_or(&"")
        ),
        None => lines.join(" "),
    }
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
}

impl TriggerSet {
    /// Compile `defs`. Fails on the first invalid or empty trigger, naming it.
    pub fn new(defs: Vec<TriggerDef>) -> Result<Self, Error> {
        let mut all = Vec::new();
        let mut roles = Vec::new();
        let mut regexes = Vec::new();
        for (t, def) in defs.iter().enumerate() {
            if defs[..t].iter().any(|d| d.name == def.name) {
                return Err(Error::DuplicateName(def.name.clone()));
            }
            if def.patterns.is_empty() {
                return Err(Error::NoPattern(def.name.clone()));
            }
            for (p, pat) in def.patterns.iter().enumerate() {
                let re = compile(pat).map_err(|e| Error::BadPattern {
                    trigger: def.name.clone(),
                    index: p,
                    message: one_line(&e),
                })?;
                regexes.push(re);
                all.push(pat.clone());
                roles.push(Role::Fire {
                    trigger: t,
                    pattern: p,
                });
            }
            for (u, pat) in def.unless.iter().enumerate() {
                let re = compile(pat).map_err(|e| Error::BadUnless {
                    trigger: def.name.clone(),
                    index: u,
                    message: one_line(&e),
                })?;
                regexes.push(re);
                all.push(pat.clone());
                roles.push(Role::Veto { trigger: t });
            }
        }
        let set = RegexSetBuilder::new(&all)
            .size_limit(PATTERN_SIZE_LIMIT.saturating_mul(4))
            .dfa_size_limit(SET_DFA_CACHE)
            .build()
            .map_err(|e| Error::BadPattern {
                trigger: "(all)".to_string(),
                index: 0,
                message: one_line(&e),
            })?;
        Ok(TriggerSet {
            defs,
            set,
            regexes,
            roles,
        })
    }

    /// A set with no triggers: matches nothing.
    pub fn empty() -> Self {
        TriggerSet {
            defs: Vec::new(),
            set: RegexSet::empty(),
            regexes: Vec::new(),
            roles: Vec::new(),
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
        // Most lines fire nothing: the set's plain yes/no search stops as soon as it
        // can and allocates nothing; only a line that matches pays for the search that
        // says which patterns did (measured: ~2x on a log of healthy lines).
        if !self.set.is_match(line) {
            return false;
        }
        let hits = self.set.matches(line);
        if !hits.matched_any() {
            return false;
        }
        let vetoed = |trigger: usize| {
            hits.iter()
                .any(|i| matches!(self.roles[i], Role::Veto { trigger: v } if v == trigger))
        };
        for i in hits.iter() {
            let Role::Fire { trigger, pattern } = self.roles[i] else {
                continue;
            };
            if out.iter().any(|m| m.trigger == trigger) || vetoed(trigger) {
                continue; // one match per trigger: the first pattern wins
            }
            let re = &self.regexes[i];
            let mut groups = Vec::new();
            if re.capture_names().flatten().next().is_some() {
                if let Some(caps) = re.captures(line) {
                    for name in re.capture_names().flatten() {
                        if let Some(m) = caps.name(name) {
                            let value = String::from_utf8_lossy(m.as_bytes()).into_owned();
                            groups.push((name.to_string(), value));
                        }
                    }
                }
            }
            out.push(LineMatch {
                trigger,
                pattern,
                groups,
            });
        }
        !out.is_empty()
    }
}

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
}
