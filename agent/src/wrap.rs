//! `tripcap wrap -- CMD ARGS…`: run the training job as a child and watch its
//! output as a trigger source, without changing anything the job sees or
//! prints.
//!
//! - **Pass-through first.** The child's stdout and stderr are pipes read by
//!   two threads that write every chunk, as read, to tripcap's own stdout and
//!   stderr before doing anything else; stdin is inherited. Bytes are never
//!   decoded, so non-UTF-8 output and a last line without a newline come out
//!   unchanged.
//! - **The same matching path as followed logs.** The chunks are split into
//!   lines (`wrap:stdout` / `wrap:stderr` as the source, cut at
//!   `logs.max_line_bytes`, a partial last line matched at end of file) and sent
//!   as [`LogLine`]s into [`AgentBuilder::lines`](crate::agent::AgentBuilder::lines), i.e. into `match_lines`.
//!   The hand-over never blocks the job: when matching falls 4096 lines behind,
//!   further lines are passed through but not matched (counted, warned once).
//! - **Capture is optional.** The agent starts as `run` would (`-i`,
//!   `--from-pcap`, config). When it cannot (no interface given, no capture
//!   permission, a replay that already ended), wrap says once that capture is
//!   off and keeps going: the job runs unchanged and matching lines are only
//!   logged. Configuration errors still stop wrap before the job starts.
//! - **Triggers.** Those of the config and `--pattern`; when none is
//!   configured, every built-in pack.
//! - **Signals.** SIGINT, SIGTERM and SIGHUP are forwarded to the child (which
//!   stays in tripcap's process group, so a terminal's Ctrl-C reaches it from
//!   the terminal as well). wrap exits with the child's exit code, or 128 + the
//!   signal number that killed it, like a shell.
//! - **End.** When the child has exited and its output is drained (at most
//!   [`DRAIN_AFTER_EXIT`] more, in case a grandchild holds the pipes), the agent
//!   stops. A capture still open — the job printed its failure and died — is
//!   first given its `post`: the agent keeps capturing until it closes (at most
//!   the longest `post` + [`crate::agent::LINGER_SLACK`]), saying so once; a signal
//!   then, or `--no-linger`, stops at once, and the capture is written with
//!   what the ring holds and says so in its sidecar (`complete: false`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc::{channel, error::TrySendError, Sender};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, RunOptions};
use crate::config::Config;
use crate::follow::LogLine;
use crate::matcher::Matcher;
use crate::recorder::Firing;

/// Lines waiting to be matched at most; beyond, lines are passed through unmatched.
pub const LINE_QUEUE: usize = 4096;
/// How long after the child exits its pipes are still read (a grandchild may hold them).
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// Why the job could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WrapError {
    /// The command could not be executed.
    #[error("cannot run `{command}`: {source}; check the command name and PATH")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

impl WrapError {
    /// The exit code a shell would give: 127 not found, 126 not executable, 2 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            WrapError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 127,
            WrapError::Spawn { .. } => 126,
            WrapError::Config(_) => 2,
        }
    }
}

/// Run `command` under the agent; returns the exit code wrap should exit with.
pub async fn run(
    config: Config,
    mut opts: RunOptions,
    command: &[OsString],
    linger: bool,
) -> Result<u8, WrapError> {
    let Some((program, args)) = command.split_first() else {
        return Err(WrapError::Spawn {
            command: String::new(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no command given after `--`",
            ),
        });
    };
    let shown = command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    // Configuration errors stop us before the job starts.
    let set = config.trigger_set()?;
    config.check()?;
    let max_line = usize::try_from(config.logs.max_line_bytes).unwrap_or(usize::MAX);

    // The agent starts first, and the job once it has started or given up: if it
    // cannot capture, it says so (once), and the job's lines are then only logged.
    // (Handing lines to an agent that then fails to start would lose them.)
    let shutdown = CancellationToken::new();
    let stop_lingering = CancellationToken::new();
    if linger {
        opts.linger = Some(stop_lingering.clone());
    }
    let (agent_tx, agent_rx) = channel::<LogLine>(1024);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let mut agent = spawn_agent(
        config,
        opts,
        agent_rx,
        shutdown.clone(),
        shown.clone(),
        started_tx,
    );
    let started = started_rx.await.unwrap_or(false);
    let (early, agent_tx) = if started {
        (None, Some(agent_tx))
    } else {
        (Some((&mut agent).await), None)
    };

    let (mut child, pid) = start_job(program, args, &shown)?;
    let (line_rx, output) = start_pumps(&mut child, max_line);
    let dispatcher = spawn_dispatcher(line_rx, agent_tx, set);

    // Wait for the child, forwarding signals.
    let status = wait_forwarding(child, pid).await;
    drain_output(output, dispatcher).await;
    stop_agent(agent, early, shutdown, stop_lingering).await;
    Ok(exit_code(status))
}

/// What [`Agent::run`] returned, or why the agent could not start.
type AgentResult = Result<crate::agent::RunSummary, AgentError>;
/// The agent's task.
type AgentTask = tokio::task::JoinHandle<AgentResult>;

/// Start the agent on its own task, fed the job's lines through `lines`; it
/// logs each capture written, and says once when capture is off.
fn spawn_agent(
    config: Config,
    opts: RunOptions,
    lines: tokio::sync::mpsc::Receiver<LogLine>,
    shutdown: CancellationToken,
    shown: String,
    started: tokio::sync::oneshot::Sender<bool>,
) -> AgentTask {
    tokio::spawn(async move {
        let (captures, mut written) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(c) = written.recv().await {
                if let crate::window::CaptureOutcome::Written { pcapng, report, .. } = c {
                    tracing::info!(file = %pcapng.display(), packets = report.packets, complete = report.window.complete, "wrap: capture");
                }
            }
        });
        let agent = Agent::builder(config)
            .options(opts)
            .lines(lines)
            .outcomes(captures)
            .start(shutdown)
            .await;
        // The receiver is gone only if wrap itself is: nothing to tell.
        let _ = started.send(agent.is_ok());
        let r: AgentResult = match agent {
            Ok(agent) => Ok(agent.run().await),
            Err(e) => Err(e),
        };
        match &r {
            Err(e) => {
                tracing::warn!(command = %shown, "capture is off ({e}); the job runs unchanged and matching lines are only logged")
            }
            Ok(_) => tracing::debug!("agent stopped"),
        }
        r
    })
}

/// Start the job: stdin inherited, stdout and stderr piped to the pumps.
fn start_job(
    program: &OsString,
    args: &[OsString],
    shown: &str,
) -> Result<(std::process::Child, u32), WrapError> {
    let child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| WrapError::Spawn {
            command: shown.to_string(),
            source,
        })?;
    let pid = child.id();
    Ok((child, pid))
}

/// The job's output pumps, as the end of the run sees them.
struct JobOutput {
    /// How many pumps run.
    pumps: usize,
    /// One message per pump when it has drained its pipe.
    done: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Lines passed through but not matched (matching fell behind).
    behind: Arc<AtomicU64>,
}

/// Start a pump on each of the job's stdout and stderr; returns the lines they
/// hand over for matching.
fn start_pumps(
    child: &mut std::process::Child,
    max_line: usize,
) -> (tokio::sync::mpsc::Receiver<LogLine>, JobOutput) {
    let (line_tx, line_rx) = channel::<LogLine>(LINE_QUEUE);
    let behind = Arc::new(AtomicU64::new(0));
    let warned = Arc::new(AtomicBool::new(false));
    let (done_tx, done) = tokio::sync::mpsc::unbounded_channel::<()>();
    let pump = || Pump {
        lines: line_tx.clone(),
        max_line,
        behind: Arc::clone(&behind),
        warned: Arc::clone(&warned),
        done: done_tx.clone(),
    };
    let mut pumps = 0;
    if let Some(out) = child.stdout.take() {
        spawn_pump(out, std::io::stdout(), "wrap:stdout", pump());
        pumps += 1;
    }
    if let Some(err) = child.stderr.take() {
        spawn_pump(err, std::io::stderr(), "wrap:stderr", pump());
        pumps += 1;
    }
    (
        line_rx,
        JobOutput {
            pumps,
            done,
            behind,
        },
    )
}

/// Hand the job's lines to the agent while it takes them; once it cannot (or
/// never started), match them here and only log what fires.
fn spawn_dispatcher(
    mut line_rx: tokio::sync::mpsc::Receiver<LogLine>,
    agent_tx: Option<Sender<LogLine>>,
    set: tripcap_triggers::TriggerSet,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut agent_tx = agent_tx;
        let mut fallback = Matcher::new(set, None);
        let mut firings = Vec::new();
        while let Some(line) = line_rx.recv().await {
            if let Some(tx) = &agent_tx {
                match tx.send(line).await {
                    Ok(()) => continue,
                    Err(back) => {
                        agent_tx = None;
                        log_only(&mut fallback, &back.0, &mut firings);
                    }
                }
            } else {
                log_only(&mut fallback, &line, &mut firings);
            }
        }
    })
}

/// The job has exited: read what its pipes still hold (at most
/// [`DRAIN_AFTER_EXIT`]), let the dispatcher finish, and say how many lines
/// went unmatched.
async fn drain_output(mut output: JobOutput, dispatcher: tokio::task::JoinHandle<()>) {
    let drained = async {
        for _ in 0..output.pumps {
            if output.done.recv().await.is_none() {
                break;
            }
        }
    };
    if tokio::time::timeout(DRAIN_AFTER_EXIT, drained)
        .await
        .is_err()
    {
        tracing::warn!(
            "the job exited but something still holds its output open; stopped reading it"
        );
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), dispatcher).await;
    let skipped = output.behind.load(Ordering::Relaxed);
    if skipped > 0 {
        tracing::warn!(
            lines = skipped,
            "lines of the job's output were passed through but not matched (matching fell behind)"
        );
    }
}

/// Stop the agent (it may linger for an open capture's `post`; a signal now
/// cuts that short) and wait for it, unless it already ended at start.
async fn stop_agent(
    agent: AgentTask,
    early: Option<Result<AgentResult, tokio::task::JoinError>>,
    shutdown: CancellationToken,
    stop_lingering: CancellationToken,
) {
    // The job is gone: a signal now cuts the agent's lingering short.
    let on_signal = tokio::spawn(async move {
        any_signal().await;
        stop_lingering.cancel();
    });
    shutdown.cancel();
    let result = match early {
        Some(r) => r,
        None => agent.await,
    };
    on_signal.abort();
    if let Ok(Ok(summary)) = result {
        tracing::debug!(
            written = summary.written,
            failed = summary.failed,
            "wrap: agent done"
        );
    }
}

fn log_only(matcher: &mut Matcher, line: &LogLine, firings: &mut Vec<Firing>) {
    if matcher.line(&line.path, &line.bytes, crate::clock::now_ns(), firings) {
        for f in firings.iter() {
            let Some(spec) = matcher.spec(f.trigger) else {
                continue;
            };
            tracing::warn!(trigger = %spec.name, class = %spec.class, source = %line.path.display(), line = line.line_no, "trigger fired, not captured (no packets saved)");
        }
    }
}

/// The shell's view of an exit status: the code, or 128 + the signal.
pub fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> u8 {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
            (None, Some(sig)) => u8::try_from((128 + sig) & 0xff).unwrap_or(1),
            (None, None) => 1,
        },
        Err(e) => {
            tracing::error!(error = %e, "cannot wait for the job");
            1
        }
    }
}

async fn wait_forwarding(
    mut child: std::process::Child,
    pid: u32,
) -> std::io::Result<std::process::ExitStatus> {
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
    ];
    let (sig_tx, mut sig_rx) = tokio::sync::mpsc::unbounded_channel::<i32>();
    let mut listeners = Vec::new();
    for (kind, num) in kinds {
        match signal(kind) {
            Ok(mut s) => {
                let tx = sig_tx.clone();
                listeners.push(tokio::spawn(async move {
                    while s.recv().await.is_some() {
                        if tx.send(num).is_err() {
                            break;
                        }
                    }
                }));
            }
            Err(e) => {
                tracing::warn!(signal = num, error = %e, "cannot forward this signal to the job")
            }
        }
    }
    drop(sig_tx);
    // The child is waited for on a blocking thread; signals are forwarded meanwhile.
    let (status_tx, mut status_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    let status = loop {
        tokio::select! {
            s = &mut status_rx => break s.unwrap_or_else(|_| Err(std::io::Error::other("wait thread ended"))),
            Some(sig) = sig_rx.recv() => {
                tracing::info!(signal = sig, "forwarding signal to the job");
                // SAFETY: kill(2) on our child's pid. The wait thread may have
                // reaped it a moment ago (then this is a stray signal to a pid
                // the kernel has just freed; it is reused only after wrapping).
                unsafe { libc::kill(pid as i32, sig) };
            }
        }
    };
    for l in listeners {
        l.abort();
    }
    status
}

/// The first SIGINT, SIGTERM or SIGHUP (never, if none can be listened for).
async fn any_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut streams: Vec<_> = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .filter_map(|k| signal(k).ok())
    .collect();
    let waits = streams.iter_mut().map(|s| Box::pin(s.recv()));
    if waits.len() == 0 {
        return std::future::pending().await;
    }
    futures_util::future::select_all(waits).await;
}

struct Pump {
    lines: Sender<LogLine>,
    max_line: usize,
    behind: Arc<AtomicU64>,
    warned: Arc<AtomicBool>,
    done: tokio::sync::mpsc::UnboundedSender<()>,
}

/// Copy `from` to `to` chunk by chunk, then split into lines for matching.
fn spawn_pump<R, W>(mut from: R, mut to: W, source: &'static str, pump: Pump)
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    std::thread::spawn(move || {
        let path: Arc<Path> = Arc::from(Path::new(source));
        let mut splitter = Splitter::new(pump.max_line);
        let mut buf = vec![0u8; 64 << 10];
        let mut line_no = 0u64;
        let mut send = |bytes: Vec<u8>, truncated: bool| {
            line_no += 1;
            let line = LogLine {
                path: Arc::clone(&path),
                line_no,
                bytes,
                read_at: SystemTime::now(),
                truncated,
            };
            match pump.lines.try_send(line) {
                Ok(()) | Err(TrySendError::Closed(_)) => {}
                Err(TrySendError::Full(_)) => {
                    pump.behind.fetch_add(1, Ordering::Relaxed);
                    if !pump.warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!("matching fell behind the job's output: lines are passed through but not matched until it catches up");
                    }
                }
            }
        };
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            // Pass-through first; a closed stdout must not stop the job's reader.
            let _ = to.write_all(&buf[..n]).and_then(|()| to.flush());
            splitter.push(&buf[..n], &mut send);
        }
        splitter.finish(&mut send);
        let _ = pump.done.send(());
    });
}

/// Splits a byte stream into lines of at most `max` bytes (the rest of a long
/// line is skipped and the line marked truncated).
#[derive(Debug)]
pub struct Splitter {
    max: usize,
    partial: Vec<u8>,
    cut: bool,
}

impl Splitter {
    /// A splitter cutting lines at `max` bytes.
    pub fn new(max: usize) -> Splitter {
        Splitter {
            max: max.max(1),
            partial: Vec::new(),
            cut: false,
        }
    }

    /// Feed bytes; calls `line(bytes, truncated)` for every completed line (no newline).
    pub fn push(&mut self, mut chunk: &[u8], line: &mut impl FnMut(Vec<u8>, bool)) {
        while !chunk.is_empty() {
            let (piece, rest, ends) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            let room = self.max.saturating_sub(self.partial.len());
            if piece.len() > room {
                self.cut = true;
            }
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            if ends {
                line(
                    std::mem::take(&mut self.partial),
                    std::mem::replace(&mut self.cut, false),
                );
            }
            chunk = rest;
        }
    }

    /// End of stream: a partial last line is a line.
    pub fn finish(&mut self, line: &mut impl FnMut(Vec<u8>, bool)) {
        if !self.partial.is_empty() || self.cut {
            line(
                std::mem::take(&mut self.partial),
                std::mem::replace(&mut self.cut, false),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<(Vec<u8>, bool)> {
        let mut s = Splitter::new(max);
        let mut out = Vec::new();
        let mut f = |b: Vec<u8>, t: bool| out.push((b, t));
        for c in chunks {
            s.push(c, &mut f);
        }
        s.finish(&mut f);
        out
    }

    #[test]
    fn lines_across_chunks_partial_last_line_and_cuts() {
        let got = split(5, &[b"ab", b"c\nde\xff", b"f\n\nlonger than five\nend"]);
        let want: Vec<(Vec<u8>, bool)> = vec![
            (b"abc".to_vec(), false),
            (b"de\xfff".to_vec(), false),
            (Vec::new(), false),
            (b"longe".to_vec(), true),
            (b"end".to_vec(), false),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        use std::process::ExitStatus;
        assert_eq!(exit_code(Ok(ExitStatus::from_raw(3 << 8))), 3);
        assert_eq!(exit_code(Ok(ExitStatus::from_raw(libc::SIGTERM))), 128 + 15);
    }
}
