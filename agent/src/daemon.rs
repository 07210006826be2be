//! The agent loop: wires capture → ring → recorder/windows and logs → triggers
//! → recorder together, and owns nothing else.
//!
//! Everything that can fail at start (triggers, filter, interfaces, output
//! directory) fails before the first thread starts. The loop then runs until
//! `shutdown` is cancelled (live) or the replay ends, and closes every open
//! window before returning, so nothing already captured is lost.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_util::sync::CancellationToken;

use crate::capture::live::{self, LiveSpec};
use crate::capture::replay::{Replay, ReplayReport, Speed};
use crate::capture::{CaptureError, InterfaceInfo};
use crate::clock::now_ns;
use crate::config::{Config, ConfigError};
use crate::follow::{FollowOptions, Follower, LogLine};
use crate::recorder::{Firing, Recorder, TriggerSpec};
use crate::ring::{Ring, RingConfig};
use crate::window::{CaptureOutcome, WindowOptions};

/// Name of the trigger `--trigger-at` and the API fire.
pub const MANUAL_TRIGGER: &str = "manual";

/// How to run beyond the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Replay these files instead of capturing live.
    pub replay: Vec<PathBuf>,
    /// Replay speed.
    pub speed: Speed,
    /// Manual triggers at these capture times (ns since the epoch).
    pub trigger_at: Vec<i64>,
    /// Window of manual triggers: (pre, post).
    pub manual_window: Option<(std::time::Duration, std::time::Duration)>,
    /// Replays: wait up to this long for uploads before returning (`--upload-wait`;
    /// `None` means [`crate::deliver::DEFAULT_UPLOAD_WAIT`]).
    pub upload_wait: Option<std::time::Duration>,
    /// Once `shutdown` is cancelled, keep capturing while captures are open
    /// (at most the longest `post` + [`LINGER_SLACK`]), unless this token is
    /// cancelled too: `wrap` after its job exits, so a failure printed just
    /// before the exit still gets its `post`. `None`: stop at once.
    pub linger: Option<CancellationToken>,
}

/// Lingering lasts at most the longest `post` plus this (the watermark lag).
pub const LINGER_SLACK: std::time::Duration = std::time::Duration::from_secs(2);

/// Wait until the lines read before stopping are matched (`lines_done`), then
/// while `recorder` has open captures: in all at most its longest `post` +
/// [`LINGER_SLACK`], or until `abort` is cancelled.
async fn linger(recorder: &Recorder, abort: &CancellationToken, lines_done: &CancellationToken) {
    let limit = recorder.longest_post() + LINGER_SLACK;
    let deadline = tokio::time::Instant::now() + limit;
    tokio::select! {
        () = lines_done.cancelled() => {}
        () = abort.cancelled() => return,
        () = tokio::time::sleep_until(deadline) => return,
    }
    if recorder.open_windows() == 0 {
        return;
    }
    tracing::info!(
        at_most_s = limit.as_secs_f64(),
        "stopping with a capture open: still capturing until it closes (interrupt to stop now)"
    );
    while recorder.open_windows() > 0 {
        tokio::select! {
            () = abort.cancelled() => {
                tracing::info!("interrupted: open captures are written with what they hold");
                return;
            }
            () = tokio::time::sleep_until(deadline) => return,
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
        }
    }
}

/// What a run did.
#[derive(Debug, Default)]
pub struct RunSummary {
    /// Every capture written or failed, in the order they closed.
    pub captures: Vec<CaptureOutcome>,
    /// The replay, when it was one.
    pub replay: Option<ReplayReport>,
}

/// Errors that stop the agent from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
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
    /// Delivery (`[spool]`, `[upload]`) or the API (`[api]`) could not start.
    #[error("{0}")]
    Deliver(String),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
}

/// The host name (up to the first dot), for file names and metadata.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates or truncates.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let full = String::from_utf8_lossy(&buf[..end]).into_owned();
    full.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("localhost")
        .to_string()
}

/// Create the output directory (0700) and check we can write in it.
pub fn prepare_output(dir: &Path) -> Result<(), DaemonError> {
    let err = |message: String| DaemonError::Output {
        path: dir.display().to_string(),
        message,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            err(format!(
                "cannot create it ({e}): choose another with `-o DIR` or `output.dir`"
            ))
        })?;
    let probe = dir.join(format!(".tripcap-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        err(format!(
            "cannot write in it ({e}): fix its permissions or choose another with `-o DIR`"
        ))
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

enum Sources {
    Live(Vec<live::LiveCapture>),
    Replay(Replay),
}

/// Run the agent until `shutdown` (live) or the end of the replay. Each capture's
/// outcome is also sent to `events` as soon as it is written.
pub async fn run(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
    events: Option<UnboundedSender<CaptureOutcome>>,
) -> Result<RunSummary, DaemonError> {
    run_with_lines(config, opts, shutdown, events, None).await
}

/// [`run`], with `extra` lines matched like followed log lines (`tripcap wrap`
/// feeds its child's output here). Returns only after `extra` has closed, so
/// every line sent before closing it is matched.
pub async fn run_with_lines(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
    events: Option<UnboundedSender<CaptureOutcome>>,
    extra: Option<tokio::sync::mpsc::Receiver<LogLine>>,
) -> Result<RunSummary, DaemonError> {
    // Everything that can fail, before anything starts.
    let set = config.trigger_set()?;
    for note in config.check()? {
        tracing::warn!("{note}");
    }
    prepare_output(&config.output.dir)?;
    let sources = if !opts.replay.is_empty() {
        Sources::Replay(Replay::open(&opts.replay)?)
    } else if !config.capture.interfaces.is_empty() {
        let mut caps = Vec::new();
        for iface in &config.capture.interfaces {
            caps.push(live::open(&LiveSpec {
                iface: iface.clone(),
                filter: config.capture.filter.clone(),
                snaplen: config.capture.snaplen,
                buffer_size: config.capture.buffer_size,
                promiscuous: config.capture.promiscuous,
            })?);
        }
        Sources::Live(caps)
    } else {
        return Err(DaemonError::NoSource);
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
                .map_err(|e| DaemonError::Follow(e.to_string()))?,
        )
    };

    // Delivery and the API: checked and bound before anything starts.
    let api = match &config.api {
        Some(a) => Some(
            crate::api::Api::bind(a)
                .await
                .map_err(|e| DaemonError::Deliver(e.to_string()))?,
        ),
        None => None,
    };
    let delivery = crate::deliver::Delivery::start(
        config.output.dir.clone(),
        host_name(),
        config.spool.clone(),
        config.upload.clone(),
    )
    .map_err(|e| DaemonError::Deliver(e.to_string()))?;
    let delivery_hook = delivery.hook();
    let follow_stats = follower.as_ref().map(|f| f.stats());
    let replaying = matches!(sources, Sources::Replay(_));

    let (interfaces, started_at): (Vec<InterfaceInfo>, i64) = match &sources {
        Sources::Live(caps) => (caps.iter().map(|c| c.info().clone()).collect(), now_ns()),
        Sources::Replay(r) => (
            r.interfaces().to_vec(),
            r.first_ts().map_or(i64::MIN, |t| t - 1),
        ),
    };
    let interfaces = Arc::new(interfaces);
    let ring = Ring::new(
        RingConfig {
            memory_limit: usize::try_from(config.ring.memory_limit).unwrap_or(usize::MAX),
            block_size: usize::try_from(config.ring.block_size)
                .unwrap_or(crate::ring::DEFAULT_BLOCK_SIZE),
            max_age: config.effective_max_age(&set),
            prefault: crate::ring::DEFAULT_PREFAULT,
        },
        interfaces.len(),
        started_at,
    );

    let matcher = crate::matcher::Matcher::new(set, config.perftest);
    let mut specs: Vec<TriggerSpec> = matcher.specs().to_vec();
    let manual_index = specs.len();
    let (pre, post) = opts.manual_window.unwrap_or((
        tripcap_triggers::DEFAULT_PRE,
        tripcap_triggers::DEFAULT_POST,
    ));
    specs.push(TriggerSpec {
        name: MANUAL_TRIGGER.into(),
        class: "manual".into(),
        pre,
        post,
        cooldown: std::time::Duration::ZERO,
    });
    // Packet triggers come after the manual one.
    let packet_first = specs.len();
    specs.extend(
        config
            .packet_triggers
            .iter()
            .map(crate::packet_triggers::PacketTriggerDef::spec),
    );

    let (done_tx, mut done_rx) = unbounded_channel();
    let recorder = Arc::new(
        Recorder::new(
            Arc::clone(&ring),
            Arc::clone(&interfaces),
            config.output.dir.clone(),
            host_name(),
            specs,
            config.output.max_window,
            done_tx,
        )
        .with_window_options(WindowOptions {
            reports: config.output.reports,
            sysfs_root: Some(config.output.sysfs_root.clone()),
        }),
    );
    let collector = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(outcome) = done_rx.recv().await {
            log_outcome(&outcome);
            delivery_hook.on_capture(&outcome);
            if let Some(tx) = &events {
                let _ = tx.send(outcome.clone());
            }
            all.push(outcome);
        }
        all
    });
    let api_stop = CancellationToken::new();
    let api_task = api.map(|api| {
        let view = crate::api::AgentView {
            interfaces: Arc::clone(&interfaces),
            ring: Arc::clone(&ring),
            recorder: Arc::clone(&recorder),
            manual_trigger: manual_index,
            replay: replaying,
            follow: follow_stats,
            deliver: Some(delivery.stats()),
            captures: delivery.captures(),
        };
        tokio::spawn(api.run(view, api_stop.clone()))
    });

    let follow_stop = shutdown.child_token();
    let mut tasks = Vec::new();
    // Cancelled once every line read has been matched (at once without lines).
    let lines_done = CancellationToken::new();
    if follower.is_some() || extra.is_some() {
        let (line_tx, line_rx) = tokio::sync::mpsc::channel(1024);
        if let Some(follower) = follower {
            tasks.push(tokio::spawn(
                follower.run(line_tx.clone(), follow_stop.clone()),
            ));
        }
        if let Some(mut extra) = extra {
            let tx = line_tx.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(line) = extra.recv().await {
                    if tx.send(line).await.is_err() {
                        break;
                    }
                }
            }));
        }
        drop(line_tx);
        let rec = Arc::clone(&recorder);
        let clock = match &sources {
            Sources::Live(_) => Clock::Wall,
            Sources::Replay(_) => Clock::Ring(Arc::clone(&ring)),
        };
        let done = lines_done.clone();
        tasks.push(tokio::spawn(async move {
            match_lines(line_rx, matcher, rec, clock).await;
            done.cancel();
        }));
    } else {
        lines_done.cancel();
    }

    let stop = Arc::new(AtomicBool::new(false));
    let packet_thread = if config.packet_triggers.is_empty() {
        None
    } else {
        let defs = (packet_first..)
            .zip(config.packet_triggers.iter().cloned())
            .collect();
        Some(
            crate::packet_triggers::spawn(
                &ring,
                Arc::clone(&interfaces),
                Arc::clone(&recorder),
                defs,
                Arc::clone(&stop),
            )
            .map_err(DaemonError::Thread)?,
        )
    };
    let mut summary = RunSummary::default();
    match sources {
        Sources::Live(caps) => {
            let mut threads = Vec::new();
            for (i, cap) in caps.into_iter().enumerate() {
                threads.push(
                    live::spawn(cap, i as u16, Arc::clone(&ring), Arc::clone(&stop))
                        .map_err(DaemonError::Thread)?,
                );
            }
            tracing::info!(
                interfaces = interfaces.len(),
                memory_limit = ring.memory_limit(),
                "capturing"
            );
            shutdown.cancelled().await;
            if let Some(abort) = &opts.linger {
                linger(&recorder, abort, &lines_done).await;
            }
            stop.store(true, Ordering::Relaxed);
            let _ = tokio::task::spawn_blocking(move || {
                for t in threads {
                    let _ = t.join();
                }
            })
            .await;
        }
        Sources::Replay(replay) => {
            let rec = Arc::clone(&recorder);
            let ring2 = Arc::clone(&ring);
            let stop2 = Arc::clone(&stop);
            let stopper = shutdown.clone();
            let lingering = opts
                .linger
                .clone()
                .map(|abort| (abort, Arc::clone(&recorder), lines_done.clone()));
            let watch = tokio::spawn(async move {
                stopper.cancelled().await;
                if let Some((abort, recorder, lines_done)) = &lingering {
                    linger(recorder, abort, lines_done).await;
                }
                stop2.store(true, Ordering::Relaxed);
            });
            let stop3 = Arc::clone(&stop);
            let at = opts.trigger_at.clone();
            let speed = opts.speed;
            let report =
                tokio::task::spawn_blocking(move || {
                    replay.run(
                    &ring2,
                    speed,
                    at,
                    |t| {
                        let f = Firing { trigger: manual_index, at_ns: t, ..Firing::default() };
                        if let Err(e) = rec.fire(f) {
                            tracing::error!(error = %e, "manual trigger: cannot open a capture");
                        }
                    },
                    &stop3,
                )
                })
                .await
                .unwrap_or_default();
            watch.abort();
            summary.replay = Some(report);
        }
    }
    follow_stop.cancel();
    for t in tasks {
        let _ = t.await;
    }
    api_stop.cancel(); // the API holds the recorder: stop it before closing the windows
    if let Some(t) = api_task {
        let _ = t.await;
    }
    ring.advance_all(crate::ring::WATERMARK_END);
    if let Some(t) = packet_thread {
        // It stops at the end watermark; join it before the windows it may have opened.
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    let rec = Arc::clone(&recorder);
    let _ = tokio::task::spawn_blocking(move || rec.join()).await;
    drop(recorder);
    summary.captures = collector.await.unwrap_or_default();
    let upload_wait = replaying.then(|| {
        opts.upload_wait
            .unwrap_or(crate::deliver::DEFAULT_UPLOAD_WAIT)
    });
    delivery.finish(upload_wait).await;
    Ok(summary)
}

/// What "now" is for a log line: the wall clock when capturing live, the
/// replay's position when replaying.
enum Clock {
    Wall,
    Ring(Arc<Ring>),
}

impl Clock {
    fn now(&self) -> i64 {
        match self {
            Clock::Wall => now_ns(),
            Clock::Ring(r) => r.span().newest_ts.unwrap_or_else(now_ns),
        }
    }
}

/// Match every followed line against the triggers and fire the recorder.
/// Each firing is placed by the line's evidence (its timestamp, how long it
/// says the operation was stuck) read against `clock`; see [`crate::matcher`].
async fn match_lines(
    lines: tokio::sync::mpsc::Receiver<LogLine>,
    matcher: crate::matcher::Matcher,
    recorder: Arc<Recorder>,
    clock: Clock,
) {
    crate::matcher::run(lines, matcher, Arc::clone(&recorder), move || clock.now()).await;
    let pending = recorder.pending_suppressed();
    if pending > 0 {
        tracing::info!(
            suppressed = pending,
            "matches suppressed (cooldown) after the last capture of their trigger: in no capture's metadata"
        );
    }
}

fn log_outcome(outcome: &CaptureOutcome) {
    match outcome {
        CaptureOutcome::Written { pcapng, report, .. } => {
            if report.window.complete {
                tracing::info!(file = %pcapng.display(), packets = report.packets, "capture written");
            } else {
                tracing::warn!(file = %pcapng.display(), packets = report.packets, shortfall = %report.window.shortfall.join("; "), "capture written, incomplete");
            }
        }
        CaptureOutcome::Failed { path, error } => {
            tracing::error!(file = %path.display(), error = %error, "capture failed")
        }
    }
}
