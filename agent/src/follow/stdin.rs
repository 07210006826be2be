//! The special path `-`: lines from standard input (`torchrun ... 2>&1 | tripcap ...`).
//!
//! A blocking read of stdin cannot be cancelled, so it runs on a detached thread of its own (not
//! tokio's blocking pool, whose shutdown would wait for it) and hands chunks over a small channel.
//! Lines are split by the same [`LineSplitter`] as files; at end of input the partial line is
//! emitted and stdin is done (it is not reopened).

use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::mpsc::{self, Sender};
use tokio_util::sync::CancellationToken;

use super::lines::{Line, LineSplitter};
use super::{send, FollowOptions, FollowStats, LogLine};

const CHUNK: usize = 64 << 10;

/// Reads stdin until end of input, `shutdown`, or the receiver of `lines` is gone.
pub(crate) async fn run(
    opts: &FollowOptions,
    stats: &FollowStats,
    lines: &Sender<LogLine>,
    shutdown: &CancellationToken,
) {
    let (tx, mut rx) = mpsc::channel::<io::Result<Vec<u8>>>(4);
    let spawned = std::thread::Builder::new()
        .name("tripcap-stdin".into())
        .spawn(move || read_stdin(&tx));
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the stdin reader; not following `-`");
        return;
    }
    let path: Arc<Path> = Arc::from(Path::new("-"));
    let mut splitter = LineSplitter::new(opts.max_line_bytes);
    let mut line_no = 0u64;
    loop {
        let mut ready: Vec<Line> = Vec::new();
        let mut done = false;
        tokio::select! {
            _ = shutdown.cancelled() => return,
            chunk = rx.recv() => match chunk {
                Some(Ok(bytes)) => {
                    stats.bytes_read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    splitter.push(&bytes, |l| ready.push(l));
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "cannot read stdin; not following `-` any more");
                    ready.extend(splitter.flush());
                    done = true;
                }
                None => {
                    ready.extend(splitter.flush());
                    done = true;
                }
            },
            _ = tokio::time::sleep(opts.idle_flush), if splitter.has_partial() => {
                ready.extend(splitter.flush());
            }
        }
        let wall = SystemTime::now();
        for l in ready {
            line_no += 1;
            stats.lines_read.fetch_add(1, Ordering::Relaxed);
            if l.truncated {
                stats.lines_cut.fetch_add(1, Ordering::Relaxed);
            }
            let line = LogLine {
                path: Arc::clone(&path),
                line_no,
                bytes: l.bytes,
                read_at: wall,
                truncated: l.truncated,
            };
            if !send(lines, line, shutdown).await {
                return;
            }
        }
        if done {
            return;
        }
    }
}

/// The reader thread: chunks until end of input, an error, or nobody listening.
fn read_stdin(tx: &mpsc::Sender<io::Result<Vec<u8>>>) {
    let mut stdin = io::stdin().lock();
    loop {
        let mut buf = vec![0u8; CHUNK];
        let msg = match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                Ok(buf)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let last = msg.is_err();
        if tx.blocking_send(msg).is_err() || last {
            return;
        }
    }
}
