//! How much of the built-in set a log makes the lazy [`TriggerSet`] compile:
//! `cargo run --release -p tripcap-triggers --example lazy_counts -- LOG...`
//! prints, per log, the lines the literal gate let through, the patterns
//! compiled alone, the lines that fired, and the time taken (set included).
use std::time::Instant;

use tripcap_triggers::{all_packs, TriggerSet};

fn main() {
    for path in std::env::args().skip(1) {
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let t0 = Instant::now();
        let set = match TriggerSet::new(all_packs()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return;
            }
        };
        let mut cache = set.scan_cache();
        let (mut out, mut fired, mut lines) = (Vec::new(), 0, 0);
        for line in text.split(|&b| b == b'\n') {
            lines += 1;
            if set.may_fire(line, &mut cache) && set.match_line(line, &mut out) {
                fired += 1;
            }
        }
        let (passed, compiled) = set.lazy_counts();
        println!(
            "{path}: {lines} lines, {passed} through the gate, {compiled} patterns compiled, {fired} fired, {:.1} ms",
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
}
