//! `tripcap triggers test` and `tripcap triggers list` through the binary.

mod common;

use common::{data_dir, run, tripcap};

const WATCHDOG: &str = "[rank4]:[E226 11:16:37.104512039 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5653, OpType=ALLREDUCE, NumelIn=58720256, NumelOut=58720256, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.";
const RETRY: &str = "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f";
const HEALTHY: &str = "I20241209 23:39:42.495619 138559122262912 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0 Rank 1] ProcessGroupNCCL initialization options: size: 2, global rank: 1, TIMEOUT(ms): 600000";

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn test_reports_each_firing_as_json_with_groups_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("rank4.log");
    // Non-UTF-8 bytes and CRLF must not stop a line from firing.
    let mut text = format!("{HEALTHY}\n{WATCHDOG}\r\nplain line\n").into_bytes();
    text.extend_from_slice(b"\xff\xfe ");
    text.extend_from_slice(RETRY.as_bytes());
    std::fs::write(&log, &text).expect("write log");
    let o = run(tripcap().args(["triggers", "test", "--json"]).arg(&log));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = json_lines(&o.stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["file"], log.display().to_string());
    assert_eq!(rows[0]["line_no"], 2);
    assert_eq!(rows[0]["trigger"], "pytorch-nccl-timeout");
    assert_eq!(rows[0]["class"], "nccl_timeout");
    assert_eq!(rows[0]["groups"]["rank"], "4");
    assert_eq!(rows[0]["groups"]["ran_for_ms"], "600011");
    assert_eq!(rows[0]["stuck_for_ms"], 600_011);
    assert_eq!(rows[1]["line_no"], 4);
    assert_eq!(rows[1]["trigger"], "nccl-ib-retry-exceeded");
    assert_eq!(rows[1]["class"], "nccl_ib_error");
    assert_eq!(rows[1]["groups"]["status"], "12");
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 firing(s) in 4 line(s) of 1 file(s)"));
}

/// Docker's json-file log driver: lines are matched on their `log` text, so the
/// watchdog line's duration still back-dates and a wording that ends the line fires.
#[test]
fn test_reads_docker_json_file_logs_by_what_the_container_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("0123abcd-json.log");
    let entry = |text: &str| {
        serde_json::json!({"log": format!("{text}\n"), "stream": "stderr", "time": "2026-12-07T10:00:00.000000001Z"})
            .to_string()
    };
    let text = [
        entry(HEALTHY),
        entry(WATCHDOG),
        entry("torch.distributed.DistStoreError: Socket Timeout"),
    ]
    .join("\n");
    std::fs::write(&log, text + "\n").expect("write log");
    let o = run(tripcap().args(["triggers", "test", "--json"]).arg(&log));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = json_lines(&o.stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["line_no"], 2);
    assert_eq!(rows[0]["class"], "nccl_timeout");
    assert_eq!(rows[0]["stuck_for_ms"], 600_011);
    assert_eq!(rows[1]["line_no"], 3);
    assert_eq!(rows[1]["class"], "nccl_timeout");
}

#[test]
fn test_without_firings_and_as_a_table_still_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let quiet = dir.path().join("quiet.log");
    std::fs::write(&quiet, format!("{HEALTHY}\n")).expect("write");
    let o = run(tripcap().args(["triggers", "test", "--json"]).arg(&quiet));
    assert!(o.status.success());
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    let loud = dir.path().join("loud.log");
    std::fs::write(&loud, format!("{WATCHDOG}\n")).expect("write");
    let o = run(tripcap().args(["triggers", "test"]).arg(&quiet).arg(&loud));
    assert!(o.status.success());
    let table = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[0].starts_with("FILE:LINE"), "{table}");
    assert!(
        lines[1].contains(&format!("{}:1", loud.display())),
        "{table}"
    );
    assert!(
        lines[1].contains("pytorch-nccl-timeout") && lines[1].contains("seq=5653"),
        "{table}"
    );
}

#[test]
fn test_with_a_config_uses_its_triggers_unless_and_perftest_thresholds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        r#"
[perftest]
bw_below = "100Gb/s"
[[trigger]]
name = "boom"
class = "custom_boom"
pattern = "boom (?P<code>\\d+)"
unless = ["harmless boom"]
"#,
    )
    .expect("write config");
    let log = dir.path().join("job.log");
    let perftest = std::fs::read_to_string(
        data_dir().join("corpus/perftest/ib_write_bw_server_and_client_success_hsn_doc.txt"),
    )
    .expect("corpus perftest file");
    std::fs::write(
        &log,
        format!("boom 7\nharmless boom 8\n{WATCHDOG}\n{perftest}"),
    )
    .expect("write log");
    let o = run(tripcap()
        .args(["triggers", "test", "--json", "--config"])
        .arg(&cfg)
        .arg(&log));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = json_lines(&o.stdout);
    assert_eq!(rows[0]["trigger"], "boom");
    assert_eq!(rows[0]["class"], "custom_boom");
    assert_eq!(rows[0]["groups"]["code"], "7");
    assert!(
        rows.iter().all(|r| r["line_no"] != 2 && r["line_no"] != 3),
        "unless vetoes line 2; the config has no built-in pack for line 3: {rows:?}"
    );
    let slow: Vec<_> = rows
        .iter()
        .filter(|r| r["trigger"] == "perftest-threshold")
        .collect();
    assert!(
        !slow.is_empty(),
        "the corpus run (98 Gb/s) is below 100 Gb/s: {rows:?}"
    );
    assert_eq!(slow[0]["class"], "perftest_threshold");
    assert_eq!(slow[0]["groups"]["breach"], "bw_below");
    assert!(slow[0]["groups"]["bw_average_gbps"].is_string());
}

#[test]
fn list_shows_every_pack_class_and_example_and_patterns_compile_for_grep() {
    let o = run(tripcap().args(["triggers", "list"]));
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for pack in tripcap_triggers::PACK_NAMES {
        assert!(text.contains(&format!("pack {pack}:")), "{pack}: {text}");
    }
    for def in tripcap_triggers::all_packs() {
        assert!(text.contains(&def.name), "{}", def.name);
        assert!(
            text.contains(&format!("class={}", def.class)),
            "{}",
            def.name
        );
        assert!(text.contains(&def.example), "{}", def.name);
        // Every pattern's source (project, file, releases) is listed under its trigger.
        let section: String = text
            .lines()
            .skip_while(|l| !l.starts_with(&format!("  {}  class=", def.name)))
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| format!("{l}\n"))
            .collect();
        for source in def.sources().iter().flat_map(|s| s.split("; ")) {
            assert!(
                section.contains(&format!("    from {source}")),
                "{}: `{source}` not listed in {section}",
                def.name
            );
        }
        assert!(!def.sources().is_empty(), "{} has no sources", def.name);
        assert_eq!(
            section.contains("    fallback: "),
            def.fallback,
            "{}: a fallback says so, and only a fallback",
            def.name
        );
    }
    assert!(
        tripcap_triggers::all_packs().iter().any(|d| d.fallback),
        "the generic pack's triggers are fallbacks"
    );
    let o = run(tripcap().args(["triggers", "list", "--patterns"]));
    assert!(o.status.success());
    let n: usize = tripcap_triggers::all_packs()
        .iter()
        .map(|d| d.patterns.len())
        .sum();
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), n);
}

#[test]
fn unreadable_file_is_one_line_naming_the_fix() {
    let o = run(tripcap().args(["triggers", "test", "/nonexistent/rank0.log"]));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot read `/nonexistent/rank0.log`") && err.contains("check the path"),
        "{err}"
    );
}
