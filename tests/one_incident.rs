//! One failure is printed several times (watchdog line, "Timeout at NCCL work",
//! "Some NCCL operations…", "To avoid data inconsistency…", the watchdog
//! thread's exception, `terminate called…`, `what():`), by more than one
//! built-in trigger: it must make one capture, every line recorded or counted.
//! Real corpus lines, real follower, a realtime replay.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;

const S: i64 = 1_000_000_000;

#[test]
fn one_failure_printed_seven_times_is_one_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    // positives.tsv: vllm#6042 rows 2-6 (nccl_timeout), sglang#1693 row 107 (`what():`)
    // and row 108 (`terminate called`, nccl_system_error: another trigger).
    let lines: Vec<String> = [2, 3, 4, 5, 6, 107, 108]
        .iter()
        .map(|&n| corpus_line("positives.tsv", n))
        .collect();
    let RealtimeReplay {
        child, log, out, ..
    } = start_realtime_replay(
        dir.path(),
        1_796_000_000 * S,
        10_000_000,
        500,
        0x21,
        "packs = [\"nccl\", \"pytorch\"]\n[output]\nreports = false",
    );
    std::thread::sleep(Duration::from_millis(1500));
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("log");
        for l in &lines {
            writeln!(f, "{l}").expect("write");
        }
    }
    let o = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");

    let files = sidecars(&out);
    assert_eq!(
        files.len(),
        1,
        "one capture for one failure: {files:?}\n{stderr}"
    );
    let side = read_sidecar(&files[0]);
    let names: std::collections::BTreeSet<&str> =
        side.triggers.iter().map(|t| t.name.as_str()).collect();
    let classes: std::collections::BTreeSet<&str> =
        side.triggers.iter().map(|t| t.class.as_str()).collect();
    assert!(
        classes.contains("nccl_timeout") && classes.contains("nccl_system_error"),
        "{classes:?} from {names:?}"
    );
    assert_eq!(
        side.triggers.len() as u64 + side.suppressed_matches,
        lines.len() as u64,
        "every line recorded or counted: {names:?}, suppressed {}",
        side.suppressed_matches
    );
}
