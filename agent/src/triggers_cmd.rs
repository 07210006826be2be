//! `tripcap triggers test` and `tripcap triggers list`: the trigger packs
//! without capturing.
//!
//! `test` is a dry run of the agent's matching path ([`crate::matcher::Matcher`],
//! so `[perftest]` thresholds and `unless` vetoes behave exactly as they will
//! live) over existing log files, read once from start to end. It reports
//! every firing, one JSON object per line (`file`, `line_no`, `trigger`,
//! `class`, `groups`, and `line_time`/`stuck_for_ms` when the line carries that
//! evidence) or as a table, and always exits 0 when the files could be read:
//! firing is the answer, not a failure.
//!
//! `list` prints the built-in packs with each trigger's class, window and a
//! real line it fires on; `list --patterns` prints every pattern, one a line,
//! for use with other tools (the benchmark feeds them to `grep -E -f`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        let mut reader = BufReader::with_capacity(1 << 20, reader);
        let mut line = Vec::with_capacity(4096);
        let mut firings: Vec<Firing> = Vec::new();
        let mut line_no = 0u64;
        summary.files += 1;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(fail)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            summary.bytes += n as u64;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if !matcher.line(&source, text, now, &mut firings) {
                continue;
            }
            for f in &firings {
                summary.firings += 1;
                report(matcher, &shown, line_no, text, f, format, out)
                    .map_err(|e| write_error(e, "stdout"))?;
            }
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
            writeln!(out, "    e.g. {}", t.example)?;
            // Where the patterns come from, each source once (several patterns share one).
            let mut seen: Vec<&str> = Vec::new();
            for s in t.sources.iter().flat_map(|s| s.split("; ")) {
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
