//! The real S3 server the object-store tests talk to: a one-node Ceph 16
//! cluster (`ceph-mon`, one `ceph-osd` on memstore, `radosgw`; Debian's
//! `ceph-mon ceph-osd radosgw ceph-common`, which `.ci/run` installs) on
//! 127.0.0.1. It checks SigV4 signatures and speaks multipart uploads for real.
//!
//! [`shared`] starts one cluster per test process, the first time it is
//! called (about 2 s), and every test of the process shares it: a test takes
//! [`use_shared`] to talk to it, or [`use_exclusively`] to stop and restart
//! `radosgw` (no other test then sees it down). Each test makes its own bucket
//! ([`Rgw::fresh_bucket`]).
//!
//! Nothing is fixed, so two test processes run two clusters side by side: free
//! ports for the monitor and RGW, a random fsid and key pair, and everything
//! (configuration, monitor store, run dir, admin sockets, pid files, logs) under
//! a temporary directory, with `-c` given to every command: nothing in
//! `/etc/ceph`, `/var/run/ceph` or `/var/log/ceph`.
//!
//! The daemons run in the foreground as children of one thread that lives as
//! long as the test process, each with `PR_SET_PDEATHSIG` = `SIGKILL`: they die
//! with the test process however it ends (the signal follows the spawning
//! *thread*, and test threads end after each test). At a normal exit they are
//! killed and the directory removed; a directory left by a test process that
//! was killed is removed by the next start.
//!
//! Talking to it: path-style URLs (`{endpoint}/{bucket}/{key}`); bucket names of
//! 3 to 63 characters, lowercase (RGW answers `InvalidBucketName` to `b1`);
//! multipart parts of at least 5 MiB but the last, as on AWS. curl 7.88 signs a
//! bare `?uploads` differently from RGW (`SignatureDoesNotMatch`): write
//! `?uploads=`.

use std::fs::File;
use std::io::Read;
use std::net::TcpStream;
use std::ops::Deref;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{
    mpsc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError,
};
use std::time::{Duration, Instant};

/// What the cluster needs, all in `$PATH`.
const BINARIES: [&str; 6] = [
    "monmaptool",
    "ceph-mon",
    "ceph-osd",
    "radosgw",
    "ceph",
    "radosgw-admin",
];
const INSTALL: &str = "install ceph-mon ceph-osd radosgw ceph-common (.ci/run does)";
/// The region clients sign for (RGW's default zonegroup takes any; this is the usual one).
const REGION: &str = "us-east-1";
/// How long a daemon or a command may take to do its part.
const LIMIT: Duration = Duration::from_secs(60);
/// Names of the cluster directories in the temporary directory.
const DIR_PREFIX: &str = "tripcap-rgw-";
/// The file in a cluster directory its test process holds a `flock` on.
const OWNER: &str = "owner.lock";
/// The daemons' Ceph names (and the stems of their log files).
const MON: &str = "mon.a";
const OSD: &str = "osd.0";
const RGW: &str = "client.rgw";

/// The one cluster of this test process, or why it did not start.
static CLUSTER: OnceLock<Result<Rgw, String>> = OnceLock::new();
/// Tests sharing the cluster read-lock; one that stops RGW write-locks.
static USERS: RwLock<()> = RwLock::new(());

/// The running cluster: an S3 endpoint with one user.
pub struct Rgw {
    /// The user's access key (random per cluster).
    pub access_key: String,
    /// The user's secret key (random per cluster).
    pub secret_key: String,
    port: u16,
    dir: PathBuf,
    conf: PathBuf,
    daemons: Mutex<Vec<Daemon>>,
    temp: Mutex<Option<tempfile::TempDir>>,
    /// Holds the `flock` on [`OWNER`] while this process lives.
    _owner: File,
}

/// A daemon of the cluster: killed (SIGKILL) and reaped when dropped.
struct Daemon {
    name: &'static str,
    child: Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What curl got: the HTTP status (0 without an answer), the body, curl's stderr.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body (empty when the arguments sent it elsewhere with `-o`).
    pub body: Vec<u8>,
    /// curl's own messages.
    pub stderr: String,
}

impl Reply {
    /// The body as text (for the XML answers), with the status and curl's messages.
    pub fn text(&self) -> String {
        format!(
            "HTTP {}: {} {}",
            self.status,
            String::from_utf8_lossy(&self.body),
            self.stderr
        )
    }
}

/// The cluster of this test process, started on first use; panics if it could
/// not start (with the same message in every test). Tests take [`use_shared`]
/// or [`use_exclusively`] rather than this.
pub fn shared() -> &'static Rgw {
    let cluster = CLUSTER.get_or_init(|| {
        // SAFETY: registers a plain function, which only locks, kills and removes.
        unsafe { libc::atexit(stop_at_exit) };
        let started = Instant::now();
        match std::panic::catch_unwind(start) {
            Ok(rgw) => {
                eprintln!(
                    "Ceph RGW at {} started in {:.1?} (files in {})",
                    rgw.endpoint(),
                    started.elapsed(),
                    rgw.dir.display()
                );
                Ok(rgw)
            }
            Err(e) => Err(e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".to_string())),
        }
    });
    match cluster {
        Ok(rgw) => rgw,
        Err(why) => panic!("the shared Ceph RGW did not start: {why}"),
    }
}

/// The shared cluster for a test that talks to it: RGW stays up while this lives.
pub fn use_shared() -> Shared {
    let rgw = shared();
    Shared {
        _guard: USERS.read().unwrap_or_else(PoisonError::into_inner),
        rgw,
    }
}

/// The shared cluster for a test alone, which may [`Exclusive::stop_rgw`]:
/// waits for the other tests to finish with it, and keeps them waiting (so a
/// test holding [`use_shared`] must not call it: it would wait for itself).
pub fn use_exclusively() -> Exclusive {
    let rgw = shared();
    Exclusive {
        _guard: USERS.write().unwrap_or_else(PoisonError::into_inner),
        rgw,
    }
}

/// [`use_shared`]'s hold on the cluster (derefs to [`Rgw`]).
pub struct Shared {
    _guard: RwLockReadGuard<'static, ()>,
    rgw: &'static Rgw,
}

impl Deref for Shared {
    type Target = Rgw;
    fn deref(&self) -> &Rgw {
        self.rgw
    }
}

/// [`use_exclusively`]'s hold on the cluster (derefs to [`Rgw`]); RGW is
/// started again when it is dropped, if the test left it stopped.
pub struct Exclusive {
    _guard: RwLockWriteGuard<'static, ()>,
    rgw: &'static Rgw,
}

impl Deref for Exclusive {
    type Target = Rgw;
    fn deref(&self) -> &Rgw {
        self.rgw
    }
}

impl Exclusive {
    /// Kill `radosgw` (SIGKILL: requests in flight are cut) and wait until its
    /// port refuses connections. The monitor, the OSD and the data stay.
    pub fn stop_rgw(&self) {
        let daemon = {
            let mut daemons = lock(&self.rgw.daemons);
            let i = daemons
                .iter()
                .position(|d| d.name == RGW)
                .expect("radosgw is running when stop_rgw is called");
            daemons.remove(i)
        };
        drop(daemon);
        let port = self.rgw.port;
        super::wait_until(
            Duration::from_secs(10),
            "the stopped RGW's port to refuse connections",
            || {
                TcpStream::connect(("127.0.0.1", port))
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
            },
        );
    }

    /// Start `radosgw` again, on the same port, and wait until it answers.
    pub fn start_rgw(&self) {
        self.rgw.start_rgw();
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        if !self.rgw.rgw_running() {
            let restarted =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.rgw.start_rgw()));
            if restarted.is_err() {
                eprintln!("could not start RGW again for the next tests");
            }
        }
    }
}

impl Rgw {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// RGW's port on 127.0.0.1 (the same across [`Exclusive::start_rgw`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The region to sign for.
    pub fn region(&self) -> &'static str {
        REGION
    }

    /// `{endpoint}/{path}`: `path` is `bucket` or `bucket/key`, with any query.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.endpoint(), path.trim_start_matches('/'))
    }

    /// The cluster's directory (logs in `log/`: `client.rgw.log`, `osd.0.log`, `mon.a.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Run curl with `args` (which name the URL, see [`Rgw::url`]), signed
    /// (SigV4, `UNSIGNED-PAYLOAD`) with this cluster's key pair: the
    /// independent client tests check what was stored with.
    pub fn curl(&self, args: &[&str]) -> Reply {
        self.curl_signed_by(&self.access_key, &self.secret_key, args)
    }

    /// [`Rgw::curl`] signed with another key pair.
    pub fn curl_signed_by(&self, access_key: &str, secret_key: &str, args: &[&str]) -> Reply {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "120", "--aws-sigv4"])
            .arg(format!("aws:amz:{REGION}:s3"))
            .arg("--user")
            .arg(format!("{access_key}:{secret_key}"))
            .args(["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"])
            .args(["-w", "\n%{http_code}"])
            .args(args)
            .output()
            .expect("curl runs (apt-get install curl)");
        let stdout = out.stdout;
        let split = stdout
            .iter()
            .rposition(|&b| b == b'\n')
            .expect("curl wrote the status line");
        let status = String::from_utf8_lossy(&stdout[split + 1..])
            .trim()
            .parse()
            .expect("curl's %{http_code} is a number");
        Reply {
            status,
            body: stdout[..split].to_vec(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Create bucket `name` (3 to 63 characters: lowercase letters, digits, `-`, `.`).
    pub fn create_bucket(&self, name: &str) {
        let r = self.curl(&["-X", "PUT", &self.url(name)]);
        assert_eq!(r.status, 200, "create bucket {name}: {}", r.text());
    }

    /// Create a bucket no other test uses: `{prefix}-N-RANDOM` (keep `prefix`
    /// short and lowercase); returns its name.
    pub fn fresh_bucket(&self, prefix: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}-{}-{}",
            N.fetch_add(1, Ordering::Relaxed),
            random_hex(4)
        );
        self.create_bucket(&name);
        name
    }

    /// Store `data` as `bucket/key` (one PUT).
    pub fn put_object(&self, bucket: &str, key: &str, data: &[u8]) {
        let file = tempfile::NamedTempFile::new_in(&self.dir).expect("a file for the object");
        std::fs::write(file.path(), data).expect("write the object's file");
        let path = file.path().to_str().expect("a UTF-8 temporary path");
        let r = self.curl(&["-T", path, &self.url(&format!("{bucket}/{key}"))]);
        assert_eq!(r.status, 200, "PUT {bucket}/{key}: {}", r.text());
    }

    /// The bytes of `bucket/key`; panics unless RGW answers 200.
    pub fn get_object(&self, bucket: &str, key: &str) -> Vec<u8> {
        let r = self.curl(&[&self.url(&format!("{bucket}/{key}"))]);
        assert_eq!(r.status, 200, "GET {bucket}/{key}: {}", r.text());
        r.body
    }

    /// Delete `bucket/key` (RGW answers 204 whether or not it was there).
    pub fn delete_object(&self, bucket: &str, key: &str) {
        let r = self.curl(&["-X", "DELETE", &self.url(&format!("{bucket}/{key}"))]);
        assert_eq!(r.status, 204, "DELETE {bucket}/{key}: {}", r.text());
    }

    /// Give back the memory of deleted objects now. RGW hands the data of a
    /// deleted object (all of it but the first 4 MiB, and every part of a
    /// multipart upload) to its garbage collector, which waits two hours by
    /// default; the OSD's memstore keeps it until then, and holds 2 GiB at
    /// most. Runs `radosgw-admin gc process --include-all`.
    pub fn collect_garbage(&self) {
        self.run(
            RGW,
            Command::new("radosgw-admin")
                .arg("-c")
                .arg(&self.conf)
                .args(["gc", "process", "--include-all"]),
        );
    }

    /// The multipart uploads in progress in `bucket`: RGW's
    /// `ListMultipartUploadsResult` XML (one `<Upload>` with its `<Key>` each).
    pub fn multipart_uploads(&self, bucket: &str) -> String {
        let r = self.curl(&[&self.url(&format!("{bucket}?uploads="))]);
        assert_eq!(
            r.status,
            200,
            "list multipart uploads of {bucket}: {}",
            r.text()
        );
        String::from_utf8_lossy(&r.body).into_owned()
    }

    /// The last lines of a daemon's log files (`mon.a`, `osd.0`, `client.rgw`),
    /// for a failure message.
    pub fn log_tail(&self, daemon: &str) -> String {
        let mut text = String::new();
        for file in [format!("{daemon}.log"), format!("{daemon}.out")] {
            let path = self.dir.join("log").join(&file);
            let all = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = all.lines().collect();
            let tail = lines[lines.len().saturating_sub(25)..].join("\n");
            text.push_str(&format!("\n--- end of {}:\n{tail}", path.display()));
        }
        text
    }

    fn rgw_running(&self) -> bool {
        lock(&self.daemons).iter().any(|d| d.name == RGW)
    }

    fn start_rgw(&self) {
        assert!(!self.rgw_running(), "radosgw is already running");
        self.spawn(RGW, Command::new("radosgw").args(["-n", RGW, "-f"]));
        let port = self.port;
        self.wait_for(RGW, "an HTTP answer on its port", || {
            super::http(port, "GET", "/", "", Duration::from_secs(2)).is_some()
        });
    }

    /// Run daemon `name` (`cmd` without `-c`) in the foreground, its stdout and
    /// stderr into `log/NAME.out`.
    fn spawn(&self, name: &'static str, cmd: &mut Command) {
        let out = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("log").join(format!("{name}.out")))
            .expect("create the daemon's output file");
        let err = out.try_clone().expect("clone the daemon's output file");
        let mut full = Command::new(cmd.get_program());
        full.arg("-c")
            .arg(&self.conf)
            .args(cmd.get_args())
            .env_remove("CEPH_ARGS")
            .env_remove("CEPH_CONF")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = spawn_from_lasting_thread(full)
            .unwrap_or_else(|e| panic!("cannot start {name} ({:?}): {e}", cmd.get_program()));
        lock(&self.daemons).push(Daemon { name, child });
    }

    /// Wait until `ready` holds; fails at once if daemon `name` exits, or after [`LIMIT`].
    fn wait_for(&self, name: &str, what: &str, mut ready: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ready() {
            let exited = lock(&self.daemons)
                .iter_mut()
                .find(|d| d.name == name)
                .map(|d| d.child.try_wait());
            match exited {
                Some(Ok(None)) => {}
                Some(Ok(Some(status))) => panic!(
                    "{name} exited ({status}) before {what}{}",
                    self.log_tail(name)
                ),
                Some(Err(e)) => panic!("cannot check on {name}: {e}"),
                None => panic!("{name} is not running"),
            }
            assert!(
                start.elapsed() < LIMIT,
                "{name}: no {what} within {LIMIT:?}{}",
                self.log_tail(name)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Run a short command to its end (within [`LIMIT`]); panics with its
    /// output and the end of `daemon`'s log unless it succeeds.
    fn run(&self, daemon: &str, cmd: &mut Command) -> String {
        cmd.env_remove("CEPH_ARGS").env_remove("CEPH_CONF");
        let what = format!("{cmd:?}");
        let out = run_within(cmd, LIMIT)
            .unwrap_or_else(|e| panic!("{what}: {e}{}", self.log_tail(daemon)));
        assert!(
            out.status.success(),
            "{what} failed ({}): {}{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_tail(daemon)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `ceph ARGS` against this cluster.
    fn ceph(&self, args: &[&str]) -> String {
        self.run(
            MON,
            Command::new("ceph")
                .arg("-c")
                .arg(&self.conf)
                .args(["--connect-timeout", "30"])
                .args(args),
        )
    }

    /// Kill the daemons and remove the directory, if no test holds them.
    fn shut_down(&self) {
        if let Some(mut daemons) = lock_now(&self.daemons) {
            while let Some(d) = daemons.pop() {
                drop(d);
            }
        }
        if let Some(mut temp) = lock_now(&self.temp) {
            temp.take();
        }
    }
}

/// Start the cluster (panics saying what did not come up).
fn start() -> Rgw {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for b in BINARIES {
        assert!(
            std::env::split_paths(&path).any(|d| d.join(b).is_file()),
            "`{b}` is not installed: {INSTALL}"
        );
    }
    remove_stale_dirs();
    let temp = tempfile::Builder::new()
        .prefix(DIR_PREFIX)
        .tempdir()
        .expect("a temporary directory for the Ceph cluster");
    let dir = temp.path().to_path_buf();
    let owner = File::create(dir.join(OWNER)).expect("create the owner lock file");
    // SAFETY: flock(2) on a file we hold open.
    let locked = unsafe { libc::flock(owner.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(locked, 0, "flock {}", dir.join(OWNER).display());
    for sub in ["mon", "osd", "rgw", "run", "log"] {
        std::fs::create_dir(dir.join(sub)).expect("create the cluster's directories");
    }
    let mon_port = super::free_port();
    let port = loop {
        let p = super::free_port();
        if p != mon_port {
            break p;
        }
    };
    let fsid = uuid();
    let conf = dir.join("ceph.conf");
    std::fs::write(&conf, config(&dir, &fsid, mon_port, port)).expect("write ceph.conf");
    let rgw = Rgw {
        access_key: random_hex(10).to_uppercase(),
        secret_key: random_hex(20),
        port,
        dir: dir.clone(),
        conf: conf.clone(),
        daemons: Mutex::new(Vec::new()),
        temp: Mutex::new(Some(temp)),
        _owner: owner,
    };
    // If anything below panics, `rgw` is dropped: the daemons are killed; the
    // directory is kept for its logs (removed by a later start).
    let keep = KeepOnPanic(&rgw);

    let monmap = dir.join("monmap");
    rgw.run(
        MON,
        Command::new("monmaptool")
            .args(["--create", "--fsid", &fsid, "--addv", "a"])
            .arg(format!("[v2:127.0.0.1:{mon_port}]"))
            .arg(&monmap),
    );
    rgw.run(
        MON,
        Command::new("ceph-mon")
            .arg("-c")
            .arg(&conf)
            .args(["-i", "a", "--mkfs", "--monmap"])
            .arg(&monmap),
    );
    rgw.spawn(MON, Command::new("ceph-mon").args(["-i", "a", "-f"]));
    rgw.wait_for(MON, "connection on its port", || {
        TcpStream::connect(("127.0.0.1", mon_port)).is_ok()
    });

    let osd_uuid = uuid();
    let id = rgw.ceph(&["osd", "new", &osd_uuid]);
    assert_eq!(id.trim(), "0", "the first OSD of a new cluster is osd.0");
    rgw.run(
        OSD,
        Command::new("ceph-osd")
            .arg("-c")
            .arg(&conf)
            .args(["-i", "0", "--mkfs", "--osd-uuid"])
            .arg(&osd_uuid),
    );
    let crush = [
        "osd",
        "crush",
        "add",
        OSD,
        "1",
        "root=default",
        "host=localhost",
    ];
    rgw.ceph(&crush);
    rgw.spawn(OSD, Command::new("ceph-osd").args(["-i", "0", "-f"]));
    rgw.wait_for(OSD, "`ceph osd stat` counting it up", || {
        let stat = rgw.ceph(&["osd", "stat", "-f", "json"]);
        serde_json::from_str::<serde_json::Value>(&stat)
            .ok()
            .and_then(|v| v["num_up_osds"].as_u64())
            == Some(1)
    });

    // RGW makes its pools and default zone on its first start.
    rgw.start_rgw();
    rgw.run(
        RGW,
        Command::new("radosgw-admin")
            .arg("-c")
            .arg(&conf)
            .args([
                "user",
                "create",
                "--uid=tripcap-test",
                "--display-name=tripcap test",
            ])
            .arg(format!("--access-key={}", rgw.access_key))
            .arg(format!("--secret-key={}", rgw.secret_key)),
    );
    drop(keep);
    rgw
}

/// While alive during [`start`], keeps the directory if the start panics.
struct KeepOnPanic<'a>(&'a Rgw);

impl Drop for KeepOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(temp) = lock(&self.0.temp).take() {
                eprintln!("the failed Ceph cluster's files: {}", temp.keep().display());
            }
        }
    }
}

/// The cluster's configuration: no authentication, one memstore OSD, pools of
/// one copy and few placement groups, quick monitor rounds (each pool RGW makes
/// on its first start waits for two of them: 1 s each by default).
fn config(dir: &Path, fsid: &str, mon_port: u16, rgw_port: u16) -> String {
    let d = dir.display();
    format!(
        "[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{mon_port}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
run dir = {d}/run
admin socket = {d}/run/$name.asok
pid file = {d}/run/$name.pid
log file = {d}/log/$name.log
keyring = {d}/keyring
mon cluster log file = {d}/log/$cluster.$channel.log
mon data avail warn = 0
mon data avail crit = -1
mon allow pool size one = true
mon warn on pool no redundancy = false
paxos propose interval = 0.05
paxos min wait = 0.01
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0

[mon.a]
mon data = {d}/mon
public addr = 127.0.0.1:{mon_port}

[osd]
osd data = {d}/osd
osd objectstore = memstore
memstore device bytes = 2147483648
public addr = 127.0.0.1
cluster addr = 127.0.0.1

[client.rgw]
# the default `secure` fails under auth none: get_initial_auth_request returned -13
ms mon client mode = crc
rgw data = {d}/rgw
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw thread pool size = 64
"
    )
}

/// Spawn `cmd` with `PR_SET_PDEATHSIG` = `SIGKILL` from a thread that lives as
/// long as the process (the signal comes when the spawning *thread* ends).
fn spawn_from_lasting_thread(cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("ceph-daemons".into())
            // Never ends: the sender lives in a static.
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let parent = std::process::id() as libc::pid_t;
                    // SAFETY: only async-signal-safe calls between fork and exec.
                    unsafe {
                        cmd.pre_exec(move || {
                            let signal = libc::SIGKILL as libc::c_ulong;
                            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) == -1 {
                                return Err(std::io::Error::last_os_error());
                            }
                            if libc::getppid() != parent {
                                libc::_exit(1); // the test process already died
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread to start the Ceph daemons from");
        tx
    });
    let (tx, rx) = mpsc::channel();
    spawner
        .send((cmd, tx))
        .expect("the daemon-spawning thread takes requests");
    rx.recv().expect("the daemon-spawning thread answers")
}

/// Run `cmd` to its end, its output captured; killed after `limit`.
fn run_within(cmd: &mut Command, limit: Duration) -> Result<Output, String> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.map_err(|e| format!("cannot wait for it: {e}")),
        Err(_) => {
            // SAFETY: kill(2) on our child, not yet reaped (its waiter still waits).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            Err(format!("no end within {limit:?}"))
        }
    }
}

/// At exit: kill the daemons and remove the directory.
extern "C" fn stop_at_exit() {
    if let Some(Ok(rgw)) = CLUSTER.get() {
        rgw.shut_down();
    }
}

/// Remove the cluster directories of test processes that are gone (killed
/// before their exit handler ran): nobody holds their owner lock.
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let Ok(owner) = File::open(entry.path().join(OWNER)) else {
            continue;
        };
        // Not one being made right now, between its creation and its lock.
        let old = owner
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60));
        // SAFETY: flock(2) on a file we hold open.
        if old && unsafe { libc::flock(owner.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `n` random bytes from /dev/urandom, in hex.
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    hex::encode(bytes)
}

/// A random UUID from the kernel.
fn uuid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .expect("read /proc/sys/kernel/random/uuid")
        .trim()
        .to_string()
}

/// Lock, past a poisoned lock (a test that failed must not fail the others).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Lock unless another thread holds it (at exit, it may never let go).
fn lock_now<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}
