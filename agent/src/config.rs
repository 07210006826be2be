//! Configuration: the TOML file, the quick command-line flags, and checking both.
//!
//! Parsing happens in two steps. serde reads the file into `Raw*` structs whose
//! checked values are `toml::Spanned`, so every error — a wrong type, an
//! unknown key, a duration without a unit, a regex that does not compile, a BPF
//! filter libpcap refuses — is reported as `file:line:col: what is wrong (fix)`
//! on one line. Then [`Config`] holds plain typed values. Sizes follow
//! `bytesize`: `"64KiB"`/`"1GiB"` are binary, `"64k"`/`"1g"` decimal; a bare
//! integer is bytes. Durations follow `humantime` (`"30s"`, `"15m"`, `"1h 30m"`).

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use tripcap_triggers::perftest::Thresholds;
use tripcap_triggers::{TriggerDef, TriggerSet};

use crate::capture::{self, DEFAULT_FILTER};
use crate::units::{parse_duration, parse_size, parse_snaplen};

/// A configuration error, located when it comes from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// `file:line:col` (1-based) when the error is in a file.
    pub location: Option<(String, usize, usize)>,
    /// What is wrong and how to fix it, one line.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some((file, line, col)) => write!(f, "{file}:{line}:{col}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    fn plain(message: impl Into<String>) -> ConfigError {
        ConfigError {
            location: None,
            message: message.into(),
        }
    }
}

/// Where a value came from, to locate errors found after parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File {
        path: String,
        line: usize,
        col: usize,
    },
    Flag(&'static str),
}

impl Origin {
    fn error(&self, message: String) -> ConfigError {
        match self {
            Origin::File { path, line, col } => ConfigError {
                location: Some((path.clone(), *line, *col)),
                message,
            },
            Origin::Flag(flag) => ConfigError::plain(format!("{flag}: {message}")),
        }
    }
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
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

/// A size, duration or snaplen as written: a string or an integer. Read as a
/// plain TOML value so a wrong type gets our message, not serde's.
type NumOrText = toml::Value;

fn type_name(v: &toml::Value) -> &'static str {
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

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    capture: RawCapture,
    #[serde(default)]
    ring: RawRing,
    #[serde(default)]
    output: RawOutput,
    #[serde(default)]
    logs: RawLogs,
    #[serde(default)]
    packs: Vec<Spanned<String>>,
    #[serde(default)]
    trigger: Vec<RawTrigger>,
    #[serde(default)]
    packet_trigger: Vec<crate::packet_triggers::PacketTriggerDef>,
    #[serde(default)]
    perftest: RawPerftest,
    #[serde(default)]
    spool: crate::deliver::SpoolConfig,
    upload: Option<crate::deliver::UploadConfig>,
    api: Option<crate::api::ApiConfig>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPerftest {
    bw_below: Option<Spanned<String>>,
    lat_above: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCapture {
    interfaces: Option<Vec<Spanned<String>>>,
    filter: Option<Spanned<String>>,
    snaplen: Option<Spanned<NumOrText>>,
    buffer_size: Option<Spanned<NumOrText>>,
    promiscuous: Option<bool>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRing {
    memory_limit: Option<Spanned<NumOrText>>,
    max_age: Option<Spanned<NumOrText>>,
    block_size: Option<Spanned<NumOrText>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    dir: Option<Spanned<String>>,
    max_window: Option<Spanned<NumOrText>>,
    reports: Option<bool>,
    sysfs_root: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLogs {
    paths: Option<Vec<Spanned<String>>>,
    max_line_bytes: Option<Spanned<NumOrText>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrigger {
    name: Spanned<String>,
    class: Option<String>,
    pattern: Option<Spanned<String>>,
    #[serde(default)]
    patterns: Vec<Spanned<String>>,
    #[serde(default)]
    unless: Vec<Spanned<String>>,
    pre: Option<Spanned<NumOrText>>,
    post: Option<Spanned<NumOrText>>,
    cooldown: Option<Spanned<NumOrText>>,
}

/// What to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureConfig {
    /// Interfaces (one capture thread each).
    pub interfaces: Vec<String>,
    /// BPF filter.
    pub filter: String,
    /// Snapshot length (bytes per packet kept).
    pub snaplen: u32,
    /// Kernel buffer per interface, bytes.
    pub buffer_size: u32,
    /// Promiscuous mode.
    pub promiscuous: bool,
}

/// Bounds of the ring.
#[derive(Debug, Clone, PartialEq)]
pub struct RingSettings {
    /// Bytes of packet blocks, including those held by captures being written.
    pub memory_limit: u64,
    /// Blocks older than this are dropped even with memory left (raised to the largest `pre`).
    pub max_age: Duration,
    /// Bytes per block.
    pub block_size: u64,
}

/// Where captures go.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputConfig {
    /// Output directory.
    pub dir: PathBuf,
    /// Longest a window may grow by merging triggers.
    pub max_window: Duration,
    /// Write `<stem>.summary.json` and `<stem>.svg` beside every capture.
    pub reports: bool,
    /// Where RDMA counters are read (`<root>/class/infiniband/...`); tests point it at a fake tree.
    pub sysfs_root: PathBuf,
}

/// Which logs to follow.
#[derive(Debug, Clone, PartialEq)]
pub struct LogsConfig {
    /// Globs of log files (`-` for stdin).
    pub paths: Vec<String>,
    /// Lines longer than this are cut.
    pub max_line_bytes: u64,
}

/// The whole, checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Capture settings.
    pub capture: CaptureConfig,
    /// Ring bounds.
    pub ring: RingSettings,
    /// Output.
    pub output: OutputConfig,
    /// Log sources.
    pub logs: LogsConfig,
    /// Built-in trigger packs enabled.
    pub packs: Vec<String>,
    /// User triggers.
    pub triggers: Vec<TriggerDef>,
    /// `[[packet_trigger]]`: triggers on the packets themselves (see `packet_triggers`).
    pub packet_triggers: Vec<crate::packet_triggers::PacketTriggerDef>,
    /// `[perftest]` thresholds: a perftest result row that breaks one fires
    /// `perftest-threshold` (see `matcher`).
    pub perftest: Option<Thresholds>,
    /// `[spool]`: bound of the output directory.
    pub spool: crate::deliver::SpoolConfig,
    /// `[upload]`: where captures are sent, when set.
    pub upload: Option<crate::deliver::UploadConfig>,
    /// `[api]`: the agent's HTTP API, when set.
    pub api: Option<crate::api::ApiConfig>,
    origins: HashMap<(String, usize), Origin>,
    unless_origins: HashMap<(String, usize), Origin>,
    filter_origin: Origin,
    pack_origins: Vec<Origin>,
    /// `--pre` / `--post`: applied to every trigger, the built-in packs' included.
    window_flags: (Option<Duration>, Option<Duration>),
}

impl Default for Config {
    fn default() -> Config {
        Config {
            capture: CaptureConfig {
                interfaces: Vec::new(),
                filter: DEFAULT_FILTER.to_string(),
                snaplen: 128,
                buffer_size: 64 << 20,
                promiscuous: false,
            },
            ring: RingSettings {
                memory_limit: 1 << 30,
                max_age: Duration::from_secs(15 * 60),
                block_size: 256 << 10,
            },
            output: OutputConfig {
                dir: PathBuf::from("/var/lib/tripcap"),
                max_window: Duration::from_secs(10 * 60),
                reports: true,
                sysfs_root: PathBuf::from("/sys"),
            },
            logs: LogsConfig {
                paths: Vec::new(),
                max_line_bytes: 64 << 10,
            },
            packs: Vec::new(),
            triggers: Vec::new(),
            packet_triggers: Vec::new(),
            perftest: None,
            spool: Default::default(),
            upload: None,
            api: None,
            origins: HashMap::new(),
            unless_origins: HashMap::new(),
            filter_origin: Origin::Flag("default filter"),
            pack_origins: Vec::new(),
            window_flags: (None, None),
        }
    }
}

/// Reads values with their location.
struct Reader<'a> {
    path: &'a str,
    text: &'a str,
}

impl Reader<'_> {
    fn origin(&self, span: Range<usize>) -> Origin {
        let (line, col) = line_col(self.text, span.start);
        Origin::File {
            path: self.path.to_string(),
            line,
            col,
        }
    }
    fn err<T>(&self, span: Range<usize>, message: String) -> Result<T, ConfigError> {
        Err(self.origin(span).error(message))
    }
    fn duration(&self, v: &Spanned<NumOrText>, key: &str) -> Result<Duration, ConfigError> {
        match v.get_ref() {
            toml::Value::String(t) => {
                parse_duration(t).or_else(|m| self.err(v.span(), format!("`{key}`: {m}")))
            }
            toml::Value::Integer(n) => self.err(
                v.span(),
                format!("`{key}` = {n} has no unit: write \"{n}s\" (or \"{n}ms\", \"{n}m\")"),
            ),
            other => self.err(
                v.span(),
                format!(
                    "`{key}` must be a duration like \"30s\", not {}",
                    type_name(other)
                ),
            ),
        }
    }
    fn size(&self, v: &Spanned<NumOrText>, key: &str) -> Result<u64, ConfigError> {
        match v.get_ref() {
            toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
            toml::Value::Integer(n) => {
                self.err(v.span(), format!("`{key}` = {n} must not be negative"))
            }
            toml::Value::String(t) => {
                parse_size(t).or_else(|m| self.err(v.span(), format!("`{key}`: {m}")))
            }
            other => self.err(
                v.span(),
                format!(
                    "`{key}` must be a size like \"1GiB\" or a number of bytes, not {}",
                    type_name(other)
                ),
            ),
        }
    }
}

/// Set a trigger's `pre`/`post` from `--pre`/`--post` where given.
fn apply_window_flags(t: &mut TriggerDef, (pre, post): (Option<Duration>, Option<Duration>)) {
    if let Some(pre) = pre {
        t.pre = pre;
    }
    if let Some(post) = post {
        t.post = post;
    }
}

impl Config {
    /// Read and check a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| ConfigError::plain(format!("cannot read config `{shown}`: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            ConfigError::plain(format!(
                "config `{shown}` is not UTF-8 (first bad byte at offset {}): save it as UTF-8",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Config::parse(&shown, &text)
    }

    /// Parse config `text` (named `path` in errors).
    pub fn parse(path: &str, text: &str) -> Result<Config, ConfigError> {
        let r = Reader { path, text };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            match e.span() {
                Some(span) => r.origin(span).error(message),
                None => ConfigError::plain(format!("{path}: {message}")),
            }
        })?;
        let mut c = Config::default();
        if let Some(ifs) = raw.capture.interfaces {
            c.capture.interfaces = ifs.into_iter().map(Spanned::into_inner).collect();
        }
        if let Some(f) = raw.capture.filter {
            c.filter_origin = r.origin(f.span());
            c.capture.filter = f.into_inner();
        }
        if let Some(s) = &raw.capture.snaplen {
            let text = match s.get_ref() {
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::String(t) => t.clone(),
                other => {
                    return r.err(
                        s.span(),
                        format!(
                            "`snaplen` must be a number of bytes or \"full\", not {}",
                            type_name(other)
                        ),
                    )
                }
            };
            c.capture.snaplen = parse_snaplen(&text).or_else(|m| r.err(s.span(), m))?;
        }
        if let Some(b) = &raw.capture.buffer_size {
            let size = r.size(b, "buffer_size")?;
            c.capture.buffer_size = u32::try_from(size)
                .or_else(|_| r.err(b.span(), "`buffer_size` must be below 4GiB".into()))?;
        }
        if let Some(p) = raw.capture.promiscuous {
            c.capture.promiscuous = p;
        }
        if let Some(m) = &raw.ring.memory_limit {
            c.ring.memory_limit = r.size(m, "memory_limit")?;
        }
        if let Some(a) = &raw.ring.max_age {
            c.ring.max_age = r.duration(a, "max_age")?;
        }
        if let Some(b) = &raw.ring.block_size {
            c.ring.block_size = r.size(b, "block_size")?;
            if c.ring.block_size < 4096 {
                return r.err(b.span(), "`block_size` must be at least 4KiB".into());
            }
        }
        if let Some(d) = raw.output.dir {
            c.output.dir = PathBuf::from(d.into_inner());
        }
        if let Some(r) = raw.output.reports {
            c.output.reports = r;
        }
        if let Some(root) = raw.output.sysfs_root {
            c.output.sysfs_root = PathBuf::from(root);
        }
        if let Some(w) = &raw.output.max_window {
            c.output.max_window = r.duration(w, "max_window")?;
        }
        if let Some(p) = raw.logs.paths {
            c.logs.paths = p.into_iter().map(Spanned::into_inner).collect();
        }
        if let Some(m) = &raw.logs.max_line_bytes {
            c.logs.max_line_bytes = r.size(m, "max_line_bytes")?;
        }
        for p in raw.packs {
            c.pack_origins.push(r.origin(p.span()));
            c.packs.push(p.into_inner());
        }
        c.packet_triggers = raw.packet_trigger;
        for t in raw.trigger {
            let name = t.name.get_ref().clone();
            if name.trim().is_empty() {
                return r.err(
                    t.name.span(),
                    "trigger `name` is empty: give it a short name like \"nccl-watchdog\"".into(),
                );
            }
            let mut patterns = Vec::new();
            for p in t.pattern.into_iter().chain(t.patterns) {
                c.origins
                    .insert((name.clone(), patterns.len()), r.origin(p.span()));
                patterns.push(p.into_inner());
            }
            if patterns.is_empty() {
                return r.err(
                    t.name.span(),
                    format!("trigger `{name}` has no pattern: add `pattern = \"...\"` (a regex)"),
                );
            }
            let mut unless = Vec::new();
            for u in t.unless {
                c.unless_origins
                    .insert((name.clone(), unless.len()), r.origin(u.span()));
                unless.push(u.into_inner());
            }
            let mut def = TriggerDef::new(name, patterns);
            def.unless = unless;
            if let Some(class) = t.class {
                def.class = class;
            }
            if let Some(v) = &t.pre {
                def.pre = r.duration(v, "pre")?;
            }
            if let Some(v) = &t.post {
                def.post = r.duration(v, "post")?;
            }
            if let Some(v) = &t.cooldown {
                def.cooldown = r.duration(v, "cooldown")?;
            }
            c.triggers.push(def);
        }
        if raw.perftest.bw_below.is_some() || raw.perftest.lat_above.is_some() {
            let mut t = Thresholds::default();
            if let Some(b) = &raw.perftest.bw_below {
                t.bw_below_gbps = Some(
                    tripcap_triggers::perftest::parse_bandwidth(b.get_ref())
                        .or_else(|e| r.err(b.span(), format!("`bw_below`: {e}")))?,
                );
            }
            if let Some(l) = &raw.perftest.lat_above {
                t.lat_above_us = Some(
                    tripcap_triggers::perftest::parse_latency(l.get_ref())
                        .or_else(|e| r.err(l.span(), format!("`lat_above`: {e}")))?,
                );
            }
            c.perftest = Some(t);
        }
        c.spool = raw.spool;
        c.upload = raw.upload;
        c.api = raw.api;
        c.check_static()?;
        Ok(c)
    }

    /// Apply the quick flags (they win over the file).
    pub fn apply(&mut self, flags: &QuickFlags) {
        if !flags.interfaces.is_empty() {
            self.capture.interfaces = flags.interfaces.clone();
        }
        if let Some(f) = &flags.filter {
            self.capture.filter = f.clone();
            self.filter_origin = Origin::Flag("--filter");
        }
        if let Some(s) = flags.snaplen {
            self.capture.snaplen = s;
        }
        if let Some(m) = flags.memory_limit {
            self.ring.memory_limit = m;
        }
        if let Some(o) = &flags.out {
            self.output.dir = o.clone();
        }
        if !flags.logs.is_empty() {
            self.logs.paths = flags.logs.clone();
        }
        for (i, p) in flags.patterns.iter().enumerate() {
            let name = if flags.patterns.len() == 1 {
                "pattern".to_string()
            } else {
                format!("pattern-{}", i + 1)
            };
            self.origins
                .insert((name.clone(), 0), Origin::Flag("--pattern"));
            self.triggers.push(TriggerDef::new(name, vec![p.clone()]));
        }
        if flags.pre.is_some() {
            self.window_flags.0 = flags.pre;
        }
        if flags.post.is_some() {
            self.window_flags.1 = flags.post;
        }
        let window_flags = self.window_flags;
        for t in &mut self.triggers {
            apply_window_flags(t, window_flags);
        }
    }

    fn check_static(&self) -> Result<(), ConfigError> {
        self.trigger_set().map(|_| ())
    }

    /// Every trigger (built-in packs, then user triggers), compiled. Errors name
    /// the pattern's location.
    pub fn trigger_set(&self) -> Result<TriggerSet, ConfigError> {
        let mut defs = Vec::new();
        for (i, pack) in self.packs.iter().enumerate() {
            match builtin_pack(pack) {
                Some(p) => defs.extend(p),
                None => {
                    let msg = format!(
                        "unknown trigger pack `{pack}`: known packs are {}",
                        known_packs().join(", ")
                    );
                    return Err(self.pack_origins.get(i).map_or_else(
                        || ConfigError::plain(msg.clone()),
                        |o| o.error(msg.clone()),
                    ));
                }
            }
        }
        // Packs are expanded here, after the flags were applied: give them the flags too.
        for d in &mut defs {
            apply_window_flags(d, self.window_flags);
        }
        defs.extend(self.triggers.iter().cloned());
        TriggerSet::new(defs).map_err(|e| match &e {
            tripcap_triggers::Error::BadPattern { trigger, index, .. } => {
                match self.origins.get(&(trigger.clone(), *index)) {
                    Some(o) => o.error(format!(
                        "{e}: fix the regex (syntax: https://docs.rs/regex/#syntax)"
                    )),
                    None => ConfigError::plain(e.to_string()),
                }
            }
            tripcap_triggers::Error::BadUnless { trigger, index, .. } => {
                match self.unless_origins.get(&(trigger.clone(), *index)) {
                    Some(o) => o.error(format!(
                        "{e}: fix the regex (syntax: https://docs.rs/regex/#syntax)"
                    )),
                    None => ConfigError::plain(e.to_string()),
                }
            }
            _ => ConfigError::plain(e.to_string()),
        })
    }

    /// The ring's age bound: at least the largest `pre` of any trigger.
    pub fn effective_max_age(&self, set: &TriggerSet) -> Duration {
        set.defs()
            .iter()
            .map(|d| d.pre)
            .fold(self.ring.max_age, Duration::max)
    }

    /// Check everything that can be checked without capturing: triggers, the
    /// BPF filter, the output directory, the log globs.
    pub fn check(&self) -> Result<Vec<String>, ConfigError> {
        let set = self.trigger_set()?;
        capture::check_filter(&self.capture.filter, self.capture.snaplen)
            .map_err(|e| self.filter_origin.error(e.to_string()))?;
        let mut notes = Vec::new();
        if let Some(upload) = &self.upload {
            match crate::deliver::check_upload(upload) {
                Ok(()) => {}
                // The agent's environment may differ from the one `check` runs in.
                Err(e @ crate::deliver::UploadError::UnsetEnv(_)) => {
                    notes.push(format!("{e} (needed when the agent runs)"))
                }
                Err(e) => return Err(ConfigError::plain(e.to_string())),
            }
        }
        if self.capture.interfaces.is_empty() {
            notes.push(
                "no interface configured: set `capture.interfaces` or pass `-i IFACE`".to_string(),
            );
        } else if let Ok(devices) = pcap::Device::list() {
            // A note, not an error: a config is often checked on another machine.
            for iface in &self.capture.interfaces {
                if !devices.iter().any(|d| &d.name == iface) {
                    notes.push(format!(
                        "interface `{iface}` is not on this machine (`tripcap interfaces` lists those that are)"
                    ));
                }
            }
        }
        for p in &self.logs.paths {
            if p != "-" {
                glob::Pattern::new(p).map_err(|e| {
                    ConfigError::plain(format!("log path `{p}` is not a valid glob: {e}"))
                })?;
            }
        }
        if set.is_empty() {
            notes
                .push("no trigger configured: captures happen only on manual triggers".to_string());
        }
        if self.capture.snaplen < 96 {
            notes.push(format!(
                "snaplen {} may cut RoCE headers behind VLAN/IPv6: 128 is safe",
                self.capture.snaplen
            ));
        }
        let available = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| mem_available(&t));
        if let Some(note) = available.and_then(|a| self.memory_note(a)) {
            notes.push(note);
        }
        Ok(notes)
    }

    /// A note when the ring and the kernel capture buffers need more memory
    /// than `available` bytes: the kernel would kill the agent, and every
    /// packet it holds, before the ring is full.
    pub fn memory_note(&self, available: u64) -> Option<String> {
        let interfaces = self.capture.interfaces.len().max(1) as u64;
        let buffers = u64::from(self.capture.buffer_size).saturating_mul(interfaces);
        let needed = self.ring.memory_limit.saturating_add(buffers);
        (needed > available).then(|| {
            format!(
                "ring.memory_limit ({} MiB) and the kernel capture buffers ({interfaces} × {} MiB) need {} MiB, but this machine has {} MiB available: lower ring.memory_limit (or capture.buffer_size), or the kernel may kill tripcap and every packet it holds",
                self.ring.memory_limit >> 20,
                self.capture.buffer_size >> 20,
                needed >> 20,
                available >> 20
            )
        })
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let n: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The quick flags of `tripcap run`.
#[derive(Debug, Clone, Default)]
pub struct QuickFlags {
    /// `-i`.
    pub interfaces: Vec<String>,
    /// `-f`.
    pub filter: Option<String>,
    /// `--log`.
    pub logs: Vec<String>,
    /// `--pattern`.
    pub patterns: Vec<String>,
    /// `--pre`.
    pub pre: Option<Duration>,
    /// `--post`.
    pub post: Option<Duration>,
    /// `-o`.
    pub out: Option<PathBuf>,
    /// `--memory-limit`.
    pub memory_limit: Option<u64>,
    /// `--snaplen`.
    pub snaplen: Option<u32>,
}

/// A built-in pack of triggers, if the triggers crate has it.
fn builtin_pack(name: &str) -> Option<Vec<TriggerDef>> {
    tripcap_triggers::pack(name)
}

fn known_packs() -> Vec<&'static str> {
    tripcap_triggers::PACK_NAMES.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Config::parse("t.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn full_example_parses() {
        let c = Config::parse(
            "t.toml",
            r#"
[capture]
interfaces = ["ens1f0np0", "ens2f0np0"]
snaplen = "full"
buffer_size = "128MiB"
[ring]
memory_limit = "2GiB"
[output]
dir = "/tmp/x"
[logs]
paths = ["/var/log/nccl/*.log"]
[[trigger]]
name = "wd"
pattern = "Watchdog caught collective operation timeout"
pre = "10s"
post = "5s"
"#,
        )
        .expect("parses");
        assert_eq!(c.capture.interfaces, vec!["ens1f0np0", "ens2f0np0"]);
        assert_eq!(c.capture.snaplen, crate::units::FULL_SNAPLEN);
        assert_eq!(c.capture.buffer_size, 128 << 20);
        assert_eq!(c.ring.memory_limit, 2 << 30);
        assert_eq!(c.triggers[0].pre, Duration::from_secs(10));
        assert_eq!(c.triggers[0].post, Duration::from_secs(5));
    }

    #[test]
    fn errors_name_line_and_column_and_the_fix() {
        assert_eq!(
            err("[[trigger]]\nname = \"x\"\npattern = \"a(b\"\n"),
            "t.toml:3:11: trigger `x`: pattern 0 is not a valid regex: unclosed group (in `a(b`): fix the regex (syntax: https://docs.rs/regex/#syntax)"
        );
        assert_eq!(
            err("[[trigger]]\nname = \"x\"\npattern = \"a\"\npre = 30\n"),
            "t.toml:4:7: `pre` = 30 has no unit: write \"30s\" (or \"30ms\", \"30m\")"
        );
        assert_eq!(
            err("[[trigger]]\nname = \"x\"\npattern = \"a\"\npost = \"30\"\n"),
            "t.toml:4:8: `post`: \"30\" has no unit: write \"30s\" (or \"30ms\", \"30m\")"
        );
        assert_eq!(
            err("[ring]\nmemory_limit = \"lots\"\n"),
            "t.toml:2:16: `memory_limit`: \"lots\" is not a size: write e.g. \"64MiB\", \"1GiB\" (binary) or \"500MB\" (decimal)"
        );
        let unknown = err("[capture]\ninterface = [\"x\"]\n");
        assert!(
            unknown.starts_with("t.toml:2:1: unknown field `interface`"),
            "{unknown}"
        );
        let wrong_type = err("[capture]\ninterfaces = \"eth0\"\n");
        assert!(
            wrong_type
                .starts_with("t.toml:2:14: invalid type: string \"eth0\", expected a sequence"),
            "{wrong_type}"
        );
        assert_eq!(
            err("[capture]\nsnaplen = 20\n"),
            "t.toml:2:11: snaplen 20 is too short to hold the RoCE headers: use at least 64 (default 128), or \"full\""
        );
        assert_eq!(
            err("[[trigger]]\nname = \"x\"\n"),
            "t.toml:2:8: trigger `x` has no pattern: add `pattern = \"...\"` (a regex)"
        );
    }

    #[test]
    fn unless_and_perftest_thresholds_parse_and_errors_are_located() {
        let c = Config::parse(
            "t.toml",
            "[perftest]\nbw_below = \"40Gb/s\"\nlat_above = \"10us\"\n[[trigger]]\nname = \"x\"\npattern = \"boom\"\nunless = [\"harmless boom\"]\n",
        )
        .expect("parses");
        assert_eq!(c.triggers[0].unless, vec!["harmless boom".to_string()]);
        let t = c.perftest.expect("thresholds");
        assert_eq!((t.bw_below_gbps, t.lat_above_us), (Some(40.0), Some(10.0)));
        let set = c.trigger_set().expect("valid");
        let mut out = Vec::new();
        assert!(set.match_line(b"a boom", &mut out));
        assert!(!set.match_line(b"a harmless boom", &mut out));
        assert_eq!(
            err("[[trigger]]\nname = \"x\"\npattern = \"a\"\nunless = [\"b(\"]\n"),
            "t.toml:4:11: trigger `x`: unless pattern 0 is not a valid regex: unclosed group (in `b(`): fix the regex (syntax: https://docs.rs/regex/#syntax)"
        );
        let e = err("[perftest]\nbw_below = \"40\"\n");
        assert!(
            e.starts_with("t.toml:2:12: `bw_below`: bandwidth threshold `40`: no unit"),
            "{e}"
        );
    }

    #[test]
    fn bad_filter_is_located() {
        let c = Config::parse("t.toml", "[capture]\nfilter = \"udp prot 4791\"\n").expect("parses");
        let e = c.check().unwrap_err().to_string();
        assert!(
            e.starts_with("t.toml:2:10: bad capture filter `udp prot 4791`:"),
            "{e}"
        );
    }

    #[test]
    fn memory_beyond_what_is_available_is_noted_with_the_fix() {
        assert_eq!(
            mem_available("MemTotal:       24684544 kB\nMemAvailable:   18190336 kB\n"),
            Some(18_190_336 * 1024)
        );
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        let c = Config::parse(
            "m.toml",
            "[capture]\ninterfaces = [\"a\", \"b\"]\nbuffer_size = \"64MiB\"\n[ring]\nmemory_limit = \"1GiB\"\n",
        )
        .expect("parses");
        assert_eq!(
            c.memory_note(2 << 30),
            None,
            "1 GiB + 2 × 64 MiB fits in 2 GiB"
        );
        assert_eq!(
            c.memory_note(1 << 30).as_deref(),
            Some("ring.memory_limit (1024 MiB) and the kernel capture buffers (2 × 64 MiB) need 1152 MiB, but this machine has 1024 MiB available: lower ring.memory_limit (or capture.buffer_size), or the kernel may kill tripcap and every packet it holds")
        );
    }

    #[test]
    fn flags_win_and_add_triggers() {
        let mut c = Config::parse(
            "t.toml",
            "[capture]\ninterfaces=[\"a\"]\n[[trigger]]\nname=\"x\"\npattern=\"y\"\n",
        )
        .expect("parses");
        c.apply(&QuickFlags {
            interfaces: vec!["b".into()],
            patterns: vec!["z(".into()],
            pre: Some(Duration::from_secs(3)),
            ..Default::default()
        });
        assert_eq!(c.capture.interfaces, vec!["b"]);
        assert!(c.triggers.iter().all(|t| t.pre == Duration::from_secs(3)));
        // The built-in packs get them too, whether listed before or after the flags.
        let mut packs = Config::parse("p.toml", "packs = [\"nccl\"]\n").expect("parses");
        packs.apply(&QuickFlags {
            pre: Some(Duration::from_secs(3)),
            post: Some(Duration::from_secs(4)),
            ..Default::default()
        });
        packs.packs.push("pytorch".into());
        let set = packs.trigger_set().expect("set");
        assert!(set.defs().len() > 2);
        for d in set.defs() {
            assert_eq!(
                (d.pre, d.post),
                (Duration::from_secs(3), Duration::from_secs(4)),
                "{}",
                d.name
            );
        }
        let e = c.trigger_set().unwrap_err().to_string();
        assert!(
            e.starts_with("--pattern: trigger `pattern`: pattern 0 is not a valid regex"),
            "{e}"
        );
    }
}
