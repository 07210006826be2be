//! Offline analysis of a capture file: `tripcap analyze FILE`.
//!
//! The stage after the window dump: it reads a pcap/pcapng file with
//! [`crate::capture_file::reader`], classifies every frame with [`crate::wire::parse_frame`],
//! and reports either one row per RoCE packet ([`packets`], `--packets`, columns and number
//! formats as tshark prints them so the two can be compared row for row) or per-connection
//! health ([`connections`]: PSN gaps, go-back-N, NAKs, CNPs, ECN, silences) as a readable
//! summary or versioned JSON (`--json`).
//!
//! [`run`] writes to any `io::Write` so tests call it with a `Vec<u8>`; the binary only
//! parses flags and maps [`Error`] to an exit code.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;

use crate::capture_file::reader::{self, Reader};

pub mod connections;
pub mod packets;

/// Flags of `tripcap analyze`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture file to analyse (pcap or pcapng).
    pub file: PathBuf,
    /// Print one tab-separated row per RoCE/InfiniBand packet (tshark's number formats).
    #[arg(long)]
    pub packets: bool,
    /// Print the per-connection analysis as JSON (schema version 1).
    #[arg(long, conflicts_with = "packets")]
    pub json: bool,
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
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Open { source, .. } => Some(source),
            ErrorKind::Read { source, .. } => Some(source),
            ErrorKind::Write(e) => Some(e),
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

/// Runs `tripcap analyze` and writes its report to `out`.
pub fn run(args: &AnalyzeArgs, out: &mut dyn Write) -> Result<(), Error> {
    let path = &args.file;
    let file = File::open(path).map_err(|source| Error {
        kind: ErrorKind::Open {
            path: path.clone(),
            source,
        },
    })?;
    let read_err = |source| Error {
        kind: ErrorKind::Read {
            path: path.clone(),
            source,
        },
    };
    let mut reader = Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(read_err)?;
    let mut out = BufWriter::new(out);
    if args.packets {
        packets::write(&mut reader, &mut out).map_err(|e| match e {
            packets::Failure::Read(source) => read_err(source),
            packets::Failure::Write(e) => Error::from(e),
        })?;
    } else {
        let report = connections::analyze(&mut reader).map_err(read_err)?;
        if args.json {
            report.write_json(&mut out)?;
        } else {
            report.write_summary(&mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Formats nanoseconds since the epoch as tshark's `frame.time_epoch` (9 decimals).
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
