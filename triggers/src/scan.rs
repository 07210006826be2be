//! Scanning whole buffers of lines: which lines of a chunk may fire, found in
//! one pass over the chunk instead of one search per line (what ripgrep does).
//!
//! [`crate::TriggerSet::match_line`] decides about one line; on a log where
//! almost nothing fires, calling it for every line costs a search start per
//! line and a lazy DFA that keeps stopping. [`LineFilter`] instead runs one DFA
//! of every firing pattern over a whole chunk of lines and reports only the
//! lines where one of them may match; the caller gives those lines, and only
//! those, to `match_line`, which decides exactly as before. So the filter may
//! let a line through that does not fire, never hold back one that does.
//!
//! Why it holds back no line that fires: each pattern is rewritten from its
//! syntax tree ([`for_buffers`], then [`trim_ends`]) into one that matches in
//! the buffer wherever the original matches in one line's text:
//! - no pattern can match across a line: `\n` is taken out of every class and
//!   a literal holding one matches nothing (a line given to `match_line` has
//!   no `\n`, so no match there used one);
//! - `\A` and `^` become "at a line start", `\z` and `$` "before `\r` or `\n`
//!   or at the end": a line's text starts after a `\n` and ends before its
//!   `\r\n` or `\n` (the `\r` is cut off before `match_line`);
//! - word boundaries see the `\r` or `\n` next to a line as a non-word byte, as
//!   they see the end of a line's text;
//! - leading and trailing parts that hold no literal are dropped (a part of a
//!   match is a match of the part);
//! - `unless` vetoes are left out: they only ever stop a trigger.
//!
//! The rewritten patterns then become one ([`merge_prefixes`]): a trie of their
//! leading literals, alternations opened up, so that the lazy DFA builds each
//! state from the few distinct next bytes instead of from every pattern's start
//! (a log of new line shapes is mostly state building: 100 MB of healthy lines
//! took 0.53 s with 515 separate patterns, 0.30 s merged).
//!
//! The rewritten patterns match a little more (a `$` before a `\r` in the
//! middle of a line, a `\w+` dropped in front of `: Couldn't`), which only
//! costs a `match_line` that says no. When the lazy DFA cannot decide (a user
//! pattern with a Unicode `\b` meets a non-ASCII byte) the line is let
//! through; when it gives up (its cache filled up again and again) the rest of
//! the chunk is.
//!
//! The DFA is walked over [`STREAMS`] parts of the chunk at once: a lazy DFA
//! step is one load that depends on the one before, so a single walk mostly
//! waits on memory; four independent walks interleaved keep several loads in
//! flight (measured on the built-in packs over 100 MB of healthy lines, DFA
//! states already built: 0.30 s for one walk, 0.12 s for four).

use std::io::{self, Read};
use std::ops::Range;

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::{Input, MatchKind};
use regex_syntax::hir::{
    Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look,
    Repetition,
};

/// Parts of a chunk walked at once (see the module doc).
pub const STREAMS: usize = 4;

/// The form of `hir` used to scan whole buffers: it matches nothing that spans
/// a `\n`, and matches in a buffer of lines wherever the original matches in
/// one line's text (see the module doc). Capture groups are dropped.
pub fn for_buffers(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) if lit.0.contains(&b'\n') => Hir::fail(),
        HirKind::Literal(_) => hir.clone(),
        HirKind::Class(Class::Unicode(c)) => {
            let mut c = c.clone();
            c.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(c))
        }
        HirKind::Class(Class::Bytes(c)) => {
            let mut c = c.clone();
            c.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(c))
        }
        HirKind::Look(look) => Hir::look(match look {
            Look::Start => Look::StartLF,
            Look::End | Look::EndLF => Look::EndCRLF,
            other => *other,
        }),
        HirKind::Repetition(rep) => Hir::repetition(Repetition {
            sub: Box::new(for_buffers(&rep.sub)),
            ..rep.clone()
        }),
        HirKind::Capture(cap) => for_buffers(&cap.sub),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(for_buffers).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(for_buffers).collect()),
    }
}

/// The middle of `hir` from its first part that must match a literal to its
/// last (in each branch of an alternation): it matches wherever `hir` matches,
/// and more. Leading and trailing classes and repetitions (`\w+` before an
/// `hca`, `[^\r\n]+` after `event: `) keep many partial matches alive over
/// the whole chunk for no gain in telling lines apart.
pub fn trim_ends(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Capture(cap) => trim_ends(&cap.sub),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(trim_ends).collect()),
        HirKind::Concat(subs) => {
            match (
                subs.iter().position(needs_literal),
                subs.iter().rposition(needs_literal),
            ) {
                (Some(first), Some(last)) => Hir::concat(subs[first..=last].to_vec()),
                _ => hir.clone(),
            }
        }
        _ => hir.clone(),
    }
}

/// One pattern that matches in a line wherever one of `patterns` does, their
/// leading literal bytes and classes shared as a trie: `NCCL WARN Call to
/// (?:ibv_…|…)` once instead of once per pattern. Which pattern matched, and
/// where a match ends, are lost; [`LineFilter`] needs neither. A pattern that
/// is a prefix of another ends the branch (a line where the longer one matches
/// holds a match of the shorter).
///
/// Why: a lazy DFA builds each new state from the NFA states of every pattern
/// that can start at the next byte, so building states cost in proportion to
/// the number of patterns; after the trie, to the number of distinct first
/// bytes and classes.
pub fn merge_prefixes(patterns: &[Hir]) -> Hir {
    let mut trie = Trie::default();
    let mut budget = EXPANSIONS;
    for pattern in patterns {
        trie.insert(ROOT, &[pattern], &mut budget);
    }
    trie.take_hir(ROOT, Vec::new(), 0)
}

/// Most branches [`merge_prefixes`] inserts for alternations inside patterns
/// (`a(?:b|c)d` as `abd` and `acd`): a bound on the product of alternations
/// one after another.
const EXPANSIONS: usize = 20_000;

/// Deepest nesting of shared prefixes [`merge_prefixes`] builds; below it each
/// pattern's rest is one branch of a flat alternation. Compiling a pattern
/// recurses once per level, and user patterns (`x`, `ax`, `aax`, …) could
/// otherwise nest as deep as there are patterns.
const MAX_SHARED_DEPTH: usize = 64;

/// [`merge_prefixes`]'s trie: a node per literal byte or class of every
/// pattern's shared prefix, all in one arena (the built-in packs make about
/// 47,000 nodes: 1.5 MB here, 19 MB as a tree of nodes each with its own
/// vectors, whose allocations were a sixth of starting up).
struct Trie {
    nodes: Vec<Node>,
    /// The classes on edges, each once: [`Atom::Class`] indexes this.
    classes: Vec<Hir>,
    /// Patterns whose next part is not a literal or class, from that part on,
    /// each listed from its node ([`Node::rests`]).
    rests: Vec<(Hir, u32)>,
}

/// The root of a [`Trie`].
const ROOT: u32 = 0;

/// No node or rest (the end of a list).
const NONE: u32 = u32::MAX;

/// A node of [`Trie`]: the patterns that go on from here.
#[derive(Clone, Copy)]
struct Node {
    /// The step that leads here from the parent (the root's is unused).
    atom: Atom,
    /// A pattern ends here: this node matches, whatever follows.
    ends: bool,
    /// Children, in the order they were made, as a list through `next`.
    first: u32,
    last: u32,
    /// The next sibling.
    next: u32,
    /// Patterns whose next part is not a literal or class, as a list of
    /// [`Trie::rests`] through their second field.
    rests: (u32, u32),
}

impl Node {
    fn new(atom: Atom) -> Node {
        Node {
            atom,
            ends: false,
            first: NONE,
            last: NONE,
            next: NONE,
            rests: (NONE, NONE),
        }
    }
}

/// One step of a trie path: a literal byte, or a class (`[Nn]` of a
/// case-insensitive literal, `\d`) in [`Trie::classes`].
#[derive(Clone, Copy, PartialEq)]
enum Atom {
    Byte(u8),
    Class(u32),
}

impl Default for Trie {
    fn default() -> Self {
        Trie {
            nodes: vec![Node::new(Atom::Byte(0))],
            classes: Vec::new(),
            rests: Vec::new(),
        }
    }
}

impl Trie {
    /// Add, under `node`, the pattern that is `parts` one after another, taking
    /// each branch of an alternation in it as a pattern of its own while
    /// `budget` lasts.
    fn insert<'a>(&mut self, mut node: u32, parts: &[&'a Hir], budget: &mut usize) {
        for (i, &part) in parts.iter().enumerate() {
            // A part opened up here: its own parts, then the rest.
            let then = |first: &'a [Hir]| -> Vec<&'a Hir> {
                first.iter().chain(parts[i + 1..].iter().copied()).collect()
            };
            match part.kind() {
                HirKind::Literal(lit) => {
                    for &b in lit.0.iter() {
                        node = self.child(node, Atom::Byte(b));
                    }
                }
                HirKind::Class(_) => {
                    let class = self.class(part);
                    node = self.child(node, class);
                }
                HirKind::Empty => {}
                HirKind::Concat(subs) => {
                    return self.insert(node, &then(subs), budget);
                }
                HirKind::Alternation(branches) if branches.len() <= *budget => {
                    *budget -= branches.len();
                    for branch in branches {
                        let branch = std::slice::from_ref(branch);
                        self.insert(node, &then(branch), budget);
                    }
                    return;
                }
                _ => {
                    let rest = parts[i..].iter().map(|&h| h.clone()).collect();
                    let at = self.rests.len() as u32;
                    self.rests.push((Hir::concat(rest), NONE));
                    let list = &mut self.nodes[node as usize].rests;
                    match list.1 {
                        NONE => list.0 = at,
                        last => self.rests[last as usize].1 = at,
                    }
                    list.1 = at;
                    return;
                }
            }
        }
        self.nodes[node as usize].ends = true;
    }

    /// The step `class` (each distinct class is kept once).
    fn class(&mut self, class: &Hir) -> Atom {
        let at = match self.classes.iter().position(|c| c == class) {
            Some(at) => at,
            None => {
                self.classes.push(class.clone());
                self.classes.len() - 1
            }
        };
        Atom::Class(at as u32)
    }

    /// The child of `node` after `atom`, made if new.
    fn child(&mut self, node: u32, atom: Atom) -> u32 {
        let mut at = self.nodes[node as usize].first;
        while at != NONE {
            if self.nodes[at as usize].atom == atom {
                return at;
            }
            at = self.nodes[at as usize].next;
        }
        let new = self.nodes.len() as u32;
        self.nodes.push(Node::new(atom));
        match self.nodes[node as usize].last {
            NONE => self.nodes[node as usize].first = new,
            last => self.nodes[last as usize].next = new,
        }
        self.nodes[node as usize].last = new;
        new
    }

    /// The patterns listed at `node` ([`Node::rests`]), taken out.
    fn take_rests(&mut self, node: u32) -> Vec<Hir> {
        let mut out = Vec::new();
        let mut at = self.nodes[node as usize].rests.0;
        while at != NONE {
            let (rest, next) = &mut self.rests[at as usize];
            out.push(std::mem::replace(rest, Hir::empty()));
            at = *next;
        }
        out
    }

    /// The children of `node`, in order.
    fn children(&self, node: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.nodes[node as usize].first;
        while at != NONE {
            out.push(at);
            at = self.nodes[at as usize].next;
        }
        out
    }

    /// `path` (the atoms that lead to `node`, not shared with a sibling) then
    /// `node`, as one pattern; `depth` branchings above it.
    fn take_hir(&mut self, mut node: u32, mut path: Vec<Atom>, depth: usize) -> Hir {
        loop {
            let n = self.nodes[node as usize];
            if n.ends || n.rests.0 != NONE || n.first == NONE || n.first != n.last {
                break;
            }
            node = n.first;
            path.push(self.nodes[node as usize].atom);
        }
        let tail = if self.nodes[node as usize].ends {
            Hir::empty()
        } else if depth >= MAX_SHARED_DEPTH {
            Hir::alternation(self.take_paths(node))
        } else {
            let mut alternatives = self.take_rests(node);
            for child in self.children(node) {
                let atom = self.nodes[child as usize].atom;
                alternatives.push(self.take_hir(child, vec![atom], depth + 1));
            }
            Hir::alternation(alternatives)
        };
        self.concat_path(path, tail)
    }

    /// Every pattern under `node`, whole from there, none of it shared
    /// (walked with a stack of its own: the trie may be deep).
    fn take_paths(&mut self, node: u32) -> Vec<Hir> {
        let mut out = Vec::new();
        let mut stack = vec![(node, Vec::new())];
        while let Some((node, path)) = stack.pop() {
            if self.nodes[node as usize].ends {
                out.push(self.concat_path(path, Hir::empty()));
                continue;
            }
            for rest in self.take_rests(node) {
                out.push(self.concat_path(path.clone(), rest));
            }
            for child in self.children(node) {
                let mut longer = path.clone();
                longer.push(self.nodes[child as usize].atom);
                stack.push((child, longer));
            }
        }
        out
    }

    /// `path`'s atoms, then `tail`, as one pattern.
    fn concat_path(&self, path: Vec<Atom>, tail: Hir) -> Hir {
        // Runs of bytes as one literal each.
        let mut parts = Vec::new();
        let mut bytes = Vec::new();
        for atom in path {
            match atom {
                Atom::Byte(b) => bytes.push(b),
                Atom::Class(class) => {
                    if !bytes.is_empty() {
                        parts.push(Hir::literal(std::mem::take(&mut bytes)));
                    }
                    parts.push(self.classes[class as usize].clone());
                }
            }
        }
        if !bytes.is_empty() {
            parts.push(Hir::literal(bytes));
        }
        parts.push(tail);
        Hir::concat(parts)
    }
}

/// Whether every match of `hir` holds a literal byte string.
fn needs_literal(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(lit) => !lit.0.is_empty(),
        HirKind::Repetition(rep) => rep.min > 0 && needs_literal(&rep.sub),
        HirKind::Capture(cap) => needs_literal(&cap.sub),
        HirKind::Concat(subs) => subs.iter().any(needs_literal),
        HirKind::Alternation(subs) => subs.iter().all(needs_literal),
        _ => false,
    }
}

/// The range of the line holding byte `at` of `buf` (or ending at `at` when
/// `buf[at]` is its `\n`, or the last line when `at == buf.len()`), without its `\n`.
pub fn line_at(buf: &[u8], at: usize) -> Range<usize> {
    let start = buf[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = buf[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(buf.len(), |i| at + i);
    start..end
}

/// Every line of `buf` (a `\n` at the very end does not start another one),
/// without its `\n`, pushed onto `out`.
pub fn all_lines(buf: &[u8], out: &mut Vec<Range<usize>>) {
    let mut start = 0;
    while start < buf.len() {
        let line = line_at(buf, start);
        start = line.end + 1;
        out.push(line);
    }
}

/// `buf` cut into `N` consecutive parts of about the same length, each starting
/// at the start of a line (some may be empty; together they cover `buf`).
pub fn split_at_lines<const N: usize>(buf: &[u8]) -> [Range<usize>; N] {
    let mut cuts = [buf.len(); N];
    cuts[0] = 0;
    for (i, cut) in cuts.iter_mut().enumerate().skip(1) {
        let guess = buf.len() / N * i;
        *cut = buf[guess..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |p| guess + p + 1);
    }
    std::array::from_fn(|i| {
        let start = cuts[i];
        let end = cuts.get(i + 1).copied().unwrap_or(buf.len());
        start..end.max(start)
    })
}

/// Number of lines in `chunk`: its `\n`s, and one more when it does not end
/// with one (the last line of an input without a final newline).
pub fn count_lines(chunk: &[u8]) -> usize {
    // In blocks whose count fits a byte: the compiler turns this into vector
    // compares and adds (a plain `filter().count()` took 13 % of a healthy scan).
    let newlines: usize = chunk
        .chunks(255)
        .map(|block| {
            let n = block.iter().fold(0u8, |n, &b| n + u8::from(b == b'\n'));
            usize::from(n)
        })
        .sum();
    newlines + usize::from(chunk.last().is_some_and(|&b| b != b'\n'))
}

/// Reads an input in chunks of whole lines: each chunk ends after a `\n`,
/// except the last one of an input that does not end with one. A line longer
/// than the buffer grows it.
#[derive(Debug)]
pub struct Chunks<R> {
    reader: R,
    buf: Vec<u8>,
    /// Bytes of `buf` read and not handed out yet start at `taken`, end at `filled`.
    filled: usize,
    taken: usize,
    eof: bool,
}

impl<R: Read> Chunks<R> {
    /// Chunks of `reader` of about `size` bytes (at least 1).
    pub fn new(reader: R, size: usize) -> Self {
        Chunks {
            reader,
            buf: vec![0; size.max(1)],
            filled: 0,
            taken: 0,
            eof: false,
        }
    }

    /// The next chunk, `None` at the end of the input.
    pub fn next_chunk(&mut self) -> io::Result<Option<&[u8]>> {
        self.buf.copy_within(self.taken..self.filled, 0);
        self.filled -= self.taken;
        self.taken = 0;
        loop {
            while !self.eof && self.filled < self.buf.len() {
                match self.reader.read(&mut self.buf[self.filled..]) {
                    Ok(0) => self.eof = true,
                    Ok(n) => self.filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            let data = &self.buf[..self.filled];
            self.taken = match data.iter().rposition(|&b| b == b'\n') {
                Some(last) => last + 1,
                None if self.eof => self.filled,
                None => {
                    // One line fills the buffer: make room for the rest of it.
                    self.buf.resize(self.buf.len() * 2, 0);
                    continue;
                }
            };
            if self.eof && self.taken < self.filled {
                self.taken = self.filled; // the last line, without its newline
            }
            return Ok((self.taken > 0).then(|| &self.buf[..self.taken]));
        }
    }
}

/// The NFA compiler for patterns over lines of bytes (shared by this filter, the
/// which-patterns automaton, [`crate::which`], and the check that names a
/// pattern too big): no capture groups, since what a pattern captured is asked
/// of its own regex; a byte that is not UTF-8 is a byte like any other; at most
/// `size_limit` bytes of automaton.
pub fn nfa_compiler(size_limit: usize) -> thompson::Compiler {
    let mut compiler = thompson::Compiler::new();
    compiler.configure(
        thompson::Config::new()
            .utf8(false)
            .which_captures(thompson::WhichCaptures::None)
            .nfa_size_limit(Some(size_limit)),
    );
    compiler
}

/// One DFA of patterns made with [`for_buffers`]: finds the lines of a buffer
/// on which one of them matches.
#[derive(Debug, Clone)]
pub struct LineFilter {
    dfa: DFA,
}

/// What [`LineFilter::lines`] keeps between calls: the lazy DFA's states, and
/// the lines each walk found.
#[derive(Debug, Clone)]
pub struct FilterCache {
    dfa: Cache,
    found: [Vec<Range<usize>>; STREAMS],
    /// What [`LineFilter::may_match`] found.
    one: Vec<Range<usize>>,
}

/// One of the [`STREAMS`] walks over a part of the buffer.
#[derive(Debug, Clone, Copy)]
struct Walk {
    /// Next byte to walk.
    at: usize,
    /// End of the part.
    end: usize,
    /// DFA state after the bytes before `at` (valid only while not `done`).
    state: LazyStateID,
    /// Walked to the end (and the end of the buffer looked at, when the part ends there).
    done: bool,
}

/// The lazy DFA gave up (its cache had to be cleared too often): the lines
/// not walked yet are all candidates.
struct GaveUp;

impl LineFilter {
    /// A filter for `patterns` (already [`for_buffers`]), made one by
    /// [`merge_prefixes`]: `None` when their automaton is bigger than `size_limit` bytes. The lazy DFA's cache grows
    /// up to `cache_capacity` bytes.
    pub fn new(patterns: &[Hir], size_limit: usize, cache_capacity: usize) -> Option<LineFilter> {
        let nfa = nfa_compiler(size_limit)
            .build_from_hir(&merge_prefixes(patterns))
            .ok()?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    // Start states untagged: the walks restart at every line that matched.
                    .specialize_start_states(false)
                    // A user pattern with a Unicode `\b`: a non-ASCII byte stops the
                    // DFA ("quit"), and the line holding it is a candidate.
                    .unicode_word_boundary(true)
                    .cache_capacity(cache_capacity)
                    // Give up rather than thrash when the cache keeps filling up
                    // (as regex's own searches do).
                    .minimum_cache_clear_count(Some(3))
                    .minimum_bytes_per_state(Some(10)),
            )
            .build_from_nfa(nfa)
            .ok()?;
        Some(LineFilter { dfa })
    }

    /// A cache for [`LineFilter::lines`] (one per thread that scans).
    pub fn cache(&self) -> FilterCache {
        FilterCache {
            dfa: self.dfa.create_cache(),
            found: Default::default(),
            one: Vec::new(),
        }
    }

    /// Push onto `out` the range (without `\n`) of every line of `buf` on which
    /// a pattern may match, in order. `buf` starts at the start of a line and
    /// ends at the end of one (after its `\n`, or at the end of the input).
    /// A line not pushed matches no pattern.
    pub fn lines(&self, cache: &mut FilterCache, buf: &[u8], out: &mut Vec<Range<usize>>) {
        let FilterCache {
            dfa: dfa_cache,
            found,
            ..
        } = cache;
        found.iter_mut().for_each(Vec::clear);
        let mut walks = split_at_lines::<STREAMS>(buf).map(|part| Walk {
            at: part.start,
            end: part.end,
            state: LazyStateID::default(),
            done: part.is_empty(),
        });
        let walked = self.walk_all(dfa_cache, buf, &mut walks, found);
        // What the DFA weighs against the states it built before giving up.
        dfa_cache.search_start(0);
        dfa_cache.search_finish(buf.len());
        if walked.is_err() {
            for (w, lines) in walks.iter().zip(found.iter_mut()) {
                if !w.done {
                    let from = line_at(buf, w.at).start;
                    let before = lines.len();
                    all_lines(&buf[from..w.end], lines);
                    lines[before..]
                        .iter_mut()
                        .for_each(|l| *l = l.start + from..l.end + from);
                }
            }
        }
        for lines in found.iter() {
            out.extend(lines.iter().cloned());
        }
    }

    /// Whether a pattern may match in `line` (one line, without its newline):
    /// [`LineFilter::lines`] of a buffer of that one line.
    pub fn may_match(&self, cache: &mut FilterCache, line: &[u8]) -> bool {
        let mut found = std::mem::take(&mut cache.one);
        found.clear();
        self.lines(cache, line, &mut found);
        let any = !found.is_empty();
        cache.one = found;
        any
    }

    /// Walk every part to its end: all together while all have bytes left, then
    /// each alone.
    fn walk_all(
        &self,
        cache: &mut Cache,
        buf: &[u8],
        walks: &mut [Walk; STREAMS],
        found: &mut [Vec<Range<usize>>; STREAMS],
    ) -> Result<(), GaveUp> {
        self.restart_all(cache, buf, walks)?;
        // Together: the fast loop steps every walk by one byte, as long as none
        // reaches a state that needs a closer look (not built yet, a match).
        while walks.iter().all(|w| !w.done) {
            let steps = walks.iter().map(|w| w.end - w.at).min().unwrap_or(0);
            let mut i = 0;
            while i < steps {
                let next: [LazyStateID; STREAMS] = std::array::from_fn(|j| {
                    let w = &walks[j];
                    self.dfa.next_state_untagged(cache, w.state, buf[w.at + i])
                });
                if next.iter().any(|s| s.is_tagged()) {
                    break;
                }
                for (w, s) in walks.iter_mut().zip(next) {
                    w.state = s;
                }
                i += 1;
            }
            for w in walks.iter_mut() {
                w.at += i;
            }
            for (j, found) in found.iter_mut().enumerate() {
                self.step(cache, buf, walks, j, found)?;
            }
        }
        // Alone: the same fast loop for one walk.
        for (j, found) in found.iter_mut().enumerate() {
            while !walks[j].done {
                let w = &mut walks[j];
                while w.at < w.end {
                    let next = self.dfa.next_state_untagged(cache, w.state, buf[w.at]);
                    if next.is_tagged() {
                        break;
                    }
                    w.state = next;
                    w.at += 1;
                }
                self.step(cache, buf, walks, j, found)?;
            }
        }
        Ok(())
    }

    /// One careful step of walk `j`: build the next state if needed, note a
    /// matching line and go on after it, or finish at the end of the part.
    fn step(
        &self,
        cache: &mut Cache,
        buf: &[u8],
        walks: &mut [Walk; STREAMS],
        j: usize,
        found: &mut Vec<Range<usize>>,
    ) -> Result<(), GaveUp> {
        let clears = cache.clear_count();
        let w = walks[j];
        if w.done {
            return Ok(());
        }
        let matched = if w.at == w.end {
            // At the end of the input, the last line may end in a match (`$`, or
            // one that ends on its last byte): the DFA says so only now.
            let at_input_end = w.end > 0 && buf[w.end - 1] != b'\n';
            let matched = at_input_end && {
                let eoi = self
                    .dfa
                    .next_eoi_state(cache, w.state)
                    .map_err(|_| GaveUp)?;
                eoi.is_match()
            };
            walks[j].done = true;
            matched
        } else {
            let next = self
                .dfa
                .next_state(cache, w.state, buf[w.at])
                .map_err(|_| GaveUp)?;
            if cache.clear_count() != clears {
                // Every other walk's state was in the cache that was cleared.
                return self.restart_all(cache, buf, walks);
            }
            if next.is_dead() {
                walks[j].done = true;
            }
            // A match (delayed by one byte: it ended before `at`, in this
            // line), or a byte the DFA cannot decide on.
            let stop = next.is_match() || next.is_quit();
            walks[j].state = next;
            walks[j].at += usize::from(!stop);
            stop
        };
        if matched {
            let line = line_at(buf, w.at);
            let w = &mut walks[j];
            w.at = (line.end + 1).min(w.end);
            w.done = line.end >= w.end;
            found.push(line);
            if !w.done {
                return self.start(cache, buf, walks, j);
            }
        }
        if walks[j].at == walks[j].end && !walks[j].done {
            return self.step(cache, buf, walks, j, found);
        }
        Ok(())
    }

    /// Walk `j` starts at `at` (the start of a line) again.
    fn start(
        &self,
        cache: &mut Cache,
        buf: &[u8],
        walks: &mut [Walk; STREAMS],
        j: usize,
    ) -> Result<(), GaveUp> {
        let clears = cache.clear_count();
        let w = &mut walks[j];
        w.state = self
            .dfa
            .start_state_forward(cache, &Input::new(buf).span(w.at..w.end))
            .map_err(|_| GaveUp)?;
        if cache.clear_count() != clears {
            return self.restart_all(cache, buf, walks);
        }
        Ok(())
    }

    /// Start every walk that is not done again at the start of its line: after
    /// the cache was cleared (their states were in it), and at first.
    fn restart_all(
        &self,
        cache: &mut Cache,
        buf: &[u8],
        walks: &mut [Walk; STREAMS],
    ) -> Result<(), GaveUp> {
        loop {
            let clears = cache.clear_count();
            for w in walks.iter_mut().filter(|w| !w.done) {
                w.at = line_at(buf, w.at).start;
                w.state = self
                    .dfa
                    .start_state_forward(cache, &Input::new(buf).span(w.at..w.end))
                    .map_err(|_| GaveUp)?;
            }
            if cache.clear_count() == clears {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn hir(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .expect("valid pattern")
    }

    fn filter(patterns: &[&str], cache_capacity: usize) -> Option<LineFilter> {
        let hirs: Vec<Hir> = patterns
            .iter()
            .map(|p| trim_ends(&for_buffers(&hir(p))))
            .collect();
        LineFilter::new(&hirs, 1 << 20, cache_capacity)
    }

    /// The lines of `buf` the filter gives, as text.
    fn found(filter: &LineFilter, cache: &mut FilterCache, buf: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        filter.lines(cache, buf, &mut out);
        out.iter()
            .map(|r| String::from_utf8_lossy(&buf[r.clone()]).into_owned())
            .collect()
    }

    /// The lines of `buf` whose text (without `\n` and one `\r`, as `match_line`
    /// gets it) one of `patterns` matches.
    fn matching(patterns: &[&str], buf: &[u8]) -> Vec<String> {
        let res: Vec<regex::bytes::Regex> = patterns
            .iter()
            .map(|p| regex::bytes::Regex::new(p).expect("valid"))
            .collect();
        let mut lines = Vec::new();
        all_lines(buf, &mut lines);
        lines
            .into_iter()
            .map(|r| &buf[r])
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| res.iter().any(|re| re.is_match(l)))
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    /// Every line that matches is found (with its `\r`, if any, still on).
    fn assert_finds_every_match(patterns: &[&str], filter: &LineFilter, buf: &[u8]) {
        let mut cache = filter.cache();
        let found = found(filter, &mut cache, buf);
        for line in matching(patterns, buf) {
            assert!(
                found
                    .iter()
                    .any(|f| f.strip_suffix('\r').unwrap_or(f) == line),
                "{patterns:?}: {line:?} matches but was not found in {found:?}"
            );
        }
    }

    #[test]
    fn lines_of_a_buffer() {
        let buf = b"ab\n\ncd\r\nef";
        assert_eq!(line_at(buf, 0), 0..2);
        assert_eq!(line_at(buf, 2), 0..2, "its newline");
        assert_eq!(line_at(buf, 3), 3..3, "an empty line");
        assert_eq!(line_at(buf, 5), 4..7);
        assert_eq!(
            line_at(buf, 10),
            8..10,
            "the end of a last line without newline"
        );
        let mut lines = Vec::new();
        all_lines(buf, &mut lines);
        assert_eq!(lines, vec![0..2, 3..3, 4..7, 8..10]);
        assert_eq!(count_lines(buf), 4);
        assert_eq!(count_lines(b"a\nb\n"), 2);
        assert_eq!(count_lines(b""), 0);
        let long = b"x\n".repeat(1000);
        assert_eq!(count_lines(&long), 1000);
        lines.clear();
        all_lines(b"a\n", &mut lines);
        assert_eq!(lines, vec![0..1], "a final newline starts no line");
    }

    #[test]
    fn parts_start_at_lines_and_cover_the_buffer() {
        for buf in [
            &b""[..],
            b"one line without newline",
            b"a\nb\n",
            b"aaaaaaaaaaaaaaaaaaaaaaaa\nb\nc\n",
            b"a\nbb\nccc\ndddd\neeeee\nffffff\nggggggg\n",
        ] {
            let parts = split_at_lines::<STREAMS>(buf);
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[STREAMS - 1].end, buf.len());
            for w in parts.windows(2) {
                assert_eq!(w[0].end, w[1].start, "{parts:?}");
            }
            for p in parts.iter().filter(|p| !p.is_empty()) {
                assert!(p.start == 0 || buf[p.start - 1] == b'\n', "{parts:?}");
            }
        }
    }

    /// A reader that hands out at most `step` bytes a read.
    struct Dribble<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn chunks_hold_whole_lines_however_the_input_is_read() {
        let long = "y".repeat(100);
        let inputs = [
            String::new(),
            "a\n".into(),
            "a\nbc\r\n\nlast".into(),
            format!("x\n{long}\nz\n"),
            format!("{long}{long}"),
        ];
        for input in &inputs {
            for (step, size) in [(1, 1), (3, 4), (7, 16), (1000, 8), (1000, 4096)] {
                let mut chunks = Chunks::new(
                    Dribble {
                        data: input.as_bytes(),
                        step,
                    },
                    size,
                );
                let mut all = Vec::new();
                let mut n = 0;
                while let Some(chunk) = chunks.next_chunk().expect("reads") {
                    assert!(!chunk.is_empty());
                    all.extend_from_slice(chunk);
                    n += 1;
                    let whole = chunk.ends_with(b"\n") || all.len() == input.len();
                    assert!(whole, "{input:?} step {step} size {size}: chunk {chunk:?}");
                }
                assert_eq!(all, input.as_bytes(), "step {step} size {size}");
                assert!(n <= input.len(), "{n} chunks");
            }
        }
    }

    #[test]
    fn anchors_classes_and_line_ends_find_what_each_line_matches() {
        let cases: &[&[&str]] = &[
            &[r"^start", r"end$", r"\Awhole\z"],
            &[r"(?-u)tail\s*$", r"(?m)^m$"],
            &[r"(?R)^crlf$"],
            &[r"(?-u)\bword\b", r"(?-u)\Bmid\B"],
            &[r"(?s)a.b", r"[^x]+q", r"(?-u)\S+@\S+"],
            &[r"new\nline", r"(?-u)x\s+y"],
            &[
                r"(?-u)(?P<hca>[\w.-]+): Couldn't enable",
                r"status=(?P<s>\d+)(?:.*?hca (?P<h>\w+))?",
            ],
            &[r"", r"z*"],
        ];
        let buf: &[u8] = b"start here\nat the end\r\nwhole\nwhole\r\nnot whole\n\
            tail  \r\ntail\t\nm\r\nm\n crlf\r\ncrlf\r\n\ra word.\nwordy\namidst\n\
            a\nb\na-b\nxq\nq\nme@host\nnew\nline\nx\ny\nx  y\r\n\
            mlx5_0: Couldn't enable GPUDirect\nstatus=12 more hca mlx5_1\n\
            \n\r\nend";
        for patterns in cases {
            let filter = filter(patterns, 1 << 20).expect("builds");
            assert_finds_every_match(patterns, &filter, buf);
            // And a line never matched across a newline.
            let mut cache = filter.cache();
            let found = found(&filter, &mut cache, buf);
            for line in ["a", "b", "new", "line", "x", "y"] {
                if patterns
                    .iter()
                    .any(|p| p.contains("a.b") || p.contains("\\n") || p.contains("x\\s"))
                {
                    assert!(
                        !found.contains(&line.to_string()),
                        "{patterns:?} found {line:?}"
                    );
                }
            }
        }
        // Exactly the matching lines, where nothing is loosened (no `\r`, no
        // anchors, no ends trimmed).
        let filter = filter(&[r"wor(?:d|ld)", r"(?s)a.b"], 1 << 20).expect("builds");
        let mut cache = filter.cache();
        assert_eq!(
            found(&filter, &mut cache, b"a word.\nwore\na\nb\na-b\nworld"),
            vec!["a word.", "a-b", "world"]
        );
    }

    #[test]
    fn a_unicode_word_boundary_makes_non_ascii_lines_candidates() {
        let patterns = [r"\bété\b", r"plain"];
        let filter = filter(&patterns, 1 << 20).expect("builds");
        let buf = "un été chaud\nl'étéx\nascii only\nplain\n".as_bytes();
        assert_finds_every_match(&patterns, &filter, buf);
        let mut cache = filter.cache();
        let found = found(&filter, &mut cache, buf);
        assert!(!found.contains(&"ascii only".to_string()), "{found:?}");
    }

    /// xorshift64: lines that hit parts of the patterns often (here and in
    /// [`crate::which`]'s tests).
    pub(crate) fn random_lines(seed: u64, n: usize) -> Vec<u8> {
        let words: &[&[u8]] = &[
            b"NET/IB",
            b" : ",
            b"Got completion",
            b"with error",
            b"12",
            b"status=",
            b"vendor err",
            b"mlx5_0",
            b"\t",
            b" ",
            b"\r",
            b"x",
            b"Watchdog",
            b"caught",
            b"timeout",
            b"ran for",
            b"ms",
            b"[rank3]:",
            b"\xff\xfe",
            b"$",
            b"\n",
            b"\x1b[31m",
            b"\xc3\xa9",
            b"ran",
            b"from peer 10.0.0.1<4>",
        ];
        let mut s = seed;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut buf = Vec::new();
        for _ in 0..n {
            for _ in 0..next() % 12 {
                buf.extend_from_slice(words[(next() % words.len() as u64) as usize]);
            }
            buf.push(b'\n');
        }
        buf
    }

    const PATTERNS: &[&str] = &[
        r"(?-u)NET/IB\w* ?: ?Got completion (?:from peer \S+ )?with (?:status=|error )(?P<status>\d+)",
        r"(?-u)Watchdog caught.*?ran for (?P<ms>\d+) ?ms",
        r"(?-u)\[rank\d+\]:\s*timeout\s*$",
        r"(?-u)vendor err \d+\b",
        r"(?-u)^x+$",
    ];

    #[test]
    fn every_matching_line_is_found_in_random_buffers() {
        let filter = filter(PATTERNS, 1 << 20).expect("builds");
        for seed in 1..40 {
            let buf = random_lines(seed * 0x9e37_79b9, 300);
            assert_finds_every_match(PATTERNS, &filter, &buf);
            // Without its last newline too.
            assert_finds_every_match(PATTERNS, &filter, &buf[..buf.len() - 1]);
        }
    }

    #[test]
    fn a_small_cache_is_cleared_or_given_up_and_every_line_is_still_found() {
        let hirs: Vec<Hir> = PATTERNS.iter().map(|p| for_buffers(&hir(p))).collect();
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().which_captures(thompson::WhichCaptures::None))
            .build_many_from_hir(&hirs)
            .expect("builds");
        let least = DFA::config()
            .get_minimum_cache_capacity(&nfa)
            .expect("a minimum");
        let mut cleared = false;
        for capacity in [least, least + 4096, least * 2] {
            let filter = LineFilter::new(&hirs, 1 << 20, capacity).expect("builds");
            let mut cache = filter.cache();
            for seed in 1..20 {
                let buf = random_lines(seed * 0x2545_f491, 400);
                let found = found(&filter, &mut cache, &buf);
                for line in matching(PATTERNS, &buf) {
                    assert!(
                        found
                            .iter()
                            .any(|f| f.strip_suffix('\r').unwrap_or(f) == line),
                        "capacity {capacity}: {line:?} not found"
                    );
                }
            }
            cleared |= cache.dfa.clear_count() > 0;
        }
        assert!(cleared, "no cache was ever cleared: the test tests nothing");
    }

    #[test]
    fn merged_prefixes_are_shared_and_match_where_one_pattern_does() {
        let merged = |ps: &[&str]| merge_prefixes(&ps.iter().map(|p| hir(p)).collect::<Vec<_>>());
        assert_eq!(
            merged(&["NET/IB : Got completion", "NET/IB : Got async event"]).to_string(),
            hir("NET/IB : Got (?:completion|async event)").to_string()
        );
        // A pattern that is the prefix of another ends the branch.
        assert_eq!(
            merged(&["vendor err \\d+", "vendor", "ven(?:d|t)"]).to_string(),
            hir("ven(?:dor|(?:d|t))").to_string()
        );
        assert_eq!(merged(&["a", ""]).to_string(), hir("").to_string());
        let cases: &[&[&str]] = &[
            PATTERNS,
            &[
                r"(?i)nccl warn",
                r"(?i)nccl error \d+",
                r"NET/IB : Got completion",
                r"NET/IB\w* : Got",
                r"NET/IB",
                r"(?:Watchdog|watchdog) caught|ran for",
                r"[rR]ank\d+|rank",
                r"x*y",
            ],
        ];
        for patterns in cases {
            let hirs: Vec<Hir> = patterns.iter().map(|p| hir(p)).collect();
            let one = regex_automata::meta::Regex::builder()
                .build_from_hir(&merge_prefixes(&hirs))
                .expect("builds");
            let any = regex_automata::meta::Regex::builder()
                .build_many_from_hir(&hirs)
                .expect("builds");
            for seed in 1..20 {
                let buf = random_lines(seed * 0x5851_f42d, 300);
                let mut lines = Vec::new();
                all_lines(&buf, &mut lines);
                for line in lines.into_iter().map(|r| &buf[r]) {
                    assert_eq!(
                        one.is_match(line),
                        any.is_match(line),
                        "{patterns:?} on {:?}",
                        String::from_utf8_lossy(line)
                    );
                }
            }
        }
    }

    #[test]
    fn patterns_that_nest_deep_are_merged_without_deep_recursion() {
        // `x`, `ax`, `aax`, …: each pattern branches off the one before, so a
        // trie shared all the way down would nest once per pattern.
        let run = || {
            let patterns: Vec<String> = (0..3000).map(|i| format!("{}x", "a".repeat(i))).collect();
            let hirs: Vec<Hir> = patterns.iter().map(|p| hir(p)).collect();
            let filter = LineFilter::new(&hirs, 64 << 20, 8 << 20).expect("builds");
            let mut cache = filter.cache();
            let buf = format!("{}x\n{}\nb\n", "a".repeat(2500), "a".repeat(4000));
            found(&filter, &mut cache, buf.as_bytes()).len()
        };
        let found = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(run)
            .expect("spawns")
            .join()
            .expect("no stack overflow");
        assert_eq!(found, 1, "only the line ending in x");
    }

    #[test]
    fn trimmed_ends_still_need_the_literals() {
        let t = |p: &str| trim_ends(&for_buffers(&hir(p))).to_string();
        assert_eq!(t(r"(?-u)[\w.-]+: Couldn't"), hir(": Couldn't").to_string());
        assert_eq!(
            t(r"(?-u)event ?: ?(?P<e>[^\r\n]+)"),
            hir("event ?:").to_string()
        );
        assert_eq!(t(r"a|(?:\d+)b"), hir("a|b").to_string());
        // Nothing to keep: unchanged (without its newline).
        assert_eq!(t(r"(?-u)\d+"), for_buffers(&hir(r"(?-u)\d+")).to_string());
    }
}
