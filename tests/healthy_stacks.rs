//! The built-in packs against what real RDMA stacks print when nothing is wrong.
//!
//! libfabric's `fi_pingpong` (providers tcp, sockets, udp, rxm over tcp, rxd over udp,
//! shm) and UCX's `ucx_perftest` (tcp, shared memory) run a real exchange on loopback
//! at their most verbose log levels (`FI_LOG_LEVEL=debug`, `UCX_LOG_LEVEL=debug`); `ucx_info`
//! prints its devices and transports. Each run must succeed, its log must hold the
//! verbose lines asked for, and `tripcap triggers test` over all of them must fire
//! nothing: these are the warnings a healthy job's log carries (providers probed and
//! refused, gdrcopy absent, connections closed at teardown). A client with no server
//! is the control: its `failed to connect` must fire. Open MPI runs a small job
//! (mpi4py: allreduce, broadcast, barrier) over each of its transports (ob1 over TCP and
//! shared memory, the UCX PML, the libfabric MTL) with its components at verbosity 100.
//!
//! Needs `fi_pingpong` (Debian: libfabric-bin), `ucx_perftest`, `ucx_info` (ucx-utils),
//! `mpirun` (openmpi-bin) and the system Python's mpi4py (python3-mpi4py); `.ci/run`
//! installs them.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{run, tripcap};

/// A TCP port nobody listens on right now.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local address").port()
}

/// `program` with `args`, its stdout and stderr into `log`.
fn command(program: &str, args: &[&str], env: &[(&str, &str)], log: &Path) -> Command {
    let out = std::fs::File::create(log).expect("create the log");
    let err = out.try_clone().expect("clone the log's handle");
    let mut c = Command::new(program);
    c.args(args).envs(env.iter().copied());
    c.stdout(Stdio::from(out)).stderr(Stdio::from(err));
    c
}

fn spawn(mut c: Command, program: &str) -> Child {
    c.spawn().unwrap_or_else(|e| {
        panic!("{program} does not run ({e}): install libfabric-bin and ucx-utils (see .ci/run)")
    })
}

/// Wait until something listens on TCP `port` (without connecting: the servers
/// accept one client).
fn wait_listening(port: u16, server: &mut Child, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let hex = format!(":{port:04X} ");
    loop {
        let tables = ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect::<String>();
        // Local address column, state 0A (LISTEN).
        if tables.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(hex.trim_end()) && f[3] == "0A"
        }) {
            return;
        }
        if let Ok(Some(status)) = server.try_wait() {
            panic!(
                "the server exited ({status}) before listening on {port}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} after 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One server and one client of `program`; both must succeed.
fn exchange(
    dir: &Path,
    name: &str,
    program: &str,
    server_args: &[String],
    client_args: &[String],
    port: u16,
    env: &[(&str, &str)],
) -> Vec<PathBuf> {
    let (srv_log, cli_log) = (
        dir.join(format!("{name}-server.log")),
        dir.join(format!("{name}-client.log")),
    );
    let mut server = spawn(command(program, &strs(server_args), env, &srv_log), program);
    wait_listening(port, &mut server, &srv_log);
    let client = command(program, &strs(client_args), env, &cli_log)
        .status()
        .unwrap_or_else(|e| panic!("{program} does not run ({e})"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let served = loop {
        if let Some(s) = server.try_wait().expect("wait for the server") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            panic!("{name}: the server did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let show = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    assert!(
        client.success() && served.success(),
        "{name}: the run failed (client {client}, server {served}):\n--- server\n{}\n--- client\n{}",
        show(&srv_log),
        show(&cli_log)
    );
    vec![srv_log, cli_log]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// How many lines of the logs contain `marker`.
fn count(logs: &[PathBuf], marker: &str) -> usize {
    logs.iter()
        .map(|p| {
            let text = std::fs::read(p).expect("read a log");
            String::from_utf8_lossy(&text)
                .lines()
                .filter(|l| l.contains(marker))
                .count()
        })
        .sum()
}

/// `tripcap triggers test --json` over `logs`: one line per firing.
fn firings(logs: &[PathBuf]) -> Vec<String> {
    let o = run(tripcap().args(["triggers", "test", "--json"]).args(logs));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `tripcap triggers test` fires nothing on `logs` (else each firing and its line).
fn nothing_fires(logs: &[PathBuf], what: &str) {
    let fired = firings(logs);
    let shown: Vec<String> = fired.iter().map(|f| line_of(f)).collect();
    assert!(
        fired.is_empty(),
        "{what} fired {} trigger(s):\n{}",
        fired.len(),
        shown.join("\n")
    );
}

/// The line `firing` (a JSON object with `file` and `line_no`) points at.
fn line_of(firing: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(firing).expect("JSON firing");
    let file = v["file"].as_str().expect("file");
    let n = v["line_no"].as_u64().expect("line_no") as usize;
    let text = std::fs::read(file).expect("read the log");
    let line = String::from_utf8_lossy(&text)
        .lines()
        .nth(n - 1)
        .unwrap_or_default()
        .to_string();
    format!("{firing}\n    {line}")
}

#[test]
fn healthy_libfabric_and_ucx_runs_at_debug_level_fire_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut logs = Vec::new();

    // libfabric: one exchange per provider and endpoint type, 20 iterations of 1 KiB
    // (every size takes about 40 s on the sockets provider).
    let fi_env = [("FI_LOG_LEVEL", "debug")];
    for (name, provider, ep) in [
        ("fi-tcp", "tcp", "msg"),
        ("fi-sockets-msg", "sockets", "msg"),
        ("fi-sockets-rdm", "sockets", "rdm"),
        ("fi-udp", "udp", "dgram"),
        ("fi-rxm", "tcp;ofi_rxm", "rdm"),
        ("fi-rxd", "udp;ofi_rxd", "rdm"),
        ("fi-shm", "shm", "rdm"),
    ] {
        let port = free_port();
        let common = |extra: &[&str]| {
            let mut a: Vec<String> = ["-p", provider, "-e", ep, "-I", "20", "-S", "1024"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let p = port.to_string();
        logs.extend(exchange(
            dir.path(),
            name,
            "fi_pingpong",
            &common(&["-B", &p]),
            &common(&["-P", &p, "127.0.0.1"]),
            port,
            &fi_env,
        ));
    }
    let fi_logs = logs.clone();
    assert!(
        count(&fi_logs, "<warn>") >= 7 && count(&fi_logs, "<info>") >= 100,
        "libfabric printed too little at debug level: {} warn, {} info lines (a release \
         build of libfabric prints no <debug> lines)",
        count(&fi_logs, "<warn>"),
        count(&fi_logs, "<info>")
    );

    // UCX: tag matching over TCP, puts over shared memory, streams over every transport.
    for (name, tls, test) in [
        ("ucx-tcp-tag", "tcp", "tag_lat"),
        ("ucx-shm-put", "posix,sysv,self", "ucp_put_bw"),
        ("ucx-all-stream", "all", "stream_bw"),
    ] {
        let port = free_port();
        let p = port.to_string();
        let env = [("UCX_TLS", tls), ("UCX_LOG_LEVEL", "debug")];
        logs.extend(exchange(
            dir.path(),
            name,
            "ucx_perftest",
            &["-p".to_string(), p.clone()],
            &[
                "-p".to_string(),
                p,
                "-t".to_string(),
                test.to_string(),
                "-n".to_string(),
                "1000".to_string(),
                "127.0.0.1".to_string(),
            ],
            port,
            &env,
        ));
    }
    for (name, args) in [("ucx-info-devices", "-d"), ("ucx-info-epw", "-epw")] {
        let log = dir.path().join(format!("{name}.log"));
        let status = command(
            "ucx_info",
            &[args, "-u", "t"],
            &[("UCX_LOG_LEVEL", "debug")],
            &log,
        )
        .status()
        .unwrap_or_else(|e| panic!("ucx_info does not run ({e}): install ucx-utils"));
        assert!(status.success(), "ucx_info {args} failed");
        logs.push(log);
    }
    let ucx_logs = &logs[fi_logs.len()..];
    assert!(
        count(ucx_logs, "UCX  DEBUG") >= 50,
        "UCX printed too little at debug level: {} DEBUG lines",
        count(ucx_logs, "UCX  DEBUG")
    );

    nothing_fires(&logs, "healthy runs");

    // The control: a client with no server fails, and that fires.
    let port = free_port().to_string();
    let log = dir.path().join("fi-no-server.log");
    let status = command(
        "fi_pingpong",
        &["-p", "tcp", "-e", "msg", "-P", &port, "127.0.0.1"],
        &[("FI_LOG_LEVEL", "warn")],
        &log,
    )
    .status()
    .expect("fi_pingpong runs");
    assert!(!status.success(), "a client with no server succeeded");
    let fired = firings(&[log]);
    assert!(
        fired
            .iter()
            .any(|f| f.contains("\"class\":\"rdma_verbs_error\"")),
        "the failed connect fired nothing: {fired:?}"
    );
}

/// What each rank runs: collectives and a barrier, then rank 0 says `ok`.
const MPI_JOB: &str = "from mpi4py import MPI
c = MPI.COMM_WORLD
s = 0
for i in range(200):
    s += c.allreduce(i, op=MPI.SUM)
    c.bcast(bytearray(65536) if c.rank == 0 else None, root=0)
c.Barrier()
if c.rank == 0:
    print('ok', s)
";

#[test]
fn healthy_open_mpi_jobs_at_full_verbosity_fire_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.py");
    std::fs::write(&job, MPI_JOB).expect("write the job");
    let job = job.to_str().expect("a UTF-8 temp path").to_string();
    let mut logs = Vec::new();
    for (name, args) in [
        (
            "ompi-ob1-tcp",
            "--mca pml ob1 --mca btl tcp,self --mca btl_base_verbose 100 --mca pml_base_verbose 100",
        ),
        (
            "ompi-ob1-vader",
            "--mca pml ob1 --mca btl vader,self --mca btl_base_verbose 100",
        ),
        (
            "ompi-ucx",
            "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca pml_ucx_verbose 100 \
             --mca pml_base_verbose 100 -x UCX_LOG_LEVEL=info -x UCX_TLS=tcp,self,sm",
        ),
        (
            "ompi-ofi",
            "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_exclude shm,sockets,tcp,udp,rstream \
             --mca mtl_base_verbose 100 --mca mtl_ofi_verbose 100 -x FI_LOG_LEVEL=warn",
        ),
    ] {
        let log = dir.path().join(format!("{name}.log"));
        let mut argv = vec!["--allow-run-as-root", "--oversubscribe", "-np", "2"];
        argv.extend(args.split_whitespace());
        argv.extend(["/usr/bin/python3", job.as_str()]);
        let status = command("mpirun", &argv, &[], &log)
            .status()
            .unwrap_or_else(|e| panic!("mpirun does not run ({e}): install openmpi-bin"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            status.success() && text.lines().any(|l| l.starts_with("ok ")),
            "{name}: the job failed ({status}):\n{text}"
        );
        logs.push(log);
    }
    assert!(
        count(&logs, "mca:") >= 40,
        "Open MPI printed too little at verbosity 100: {} component lines",
        count(&logs, "mca:")
    );
    nothing_fires(&logs, "healthy MPI jobs");
}
