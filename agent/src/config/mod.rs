//! Configuration: the TOML file, the quick command-line flags, and checking both.
//!
//! Parsing happens in two steps. serde reads the file into `Raw*` structs whose
//! checked values are `toml::Spanned` (`located.rs`), so every error — a wrong
//! type, an unknown key, a duration without a unit, a regex that does not
//! compile, a taken trigger name, a BPF filter libpcap refuses — is reported as
//! `file:line:col: what is wrong: the fix` on one line ([`Error`], `error.rs`).
//! Then [`Config`] holds plain typed values (`validate.rs`, pure);
//! [`Config::check`] adds what only this machine can tell (`probe.rs`).
//! Sizes follow `bytesize`: `"64KiB"`/`"1GiB"` are binary, `"64k"`/`"1g"`
//! decimal; a bare integer is bytes. Durations follow `humantime` (`"30s"`,
//! `"15m"`, `"1h 30m"`).

mod error;
mod located;
mod probe;
mod validate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tripcap_triggers::perftest::Thresholds;
use tripcap_triggers::{TriggerDef, TriggerSet};

use crate::capture::DEFAULT_FILTER;

pub use error::{Error, ErrorKind, Location};
pub use probe::{available_memory, mem_available};

/// The configuration's error under its former name.
pub type ConfigError = Error;

/// What to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureConfig {
    /// Interfaces (one capture thread each).
    pub interfaces: Vec<String>,
    /// BPF filter.
    pub filter: String,
    /// Snapshot length (bytes per packet kept; [`crate::units::HEADERS_MAX`] with
    /// `headers_only`).
    pub snaplen: u32,
    /// `snaplen = "headers"` (the default): each packet is cut where its headers end.
    pub headers_only: bool,
    /// Whether the snaplen was set (config or flag) rather than left at its
    /// default: a replay cuts its packets only when it was.
    pub snaplen_set: bool,
    /// Kernel buffer per interface, bytes.
    pub buffer_size: u32,
    /// Promiscuous mode.
    pub promiscuous: bool,
}

impl CaptureConfig {
    /// Sets the snapshot length from `s`.
    pub fn set_snaplen(&mut self, s: crate::units::Snaplen) {
        use crate::units::Snaplen;
        (self.snaplen, self.headers_only) = match s {
            Snaplen::Bytes(n) => (n, false),
            Snaplen::Headers => (crate::units::HEADERS_MAX, true),
        };
        self.snaplen_set = true;
    }

    /// The snapshot length as written (`headers`, or bytes).
    pub fn snaplen_text(&self) -> String {
        if self.headers_only {
            "headers".to_string()
        } else {
            self.snaplen.to_string()
        }
    }
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
    /// Compress blocks older than the newest few (lossless; more history per GiB).
    pub compress: bool,
    /// Threads that compress (each about 300 ns of CPU a packet).
    pub compress_threads: usize,
    /// Packets per second the operator expects at peak: `tripcap check` says
    /// how many seconds the ring holds at this rate.
    pub expected_rate: u64,
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
    /// `[fleet]`: incidents shared across a job's nodes over NATS, when set.
    pub fleet: Option<crate::fleet::FleetConfig>,
    /// `[baseline]`: the history of healthy traffic the agent keeps.
    pub baseline: crate::baseline::BaselineConfig,
    /// `host`: the host name in incident ids, file names and uploads (default: the system's).
    pub host: Option<String>,
    /// (log trigger, pattern index) → where the pattern is.
    origins: HashMap<(String, usize), Location>,
    /// (log trigger, `unless` index) → where the pattern is.
    unless_origins: HashMap<(String, usize), Location>,
    /// Log trigger → where its name is.
    name_origins: HashMap<String, Location>,
    filter_origin: Location,
    /// Where each of `capture.interfaces` is (same order).
    interface_origins: Vec<Location>,
    pack_origins: Vec<Location>,
    /// Where each packet trigger's name is (same order as `packet_triggers`).
    packet_name_origins: Vec<Location>,
    /// `--pre` / `--post`: applied to every trigger, the built-in packs' included.
    window_flags: (Option<Duration>, Option<Duration>),
}

impl Default for Config {
    fn default() -> Config {
        Config {
            capture: CaptureConfig {
                interfaces: Vec::new(),
                filter: DEFAULT_FILTER.to_string(),
                snaplen: crate::units::HEADERS_MAX,
                headers_only: true,
                snaplen_set: false,
                buffer_size: 64 << 20,
                promiscuous: false,
            },
            ring: RingSettings {
                memory_limit: 1 << 30,
                max_age: Duration::from_secs(15 * 60),
                block_size: 256 << 10,
                compress: true,
                compress_threads: 1,
                expected_rate: 2_000_000,
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
            fleet: None,
            baseline: Default::default(),
            host: None,
            origins: HashMap::new(),
            unless_origins: HashMap::new(),
            name_origins: HashMap::new(),
            filter_origin: Location::Flag("default filter"),
            interface_origins: Vec::new(),
            pack_origins: Vec::new(),
            packet_name_origins: Vec::new(),
            window_flags: (None, None),
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
    pub fn load(path: &Path) -> Result<Config, Error> {
        let bytes = std::fs::read(path).map_err(|source| ErrorKind::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| ErrorKind::NotUtf8 {
            path: path.to_path_buf(),
            valid_up_to: e.utf8_error().valid_up_to(),
        })?;
        Config::parse(&path.display().to_string(), &text)
    }

    /// Parse config `text` (named `path` in errors).
    pub fn parse(path: &str, text: &str) -> Result<Config, Error> {
        let r = located::Reader { path, text };
        Config::from_raw(&r, r.raw()?)
    }

    /// Apply the quick flags (they win over the file).
    pub fn apply(&mut self, flags: &QuickFlags) {
        if !flags.interfaces.is_empty() {
            self.capture.interfaces = flags.interfaces.clone();
            self.interface_origins = vec![Location::Flag("-i"); flags.interfaces.len()];
        }
        if let Some(f) = &flags.filter {
            self.capture.filter = f.clone();
            self.filter_origin = Location::Flag("--filter");
        }
        if let Some(s) = flags.snaplen {
            self.capture.set_snaplen(s);
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
                .insert((name.clone(), 0), Location::Flag("--pattern"));
            self.name_origins
                .insert(name.clone(), Location::Flag("--pattern"));
            self.triggers.push(TriggerDef::new(name, vec![p.clone()]));
        }
        if let Some(h) = &flags.host {
            self.host = Some(h.clone());
        }
        if let Some(url) = &flags.nats {
            match &mut self.fleet {
                Some(f) => f.nats = vec![url.clone()],
                None => self.fleet = Some(crate::fleet::FleetConfig::new(url.clone())),
            }
        }
        if let (Some(job), Some(f)) = (&flags.job, &mut self.fleet) {
            f.job = Some(job.clone());
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

    /// The fleet's job id, checked (`[fleet] job` or `SLURM_JOB_ID`), when
    /// `[fleet]` is set.
    pub fn fleet_job(&self) -> Result<Option<String>, Error> {
        let Some(f) = &self.fleet else {
            return Ok(None);
        };
        f.check()
            .map(Some)
            .map_err(|message| ErrorKind::Fleet { message }.into())
    }

    /// The ring's age bound: at least the largest `pre` of any trigger.
    pub fn effective_max_age(&self, set: &TriggerSet) -> Duration {
        set.defs()
            .iter()
            .map(|d| d.pre)
            .fold(self.ring.max_age, Duration::max)
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
    pub snaplen: Option<crate::units::Snaplen>,
    /// `--host`.
    pub host: Option<String>,
    /// `--nats`: share incidents over this NATS server (`[fleet] nats`).
    pub nats: Option<String>,
    /// `--job`: the job id (`[fleet] job`).
    pub job: Option<String>,
}

#[cfg(test)]
mod tests;
