//! The agent's API on a running agent (`tripcap run` replaying at capture pace):
//! `/metrics` read by a Prometheus text parser, `/healthz`, `/status`, and
//! `POST /trigger` refused without or with a wrong token, accepted with the
//! right one (the capture records the reason).

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;

const T0: i64 = 1_796_000_000 * 1_000_000_000;
const MS: i64 = 1_000_000;
const TOKEN: &str = "api-test-token-77c1";
const TOKEN_ENV: &str = "TRIPCAP_TEST_API_TOKEN";

fn metric(scrape: &prometheus_parse::Scrape, name: &str) -> Vec<(f64, String)> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .map(|s| {
            let v = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            (v, s.labels.get("interface").unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn api_serves_metrics_status_and_guarded_triggers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    // 20 s of traffic replayed at capture pace: the agent stays up while we ask.
    write_generated(
        &pcap,
        T0,
        10 * MS,
        2000,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    let log = dir.path().join("job.log");
    std::fs::write(&log, "starting\n").expect("log");
    let out = dir.path().join("out");
    let cfg = dir.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!("[api]\nlisten = \"127.0.0.1:0\"\ntoken = \"${{{TOKEN_ENV}}}\"\n"),
    )
    .expect("config");
    let mut cmd = tripcap();
    cmd.arg("run")
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .arg("--from-pcap")
        .arg(&pcap)
        .args(["--speed", "1x", "--pre", "1s", "--post", "1s"])
        .arg("--log")
        .arg(&log)
        .args(["--pattern", "NEVER_MATCHES_ANYTHING"])
        .env(TOKEN_ENV, TOKEN);
    let (mut child, stderr) = spawn_ready(&mut cmd, "api listening on", Duration::from_secs(20));
    let mut text = String::new();
    wait_until(Duration::from_secs(5), "the API address", || {
        text = stderr.lock().expect("log").clone();
        text.contains("api listening on http://")
    });
    let start = text.find("api listening on http://").expect("line") + "api listening on ".len();
    let base: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    // Let some packets through the ring.
    std::thread::sleep(Duration::from_millis(1200));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (health, metrics_text, ctype, status, refusals, accepted) = rt.block_on(async {
        let c = reqwest::Client::new();
        let health = c
            .get(format!("{base}/healthz"))
            .send()
            .await
            .expect("healthz")
            .text()
            .await
            .expect("text");
        let m = c
            .get(format!("{base}/metrics"))
            .send()
            .await
            .expect("metrics");
        let ctype = m
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let metrics_text = m.text().await.expect("text");
        let status: serde_json::Value = c
            .get(format!("{base}/status"))
            .send()
            .await
            .expect("status")
            .json()
            .await
            .expect("json");
        let none = c
            .post(format!("{base}/trigger"))
            .body("no token")
            .send()
            .await
            .expect("post");
        let wrong = c
            .post(format!("{base}/trigger"))
            .bearer_auth("not-the-token")
            .body("wrong token")
            .send()
            .await
            .expect("post");
        let refusals = (none.status().as_u16(), wrong.status().as_u16());
        let ok = c
            .post(format!("{base}/trigger"))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({"reason": "operator saw loss on rail 3"}))
            .send()
            .await
            .expect("post");
        let accepted = (
            ok.status().as_u16(),
            ok.json::<serde_json::Value>().await.expect("json"),
        );
        (health, metrics_text, ctype, status, refusals, accepted)
    });
    let code = interrupt(&mut child);
    let log_text = stderr.lock().expect("log").clone();
    assert!(code.success(), "agent failed: {log_text}");
    assert!(!log_text.contains(TOKEN), "token in the log: {log_text}");

    assert_eq!(health.trim(), "ok");
    assert!(
        ctype.contains("openmetrics") || ctype.contains("text/plain"),
        "{ctype}"
    );
    let scrape = prometheus_parse::Scrape::parse(metrics_text.lines().map(|l| Ok(l.to_string())))
        .expect("metrics parse");
    let packets = metric(&scrape, "tripcap_packets_captured_total");
    assert_eq!(packets.len(), 1, "{metrics_text}");
    assert!(packets[0].0 > 0.0, "packets counted: {metrics_text}");
    assert!(!packets[0].1.is_empty(), "interface label");
    for name in [
        "tripcap_bytes_captured_total",
        "tripcap_kernel_drops_total",
        "tripcap_ring_allocated_bytes",
        "tripcap_ring_span_seconds",
        "tripcap_ring_history_seconds",
        "tripcap_ring_packets",
        "tripcap_ring_bytes_per_packet",
        "tripcap_ring_packed_blocks",
        "tripcap_ring_compression_ratio",
        "tripcap_ring_decode_errors_total",
        "tripcap_ring_evicted_blocks_total",
        "tripcap_triggers_fired_total",
        "tripcap_triggers_suppressed_total",
        "tripcap_captures_written_total",
        "tripcap_uploads_ok_total",
        "tripcap_uploads_failed_total",
        "tripcap_uploads_pending",
        "tripcap_spool_bytes",
        "tripcap_log_files_followed",
        "tripcap_log_lines_read_total",
    ] {
        assert!(
            !metric(&scrape, name).is_empty(),
            "{name} missing: {metrics_text}"
        );
    }
    assert_eq!(metric(&scrape, "tripcap_log_files_followed")[0].0, 1.0);
    // Per-trigger families carry a `trigger` label for every trigger, the manual one included.
    for name in [
        "tripcap_trigger_fired_total",
        "tripcap_trigger_suppressed_total",
    ] {
        let triggers: Vec<&str> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter_map(|s| s.labels.get("trigger"))
            .collect();
        assert!(triggers.contains(&"manual"), "{name}: {metrics_text}");
    }

    assert!(
        status["interfaces"][0]["packets"].as_u64().unwrap_or(0) > 0,
        "{status}"
    );
    assert!(status["ring"]["span_seconds"].is_number(), "{status}");
    assert!(
        status["ring"]["history_seconds"].as_f64() > Some(0.0),
        "{status}"
    );
    assert!(
        status["ring"]["bytes_per_packet"].as_f64() > Some(0.0),
        "{status}"
    );
    assert_eq!(status["ring"]["compress"], true, "{status}");
    assert!(status["queue"]["pending"].is_number(), "{status}");

    assert_eq!(refusals, (401, 403));
    assert_eq!(accepted.0, 202, "{}", accepted.1);
    assert_eq!(accepted.1["outcome"], "opened");
    let incident = accepted.1["incident"]
        .as_str()
        .expect("incident")
        .to_string();
    let side_path = out.join(format!("{incident}.json"));
    let listing: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(side_path.exists(), "{listing:?}\n{log_text}");
    let side = read_sidecar(&side_path);
    assert_eq!(side.triggers.len(), 1, "only the authorized trigger fired");
    assert_eq!(side.triggers[0].name, "manual");
    assert_eq!(
        side.triggers[0].line.as_deref(),
        Some("operator saw loss on rail 3")
    );
}
