//! The follower under a descriptor limit far below the number of files it follows: it must not
//! crash, and must lose no line (files are closed and reopened with their offsets kept).
//! Its own test binary, because it lowers `RLIMIT_NOFILE` for the whole process.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use tripcap::follow::{FollowOptions, Follower, LogLine};

/// Appends, waiting while the follower (same process) holds every descriptor: it gives some
/// back once it has seen `EMFILE` itself.
async fn append(path: &Path, s: &str) {
    for _ in 0..200 {
        match OpenOptions::new().create(true).append(true).open(path) {
            Ok(mut f) => return f.write_all(s.as_bytes()).expect("append"),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("open {}: {e}", path.display()),
        }
    }
    panic!("descriptors never came back");
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64)
}

fn set_soft_nofile(n: u64) -> libc::rlimit {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let new = libc::rlimit {
            rlim_cur: n.min(old.rlim_max),
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &new), 0);
    }
    old
}

async fn expect_lines(rx: &mut mpsc::Receiver<LogLine>, want: &BTreeSet<String>) {
    let mut got = BTreeSet::new();
    while got.len() < want.len() {
        let line = match timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(line)) => line,
            _ => panic!("only {} of {} lines arrived", got.len(), want.len()),
        };
        let s = String::from_utf8_lossy(&line.bytes).into_owned();
        assert!(want.contains(&s), "unexpected line {s:?}");
        assert!(got.insert(s.clone()), "line {s:?} arrived twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fd_limit_below_file_count_loses_nothing() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = FollowOptions {
        poll_interval: Duration::from_millis(30),
        start_existing_at_end: false,
        ..FollowOptions::default()
    };
    let follower = Follower::new(
        vec![dir.path().join("*.log").to_string_lossy().into_owned()],
        opts,
    )
    .expect("valid glob");
    let stats = follower.stats();
    let (tx, mut rx) = mpsc::channel(4096);
    let token = CancellationToken::new();
    // Room for the runtime, the writer and a few dozen log files: far fewer than 200.
    let old = set_soft_nofile(open_fds() + 40);
    let task = tokio::spawn(follower.run(tx, token.clone()));

    let path = |i: usize| dir.path().join(format!("rank{i}.log"));
    let mut want = BTreeSet::new();
    for i in 0..200 {
        append(&path(i), &format!("{i} a\n{i} b\n")).await;
        want.insert(format!("{i} a"));
        want.insert(format!("{i} b"));
    }
    expect_lines(&mut rx, &want).await;
    // Again, after most files were closed to make room: reopened at their offsets.
    let mut more = BTreeSet::new();
    for i in 0..200 {
        append(&path(i), &format!("{i} c\n")).await;
        more.insert(format!("{i} c"));
    }
    expect_lines(&mut rx, &more).await;
    assert_eq!(
        stats
            .files_followed
            .load(std::sync::atomic::Ordering::Relaxed),
        200
    );

    token.cancel();
    timeout(Duration::from_secs(5), task)
        .await
        .expect("run() stops")
        .expect("run() does not panic");
    // SAFETY: restoring the limit read above.
    unsafe {
        libc::setrlimit(libc::RLIMIT_NOFILE, &old);
    }
}
