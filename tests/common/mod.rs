//! Shared helpers for the integration tests: the built binary, generated
//! captures, and tshark as the independent decoder of what we write.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tripcap::traffic::{self, Flow, Generator};

pub mod nats;
pub mod pki;
pub mod rgw;

/// `tripcap` with arguments, like ripgrep's TestCommand.
pub fn tripcap() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tripcap"));
    c.env("NO_COLOR", "1").env("RUST_LOG", "info");
    c
}

/// Run and capture output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the tripcap binary runs")
}

/// One RoCE packet as tshark reads it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    /// frame.time_epoch in ns.
    pub ts: i64,
    /// Interface name (pcapng) or empty.
    pub iface: String,
    /// IP destination.
    pub dst: String,
    /// Dest QP (hex as tshark prints it).
    pub qp: String,
    /// PSN.
    pub psn: u32,
}

/// Parse tshark's `frame.time_epoch` ("1796005446.260361245") into ns, exactly.
pub fn epoch_ns(text: &str) -> i64 {
    let (s, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut digits: String = frac.chars().take(9).collect();
    while digits.len() < 9 {
        digits.push('0');
    }
    s.parse::<i64>().expect("seconds") * 1_000_000_000 + digits.parse::<i64>().expect("fraction")
}

/// Every RoCE (infiniband) frame of `file`, decoded by tshark.
pub fn tshark_rows(file: &Path) -> Vec<Row> {
    let fields = [
        "frame.time_epoch",
        "frame.interface_name",
        "ip.dst",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
    ];
    let out = tshark_fields(file, Some("infiniband"), &fields);
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                ts: epoch_ns(f[0]),
                iface: f.get(1).unwrap_or(&"").to_string(),
                dst: f.get(2).unwrap_or(&"").to_string(),
                qp: f.get(3).unwrap_or(&"").to_string(),
                psn: f.get(4).and_then(|p| p.parse().ok()).expect("psn"),
            }
        })
        .collect()
}

/// The section-header comments of a pcapng, as capinfos prints them.
pub fn capture_comments(file: &Path) -> Vec<String> {
    let out = Command::new("capinfos")
        .arg(file)
        .output()
        .expect("capinfos runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Capture comment:")
                .map(|c| c.trim().to_string())
        })
        .collect()
}

/// A classic nanosecond pcap of `n` generated RoCE packets, one every
/// `step_ns` from `start_ns`, from `src` to `dst`; returns the (ts, psn) written.
pub fn write_generated(
    path: &Path,
    start_ns: i64,
    step_ns: i64,
    n: usize,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    qp: u32,
) -> Vec<(i64, u32)> {
    let times: Vec<i64> = (0..n as i64).map(|i| start_ns + step_ns * i).collect();
    write_generated_at(path, &times, src, dst, qp)
}

/// Like [`write_generated`], one data packet per timestamp in `times`, in that
/// order (which need not be sorted): returns (ts, PSN) of each.
pub fn write_generated_at(
    path: &Path,
    times: &[i64],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    qp: u32,
) -> Vec<(i64, u32)> {
    let mut g = Generator::new(vec![Flow::new(qp, qp + 0x100, 100, 1)], 200);
    let mut payload = Vec::new();
    let mut frame = Vec::new();
    let mut frames = Vec::new();
    let mut sent = Vec::new();
    while frames.len() < times.len() {
        let p = g.next_of(0, &mut payload).expect("packet");
        if p.reply {
            continue; // data packets only: one per PSN
        }
        let ts = times[frames.len()];
        traffic::frame(src, dst, 49152, &payload, &mut frame);
        frames.push((ts, frame.clone()));
        sent.push((ts, p.psn));
    }
    let mut f = std::fs::File::create(path).expect("create pcap");
    traffic::write_pcap(&mut f, 128, frames).expect("write pcap");
    sent
}

/// The capture sidecars (`<incident>.json`, not `.summary.json` reports or
/// temporary files) in `dir`, sorted.
pub fn sidecars(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.ends_with(".json") && !name.ends_with(".summary.json") && !name.starts_with('.')
        })
        .collect();
    v.sort();
    v
}

/// Read a sidecar.
pub fn read_sidecar(path: &Path) -> tripcap::sidecar::Sidecar {
    serde_json::from_slice(&std::fs::read(path).expect("read sidecar")).expect("sidecar parses")
}

/// Wait until `pred` holds, polling; panics after `limit`.
pub fn wait_until(limit: Duration, what: &str, mut pred: impl FnMut() -> bool) {
    let start = Instant::now();
    while !pred() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Spawn `cmd` with stderr piped and wait until a stderr line contains `ready`.
/// The rest of stderr is drained into the returned buffer in the background.
pub fn spawn_ready(
    cmd: &mut Command,
    ready: &str,
    limit: Duration,
) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let log2 = log.clone();
    let ready = ready.to_string();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stderr);
        let mut line = String::new();
        let mut told = false;
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            if !told && line.contains(&ready) {
                let _ = tx.send(());
                told = true;
            }
            log2.lock().map(|mut l| l.push_str(&line)).ok();
            line.clear();
        }
    });
    if rx.recv_timeout(limit).is_err() {
        let _ = child.kill();
        panic!(
            "process did not become ready: {}",
            log.lock().map(|l| l.clone()).unwrap_or_default()
        );
    }
    (child, log)
}

/// Every packet of a pcap or pcapng file: (timestamp ns, original length, link type, bytes).
pub fn read_packets(path: &Path) -> Vec<(i64, u32, u32, Vec<u8>)> {
    let f = std::fs::File::open(path).expect("open");
    let mut r =
        tripcap::capture_file::reader::Reader::new(std::io::BufReader::new(f)).expect("reader");
    let mut v = Vec::new();
    while let Some(p) = r.next_packet().expect("packet") {
        v.push((p.ts_ns, p.orig_len, p.link_type, p.data.to_vec()));
    }
    v
}

/// Send SIGINT and wait for exit.
pub fn interrupt(child: &mut Child) -> std::process::ExitStatus {
    // SAFETY: plain kill(2) on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().expect("wait")
}

/// tshark's `-T fields` output for `file` (tab-separated), optionally
/// filtered by a display filter; panics with tshark's message if it fails.
pub fn tshark_fields(file: &Path, filter: Option<&str>, fields: &[&str]) -> String {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file);
    if let Some(f) = filter {
        cmd.args(["-Y", f]);
    }
    cmd.args(["-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd
        .output()
        .expect("tshark runs (install it: apt-get install tshark)");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Number of frames tshark reads in `file` (any protocol).
pub fn tshark_rows_any(file: &Path) -> usize {
    tshark_fields(file, None, &["frame.number"])
        .lines()
        .filter(|l| !l.is_empty())
        .count()
}

/// The test data kept in the repository, `tests/data` (`corpus/`, `pcaps/`; where each
/// file came from is in its README); fails if it is missing rather than skipping.
pub fn data_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    assert!(
        dir.join("pcaps").is_dir() && dir.join("corpus").is_dir(),
        "the test data is missing: looked in {}",
        dir.display()
    );
    dir
}

/// The sample captures whose extension is one of `extensions`, sorted: those in
/// `tests/data/pcaps`, then, only when `TRIPCAP_SHARED_DIR` is set, the others in
/// `$TRIPCAP_SHARED_DIR/pcaps` (an optional fuller set kept outside the repository;
/// names already in `tests/data/pcaps` are skipped). No test needs that variable.
pub fn sample_pcaps(extensions: &[&str]) -> Vec<PathBuf> {
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| extensions.contains(&x))
            })
            .collect();
        v.sort();
        v
    };
    let dir = data_dir().join("pcaps");
    let mut v = list(&dir);
    assert!(!v.is_empty(), "no sample captures in {}", dir.display());
    if let Some(shared) = std::env::var_os("TRIPCAP_SHARED_DIR") {
        let ours: Vec<_> = v
            .iter()
            .filter_map(|p| p.file_name())
            .map(ToOwned::to_owned)
            .collect();
        let more: Vec<PathBuf> = list(&Path::new(&shared).join("pcaps"))
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| !ours.iter().any(|o| o == n)))
            .collect();
        eprintln!("TRIPCAP_SHARED_DIR: {} more sample captures", more.len());
        v.extend(more);
    }
    v
}

/// Line `n` (1-based, counting the header) of a corpus TSV: its third column, untrimmed.
pub fn corpus_line(file: &str, n: usize) -> String {
    let text = std::fs::read_to_string(data_dir().join("corpus").join(file)).expect("corpus file");
    let row = text.split('\n').nth(n - 1).expect("line number in range");
    row.splitn(3, '\t')
        .nth(2)
        .expect("three columns")
        .to_string()
}

/// An agent replaying generated traffic at capture pace (`--speed 1x`) while
/// following `log`: the shape of every test that writes log lines "live"
/// against a replay.
pub struct RealtimeReplay {
    /// The agent (stdout and stderr piped).
    pub child: Child,
    /// The followed log (empty at start).
    pub log: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// (ts, psn) of every packet replayed.
    pub sent: Vec<(i64, u32)>,
}

/// Start a [`RealtimeReplay`] in `dir`: `packets` packets of QP `qp`, one every
/// `step_ns` from `start_ns`; `config` is TOML put before the `[logs]` table the
/// helper adds.
pub fn start_realtime_replay(
    dir: &Path,
    start_ns: i64,
    step_ns: i64,
    packets: usize,
    qp: u32,
    config: &str,
) -> RealtimeReplay {
    let pcap = dir.join("in.pcap");
    let sent = write_generated(
        &pcap,
        start_ns,
        step_ns,
        packets,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        qp,
    );
    let log = dir.join("job.log");
    std::fs::write(&log, b"").expect("create log"); // followed from its (empty) end
    let out = dir.join("out");
    let cfg = dir.join("t.toml");
    std::fs::write(&cfg, format!("{config}\n[logs]\npaths = [{log:?}]\n")).expect("write config");
    let child = tripcap()
        .args(["run", "--speed", "1x", "--from-pcap"])
        .arg(&pcap)
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    RealtimeReplay {
        child,
        log,
        out,
        sent,
    }
}

/// One plain HTTP/1.0 request to 127.0.0.1:`port`; (status, body), or `None`
/// when no full answer came within `limit`.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
    limit: Duration,
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.set_write_timeout(Some(limit)).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

/// A free TCP port on 127.0.0.1 (free when asked).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Call `send(i)` for `i` in `0..n`, one call every `every` (the first at
/// once), on this thread: the pace of the live tests' traffic. Paced by a
/// `tokio::time::interval` on a current-thread runtime, with
/// [`MissedTickBehavior::Burst`](tokio::time::MissedTickBehavior::Burst): a
/// call that is late (a slow send, a busy machine) is made at once and the
/// schedule stays `start + i * every`: call `i` is never early and the `n`
/// calls span `(n - 1) * every`, however the sends went. `send` does the sending; its `i` lets a test
/// act at a point of the schedule (call `i` is due at `i * every`).
pub fn paced(n: usize, every: Duration, mut send: impl FnMut(usize)) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime for pacing");
    rt.block_on(async {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        for i in 0..n {
            tick.tick().await;
            send(i);
        }
    });
}

/// A capture unit as an agent leaves it in its spool, in `dir`: `capture` as
/// the pcapng, a red SVG timeline, a summary with one finding (`PSN gap on
/// QP 0x11`), and a sidecar whose one `nccl-watchdog-timeout` trigger fired at
/// `at_ns` on `line`.
pub fn write_unit(dir: &Path, incident: &str, host: &str, at_ns: i64, line: &str, capture: &[u8]) {
    std::fs::write(dir.join(format!("{incident}.pcapng")), capture).expect("write");
    std::fs::write(
        dir.join(format!("{incident}.svg")),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"20\"><rect width=\"200\" height=\"20\" fill=\"#c33\"/></svg>",
    )
    .expect("write");
    std::fs::write(
        dir.join(format!("{incident}.summary.json")),
        r#"{"findings":[{"severity":"error","text":"PSN gap on QP 0x11 at +0.412 s"}],"throughput":{"verdict":{"limiter":"pfc_pauses","evidence":"PFC priority 3 paused 12.500 ms of the capture's 40.000 ms (31.2 %)","also":[]}}}"#,
    )
    .expect("write");
    let sidecar = serde_json::json!({
        "incident": incident,
        "host": host,
        "triggers": [{"name": "nccl-watchdog-timeout", "class": "nccl_timeout",
                      "at": "2026-11-30T02:14:27.5Z", "at_ns": at_ns,
                      "source": "/var/log/nccl.node7.log", "line_no": 812, "line": line}],
        "window": {"complete": true, "shortfall": []},
        "packets": 1,
    });
    std::fs::write(
        dir.join(format!("{incident}.json")),
        serde_json::to_vec(&sidecar).expect("json"),
    )
    .expect("write");
}

/// A `tripcap collect` on 127.0.0.1 (stopped when dropped).
pub struct Collector {
    /// The collector process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Where it stores what it receives.
    pub dir: PathBuf,
}

impl Drop for Collector {
    fn drop(&mut self) {
        interrupt(&mut self.child);
    }
}

/// Start `tripcap collect` storing into `store`, with the bearer token `token`
/// read from the environment variable `token_env`, and `extra` arguments.
pub fn start_collector(store: &Path, token_env: &str, token: &str, extra: &[&str]) -> Collector {
    let mut args: Vec<&str> = vec!["--dir", store.to_str().expect("UTF-8 path")];
    args.extend_from_slice(extra);
    let mut c = start_collector_with(&args, &[(token_env, token)], &["--token-env", token_env]);
    c.dir = store.to_path_buf();
    c
}

/// Start `tripcap collect --listen 127.0.0.1:0` with `args` and `more` arguments and
/// the environment `env`; `dir` is left empty (a bucket-backed collector has none).
pub fn start_collector_with(args: &[&str], env: &[(&str, &str)], more: &[&str]) -> Collector {
    let mut cmd = tripcap();
    cmd.args(["collect", "--listen", "127.0.0.1:0"])
        .args(args)
        .args(more)
        .envs(env.iter().copied());
    let (child, log) = spawn_ready(&mut cmd, "collector listening on", Duration::from_secs(20));
    // spawn_ready reports the line before it appends it to the log.
    let mut text = String::new();
    wait_until(Duration::from_secs(5), "the address in the log", || {
        text = log.lock().map(|l| l.clone()).unwrap_or_default();
        text.contains("http://127.0.0.1:")
    });
    let start = text.find("http://127.0.0.1:").expect("address in log");
    let url: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    Collector {
        child,
        url,
        dir: PathBuf::new(),
    }
}

/// The DOM headless Chromium builds from `url` (`--dump-dom`); panics when
/// Chromium is missing or fails.
pub fn chromium_dom(url: &str) -> String {
    let Some(browser) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())
    else {
        panic!("chromium is missing: `apt-get install chromium` (.ci/run installs it)");
    };
    let profile = tempfile::tempdir().expect("profile");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && dom.contains("</html>"),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// The binary copied where an unprivileged user can run it, run as `nobody`
/// with no capabilities (`setpriv`), in a directory it may write.
pub struct Unprivileged {
    /// The directory holding the copy (world-writable).
    pub dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Unprivileged {
    /// Copy the binary.
    pub fn new() -> Unprivileged {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let bin = dir.path().join("tripcap");
        std::fs::copy(env!("CARGO_BIN_EXE_tripcap"), &bin).expect("copy");
        Unprivileged { dir, bin }
    }

    /// Give the copy file capabilities (`setcap CAPS`, e.g. `cap_net_raw+p`).
    pub fn setcap(&self, caps: &str) {
        let o = Command::new("setcap")
            .arg(caps)
            .arg(&self.bin)
            .output()
            .expect("run setcap (apt-get install libcap2-bin)");
        assert!(o.status.success(), "setcap {caps}: {o:?}");
    }

    /// Run `tripcap ARGS` as nobody, in the copy's directory.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(&self.bin)
            .args(args)
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .output()
            .expect("setpriv runs")
    }
}
