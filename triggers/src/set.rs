//! Matching lines against many triggers: [`TriggerSet`] and [`LineMatch`].
//!
//! [`TriggerSet`] compiles every pattern (and every `unless` veto) of every
//! trigger into one automaton, which says which of them match a line
//! ([`crate::which`]) however many triggers are configured; capture groups are
//! extracted only for the patterns that matched (each pattern's own regex is
//! compiled the first time it fires).
//!
//! It does so lazily. Compiling the 750 built-in patterns and vetoes takes a
//! twelfth of a second, most of what `tripcap triggers test` spends on a short
//! log. So a new set holds only a gate: an Aho-Corasick automaton of the
//! literals each firing pattern requires ([`crate::literals`]; the built-in
//! ones from a table made when the packs change). A line that holds none of a
//! pattern's literals cannot match it; a line that holds some is matched
//! against those patterns alone, each compiled the first time. Once the gate has
//! let [`LAZY_LINES`] lines through, the whole set is compiled on a thread of its
//! own (lines are matched lazily meanwhile) and used from then on. Both ways
//! give the same answers (tests compare them on every generated and corpus line).
//!
//! Lines are bytes, not `str`: logs hold non-UTF-8 garbage and ANSI colour
//! codes, and a line that is not valid UTF-8 must still be able to fire.
//!
//! To read a whole log, [`TriggerSet::lines_that_may_fire`] finds in one pass
//! over a chunk of many lines the few that [`TriggerSet::match_line`] then has to
//! look at ([`crate::scan`]).

use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::bytes::Regex;
use regex_syntax::hir::Hir;

use crate::def::TriggerDef;
use crate::literals::{self, Known};
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
///
/// Compiled in two steps (see the module doc): at first only a gate of the
/// patterns' required literals ([`crate::literals`]), with each pattern compiled
/// alone the first time a line holds one of its literals; then, once the gate has
/// let through [`LAZY_LINES`] lines, the whole set at once.
#[derive(Debug)]
pub struct TriggerSet {
    defs: Vec<TriggerDef>,
    /// Every pattern and veto, in the order of the which-patterns set.
    roles: Vec<Role>,
    /// Same order as `roles`: the pattern's own regex, compiled the first time
    /// it is needed (to match it on its own while the set is lazy, for its
    /// capture groups once it fires); `None` should it not compile alone.
    alone: Vec<OnceLock<Option<Regex>>>,
    /// Per trigger: the indices (in `roles`) of its vetoes.
    vetoes: Vec<Vec<usize>>,
    /// Which patterns a line may match, by their literals: `None` when the
    /// whole set was compiled at the start.
    gate: Option<Gate>,
    /// The whole set: compiled at the start without a gate, else on a thread of
    /// its own once the gate has let [`LAZY_LINES`] lines through (lines are
    /// matched lazily until it is ready: a followed log never waits for it);
    /// `None` inside when it could not be (too big: the set stays lazy).
    full: Arc<OnceLock<Option<Full>>>,
    /// Whether the whole set is being compiled (or was).
    compiling: Arc<AtomicBool>,
    /// Lines the gate has let through so far.
    passed: AtomicUsize,
    /// Lines the gate lets through before the whole set is compiled
    /// ([`LAZY_LINES`]).
    lazy_lines: usize,
}

/// Lines the literal gate lets through before the whole set is compiled (each
/// look counts: the agent asks `may_fire`, then `match_line`, of a line). A short
/// log (or the first of a followed one) compiles only the patterns its lines may
/// match; a long one pays once, on another thread, for the automata that scan it
/// fastest.
const LAZY_LINES: usize = 1000;

/// A chunk at least this long is read in bulk (`tripcap triggers test` reads
/// 1 MiB at a time; a followed log's appends come 64 KiB at most): the whole set
/// is compiled for it at once, since a long log scans fastest that way.
const BULK_CHUNK: usize = 512 << 10;

/// The whole set, compiled.
#[derive(Debug, Clone)]
struct Full {
    /// Every pattern and veto: which of them match a line.
    set: WhichPatterns,
    /// The firing patterns over whole chunks of lines; `None` when there are
    /// none, or their automaton is too big (then every line is looked at).
    filter: Option<LineFilter>,
}

/// Which firing patterns a line may match, by their required literals.
#[derive(Debug, Clone)]
struct Gate {
    /// Every firing pattern's literals (lower case).
    needles: Vec<Vec<u8>>,
    /// Their automaton, built the first time a line is looked at (a reader of
    /// whole files, which compiles the whole set at once, never needs it);
    /// `None` inside should it not build: every firing pattern is then a
    /// candidate, and the whole set soon takes over.
    literals: OnceLock<Option<AhoCorasick>>,
    /// Per literal of `needles`: the pattern (index in `roles`) it is from.
    owner: Vec<usize>,
    /// Firing patterns with no required literal: tried on every line.
    always: Vec<usize>,
}

impl Gate {
    /// The firing patterns (indices in `roles`, ascending, each once) that `line`
    /// may match; `into` is cleared first.
    /// `lower` is a buffer for the line in lower case.
    fn candidates(&self, line: &[u8], lower: &mut Vec<u8>, into: &mut Vec<usize>) {
        into.clear();
        into.extend_from_slice(&self.always);
        if !self.needles.is_empty() {
            let built = self.literals.get_or_init(|| {
                AhoCorasick::builder()
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(&self.needles)
                    .ok()
            });
            match built {
                Some(ac) => {
                    // The literals are lower case: the line is searched in lower
                    // case (cheaper than an automaton that folds case itself,
                    // which took longer to build than the rest of starting up).
                    lower.clear();
                    lower.extend(line.iter().map(u8::to_ascii_lowercase));
                    into.extend(
                        ac.find_overlapping_iter(lower.as_slice())
                            .map(|m| self.owner[m.pattern().as_usize()]),
                    );
                }
                None => into.extend_from_slice(&self.owner),
            }
        }
        into.sort_unstable();
        into.dedup();
    }
}

impl Clone for TriggerSet {
    fn clone(&self) -> Self {
        TriggerSet {
            defs: self.defs.clone(),
            roles: self.roles.clone(),
            alone: self.alone.clone(),
            vetoes: self.vetoes.clone(),
            gate: self.gate.clone(),
            full: Arc::clone(&self.full),
            compiling: Arc::clone(&self.compiling),
            passed: AtomicUsize::new(self.passed.load(Ordering::Relaxed)),
            lazy_lines: self.lazy_lines,
        }
    }
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

/// Whether `pattern` may have a named capture group (a cheap look at its text:
/// `\(?P<` in a pattern makes it say yes, which only costs a compile).
fn names_groups(pattern: &str) -> bool {
    pattern.contains("(?P<") || pattern.contains("(?<")
}

/// The which-patterns automaton of `hirs`.
fn build_set(hirs: &[Hir]) -> Result<WhichPatterns, String> {
    WhichPatterns::new(hirs, SET_SIZE_LIMIT, SET_DFA_CACHE).map_err(|e| one_line(&e))
}

/// Every pattern and veto of `defs` with its role, in set order, up to the
/// first trigger that is wrong whatever its patterns (returned beside them: its
/// error comes after theirs).
fn jobs(defs: &[TriggerDef]) -> (Vec<(&str, Role)>, Option<Error>) {
    let mut jobs: Vec<(&str, Role)> = Vec::new();
    for (t, def) in defs.iter().enumerate() {
        if defs[..t].iter().any(|d| d.name == def.name) {
            return (jobs, Some(Error::DuplicateName(def.name.clone())));
        } else if def.patterns.is_empty() {
            return (jobs, Some(Error::NoPattern(def.name.clone())));
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
    (jobs, None)
}

/// The whole set of `patterns` (in `roles` order), compiled: the which-patterns
/// automaton and the chunk filter, side by side on two threads after parsing
/// the patterns half on each.
fn build_full(defs: &[TriggerDef], patterns: &[&str], roles: &[Role]) -> Result<Full, Error> {
    let parsed = on_two_threads(patterns, |pattern| parse(pattern));
    let mut hirs = Vec::with_capacity(patterns.len());
    for (hir, &role) in parsed.into_iter().zip(roles) {
        hirs.push(hir.map_err(|message| role.error(defs, message))?);
    }
    let firing = || -> Option<LineFilter> {
        let firing: Vec<Hir> = hirs
            .iter()
            .zip(roles)
            .filter(|(_, role)| matches!(role, Role::Fire { .. }))
            .map(|(hir, _)| scan::trim_ends(&scan::for_buffers(hir)))
            .collect();
        match firing.is_empty() {
            true => None,
            false => LineFilter::new(&firing, SET_SIZE_LIMIT, SET_DFA_CACHE),
        }
    };
    let (set, filter) = side_by_side(|| build_set(&hirs), firing);
    let set = set.map_err(|message| blame(defs, roles, &hirs, message))?;
    Ok(Full { set, filter })
}

/// The text of the pattern or veto `role` of `defs`.
fn pattern(defs: &[TriggerDef], role: Role) -> &str {
    match role {
        Role::Fire { trigger, pattern } => &defs[trigger].patterns[pattern],
        Role::Veto { trigger, index } => &defs[trigger].unless[index],
    }
}

/// What [`crate::literals`] says of `pattern`: from the built-in table, else
/// parsed here (an error on one line when it is not a valid regex, or too big
/// on its own).
fn literals_of(pattern: &str) -> Result<Option<Vec<Vec<u8>>>, String> {
    match literals::builtin().get(&literals::key(pattern)) {
        Some(Known::Required(set)) => Ok(Some(set.clone())),
        Some(Known::Any) => Ok(None),
        None => {
            let hir = parse(pattern)?;
            match too_big(&hir) {
                Some(message) => Err(message),
                None => Ok(literals::required(&hir)),
            }
        }
    }
}

thread_local! {
    /// The candidate patterns of the line being matched (lazy sets), kept to
    /// spare an allocation per line.
    static CANDIDATES: RefCell<(Vec<u8>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl TriggerSet {
    /// Compile `defs`. Fails on the first invalid or empty trigger, naming it.
    ///
    /// Nothing is compiled here: the patterns' literals are gathered for the gate
    /// (the built-in patterns' from a table, a user's parsed and checked here,
    /// so a wrong one is still named at start), and the gate's automaton is built
    /// the first time a line is looked at. An empty log with the built-in packs
    /// costs what it did with a tenth of the patterns.
    pub fn new(defs: Vec<TriggerDef>) -> Result<Self, Error> {
        let (jobs, wrong) = jobs(&defs);
        let known = on_two_threads(&jobs, |(pattern, _)| literals_of(pattern));
        let mut literals = Vec::with_capacity(jobs.len());
        for (lits, &(_, role)) in known.into_iter().zip(&jobs) {
            literals.push(lits.map_err(|message| role.error(&defs, message))?);
        }
        if let Some(wrong) = wrong {
            return Err(wrong);
        }
        let roles: Vec<Role> = jobs.iter().map(|&(_, role)| role).collect();
        let mut vetoes = vec![Vec::new(); defs.len()];
        let (mut owner, mut needles, mut always) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (role, lits)) in roles.iter().zip(literals).enumerate() {
            match (role, lits) {
                (Role::Veto { trigger, .. }, _) => vetoes[*trigger].push(i),
                (Role::Fire { .. }, None) => always.push(i),
                (Role::Fire { .. }, Some(set)) => {
                    owner.extend(std::iter::repeat_n(i, set.len()));
                    needles.extend(set);
                }
            }
        }
        let alone = roles.iter().map(|_| OnceLock::new()).collect();
        Ok(TriggerSet {
            defs,
            roles,
            alone,
            vetoes,
            gate: Some(Gate {
                needles,
                literals: OnceLock::new(),
                owner,
                always,
            }),
            full: Arc::new(OnceLock::new()),
            compiling: Arc::new(AtomicBool::new(false)),
            passed: AtomicUsize::new(0),
            lazy_lines: LAZY_LINES,
        })
    }

    /// Compile the whole set, as [`TriggerSet::new`] did before it had a gate
    /// (and still does, should the gate not build). For tests and benchmarks that
    /// compare the two.
    #[doc(hidden)]
    pub fn new_whole(defs: Vec<TriggerDef>) -> Result<Self, Error> {
        let mut set = TriggerSet::new(defs)?;
        let full = set.build_full()?;
        set.gate = None;
        set.full = Arc::new(OnceLock::from(Some(full)));
        Ok(set)
    }

    /// The same set, compiled whole only after `lines` lines went through the
    /// gate (`usize::MAX`: never, not even for a chunk read in bulk, unless a
    /// pattern does not compile alone). For tests that compare the two ways of
    /// matching.
    #[doc(hidden)]
    pub fn with_lazy_lines(mut self, lines: usize) -> Self {
        self.lazy_lines = lines;
        self
    }

    fn build_full(&self) -> Result<Full, Error> {
        let patterns: Vec<&str> = self.roles.iter().map(|&role| self.pattern(role)).collect();
        build_full(&self.defs, &patterns, &self.roles)
    }

    fn pattern(&self, role: Role) -> &str {
        pattern(&self.defs, role)
    }

    /// The whole set, if compiled (or compiled now: the gate has let enough
    /// lines through).
    fn full(&self) -> Option<&Full> {
        if let Some(full) = self.full.get() {
            return full.as_ref();
        }
        if self.passed.load(Ordering::Relaxed) >= self.lazy_lines
            && !self.compiling.swap(true, Ordering::Relaxed)
        {
            let (defs, roles, full) = (
                self.defs.clone(),
                self.roles.clone(),
                Arc::clone(&self.full),
            );
            let spawned = std::thread::Builder::new()
                .name("trigger-compile".into())
                .spawn(move || {
                    let patterns: Vec<&str> = roles.iter().map(|&r| pattern(&defs, r)).collect();
                    // Whoever else needs it now waits for this one.
                    full.get_or_init(|| build_full(&defs, &patterns, &roles).ok());
                });
            if spawned.is_err() {
                // No thread to be had: compile here, once.
                return self.whole_now();
            }
        }
        None
    }

    /// The whole set, compiled here and now unless it is already (or, on
    /// another thread, being: then this waits for it).
    fn whole_now(&self) -> Option<&Full> {
        self.compiling.store(true, Ordering::Relaxed);
        self.full.get_or_init(|| self.build_full().ok()).as_ref()
    }

    /// Whether the whole set is compiled (for tests of the switch).
    #[doc(hidden)]
    pub fn is_whole(&self) -> bool {
        matches!(self.full.get(), Some(Some(_)))
    }

    /// Pattern `i` (of `roles`) compiled alone.
    fn alone(&self, i: usize) -> Option<&Regex> {
        self.alone[i]
            .get_or_init(|| compile(self.pattern(self.roles[i])))
            .as_ref()
    }

    /// The candidates of `line` by the gate, given to `f` (ascending indices of
    /// firing patterns in `roles`); counts the line as let through when it has any.
    fn with_candidates<R>(&self, gate: &Gate, line: &[u8], f: impl FnOnce(&[usize]) -> R) -> R {
        CANDIDATES.with(|cell| {
            let mut mine;
            let mut borrowed = cell.try_borrow_mut();
            let (lower, into) = match borrowed.as_deref_mut() {
                Ok((lower, into)) => (lower, into),
                Err(_) => {
                    mine = (Vec::new(), Vec::new());
                    (&mut mine.0, &mut mine.1)
                }
            };
            gate.candidates(line, lower, into);
            if !into.is_empty() {
                self.passed.fetch_add(1, Ordering::Relaxed);
            }
            f(into)
        })
    }

    /// Lines the gate has let through, and patterns compiled alone, so far
    /// (for the benchmarks in BENCHMARKS.md).
    #[doc(hidden)]
    pub fn lazy_counts(&self) -> (usize, usize) {
        let compiled = self.alone.iter().filter(|r| r.get().is_some()).count();
        (self.passed.load(Ordering::Relaxed), compiled)
    }

    /// A set with no triggers: matches nothing.
    pub fn empty() -> Self {
        TriggerSet {
            defs: Vec::new(),
            roles: Vec::new(),
            alone: Vec::new(),
            vetoes: Vec::new(),
            gate: None,
            full: Arc::new(OnceLock::new()),
            compiling: Arc::new(AtomicBool::new(false)),
            passed: AtomicUsize::new(0),
            lazy_lines: LAZY_LINES,
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
        ScanCache(None)
    }

    /// The chunk filter and its cache, once the whole set is compiled.
    fn filter<'a>(
        &'a self,
        cache: &'a mut ScanCache,
    ) -> Option<(&'a LineFilter, &'a mut FilterCache)> {
        let filter = self.full()?.filter.as_ref()?;
        Some((filter, cache.0.get_or_insert_with(|| filter.cache())))
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
        if self.defs.is_empty() {
            return; // No firing pattern: nothing fires.
        }
        if chunk.len() >= BULK_CHUNK && self.gate.is_some() && self.lazy_lines != usize::MAX {
            // A reader of whole files: it scans faster with the whole set at once.
            self.whole_now();
        }
        if let Some((filter, cache)) = self.filter(cache) {
            return filter.lines(cache, chunk, out);
        }
        let mut lines = Vec::new();
        scan::all_lines(chunk, &mut lines);
        match &self.gate {
            // As the chunk filter does, a line's `\r` may stand before its end
            // (readers of CRLF logs match the line without it).
            Some(_) => out.extend(lines.into_iter().filter(|r| {
                let line = &chunk[r.clone()];
                self.may_fire(line, cache)
                    || line
                        .strip_suffix(b"\r")
                        .is_some_and(|text| self.may_fire(text, cache))
            })),
            // No filter (too big): every line.
            None => out.extend(lines),
        }
    }

    /// Whether [`TriggerSet::match_line`] may fire on `line` (one line, without
    /// its newline); `false` means it fires nothing. For lines that arrive one at
    /// a time (followed logs, `tripcap wrap`): most fire nothing, and the chunk
    /// filter (or, before the set is compiled whole, the gate and the
    /// candidates' own regexes) says so for less than half of what finding which
    /// patterns match costs (BENCHMARKS.md, "triggers").
    pub fn may_fire(&self, line: &[u8], cache: &mut ScanCache) -> bool {
        if self.defs.is_empty() {
            return false;
        }
        if let Some((filter, cache)) = self.filter(cache) {
            return filter.may_match(cache, line);
        }
        match &self.gate {
            Some(gate) => self.with_candidates(gate, line, |candidates| {
                candidates
                    .iter()
                    .any(|&i| self.alone(i).is_none_or(|re| re.is_match(line)))
            }),
            None => true,
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
        match (self.full(), &self.gate) {
            (Some(full), _) => self.match_whole(full, line, out),
            (None, Some(gate)) => {
                let whole = self.with_candidates(gate, line, |candidates| {
                    self.match_lazily(candidates, line, out)
                });
                // A pattern that does not compile alone: ask the whole set.
                if !whole {
                    out.clear();
                    match self.whole_now() {
                        Some(full) => self.match_whole(full, line, out),
                        None => return false,
                    }
                }
            }
            (None, None) => return false,
        }
        // Fallbacks only where nothing specific fired, and one of them at most.
        let fallback = |m: &LineMatch| self.defs[m.trigger].fallback;
        if out.iter().any(|m| !fallback(m)) {
            out.retain(|m| !fallback(m));
        } else {
            out.truncate(1);
        }
        !out.is_empty()
    }

    /// [`TriggerSet::match_line`]'s matches by the whole set's automaton.
    fn match_whole(&self, full: &Full, line: &[u8], out: &mut Vec<LineMatch>) {
        full.set.with_matches(line, |hits| {
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
                let groups = match names_groups(self.pattern(self.roles[i])) {
                    true => self.alone(i).map(|re| groups(re, line)).unwrap_or_default(),
                    false => Vec::new(),
                };
                out.push(LineMatch {
                    trigger,
                    pattern,
                    groups,
                });
            }
        });
    }

    /// [`TriggerSet::match_line`]'s matches by the candidates' own regexes;
    /// `false` when one of them does not compile alone.
    fn match_lazily(&self, candidates: &[usize], line: &[u8], out: &mut Vec<LineMatch>) -> bool {
        for &i in candidates {
            let Role::Fire { trigger, pattern } = self.roles[i] else {
                continue;
            };
            if out.iter().any(|m| m.trigger == trigger) {
                continue; // one match per trigger: the first pattern wins
            }
            let Some(re) = self.alone(i) else {
                return false;
            };
            let Some(caps) = re.captures(line) else {
                continue;
            };
            let mut vetoed = false;
            for &v in &self.vetoes[trigger] {
                match self.alone(v) {
                    Some(veto) => vetoed |= veto.is_match(line),
                    None => return false,
                }
            }
            if vetoed {
                continue;
            }
            out.push(LineMatch {
                trigger,
                pattern,
                groups: named(re, &caps),
            });
        }
        true
    }
}

/// The named groups of `re`'s first match in `line`.
fn groups(re: &Regex, line: &[u8]) -> Vec<(String, String)> {
    re.captures(line)
        .map(|caps| named(re, &caps))
        .unwrap_or_default()
}

/// The named groups that took part in `caps`, in the pattern's order.
fn named(re: &Regex, caps: &regex::bytes::Captures<'_>) -> Vec<(String, String)> {
    let mut groups = Vec::new();
    for name in re.capture_names().flatten() {
        if let Some(m) = caps.name(name) {
            groups.push((
                name.to_string(),
                String::from_utf8_lossy(m.as_bytes()).into_owned(),
            ));
        }
    }
    groups
}

/// What [`TriggerSet::lines_that_may_fire`] keeps between chunks.
#[derive(Debug, Clone)]
pub struct ScanCache(Option<FilterCache>);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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

    /// After `lazy_lines` lines through the gate the whole set is compiled on
    /// another thread; the answers stay the same before, during and after.
    #[test]
    fn the_whole_set_takes_over_and_answers_alike() {
        let mut wd = TriggerDef::new(
            "wd",
            vec![r"Watchdog caught .*? Timeout\(ms\)=(?P<timeout_ms>\d+)".into()],
        );
        wd.unless = vec!["was aborted".into()];
        let defs = vec![
            wd,
            TriggerDef::new("ib", vec![r"NET/IB.*error (?P<status>\d+)".into()]),
        ];
        let set = TriggerSet::new(defs.clone())
            .expect("valid")
            .with_lazy_lines(3);
        let whole = TriggerSet::new_whole(defs).expect("valid");
        let lines: [&[u8]; 5] = [
            b"[rank1]: Watchdog caught collective operation timeout: Timeout(ms)=600000) ran",
            b"comm was aborted: Watchdog caught x Timeout(ms)=5",
            b"NCCL WARN NET/IB : Got completion from peer with error 12",
            b"NCCL INFO NET/IB : Using mlx5_0",
            b"all fine",
        ];
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let mut rounds = 0;
        while !set.is_whole() || rounds < 2 {
            for line in lines {
                assert_eq!(set.match_line(line, &mut a), whole.match_line(line, &mut b));
                assert_eq!(a, b, "{line:?}");
            }
            rounds += usize::from(set.is_whole());
            assert!(std::time::Instant::now() < deadline, "never compiled whole");
            std::thread::yield_now();
        }
        assert!(whole.is_whole() && !TriggerSet::new(vec![]).expect("empty").is_whole());
        // A chunk read in bulk (`triggers test`) has the whole set compiled at once,
        // and finds the same lines.
        let bulk = TriggerSet::new(whole.defs().to_vec()).expect("valid");
        let mut chunk = Vec::new();
        while chunk.len() < BULK_CHUNK {
            for line in lines {
                chunk.extend_from_slice(line);
                chunk.push(b'\n');
            }
        }
        let (mut found, mut small) = (Vec::new(), Vec::new());
        bulk.lines_that_may_fire(&chunk[..1000], &mut bulk.scan_cache(), &mut small);
        assert!(!bulk.is_whole() && !small.is_empty());
        bulk.lines_that_may_fire(&chunk, &mut bulk.scan_cache(), &mut found);
        assert!(bulk.is_whole());
        let mut every = Vec::new();
        scan::all_lines(&chunk, &mut every);
        let mut fires = |r: &Range<usize>| whole.match_line(&chunk[r.clone()], &mut b);
        let firing = every.iter().filter(|r| fires(r)).count();
        assert!(firing > 1000);
        assert_eq!(found.iter().filter(|r| fires(r)).count(), firing);
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
