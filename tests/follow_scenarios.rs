//! The log follower against a real temporary directory, one test per scenario the follower must
//! survive (see `agent/src/follow/mod.rs`). Each test waits with timeouts, never fixed sleeps.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use tripcap::follow::{FollowError, FollowOptions, FollowStats, Follower, LogLine};

const WAIT: Duration = Duration::from_secs(5);

fn fast() -> FollowOptions {
    FollowOptions {
        poll_interval: Duration::from_millis(40),
        max_line_bytes: 64 * 1024,
        idle_flush: Duration::from_millis(300),
        start_existing_at_end: false,
    }
}

/// A running follower and the receiving end of its lines.
struct Run {
    rx: mpsc::Receiver<LogLine>,
    token: CancellationToken,
    task: JoinHandle<()>,
    stats: Arc<FollowStats>,
}

impl Run {
    fn start(globs: &[String], opts: FollowOptions) -> Run {
        Run::start_with_capacity(globs, opts, 1024)
    }

    fn start_with_capacity(globs: &[String], opts: FollowOptions, capacity: usize) -> Run {
        let follower = Follower::new(globs.to_vec(), opts).expect("valid globs");
        let stats = follower.stats();
        let (tx, rx) = mpsc::channel(capacity);
        let token = CancellationToken::new();
        let task = tokio::spawn(follower.run(tx, token.clone()));
        Run {
            rx,
            token,
            task,
            stats,
        }
    }

    async fn next(&mut self) -> LogLine {
        match timeout(WAIT, self.rx.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("follower stopped"),
            Err(_) => panic!("no line within {WAIT:?}"),
        }
    }

    async fn texts(&mut self, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(text(&self.next().await));
        }
        out
    }

    /// Asserts nothing more arrives within `d`.
    async fn quiet(&mut self, d: Duration) {
        if let Ok(Some(line)) = timeout(d, self.rx.recv()).await {
            panic!(
                "unexpected line {:?} from {}",
                text(&line),
                line.path.display()
            );
        }
    }

    /// Waits until the follower follows `n` files (so its first scan is done).
    async fn wait_files(&self, n: u64) {
        let start = Instant::now();
        while self.stats.files_followed.load(Ordering::Relaxed) != n {
            assert!(
                start.elapsed() < WAIT,
                "files_followed stayed {} (want {n})",
                self.stats.files_followed.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn stop(self) {
        self.token.cancel();
        timeout(WAIT, self.task)
            .await
            .expect("run() returns promptly after cancel")
            .expect("run() does not panic");
    }
}

fn text(line: &LogLine) -> String {
    String::from_utf8_lossy(&line.bytes).into_owned()
}

fn append(path: &Path, s: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(s.as_bytes()).expect("append");
}

fn glob_in(dir: &Path, pattern: &str) -> Vec<String> {
    vec![dir.join(pattern).to_string_lossy().into_owned()]
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[tokio::test]
async fn existing_file_starts_at_its_end() {
    let dir = tempdir();
    let log = dir.path().join("rank0.log");
    append(&log, "old 1\nold 2\n");
    let opts = FollowOptions {
        start_existing_at_end: true,
        ..fast()
    };
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), opts);
    run.wait_files(1).await;
    append(&log, "new 1\n");
    let line = run.next().await;
    assert_eq!(text(&line), "new 1");
    assert_eq!(line.line_no, 1);
    assert_eq!(&*line.path, log.as_path());
    assert!(!line.truncated);
    run.quiet(Duration::from_millis(150)).await;
    run.stop().await;
}

#[tokio::test]
async fn default_options_follow_existing_file_from_its_end() {
    let dir = tempdir();
    let log = dir.path().join("rank0.log");
    append(&log, "old\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), FollowOptions::default());
    run.wait_files(1).await;
    append(&log, "new\n");
    assert_eq!(run.texts(1).await, ["new"]);
    run.stop().await;
}

#[tokio::test]
async fn file_appearing_later_is_read_from_its_beginning() {
    let dir = tempdir();
    append(&dir.path().join("sentinel.log"), "s\n");
    let opts = FollowOptions {
        start_existing_at_end: true,
        ..fast()
    };
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), opts);
    run.wait_files(1).await;
    let later = dir.path().join("later.log");
    append(&later, "first\nsecond\n");
    let a = run.next().await;
    let b = run.next().await;
    assert_eq!((text(&a), a.line_no), ("first".to_string(), 1));
    assert_eq!((text(&b), b.line_no), ("second".to_string(), 2));
    assert_eq!(&*a.path, later.as_path());
    run.stop().await;
}

#[tokio::test]
async fn rotate_by_rename_and_create_finishes_old_file_then_reads_new() {
    let dir = tempdir();
    let log = dir.path().join("nccl.log");
    append(&log, "1\n2\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(2).await, ["1", "2"]);
    // The writer still holds the old file and writes after the rename, as a process does until it
    // reopens its log.
    let mut writer = OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("open writer");
    writer.write_all(b"3\n").expect("write");
    fs::rename(&log, dir.path().join("nccl.log.1")).expect("rename");
    append(&log, "4\n");
    writer.write_all(b"late\n").expect("write to rotated file");
    let got: BTreeSet<String> = run.texts(3).await.into_iter().collect();
    assert_eq!(got, BTreeSet::from(["3".into(), "4".into(), "late".into()]));
    run.quiet(Duration::from_millis(150)).await;
    assert!(run.stats.rotations.load(Ordering::Relaxed) >= 1);
    run.stop().await;
}

#[tokio::test]
async fn copytruncate_with_same_length_rewrite_is_detected() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    append(&log, "1\n2\n3\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(3).await, ["1", "2", "3"]);
    // logrotate copytruncate: copy, then truncate in place; then new lines of exactly the old
    // length, so only the fingerprint before the offset shows the change.
    fs::copy(&log, dir.path().join("a.log.1")).expect("copy");
    OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    append(&log, "4\n5\n6\n");
    let got = run.texts(3).await;
    assert_eq!(got, ["4", "5", "6"]);
    run.quiet(Duration::from_millis(150)).await;
    assert!(run.stats.truncations.load(Ordering::Relaxed) >= 1);
    run.stop().await;
}

#[tokio::test]
async fn truncate_then_regrow_longer_reads_only_new_content() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    append(&log, "aaaa\nbbbb\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(2).await, ["aaaa", "bbbb"]);
    OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    append(&log, "cccccccccccccccccccc\ndd\n");
    let first = run.next().await;
    assert_eq!(text(&first), "cccccccccccccccccccc");
    assert_eq!(first.line_no, 1, "line numbers restart after truncation");
    assert_eq!(run.texts(1).await, ["dd"]);
    run.quiet(Duration::from_millis(150)).await;
    run.stop().await;
}

#[tokio::test]
async fn truncate_to_shorter_restarts_at_zero() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    append(&log, "a long first line\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(1).await, ["a long first line"]);
    File::create(&log).expect("truncate by create");
    append(&log, "x\n");
    assert_eq!(run.texts(1).await, ["x"]);
    assert!(run.stats.truncations.load(Ordering::Relaxed) >= 1);
    run.stop().await;
}

#[tokio::test]
async fn delete_and_recreate() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    append(&log, "1\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(1).await, ["1"]);
    // Unread line in the old file, deleted at once: still read through the open descriptor.
    append(&log, "2\n");
    fs::remove_file(&log).expect("delete");
    append(&log, "3\n");
    let got: BTreeSet<String> = run.texts(2).await.into_iter().collect();
    assert_eq!(got, BTreeSet::from(["2".into(), "3".into()]));
    // Deleted and gone for a while: waited for.
    fs::remove_file(&log).expect("delete");
    run.quiet(Duration::from_millis(150)).await;
    append(&log, "4\n");
    assert_eq!(run.texts(1).await, ["4"]);
    run.stop().await;
}

#[tokio::test]
async fn directory_removed_and_recreated_like_a_torchrun_restart() {
    let dir = tempdir();
    let globs = vec![dir
        .path()
        .join("attempt_*/*/stderr.log")
        .to_string_lossy()
        .into_owned()];
    let mut run = Run::start(&globs, fast());
    let attempt = |n: u32| dir.path().join(format!("attempt_{n}/0"));
    fs::create_dir_all(attempt(0)).expect("mkdir");
    append(&attempt(0).join("stderr.log"), "attempt 0\n");
    assert_eq!(run.texts(1).await, ["attempt 0"]);
    fs::remove_dir_all(dir.path().join("attempt_0")).expect("rm -r");
    fs::create_dir_all(attempt(1)).expect("mkdir");
    append(&attempt(1).join("stderr.log"), "attempt 1\n");
    assert_eq!(run.texts(1).await, ["attempt 1"]);
    // The same directory name again.
    fs::remove_dir_all(dir.path().join("attempt_1")).expect("rm -r");
    fs::create_dir_all(attempt(1)).expect("mkdir");
    append(&attempt(1).join("stderr.log"), "attempt 1 again\n");
    assert_eq!(run.texts(1).await, ["attempt 1 again"]);
    run.quiet(Duration::from_millis(150)).await;
    run.stop().await;
}

#[tokio::test]
async fn nul_holes_from_writer_without_o_append_are_skipped() {
    let dir = tempdir();
    let log = dir.path().join("nccl.host.123.log");
    // NCCL opens its debug file with fopen(path, "w"): no O_APPEND.
    let mut writer = File::create(&log).expect("create");
    writer.write_all(b"l1\nl2\n").expect("write");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(2).await, ["l1", "l2"]);
    // copytruncate: the writer keeps its offset, leaving a hole of NULs before its next line.
    OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    writer.write_all(b"l3\n").expect("write after truncate");
    // A hole in the middle too.
    writer.seek(SeekFrom::Current(4096)).expect("seek");
    writer.write_all(b"l4\n").expect("write after hole");
    assert_eq!(run.texts(2).await, ["l3", "l4"]);
    run.quiet(Duration::from_millis(150)).await;
    run.stop().await;
}

#[tokio::test]
async fn partial_last_line_is_flushed_after_idle() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    let written = Instant::now();
    append(&log, "no newline yet");
    let line = run.next().await;
    assert_eq!(text(&line), "no newline yet");
    assert!(
        written.elapsed() >= Duration::from_millis(300),
        "flushed after {:?}, before idle_flush",
        written.elapsed()
    );
    append(&log, " rest\nnext\n");
    assert_eq!(run.texts(2).await, [" rest", "next"]);
    run.stop().await;
}

#[tokio::test]
async fn partial_line_completed_before_idle_is_one_line() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    append(&log, "hello ");
    tokio::time::sleep(Duration::from_millis(100)).await;
    append(&log, "world\n");
    assert_eq!(run.texts(1).await, ["hello world"]);
    run.stop().await;
}

#[tokio::test]
async fn long_line_is_cut_and_counted() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let opts = FollowOptions {
        max_line_bytes: 16,
        ..fast()
    };
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), opts);
    append(&log, &format!("{}\nshort\n", "x".repeat(100)));
    let cut = run.next().await;
    assert_eq!(cut.bytes, vec![b'x'; 16]);
    assert!(cut.truncated);
    let short = run.next().await;
    assert_eq!(
        (text(&short), short.truncated),
        ("short".to_string(), false)
    );
    assert_eq!(run.stats.lines_cut.load(Ordering::Relaxed), 1);
    run.stop().await;
}

#[tokio::test]
async fn non_utf8_bytes_pass_through() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    let raw: &[u8] = b"NCCL WARN \xff\xfe \xc3\x28 end\r";
    let mut f = File::create(&log).expect("create");
    f.write_all(raw)
        .and_then(|()| f.write_all(b"\n"))
        .expect("write");
    assert_eq!(run.next().await.bytes, raw);
    run.stop().await;
}

#[tokio::test]
async fn two_hundred_files() {
    let dir = tempdir();
    let mut run = Run::start(&glob_in(dir.path(), "rank*.log"), fast());
    for i in 0..200 {
        append(
            &dir.path().join(format!("rank{i}.log")),
            &format!("{i} a\n{i} b\n"),
        );
    }
    let mut got = BTreeSet::new();
    for _ in 0..400 {
        let line = run.next().await;
        assert!(got.insert(text(&line)), "duplicate line {}", text(&line));
    }
    for i in 0..200 {
        assert!(got.contains(&format!("{i} a")) && got.contains(&format!("{i} b")));
    }
    run.wait_files(200).await;
    run.quiet(Duration::from_millis(100)).await;
    run.stop().await;
}

#[tokio::test]
async fn backpressure_delays_but_never_drops() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let mut run = Run::start_with_capacity(&glob_in(dir.path(), "*.log"), fast(), 1);
    let all: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    append(&log, &all);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..2000u64 {
        let line = run.next().await;
        assert_eq!(text(&line), format!("line {i}"));
        assert_eq!(line.line_no, i + 1);
    }
    run.stop().await;
}

#[tokio::test]
async fn literal_path_that_does_not_exist_yet_is_waited_for() {
    let dir = tempdir();
    let log = dir.path().join("sub/dir/rank0.log");
    let mut run = Run::start(&[log.to_string_lossy().into_owned()], fast());
    run.quiet(Duration::from_millis(120)).await;
    fs::create_dir_all(log.parent().unwrap_or(dir.path())).expect("mkdir");
    append(&log, "hello\n");
    assert_eq!(run.texts(1).await, ["hello"]);
    run.stop().await;
}

#[tokio::test]
async fn unreadable_file_is_retried_not_fatal() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    append(&log, "secret\n");
    let mut perms = fs::metadata(&log).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o000);
    fs::set_permissions(&log, perms.clone()).expect("chmod");
    let readable_anyway = File::open(&log).is_ok(); // root ignores permissions
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    if !readable_anyway {
        run.quiet(Duration::from_millis(150)).await;
    }
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    fs::set_permissions(&log, perms).expect("chmod");
    assert_eq!(run.texts(1).await, ["secret"]);
    run.stop().await;
}

#[tokio::test]
async fn shutdown_stops_run_and_dropped_receiver_stops_run() {
    let dir = tempdir();
    let run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    run.stop().await;

    let follower = Follower::new(glob_in(dir.path(), "*.log"), fast()).expect("valid");
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    append(&dir.path().join("a.log"), "x\n");
    timeout(WAIT, follower.run(tx, CancellationToken::new()))
        .await
        .expect("run() ends when nobody receives");
}

#[test]
fn bad_glob_is_a_one_line_error_naming_glob_and_fix() {
    let err = Follower::new(vec!["/logs/[rank*.log".into()], FollowOptions::default())
        .expect_err("an error");
    assert!(matches!(err, FollowError::BadGlob { .. }));
    let msg = err.to_string();
    assert!(msg.contains("`/logs/[rank*.log`"), "{msg}");
    assert!(msg.contains("fix"), "{msg}");
    assert!(!msg.contains('\n'));
    assert!(Follower::new(
        vec!["-".into(), "/logs/*.log".into()],
        FollowOptions::default()
    )
    .is_ok());
}

#[tokio::test]
async fn rotated_file_rewritten_in_place_is_not_read_again() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let old = dir.path().join("a.log.1");
    append(&log, "1\n2\n");
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), fast());
    assert_eq!(run.texts(2).await, ["1", "2"]);
    fs::rename(&log, &old).expect("rename");
    append(&log, "3\n");
    assert_eq!(run.texts(1).await, ["3"]);
    // copytruncate of the new file into the old rotated name: rewrites the rotated inode, which
    // the follower still holds open.
    fs::copy(&log, &old).expect("copy over rotated file");
    OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    append(&log, "4\n");
    assert_eq!(run.texts(1).await, ["4"]);
    run.quiet(Duration::from_millis(150)).await;
    run.stop().await;
}

#[tokio::test]
async fn inotify_wakes_the_poller_long_before_its_interval() {
    let dir = tempdir();
    let log = dir.path().join("a.log");
    let opts = FollowOptions {
        poll_interval: Duration::from_secs(60),
        ..fast()
    };
    let mut run = Run::start(&glob_in(dir.path(), "*.log"), opts);
    // Keep writing until the directory watch is in place and a write wakes the poller.
    let start = Instant::now();
    let mut n = 0;
    let line = loop {
        n += 1;
        append(&log, &format!("{n}\n"));
        if let Ok(Some(line)) = timeout(Duration::from_millis(100), run.rx.recv()).await {
            break line;
        }
        assert!(start.elapsed() < WAIT, "no wake-up within {WAIT:?}");
    };
    assert_eq!(text(&line), "1");
    run.stop().await;
}

/// Helper for `stdin_is_followed_as_dash`: does nothing unless started by it as a child process,
/// where it follows `-` and prints each line.
#[tokio::test]
async fn stdin_child_process_helper() {
    if std::env::var_os("TRIPCAP_FOLLOW_STDIN_CHILD").is_none() {
        return;
    }
    let opts = FollowOptions {
        idle_flush: Duration::from_millis(200),
        ..fast()
    };
    let follower = Follower::new(vec!["-".into()], opts).expect("valid");
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(follower.run(tx, CancellationToken::new()));
    // The channel closes when run() returns at the end of input.
    while let Some(line) = rx.recv().await {
        println!(
            "LINE:{}:{}:{}",
            &*line.path.to_string_lossy(),
            line.line_no,
            text(&line)
        );
    }
    task.await.expect("run() does not panic");
}

#[test]
fn stdin_is_followed_as_dash() {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().expect("test binary path");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "stdin_child_process_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TRIPCAP_FOLLOW_STDIN_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    {
        let mut stdin = child.stdin.take().expect("child stdin");
        stdin
            .write_all(b"a\nb\nno newline at end of input")
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("child output");
    assert!(out.status.success());
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        // The harness may print "test ... " on the same line before the first one.
        .filter_map(|l| l.split_once("LINE:").map(|(_, rest)| rest.to_string()))
        .collect();
    assert_eq!(lines, ["-:1:a", "-:2:b", "-:3:no newline at end of input"]);
}
