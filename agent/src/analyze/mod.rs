//! Offline analysis of a capture file: `tripcap analyze FILE`.
//!
//! The stage after the window dump: it reads a pcap/pcapng file with
//! [`crate::capture_file::reader`], classifies every frame with [`crate::wire::parse_frame`],
//! and reports either one row per RoCE packet ([`packets`], `--packets`, columns and number
//! formats as tshark prints them so the two can be compared row for row) or per-connection
//! health ([`connections`]: PSN gaps, go-back-N, NAKs, CNPs, ECN, silences) as a readable
//! summary (instants in RFC 3339 UTC or relative to the trigger) or versioned JSON
//! (`--json`).
//!
//! [`run`] writes to any `io::Write` so tests call it with a `Vec<u8>`; the binary only
//! parses flags and maps [`Error`] to an exit code. When a sidecar (`<stem>.json`) sits
//! beside the file, its trigger, drops and RDMA counters join the report ([`context`]).
//! `--svg OUT` draws the capture ([`svg`]); [`write_capture_report`] writes the summary
//! JSON and the picture beside a capture, as the agent does for every window.
//! `--baseline BASE` compares the capture with a baseline of healthy traffic ([`against`],
//! [`baseline`]): the report gains the metrics that left their band, worst first.
//!
//! Modules, each importing only those before it: [`track`] (the per-QP state machine,
//! shared with the live packet triggers), [`whole`] (timeline, sizes, pauses), [`context`]
//! (the sidecar's trigger, drops and counters), [`finding`] (the finding type),
//! [`throughput`] ("why slow": goodput, sizes, pause time, re-sent bytes, CNP cuts and a
//! verdict, from what the loop collects), [`baseline`] (summaries, profiles and the
//! comparison; pure), [`connections`] (the report; the analysis loop is its child `connections::analysis`),
//! [`against`] (reads `--baseline` and puts the report against it),
//! [`findings`] (computes the findings and writes the summary text), [`svg`],
//! [`packets`]. [`analyze_file`] runs
//! [`connections::analyze`] and then always [`connections::Report::set_context`], which
//! computes the findings.
//! The JSON schema is documented in `docs/analyze-schema.md`.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::capture_file::reader::{self, Reader};

pub mod against;
pub mod baseline;
pub mod connections;
pub mod context;
pub mod finding;
pub mod findings;
pub mod packets;
pub mod svg;
pub mod throughput;
pub mod track;
pub mod whole;

/// Files larger than this get a progress bar (when stderr is a terminal).
pub const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Flags of `tripcap analyze`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture file to analyse (pcap or pcapng).
    pub file: PathBuf,
    /// Print one tab-separated row per RoCE/InfiniBand packet (tshark's number formats).
    #[arg(long)]
    pub packets: bool,
    /// Print the analysis as JSON (schema `tripcap.analyze.connections` version 5, see
    /// docs/analyze-schema.md).
    #[arg(long, conflicts_with = "packets")]
    pub json: bool,
    /// Also draw the capture as an SVG picture into this file.
    #[arg(long, value_name = "OUT", conflicts_with = "packets")]
    pub svg: Option<PathBuf>,
    /// Link speed for the "why slow" section (`100Gb/s`, `25Gbit/s`, `400Mb/s`); default:
    /// the sidecar's interface speed, else 100 Gb/s assumed.
    /// Kept in Mbit/s.
    #[arg(long, value_name = "RATE", value_parser = parse_link_speed, conflicts_with = "packets")]
    pub link_speed: Option<u64>,
    /// Compare the capture with a baseline of healthy traffic: a profile (the JSON
    /// `tripcap baseline export` writes) or another capture (summarised per second). The
    /// report lists the metrics that left their band, worst first.
    #[arg(long, value_name = "BASE", conflicts_with = "packets")]
    pub baseline: Option<PathBuf>,
}

/// `--link-speed`: a bandwidth as the perftest thresholds write it, in Mbit/s.
pub fn parse_link_speed(text: &str) -> Result<u64, String> {
    match tripcap_triggers::perftest::parse_bandwidth(text) {
        Ok(g) if (0.001..1e9).contains(&g) => Ok((g * 1000.0).round() as u64),
        Ok(_) => Err(format!(
            "link speed \"{text}\" must be above zero, e.g. \"100Gb/s\""
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Analysis failed.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The capture file could not be opened.
    Open { path: PathBuf, source: io::Error },
    /// The capture file is not a readable pcap/pcapng.
    Read {
        path: PathBuf,
        source: reader::Error,
    },
    /// Writing the output failed (e.g. a closed pipe).
    Write(io::Error),
    /// The sidecar beside the capture is unreadable.
    Sidecar(String),
    /// A report file could not be written.
    Output { path: PathBuf, source: io::Error },
    /// The picture could not be drawn.
    Svg(String),
    /// `--baseline` could not be read (the message names the fix).
    Baseline(String),
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Open { path, source } => {
                write!(f, "cannot open capture file {}: {source}", path.display())
            }
            ErrorKind::Read { path, source } => write!(f, "{}: {source}", path.display()),
            ErrorKind::Write(e) => write!(f, "cannot write the analysis: {e}"),
            ErrorKind::Sidecar(m) => write!(f, "{m} (move it away to analyse without it)"),
            ErrorKind::Output { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
            ErrorKind::Svg(m) => write!(f, "cannot draw the picture: {m}"),
            ErrorKind::Baseline(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Open { source, .. } => Some(source),
            ErrorKind::Read { source, .. } => Some(source),
            ErrorKind::Write(e) => Some(e),
            ErrorKind::Output { source, .. } => Some(source),
            ErrorKind::Sidecar(_) | ErrorKind::Svg(_) | ErrorKind::Baseline(_) => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error {
            kind: ErrorKind::Write(e),
        }
    }
}

fn open(path: &Path) -> Result<Reader<BufReader<File>>, Error> {
    let file = File::open(path).map_err(|source| Error {
        kind: ErrorKind::Open {
            path: path.to_owned(),
            source,
        },
    })?;
    Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(|source| Error {
        kind: ErrorKind::Read {
            path: path.to_owned(),
            source,
        },
    })
}

/// Analyses a capture file (with a progress bar on a terminal for large files) and
/// attaches `context` (or the sidecar beside the file when `context` is `None`).
pub fn analyze_file(
    path: &Path,
    context: Option<context::CaptureContext>,
) -> Result<connections::Report, Error> {
    analyze_path(path, context, false)
}

/// [`analyze_file`], then the capture against `base` ([`connections::Report::baseline`]).
pub fn analyze_file_against(
    path: &Path,
    context: Option<context::CaptureContext>,
    base: &against::Base,
) -> Result<connections::Report, Error> {
    let mut report = analyze_path(path, context, true)?;
    report.set_baseline(&base.profile, base.source.clone());
    Ok(report)
}

fn analyze_path(
    path: &Path,
    context: Option<context::CaptureContext>,
    summarize: bool,
) -> Result<connections::Report, Error> {
    let mut reader = open(path)?;
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let bar = (size >= PROGRESS_MIN_BYTES && io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(size);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message("analysing");
        bar
    });
    let mut progress = |offset: u64| {
        if let Some(b) = &bar {
            b.set_position(offset);
        }
    };
    let analyze = if summarize {
        connections::analyze_summarized
    } else {
        connections::analyze
    };
    let mut report = analyze(&mut reader, &mut progress).map_err(|source| Error {
        kind: ErrorKind::Read {
            path: path.to_owned(),
            source,
        },
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let context = match context {
        Some(c) => Some(c),
        None => context::load_context(path).map_err(|m| Error {
            kind: ErrorKind::Sidecar(m),
        })?,
    };
    report.set_context(context);
    Ok(report)
}

/// Runs `tripcap analyze` and writes its report to `out`.
pub fn run(args: &AnalyzeArgs, out: &mut dyn Write) -> Result<(), Error> {
    let mut out = BufWriter::new(out);
    if args.packets {
        let path = &args.file;
        let mut reader = open(path)?;
        packets::write(&mut reader, &mut out).map_err(|e| match e {
            packets::Failure::Read(source) => Error {
                kind: ErrorKind::Read {
                    path: path.clone(),
                    source,
                },
            },
            packets::Failure::Write(e) => Error::from(e),
        })?;
    } else {
        let base = args
            .baseline
            .as_deref()
            .map(against::load_base)
            .transpose()
            .map_err(|m| Error {
                kind: ErrorKind::Baseline(m),
            })?;
        let mut report = match &base {
            Some(b) => analyze_file_against(&args.file, None, b)?,
            None => analyze_file(&args.file, None)?,
        };
        if let Some(mbps) = args.link_speed {
            report.set_link_speed(mbps as f64 / 1000.0);
        }
        if let Some(svg_path) = &args.svg {
            let text = svg::render(&report).map_err(|m| Error {
                kind: ErrorKind::Svg(m),
            })?;
            std::fs::write(svg_path, text).map_err(|source| Error {
                kind: ErrorKind::Output {
                    path: svg_path.clone(),
                    source,
                },
            })?;
        }
        if args.json {
            report.write_json(&mut out)?;
        } else {
            report.write_summary(&mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The files [`write_capture_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// `<stem>.summary.json`: the `--json` report.
    pub summary: PathBuf,
    /// `<stem>.svg`: the picture.
    pub svg: PathBuf,
}

/// Writes `<stem>.summary.json` and `<stem>.svg` beside a capture, using the sidecar
/// `<stem>.json` beside it if there is one. Each file is written under a temporary name,
/// made 0600, synced and renamed.
pub fn write_capture_report(pcapng: &Path) -> Result<ReportFiles, Error> {
    write_report_files(pcapng, None, None)
}

/// [`write_capture_report`] with a sidecar that is not on disk yet (the window writer
/// calls this before it renames the sidecar into place), and the host's baseline profile
/// when it has one: the report then holds the window against it (the profile's interface
/// names are the ring's, as in the file).
pub fn write_capture_report_with(
    pcapng: &Path,
    sidecar: &crate::sidecar::Sidecar,
    baseline: Option<&baseline::Profile>,
) -> Result<ReportFiles, Error> {
    let ctx = context::context_from_sidecar(sidecar).map_err(|m| Error {
        kind: ErrorKind::Sidecar(m),
    })?;
    let base = baseline.map(|p| against::Base {
        profile: p.clone(),
        source: baseline::comparison::Source::of("host", None, p),
    });
    write_report_files(pcapng, Some(ctx), base.as_ref())
}

fn write_report_files(
    pcapng: &Path,
    ctx: Option<context::CaptureContext>,
    base: Option<&against::Base>,
) -> Result<ReportFiles, Error> {
    let report = match base {
        Some(b) => analyze_file_against(pcapng, ctx, b)?,
        None => analyze_file(pcapng, ctx)?,
    };
    let stem = pcapng
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "capture".to_owned());
    let files = ReportFiles {
        summary: pcapng.with_file_name(format!("{stem}.summary.json")),
        svg: pcapng.with_file_name(format!("{stem}.svg")),
    };
    let mut json = Vec::new();
    report.write_json(&mut json)?;
    let svg = svg::render(&report).map_err(|m| Error {
        kind: ErrorKind::Svg(m),
    })?;
    for (path, bytes) in [(&files.summary, json), (&files.svg, svg.into_bytes())] {
        crate::private_file::write_private_atomically(path, &bytes).map_err(|source| Error {
            kind: ErrorKind::Output {
                path: path.clone(),
                source,
            },
        })?;
    }
    Ok(files)
}

/// Formats nanoseconds since the epoch as tshark's `frame.time_epoch` (9 decimals): for
/// `--packets`, which is compared with tshark; text for people uses [`crate::clock`].
pub fn format_epoch(ts_ns: i64) -> impl fmt::Display {
    struct Epoch(i64);
    impl fmt::Display for Epoch {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let secs = self.0.div_euclid(1_000_000_000);
            let nanos = self.0.rem_euclid(1_000_000_000);
            write!(f, "{secs}.{nanos:09}")
        }
    }
    Epoch(ts_ns)
}
