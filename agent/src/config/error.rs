//! The configuration's error: [`Error`], what kind it is ([`ErrorKind`]) and
//! where it comes from ([`Location`]).
//!
//! Every error displays as one line, `file:line:col: what is wrong: the fix`
//! when it comes from a file, `--flag: ...` when it comes from a flag.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A configuration error. [`Error::kind`] tells what went wrong; `Display`
/// is the line users see.
#[derive(Debug)]
pub struct Error {
    kind: Box<ErrorKind>,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What went wrong, by value.
    pub fn into_kind(self) -> ErrorKind {
        *self.kind
    }

    /// Where the wrong value is, when known.
    pub fn location(&self) -> Option<&Location> {
        match self.kind() {
            ErrorKind::Syntax { at, .. }
            | ErrorKind::Value { at, .. }
            | ErrorKind::Filter { at, .. } => Some(at),
            ErrorKind::Invalid { at, .. } | ErrorKind::Pattern { at, .. } => at.as_ref(),
            ErrorKind::Read { .. }
            | ErrorKind::NotUtf8 { .. }
            | ErrorKind::Triggers { .. }
            | ErrorKind::Glob { .. }
            | ErrorKind::Upload { .. }
            | ErrorKind::Fleet { .. } => None,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error {
            kind: Box::new(kind),
        }
    }
}

/// What is wrong with a configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The config file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why (already part of the message: not returned as the error's source).
        source: io::Error,
    },
    /// The config file is not UTF-8.
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Offset of the first byte that is not UTF-8.
        valid_up_to: usize,
    },
    /// TOML the parser refused: bad syntax, an unknown or missing key, a value
    /// of the wrong type, a packet-trigger parameter it could not read.
    Syntax {
        /// Where the parser stopped (the file alone when it gave no place).
        at: Location,
        /// The parser's message, on one line.
        message: String,
    },
    /// A value that does not read as what its key takes (a size, a duration,
    /// a snaplen, a perftest threshold) or is out of bounds.
    Value {
        /// The value.
        at: Location,
        /// The key, what is wrong and how to write it, on one line.
        message: String,
    },
    /// A value that reads but breaks a rule: an empty or taken trigger name,
    /// a trigger with no pattern, an unknown pack.
    Invalid {
        /// The value, when it comes from the file or a flag.
        at: Option<Location>,
        /// What is wrong.
        what: String,
        /// How to fix it.
        fix: String,
    },
    /// A trigger's `pattern` or `unless` regex does not compile.
    Pattern {
        /// The regex, when it comes from the file or a flag.
        at: Option<Location>,
        /// The triggers crate's error (`BadPattern` or `BadUnless`).
        source: tripcap_triggers::Error,
    },
    /// The triggers do not make a set (other than a bad regex).
    Triggers {
        /// The triggers crate's error.
        source: tripcap_triggers::Error,
    },
    /// libpcap refuses the capture filter.
    Filter {
        /// The filter: in the file, `--filter`, or `default filter`.
        at: Location,
        /// The capture layer's message (it names the filter and the fix).
        message: String,
    },
    /// A log path is not a valid glob.
    Glob {
        /// The path as configured.
        pattern: String,
        /// Why.
        message: String,
    },
    /// `[upload]` is unusable.
    Upload {
        /// The delivery layer's message (it names the fix).
        message: String,
    },
    /// `[fleet]` is unusable (no job, a bad URL, credentials that do not go together).
    Fleet {
        /// The fleet's message (it names the key and the fix).
        message: String,
    },
}

/// Where a configured value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A place in a config file: `file:line:col` (1-based).
    File {
        /// The file, as named to tripcap.
        path: String,
        /// Line, from 1.
        line: usize,
        /// Column in characters, from 1.
        col: usize,
    },
    /// A config file, with no place in it known: `file`.
    WholeFile(String),
    /// A command-line flag (`--filter`), or the built-in default standing in
    /// for one (`default filter`).
    Flag(&'static str),
}

impl Location {
    /// The line in the config file, when the value is in one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Location::File { line, .. } => Some(*line),
            Location::WholeFile(_) | Location::Flag(_) => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File { path, line, col } => write!(f, "{path}:{line}:{col}"),
            Location::WholeFile(path) => f.write_str(path),
            Location::Flag(flag) => f.write_str(flag),
        }
    }
}

/// `at: ` when there is a location.
struct Prefix<'a>(Option<&'a Location>);

impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(at) => write!(f, "{at}: "),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            ErrorKind::Read { path, source } => {
                write!(f, "cannot read config `{}`: {source}", path.display())
            }
            ErrorKind::NotUtf8 { path, valid_up_to } => write!(
                f,
                "config `{}` is not UTF-8 (first bad byte at offset {valid_up_to}): save it as UTF-8",
                path.display()
            ),
            ErrorKind::Syntax { at, message }
            | ErrorKind::Value { at, message }
            | ErrorKind::Filter { at, message } => write!(f, "{at}: {message}"),
            ErrorKind::Invalid { at, what, fix } => {
                write!(f, "{}{what}: {fix}", Prefix(at.as_ref()))
            }
            ErrorKind::Pattern { at, source } => write!(
                f,
                "{}{source}: fix the regex (syntax: https://docs.rs/regex/#syntax)",
                Prefix(at.as_ref())
            ),
            ErrorKind::Triggers { source } => write!(f, "{source}"),
            ErrorKind::Glob { pattern, message } => {
                write!(f, "log path `{pattern}` is not a valid glob: {message}")
            }
            ErrorKind::Upload { message } | ErrorKind::Fleet { message } => f.write_str(message),
        }
    }
}

/// The message already says why: no source, so that `{:#}` chains do not
/// repeat it.
impl std::error::Error for Error {}
