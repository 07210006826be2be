//! Object storage (S3) against a real Ceph RGW on 127.0.0.1
//! ([`common::rgw`]; `.ci/run` installs `ceph-mon ceph-osd radosgw ceph-common`).
//!
//! Every test that needs RGW goes in this binary: the cluster starts once per
//! test process and the tests here share it (each in its own bucket), so the
//! suite pays its start once; a test in another binary would start a second
//! cluster. A test that stops RGW takes it exclusively
//! ([`common::rgw::use_exclusively`]) so the others never see it down.
//!
//! The first tests check the fixture itself: what the tests of the upload rely
//! on (signatures checked, objects read back as stored, RGW stopped and started
//! again with its data).

mod common;

use std::net::TcpStream;

use common::rgw::{use_exclusively, use_shared};

/// `n` bytes that are not all alike (a pattern RGW could not pass by chance).
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

#[test]
fn an_object_put_with_curl_reads_back_byte_identical() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("roundtrip");
    let data = pattern(3 * 1024 * 1024 + 17, 7);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("object.bin");
    std::fs::write(&file, &data).expect("write the object");
    let put = rgw.curl(&[
        "-T",
        file.to_str().expect("UTF-8 path"),
        &rgw.url(&format!("{bucket}/dir/object.bin")),
    ]);
    assert_eq!(put.status, 200, "PUT: {}", put.text());
    let back = rgw.get_object(&bucket, "dir/object.bin");
    assert_eq!(back.len(), data.len());
    assert!(
        back == data,
        "the object read back differs from what was put"
    );

    let missing = rgw.curl(&[&rgw.url(&format!("{bucket}/no-such-key"))]);
    assert_eq!(missing.status, 404, "{}", missing.text());
    assert!(missing.text().contains("NoSuchKey"), "{}", missing.text());
}

#[test]
fn a_wrong_secret_or_an_unknown_key_is_refused() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("refused");
    rgw.put_object(&bucket, "k", b"secret data");
    let url = rgw.url(&format!("{bucket}/k"));

    let wrong_secret = rgw.curl_signed_by(&rgw.access_key, "not-the-secret-key", &[&url]);
    assert_eq!(wrong_secret.status, 403, "{}", wrong_secret.text());
    assert!(
        wrong_secret.text().contains("SignatureDoesNotMatch"),
        "{}",
        wrong_secret.text()
    );
    assert!(!wrong_secret.text().contains("secret data"));

    let unknown = rgw.curl_signed_by("NOSUCHACCESSKEY00000", &rgw.secret_key, &[&url]);
    assert_eq!(unknown.status, 403, "{}", unknown.text());
    assert!(
        unknown.text().contains("InvalidAccessKeyId"),
        "{}",
        unknown.text()
    );

    assert_eq!(rgw.get_object(&bucket, "k"), b"secret data");
}

#[test]
fn multipart_uploads_in_progress_are_listed() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("multipart");
    assert!(
        !rgw.multipart_uploads(&bucket).contains("<Upload>"),
        "a new bucket has no uploads in progress"
    );
    let started = rgw.curl(&[
        "-X",
        "POST",
        &rgw.url(&format!("{bucket}/big.pcap?uploads=")),
    ]);
    assert_eq!(started.status, 200, "{}", started.text());
    let text = started.text();
    let id = text
        .split("<UploadId>")
        .nth(1)
        .and_then(|t| t.split("</UploadId>").next())
        .expect("an UploadId in the answer");
    let listed = rgw.multipart_uploads(&bucket);
    assert!(listed.contains("<Key>big.pcap</Key>"), "{listed}");
    assert!(listed.contains(id), "{listed}");

    let aborted = rgw.curl(&[
        "-X",
        "DELETE",
        &rgw.url(&format!("{bucket}/big.pcap?uploadId={id}")),
    ]);
    assert_eq!(aborted.status, 204, "{}", aborted.text());
    assert!(!rgw.multipart_uploads(&bucket).contains("<Upload>"));
}

#[test]
fn rgw_stopped_refuses_connections_and_started_again_has_the_data() {
    let rgw = use_exclusively();
    let bucket = rgw.fresh_bucket("restart");
    let data = pattern(100_000, 3);
    rgw.put_object(&bucket, "kept", &data);

    rgw.stop_rgw();
    let refused = TcpStream::connect(("127.0.0.1", rgw.port()));
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused),
        "RGW's port still answers: {refused:?}"
    );
    let down = rgw.curl(&[&rgw.url(&format!("{bucket}/kept"))]);
    assert_eq!(
        down.status,
        0,
        "no HTTP answer while stopped: {}",
        down.text()
    );

    rgw.start_rgw();
    assert!(rgw.endpoint().ends_with(&format!(":{}", rgw.port())));
    assert!(
        rgw.get_object(&bucket, "kept") == data,
        "the object read back after the restart differs"
    );
}

// ---------------------------------------------------------------------------
// The agent's uploads to a bucket (`[upload] url = "s3://…"`), through the
// library's delivery task on a spool directory, checked with curl.

mod upload {
    use std::path::Path;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use sha2::{Digest, Sha256};
    use tokio_util::sync::CancellationToken;
    use tripcap::deliver::spool;
    use tripcap::deliver::{DeliverStats, DeliveryTask, SpoolConfig, UploadConfig, Uploader};

    use super::common::rgw::{use_exclusively, use_shared, Rgw};
    use super::pattern;

    pub const HOST: &str = "node7";

    /// An `[upload]` table for `bucket` on the fixture, with quick retries.
    pub fn s3_config(rgw: &Rgw, bucket: &str) -> UploadConfig {
        let mut c = UploadConfig::new(format!("s3://{bucket}/caps/{{incident}}/{{host}}/{{file}}"));
        c.endpoint = Some(rgw.endpoint());
        c.region = Some(rgw.region().to_string());
        c.access_key = Some(rgw.access_key.clone());
        c.secret_key = Some(rgw.secret_key.clone());
        c.min_backoff = Duration::from_millis(20);
        c.max_backoff = Duration::from_millis(300);
        c.attempts = 4;
        c.poll = Duration::from_millis(100);
        c.idle_timeout = Duration::from_secs(10);
        c.connect_timeout = Duration::from_secs(1);
        c
    }

    /// A capture unit in `dir`: `size` bytes of capture and a sidecar. Returns the capture.
    pub fn make_unit(dir: &Path, incident: &str, size: usize) -> Vec<u8> {
        let data = pattern(size, incident.len() as u8);
        std::fs::write(dir.join(format!("{incident}.pcapng")), &data).expect("write capture");
        std::fs::write(
            dir.join(format!("{incident}.json")),
            format!(r#"{{"incident":"{incident}","host":"{HOST}","triggers":[]}}"#),
        )
        .expect("write sidecar");
        data
    }

    pub struct Running {
        pub stats: Arc<DeliverStats>,
        stop: CancellationToken,
        pub task: tokio::task::JoinHandle<()>,
    }

    impl Running {
        pub async fn stop(self) {
            self.stop.cancel();
            let _ = self.task.await;
        }
    }

    pub fn start(dir: &Path, upload: UploadConfig) -> Running {
        let uploader = Uploader::new(HOST.into(), upload).expect("uploader");
        let t = DeliveryTask::new(dir.to_path_buf(), SpoolConfig::default(), Some(uploader));
        let stats = t.stats();
        let stop = CancellationToken::new();
        let task = tokio::spawn(t.run(stop.clone()));
        Running { stats, stop, task }
    }

    pub async fn wait_for(limit: Duration, what: &str, mut pred: impl FnMut() -> bool) {
        let start = Instant::now();
        while !pred() {
            assert!(start.elapsed() < limit, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn ok(stats: &DeliverStats) -> u64 {
        stats.uploads_ok.load(Ordering::Relaxed)
    }

    /// The headers of a HEAD of `bucket/key`, lowercased names.
    pub fn head(rgw: &Rgw, bucket: &str, key: &str) -> String {
        let r = rgw.curl(&["-I", &rgw.url(&format!("{bucket}/{key}"))]);
        assert_eq!(r.status, 200, "HEAD {bucket}/{key}: {}", r.text());
        String::from_utf8_lossy(&r.body).to_ascii_lowercase()
    }

    pub fn sha256_hex(data: &[u8]) -> String {
        hex::encode(Sha256::digest(data))
    }

    /// Requests RGW logged for `bucket/key` with `method`: its access log
    /// lines (`"PUT /bucket/key?… HTTP/1.1" 200`).
    pub fn logged(rgw: &Rgw, method: &str, bucket: &str, key: &str) -> Vec<String> {
        let log = std::fs::read_to_string(rgw.dir().join("log/client.rgw.log")).unwrap_or_default();
        let needle = format!("\"{method} /{bucket}/{key}");
        log.lines()
            .filter(|l| l.contains(&needle))
            .map(str::to_string)
            .collect()
    }

    /// Requests RGW logged with `method` on `bucket` (any key), so far.
    pub fn logged_requests(rgw: &Rgw, method: &str, bucket: &str) -> usize {
        let log = std::fs::read_to_string(rgw.dir().join("log/client.rgw.log")).unwrap_or_default();
        let needle = format!("\"{method} /{bucket}");
        log.lines().filter(|l| l.contains(&needle)).count()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_capture_goes_up_and_reads_back_identical_with_its_sha256() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("up");
        let spool_dir = tempfile::tempdir().expect("tempdir");
        let data = make_unit(spool_dir.path(), "i1", (1 << 20) + 3);
        let run = start(spool_dir.path(), s3_config(&rgw, &bucket));
        wait_for(Duration::from_secs(30), "the upload", || {
            ok(&run.stats) == 1
        })
        .await;
        run.stop().await;

        let key = format!("caps/i1/{HOST}/i1.pcapng");
        let back = rgw.get_object(&bucket, &key);
        assert!(back == data, "the object differs from the capture");
        let h = head(&rgw, &bucket, &key);
        assert!(
            h.contains(&format!("x-amz-meta-sha256: {}", sha256_hex(&data))),
            "{h}"
        );
        let side = rgw.get_object(&bucket, &format!("caps/i1/{HOST}/i1.json"));
        assert_eq!(
            side,
            std::fs::read(spool_dir.path().join("i1.json")).expect("sidecar")
        );
        let state = spool::scan(spool_dir.path()).expect("scan");
        assert_eq!(state[0].status(), spool::Status::Uploaded);
        assert!(state[0].state.multipart.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_capture_larger_than_two_parts_goes_up_as_a_multipart_upload() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("parts");
        let spool_dir = tempfile::tempdir().expect("tempdir");
        let data = make_unit(spool_dir.path(), "big", (12 << 20) + 1);
        let mut c = s3_config(&rgw, &bucket);
        c.part_size = 5 << 20;
        let run = start(spool_dir.path(), c);
        wait_for(Duration::from_secs(60), "the upload", || {
            ok(&run.stats) == 1
        })
        .await;
        run.stop().await;

        let key = format!("caps/big/{HOST}/big.pcapng");
        let back = rgw.get_object(&bucket, &key);
        assert!(back == data, "the object differs from the capture");
        let h = head(&rgw, &bucket, &key);
        assert!(h.contains("-3\""), "a three-part ETag: {h}");
        assert!(h.contains(&sha256_hex(&data)), "{h}");
        assert!(
            !rgw.multipart_uploads(&bucket).contains("<Upload>"),
            "no upload left open"
        );
        let parts = logged(&rgw, "PUT", &bucket, &key);
        assert_eq!(parts.len(), 3, "one PUT per part: {parts:#?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_upload_already_in_the_bucket_is_not_sent_again() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("again");
        let spool_dir = tempfile::tempdir().expect("tempdir");
        make_unit(spool_dir.path(), "i2", 300_000);
        let run = start(spool_dir.path(), s3_config(&rgw, &bucket));
        wait_for(Duration::from_secs(30), "the upload", || {
            ok(&run.stats) == 1
        })
        .await;
        run.stop().await;
        // As if the state were lost after the store acknowledged.
        std::fs::remove_file(spool::state_path(spool_dir.path(), "i2")).expect("rm state");
        let run = start(spool_dir.path(), s3_config(&rgw, &bucket));
        wait_for(Duration::from_secs(30), "the second round", || {
            ok(&run.stats) == 1
        })
        .await;
        run.stop().await;
        let key = format!("caps/i2/{HOST}/i2.pcapng");
        let puts = logged(&rgw, "PUT", &bucket, &key);
        assert_eq!(puts.len(), 1, "sent once: {puts:#?}");
        assert!(
            logged(&rgw, "HEAD", &bucket, &key).len() >= 3,
            "checked by HEAD"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrong_secret_or_a_missing_bucket_parks_the_capture_with_the_stores_reason() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("park");
        for (what, mut config, code, hint) in [
            (
                "wrong secret",
                s3_config(&rgw, &bucket),
                "SignatureDoesNotMatch",
                "secret key is wrong",
            ),
            (
                "missing bucket",
                s3_config(&rgw, "no-such-bucket-here"),
                "NoSuchBucket",
                "create the bucket",
            ),
        ] {
            if what == "wrong secret" {
                config.secret_key = Some("not-the-secret".into());
            }
            let spool_dir = tempfile::tempdir().expect("tempdir");
            make_unit(spool_dir.path(), "p1", 1000);
            let run = start(spool_dir.path(), config);
            wait_for(Duration::from_secs(30), "parked", || {
                run.stats.parked.load(Ordering::Relaxed) == 1
                    && run.stats.parked_now.load(Ordering::Relaxed) == 1
            })
            .await;
            let reasons = run.stats.parked_reasons.lock().expect("lock").clone();
            run.stop().await;
            let units = spool::scan(spool_dir.path()).expect("scan");
            let parked = units[0].state.parked.clone().expect("parked");
            assert_eq!(parked.code.as_deref(), Some(code), "{what}: {parked:?}");
            assert!(parked.reason.contains(hint), "{what}: {}", parked.reason);
            assert!(
                !parked.reason.contains(&rgw.secret_key),
                "{what}: a secret in {}",
                parked.reason
            );
            assert_eq!(reasons.len(), 1, "{what}: {reasons:?}");
            assert_eq!(reasons[0].label, code);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rgw_stopped_mid_upload_and_started_again_completes_the_object_once() {
        let rgw = use_exclusively();
        let bucket = rgw.fresh_bucket("outage");
        let spool_dir = tempfile::tempdir().expect("tempdir");
        let data = make_unit(spool_dir.path(), "o1", 30 << 20);
        let mut c = s3_config(&rgw, &bucket);
        c.part_size = 5 << 20;
        c.parts_in_flight = 1;
        c.attempts = 40; // keep trying through the outage
        let run = start(spool_dir.path(), c);
        let key = format!("caps/o1/{HOST}/o1.pcapng");
        wait_for(Duration::from_secs(30), "the first part", || {
            !logged(&rgw, "PUT", &bucket, &key).is_empty()
        })
        .await;
        rgw.stop_rgw();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(ok(&run.stats), 0, "not done while RGW is down");
        rgw.start_rgw();
        wait_for(Duration::from_secs(90), "the upload", || {
            ok(&run.stats) == 1
        })
        .await;
        run.stop().await;
        assert!(run_failed(&spool_dir), "attempts failed during the outage");
        assert!(rgw.get_object(&bucket, &key) == data, "the object differs");
        let completes: Vec<_> = logged(&rgw, "POST", &bucket, &key)
            .into_iter()
            .filter(|l| l.contains("uploadId=") && l.contains("\" 200"))
            .collect();
        assert_eq!(completes.len(), 1, "completed once: {completes:#?}");
        assert!(
            !rgw.multipart_uploads(&bucket).contains("<Upload>"),
            "no upload left open: {}",
            rgw.multipart_uploads(&bucket)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_agent_killed_mid_upload_resumes_it_and_aborts_its_orphans() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("resume");
        // Open uploads a previous run left: one of this host's, one of another host's.
        let start_upload = |key: &str| {
            let r = rgw.curl(&["-X", "POST", &rgw.url(&format!("{bucket}/{key}?uploads="))]);
            assert_eq!(r.status, 200, "{}", r.text());
        };
        start_upload(&format!("caps/old/{HOST}/old.pcapng"));
        start_upload("caps/old/node9/old.pcapng");

        let spool_dir = tempfile::tempdir().expect("tempdir");
        let data = make_unit(spool_dir.path(), "r1", 26 << 20);
        let key = format!("caps/r1/{HOST}/r1.pcapng");
        let mut c = s3_config(&rgw, &bucket);
        c.part_size = 5 << 20;
        c.parts_in_flight = 1;
        let first = start(spool_dir.path(), c.clone());
        wait_for(Duration::from_secs(30), "two parts", || {
            logged(&rgw, "PUT", &bucket, &key).len() >= 2
        })
        .await;
        first.task.abort(); // like kill -9: nothing more is saved
        let _ = first.task.await;
        let units = spool::scan(spool_dir.path()).expect("scan");
        let id = units[0]
            .state
            .multipart
            .get("r1.pcapng")
            .cloned()
            .expect("the upload id was saved before the first part");
        let before = logged(&rgw, "PUT", &bucket, &key).len();

        let second = start(spool_dir.path(), c);
        wait_for(Duration::from_secs(60), "the upload", || {
            ok(&second.stats) == 1
        })
        .await;
        second.stop().await;
        assert!(rgw.get_object(&bucket, &key) == data, "the object differs");
        let puts = logged(&rgw, "PUT", &bucket, &key);
        let after: Vec<_> = puts[before..].iter().collect();
        assert!(
            after.iter().all(|l| l.contains(&id)),
            "the same upload resumed: {after:#?}"
        );
        assert!(
            after.len() <= 6 - 2 + 1,
            "parts already stored were not sent again: {} PUTs after the restart",
            after.len()
        );
        let open = rgw.multipart_uploads(&bucket);
        assert!(
            !open.contains(&format!("{HOST}/old.pcapng")),
            "this host's orphan aborted: {open}"
        );
        assert!(
            open.contains("node9/old.pcapng"),
            "another host's upload left alone: {open}"
        );
        assert!(!open.contains("r1.pcapng"), "{open}");
    }

    fn run_failed(dir: &tempfile::TempDir) -> bool {
        spool::scan(dir.path()).expect("scan")[0].state.attempts > 0
    }
}

// ---------------------------------------------------------------------------
// The `tripcap` binary with an s3:// upload: a replay's capture lands in the
// bucket (keys from an AWS credentials file), `check` and `selftest` say what
// is wrong with a bad table or a wrong secret.

mod cli {
    use std::net::Ipv4Addr;
    use std::path::Path;

    use super::common::rgw::{use_shared, Rgw};
    use std::time::Duration;

    use super::common::{
        interrupt, read_sidecar, run, sidecars, spawn_ready, tripcap, tshark_rows_any, wait_until,
        write_generated,
    };

    const T0: i64 = 1_700_000_000_000_000_000;

    /// An AWS credentials file with profile `lab` holding `secret`, and the
    /// environment that points at it (nothing else of the test's environment).
    fn aws_files(dir: &Path, rgw: &Rgw, secret: &str) -> Vec<(String, String)> {
        let creds = dir.join("credentials");
        std::fs::write(
            &creds,
            format!(
                "[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n[lab]\naws_access_key_id = {}\naws_secret_access_key = {secret}\n",
                rgw.access_key
            ),
        )
        .expect("credentials file");
        vec![
            (
                "AWS_SHARED_CREDENTIALS_FILE".into(),
                creds.display().to_string(),
            ),
            (
                "AWS_CONFIG_FILE".into(),
                dir.join("no-config").display().to_string(),
            ),
            ("AWS_PROFILE".into(), "lab".into()),
        ]
    }

    fn s3_table(rgw: &Rgw, bucket: &str) -> String {
        format!(
            "[upload]\nurl = \"s3://{bucket}/incidents/{{incident}}/{{host}}/{{file}}\"\nendpoint = \"{}\"\nmin_backoff = \"50ms\"\n",
            rgw.endpoint()
        )
    }

    fn clean(cmd: &mut std::process::Command, env: &[(String, String)]) {
        for v in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_S3",
            "AWS_REGION",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
    }

    #[test]
    fn a_replay_uploads_its_capture_to_the_bucket_with_profile_credentials() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("agent");
        let dir = tempfile::tempdir().expect("tempdir");
        let env = aws_files(dir.path(), &rgw, &rgw.secret_key);
        let pcap = dir.path().join("in.pcap");
        write_generated(
            &pcap,
            T0,
            1_000_000,
            3000,
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            0x11,
        );
        let cfg = dir.path().join("agent.toml");
        std::fs::write(&cfg, s3_table(&rgw, &bucket)).expect("config");
        let out = dir.path().join("out");
        let t = T0 + 1_000_000_000;
        let mut cmd = tripcap();
        cmd.arg("run")
            .arg("-c")
            .arg(&cfg)
            .arg("-o")
            .arg(&out)
            .arg("--from-pcap")
            .arg(&pcap)
            .args([
                "--pre",
                "500ms",
                "--post",
                "500ms",
                "--upload-wait",
                "60s",
                "--host",
                "gpu01",
            ])
            .arg("--trigger-at")
            .arg(format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000));
        clean(&mut cmd, &env);
        let o = run(&mut cmd);
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        assert!(stderr.contains("capture uploaded"), "{stderr}");
        assert!(
            stderr.contains("profile `lab`"),
            "where the keys came from: {stderr}"
        );
        assert!(
            !stderr.contains(&rgw.secret_key),
            "the secret leaked: {stderr}"
        );

        let side = read_sidecar(&sidecars(&out)[0]);
        for file in [side.file.clone(), format!("{}.json", side.incident)] {
            let key = format!("incidents/{}/gpu01/{file}", side.incident);
            let remote = rgw.get_object(&bucket, &key);
            assert!(
                remote == std::fs::read(out.join(&file)).expect("local"),
                "{key} differs"
            );
        }
        let fetched = dir.path().join("fetched.pcapng");
        std::fs::write(
            &fetched,
            rgw.get_object(
                &bucket,
                &format!("incidents/{}/gpu01/{}", side.incident, side.file),
            ),
        )
        .expect("write");
        assert_eq!(tshark_rows_any(&fetched), side.packets as usize);
    }

    #[test]
    fn a_parked_upload_shows_its_reason_in_status_and_metrics() {
        let rgw = use_shared();
        let dir = tempfile::tempdir().expect("tempdir");
        let pcap = dir.path().join("in.pcap");
        // 8 s of traffic at capture pace: the agent stays up while we ask.
        write_generated(
            &pcap,
            T0,
            10_000_000,
            800,
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            0x11,
        );
        let cfg = dir.path().join("agent.toml");
        std::fs::write(
            &cfg,
            format!(
                "[api]\nlisten = \"127.0.0.1:0\"\n\
                 [upload]\nurl = \"s3://no-such-bucket-here/p/{{incident}}/{{host}}/{{file}}\"\n\
                 endpoint = \"{}\"\naccess_key = \"${{TRIPCAP_TEST_S3_KEY}}\"\n\
                 secret_key = \"${{TRIPCAP_TEST_S3_SECRET}}\"\npoll = \"200ms\"\nmin_backoff = \"50ms\"\n",
                rgw.endpoint()
            ),
        )
        .expect("config");
        let t = T0 + 500_000_000;
        let mut cmd = tripcap();
        cmd.arg("run")
            .arg("-c")
            .arg(&cfg)
            .arg("-o")
            .arg(dir.path().join("out"))
            .arg("--from-pcap")
            .arg(&pcap)
            .args(["--speed", "1x", "--pre", "200ms", "--post", "200ms"])
            .arg("--trigger-at")
            .arg(format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000))
            .env("TRIPCAP_TEST_S3_KEY", &rgw.access_key)
            .env("TRIPCAP_TEST_S3_SECRET", &rgw.secret_key);
        clean(&mut cmd, &[]);
        let (mut child, stderr) =
            spawn_ready(&mut cmd, "api listening on", Duration::from_secs(20));
        let mut text = String::new();
        wait_until(Duration::from_secs(5), "the API address", || {
            text = stderr.lock().expect("log").clone();
            text.contains("api listening on http://")
        });
        let start =
            text.find("api listening on http://").expect("line") + "api listening on ".len();
        let base: String = text[start..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        let get = |path: &str| -> String {
            let out = std::process::Command::new("curl")
                .args(["-sS", "--max-time", "5"])
                .arg(format!("{base}{path}"))
                .output()
                .expect("curl");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let mut status = serde_json::Value::Null;
        wait_until(Duration::from_secs(7), "a parked reason in /status", || {
            status = serde_json::from_str(&get("/status")).unwrap_or_default();
            status["queue"]["parked_reasons"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        });
        let metrics = get("/metrics");
        let _ = interrupt(&mut child);
        let log = stderr.lock().expect("log").clone();
        let reason = &status["queue"]["parked_reasons"][0];
        assert_eq!(reason["label"], "NoSuchBucket", "{status}");
        assert_eq!(reason["units"], 1, "{status}");
        assert!(
            reason["reason"]
                .as_str()
                .unwrap_or("")
                .contains("create the bucket"),
            "{status}"
        );
        assert!(
            metrics.contains("tripcap_uploads_parked_units{reason=\"NoSuchBucket\"} 1"),
            "{metrics}"
        );
        assert!(
            log.contains("upload refused: capture parked") && log.contains("NoSuchBucket"),
            "{log}"
        );
        assert!(!log.contains(&rgw.secret_key), "the secret leaked: {log}");
    }

    #[test]
    fn a_collector_refuses_to_start_on_a_bucket_it_cannot_use() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("refuse");
        for (what, url, secret, says) in [
            (
                "wrong secret",
                format!("s3://{bucket}/x"),
                "not-the-secret",
                "SignatureDoesNotMatch",
            ),
            (
                "missing bucket",
                "s3://no-such-bucket-here/x".to_string(),
                rgw.secret_key.as_str(),
                "NoSuchBucket",
            ),
            (
                "bad URL",
                "s3://Bad_Bucket/x".to_string(),
                rgw.secret_key.as_str(),
                "not a bucket name",
            ),
        ] {
            let mut cmd = tripcap();
            cmd.args([
                "collect",
                "--listen",
                "127.0.0.1:0",
                "--store",
                &url,
                "--endpoint",
            ])
            .arg(rgw.endpoint());
            clean(
                &mut cmd,
                &[
                    ("AWS_ACCESS_KEY_ID".to_string(), rgw.access_key.clone()),
                    ("AWS_SECRET_ACCESS_KEY".to_string(), secret.to_string()),
                ],
            );
            let o = run(&mut cmd);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{what}: started: {err}");
            assert!(err.contains(says), "{what}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
            assert!(
                !err.contains("not-the-secret"),
                "{what}: the secret in {err}"
            );
        }
    }

    #[test]
    fn check_and_selftest_name_what_is_wrong_with_an_s3_table() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("probe");
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        let base = format!("[capture]\ninterfaces = [\"lo\"]\n[output]\ndir = {out:?}\n");
        let write = |name: &str, text: String| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("config");
            p
        };
        let good = write("good.toml", format!("{base}{}", s3_table(&rgw, &bucket)));

        let selftest = |cfg: &Path, env: &[(String, String)]| {
            let mut cmd = tripcap();
            cmd.arg("selftest").arg("--json").arg("-c").arg(cfg);
            clean(&mut cmd, env);
            let o = run(&mut cmd);
            let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
            let upload = doc["checks"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["check"] == "upload endpoint").cloned())
                .expect("an upload check");
            (
                upload["ok"].as_bool(),
                upload["detail"].to_string() + &upload.to_string(),
            )
        };
        let right = aws_files(dir.path(), &rgw, &rgw.secret_key);
        let (ok, detail) = selftest(&good, &right);
        assert_eq!(ok, Some(true), "{detail}");
        let wrong = aws_files(dir.path(), &rgw, "not-the-secret");
        let (ok, detail) = selftest(&good, &wrong);
        assert_eq!(ok, Some(false), "{detail}");
        assert!(
            detail.contains("SignatureDoesNotMatch") && detail.contains("secret key is wrong"),
            "{detail}"
        );
        assert!(!detail.contains(&rgw.secret_key));

        let check = |cfg: &Path, env: &[(String, String)]| {
            let mut cmd = tripcap();
            cmd.arg("check").arg("-c").arg(cfg);
            clean(&mut cmd, env);
            let o = run(&mut cmd);
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).into_owned()
                    + &String::from_utf8_lossy(&o.stdout),
            )
        };
        // No credentials anywhere: a note (the agent's environment may have them), not an error.
        let none = vec![
            (
                "AWS_SHARED_CREDENTIALS_FILE".to_string(),
                "/nonexistent/credentials".to_string(),
            ),
            (
                "AWS_CONFIG_FILE".to_string(),
                "/nonexistent/config".to_string(),
            ),
        ];
        let (code, text) = check(&good, &none);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains("no S3 credentials"), "{text}");
        for (name, table, says) in [
            (
                "nohost.toml",
                format!("[upload]\nurl = \"s3://{bucket}/{{incident}}/{{file}}\"\n"),
                "has no {host}",
            ),
            (
                "badbucket.toml",
                "[upload]\nurl = \"s3://My_Bucket/{host}/{file}\"\n".to_string(),
                "not a bucket name",
            ),
            (
                "smallpart.toml",
                format!("{}part_size = \"1MiB\"\n", s3_table(&rgw, &bucket)),
                "5MiB to 5GiB",
            ),
            (
                "post.toml",
                format!("{}method = \"POST\"\n", s3_table(&rgw, &bucket)),
                "does not apply to an s3:// `url`",
            ),
            (
                "s3keys.toml",
                "[upload]\nurl = \"http://127.0.0.1:1/{host}/{file}\"\nregion = \"eu-west-1\"\n"
                    .to_string(),
                "only apply to an s3:// `url`",
            ),
        ] {
            let (code, text) = check(&write(name, format!("{base}{table}")), &right);
            assert_ne!(code, Some(0), "{name}: {text}");
            assert!(text.contains(says), "{name}: {text}");
            assert_eq!(text.trim().lines().count(), 1, "{name}: one line: {text}");
        }
    }
}

// ---------------------------------------------------------------------------
// `tripcap collect --store s3://…`: the collector keeps what it receives in a
// bucket and serves its page from it; several collectors share one bucket, and
// one serves what agents put there directly.

mod collector {
    use std::time::{Duration, Instant};

    use super::common::rgw::{use_shared, Rgw};
    use super::common::{chromium_dom, start_collector_with, wait_until, write_unit, Collector};
    use super::upload::{logged_requests, sha256_hex};

    const TOKEN_ENV: &str = "TRIPCAP_TEST_BUCKET_COLLECTOR_TOKEN";
    const TOKEN: &str = "bucket-collector-token-5f1";
    const LINE: &str = "[rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE) ran for 600027 milliseconds before timing out.";

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// A collector on `bucket` under `site/`, keys from the environment.
    fn bucket_collector(rgw: &Rgw, bucket: &str, token: bool) -> Collector {
        let store = format!("s3://{bucket}/site");
        let endpoint = rgw.endpoint();
        let mut env = vec![
            ("AWS_ACCESS_KEY_ID", rgw.access_key.as_str()),
            ("AWS_SECRET_ACCESS_KEY", rgw.secret_key.as_str()),
        ];
        let mut more = vec![];
        if token {
            env.push((TOKEN_ENV, TOKEN));
            more = vec!["--token-env", TOKEN_ENV];
        }
        start_collector_with(&["--store", &store, "--endpoint", &endpoint], &env, &more)
    }

    /// A unit like an agent writes (capture, picture, summary, sidecar) in `dir`.
    fn unit(dir: &std::path::Path, incident: &str, host: &str) {
        let capture = super::pattern(70_000, 5);
        write_unit(
            dir,
            incident,
            host,
            1_796_119_200_000_000_000,
            LINE,
            &capture,
        );
    }

    /// Deliver the units in `dir` as `host` with `config`, to the end.
    fn deliver(dir: &std::path::Path, host: &str, config: tripcap::deliver::UploadConfig) {
        rt().block_on(async {
            let u = tripcap::deliver::Uploader::new(host.into(), config).expect("uploader");
            let t =
                tripcap::deliver::DeliveryTask::new(dir.to_path_buf(), Default::default(), Some(u));
            let (stats, notify) = (t.stats(), t.notifier());
            let stop = tokio_util::sync::CancellationToken::new();
            let task = tokio::spawn(t.run(stop.clone()));
            assert!(
                tripcap::deliver::wait_drained(&stats, &notify, Duration::from_secs(30)).await,
                "delivered"
            );
            stop.cancel();
            let _ = task.await;
            assert_eq!(
                stats.parked_now.load(std::sync::atomic::Ordering::Relaxed),
                0
            );
        });
    }

    fn get(url: &str) -> (u16, Option<String>, Vec<u8>) {
        rt().block_on(async {
            let r = reqwest::get(url).await.expect("GET");
            let status = r.status().as_u16();
            let ctype = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            (status, ctype, r.bytes().await.expect("body").to_vec())
        })
    }

    fn put(url: &str, body: Vec<u8>) -> u16 {
        let sha = sha256_hex(&body);
        rt().block_on(async {
            reqwest::Client::new()
                .put(url)
                .bearer_auth(TOKEN)
                .header("x-content-sha256", sha)
                .body(body)
                .send()
                .await
                .expect("PUT")
                .status()
                .as_u16()
        })
    }

    #[test]
    fn collectors_keep_uploads_in_a_bucket_and_serve_the_page_from_it() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("site");
        let receiving = bucket_collector(&rgw, &bucket, true);
        let serving = bucket_collector(&rgw, &bucket, false);

        // Through the collector.
        let spool = tempfile::tempdir().expect("tempdir");
        let via = "20261201T100000Z-node7-nccl-watchdog-timeout";
        unit(spool.path(), via, "node7");
        std::env::set_var(TOKEN_ENV, TOKEN);
        let mut http = tripcap::deliver::UploadConfig::new(format!(
            "{}/upload/{{host}}/{{incident}}/{{file}}",
            receiving.url
        ));
        http.headers
            .insert("Authorization".into(), format!("Bearer ${{{TOKEN_ENV}}}"));
        deliver(spool.path(), "node7", http);
        let capture = std::fs::read(spool.path().join(format!("{via}.pcapng"))).expect("local");
        let key = format!("site/{via}/node7/{via}.pcapng");
        assert!(
            rgw.get_object(&bucket, &key) == capture,
            "the object differs"
        );
        let head = super::upload::head(&rgw, &bucket, &key);
        assert!(head.contains(&sha256_hex(&capture)), "{head}");
        // Repeats are recognised, other content under the name is a conflict.
        let file_url = format!("{}/upload/node7/{via}/{via}.pcapng", receiving.url);
        assert_eq!(put(&file_url, capture.clone()), 200);
        assert_eq!(put(&file_url, b"other".to_vec()), 409);
        assert!(rgw.get_object(&bucket, &key) == capture, "not overwritten");

        // Straight from an agent, under the layout the collector reads.
        let direct = tempfile::tempdir().expect("tempdir");
        let straight = "20261201T110000Z-node8-nccl-watchdog-timeout";
        unit(direct.path(), straight, "node8");
        let mut s3 = super::upload::s3_config(&rgw, &bucket);
        s3.url = format!("s3://{bucket}/site/{{incident}}/{{host}}/{{file}}");
        deliver(direct.path(), "node8", s3);

        // The other collector serves both, newest first, with pictures and downloads.
        let mut dom = String::new();
        wait_until(
            Duration::from_secs(15),
            "both incidents on the page",
            || {
                dom = chromium_dom(&format!("{}/", serving.url));
                dom.contains(via) && dom.contains(straight)
            },
        );
        assert!(
            dom.contains("Host <code>node7</code>") && dom.contains("Host <code>node8</code>"),
            "{dom}"
        );
        assert!(
            dom.contains("Watchdog caught collective operation timeout"),
            "{dom}"
        );
        assert!(dom.contains("PSN gap on QP 0x11"), "{dom}");
        assert!(dom.contains("Incidents 1–2 of 2"), "{dom}");
        assert!(dom.find(straight) < dom.find(via), "newest first");
        let (status, ctype, _) = get(&format!("{}/files/{via}/node7/{via}.svg", serving.url));
        assert_eq!((status, ctype.as_deref()), (200, Some("image/svg+xml")));
        let (status, _, body) = get(&format!("{}/files/{via}/node7/{via}.pcapng", serving.url));
        assert_eq!(status, 200);
        assert!(body == capture, "download differs");
        let (status, _, _) = get(&format!("{}/files/{via}/node7/nothing.pcapng", serving.url));
        assert_eq!(status, 404);
        let filtered = chromium_dom(&format!("{}/?host=node8", serving.url));
        assert!(
            filtered.contains(straight) && !filtered.contains(via),
            "{filtered}"
        );
    }

    #[test]
    fn ten_thousand_incidents_are_listed_a_page_at_a_time_with_bounded_requests() {
        let rgw = use_shared();
        let bucket = rgw.fresh_bucket("many");
        let n = 10_000usize;
        let id = |i: usize| {
            format!(
                "20261201T{:02}{:02}{:02}Z-node{}-trigger{}",
                i / 3600,
                (i / 60) % 60,
                i % 60,
                i % 8,
                i % 3
            )
        };
        // Fill the bucket: one small sidecar per incident, 32 at a time.
        let started = Instant::now();
        rt().block_on(async {
            use futures_util::StreamExt;
            let resolved = tripcap::s3::Resolved {
                endpoint: rgw.endpoint(),
                region: rgw.region().into(),
                path_style: true,
                key: rgw.access_key.clone(),
                secret: rgw.secret_key.clone(),
                token: None,
                source: "test".into(),
            };
            let b = tripcap::s3::Bucket::new(reqwest::Client::new(), &bucket, &resolved)
                .expect("bucket");
            let b = &b;
            futures_util::stream::iter(0..n)
                .map(|i| async move {
                    let inc = id(i);
                    let host = format!("node{}", i % 8);
                    let body = serde_json::to_vec(
                        &serde_json::json!({"incident": inc, "host": host, "triggers": []}),
                    )
                    .expect("json");
                    let md5: [u8; 16] = <md5::Md5 as md5::Digest>::digest(&body).into();
                    let sha = sha256_hex(&body);
                    let len = body.len() as u64;
                    b.put(
                        &format!("site/{inc}/{host}/{inc}.json"),
                        body.into(),
                        len,
                        md5,
                        &sha,
                        "application/json",
                    )
                    .await
                    .expect("put");
                })
                .buffer_unordered(32)
                .collect::<Vec<()>>()
                .await;
        });
        eprintln!("filled {n} incidents in {:?}", started.elapsed());

        let c = bucket_collector(&rgw, &bucket, false);
        let before = logged_requests(&rgw, "GET", &bucket);
        let t = Instant::now();
        let (status, _, body) = get(&format!("{}/", c.url));
        let first = t.elapsed();
        let page = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(status, 200, "{page}");
        let gets = logged_requests(&rgw, "GET", &bucket) - before;
        eprintln!("first page in {first:?} with {gets} GETs of the bucket");
        assert!(page.contains(&format!("Incidents 1–50 of {n}")), "{page}");
        assert_eq!(page.matches("<section class=\"incident\"").count(), 50);
        assert!(
            page.contains(&id(n - 1)) && !page.contains(&id(n - 51)),
            "the newest 50"
        );
        // 10 listings of 1,000 incidents, then per incident one listing and one sidecar.
        assert!(gets <= 10 + 50 * 2, "{gets} GETs for the first page");

        let before = logged_requests(&rgw, "GET", &bucket);
        let t = Instant::now();
        let (_, _, again) = get(&format!("{}/", c.url));
        eprintln!("the same page again in {:?}", t.elapsed());
        assert_eq!(again, body);
        assert_eq!(
            logged_requests(&rgw, "GET", &bucket) - before,
            0,
            "served from the cache"
        );

        let (_, _, last) = get(&format!("{}/?page=200", c.url));
        let last = String::from_utf8_lossy(&last);
        assert!(
            last.contains(&id(0)) && last.contains("page 200 of 200"),
            "{last}"
        );
        let (_, _, by_host) = get(&format!("{}/?host=node3&trigger=trigger1&page=2", c.url));
        let by_host = String::from_utf8_lossy(&by_host);
        // node3 and trigger1: i ≡ 3 (mod 8) and i ≡ 1 (mod 3): i ≡ 19 (mod 24).
        let matching = (0..n).filter(|i| i % 24 == 19).count();
        assert!(
            by_host.contains(&format!("of {matching} matching, {n} in all")),
            "{by_host}"
        );
        let newest_on_page_2 = (0..n).rev().filter(|i| i % 24 == 19).nth(50).expect("51st");
        assert!(by_host.contains(&id(newest_on_page_2)), "{by_host}");
    }
}

// ---------------------------------------------------------------------------
// Upload throughput against curl (issue 13's "Measure"): a benchmark.

mod bench {
    //! A benchmark, not a test: `#[ignore]`d, run by `scripts/bench-s3.sh`
    //! (`cargo test --release --test object_store -- --ignored --nocapture
    //! bench_s3_upload_against_curl`), which prints its figures for
    //! BENCHMARKS.md. It asserts only correctness (every object it timed is in
    //! the bucket with the right size and checksum, so a failed upload cannot
    //! count as fast), never time.
    //!
    //! On one file of `TRIPCAP_BENCH_S3_MIB` MiB (default 1024) and the
    //! fixture's RGW, `TRIPCAP_BENCH_S3_ROUNDS` rounds (default 3), each
    //! running, in an order that rotates from round to round:
    //! - `curl -sS --upload-file FILE URL`, the URL a presigned PUT (`rusty_s3`);
    //! - the release `tripcap run --from-pcap TINY --upload-wait 600s` with the
    //!   file as a capture unit in its output directory (a hard link and a
    //!   sidecar), `[upload]` to the bucket with the default part size (64 MiB)
    //!   and `parts_in_flight` 4 (the default), then 1: the whole process is
    //!   timed (start, hashing, the multipart upload, the sidecar, exit), and
    //!   its peak RSS read from `wait4`;
    //! - `tripcap::digest::part_digests` of the file in this process: the
    //!   hashing pre-pass the agent runs before it sends a byte (SHA-256 of the
    //!   file, MD5 of each part), timed alone.
    //!
    //! Every object is deleted after its check, and RGW's garbage collected
    //! (outside the timings): the fixture's memstore holds 2 GiB, so a file
    //! of more than about 1.5 GiB does not fit.

    use std::fs::File;
    use std::io::{BufWriter, Read, Write};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use md5::{Digest, Md5};
    use rusty_s3::{Credentials, S3Action, UrlStyle};

    use super::common::rgw::{use_shared, Rgw};

    const HOST: &str = "benchhost";
    const PART_SIZE: u64 = 64 << 20; // the default `part_size`

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Way {
        Curl,
        Tripcap { parts_in_flight: usize },
        Hashing,
    }

    impl Way {
        fn label(self) -> String {
            match self {
                Way::Curl => "curl --upload-file (presigned PUT)".into(),
                Way::Tripcap { parts_in_flight } => {
                    format!("tripcap run, parts_in_flight = {parts_in_flight}")
                }
                Way::Hashing => "hashing pre-pass alone (part_digests)".into(),
            }
        }
    }

    fn env_u64(name: &str, default: u64) -> u64 {
        std::env::var(name)
            .ok()
            .map(|v| v.parse().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
            .unwrap_or(default)
    }

    /// `size` bytes from a xorshift generator (not all alike, not compressible), synced.
    fn make_file(path: &Path, size: u64) {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create"));
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut buf = vec![0u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            for chunk in buf.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            let n = left.min(buf.len() as u64) as usize;
            out.write_all(&buf[..n]).expect("write");
            left -= n as u64;
        }
        out.into_inner()
            .expect("flush")
            .sync_all()
            .expect("sync the file before timing anything");
    }

    /// MD5 of the whole file (the ETag RGW gives a single PUT), hex.
    fn md5_file(path: &Path) -> String {
        let mut f = File::open(path).expect("open");
        let mut h = Md5::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        hex::encode(h.finalize())
    }

    /// `(content-length, etag, x-amz-meta-sha256)` of `bucket/key` from a HEAD.
    fn head(rgw: &Rgw, bucket: &str, key: &str) -> (u64, String, String) {
        let r = rgw.curl(&["-I", &rgw.url(&format!("{bucket}/{key}"))]);
        assert_eq!(r.status, 200, "HEAD {bucket}/{key}: {}", r.text());
        let text = String::from_utf8_lossy(&r.body).to_ascii_lowercase();
        let header = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .map(|v| v.trim().trim_matches('"').to_string())
                .unwrap_or_default()
        };
        let len = header("content-length")
            .parse()
            .unwrap_or_else(|e| panic!("content-length of {key}: {e}: {text}"));
        (len, header("etag"), header("x-amz-meta-sha256"))
    }

    /// Run `cmd` to its end: `(succeeded, wall time, peak RSS in KiB)` (from `wait4`).
    fn run_measured(cmd: &mut Command) -> (bool, Duration, u64) {
        let start = Instant::now();
        let child = cmd.spawn().expect("spawn");
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4(2) on our own child, which nothing else waits for.
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let elapsed = start.elapsed();
        assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
        drop(child);
        let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        (ok, elapsed, usage.ru_maxrss as u64)
    }

    fn median(xs: &[f64]) -> f64 {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    struct Setup<'a> {
        rgw: &'a Rgw,
        bucket: String,
        work: PathBuf,
        file: PathBuf,
        size: u64,
        md5: String,
        sha256: String,
        parts: usize,
        tiny: PathBuf,
        presigner: rusty_s3::Bucket,
        creds: Credentials,
    }

    impl Setup<'_> {
        /// `curl --upload-file` to a presigned URL; returns its time.
        fn curl(&self, round: u64) -> f64 {
            let key = format!("curl/r{round}.bin");
            let url = self
                .presigner
                .put_object(Some(&self.creds), &key)
                .sign(Duration::from_secs(3600));
            let start = Instant::now();
            let out = Command::new("curl")
                .args([
                    "-sS",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "--upload-file",
                ])
                .arg(&self.file)
                .arg(url.as_str())
                .output()
                .expect("curl runs");
            let t = start.elapsed().as_secs_f64();
            let code = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && code == "200",
                "curl: HTTP {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (len, etag, _) = head(self.rgw, &self.bucket, &key);
            assert_eq!(len, self.size, "curl's object has the file's size");
            assert_eq!(etag, self.md5, "curl's object has the file's MD5");
            self.rgw.delete_object(&self.bucket, &key);
            t
        }

        /// The release binary uploading the file as a capture unit; returns
        /// its time and peak RSS (KiB).
        fn tripcap(&self, round: u64, parts_in_flight: usize) -> (f64, u64) {
            let incident = format!("bench-r{round}-p{parts_in_flight}");
            let out = self.work.join(&incident);
            std::fs::create_dir(&out).expect("output dir");
            std::fs::hard_link(&self.file, out.join(format!("{incident}.pcapng")))
                .expect("hard link the file into the spool");
            std::fs::write(
                out.join(format!("{incident}.json")),
                format!(r#"{{"incident":"{incident}","host":"{HOST}","triggers":[]}}"#),
            )
            .expect("sidecar");
            let cfg = self.work.join(format!("{incident}.toml"));
            std::fs::write(
                &cfg,
                format!(
                    "[upload]\nurl = \"s3://{}/bench/{{incident}}/{{host}}/{{file}}\"\nendpoint = \"{}\"\nregion = \"{}\"\naccess_key = \"{}\"\nsecret_key = \"{}\"\nparts_in_flight = {parts_in_flight}\n",
                    self.bucket,
                    self.rgw.endpoint(),
                    self.rgw.region(),
                    self.rgw.access_key,
                    self.rgw.secret_key
                ),
            )
            .expect("config");
            let log = self.work.join(format!("{incident}.log"));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_tripcap"));
            cmd.env("NO_COLOR", "1")
                .env("RUST_LOG", "info")
                .arg("run")
                .arg("-c")
                .arg(&cfg)
                .arg("-o")
                .arg(&out)
                .arg("--from-pcap")
                .arg(&self.tiny)
                .args(["--upload-wait", "600s", "--host", HOST])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(File::create(&log).expect("log file"));
            for v in [
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_S3",
                "AWS_REGION",
                "AWS_PROFILE",
            ] {
                cmd.env_remove(v);
            }
            let (ok, t, rss) = run_measured(&mut cmd);
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(ok, "tripcap run failed: {text}");
            assert_eq!(
                text.matches("capture uploaded").count(),
                1,
                "one capture uploaded: {text}"
            );
            let key = format!("bench/{incident}/{HOST}/{incident}.pcapng");
            let (len, etag, sha) = head(self.rgw, &self.bucket, &key);
            assert_eq!(len, self.size, "tripcap's object has the file's size");
            assert_eq!(sha, self.sha256, "tripcap's object carries the SHA-256");
            assert!(
                etag.ends_with(&format!("-{}", self.parts)),
                "a {}-part upload: ETag {etag}",
                self.parts
            );
            assert!(
                !self
                    .rgw
                    .multipart_uploads(&self.bucket)
                    .contains("<Upload>"),
                "no upload left open"
            );
            self.rgw.delete_object(&self.bucket, &key);
            self.rgw.delete_object(
                &self.bucket,
                &format!("bench/{incident}/{HOST}/{incident}.json"),
            );
            std::fs::remove_dir_all(&out).expect("remove the spool");
            (t.as_secs_f64(), rss)
        }

        /// The agent's hashing pre-pass over the file, in this process.
        fn hashing(&self) -> f64 {
            let start = Instant::now();
            let d = tripcap::digest::part_digests(&self.file, PART_SIZE).expect("digests");
            let t = start.elapsed().as_secs_f64();
            assert_eq!((d.len, d.part_md5.len()), (self.size, self.parts));
            assert_eq!(d.sha256, self.sha256);
            t
        }
    }

    #[test]
    #[ignore = "a benchmark: run scripts/bench-s3.sh"]
    fn bench_s3_upload_against_curl() {
        let mib = env_u64("TRIPCAP_BENCH_S3_MIB", 1024);
        let rounds = env_u64("TRIPCAP_BENCH_S3_ROUNDS", 3);
        assert!(
            (6..=1536).contains(&mib),
            "TRIPCAP_BENCH_S3_MIB={mib}: 6 to 1536 (a multipart upload; the fixture's memstore holds 2 GiB)"
        );
        let size = mib << 20;
        let rgw = use_shared();
        let work = tempfile::tempdir().expect("tempdir");
        let file = work.path().join("payload.bin");
        make_file(&file, size);
        let tiny = work.path().join("tiny.pcap");
        let gen = Command::new(env!("CARGO_BIN_EXE_tripcap"))
            .arg("generate")
            .arg("-o")
            .arg(&tiny)
            .args(["--packets", "10"])
            .output()
            .expect("tripcap generate");
        assert!(
            gen.status.success(),
            "{}",
            String::from_utf8_lossy(&gen.stderr)
        );
        let digests = tripcap::digest::part_digests(&file, PART_SIZE).expect("digests");
        let bucket = rgw.fresh_bucket("bench");
        let endpoint: url::Url = rgw.endpoint().parse().expect("endpoint URL");
        let setup = Setup {
            rgw: &rgw,
            presigner: rusty_s3::Bucket::new(
                endpoint,
                UrlStyle::Path,
                bucket.clone(),
                rgw.region(),
            )
            .expect("bucket"),
            creds: Credentials::new(rgw.access_key.clone(), rgw.secret_key.clone()),
            bucket,
            work: work.path().to_path_buf(),
            md5: md5_file(&file),
            sha256: digests.sha256.clone(),
            parts: digests.part_md5.len(),
            size,
            file,
            tiny,
        };
        println!(
            "bench: {mib} MiB file, {} parts of {} MiB, {rounds} rounds; RGW at {}",
            setup.parts,
            PART_SIZE >> 20,
            rgw.endpoint()
        );

        let ways = [
            Way::Curl,
            Way::Tripcap { parts_in_flight: 4 },
            Way::Tripcap { parts_in_flight: 1 },
            Way::Hashing,
        ];
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
        let mut rss: Vec<Vec<u64>> = vec![Vec::new(); ways.len()];
        for round in 0..rounds {
            let mut line = format!("round {}:", round + 1);
            for k in 0..ways.len() {
                let i = (k + round as usize) % ways.len();
                let t = match ways[i] {
                    Way::Curl => setup.curl(round),
                    Way::Tripcap { parts_in_flight } => {
                        let (t, kib) = setup.tripcap(round, parts_in_flight);
                        rss[i].push(kib);
                        t
                    }
                    Way::Hashing => setup.hashing(),
                };
                rgw.collect_garbage();
                times[i].push(t);
                line.push_str(&format!(" {} {t:.2} s;", ways[i].label()));
            }
            println!("{line}");
        }

        let mb = size as f64 / 1e6;
        let curl = median(&times[0]);
        println!("== summary: {mib} MiB ({mb:.0} MB), {rounds} rounds, medians");
        for (i, way) in ways.iter().enumerate() {
            let m = median(&times[i]);
            let runs: Vec<String> = times[i].iter().map(|t| format!("{t:.2}")).collect();
            let mut text = format!(
                "{:<42} median {m:.2} s ({:.0} MB/s)  runs: {}",
                way.label(),
                mb / m,
                runs.join(" ")
            );
            if let Way::Tripcap { parts_in_flight } = way {
                let peak = rss[i].iter().max().copied().unwrap_or(0);
                text.push_str(&format!(
                    "\n{:<42} ratio curl/tripcap {:.2} (target >= 0.9); peak RSS {} MiB (max of {}), part_size x parts_in_flight = {} MiB",
                    "",
                    curl / m,
                    peak >> 10,
                    rss[i].len(),
                    (PART_SIZE >> 20) * *parts_in_flight as u64
                ));
            }
            println!("{text}");
        }
    }
}
