//! Which built-in patterns cost the most on lines that fire nothing: each pattern alone,
//! and the whole set without it, over a log of healthy lines.
//!
//!     cargo run --release -p tripcap-triggers --example pattern_cost -- LOG [TOP]
//!
//! For tuning the packs (BENCHMARKS.md, "triggers"): a pattern with no literal to look for
//! first (one that starts with a class such as `\w+` or `\d+`) makes the set's prefilter
//! give up and scan every byte with the DFA.

use std::time::Instant;

use regex::bytes::{Regex, RegexSetBuilder};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: pattern_cost LOG [TOP]");
        std::process::exit(2);
    };
    let top: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(15);
    let log = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pattern_cost: cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let lines: Vec<&[u8]> = log.split(|&b| b == b'\n').collect();
    let mut patterns: Vec<(String, String)> = Vec::new();
    for def in tripcap_triggers::all_packs() {
        for p in &def.patterns {
            patterns.push((def.name.clone(), p.clone()));
        }
    }
    let scan = |set: &regex::bytes::RegexSet| {
        let t = Instant::now();
        let n = lines.iter().filter(|l| set.is_match(l)).count();
        (t.elapsed().as_secs_f64(), n)
    };
    let build = |skip: Option<usize>| {
        RegexSetBuilder::new(
            patterns
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != skip)
                .map(|(_, (_, p))| p.as_str()),
        )
        .dfa_size_limit(64 << 20)
        .build()
        .expect("patterns compile")
    };
    let (all, n) = scan(&build(None));
    println!("whole set: {:.3} s, {n} matching lines", all);
    let mut alone: Vec<(f64, usize)> = patterns
        .iter()
        .enumerate()
        .map(|(i, (_, p))| {
            let re = Regex::new(p).expect("compiles");
            let t = Instant::now();
            let _ = lines.iter().filter(|l| re.is_match(l)).count();
            (t.elapsed().as_secs_f64(), i)
        })
        .collect();
    alone.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("slowest alone, and the set without each:");
    for &(secs, i) in alone.iter().take(top) {
        let (without, _) = scan(&build(Some(i)));
        let (trigger, p) = &patterns[i];
        let short: String = p.chars().take(90).collect();
        println!("{secs:.3} s alone, set without it {without:.3} s  {trigger}: {short}");
    }
}
