//! `tripcap triggers test` and `tripcap triggers list`: the trigger packs
//! without capturing.
//!
//! `test` is a dry run of the agent's matching path ([`crate::matcher::Matcher`],
//! so `[perftest]` thresholds and `unless` vetoes behave exactly as they will
//! live) over existing log files, read once from start to end in chunks of whole
//! lines (only the lines a chunk scan finds may fire are matched one by one,
//! [`Matcher::lines_to_match`]). It reports
//! every firing, one JSON object per line (`file`, `line_no`, `trigger`,
//! `class`, `groups`, and `line_time`/`stuck_for_ms` when the line carries that
//! evidence) or as a table, and always exits 0 when the files could be read:
//! firing is the answer, not a failure.
//!
//! `list` prints the built-in packs with each trigger's class, window and a
//! real line it fires on; `list --patterns` prints every pattern, one a line,
//! for use with other tools (the benchmark feeds them to `grep -E -f`).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tripcap_triggers::scan::{count_lines, Chunks};
use tripcap_triggers::{evidence, TimeContext, TriggerSet};

use crate::clock::rfc3339;
use crate::matcher::Matcher;
use crate::recorder::Firing;

/// What a dry run found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TestSummary {
    /// Files read.
    pub files: usize,
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Firings reported.
    pub firings: u64,
}

/// Output form of `triggers test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per firing.
    Json,
    /// A table for people.
    Table,
}

/// An error of `triggers test`: a file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{path}`: {source}; check the path and its permissions")]
pub struct ReadError {
    /// The file.
    pub path: String,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// Bytes read at a time: the lines of a chunk that may fire are found in one
/// pass over it ([`Matcher::lines_to_match`]).
const CHUNK: usize = 1 << 20;

/// Dry-run `matcher` over `files` (`-` is stdin), writing firings to `out`.
pub fn test_files(
    matcher: &mut Matcher,
    files: &[PathBuf],
    format: Format,
    out: &mut dyn Write,
) -> Result<TestSummary, ReadError> {
    let mut summary = TestSummary::default();
    if format == Format::Table {
        writeln!(
            out,
            "{:<32} {:<32} {:<20} GROUPS",
            "FILE:LINE", "TRIGGER", "CLASS"
        )
        .map_err(|e| write_error(e, "stdout"))?;
    }
    let now = crate::clock::now_ns();
    for file in files {
        let shown = file.display().to_string();
        let fail = |source| ReadError {
            path: shown.clone(),
            source,
        };
        let reader: Box<dyn Read> = if file.as_os_str() == "-" {
            Box::new(io::stdin().lock())
        } else {
            Box::new(std::fs::File::open(file).map_err(fail)?)
        };
        let source: Arc<Path> = Arc::from(file.as_path());
        let mut chunks = Chunks::new(reader, CHUNK);
        let mut lines = Vec::new();
        let mut firings: Vec<Firing> = Vec::new();
        // Lines before the current chunk.
        let mut line_no = 0u64;
        summary.files += 1;
        while let Some(chunk) = chunks.next_chunk().map_err(fail)? {
            summary.bytes += chunk.len() as u64;
            lines.clear();
            matcher.lines_to_match(chunk, &mut lines);
            // Number of the line at `counted`, counted as far as needed.
            let (mut counted, mut number) = (0, line_no + 1);
            for line in &lines {
                number += count_lines(&chunk[counted..line.start]) as u64;
                counted = line.start;
                let text = &chunk[line.clone()];
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                if !matcher.line(&source, text, now, &mut firings) {
                    continue;
                }
                for f in &firings {
                    summary.firings += 1;
                    report(matcher, &shown, number, text, f, format, out)
                        .map_err(|e| write_error(e, "stdout"))?;
                }
            }
            line_no += count_lines(chunk) as u64;
        }
        summary.lines += line_no;
    }
    Ok(summary)
}

fn write_error(e: io::Error, what: &str) -> ReadError {
    ReadError {
        path: what.to_string(),
        source: e,
    }
}

fn report(
    matcher: &Matcher,
    file: &str,
    line_no: u64,
    text: &[u8],
    firing: &Firing,
    format: Format,
    out: &mut dyn Write,
) -> io::Result<()> {
    let Some(spec) = matcher.spec(firing.trigger) else {
        return Ok(());
    };
    match format {
        Format::Json => {
            let groups: serde_json::Map<String, serde_json::Value> = firing
                .groups
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            let mut obj = serde_json::json!({
                "file": file,
                "line_no": line_no,
                "trigger": spec.name,
                "class": spec.class,
                "groups": groups,
            });
            // The raw evidence (not checked against a read time: the file is old).
            let ev = evidence(text, TimeContext::utc(crate::clock::now_ns()));
            if let Some(map) = obj.as_object_mut() {
                if let Some(t) = ev.line_time {
                    map.insert("line_time".into(), rfc3339(t).into());
                }
                if let Some(d) = ev.stuck_for {
                    map.insert(
                        "stuck_for_ms".into(),
                        u64::try_from(d.as_millis()).unwrap_or(u64::MAX).into(),
                    );
                }
            }
            writeln!(out, "{obj}")
        }
        Format::Table => {
            let groups: Vec<String> = firing
                .groups
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            writeln!(
                out,
                "{:<32} {:<32} {:<20} {}",
                format!("{file}:{line_no}"),
                spec.name,
                spec.class,
                groups.join(" ")
            )
        }
    }
}

/// Every pattern of every built-in trigger, one a line (for `grep -E -f` and friends).
pub fn list_patterns(out: &mut dyn Write) -> io::Result<()> {
    for def in tripcap_triggers::all_packs() {
        for p in &def.patterns {
            writeln!(out, "{p}")?;
        }
    }
    Ok(())
}

/// The built-in packs, their triggers, classes, windows, example lines, and the
/// sources (project, file, releases) their patterns were written from.
pub fn list(out: &mut dyn Write) -> io::Result<()> {
    for pack in tripcap_triggers::describe() {
        writeln!(out, "pack {}: {}", pack.name, pack.summary)?;
        for t in &pack.triggers {
            writeln!(
                out,
                "  {}  class={}  pre={}s post={}s cooldown={}s",
                t.name,
                t.class,
                t.pre.as_secs(),
                t.post.as_secs(),
                t.cooldown.as_secs()
            )?;
            writeln!(out, "    {}", t.description)?;
            if t.fallback {
                writeln!(
                    out,
                    "    fallback: fires only on lines no other trigger fires on"
                )?;
            }
            writeln!(out, "    e.g. {}", t.example)?;
            // Where the patterns come from, each source once (several patterns share one).
            let mut seen: Vec<&str> = Vec::new();
            let sources = t.sources();
            for s in sources.iter().flat_map(|s| s.split("; ")) {
                if !s.is_empty() && !seen.contains(&s) {
                    seen.push(s);
                    writeln!(out, "    from {s}")?;
                }
            }
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "Enable with `packs = [\"{}\"]` in the config; try them on a log with `tripcap triggers test FILE`.",
        tripcap_triggers::PACK_NAMES.join("\", \"")
    )
}

/// The trigger set of every built-in pack (what `triggers test` uses without `--config`).
pub fn all_builtin() -> TriggerSet {
    // The packs are tested to compile together; an empty set is the safe fallback.
    TriggerSet::new(tripcap_triggers::all_packs()).unwrap_or_else(|_| TriggerSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line number, trigger name) of every firing, one line at a time through
    /// [`Matcher::line`]: what `test_files` reported before it scanned whole chunks.
    fn line_by_line(log: &[u8]) -> Vec<(u64, String)> {
        let mut matcher = Matcher::new(all_builtin(), None);
        let source: Arc<Path> = Arc::from(Path::new("log"));
        let mut firings = Vec::new();
        let mut out = Vec::new();
        let mut lines: Vec<&[u8]> = log.split(|&b| b == b'\n').collect();
        if log.ends_with(b"\n") {
            lines.pop();
        }
        for (i, line) in lines.into_iter().enumerate() {
            let text = line.strip_suffix(b"\r").unwrap_or(line);
            if matcher.line(&source, text, 0, &mut firings) {
                for f in &firings {
                    let name = matcher.spec(f.trigger).map(|s| s.name.clone());
                    out.push((i as u64 + 1, name.unwrap_or_default()));
                }
            }
        }
        out
    }

    #[test]
    fn whole_chunks_report_the_same_firings_and_line_numbers_as_line_by_line() {
        let watchdog = "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.";
        let ib = "host:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52418> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2 hca mlx5_0";
        let healthy = "host:1:2 [0] NCCL INFO Channel 00/02 : 0 1 2 3";
        // A line longer than a chunk, with a failure at its end.
        let long = format!("{} {watchdog}", "x".repeat(CHUNK + 10));
        let mut log = String::new();
        for i in 0..5000 {
            let line = match i % 997 {
                3 => watchdog,
                500 => ib,
                700 => long.as_str(),
                _ => healthy,
            };
            log.push_str(line);
            log.push_str(if i % 2 == 0 { "\n" } else { "\r\n" });
        }
        log.push_str(ib); // the last line, without a newline
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        std::fs::write(&path, &log).expect("writes");

        let mut matcher = Matcher::new(all_builtin(), None);
        let mut out = Vec::new();
        let summary = test_files(&mut matcher, &[path], Format::Json, &mut out).expect("reads");
        let got: Vec<(u64, String)> = String::from_utf8_lossy(&out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("json");
                let name = v["trigger"].as_str().unwrap_or_default().to_string();
                (v["line_no"].as_u64().unwrap_or_default(), name)
            })
            .collect();
        let want = line_by_line(log.as_bytes());
        assert!(want.len() > 10, "{want:?}");
        assert_eq!(got, want);
        assert_eq!(summary.lines, 5001);
        assert_eq!(summary.bytes, log.len() as u64);
        assert_eq!(summary.firings, want.len() as u64);
    }
}
