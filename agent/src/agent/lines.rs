//! The agent's log-line path: lines from the follower (and a wrapped job's
//! output) are matched and fire the recorder, placed on the right clock; and
//! lingering, which keeps a stopping agent capturing while a capture that a
//! last line opened is still inside its `post`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;
use tokio_util::sync::CancellationToken;

use crate::clock::now_ns;
use crate::follow::LogLine;
use crate::matcher::Matcher;
use crate::recorder::Recorder;
use crate::ring::Ring;

/// Lingering lasts at most the longest `post` plus this (the watermark lag).
pub const LINGER_SLACK: Duration = Duration::from_secs(2);

/// What "now" is for a log line: the wall clock when capturing live, the
/// replay's position when replaying.
pub enum Clock {
    /// Live capture.
    Wall,
    /// Replay: the newest packet in the ring.
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

/// Match every line and fire the recorder until `lines` closes. Each firing is
/// placed by the line's evidence (its timestamp, how long it says the
/// operation was stuck) read against `clock`; see [`crate::matcher`].
pub async fn match_lines(
    lines: Receiver<LogLine>,
    matcher: Matcher,
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

/// Wait until the lines read before stopping are matched (`lines_done`), then
/// while `recorder` has open captures: in all at most its longest `post` +
/// [`LINGER_SLACK`], or until `abort` is cancelled.
pub async fn linger(
    recorder: &Recorder,
    abort: &CancellationToken,
    lines_done: &CancellationToken,
) {
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
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}
