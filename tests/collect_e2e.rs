//! The collector as users run it (`tripcap collect`), fed by the agent as users
//! run it (`tripcap run --from-pcap … [upload]`), over HTTP on 127.0.0.1; its
//! refusals; and its page opened in headless Chromium.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use sha2::{Digest, Sha256};

const T0: i64 = 1_796_000_000 * 1_000_000_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const TOKEN: &str = "collector-test-token-5b1f";
const TOKEN_ENV: &str = "TRIPCAP_TEST_COLLECT_TOKEN";

fn collector(dir: &Path) -> Collector {
    collector_with(dir, &[])
}

/// A collector with `extra` command-line arguments.
fn collector_with(dir: &Path, extra: &[&str]) -> Collector {
    start_collector(&dir.join("collected"), TOKEN_ENV, TOKEN, extra)
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Replay 3000 generated packets through an agent uploading to `c`, with one
/// manual trigger keeping 1 s of them; returns the agent's output directory and stderr.
fn agent_replay_uploading_to(c: &Collector, dir: &Path) -> (PathBuf, String) {
    let pcap = dir.join("in.pcap");
    write_generated(
        &pcap,
        T0,
        MS,
        3000,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    let out = dir.join("out");
    let cfg = dir.join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[upload]\nurl = \"{}/upload/{{host}}/{{incident}}/{{file}}\"\nheaders = {{ Authorization = \"Bearer ${{{TOKEN_ENV}}}\" }}\nmin_backoff = \"50ms\"\n",
            c.url
        ),
    )
    .expect("config");
    let t = T0 + S;
    let o = run(tripcap()
        .arg("run")
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .arg("--from-pcap")
        .arg(&pcap)
        .args(["--pre", "500ms", "--post", "500ms", "--upload-wait", "30s"])
        .arg("--trigger-at")
        .arg(format!("{}.{:09}", t / S, t % S))
        .env(TOKEN_ENV, TOKEN));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (out, stderr)
}

#[test]
fn agent_replay_uploads_to_the_collector_byte_identical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = collector(dir.path());
    let (out, stderr) = agent_replay_uploading_to(&c, dir.path());
    assert!(stderr.contains("capture uploaded"), "{stderr}");
    assert!(
        !stderr.contains(TOKEN),
        "the token leaked into the log: {stderr}"
    );

    let side = read_sidecar(&sidecars(&out)[0]);
    let local = std::fs::read(out.join(&side.file)).expect("local capture");
    let remote_path = c.dir.join(&side.incident).join(&side.host).join(&side.file);
    let remote = std::fs::read(&remote_path).expect("collected capture");
    assert_eq!(sha(&remote), sha(&local));
    assert_eq!(remote, local, "pcapng byte-identical at the far end");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&remote_path).expect("meta").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(tshark_rows_any(&remote_path), side.packets as usize);

    let page = rt().block_on(async {
        reqwest::get(format!("{}/", c.url))
            .await
            .expect("page")
            .text()
            .await
            .expect("text")
    });
    assert!(page.contains(&side.incident), "{page}");
    assert!(
        page.contains(&format!("Host <code>{}</code>", side.host)),
        "{page}"
    );
    assert!(page.contains(&format!(
        "/files/{}/{}/{}",
        side.incident, side.host, side.file
    )));
}

#[test]
fn collector_refuses_bad_auth_and_bad_checksums_and_is_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = collector(dir.path());
    let body = b"pcapng bytes".to_vec();
    let good = sha(&body);
    let url = format!("{}/upload/h1/inc-1/inc-1.pcapng", c.url);
    rt().block_on(async {
        let client = reqwest::Client::new();
        let put = |token: Option<&str>, digest: &str, body: Vec<u8>| {
            let mut r = client
                .put(&url)
                .header("x-content-sha256", digest)
                .body(body);
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            r.send()
        };
        let s = |r: reqwest::Response| r.status().as_u16();
        assert_eq!(s(put(None, &good, body.clone()).await.expect("send")), 401);
        assert_eq!(
            s(put(Some("wrong"), &good, body.clone()).await.expect("send")),
            403
        );
        let bad = put(Some(TOKEN), &sha(b"other"), body.clone())
            .await
            .expect("send");
        assert_eq!(s(bad), 422);
        assert!(!c.dir.join("inc-1/h1/inc-1.pcapng").exists());
        assert_eq!(
            s(put(Some(TOKEN), &good, body.clone()).await.expect("send")),
            201
        );
        // A retry: acknowledged, not stored twice.
        assert_eq!(
            s(put(Some(TOKEN), &good, body.clone()).await.expect("send")),
            200
        );
        // Same name, other content: a conflict, never an overwrite.
        let other = b"different".to_vec();
        assert_eq!(
            s(put(Some(TOKEN), &sha(&other), other).await.expect("send")),
            409
        );
        // Names that are not plain names.
        let r = client
            .put(format!("{}/upload/h1/..%2Fetc/passwd", c.url))
            .bearer_auth(TOKEN)
            .header("x-content-sha256", &good)
            .body(body.clone())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 400);
        let r = client
            .put(format!("{}/upload/h1/inc-1/x.pcapng", c.url))
            .bearer_auth(TOKEN)
            .body(body.clone())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 400, "no checksum");
    });
    let stored: Vec<_> = std::fs::read_dir(c.dir.join("inc-1/h1"))
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        std::fs::read(c.dir.join("inc-1/h1/inc-1.pcapng")).expect("read"),
        body
    );
}

/// Concurrent uploads of one name with different contents: exactly one is
/// stored (201), whole, and every other gets 409 Conflict; never an overwrite,
/// never a mix, no temporary left behind. Many rounds, since it is a race.
#[test]
fn concurrent_uploads_of_one_name_store_exactly_one() {
    const ROUNDS: usize = 25;
    const CONTENDERS: usize = 3;
    const SIZE: usize = 512 << 10;
    let dir = tempfile::tempdir().expect("tempdir");
    let c = collector(dir.path());
    let client = reqwest::Client::new();
    rt().block_on(async {
        for round in 0..ROUNDS {
            let file = format!("race-{round}.pcapng");
            let url = format!("{}/upload/h1/inc-race/{file}", c.url);
            let bodies: Vec<Vec<u8>> = (0..CONTENDERS)
                .map(|k| {
                    (0..SIZE)
                        .map(|i| {
                            ((i as u32).wrapping_mul(2_654_435_761) >> 24) as u8 ^ (k as u8 + 1)
                        })
                        .collect()
                })
                .collect();
            let sends = bodies.iter().map(|b| {
                client
                    .put(&url)
                    .bearer_auth(TOKEN)
                    .header("x-content-sha256", sha(b))
                    .body(b.clone())
                    .send()
            });
            let statuses: Vec<u16> = futures_util::future::join_all(sends)
                .await
                .into_iter()
                .map(|r| r.expect("send").status().as_u16())
                .collect();
            let winners: Vec<usize> = (0..CONTENDERS).filter(|&k| statuses[k] == 201).collect();
            assert_eq!(winners.len(), 1, "round {round}: statuses {statuses:?}");
            assert!(
                statuses.iter().all(|&s| s == 201 || s == 409),
                "round {round}: statuses {statuses:?}"
            );
            let stored = std::fs::read(c.dir.join("inc-race/h1").join(&file)).expect("stored");
            assert!(
                stored == bodies[winners[0]],
                "round {round}: the stored file is not the content that got 201"
            );
        }
    });
    let names: Vec<String> = walk(&c.dir.join("inc-race/h1"));
    assert_eq!(names.len(), ROUNDS, "one file per name, no .tmp: {names:?}");
}

const TRIGGER_LINE: &str =
    "node7:1234:1290 [3] NCCL WARN Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE) ran for 600034 milliseconds before timing out.";

/// Upload a synthetic unit (with a trigger line and an SVG) through the agent's uploader.
fn upload_synthetic(url: &str, incident: &str, host: &str, at_ns: i64) {
    let spool = tempfile::tempdir().expect("tempdir");
    let d = spool.path();
    write_unit(
        d,
        incident,
        host,
        at_ns,
        TRIGGER_LINE,
        b"\x0a\x0d\x0d\x0a fake",
    );
    std::env::set_var(TOKEN_ENV, TOKEN);
    let mut cfg =
        tripcap::deliver::UploadConfig::new(format!("{url}/upload/{{host}}/{{incident}}/{{file}}"));
    cfg.headers
        .insert("Authorization".into(), format!("Bearer ${{{TOKEN_ENV}}}"));
    rt().block_on(async {
        let u = tripcap::deliver::Uploader::new(host.into(), cfg).expect("uploader");
        let t = tripcap::deliver::DeliveryTask::new(d.to_path_buf(), Default::default(), Some(u));
        let stats = t.stats();
        let notify = t.notifier();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(t.run(stop.clone()));
        assert!(
            tripcap::deliver::wait_drained(&stats, &notify, Duration::from_secs(20)).await,
            "uploaded"
        );
        stop.cancel();
        let _ = task.await;
        assert_eq!(
            stats.uploads_ok.load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    });
}

#[test]
fn collector_page_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = collector(dir.path());
    let incident = "20261130T021427Z-node7-nccl-watchdog-timeout";
    upload_synthetic(&c.url, incident, "node7", 1_796_004_867_500_000_000);
    // Uploaded later, but its incident is older.
    upload_synthetic(
        &c.url,
        "20261129T010000Z-node3-manual",
        "node3",
        1_795_914_000_000_000_000,
    );

    // The SVG is served as an image.
    let svg_url = format!("{}/files/{incident}/node7/{incident}.svg", c.url);
    let ctype = rt().block_on(async {
        let r = reqwest::get(&svg_url).await.expect("svg");
        assert!(r.status().is_success());
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    assert_eq!(ctype.as_deref(), Some("image/svg+xml"));

    let dom = chromium_dom(&format!("{}/", c.url));
    assert!(dom.contains(incident), "{dom}");
    assert!(dom.contains("Host <code>node7</code>"), "{dom}");
    assert!(
        dom.contains("NCCL WARN Watchdog caught collective operation timeout"),
        "{dom}"
    );
    assert!(dom.contains("PSN gap on QP 0x11"), "{dom}");
    // The "why slow" verdict of the summary, under its heading.
    assert!(
        dom.contains("<h4>Why slow</h4>")
            && dom.contains("pfc pauses</b>: PFC priority 3 paused 12.500 ms"),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("/files/{incident}/node7/{incident}.svg")),
        "{dom}"
    );
    // Newest first.
    let newer = dom.find(incident).expect("newer");
    let older = dom.find("20261129T010000Z-node3-manual").expect("older");
    assert!(newer < older, "incidents newest first");
}

/// A collector whose disk is full answers 507 (a 5xx: agents keep the unit and
/// retry later), both when the announced size cannot fit and when the disk
/// fills mid-body, and leaves no temporary file behind.
#[test]
fn a_full_collector_disk_answers_507_and_keeps_nothing_half_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("collected");
    std::fs::create_dir(&store).expect("mkdir");
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(&store)
        .status()
        .expect("mount runs");
    assert!(ok.success(), "mounting a tmpfs needs root");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(store.clone());
    let c = collector(dir.path());
    let big = vec![0x5au8; 2 << 20];
    let statuses = rt().block_on(async {
        let client = reqwest::Client::new();
        let mut out = Vec::new();
        for (name, body) in [
            ("too-big.pcapng", big.clone()),
            ("fits.pcapng", vec![1u8; 1000]),
        ] {
            let r = client
                .put(format!("{}/upload/h1/inc-9/{name}", c.url))
                .header("x-content-sha256", sha(&body))
                .bearer_auth(TOKEN)
                .body(body)
                .send()
                .await
                .expect("send");
            out.push(r.status().as_u16());
        }
        // No Content-Length (chunked): the disk fills while the body streams in.
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = (0..32)
            .map(|_| Ok(bytes::Bytes::from(vec![7u8; 64 << 10])))
            .collect();
        let r = client
            .put(format!("{}/upload/h1/inc-9/streamed.pcapng", c.url))
            .header("x-content-sha256", sha(&vec![7u8; 2 << 20]))
            .bearer_auth(TOKEN)
            .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                chunks,
            )))
            .send()
            .await
            .expect("send");
        out.push(r.status().as_u16());
        out
    });
    assert_eq!(
        statuses,
        vec![507, 201, 507],
        "too big for the disk, one that fits, one that fills it mid-body"
    );
    let leftovers: Vec<String> = walk(&store)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn files_over_max_file_size_get_413_and_the_agent_parks_its_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = collector_with(dir.path(), &["--max-file-size", "4KiB"]);
    let big = vec![0x5au8; 8 << 10];
    let (statuses, answer) = rt().block_on(async {
        let client = reqwest::Client::new();
        let put = |name: &str, body: reqwest::Body, digest: String| {
            client
                .put(format!("{}/upload/h1/inc-1/{name}", c.url))
                .header("x-content-sha256", digest)
                .bearer_auth(TOKEN)
                .body(body)
                .send()
        };
        let mut out = Vec::new();
        // Announced (Content-Length): refused before a byte is stored.
        let r = put("announced.pcapng", big.clone().into(), sha(&big))
            .await
            .expect("send");
        out.push(r.status().as_u16());
        let answer = r.text().await.expect("text");
        // Not announced (chunked): refused when it goes over.
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = (0..8)
            .map(|_| Ok(bytes::Bytes::from(vec![0x5au8; 1 << 10])))
            .collect();
        let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
        let r = put("streamed.pcapng", body, sha(&big)).await.expect("send");
        out.push(r.status().as_u16());
        // Within the limit.
        let small = vec![1u8; 1000];
        let r = put("fits.pcapng", small.clone().into(), sha(&small))
            .await
            .expect("send");
        out.push(r.status().as_u16());
        // A multipart unit whose file is over the limit.
        let meta = serde_json::json!({"incident": "inc-2", "host": "h1",
            "files": [{"name": "big.pcapng", "size": big.len(), "sha256": sha(&big)}]});
        let form = reqwest::multipart::Form::new()
            .text("metadata", meta.to_string())
            .part(
                "file",
                reqwest::multipart::Part::bytes(big.clone()).file_name("big.pcapng"),
            );
        let r = client
            .post(format!("{}/upload", c.url))
            .bearer_auth(TOKEN)
            .multipart(form)
            .send()
            .await
            .expect("send");
        out.push(r.status().as_u16());
        (out, answer)
    });
    assert_eq!(statuses, vec![413, 413, 201, 413]);
    assert!(
        answer.contains("announced.pcapng is 8192 bytes or more, over this collector's limit of 4096 bytes per file: start the collector with a larger --max-file-size"),
        "{answer}"
    );
    let stored: Vec<String> = walk(&c.dir)
        .into_iter()
        .filter_map(|p| Some(Path::new(&p).file_name()?.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(
        stored,
        vec!["fits.pcapng".to_string()],
        "nothing else, no .tmp"
    );

    // The agent's capture is larger than 4 KiB: refused for good, so parked
    // (kept in the spool, not retried), with the collector's reason in the log.
    let (out, stderr) = agent_replay_uploading_to(&c, dir.path());
    assert!(
        stderr.contains("upload refused: capture parked"),
        "{stderr}"
    );
    assert!(stderr.contains("413"), "{stderr}");
    assert!(stderr.contains("--max-file-size"), "{stderr}");
    let side = read_sidecar(&sidecars(&out)[0]);
    assert!(
        out.join(&side.file).exists(),
        "the capture stays in the spool"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}
