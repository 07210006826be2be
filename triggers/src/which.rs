//! Which patterns of a set match one line: [`WhichPatterns`].
//!
//! A line reaches this only when the chunk filter ([`crate::scan`]) found that
//! some pattern may match in it, so it runs on few lines, and on a short log on
//! lines it has never seen. One unanchored pass of a lazy DFA (what
//! `regex::bytes::RegexSet` does) is the wrong shape for that: every state of
//! an unanchored DFA holds the start of every pattern, so with ~700 patterns
//! each new state cost about 450,000 instructions to build, and a 200 KB
//! healthy log built 680 of them for its 14 candidate lines (callgrind,
//! BENCHMARKS.md). Here the DFA is walked anchored from each position of the
//! line instead: only its start states hold every pattern; the states after
//! them hold the few patterns whose opening the line has there, and most
//! positions end in the dead state after one byte.
//!
//! A line on which the walks take too many steps (a pattern that opens with a
//! class and a repetition, on a long word) is searched in one unanchored pass
//! of the same DFA instead, as `RegexSet` would. A user pattern with a Unicode
//! `\b` makes the DFA stop ("quit") on a non-ASCII byte; such a line is matched
//! by the PikeVM of the same automaton.

use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};

use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::nfa::thompson::pikevm::{self, PikeVM};
use regex_automata::util::pool::Pool;
use regex_automata::util::start;
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use regex_syntax::hir::{Hir, HirKind, Repetition};

/// What one thread needs to match: the lazy DFA's states, the PikeVM's
/// threads, and the patterns found.
struct Caches {
    dfa: DfaCache,
    pikevm: pikevm::Cache,
    hits: PatternSet,
}

type MakeCaches = Box<dyn Fn() -> Caches + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// Every pattern of a set, [`MatchKind::All`]: which of them match a line.
pub struct WhichPatterns {
    dfa: DFA,
    pikevm: PikeVM,
    caches: Pool<Caches, MakeCaches>,
}

/// Why a walk stopped before the end of the line.
enum Stop {
    /// The DFA met a byte it cannot decide on (see the module's text).
    Quit,
    /// The walks took more than [`MAX_STEPS_PER_BYTE`] steps a byte.
    TooLong,
}

/// Steps a byte (plus [`STEPS_SLACK`]) the anchored walks may take on a line
/// before it is searched in one unanchored pass instead. A healthy log takes
/// about 5; a pattern that opens with a class and a repetition after it (`[a-z][a-z0-9]*_`)
/// walks on from every letter of a long word, which would make a line of a
/// million letters cost a million squared.
const MAX_STEPS_PER_BYTE: usize = 32;
const STEPS_SLACK: usize = 4096;

/// A line longer than this goes straight to the unanchored pass: it is rare,
/// and its walks could take [`MAX_STEPS_PER_BYTE`] steps a byte before that.
const LONGEST_WALKED: usize = 16 << 10;

impl WhichPatterns {
    /// The automaton of `patterns` (pattern `i` is `patterns[i]`); an error (on
    /// one line) when it takes more than `size_limit` bytes. The lazy DFA's
    /// cache grows up to `cache_capacity` bytes per matching thread.
    pub fn new(
        patterns: &[Hir],
        size_limit: usize,
        cache_capacity: usize,
    ) -> Result<WhichPatterns, String> {
        let nfa = crate::scan::nfa_compiler(size_limit)
            .build_many_from_hir(&patterns.iter().map(shortest_ends).collect::<Vec<_>>())
            .map_err(|e| e.to_string())?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .unicode_word_boundary(true)
                    .cache_capacity(cache_capacity)
                    // Never give up for the PikeVM: the states are few and small.
                    .minimum_cache_clear_count(None),
            )
            .build_from_nfa(nfa.clone())
            .map_err(|e| e.to_string())?;
        let pikevm = PikeVM::builder()
            .configure(PikeVM::config().match_kind(MatchKind::All))
            .build_from_nfa(nfa)
            .map_err(|e| e.to_string())?;
        Ok(WhichPatterns::from_parts(dfa, pikevm))
    }

    fn from_parts(dfa: DFA, pikevm: PikeVM) -> WhichPatterns {
        let (d, p) = (dfa.clone(), pikevm.clone());
        let make: MakeCaches = Box::new(move || Caches {
            dfa: d.create_cache(),
            pikevm: p.create_cache(),
            hits: PatternSet::new(d.pattern_len()),
        });
        WhichPatterns {
            dfa,
            pikevm,
            caches: Pool::new(make),
        }
    }

    /// How many patterns the set has.
    pub fn pattern_len(&self) -> usize {
        self.dfa.pattern_len()
    }

    /// `f` of the set of patterns that match somewhere in `line` (a line
    /// without its newline: `^` and `$` are its ends).
    pub fn with_matches<R>(&self, line: &[u8], f: impl FnOnce(&PatternSet) -> R) -> R {
        let mut caches = self.caches.get();
        let Caches { dfa, pikevm, hits } = &mut *caches;
        hits.clear();
        let input = Input::new(line);
        let walk = if line.len() > LONGEST_WALKED {
            Err(Stop::TooLong)
        } else {
            self.walk(dfa, line, hits)
        };
        let walked = match walk {
            Err(Stop::TooLong) => {
                hits.clear();
                self.dfa
                    .try_which_overlapping_matches(dfa, &input, hits)
                    .is_ok()
            }
            other => other.is_ok(),
        };
        if !walked {
            hits.clear();
            self.pikevm.which_overlapping_matches(pikevm, &input, hits);
        }
        f(hits)
    }

    /// The DFA anchored at every position of `line` in turn, each walk until
    /// the dead state or the end of the line; every match state's patterns go
    /// into `hits`.
    fn walk(&self, cache: &mut DfaCache, line: &[u8], hits: &mut PatternSet) -> Result<(), Stop> {
        let mut budget = line.len().saturating_mul(MAX_STEPS_PER_BYTE) + STEPS_SLACK;
        for at in 0..=line.len() {
            let config = start::Config::new()
                .anchored(Anchored::Yes)
                .look_behind(at.checked_sub(1).map(|i| line[i]));
            let mut state = self
                .dfa
                .start_state(cache, &config)
                .map_err(|_| Stop::Quit)?;
            let mut rest = line[at..].iter();
            loop {
                budget = budget.checked_sub(1).ok_or(Stop::TooLong)?;
                let byte = rest.next();
                state = match byte {
                    Some(&b) => self.dfa.next_state(cache, state, b),
                    None => self.dfa.next_eoi_state(cache, state),
                }
                .map_err(|_| Stop::Quit)?;
                if state.is_tagged() {
                    if state.is_match() {
                        // Delayed by one byte: a match that ended before `byte`.
                        for i in 0..self.dfa.match_len(cache, state) {
                            hits.insert(self.dfa.match_pattern(cache, state, i));
                        }
                    }
                    if state.is_quit() {
                        return Err(Stop::Quit);
                    }
                    if state.is_dead() {
                        break;
                    }
                }
                if byte.is_none() {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// `hir` with what it repeats at its ends cut to the fewest repetitions: a
/// line has a match of `[\w.-]+: ibv_poll_cq` somewhere exactly when it has one
/// of `[\w.-]: ibv_poll_cq` (the last character of the run), and of `X*Y` when
/// it has one of `Y`. Only whether a pattern matches is asked here, so this
/// changes no answer; but a walk from each position of a word no longer runs to
/// the end of the word (measured: about half the steps on a log of healthy
/// lines). Nothing is cut after a look-around (`\b\w+:` is not `\b\w:`).
fn shortest_ends(hir: &Hir) -> Hir {
    let start = shortest_end(hir, End::Start);
    let from = start.as_ref().unwrap_or(hir);
    match shortest_end(from, End::Finish) {
        Some(both) => both,
        None => from.clone(),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum End {
    Start,
    Finish,
}

/// The part of `subs` at `end`, and the others.
fn split_end(subs: &[Hir], end: End) -> Option<(&Hir, &[Hir])> {
    match end {
        End::Start => subs.split_first(),
        End::Finish => subs.split_last(),
    }
}

/// `hir` cut at `end`, or `None` when there is nothing to cut (most patterns
/// open and close with a literal: they are not copied).
fn shortest_end(hir: &Hir, end: End) -> Option<Hir> {
    match hir.kind() {
        HirKind::Repetition(rep) if rep.min == 0 => Some(Hir::empty()),
        HirKind::Repetition(rep) if rep.min == 1 => {
            Some(shortest_end(&rep.sub, end).unwrap_or_else(|| (*rep.sub).clone()))
        }
        HirKind::Repetition(rep) if rep.max != Some(rep.min) => Some(Hir::repetition(Repetition {
            max: Some(rep.min),
            ..rep.clone()
        })),
        HirKind::Capture(cap) => shortest_end(&cap.sub, end),
        HirKind::Alternation(subs) => {
            let cut: Vec<Option<Hir>> = subs.iter().map(|s| shortest_end(s, end)).collect();
            cut.iter().any(Option::is_some).then(|| {
                Hir::alternation(
                    cut.into_iter()
                        .zip(subs)
                        .map(|(c, s)| c.unwrap_or_else(|| s.clone()))
                        .collect(),
                )
            })
        }
        HirKind::Concat(subs) => {
            // The end part, cut; while it is cut to nothing, the next one is the end.
            let mut kept: &[Hir] = subs;
            let mut cut = None;
            while let Some((at_end, others)) = split_end(kept, end) {
                let Some(c) = shortest_end(at_end, end) else {
                    break;
                };
                kept = others;
                if !matches!(c.kind(), HirKind::Empty) {
                    cut = Some(c);
                    break;
                }
            }
            if kept.len() == subs.len() {
                return None; // nothing cut: not copied
            }
            let mut parts = kept.to_vec();
            match (cut, end) {
                (Some(c), End::Start) => parts.insert(0, c),
                (Some(c), End::Finish) => parts.push(c),
                (None, _) => {}
            }
            Some(Hir::concat(parts))
        }
        _ => None,
    }
}

impl Clone for WhichPatterns {
    fn clone(&self) -> WhichPatterns {
        WhichPatterns::from_parts(self.dfa.clone(), self.pikevm.clone())
    }
}

impl fmt::Debug for WhichPatterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WhichPatterns")
            .field("patterns", &self.pattern_len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta;

    fn hirs(patterns: &[&str]) -> Vec<Hir> {
        patterns
            .iter()
            .map(|p| {
                regex_syntax::ParserBuilder::new()
                    .utf8(false)
                    .build()
                    .parse(p)
                    .expect("valid")
            })
            .collect()
    }

    fn found(which: &WhichPatterns, line: &[u8]) -> Vec<usize> {
        which.with_matches(line, |hits| hits.iter().map(|p| p.as_usize()).collect())
    }

    /// What `regex`'s own set says: one unanchored pass of the meta regex.
    fn reference(patterns: &[&str], line: &[u8]) -> Vec<usize> {
        let set = meta::Regex::builder()
            .configure(
                meta::Config::new()
                    .match_kind(MatchKind::All)
                    .utf8_empty(false),
            )
            .build_many_from_hir(&hirs(patterns))
            .expect("builds");
        let mut hits = PatternSet::new(set.pattern_len());
        set.which_overlapping_matches(&Input::new(line), &mut hits);
        hits.iter().map(|p| p.as_usize()).collect()
    }

    const PATTERNS: &[&str] = &[
        r"(?-u)NET/IB\w* ?: ?Got completion (?:from peer \S+ )?with (?:status=|error )(?P<status>\d+)",
        r"(?-u)Watchdog caught.*?ran for (?P<ms>\d+) ?ms",
        r"(?-u)\[rank\d+\]:\s*timeout\s*$",
        r"(?-u)vendor err \d+\b",
        r"(?-u)^x+$",
        r"(?-u)\bran\b",
        r"(?-u)error 12",
        r"(?-u)(?:\b|\x1b\[[\d;]*m)Got",
        r"(?-u)^$",
        r"(?-u)\d*",
        r"(?-u)(?P<hca>[\w.-]+): (?:Got|ran)(?: \S+)+",
        r"(?-u)(?:x\w+)+ ?err(?:or)?\s*$",
        r"(?-u)\b\w+ caught\b\w*",
        r"(?-u)(?:ms)*(?:\d{2,})\[rank\d*",
    ];

    /// Random lines from words that hit parts of the patterns often.
    fn random_lines(seed: u64, n: usize) -> Vec<Vec<u8>> {
        crate::scan::tests::random_lines(seed, n)
            .split(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    }

    #[test]
    fn the_patterns_found_are_those_regex_finds() {
        let which = WhichPatterns::new(&hirs(PATTERNS), 1 << 24, 1 << 20).expect("builds");
        let mut matched = 0;
        for line in random_lines(0x5eed_1234, 3000) {
            let want = reference(PATTERNS, &line);
            matched += usize::from(want.iter().any(|&p| p != 9 && p != 8));
            assert_eq!(
                found(&which, &line),
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
        }
        assert!(matched > 300, "only {matched} lines matched a pattern");
    }

    #[test]
    fn a_unicode_word_boundary_on_a_non_ascii_line_is_decided_by_the_pikevm() {
        let patterns = &[r"\bcafé\b", r"(?-u)NET/IB"];
        let which = WhichPatterns::new(&hirs(patterns), 1 << 24, 1 << 20).expect("builds");
        for line in [
            "un café noir".as_bytes(),
            "cafés".as_bytes(),
            b"NET/IB caf\xc3\xa9",
            b"ascii NET/IB only",
            b"\xff\xfe NET/IB",
        ] {
            assert_eq!(found(&which, line), reference(patterns, line), "{line:?}");
        }
        assert_eq!(found(&which, "un café noir".as_bytes()), vec![0]);
        assert_eq!(found(&which, "cafés".as_bytes()), Vec::<usize>::new());
    }

    #[test]
    fn a_small_cache_is_cleared_and_the_answer_is_the_same() {
        // The smallest cache the DFA accepts: it is cleared over and over.
        let which = (10..24)
            .find_map(|bits| WhichPatterns::new(&hirs(PATTERNS), 1 << 24, 1 << bits).ok())
            .expect("builds");
        for line in random_lines(0xfeed, 500) {
            assert_eq!(found(&which, &line), reference(PATTERNS, &line));
        }
    }

    #[test]
    fn a_long_word_under_a_pattern_that_walks_on_is_searched_in_one_pass() {
        let patterns = &[
            r"(?-u)[a-z][a-z0-9]*_\w+: rdma_\w+ failed",
            r"(?-u)Watchdog caught",
        ];
        let which = WhichPatterns::new(&hirs(patterns), 1 << 24, 1 << 20).expect("builds");
        // Walked from every letter, these would be 5e9 steps.
        let word = "x".repeat(100_000);
        for line in [
            format!("{word} Watchdog caught"),
            format!("{word}_qp: rdma_connect failed"),
            format!("{word} rdma_connect failed"),
        ] {
            assert_eq!(
                found(&which, line.as_bytes()),
                reference(patterns, line.as_bytes()),
                "{}",
                &line[99_990..]
            );
        }
        assert_eq!(
            found(&which, format!("{word} Watchdog caught").as_bytes()),
            vec![1]
        );
        assert_eq!(
            found(&which, format!("{word}_qp: rdma_connect failed").as_bytes()),
            vec![0]
        );
    }

    #[test]
    fn no_pattern_matches_nothing_and_a_clone_matches_alike() {
        let none = WhichPatterns::new(&[], 1 << 24, 1 << 20).expect("builds");
        assert_eq!(none.pattern_len(), 0);
        assert!(found(&none, b"anything").is_empty());
        let which = WhichPatterns::new(&hirs(PATTERNS), 1 << 24, 1 << 20).expect("builds");
        let line = b"NET/IB : Got completion from peer 10.0.0.1<4> with error 12";
        assert_eq!(found(&which.clone(), line), found(&which, line));
        assert!(found(&which, line).contains(&0));
    }
}
