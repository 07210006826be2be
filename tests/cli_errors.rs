//! Bad input gets one clear line naming the fix and a non-zero exit, never a
//! panic: broken configs (with file:line:col), bad regexes and filters, missing
//! interfaces, no permission, unwritable output. A missing log path is waited
//! for, not an error.

mod common;

use std::time::Duration;

use common::*;

/// Run `tripcap ARGS`, expect exit code 2 and return stderr's `tripcap:` line.
fn fails(args: &[&str]) -> String {
    let o = run(tripcap().args(args));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected failure for {args:?}; stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("tripcap:"))
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected: {stderr}");
    lines[0].to_string()
}

fn check_config(text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tripcap.toml");
    std::fs::write(&path, text).expect("write");
    let line = fails(&["check", "--config", path.to_str().expect("utf8")]);
    line.replace(path.to_str().expect("utf8"), "tripcap.toml")
}

#[test]
fn check_reports_each_config_error_with_its_location() {
    assert_eq!(
        check_config("[[trigger]]\nname = \"wd\"\npattern = \"Watchdog (caught\"\n"),
        "tripcap: tripcap.toml:3:11: trigger `wd`: pattern 0 is not a valid regex: unclosed group (in `Watchdog (caught`): fix the regex (syntax: https://docs.rs/regex/#syntax)"
    );
    assert_eq!(
        check_config("[capture]\nfilter = \"udp port 4791 and\"\n"),
        "tripcap: tripcap.toml:2:10: bad capture filter `udp port 4791 and`: syntax error (syntax: `man pcap-filter`)"
    );
    assert_eq!(
        check_config("[[trigger]]\nname = \"wd\"\npattern = \"x\"\npre = \"30\"\n"),
        "tripcap: tripcap.toml:4:7: `pre`: \"30\" has no unit: write \"30s\" (or \"30ms\", \"30m\")"
    );
    assert_eq!(
        check_config("[ring]\nmemory_limit = 1.5\n"),
        "tripcap: tripcap.toml:2:16: `memory_limit` must be a size like \"1GiB\" or a number of bytes, not a float"
    );
    assert_eq!(
        check_config("[capture]\ninterfaces = \"ens1f0np0\"\n"),
        "tripcap: tripcap.toml:2:14: invalid type: string \"ens1f0np0\", expected a sequence"
    );
    assert_eq!(
        check_config("packs = [\"ncl\"]\n"),
        format!(
            "tripcap: tripcap.toml:1:10: unknown trigger pack `ncl`: known packs are {}",
            tripcap_triggers::PACK_NAMES.join(", ")
        )
    );
    assert_eq!(
        check_config("[upload]\nurl = \"ftp://collector/{file}\"\n"),
        "tripcap: [upload] `url` scheme `ftp` is not supported: use http or https"
    );
    let syntax = check_config("[capture\n");
    assert!(syntax.starts_with("tripcap: tripcap.toml:1:"), "{syntax}");
}

#[test]
fn check_accepts_the_example_config() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tripcap.toml");
    let o = run(tripcap().args(["check", "--config", example]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok:"));
}

#[test]
fn run_errors_name_the_fix() {
    assert_eq!(
        fails(&["run", "-i", "nosuch0", "-o", "/tmp/tripcap-test-unused"]),
        "tripcap: interface `nosuch0` does not exist: `tripcap interfaces` lists the ones this machine can capture on"
    );
    assert_eq!(
        fails(&["run", "-i", "lo", "-f", "udp prot 4791", "-o", "/tmp/tripcap-test-unused"]),
        "tripcap: --filter: bad capture filter `udp prot 4791`: syntax error (syntax: `man pcap-filter`)"
    );
    assert!(fails(&["run", "-i", "lo", "--pattern", "a[", "-o", "/tmp/tripcap-test-unused"])
        .starts_with("tripcap: --pattern: trigger `pattern`: pattern 0 is not a valid regex: unclosed character class"));
    assert_eq!(
        fails(&["run", "-o", "/tmp/tripcap-test-unused"]),
        "tripcap: nothing to capture: pass `-i IFACE` (see `tripcap interfaces`), set `capture.interfaces`, or replay a file with `--from-pcap FILE`"
    );
    assert!(fails(&["run", "-i", "lo", "-o", "/proc/tripcap"])
        .starts_with("tripcap: output directory `/proc/tripcap`: cannot create it"));
    assert!(fails(&[
        "run",
        "--from-pcap",
        "/nonexistent.pcap",
        "-o",
        "/tmp/tripcap-test-unused"
    ])
    .starts_with("tripcap: cannot replay `/nonexistent.pcap`: No such file"));
    // clap's own errors for flag values: still one line with the fix.
    let o = run(tripcap().args(["run", "-i", "lo", "--pre", "30"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"30\" has no unit: write \"30s\""));
}

#[test]
fn no_permission_to_capture_is_explained_and_demo_falls_back_to_replay() {
    let nobody = Unprivileged::new();
    let as_nobody = |args: &[&str]| nobody.run(args);
    let o = as_nobody(&["run", "-i", "lo", "-o", "out"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "no permission to capture on `lo`: run tripcap as root or give it CAP_NET_RAW"
        ),
        "{stderr}"
    );

    let o = as_nobody(&["demo", "-o", "demo"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "demo as nobody: {stderr}");
    assert!(
        stderr.contains("cannot capture live (no permission"),
        "{stderr}"
    );
    assert!(stdout.contains("replayed (no live capture)"), "{stdout}");
    let side = sidecars(&nobody.dir.path().join("demo"));
    assert_eq!(side.len(), 1);
    let report = read_sidecar(&side[0]);
    assert_eq!(report.triggers[0].name, "nccl-watchdog");
    assert!(report.packets > 5000);
}

#[test]
fn a_missing_log_path_is_waited_for_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut agent, log) = spawn_ready(
        tripcap()
            .args([
                "run",
                "-i",
                "lo",
                "-f",
                "udp port 4791 and host 127.99.0.9",
                "--pattern",
                "x",
                "--log",
                "/nonexistent/dir/*.log",
                "-o",
            ])
            .arg(dir.path().join("out")),
        "capturing",
        Duration::from_secs(20),
    );
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        agent.try_wait().expect("try_wait").is_none(),
        "agent exited: {}",
        log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    assert!(interrupt(&mut agent).success());
}

// Packet-trigger names (issue 9): captures, sidecars and the recorder's
// trigger list are keyed by name, so each must be non-empty and unique among
// every trigger, the agent's own included. The error points at the `name`.

#[test]
fn check_rejects_an_empty_packet_trigger_name() {
    assert_eq!(
        check_config("[[packet_trigger]]\nname = \" \"\nkind = \"qp_stall\"\n"),
        "tripcap: tripcap.toml:2:8: packet trigger `name` is empty: give it a short name like \"qp-stall\""
    );
}

#[test]
fn check_rejects_a_duplicate_packet_trigger_name() {
    assert_eq!(
        check_config(
            "[[packet_trigger]]\nname = \"stall\"\nkind = \"qp_stall\"\n\n[[packet_trigger]]\nkind = \"retransmit\"\n  name = \"stall\"\n"
        ),
        "tripcap: tripcap.toml:7:10: packet trigger name `stall` is taken by the packet trigger at line 2: give each `[[packet_trigger]]` its own name"
    );
}

#[test]
fn check_rejects_a_packet_trigger_named_like_a_log_trigger() {
    assert_eq!(
        check_config(
            "[[packet_trigger]]\nname = \"wd\"\nkind = \"qp_stall\"\n[[trigger]]\nname = \"wd\"\npattern = \"Watchdog\"\n"
        ),
        "tripcap: tripcap.toml:2:8: packet trigger name `wd` is taken by the log trigger at line 5: give the packet trigger another name (captures are named after their trigger)"
    );
}

#[test]
fn check_rejects_a_packet_trigger_named_like_a_pack_trigger() {
    assert_eq!(
        check_config(
            "packs = [\"nccl\"]\n[[packet_trigger]]\nname = \"nccl-ib-retry-exceeded\"\nkind = \"retransmit\"\n"
        ),
        "tripcap: tripcap.toml:3:8: packet trigger name `nccl-ib-retry-exceeded` is taken by a trigger of pack `nccl`: give the packet trigger another name (captures are named after their trigger)"
    );
}

#[test]
fn check_rejects_a_packet_trigger_named_manual() {
    assert_eq!(
        check_config("[[packet_trigger]]\nname = \"manual\"\nkind = \"nak_rate\"\n"),
        "tripcap: tripcap.toml:2:8: packet trigger name `manual` is reserved for the agent's manual captures: give it another name"
    );
}

#[test]
fn check_rejects_a_packet_trigger_named_perftest_threshold() {
    assert_eq!(
        check_config("[[packet_trigger]]\nname = \"perftest-threshold\"\nkind = \"cnp_rate\"\n"),
        "tripcap: tripcap.toml:2:8: packet trigger name `perftest-threshold` is reserved for perftest results past the `[perftest]` thresholds: give it another name"
    );
}

// RDMA devices (issue 10): a configured `mlx5_X` needs a libpcap that can sniff
// RDMA devices; this build's is asked at run time, and `check` says which.

#[test]
fn check_refuses_an_rdma_device_this_build_cannot_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sys = dir.path().join("sys");
    std::fs::create_dir_all(sys.join("class/infiniband/mlx5_9/device/net/ens9f0np0"))
        .expect("mkdir");
    let text = format!(
        "[capture]\ninterfaces = [\"lo\", \"mlx5_9\"]\n[output]\nsysfs_root = {:?}\n",
        sys
    );
    if tripcap::interfaces::rdma_sniffing() {
        // A build with the sniffer accepts it (the interface is a note: not on this machine).
        let path = dir.path().join("tripcap.toml");
        std::fs::write(&path, &text).expect("write");
        let o = run(tripcap().arg("check").arg("--config").arg(&path));
        assert!(o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("RDMA sniffing: available in this build")
        );
        return;
    }
    assert_eq!(
        check_config(&text),
        "tripcap: tripcap.toml:2:21: interface `mlx5_9` is an RDMA device, and the libpcap in this build cannot capture RDMA devices: build tripcap with scripts/build-rdma.sh (a libpcap with rdma-core's sniffer), or capture the netdev behind it in the NIC's sniffer mode or on a mirror port (`tripcap interfaces` shows both)"
    );
}

#[test]
fn check_and_interfaces_say_whether_this_build_sniffs_rdma() {
    let expect = tripcap::interfaces::sniffing_line(tripcap::interfaces::rdma_sniffing());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tripcap.toml");
    std::fs::write(&path, "[capture]\ninterfaces = [\"lo\"]\n").expect("write");
    let check = run(tripcap().arg("check").arg("--config").arg(&path));
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(out.lines().any(|l| l == expect), "{out}");
    let list = run(tripcap().arg("interfaces"));
    assert!(list.status.success());
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().next(),
        Some(expect.as_str())
    );
}

#[test]
fn fleet_and_host_errors_name_the_key_and_the_fix() {
    assert_eq!(
        check_config("host = \"a/b\"\n"),
        "tripcap: tripcap.toml:1:8: `host` \"a/b\" cannot name files and incidents: use 1 to 64 letters, digits, `.`, `-` and `_`"
    );
    assert_eq!(
        check_config("[fleet]\nnats = \"nats://127.0.0.1:4222\"\njob = \"x\"\npeers = \"all\"\n"),
        "tripcap: tripcap.toml:4:9: unknown variant `all`, expected one of `job`, `named`, `both`"
    );
    assert_eq!(
        check_config("[fleet]\nnats = \"nats://127.0.0.1:4222\"\njob = \"a.b\"\n"),
        "tripcap: [fleet] `job` \"a.b\" cannot name a NATS subject: use letters, digits, `-` and `_` only"
    );
    assert_eq!(
        fails(&["check", "-i", "lo", "--nats", "nats://[::1", "--job", "5"]),
        "tripcap: [fleet] `nats` \"nats://[::1\" is not a NATS URL (NATS server URL is invalid: invalid IPv6 address): write it as nats://HOST:PORT or tls://HOST:PORT"
    );
    assert_eq!(
        fails(&["check", "-i", "lo", "--host", "x y"]),
        "tripcap: --host: host \"x y\" cannot name files and incidents: use 1 to 64 letters, digits, `.`, `-` and `_`"
    );
    // The job comes from SLURM_JOB_ID when not given.
    let o = run(tripcap()
        .args(["check", "-i", "lo", "--nats", "nats://127.0.0.1:4222"])
        .env("SLURM_JOB_ID", "4242"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // No job: neither `job` nor SLURM_JOB_ID.
    let o = run(tripcap()
        .args(["check", "-i", "lo", "--nats", "nats://127.0.0.1:4222"])
        .env_remove("SLURM_JOB_ID"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "tripcap: [fleet] `job` is not set and SLURM_JOB_ID is not in the environment: set `job` (or pass --job)"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
