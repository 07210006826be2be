//! The Slurm prolog/epilog pair, run as Slurm would (as root, with
//! `SLURM_JOB_ID`): the prolog starts one real agent for the job, a second
//! prolog for the same job starts none, and the epilog stops it cleanly.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;

fn script(name: &str, dir: &Path, job: &str) -> std::process::Output {
    Command::new("bash")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("deploy/slurm")
                .join(name),
        )
        .env("SLURM_JOB_ID", job)
        .env("TRIPCAP_BIN", env!("CARGO_BIN_EXE_tripcap"))
        .env("TRIPCAP_CONFIG", dir.join("tripcap.toml"))
        .env("TRIPCAP_RUN_DIR", dir.join("run"))
        .env("TRIPCAP_STATE_DIR", dir.join("state"))
        .env("TRIPCAP_NCCL_LOG_DIR", dir.join("nccl"))
        .env("TRIPCAP_INTERFACES", "lo")
        .output()
        .expect("bash runs")
}

fn agents_of(job: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|p| {
                    std::fs::read(p.path().join("environ"))
                        .map(|env| {
                            env.split(|&b| b == 0)
                                .any(|kv| kv == format!("SLURM_JOB_ID={job}").as_bytes())
                        })
                        .unwrap_or(false)
                        && std::fs::read_to_string(p.path().join("comm"))
                            .is_ok_and(|c| c.trim() == "tripcap")
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn one_agent_per_job_and_the_epilog_stops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("run")).expect("mkdir");
    std::fs::write(
        dir.path().join("tripcap.toml"),
        "[capture]\nfilter = \"udp port 4791 and host 127.96.0.2\"\n",
    )
    .expect("config");
    let job = format!("t{}", std::process::id());

    let first = script("prolog.sh", dir.path(), &job);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    wait_until(Duration::from_secs(10), "the job's agent", || {
        agents_of(&job) == 1
    });
    let pid = std::fs::read_to_string(dir.path().join(format!("run/tripcap-{job}.pid")))
        .expect("pid file");

    let second = script("prolog.sh", dir.path(), &job);
    assert!(second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains(&format!("an agent for job {job} already runs")),
        "{said}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(agents_of(&job), 1, "a second prolog started a second agent");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(format!("run/tripcap-{job}.pid")))
            .expect("pid file"),
        pid
    );

    let stop = script("epilog.sh", dir.path(), &job);
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    assert_eq!(agents_of(&job), 0, "the epilog stopped the agent");
    assert!(!dir.path().join(format!("run/tripcap-{job}.pid")).exists());
    let log = std::fs::read_to_string(dir.path().join(format!("state/tripcap-{job}.log")))
        .unwrap_or_default();
    assert!(log.contains("capturing"), "the agent ran: {log}");
}
