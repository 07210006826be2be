//! The agent: one [`Agent`], built part by part, that wires capture → ring →
//! recorder/windows and logs → triggers → recorder, and owns nothing else.
//!
//! [`AgentBuilder::start`] checks what can be checked (triggers, filter,
//! output directory, replay files), then starts the parts in order: the API
//! and delivery, the capture sources, the ring's prefault thread, the
//! recorder, the packet triggers, the log path. Triggers are registered in
//! one [`TriggerTable`], so each part names its triggers by [`TriggerId`].
//! Every thread and task goes through one [`Tasks`] (a task tracker and a
//! cancellation token): if a later part fails to start (a second interface
//! that does not open, a thread that cannot be created), everything already
//! started is stopped before the error is returned.
//!
//! [`Agent::run`] waits for `shutdown` (live) or the end of the replay, then
//! tears down in one place: optionally linger while a capture is open, cancel
//! the token (capture threads seal their last block and set their watermark
//! to the end, so every open window closes with what it holds), wait for
//! every thread and task, and let delivery finish. Nothing captured is lost
//! and nothing is kept per capture: outcomes go to the caller's channel and
//! are only counted here.

mod lines;
mod outcomes;
mod output;
mod start;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{Receiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::capture::replay::{ReplayReport, Speed};
use crate::capture::CaptureError;
use crate::config::{Config, ConfigError};
use crate::follow::LogLine;
use crate::recorder::Recorder;
use crate::tasks::Tasks;
use crate::window::CaptureOutcome;
use outcomes::Counts;

pub use lines::LINGER_SLACK;
pub use output::{host_name, prepare_output};

/// Name of the trigger `--trigger-at` and the API fire.
pub const MANUAL_TRIGGER: &str = "manual";

/// How to run beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Replay these files instead of capturing live.
    pub replay: Vec<PathBuf>,
    /// Replay speed.
    pub speed: Speed,
    /// Triggers fired when the replay reaches these capture times (ns since
    /// the epoch): the manual trigger, or a named one.
    pub trigger_at: Vec<TriggerAt>,
    /// Window of manual triggers: (pre, post).
    pub manual_window: Option<(Duration, Duration)>,
    /// Replays: wait up to this long for uploads before returning (`--upload-wait`;
    /// `None` means [`crate::deliver::DEFAULT_UPLOAD_WAIT`]).
    pub upload_wait: Option<Duration>,
    /// Once `shutdown` is cancelled, keep capturing while captures are open
    /// (at most the longest `post` + [`LINGER_SLACK`]), unless this token is
    /// cancelled too: `wrap` after its job exits, so a failure printed just
    /// before the exit still gets its `post`. `None`: stop at once.
    pub linger: Option<CancellationToken>,
}

/// A trigger fired at a capture time of a replay (`--trigger-at [NAME=]TIME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerAt {
    /// The trigger's name; `None` is the manual trigger.
    pub trigger: Option<String>,
    /// Capture time, ns since the epoch.
    pub at_ns: i64,
}

/// What a run did. Captures themselves go to [`AgentBuilder::outcomes`] as
/// they are written; a run that writes thousands keeps none of them.
#[derive(Debug, Default)]
pub struct RunSummary {
    /// Captures written.
    pub written: u64,
    /// Captures that failed.
    pub failed: u64,
    /// The replay, when it was one.
    pub replay: Option<ReplayReport>,
}

/// Errors that stop the agent from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A capture source could not be opened.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// The output directory is unusable.
    #[error("output directory `{path}`: {message}")]
    Output {
        /// Directory.
        path: String,
        /// What is wrong and the fix.
        message: String,
    },
    /// Log following could not start.
    #[error("{0}")]
    Follow(String),
    /// Nothing to capture from.
    #[error("nothing to capture: pass `-i IFACE` (see `tripcap interfaces`), set `capture.interfaces`, or replay a file with `--from-pcap FILE`")]
    NoSource,
    /// `--trigger-at NAME=…` names no trigger.
    #[error("--trigger-at: no trigger is named `{0}`: use a name from the config (`tripcap triggers list` shows the packs'), or no name for the manual trigger")]
    UnknownTrigger(String),
    /// Delivery (`[spool]`, `[upload]`) or the API (`[api]`) could not start.
    #[error("{0}")]
    Deliver(String),
    /// `[fleet]` cannot start (refused credentials, broken TLS).
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
}

/// Builds an [`Agent`]; see the module doc.
pub struct AgentBuilder {
    config: Config,
    opts: RunOptions,
    lines: Option<Receiver<LogLine>>,
    outcomes: Option<UnboundedSender<CaptureOutcome>>,
}

/// A running agent; [`Agent::run`] waits for it to finish and tears it down.
pub struct Agent {
    tasks: Tasks,
    shutdown: CancellationToken,
    linger: Option<CancellationToken>,
    lines_done: CancellationToken,
    recorder: Arc<Recorder>,
    manual: crate::recorder::TriggerId,
    counts: Arc<Counts>,
    replay_done: Option<oneshot::Receiver<ReplayReport>>,
    replay_ended: CancellationToken,
    ring: Arc<crate::ring::Ring>,
}

impl Agent {
    /// Fire the manual trigger now (wall clock) on behalf of `source`, with
    /// `reason` as its line: what `POST /trigger` does, for callers that hold
    /// the agent (`selftest`).
    pub fn fire_manual(
        &self,
        source: &str,
        reason: &str,
    ) -> std::io::Result<crate::recorder::Fired> {
        self.recorder.fire(crate::recorder::Firing {
            trigger: self.manual,
            at_ns: crate::clock::now_ns(),
            source: Some(source.into()),
            line: Some(reason.as_bytes().to_vec()),
            ..crate::recorder::Firing::default()
        })
    }

    /// Start building an agent for `config`.
    pub fn builder(config: Config) -> AgentBuilder {
        AgentBuilder {
            config,
            opts: RunOptions::default(),
            lines: None,
            outcomes: None,
        }
    }

    /// Wait until `shutdown` (live) or the end of the replay, then stop every
    /// part, close every open window with what it holds, and let delivery finish.
    pub async fn run(mut self) -> RunSummary {
        let mut replay = None;
        match self.replay_done.take() {
            Some(done) => {
                tokio::select! {
                    r = done => replay = r.ok(),
                    () = self.shutdown.cancelled() => {}
                }
                if replay.is_some() && !self.shutdown.is_cancelled() {
                    self.replay_ended.cancel();
                }
            }
            None => self.shutdown.cancelled().await,
        }
        if self.shutdown.is_cancelled() {
            if let Some(abort) = &self.linger {
                lines::linger(&self.recorder, abort, &self.lines_done).await;
            }
        }
        log_ring(&self.ring);
        self.tasks.stop_token().cancel();
        // The outcome task ends when every holder of the recorder is gone and
        // the last window is written; it then lets delivery finish.
        drop(self.recorder);
        self.tasks.wait().await;
        RunSummary {
            written: self.counts.written.load(Ordering::Relaxed),
            failed: self.counts.failed.load(Ordering::Relaxed),
            replay,
        }
    }
}

/// What the ring held when the agent stopped: how much history this traffic
/// gets from this memory.
fn log_ring(ring: &crate::ring::Ring) {
    let span = ring.span();
    let (packed, packed_raw) = span.packed_bytes;
    tracing::info!(
        packets = span.packets,
        history_s = span.history_seconds(),
        held_bytes = span.held_bytes,
        bytes_per_packet = span.bytes_per_packet().unwrap_or(0.0),
        blocks = span.blocks,
        packed_blocks = span.packed_blocks,
        packed_packets = span.packed_packets,
        packed_bytes = packed,
        packed_raw_bytes = packed_raw,
        compression = span.compression_ratio().unwrap_or(0.0),
        "ring at stop"
    );
}

/// Build and run an agent in one call: [`AgentBuilder::start`] then [`Agent::run`].
pub async fn run(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
    outcomes: Option<UnboundedSender<CaptureOutcome>>,
) -> Result<RunSummary, AgentError> {
    let mut b = Agent::builder(config).options(opts);
    if let Some(tx) = outcomes {
        b = b.outcomes(tx);
    }
    Ok(b.start(shutdown).await?.run().await)
}
