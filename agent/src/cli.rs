//! The command line: flags only. Each subcommand's work lives in its module
//! (`agent`, `demo`, `interfaces`, `analyze`); `main.rs` dispatches.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::capture::replay::Speed;
use crate::config::QuickFlags;

/// tripcap: a flight recorder for RDMA (RoCE) networks.
///
/// Keeps the last seconds of RoCE packet headers in memory and, when a training
/// job's log says it failed, writes the packets around that moment to a pcapng
/// file with a JSON sidecar saying why.
#[derive(Debug, Parser)]
#[command(name = "tripcap", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// More logging (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// For people.
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Capture into the ring and write windows when triggers fire.
    Run(RunArgs),
    /// Check a configuration (and quick flags) without capturing.
    Check(CheckArgs),
    /// List capture devices and RDMA devices, and what can be captured.
    Interfaces,
    /// Run the whole path on loopback with generated RoCE traffic (no RDMA NIC needed).
    Demo(DemoArgs),
    /// Read a capture file and report on its RoCE traffic.
    Analyze(crate::analyze::AnalyzeArgs),
    /// Receive captures from agents and show them on a web page.
    Collect(CollectArgs),
    /// Try triggers on existing logs, or list the built-in packs.
    Triggers(TriggersArgs),
    /// Run a job as a child, pass its output through and capture when it fails.
    ///
    /// Takes the flags of `run`; the job follows `--`. Without `-i`/`--from-pcap`
    /// (or without permission to capture) the job still runs unchanged and
    /// matching lines are only logged. Exits with the job's status.
    Wrap(WrapArgs),
    /// Write a synthetic RoCE v2 capture (for tests, benchmarks and pipelines).
    Generate(GenerateArgs),
    /// Is this node ready to record? Checks config, interfaces, a loopback burst
    /// through the whole path, output, logs, upload and memory; exits 0 when ready.
    Selftest(SelftestArgs),
    /// Show or export the baseline: what this host's traffic normally looks like,
    /// kept by the agent (`[baseline]`).
    Baseline(BaselineArgs),
    /// Write a Wireshark configuration profile named `tripcap`: RoCE columns,
    /// colouring rules, I/O graphs and decode-as entries.
    WiresharkProfile(WiresharkProfileArgs),
}

/// `tripcap baseline`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BaselineCommand,
}

/// `tripcap baseline …` subcommands.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Print the profile: median and p99 of every metric, per interface and traffic class.
    Show(BaselineShowArgs),
    /// Write the profile as JSON to FILE (for `tripcap analyze --baseline FILE`).
    Export(BaselineExportArgs),
}

/// Where the baseline is and how far back to read it.
#[derive(Debug, Args, Clone)]
pub struct BaselineFrom {
    /// The agent's configuration: its `[baseline] dir`, else `<output.dir>/baseline`.
    #[arg(short = 'c', long, conflicts_with = "dir")]
    pub config: Option<PathBuf>,
    /// The history directory itself (default: /var/lib/tripcap/baseline).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Only intervals from this long ago (e.g. 24h); default: all the history keeps.
    #[arg(long, value_parser = crate::units::parse_duration)]
    pub since: Option<Duration>,
}

/// `tripcap baseline show`.
#[derive(Debug, Args)]
pub struct BaselineShowArgs {
    /// Where the baseline is.
    #[command(flatten)]
    pub from: BaselineFrom,
    /// Print the profile as JSON (what `export` writes).
    #[arg(long)]
    pub json: bool,
}

/// `tripcap baseline export`.
#[derive(Debug, Args)]
pub struct BaselineExportArgs {
    /// File to write (0600).
    pub file: PathBuf,
    /// Where the baseline is.
    #[command(flatten)]
    pub from: BaselineFrom,
}

/// `tripcap wireshark-profile`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["install", "out"])))]
pub struct WiresharkProfileArgs {
    /// Install it among Wireshark's profiles ($XDG_CONFIG_HOME/wireshark/profiles,
    /// else ~/.config/wireshark/profiles; ~/.wireshark/profiles where only that exists).
    #[arg(long)]
    pub install: bool,
    /// Write it as DIR/tripcap/ instead.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A UDP port other than 4791 that carries RoCE v2 in your captures (repeatable):
    /// the profile decodes it as RoCE v2. tripcap's own config has no such setting.
    #[arg(long = "roce-port", value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub roce_ports: Vec<u16>,
}

/// `tripcap selftest`.
#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// Configuration file (TOML).
    #[arg(short = 'c', long)]
    pub config: Option<PathBuf>,
    /// Quick flags, as `run` takes them.
    #[command(flatten)]
    pub quick: QuickArgs,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The quick flags shared by `run` and `check`.
#[derive(Debug, Args, Clone, Default)]
pub struct QuickArgs {
    /// Interface to capture on (repeatable).
    #[arg(short = 'i', long = "interface")]
    pub interfaces: Vec<String>,
    /// BPF capture filter.
    #[arg(short = 'f', long)]
    pub filter: Option<String>,
    /// Log file glob to follow (repeatable; `-` for stdin).
    #[arg(long = "log")]
    pub logs: Vec<String>,
    /// Regex that fires a capture when a log line matches (repeatable).
    #[arg(long = "pattern")]
    pub patterns: Vec<String>,
    /// Time kept before a trigger (e.g. 30s); applies to every trigger.
    #[arg(long, value_parser = crate::units::parse_duration)]
    pub pre: Option<Duration>,
    /// Time kept after a trigger (e.g. 30s); applies to every trigger.
    #[arg(long, value_parser = crate::units::parse_duration)]
    pub post: Option<Duration>,
    /// Output directory.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Bytes of packet memory (e.g. 1GiB).
    #[arg(long, value_parser = crate::units::parse_size)]
    pub memory_limit: Option<u64>,
    /// Bytes kept per packet, or `full`.
    #[arg(long, value_parser = crate::units::parse_capture_snaplen)]
    pub snaplen: Option<crate::units::Snaplen>,
    /// Host name in incident ids, file names and uploads (default: the system's).
    #[arg(long)]
    pub host: Option<String>,
    /// Share incidents with the job's other nodes over this NATS server
    /// (`[fleet] nats`; e.g. nats://10.0.0.1:4222).
    #[arg(long)]
    pub nats: Option<String>,
    /// The job id for `--nats` (`[fleet] job`; default $SLURM_JOB_ID).
    #[arg(long)]
    pub job: Option<String>,
}

impl QuickArgs {
    /// As config overrides.
    pub fn flags(&self) -> QuickFlags {
        QuickFlags {
            interfaces: self.interfaces.clone(),
            filter: self.filter.clone(),
            logs: self.logs.clone(),
            patterns: self.patterns.clone(),
            pre: self.pre,
            post: self.post,
            out: self.out.clone(),
            memory_limit: self.memory_limit,
            snaplen: self.snaplen,
            host: self.host.clone(),
            nats: self.nats.clone(),
            job: self.job.clone(),
        }
    }
}

/// `tripcap run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Configuration file (TOML); quick flags win over it.
    #[arg(short = 'c', long)]
    pub config: Option<PathBuf>,
    /// Quick flags.
    #[command(flatten)]
    pub quick: QuickArgs,
    /// Replay this capture through the ring instead of capturing live (repeatable: one interface each).
    #[arg(long = "from-pcap")]
    pub from_pcap: Vec<PathBuf>,
    /// Replay speed: `max` or `1x`.
    #[arg(long, default_value = "max")]
    pub speed: Speed,
    /// Fire a trigger when the replay reaches this capture time (RFC 3339 or epoch seconds; repeatable): `TIME` fires the manual trigger, `NAME=TIME` the trigger named NAME with its own window and cooldown.
    #[arg(long = "trigger-at", value_parser = parse_trigger_at)]
    pub trigger_at: Vec<crate::agent::TriggerAt>,
    /// With `--from-pcap` and `[upload]`: wait this long for the captures to be uploaded before exiting (e.g. 3m).
    #[arg(long, value_parser = crate::units::parse_duration)]
    pub upload_wait: Option<Duration>,
}

impl RunArgs {
    /// What `run` (and `wrap`) pass to the agent beyond the config.
    pub fn options(&self) -> crate::agent::RunOptions {
        crate::agent::RunOptions {
            replay: self.from_pcap.clone(),
            speed: self.speed,
            trigger_at: self.trigger_at.clone(),
            manual_window: Some((
                self.quick.pre.unwrap_or(tripcap_triggers::DEFAULT_PRE),
                self.quick.post.unwrap_or(tripcap_triggers::DEFAULT_POST),
            )),
            upload_wait: self.upload_wait,
            linger: None,
        }
    }
}

/// `tripcap check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Configuration file (TOML).
    #[arg(short = 'c', long)]
    pub config: Option<PathBuf>,
    /// Quick flags, checked the same way.
    #[command(flatten)]
    pub quick: QuickArgs,
}

/// `tripcap collect`.
#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, default_value = "127.0.0.1:9480")]
    pub listen: std::net::SocketAddr,
    /// Where captures are stored (`<incident>/<host>/<file>`).
    #[arg(long, required_unless_present = "store", conflicts_with = "store")]
    pub dir: Option<PathBuf>,
    /// Keep captures in a bucket instead (`s3://BUCKET/PREFIX`: `PREFIX/<incident>/<host>/<file>`,
    /// the layout agents uploading to `s3://BUCKET/PREFIX/{incident}/{host}/{file}` write); keys
    /// from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws (AWS_PROFILE).
    #[arg(long, value_name = "S3_URL")]
    pub store: Option<String>,
    /// The bucket's endpoint (Ceph RGW, MinIO: `http://rgw:7480`); else AWS_ENDPOINT_URL_S3,
    /// AWS_ENDPOINT_URL, the profile's, AWS.
    #[arg(long, value_name = "URL", requires = "store")]
    pub endpoint: Option<String>,
    /// The bucket's region (else AWS_REGION, the profile's, us-east-1).
    #[arg(long, value_name = "REGION", requires = "store")]
    pub region: Option<String>,
    /// Name of the environment variable holding the bearer token uploads must carry.
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// Largest file accepted (`64GiB`, `500MiB`…); larger ones are refused with 413.
    #[arg(long, value_name = "SIZE", default_value = "64GiB", value_parser = crate::units::parse_size)]
    pub max_file_size: u64,
}

/// `tripcap demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to write the demo's capture.
    #[arg(short = 'o', long = "out", default_value = "tripcap-demo")]
    pub out: PathBuf,
    /// Don't try to capture live: replay the generated traffic.
    #[arg(long)]
    pub replay: bool,
}

/// `tripcap generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Output pcap file.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Number of packets.
    #[arg(long, default_value_t = 1_000_000)]
    pub packets: u64,
    /// Bytes kept per packet.
    #[arg(long, default_value_t = 96)]
    pub snaplen: u32,
    /// Packets per second (sets the timestamps).
    #[arg(long, default_value_t = 1_000_000)]
    pub rate: u64,
    /// Number of RC queue pairs.
    #[arg(long, default_value_t = 8)]
    pub flows: u32,
    /// The queue pairs interleave at random and do WRITEs with ACKs, some READs, CNPs
    /// and NAKs, with random payload bytes (else: WRITEs of 4 packets and ACKs, round
    /// robin, fixed payload).
    #[arg(long)]
    pub realistic: bool,
    /// Time of the first packet (RFC 3339 or epoch seconds; default now).
    #[arg(long, value_parser = parse_time)]
    pub start: Option<i64>,
}

/// `tripcap triggers`.
#[derive(Debug, Args)]
pub struct TriggersArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TriggersCommand,
}

/// `tripcap triggers …` subcommands.
#[derive(Debug, Subcommand)]
pub enum TriggersCommand {
    /// Dry run over existing log files: report every line that fires.
    Test(TriggersTestArgs),
    /// List the built-in packs, their triggers, classes and example lines.
    List(TriggersListArgs),
}

/// `tripcap triggers test`.
#[derive(Debug, Args)]
pub struct TriggersTestArgs {
    /// Configuration file whose triggers (packs, `[[trigger]]`, `[perftest]`) to use;
    /// without it, every built-in pack.
    #[arg(short = 'c', long)]
    pub config: Option<PathBuf>,
    /// One JSON object per firing (`file`, `line_no`, `trigger`, `class`, `groups`).
    #[arg(long)]
    pub json: bool,
    /// Log files to read (`-` for stdin).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `tripcap triggers list`.
#[derive(Debug, Args)]
pub struct TriggersListArgs {
    /// Print only the patterns of every built-in trigger, one a line.
    #[arg(long)]
    pub patterns: bool,
}

/// `tripcap wrap`.
#[derive(Debug, Args)]
pub struct WrapArgs {
    /// The flags of `run`.
    #[command(flatten)]
    pub run: RunArgs,
    /// When the job exits with a capture open, stop at once instead of
    /// capturing until the capture's `post` has passed.
    #[arg(long)]
    pub no_linger: bool,
    /// The job and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// Parse a capture time: RFC 3339 (`2026-11-30T02:14:27.5Z`) or Unix epoch seconds (`1764468867.5`).
/// Parse `--trigger-at`: `TIME`, or `NAME=TIME`.
pub fn parse_trigger_at(text: &str) -> Result<crate::agent::TriggerAt, String> {
    let (trigger, time) = match text.split_once('=') {
        Some((name, time)) if !name.trim().is_empty() => (Some(name.trim().to_string()), time),
        Some(_) => return Err(format!("`{text}` has no trigger name before `=`: write NAME=TIME, or TIME alone for the manual trigger")),
        None => (None, text),
    };
    Ok(crate::agent::TriggerAt {
        trigger,
        at_ns: parse_time(time)?,
    })
}

/// Parse a time: RFC 3339, or seconds since the epoch.
pub fn parse_time(text: &str) -> Result<i64, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if (0.0..1e11).contains(&secs) {
            // Split to keep nanosecond precision for values like 1764468867.123456789.
            let (int, frac) = t.split_once('.').unwrap_or((t, ""));
            let whole: i64 = int.parse().map_err(|_| format!("`{t}` is not a time"))?;
            let mut digits: String = frac.chars().take(9).collect();
            while digits.len() < 9 {
                digits.push('0');
            }
            let nanos: i64 = digits.parse().unwrap_or(0);
            return Ok(whole * 1_000_000_000 + nanos);
        }
    }
    let parsed = humantime::parse_rfc3339_weak(t)
        .map_err(|e| format!("`{t}` is not a time ({e}): write RFC 3339 like 2026-11-30T02:14:27.5Z or epoch seconds like 1764468867.5"))?;
    parsed
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .map_err(|_| format!("`{t}` is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_with_nanoseconds() {
        assert_eq!(
            parse_time("1764468867.123456789"),
            Ok(1_764_468_867_123_456_789)
        );
        assert_eq!(parse_time("1764468867"), Ok(1_764_468_867_000_000_000));
        assert_eq!(parse_time("1970-01-01T00:00:01.5Z"), Ok(1_500_000_000));
        assert!(parse_time("yesterday").unwrap_err().contains("RFC 3339"));
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
