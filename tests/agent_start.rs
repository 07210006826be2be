//! Starting the agent: when a later part fails to start, everything already
//! started is stopped and the error comes back (and `tripcap run` exits with
//! it), with nothing left running.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tripcap::agent::Agent;
use tripcap::config::Config;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn config(dir: &std::path::Path, port: u16) -> Config {
    let log = dir.join("job.log");
    std::fs::write(&log, b"").expect("log");
    let text = format!(
        "[capture]\ninterfaces = [\"lo\", \"tripcapnosuch0\"]\n\n[api]\nlisten = \"127.0.0.1:{port}\"\n\n\
         [logs]\npaths = [{log:?}]\n\n[output]\ndir = {:?}\n",
        dir.join("out")
    );
    Config::parse("t.toml", &text).expect("config parses")
}

#[test]
fn a_second_interface_that_does_not_open_stops_what_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = common::free_port();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let before = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(50)).await; // workers up
        threads()
    });
    let err = rt
        .block_on(Agent::builder(config(dir.path(), port)).start(CancellationToken::new()))
        .err()
        .expect("the second interface does not exist");
    let message = err.to_string();
    assert!(message.contains("tripcapnosuch0"), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    // The API had bound its port: it is free again.
    TcpListener::bind(("127.0.0.1", port)).expect("the API's port was released");
    // No part left running: the runtime's own threads only.
    let after = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        threads()
    });
    assert!(
        after <= before + 1,
        "threads: {before} before, {after} after"
    );
}

#[test]
fn tripcap_run_exits_with_the_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = common::free_port();
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        format!("[capture]\ninterfaces = [\"lo\", \"tripcapnosuch0\"]\n\n[api]\nlisten = \"127.0.0.1:{port}\"\n"),
    )
    .expect("config");
    let o = common::tripcap()
        .args(["run", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .expect("run");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr.lines().last().unwrap_or("");
    assert!(last.contains("tripcapnosuch0"), "{stderr}");
}

/// The agent's stderr goes away (the terminal closed, the log pipe's reader died):
/// SIGTERM must still stop it. A log line that cannot be written used to panic the
/// task that logged it, and the signal task logged before it cancelled.
#[test]
fn an_agent_whose_stderr_closed_still_stops_on_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = common::tripcap()
        .args(["run", "-i", "lo", "-o"])
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        let mut r = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        while !line.contains("capturing") {
            line.clear();
            assert!(r.read_line(&mut line).expect("read") > 0, "exited early");
        }
    } // the read end closes here: every later log line fails to write
      // SAFETY: plain kill(2) on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the agent did not stop on SIGTERM with its stderr closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}
