//! Upload under faults, against the real collector on 127.0.0.1 with a fault
//! layer (or a raw TCP front) in between: endpoint down then up, 500s, 429 with
//! Retry-After, a slow server, a connection reset mid-body, 413, a crash
//! mid-upload, and the spool limit. "Exactly once" is checked at the collector:
//! each file is created (201) once, whatever the retries.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tripcap::collect::{self, Collector};
use tripcap::deliver::spool;
use tripcap::deliver::{DeliverStats, DeliveryTask, Method, SpoolConfig, UploadConfig, Uploader};

const HOST: &str = "node7";

/// What the fault layer does to the next request.
#[derive(Debug, Clone)]
enum Fault {
    Status(u16, Option<&'static str>),
    Delay(Duration),
}

/// One request: when, path, Content-Length, Transfer-Encoding.
type Seen = (Instant, String, Option<String>, Option<String>);

#[derive(Default)]
struct Faults {
    plan: Mutex<VecDeque<Fault>>,
    /// Every request: (when, uri, content-length, transfer-encoding).
    seen: Mutex<Vec<Seen>>,
    /// 201 responses per uri.
    created: Mutex<BTreeMap<String, u64>>,
    /// Refuse every file request with this status (413 test).
    always: Mutex<Option<u16>>,
}

impl Faults {
    fn push(&self, f: Fault) {
        self.plan.lock().expect("lock").push_back(f);
    }
    fn requests(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
    fn created(&self) -> BTreeMap<String, u64> {
        self.created.lock().expect("lock").clone()
    }
}

async fn fault_layer(State(f): State<Arc<Faults>>, req: Request, next: Next) -> Response {
    let (len, te) = {
        let header = |n: &str| {
            req.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        (header("content-length"), header("transfer-encoding"))
    };
    let uri = req.uri().path().to_string();
    f.seen
        .lock()
        .expect("lock")
        .push((Instant::now(), uri.clone(), len, te));
    let always = *f.always.lock().expect("lock");
    if let Some(code) = always {
        return (
            axum::http::StatusCode::from_u16(code).expect("status"),
            "too large for this endpoint",
        )
            .into_response();
    }
    let fault = f.plan.lock().expect("lock").pop_front();
    match fault {
        Some(Fault::Status(code, retry_after)) => {
            let mut r = (
                axum::http::StatusCode::from_u16(code).expect("status"),
                "injected",
            )
                .into_response();
            if let Some(ra) = retry_after {
                r.headers_mut()
                    .insert("retry-after", ra.parse().expect("header"));
            }
            return r;
        }
        Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    let resp = next.run(req).await;
    if resp.status() == axum::http::StatusCode::CREATED {
        *f.created.lock().expect("lock").entry(uri).or_default() += 1;
    }
    resp
}

struct Server {
    addr: SocketAddr,
    faults: Arc<Faults>,
    store: PathBuf,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The collector with the fault layer, on `addr` (port 0: any).
async fn server_on(addr: SocketAddr) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let state = Collector::new(store.clone(), None, u64::MAX).expect("collector");
    let faults = Arc::new(Faults::default());
    let app = collect::router(state).layer(middleware::from_fn_with_state(
        Arc::clone(&faults),
        fault_layer,
    ));
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = CancellationToken::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { s2.cancelled().await })
            .await
    });
    Server {
        addr,
        faults,
        store,
        stop,
        _dir: dir,
    }
}

async fn server() -> Server {
    server_on("127.0.0.1:0".parse().expect("addr")).await
}

/// A fake capture unit: `size` bytes of pcapng-ish data and a sidecar, the
/// sidecar's mtime `age_s` seconds in the past. Returns the capture bytes.
fn make_unit(dir: &Path, incident: &str, size: usize, age_s: u64) -> Vec<u8> {
    let data: Vec<u8> = (0..size)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
        .collect();
    std::fs::write(dir.join(format!("{incident}.pcapng")), &data).expect("write");
    let side = dir.join(format!("{incident}.json"));
    std::fs::write(
        &side,
        format!(r#"{{"incident":"{incident}","host":"{HOST}","triggers":[]}}"#),
    )
    .expect("write");
    let f = std::fs::File::options()
        .write(true)
        .open(&side)
        .expect("open");
    f.set_modified(SystemTime::now() - Duration::from_secs(age_s))
        .expect("mtime");
    data
}

fn config(url: String) -> UploadConfig {
    let mut c = UploadConfig::new(url);
    c.min_backoff = Duration::from_millis(20);
    c.max_backoff = Duration::from_millis(200);
    c.attempts = 4;
    c.poll = Duration::from_millis(100);
    c.idle_timeout = Duration::from_secs(3);
    c.connect_timeout = Duration::from_secs(1);
    c
}

fn put_url(addr: SocketAddr) -> String {
    format!("http://{addr}/upload/{{host}}/{{incident}}/{{file}}")
}

struct Running {
    stats: Arc<DeliverStats>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn start(dir: &Path, spool: SpoolConfig, upload: Option<UploadConfig>) -> Running {
    let uploader = upload.map(|c| Uploader::new(HOST.into(), c).expect("uploader"));
    let t = DeliveryTask::new(dir.to_path_buf(), spool, uploader);
    let stats = t.stats();
    let stop = CancellationToken::new();
    let task = tokio::spawn(t.run(stop.clone()));
    Running { stats, stop, task }
}

struct Running2 {
    stats: Arc<DeliverStats>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn wait_for(limit: Duration, what: &str, mut pred: impl FnMut() -> bool) {
    let start = Instant::now();
    while !pred() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn stored(server: &Server, incident: &str, file: &str) -> Option<Vec<u8>> {
    std::fs::read(server.store.join(incident).join(HOST).join(file)).ok()
}

/// Every file of `incidents` created exactly once at the collector.
fn assert_exactly_once(server: &Server, incidents: &[&str]) {
    let created = server.faults.created();
    for i in incidents {
        for f in [format!("{i}.pcapng"), format!("{i}.json")] {
            let uri = format!("/upload/{HOST}/{i}/{f}");
            assert_eq!(created.get(&uri), Some(&1), "{uri}: {created:?}");
        }
    }
    assert_eq!(created.len(), incidents.len() * 2, "{created:?}");
}

fn ok(stats: &DeliverStats) -> u64 {
    stats.uploads_ok.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_down_then_up_delivers_each_unit_once() {
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let mut sent = Vec::new();
    for (i, name) in ["a1", "a2", "a3"].iter().enumerate() {
        sent.push(make_unit(spool_dir.path(), name, 10_000 + i, 30 - i as u64));
    }
    // A port nobody listens on yet.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(addr))),
    );
    wait_for(Duration::from_secs(10), "failed attempts", || {
        up.stats.uploads_failed.load(Ordering::Relaxed) >= 3
    })
    .await;
    assert_eq!(ok(&up.stats), 0);
    let server = server_on(addr).await;
    wait_for(Duration::from_secs(10), "three uploads", || {
        ok(&up.stats) == 3
    })
    .await;
    up.stop().await;
    for (name, data) in ["a1", "a2", "a3"].iter().zip(&sent) {
        assert_eq!(
            stored(&server, name, &format!("{name}.pcapng")).as_ref(),
            Some(data)
        );
    }
    assert_exactly_once(&server, &["a1", "a2", "a3"]);
    // The state files say so; a restart sends nothing.
    let units = spool::scan(spool_dir.path()).expect("scan");
    assert!(units.iter().all(|u| u.status() == spool::Status::Uploaded));
    let before = server.faults.requests();
    let again = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    again.stop().await;
    assert_eq!(server.faults.requests(), before, "nothing sent twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_until_success() {
    let server = server().await;
    for _ in 0..3 {
        server.faults.push(Fault::Status(500, None));
    }
    server.faults.push(Fault::Status(503, None));
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let data = make_unit(spool_dir.path(), "b1", 50_000, 5);
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    wait_for(Duration::from_secs(10), "upload", || ok(&up.stats) == 1).await;
    up.stop().await;
    assert_eq!(stored(&server, "b1", "b1.pcapng"), Some(data));
    assert_exactly_once(&server, &["b1"]);
    // Every request had an explicit length and was not chunked.
    for (_, uri, len, te) in server.faults.seen.lock().expect("lock").iter() {
        assert!(len.is_some(), "{uri} without Content-Length");
        assert!(te.is_none(), "{uri} sent with Transfer-Encoding {te:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_waits_for_retry_after() {
    let server = server().await;
    server.faults.push(Fault::Status(429, Some("1")));
    let spool_dir = tempfile::tempdir().expect("tempdir");
    make_unit(spool_dir.path(), "c1", 1000, 5);
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some({
            let mut c = config(put_url(server.addr));
            c.max_backoff = Duration::from_secs(5);
            c
        }),
    );
    wait_for(Duration::from_secs(10), "upload", || ok(&up.stats) == 1).await;
    up.stop().await;
    let seen = server.faults.seen.lock().expect("lock").clone();
    let gap = seen[1].0 - seen[0].0;
    assert!(
        gap >= Duration::from_millis(950),
        "retried after {gap:?}, before Retry-After: 1"
    );
    assert_exactly_once(&server, &["c1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_times_out_and_is_retried() {
    let server = server().await;
    server.faults.push(Fault::Delay(Duration::from_secs(3)));
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let data = make_unit(spool_dir.path(), "d1", 20_000, 5);
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some({
            let mut c = config(put_url(server.addr));
            c.idle_timeout = Duration::from_millis(400);
            c
        }),
    );
    wait_for(Duration::from_secs(10), "upload", || ok(&up.stats) == 1).await;
    up.stop().await;
    assert!(up_failed(&server) >= 1);
    assert_eq!(stored(&server, "d1", "d1.pcapng"), Some(data));
    assert_exactly_once(&server, &["d1"]);
}

fn up_failed(server: &Server) -> usize {
    // Requests beyond the two files' successful ones.
    server.faults.requests().saturating_sub(2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reset_mid_body_is_retried() {
    let server = server().await;
    // A raw TCP front: the first connection is cut after part of the body
    // (closed with unread data, so the kernel sends a reset); later ones are
    // passed through to the collector.
    let front = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let front_addr = front.local_addr().expect("addr");
    let first_head = Arc::new(Mutex::new(String::new()));
    let head2 = Arc::clone(&first_head);
    let backend = server.addr;
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut s, _)) = front.accept().await {
            n += 1;
            if n == 1 {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while got.len() < 64 * 1024 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(k) => got.extend_from_slice(&buf[..k]),
                    }
                }
                let text = String::from_utf8_lossy(&got);
                *head2.lock().expect("lock") =
                    text.split("\r\n\r\n").next().unwrap_or("").to_string();
                drop(s); // unread bytes remain: RST
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut b) = tokio::net::TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut s, &mut b).await;
                    let _ = b.shutdown().await;
                }
            });
        }
    });
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let data = make_unit(spool_dir.path(), "e1", 4 << 20, 5);
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(front_addr))),
    );
    wait_for(Duration::from_secs(20), "upload", || ok(&up.stats) == 1).await;
    assert!(up.stats.uploads_failed.load(Ordering::Relaxed) >= 1);
    up.stop().await;
    let head = first_head.lock().expect("lock").to_lowercase();
    assert!(
        head.contains(&format!("content-length: {}", 4 << 20)),
        "{head}"
    );
    assert!(!head.contains("transfer-encoding"), "{head}");
    assert!(head.contains("idempotency-key: e1/e1.pcapng"), "{head}");
    assert!(head.contains("x-content-sha256: "), "{head}");
    assert_eq!(stored(&server, "e1", "e1.pcapng"), Some(data));
    assert_exactly_once(&server, &["e1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_too_large_parks_the_unit() {
    let server = server().await;
    *server.faults.always.lock().expect("lock") = Some(413);
    let spool_dir = tempfile::tempdir().expect("tempdir");
    make_unit(spool_dir.path(), "f1", 1000, 10);
    make_unit(spool_dir.path(), "f2", 1000, 5);
    let up = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    wait_for(Duration::from_secs(10), "both parked", || {
        up.stats.parked.load(Ordering::Relaxed) == 2
    })
    .await;
    // Not retried: a few polls later, still one request per unit.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let stats = Arc::clone(&up.stats);
    up.stop().await;
    let up = Running2 { stats };
    assert_eq!(server.faults.requests(), 2);
    let units = spool::scan(spool_dir.path()).expect("scan");
    for u in &units {
        assert_eq!(u.status(), spool::Status::Parked);
        let p = u.state.parked.as_ref().expect("parked");
        assert_eq!(p.status, Some(413));
        assert!(p.reason.contains("413"), "{}", p.reason);
    }
    assert_eq!(up.stats.parked_now.load(Ordering::Relaxed), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_upload_resumes_and_stores_once() {
    let server = server().await;
    // The first request hangs (the agent "dies" during it).
    server.faults.push(Fault::Delay(Duration::from_secs(30)));
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let data = make_unit(spool_dir.path(), "g1", 2 << 20, 5);
    let first = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    wait_for(Duration::from_secs(5), "first request", || {
        server.faults.requests() >= 1
    })
    .await;
    first.task.abort(); // like kill -9: no state written
    let _ = first.task.await;
    let second = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    wait_for(Duration::from_secs(10), "upload after restart", || {
        ok(&second.stats) == 1
    })
    .await;
    second.stop().await;
    assert_eq!(stored(&server, "g1", "g1.pcapng"), Some(data.clone()));
    assert_exactly_once(&server, &["g1"]);

    // A crash after the endpoint acknowledged but before the state was saved:
    // the next run sends again, and the collector keeps its one copy.
    std::fs::remove_file(spool::state_path(spool_dir.path(), "g1")).expect("rm state");
    let third = start(
        spool_dir.path(),
        SpoolConfig::default(),
        Some(config(put_url(server.addr))),
    );
    wait_for(Duration::from_secs(10), "re-upload", || {
        ok(&third.stats) == 1
    })
    .await;
    third.stop().await;
    assert_exactly_once(&server, &["g1"]);
    let files: Vec<_> = std::fs::read_dir(server.store.join("g1").join(HOST))
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files.len(),
        2,
        "one copy of each file, no temporaries: {files:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_post_delivers_a_unit_in_one_request() {
    let server = server().await;
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let data = make_unit(spool_dir.path(), "h1", 300_000, 5);
    std::fs::write(
        spool_dir.path().join("h1.svg"),
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .expect("svg");
    let mut c = config(format!("http://{}/upload", server.addr));
    c.method = Method::Post;
    let up = start(spool_dir.path(), SpoolConfig::default(), Some(c));
    wait_for(Duration::from_secs(10), "upload", || ok(&up.stats) == 1).await;
    up.stop().await;
    assert_eq!(server.faults.requests(), 1);
    assert_eq!(stored(&server, "h1", "h1.pcapng"), Some(data));
    assert!(stored(&server, "h1", "h1.svg").is_some());
    assert!(stored(&server, "h1", "h1.json").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spool_limit_drops_uploaded_then_oldest_pending() {
    let spool_dir = tempfile::tempdir().expect("tempdir");
    let d = spool_dir.path();
    // Oldest first: p1 (pending), u2 (uploaded), p3 (pending), u4 (uploaded), p5 (pending).
    for (i, name) in ["p1", "u2", "p3", "u4", "p5"].iter().enumerate() {
        make_unit(d, name, 1000, 100 - 10 * i as u64);
    }
    for name in ["u2", "u4"] {
        let mut st = spool::UnitState::default();
        st.done.insert(format!("{name}.pcapng"));
        st.done.insert(format!("{name}.json"));
        spool::save_state(d, name, &st).expect("state");
    }
    let unit_bytes = spool::scan(d).expect("scan")[0].bytes();
    // Room for two units: drop u2, u4 (uploaded, oldest first), then p1.
    let spool = SpoolConfig {
        max_spool: Some(2 * unit_bytes),
    };
    let up = start(d, spool, None);
    let stats = Arc::clone(&up.stats);
    wait_for(Duration::from_secs(5), "a scan", || {
        stats.rounds.load(Ordering::Relaxed) >= 1
    })
    .await;
    up.stop().await;
    let up = Running2 { stats };
    let left: Vec<String> = spool::scan(d)
        .expect("scan")
        .into_iter()
        .map(|u| u.incident)
        .collect();
    assert_eq!(left, ["p3", "p5"]);
    assert_eq!(up.stats.dropped_uploaded.load(Ordering::Relaxed), 2);
    assert_eq!(up.stats.dropped_pending.load(Ordering::Relaxed), 1);
    assert!(!d.join("p1.pcapng").exists() && !d.join(".u2.state").exists());
}
