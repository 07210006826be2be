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
mod output;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, Receiver, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::capture::live::{self, LiveSpec};
use crate::capture::replay::{Replay, ReplayReport, Speed};
use crate::capture::{CaptureError, InterfaceInfo};
use crate::clock::now_ns;
use crate::config::{Config, ConfigError};
use crate::deliver::Delivery;
use crate::follow::{FollowOptions, Follower, LogLine};
use crate::matcher::Matcher;
use crate::recorder::{Firing, Recorder, RecorderParts, TriggerId, TriggerSpec, TriggerTable};
use crate::ring::{Ring, RingConfig, WATERMARK_END};
use crate::tasks::Tasks;
use crate::window::{CaptureOutcome, WindowOptions};

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
    counts: Arc<Counts>,
    replay_done: Option<oneshot::Receiver<ReplayReport>>,
    replay_ended: CancellationToken,
}

#[derive(Default)]
struct Counts {
    written: AtomicU64,
    failed: AtomicU64,
}

enum Sources {
    Live(Vec<LiveSpec>),
    Replay(Replay),
}

impl Agent {
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

impl AgentBuilder {
    /// How to run beyond the config.
    pub fn options(mut self, opts: RunOptions) -> AgentBuilder {
        self.opts = opts;
        self
    }

    /// Match these lines like followed log lines (`tripcap wrap` feeds its
    /// child's output here). The agent's run ends only after they have closed,
    /// so every line sent before is matched.
    pub fn lines(mut self, lines: Receiver<LogLine>) -> AgentBuilder {
        self.lines = Some(lines);
        self
    }

    /// Send each capture's outcome here as soon as it is written.
    pub fn outcomes(mut self, tx: UnboundedSender<CaptureOutcome>) -> AgentBuilder {
        self.outcomes = Some(tx);
        self
    }

    /// Check, then start every part; on error, everything already started is
    /// stopped first. `shutdown` stops a live agent (and a replay early).
    pub async fn start(self, shutdown: CancellationToken) -> Result<Agent, AgentError> {
        let AgentBuilder {
            config,
            opts,
            lines,
            outcomes,
        } = self;
        // Everything that can fail without starting anything.
        let set = config.trigger_set()?;
        for note in config.check()? {
            tracing::warn!("{note}");
        }
        prepare_output(&config.output.dir)?;
        recover_spool(&config.output.dir);
        let sources = if !opts.replay.is_empty() {
            Sources::Replay(Replay::open(&opts.replay)?)
        } else if !config.capture.interfaces.is_empty() {
            let spec = |iface: &String| LiveSpec {
                iface: iface.clone(),
                filter: config.capture.filter.clone(),
                snaplen: config.capture.snaplen,
                buffer_size: config.capture.buffer_size,
                promiscuous: config.capture.promiscuous,
            };
            Sources::Live(config.capture.interfaces.iter().map(spec).collect())
        } else {
            return Err(AgentError::NoSource);
        };
        let follower = if config.logs.paths.is_empty() {
            None
        } else {
            let opts = FollowOptions {
                max_line_bytes: usize::try_from(config.logs.max_line_bytes).unwrap_or(usize::MAX),
                ..FollowOptions::default()
            };
            Some(
                Follower::new(config.logs.paths.clone(), opts)
                    .map_err(|e| AgentError::Follow(e.to_string()))?,
            )
        };

        let tasks = Tasks::current();
        let mut started = Started {
            tasks: tasks.clone(),
            ring: None,
            delivery: None,
        };
        match start_parts(
            &mut started,
            config,
            opts,
            set,
            sources,
            follower,
            lines,
            outcomes,
            shutdown,
        )
        .await
        {
            Ok(agent) => Ok(agent),
            Err(e) => {
                started.stop().await;
                Err(e)
            }
        }
    }
}

/// What has started so far, for stopping it when a later part fails.
struct Started {
    tasks: Tasks,
    ring: Option<Arc<Ring>>,
    delivery: Option<Delivery>,
}

impl Started {
    async fn stop(self) {
        if let Some(ring) = &self.ring {
            ring.advance_all(WATERMARK_END); // interfaces whose thread never started
        }
        if let Some(d) = self.delivery {
            d.finish(None).await; // it stops on its own token
        }
        self.tasks.shutdown().await;
    }
}

#[allow(clippy::too_many_arguments)] // the builder's fields, unpacked once
async fn start_parts(
    started: &mut Started,
    config: Config,
    opts: RunOptions,
    set: tripcap_triggers::TriggerSet,
    sources: Sources,
    follower: Option<Follower>,
    extra_lines: Option<Receiver<LogLine>>,
    outcomes: Option<UnboundedSender<CaptureOutcome>>,
    shutdown: CancellationToken,
) -> Result<Agent, AgentError> {
    let tasks = started.tasks.clone();
    let host = host_name();
    // Delivery and the API first: a misconfiguration stops us before capture.
    let api = match &config.api {
        Some(a) => Some(
            crate::api::Api::bind(a)
                .await
                .map_err(|e| AgentError::Deliver(e.to_string()))?,
        ),
        None => None,
    };
    let delivery = Delivery::start(
        config.output.dir.clone(),
        host.clone(),
        config.spool.clone(),
        config.upload.clone(),
        &tasks,
    )
    .map_err(|e| AgentError::Deliver(e.to_string()))?;
    let (deliver_stats, capture_counts) = (delivery.stats(), delivery.captures());
    started.delivery = Some(delivery);

    // Capture sources: every interface opens, or none is used.
    let replaying = matches!(sources, Sources::Replay(_));
    let (interfaces, started_at, live, replay) = match sources {
        Sources::Live(specs) => {
            let mut caps = Vec::new();
            for spec in &specs {
                caps.push(live::open(spec)?);
            }
            let infos = caps.iter().map(|c| c.info().clone()).collect::<Vec<_>>();
            (infos, now_ns(), caps, None)
        }
        Sources::Replay(r) => {
            let infos = r.interfaces().to_vec();
            let at = r.first_ts().map_or(i64::MIN, |t| t - 1);
            (infos, at, Vec::new(), Some(r))
        }
    };
    let interfaces: Arc<Vec<InterfaceInfo>> = Arc::new(interfaces);

    // Triggers, each registered once and named by its id from here on.
    let mut table = TriggerTable::default();
    let max_age = config.effective_max_age(&set);
    let mut matcher = Matcher::new(set, config.perftest);
    matcher.register(&mut table);
    let (pre, post) = opts.manual_window.unwrap_or((
        tripcap_triggers::DEFAULT_PRE,
        tripcap_triggers::DEFAULT_POST,
    ));
    let manual = table.add(TriggerSpec {
        name: MANUAL_TRIGGER.into(),
        class: "manual".into(),
        pre,
        post,
        cooldown: Duration::ZERO,
    });
    let packet_defs: Vec<_> = config
        .packet_triggers
        .iter()
        .map(|d| (table.add(d.spec()), d.clone()))
        .collect();
    let trigger_at = resolve_trigger_at(&opts.trigger_at, &table, manual)?;

    let ring = Ring::new(
        RingConfig {
            memory_limit: usize::try_from(config.ring.memory_limit).unwrap_or(usize::MAX),
            block_size: usize::try_from(config.ring.block_size)
                .unwrap_or(crate::ring::DEFAULT_BLOCK_SIZE),
            max_age,
            prefault: crate::ring::DEFAULT_PREFAULT,
        },
        interfaces.len(),
        started_at,
    );
    started.ring = Some(Arc::clone(&ring));
    if let Some(prefault) = ring.prefaulter(tasks.stop_token().clone()) {
        tasks
            .thread("ring-prefault", prefault)
            .map_err(AgentError::Thread)?;
    }

    let (done_tx, done_rx) = unbounded_channel();
    let recorder = Arc::new(Recorder::new(RecorderParts {
        ring: Arc::clone(&ring),
        interfaces: Arc::clone(&interfaces),
        dir: config.output.dir.clone(),
        host,
        triggers: table,
        max_window: config.output.max_window,
        window_options: WindowOptions {
            reports: config.output.reports,
            sysfs_root: Some(config.output.sysfs_root.clone()),
        },
        done: done_tx,
        tasks: tasks.clone(),
    }));
    let counts = Arc::new(Counts::default());
    // Replays wait for their uploads before the run ends, unless interrupted.
    let replay_ended = CancellationToken::new();
    let upload_wait = replaying.then(|| {
        opts.upload_wait
            .unwrap_or(crate::deliver::DEFAULT_UPLOAD_WAIT)
    });
    // From here on delivery belongs to the task that hands it each capture.
    if let Some(delivery) = started.delivery.take() {
        let finish = DeliveryFinish {
            delivery,
            upload_wait,
            replay_ended: replay_ended.clone(),
        };
        tasks.spawn(deliver_outcomes(
            done_rx,
            finish,
            outcomes,
            Arc::clone(&counts),
        ));
    }
    // Packet triggers see every block sealed from now on: before the sources.
    if !packet_defs.is_empty() {
        crate::packet_triggers::spawn(
            &ring,
            Arc::clone(&interfaces),
            Arc::clone(&recorder),
            packet_defs,
            &tasks,
        )
        .map_err(AgentError::Thread)?;
    }
    // Capture threads (or the replay): packets flow from here on.
    let mut replay_done = None;
    for (i, cap) in live.into_iter().enumerate() {
        live::spawn(cap, i as u16, Arc::clone(&ring), &tasks).map_err(AgentError::Thread)?;
    }
    if let Some(replay) = replay {
        let (tx, rx) = oneshot::channel();
        let (rec, ring2, stop) = (
            Arc::clone(&recorder),
            Arc::clone(&ring),
            tasks.stop_token().clone(),
        );
        let speed = opts.speed;
        tasks
            .thread("replay", move || {
                let fire = |t: i64, trigger: TriggerId| {
                    let f = Firing { trigger, at_ns: t, ..Firing::default() };
                    if let Err(e) = rec.fire(f) {
                        tracing::error!(error = %e, "trigger at a replay time: cannot open a capture");
                    }
                };
                let report = replay.run(&ring2, speed, trigger_at, fire, &stop);
                ring2.advance_all(WATERMARK_END); // every window closes with what it holds
                let _ = tx.send(report);
            })
            .map_err(AgentError::Thread)?;
        replay_done = Some(rx);
    } else {
        tracing::info!(
            interfaces = interfaces.len(),
            memory_limit = ring.memory_limit(),
            "capturing"
        );
    }

    if let Some(api) = api {
        let view = crate::api::AgentView {
            interfaces: Arc::clone(&interfaces),
            ring: Arc::clone(&ring),
            recorder: Arc::clone(&recorder),
            manual_trigger: manual,
            replay: replaying,
            follow: follower.as_ref().map(|f| f.stats()),
            deliver: Some(deliver_stats),
            captures: capture_counts,
            tasks: tasks.clone(),
        };
        tasks.spawn(api.run(view, tasks.stop_token().clone()));
    }
    let clock = if replaying {
        lines::Clock::Ring(Arc::clone(&ring))
    } else {
        lines::Clock::Wall
    };
    let lines_done = start_lines(
        &tasks,
        follower,
        extra_lines,
        matcher,
        Arc::clone(&recorder),
        clock,
    );

    Ok(Agent {
        tasks,
        shutdown,
        linger: opts.linger,
        lines_done,
        recorder,
        counts,
        replay_done,
        replay_ended,
    })
}

/// Complete what a crash or a full disk left in the output directory (before
/// any window opens, so nothing in it is being written), and say what was done.
fn recover_spool(dir: &std::path::Path) {
    match crate::deliver::recover::recover(dir, &host_name()) {
        Ok(r) => {
            if !r.swept.is_empty() {
                tracing::info!(
                    files = r.swept.len(),
                    "removed temporary files left by an earlier run"
                );
            }
            for incident in &r.completed {
                tracing::warn!(%incident, "a capture was left without its sidecar (the agent stopped or the disk filled): completed it with what the file holds; it is delivered like any other");
            }
            for (file, why) in &r.unreadable {
                tracing::warn!(%file, %why, "a capture left without its sidecar could not be completed: it stays in the output directory; look at it with `tripcap analyze`");
            }
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot look for captures left by an earlier run")
        }
    }
}

/// The `--trigger-at` times with their trigger ids.
fn resolve_trigger_at(
    at: &[TriggerAt],
    table: &TriggerTable,
    manual: TriggerId,
) -> Result<Vec<(i64, TriggerId)>, AgentError> {
    at.iter()
        .map(|t| match &t.trigger {
            None => Ok((t.at_ns, manual)),
            Some(name) => table
                .find(name)
                .map(|id| (t.at_ns, id))
                .ok_or_else(|| AgentError::UnknownTrigger(name.clone())),
        })
        .collect()
}

/// Start the log-line path (follower, wrapped lines, matcher); the token is
/// cancelled once every line read has been matched (at once without lines).
fn start_lines(
    tasks: &Tasks,
    follower: Option<Follower>,
    extra: Option<Receiver<LogLine>>,
    matcher: Matcher,
    recorder: Arc<Recorder>,
    clock: lines::Clock,
) -> CancellationToken {
    let done = CancellationToken::new();
    if follower.is_none() && extra.is_none() {
        done.cancel();
        return done;
    }
    let (line_tx, line_rx) = tokio::sync::mpsc::channel(1024);
    if let Some(follower) = follower {
        tasks.spawn(follower.run(line_tx.clone(), tasks.stop_token().clone()));
    }
    if let Some(mut extra) = extra {
        // Not stopped by the token: wrap closes it after its job's last line.
        let tx = line_tx.clone();
        tasks.spawn(async move {
            while let Some(line) = extra.recv().await {
                if tx.send(line).await.is_err() {
                    break;
                }
            }
        });
    }
    drop(line_tx);
    let d = done.clone();
    tasks.spawn(async move {
        lines::match_lines(line_rx, matcher, recorder, clock).await;
        d.cancel();
    });
    done
}

/// Delivery, and how to finish it once the last capture is handed over.
struct DeliveryFinish {
    delivery: Delivery,
    /// Wait this long for uploads (replays), else stop at once.
    upload_wait: Option<Duration>,
    /// Cancelled when the replay ran to its end: only then wait for uploads
    /// (not when interrupted, nor when the agent failed to start).
    replay_ended: CancellationToken,
}

/// Log each capture, hand it to delivery and the caller, count it; when the
/// last window is written, let delivery finish.
async fn deliver_outcomes(
    mut done: UnboundedReceiver<CaptureOutcome>,
    finish: DeliveryFinish,
    outcomes: Option<UnboundedSender<CaptureOutcome>>,
    counts: Arc<Counts>,
) {
    let delivery = finish.delivery.hook();
    while let Some(outcome) = done.recv().await {
        match &outcome {
            CaptureOutcome::Written { pcapng, report, .. } => {
                counts.written.fetch_add(1, Ordering::Relaxed);
                if report.window.complete {
                    tracing::info!(file = %pcapng.display(), packets = report.packets, "capture written");
                } else {
                    tracing::warn!(file = %pcapng.display(), packets = report.packets, shortfall = %report.window.shortfall.join("; "), "capture written, incomplete");
                }
            }
            CaptureOutcome::Failed { path, error } => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(file = %path.display(), error = %error, "capture failed")
            }
        }
        delivery.on_capture(&outcome);
        if let Some(tx) = &outcomes {
            let _ = tx.send(outcome);
        }
    }
    let wait = finish
        .upload_wait
        .filter(|_| finish.replay_ended.is_cancelled());
    finish.delivery.finish(wait).await;
}
