//! Reading the TOML with places: serde reads the file into `Raw*` structs whose
//! checked values are `toml::Spanned`, and [`Reader`] turns a span into a
//! [`Location`] (`file:line:col`) and reads sizes and durations with theirs.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{Error, ErrorKind, Location};
use crate::packet_triggers::PacketTriggerDef;
use crate::units::{parse_duration, parse_size};

/// A size, duration or snaplen as written: a string or an integer. Read as a
/// plain TOML value so a wrong type gets our message, not serde's.
pub(super) type NumOrText = toml::Value;

/// The whole file as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    /// The host name in incident ids, file names and uploads (default: the system's).
    pub host: Option<Spanned<String>>,
    #[serde(default)]
    pub capture: RawCapture,
    #[serde(default)]
    pub ring: RawRing,
    #[serde(default)]
    pub output: RawOutput,
    #[serde(default)]
    pub logs: RawLogs,
    #[serde(default)]
    pub packs: Vec<Spanned<String>>,
    #[serde(default)]
    pub trigger: Vec<RawTrigger>,
    #[serde(default)]
    pub packet_trigger: Vec<PacketTriggerDef<Spanned<String>>>,
    #[serde(default)]
    pub perftest: RawPerftest,
    #[serde(default)]
    pub spool: crate::deliver::SpoolConfig,
    pub upload: Option<crate::deliver::UploadConfig>,
    pub api: Option<crate::api::ApiConfig>,
    pub fleet: Option<crate::fleet::FleetConfig>,
    #[serde(default)]
    pub baseline: RawBaseline,
}

/// `[baseline]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBaseline {
    pub enabled: Option<bool>,
    pub interval: Option<Spanned<NumOrText>>,
    pub max_bytes: Option<Spanned<NumOrText>>,
    pub keep: Option<Spanned<NumOrText>>,
    pub dir: Option<String>,
}

/// `[perftest]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPerftest {
    pub bw_below: Option<Spanned<String>>,
    pub lat_above: Option<Spanned<String>>,
}

/// `[capture]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapture {
    pub interfaces: Option<Vec<Spanned<String>>>,
    pub filter: Option<Spanned<String>>,
    pub snaplen: Option<Spanned<NumOrText>>,
    pub buffer_size: Option<Spanned<NumOrText>>,
    pub promiscuous: Option<bool>,
}

/// `[ring]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRing {
    pub memory_limit: Option<Spanned<NumOrText>>,
    pub max_age: Option<Spanned<NumOrText>>,
    pub block_size: Option<Spanned<NumOrText>>,
    pub compress: Option<bool>,
    pub compress_threads: Option<Spanned<i64>>,
    pub expected_rate: Option<Spanned<NumOrText>>,
}

/// `[output]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutput {
    pub dir: Option<Spanned<String>>,
    pub max_window: Option<Spanned<NumOrText>>,
    pub reports: Option<bool>,
    pub sysfs_root: Option<String>,
}

/// `[logs]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLogs {
    pub paths: Option<Vec<Spanned<String>>>,
    pub max_line_bytes: Option<Spanned<NumOrText>>,
}

/// One `[[trigger]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrigger {
    pub name: Spanned<String>,
    pub class: Option<String>,
    pub pattern: Option<Spanned<String>>,
    #[serde(default)]
    pub patterns: Vec<Spanned<String>>,
    #[serde(default)]
    pub unless: Vec<Spanned<String>>,
    pub pre: Option<Spanned<NumOrText>>,
    pub post: Option<Spanned<NumOrText>>,
    pub cooldown: Option<Spanned<NumOrText>>,
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

/// "a string", "an integer", ...: for messages.
pub(super) fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// Reads values with their location.
pub(super) struct Reader<'a> {
    /// The file, as named in errors.
    pub path: &'a str,
    /// Its text.
    pub text: &'a str,
}

impl Reader<'_> {
    /// The raw file; any TOML or serde error is located.
    pub fn raw(&self) -> Result<RawConfig, Error> {
        toml::from_str(self.text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            let at = match e.span() {
                Some(span) => self.at(span),
                None => Location::WholeFile(self.path.to_string()),
            };
            ErrorKind::Syntax { at, message }.into()
        })
    }

    /// Where `span` starts.
    pub fn at(&self, span: Range<usize>) -> Location {
        let (line, col) = line_col(self.text, span.start);
        Location::File {
            path: self.path.to_string(),
            line,
            col,
        }
    }

    /// A [`ErrorKind::Value`] error at `span`.
    pub fn value_err<T>(&self, span: Range<usize>, message: String) -> Result<T, Error> {
        Err(ErrorKind::Value {
            at: self.at(span),
            message,
        }
        .into())
    }

    /// An [`ErrorKind::Invalid`] error at `span`.
    pub fn invalid<T>(&self, span: Range<usize>, what: String, fix: &str) -> Result<T, Error> {
        Err(ErrorKind::Invalid {
            at: Some(self.at(span)),
            what,
            fix: fix.to_string(),
        }
        .into())
    }

    /// A duration with its unit (`"30s"`).
    pub fn duration(&self, v: &Spanned<NumOrText>, key: &str) -> Result<Duration, Error> {
        match v.get_ref() {
            toml::Value::String(t) => {
                parse_duration(t).or_else(|m| self.value_err(v.span(), format!("`{key}`: {m}")))
            }
            toml::Value::Integer(n) => self.value_err(
                v.span(),
                format!("`{key}` = {n} has no unit: write \"{n}s\" (or \"{n}ms\", \"{n}m\")"),
            ),
            other => self.value_err(
                v.span(),
                format!(
                    "`{key}` must be a duration like \"30s\", not {}",
                    type_name(other)
                ),
            ),
        }
    }

    /// A size: bytes, or a string with a unit (`"1GiB"`).
    pub fn size(&self, v: &Spanned<NumOrText>, key: &str) -> Result<u64, Error> {
        match v.get_ref() {
            toml::Value::Integer(n) => u64::try_from(*n).or_else(|_| {
                self.value_err(v.span(), format!("`{key}` = {n} must not be negative"))
            }),
            toml::Value::String(t) => {
                parse_size(t).or_else(|m| self.value_err(v.span(), format!("`{key}`: {m}")))
            }
            other => self.value_err(
                v.span(),
                format!(
                    "`{key}` must be a size like \"1GiB\" or a number of bytes, not {}",
                    type_name(other)
                ),
            ),
        }
    }
}
