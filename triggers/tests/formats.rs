//! The built-in packs against lines generated from the format strings of the programs
//! that print them (`triggers/formats/*.tsv`, see `tripcap_triggers::formats`).
//!
//! Every template is instantiated several times with varied, realistic values (addresses,
//! ranks, QP numbers, errno values, statuses, durations), under its logging framework's
//! header in the forms its releases print, behind the prefixes launchers add (`[rank3]:`,
//! mpirun, Ray, pdsh, `srun -l`, torchrun, timestamps, ANSI colours). Then:
//! - each `fail` instance fires exactly one built-in trigger, of the row's class, and a
//!   pattern of that trigger that cites the row matches it (the `source` is honest);
//! - as many `ok` instances (success, progress, configuration, recoverable states from
//!   the same sources) fire nothing;
//! - a `fail` instance that says how long something was stuck back-dates its window by
//!   that long (`evidence`).
//!
//! The generator is seeded, so a failure names a line that reproduces.

use std::collections::BTreeMap;
use std::time::Duration;

use tripcap_triggers::formats::{self, Format};
mod common;

use common::candidate_lines;
use tripcap_triggers::{all_packs, evidence, LineMatch, TimeContext, TriggerSet};

/// Instances per `fail` row.
const PER_FAIL_ROW: usize = 8;

/// The generator's seed: `base`, or with `FORMATS_SEED=N` another one (to draw other
/// instances while working on the packs; a failure prints its lines either way).
fn seed(base: u64) -> u64 {
    let extra = std::env::var("FORMATS_SEED").unwrap_or_default();
    base ^ extra
        .parse::<u64>()
        .unwrap_or(0)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// splitmix64: small, seeded, good enough to vary values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const HOSTS: &[&str] = &[
    "gpu-node-017",
    "a100-st-p4d24xlarge-22",
    "h100-28",
    "node0042.cluster.local",
    "compute001",
    "kp-ddp-worker-0",
    "dgx-a100-b7",
];
const IPV4: &[&str] = &[
    "10.0.3.7",
    "172.16.12.34",
    "192.168.100.2",
    "10.216.210.236",
    "100.96.0.41",
];
const IPV6: &[&str] = &[
    "fe80::1e34:da5e:1234:5678",
    "fd00:1148:9000:5000:4:200:3:ff22",
    "::ffff:10.0.0.5",
];
const DEVS: &[&str] = &[
    "mlx5_0",
    "mlx5_1",
    "mlx5_7",
    "mlx5_11",
    "mlx5_bond_0",
    "mlx5_ib0",
];
const NETDEVS: &[&str] = &["ens1f0np0", "ib0", "eth2", "enp65s0f1np1", "bond0"];
const STRERROR: &[&str] = &[
    "Connection reset by peer",
    "Connection timed out",
    "No route to host",
    "Broken pipe",
    "Connection refused",
    "Input/output error",
    "Resource temporarily unavailable",
    "Network is unreachable",
];
const WC_STATUS_STR: &[&str] = &[
    "local length error",
    "local QP operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "fatal error",
    "response timeout error",
    "general error",
];
const OPTYPES: &[&str] = &[
    "ALLREDUCE",
    "ALLGATHER",
    "REDUCE_SCATTER",
    "BROADCAST",
    "_ALLGATHER_BASE",
    "SEND",
    "RECV",
    "BARRIER",
    "COALESCED",
];
const NCCL_RESULTS: &[&str] = &[
    "unhandled system error",
    "remote process exited or there was a network error",
    "internal error",
    "unhandled cuda error",
    "invalid usage",
];
const WORDS: &[&str] = &[
    "unknown",
    "ib0",
    "internal error",
    "op1",
    "default_pg",
    "abc",
    "mlx5_0",
];

/// A value for placeholder `name`, and for durations its length.
fn value(name: &str, rng: &mut Rng) -> Option<(String, Option<Duration>)> {
    let hex = |rng: &mut Rng, digits: u32| format!("{:x}", rng.below(16u64.pow(digits)));
    let ip = |rng: &mut Rng| {
        if rng.below(4) == 0 {
            rng.pick(IPV6).to_string()
        } else {
            rng.pick(IPV4).to_string()
        }
    };
    let v = match name {
        "int" => rng
            .pick(&["-1", "0", "1", "2", "5", "12", "110", "4096", "-110"])
            .to_string(),
        "uint" | "size" => rng.range(0, 1 << 20).to_string(),
        "hex" => format!("0x{}", hex(rng, 4)),
        "hexdigits" => hex(rng, 4),
        "ptr" => format!("0x7f{}", hex(rng, 10)),
        "float" => format!("{}.{:02}", rng.range(0, 4096), rng.below(100)),
        "ip" => ip(rng),
        "port" => rng.range(1024, 65535).to_string(),
        "sockaddr" => {
            let a = ip(rng);
            let p = rng.range(1024, 65535);
            if a.contains(':') {
                format!("[{a}]:{p}")
            } else {
                format!("{a}:{p}")
            }
        }
        "nccl_sockaddr" => format!("{}<{}>", ip(rng), rng.range(1024, 65535)),
        "host" => rng.pick(HOSTS).to_string(),
        "dev" => rng.pick(DEVS).to_string(),
        "ibport" => rng.range(1, 2).to_string(),
        "netdev" => rng.pick(NETDEVS).to_string(),
        "rank" | "nranks" => rng.range(0, 1023).to_string(),
        "cudadev" => rng.range(0, 7).to_string(),
        "qpn" => rng.range(1, (1 << 24) - 1).to_string(),
        "errno" => rng.range(1, 133).to_string(),
        "strerror" => rng.pick(STRERROR).to_string(),
        "wc_status" => rng.range(1, 21).to_string(),
        "wc_status_str" => rng.pick(WC_STATUS_STR).to_string(),
        "vendor_err" => rng.pick(&["81", "129", "244", "51", "68", "0"]).to_string(),
        "opcode" => rng.range(0, 255).to_string(),
        "seq" => rng.range(1, 999_999).to_string(),
        "optype" => rng.pick(OPTYPES).to_string(),
        "ms" => {
            let ms = rng.range(1_000, 3_600_000);
            return Some((ms.to_string(), Some(Duration::from_millis(ms))));
        }
        "sec" => {
            let s = rng.range(1, 3_600);
            return Some((s.to_string(), Some(Duration::from_secs(s))));
        }
        "nccl_result" => rng.pick(NCCL_RESULTS).to_string(),
        "nccl_result_int" => rng.range(1, 7).to_string(),
        "func" => rng
            .pick(&[
                "ncclProxyConnect",
                "ibv_modify_qp",
                "socketProgress",
                "ncclIbConnect",
            ])
            .to_string(),
        "path" => rng
            .pick(&[
                "/tmp/nccl_trace_rank_3",
                "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp",
                "/dev/shm/x",
            ])
            .to_string(),
        "file_line" => rng
            .pick(&["net_ib.cc:1234", "NCCLUtils.hpp:268", "socket.cc:538"])
            .to_string(),
        "key" => rng
            .pick(&["0", "rank_3", "/default_pg/0//cuda//0", "NCCLABORTEDCOMM:0"])
            .to_string(),
        "pg" => rng.pick(&["0", "1", "default_pg", "5"]).to_string(),
        "str" => rng.pick(WORDS).to_string(),
        // brpc's `Socket::description()`: `brpc::` from 1.13 (`butil::class_name`),
        // the pointer printed `0x0x…` in 1.10-1.12 (`(0x%p)`).
        "brpc_socket" => {
            let ip = ip(rng);
            format!(
                "{}Socket{{id={} fd={} addr={}:{}:{}}} ({}7f{})",
                rng.pick(&["", "brpc::"]),
                rng.range(1, 1 << 32),
                rng.range(3, 65535),
                if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip
                },
                rng.range(1024, 65535),
                rng.range(1024, 65535),
                rng.pick(&["0x", "0x0x"]),
                hex(rng, 10)
            )
        }
        // ProcessGroupUCC's `ucc_phase_map` (UCCUtils.hpp) but FINALIZE, which has rows
        // of its own (teardown).
        "ucc_phase" => rng
            .pick(&[
                "UNKNOWN",
                "INIT",
                "HEALTH_CHECK",
                "READY",
                "COLL_POST",
                "COLL_PROGRESS",
                "COMM_CHECK",
            ])
            .to_string(),
        _ => return None,
    };
    Some((v, None))
}

/// The level UCX logs a row at, from its id's suffix (ERROR unless it says otherwise).
fn ucx_level(id: &str) -> &'static str {
    let suffixes = [
        ("-diag", "DIAG"),
        ("-warning", "WARN"),
        ("-warn", "WARN"),
        ("-info", "INFO"),
        ("-debug", "DEBUG"),
    ];
    suffixes
        .iter()
        .find(|(s, _)| id.ends_with(s) || id.contains(&format!("{s}-")))
        .map_or("ERROR", |(_, l)| l)
}

/// The header `logger` puts before the text, in one of the forms its releases print.
fn header(f: &Format, rng: &mut Rng) -> String {
    let host = rng.pick(HOSTS);
    let (pid, tid) = (rng.range(100, 999_999), rng.range(100, 999_999));
    let base = f.file.rsplit('/').next().unwrap_or(f.file);
    let line = rng.range(10, 3000);
    let dev = rng.range(0, 7);
    let glog = |level: char, rng: &mut Rng| match rng.below(3) {
        0 => format!("[{level} {base}:{line}] "),
        1 => format!(
            "[{level}{:02}{:02} {:02}:{:02}:{:02}.{:09} {base}:{line}] ",
            rng.range(1, 12),
            rng.range(1, 28),
            rng.range(0, 23),
            rng.range(0, 59),
            rng.range(0, 59),
            rng.below(1_000_000_000)
        ),
        _ => format!(
            "{level}{:02}{:02} {:02}:{:02}:{:02}.{:06} {pid} {base}:{line}] ",
            rng.range(1, 12),
            rng.range(1, 28),
            rng.range(0, 23),
            rng.range(0, 59),
            rng.range(0, 59),
            rng.below(1_000_000)
        ),
    };
    match f.logger {
        "nccl_warn" | "nccl_info" => {
            let level = if f.logger == "nccl_warn" {
                "WARN"
            } else {
                "INFO"
            };
            if rng.below(2) == 0 {
                format!("{host}:{pid}:{tid} [{dev}] NCCL {level} ")
            } else {
                format!("{host}:{pid}:{tid} [{dev}] {base}:{line} NCCL {level} ")
            }
        }
        "glog_E" => glog('E', rng),
        "glog_W" => glog('W', rng),
        "glog_I" => glog('I', rng),
        "glog_F" => glog('F', rng),
        "exception" => rng
            .pick(&[
                "RuntimeError: ",
                "torch.distributed.DistBackendError: ",
                "  what():  ",
                "",
            ])
            .to_string(),
        // The level is in the row id as for `spdk` (`-diag`, `-warning`, `-info`, `-debug`;
        // else ERROR): UCX prints it in the header.
        "ucx" => {
            if rng.below(2) == 0 {
                format!(
                    "[{}.{:06}] [{host}:{pid}:0] {:>16}:{line:<4} UCX  {:<5} ",
                    rng.range(1_500_000_000, 1_800_000_000),
                    rng.below(1_000_000),
                    base,
                    ucx_level(f.id)
                )
            } else {
                format!("[{host}:{pid}:0:{tid}] {base}:{line}  ")
            }
        }
        "fi" => format!(
            "libfabric:{pid}:{}::verbs:core:{}():{line}<warn> ",
            rng.range(1_600_000_000, 1_800_000_000),
            rng.pick(&["vrb_poll_cq", "vrb_eq_read", "rxm_handle_error"])
        ),
        // `spdk_log`: `[date] file:%4d:func: *LEVEL*: `; the level is not in the logger
        // label but in the row id (`…/warn/…`, `/notice/`, `/info/`, `/debug/`; else ERROR).
        "spdk" => format!(
            "[2024-{:02}-{:02} {:02}:{:02}:{:02}.{:06}] {base}:{line:4}:{}: *{}*: ",
            rng.range(1, 12),
            rng.range(1, 28),
            rng.range(0, 23),
            rng.range(0, 59),
            rng.range(0, 59),
            rng.below(1_000_000),
            rng.pick(&[
                "nvme_rdma_process_recv_completion",
                "nvme_rdma_cq_process_completions"
            ]),
            spdk_level(f.id)
        ),
        "kernel" => {
            let stamp = format!("[{:>5}.{:06}] ", rng.range(1, 99_999), rng.below(1_000_000));
            // The NVMe host drivers log through `dev_*(ctrl->device, …)`: `nvme nvme0: `
            // comes before the text; `pr_*` lines carry their module prefix in the template.
            let module_prefix = f.template.split_once(": ").is_some_and(|(m, _)| {
                !m.is_empty() && m.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            });
            if f.project == "linux" && f.file.starts_with("drivers/nvme/host/") && !module_prefix {
                format!("{stamp}nvme nvme{}: ", rng.range(0, 12))
            } else {
                stamp
            }
        }
        // A status or event string of libibverbs (or the kernel's) printed by an
        // application in its own words (`verbs_status.tsv`): what comes before it varies.
        // `_ctx`: the row's string is a common phrase (`fatal error`, `port error`), claimed
        // only where the words before it name the completion or the async event.
        "verbs_wc" | "verbs_wc_ctx" => {
            let ctx = [
                "work completion error: ",
                "Completion with error, status: ",
                "ibv_poll_cq: wc.status = ",
                "RDMA WC error (wr_id 0x7f3a2c001e40): ",
                "cqe error: ",
                "[E rdma_conn.cc:412] Bad completion: wc status ",
                "wc_status=",
            ];
            let any = [
                "",
                "ERROR: ",
                "RDMA send failed: ",
                "[E rdma.cc:88] Failed to process WR: ",
                "rdma write error ",
                "qp 0x2c10: ",
            ];
            let i = rng.below((ctx.len() + any.len()) as u64) as usize;
            if f.logger == "verbs_wc_ctx" || i < ctx.len() {
                ctx[i % ctx.len()].to_string()
            } else {
                any[i - ctx.len()].to_string()
            }
        }
        "verbs_event" | "verbs_event_ctx" => {
            let ctx = [
                "Got async event: ",
                "ibv_get_async_event: event type ",
                "RDMA async event on mlx5_0: ",
                "[W rdma_dev.cc:201] Asynchronous event ",
                "async_event=",
                "Received event ",
            ];
            let any = ["", "ERROR: ", "mlx5_1 port 1: ", "[E rdma.cc:77] "];
            let i = rng.below((ctx.len() + any.len()) as u64) as usize;
            if f.logger == "verbs_event_ctx" || i < ctx.len() {
                ctx[i % ctx.len()].to_string()
            } else {
                any[i - ctx.len()].to_string()
            }
        }
        _ => String::new(),
    }
}

/// The level `spdk_log` prints for row `id`: from its `warn`/`notice`/`info`/`debug`
/// path segment, else ERROR.
fn spdk_level(id: &str) -> &'static str {
    let seg = |s: &str| id.split('/').any(|p| p == s);
    if seg("warn") {
        "WARNING"
    } else if seg("notice") {
        "NOTICE"
    } else if seg("info") {
        "INFO"
    } else if seg("debug") {
        "DEBUG"
    } else {
        "ERROR"
    }
}

/// What launchers and collectors put in front of a line, and after it: a coloured
/// line's reset, a CRLF log's carriage return.
fn wrapper(rng: &mut Rng) -> (String, &'static str) {
    let suffix = match rng.below(8) {
        0 => "\x1b[0m",
        1 => "\r",
        2 => " ",
        _ => "",
    };
    (prefix(rng), suffix)
}

/// A time of day, `HH:MM:SS`.
fn hms(rng: &mut Rng) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    )
}

/// What launchers and collectors put in front of a line.
fn prefix(rng: &mut Rng) -> String {
    let rank = rng.range(0, 255);
    match rng.below(13) {
        0 => format!("[rank{rank}]:"),
        1 => format!("[1,{rank}]<stdout>:"),
        2 => format!("(RayWorkerWrapper pid={}) ", rng.range(100, 99_999)),
        3 => format!("{}: ", rng.pick(HOSTS)),
        4 => format!("{rank}: "),
        5 => format!("[default{}]:", rng.range(0, 7)),
        6 => format!(
            "2025-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z ",
            rng.range(1, 12),
            rng.range(1, 28),
            rng.range(0, 23),
            rng.range(0, 59),
            rng.range(0, 59),
            rng.below(1000)
        ),
        7 => "\x1b[36m".to_string(),
        // containerd's CRI log files (Kubernetes nodes).
        8 => format!(
            "2025-11-{:02}T{}.{:09}Z stderr F ",
            rng.range(1, 28),
            hms(rng),
            rng.below(1_000_000_000)
        ),
        // journald's short form.
        9 => format!(
            "Nov {:02} {} {} python[{}]: ",
            rng.range(1, 28),
            hms(rng),
            rng.pick(HOSTS),
            rng.range(100, 99_999)
        ),
        // `kubectl logs --prefix`.
        10 => format!("[pod/train-worker-{rank}/pytorch] "),
        // Python's logging with a format that leads with time and level.
        11 => format!(
            "2025-11-{:02} {},{:03} - INFO - ",
            rng.range(1, 28),
            hms(rng),
            rng.below(1000)
        ),
        _ => String::new(),
    }
}

/// One line from `f`, and the last duration placeholder's length.
fn instantiate(f: &Format, rng: &mut Rng) -> Result<(String, Option<Duration>), String> {
    let template = f.template.replace("\\t", "\t");
    let mut text = String::new();
    let mut last_duration = None;
    let mut rest = template.as_str();
    while let Some(open) = rest.find('{') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            text.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = &after[..close];
        match value(name, rng) {
            Some((v, d)) => {
                text.push_str(&v);
                last_duration = d.or(last_duration);
            }
            // Not a placeholder: a literal brace in the message.
            None if !name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                || name.is_empty() =>
            {
                text.push('{');
                rest = after;
                continue;
            }
            None => return Err(format!("{}: unknown placeholder {{{name}}}", f.origin)),
        }
        rest = &after[close + 1..];
    }
    text.push_str(rest);
    let (prefix, suffix) = wrapper(rng);
    Ok((
        format!("{prefix}{}{text}{suffix}", header(f, rng)),
        last_duration,
    ))
}

/// The rows under test: all, or with `FORMATS_ONLY=prefix,prefix…` (for work on one
/// family) those whose id starts with one of the prefixes.
fn rows() -> Vec<&'static Format> {
    let all = formats::all().unwrap_or_else(|e| panic!("{e}"));
    let only = std::env::var("FORMATS_ONLY").unwrap_or_default();
    let prefixes: Vec<&str> = only.split(',').filter(|p| !p.is_empty()).collect();
    all.iter()
        .filter(|f| prefixes.is_empty() || prefixes.iter().any(|p| f.id.starts_with(p)))
        .collect()
}

/// Failure rows with one value that makes them an `ok` row's text, which wins: the
/// instances holding that text are not failures. (rxm's `fi_eq_readerr` with
/// ECONNREFUSED is the routine rejected connection of simultaneous connects.)
const OK_WINS: &[(&str, &str)] = &[
    (
        "libfabric/rxm/fi-eq-readerr",
        "fi_eq_readerr: err: Connection refused (",
    ),
    // pscom's pre-connection writing to a peer that has gone: its debug-level warning.
    ("pscom/precon/write-failed", ") : Broken pipe>"),
];

/// The names of the triggers that fired, for messages.
fn fired<'a>(set: &'a TriggerSet, out: &[LineMatch]) -> Vec<&'a str> {
    out.iter()
        .map(|m| set.defs()[m.trigger].name.as_str())
        .collect()
}

/// The first 60 failures, one per line, for an assertion message.
fn first_lines(failures: &[String]) -> String {
    failures
        .iter()
        .take(60)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_failure_wording_fires_its_class_through_a_pattern_that_cites_it() {
    let set = TriggerSet::new(all_packs()).expect("packs compile");
    // Every pattern of every trigger on its own, compiled once, in set order.
    let compiled: Vec<Vec<regex::bytes::Regex>> = set
        .defs()
        .iter()
        .map(|d| {
            d.patterns
                .iter()
                .map(|p| regex::bytes::Regex::new(p).expect("pattern compiles"))
                .collect()
        })
        .collect();
    let mut rng = Rng(seed(0x7219_c0de));
    let mut out: Vec<LineMatch> = Vec::new();
    let mut failures = Vec::new();
    let mut fired_by_class: BTreeMap<&str, usize> = BTreeMap::new();
    let mut instances = 0;
    for f in rows().iter().filter(|f| f.fails) {
        for _ in 0..PER_FAIL_ROW {
            let (line, duration) = match instantiate(f, &mut rng) {
                Ok(x) => x,
                Err(e) => {
                    failures.push(e);
                    break;
                }
            };
            if OK_WINS
                .iter()
                .any(|(id, text)| *id == f.id && line.contains(text))
            {
                continue;
            }
            instances += 1;
            set.match_line(line.as_bytes(), &mut out);
            let fired = fired(&set, &out);
            if out.len() != 1 {
                failures.push(format!(
                    "{} ({}) fired {fired:?}, want one trigger: {line:?}",
                    f.id, f.origin
                ));
                continue;
            }
            let def = &set.defs()[out[0].trigger];
            if def.class != f.class {
                failures.push(format!(
                    "{} ({}) fired {} of class {}, want {}: {line:?}",
                    f.id, f.origin, def.name, def.class, f.class
                ));
                continue;
            }
            // Pattern i goes with citation list i (a pattern that cites nothing has an empty
            // list, so the two stay aligned).
            let cites = compiled[out[0].trigger]
                .iter()
                .zip(tripcap_triggers::packs::citations(&def.name))
                .any(|(re, ids)| {
                    ids.iter().any(|c| formats::cites(c, f.id)) && re.is_match(line.as_bytes())
                });
            if !cites {
                failures.push(format!(
                    "{} ({}) fired {}, but none of its patterns that cite `{}` matches: {line:?}",
                    f.id, f.origin, def.name, f.id
                ));
                continue;
            }
            *fired_by_class.entry(f.class).or_default() += 1;
            if let Some(d) = duration {
                let ev = evidence(line.as_bytes(), TimeContext::utc(0));
                if ev.stuck_for != Some(d) {
                    failures.push(format!(
                        "{} ({}) says {d:?} but evidence gives {:?}: {line:?}",
                        f.id, f.origin, ev.stuck_for
                    ));
                }
            }
        }
    }
    assert!(
        instances > 500 || std::env::var_os("FORMATS_ONLY").is_some(),
        "only {instances} failure instances"
    );
    assert!(
        failures.is_empty(),
        "{} of {instances} failure instances wrong (fired by class: {fired_by_class:?}):\n{}",
        failures.len(),
        first_lines(&failures)
    );
}

#[test]
fn as_many_look_alikes_fire_nothing() {
    let set = TriggerSet::new(all_packs()).expect("packs compile");
    let fails = rows().iter().filter(|f| f.fails).count();
    let oks: Vec<&Format> = rows().into_iter().filter(|f| !f.fails).collect();
    assert!(!oks.is_empty(), "no ok rows");
    let per_row = (fails * PER_FAIL_ROW).div_ceil(oks.len());
    let mut rng = Rng(seed(0x0c0f_fee5));
    let mut out = Vec::new();
    let mut failures = Vec::new();
    let mut instances = 0;
    for f in &oks {
        let f = *f;
        for _ in 0..per_row {
            let (line, _) = instantiate(f, &mut rng).unwrap_or_else(|e| panic!("{e}"));
            instances += 1;
            if set.match_line(line.as_bytes(), &mut out) {
                let fired = fired(&set, &out);
                failures.push(format!("{} ({}) fired {fired:?}: {line:?}", f.id, f.origin));
            }
        }
    }
    assert!(instances >= fails * PER_FAIL_ROW, "{instances}");
    assert!(
        failures.is_empty(),
        "{} of {instances} look-alike instances fired:\n{}",
        failures.len(),
        first_lines(&failures)
    );
}

#[test]
fn every_citation_names_a_failure_row_and_every_failure_row_is_cited() {
    let mut cited = std::collections::BTreeSet::new();
    for def in all_packs() {
        let citations = tripcap_triggers::packs::citations(&def.name);
        assert_eq!(citations.len(), def.patterns.len(), "{}", def.name);
        for ids in citations {
            assert!(
                !ids.is_empty(),
                "{}: a pattern cites no format row",
                def.name
            );
            for cite in ids {
                let rows: Vec<&Format> = formats::cited(cite).collect();
                assert!(
                    !rows.is_empty(),
                    "{}: cites `{cite}`, which names no row",
                    def.name
                );
                for f in rows {
                    assert!(f.fails, "{}: `{cite}` cites {}, an ok row", def.name, f.id);
                    assert_eq!(
                        f.class, def.class,
                        "{}: `{cite}` cites {} of another class",
                        def.name, f.id
                    );
                    cited.insert(f.id);
                }
            }
        }
    }
    let uncited: Vec<&str> = rows()
        .iter()
        .filter(|f| f.fails && !cited.contains(f.id))
        .map(|f| f.id)
        .collect();
    assert!(
        uncited.is_empty(),
        "failure rows no pattern cites: {uncited:?}"
    );
}

/// `tripcap triggers test` hands `match_line` only the lines that the scan of a whole
/// chunk finds (`TriggerSet::lines_that_may_fire`): every generated line that fires
/// must be one of them, whatever the line ends and wherever the chunks are cut. The
/// agent asks the same of each line alone (`TriggerSet::may_fire`).
#[test]
fn the_chunk_scan_finds_every_generated_line_that_fires() {
    // Both ways a set matches: lazily (the literal gate, each pattern alone) and whole.
    let lazy = TriggerSet::new(all_packs())
        .expect("packs compile")
        .with_lazy_lines(usize::MAX);
    let whole = TriggerSet::new_whole(all_packs()).expect("packs compile");
    for set in [&lazy, &whole] {
        chunk_scan_finds_every_generated_line_that_fires(set);
    }
    assert!(!lazy.is_whole() && whole.is_whole());
}

fn chunk_scan_finds_every_generated_line_that_fires(set: &TriggerSet) {
    let mut rng = Rng(seed(0x5ca1_ab1e));
    let mut lines = Vec::new();
    for f in rows() {
        for _ in 0..PER_FAIL_ROW {
            let (line, _) = instantiate(f, &mut rng).unwrap_or_else(|e| panic!("{e}"));
            lines.push(line);
        }
    }
    let mut out = Vec::new();
    let firing: Vec<usize> = (0..lines.len())
        .filter(|&i| set.match_line(lines[i].as_bytes(), &mut out))
        .collect();
    assert!(firing.len() > 500, "only {} lines fire", firing.len());
    // One line at a time, as the agent hands them over.
    let mut cache = set.scan_cache();
    let not_may_fire: Vec<&str> = firing
        .iter()
        .map(|&i| lines[i].as_str())
        .filter(|line| !set.may_fire(line.as_bytes(), &mut cache))
        .collect();
    assert!(
        not_may_fire.is_empty(),
        "{} firing lines said not to fire:\n{}",
        not_may_fire.len(),
        not_may_fire.join("\n")
    );
    for (ending, chunk) in [("\n", 1 << 20), ("\r\n", 64 << 10), ("\n", 1000)] {
        let log = lines.join(ending);
        let found = candidate_lines(set, log.as_bytes(), chunk);
        let missed: Vec<&str> = firing
            .iter()
            .filter(|i| found.binary_search(i).is_err())
            .map(|&i| lines[i].as_str())
            .collect();
        assert!(
            missed.is_empty(),
            "{ending:?} chunks of {chunk}: {} of {} firing lines not found:\n{}",
            missed.len(),
            firing.len(),
            missed.join("\n")
        );
    }
}

/// `match_line` learns which patterns match a line from `which::WhichPatterns`, a
/// walk of the automaton anchored at each position of the line. It must find
/// exactly the patterns (and vetoes) that one unanchored pass of regex's own
/// multi-pattern search finds, on every generated line, failures and look-alikes.
#[test]
fn the_patterns_found_on_a_line_are_those_regex_finds() {
    use regex_automata::{meta, Input, MatchKind, PatternSet};
    use tripcap_triggers::which::WhichPatterns;

    let patterns: Vec<regex_syntax::hir::Hir> = all_packs()
        .iter()
        .flat_map(|def| def.patterns.iter().chain(&def.unless))
        .map(|p| {
            regex_syntax::ParserBuilder::new()
                .utf8(false)
                .build()
                .parse(p)
                .unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .collect();
    let which = WhichPatterns::new(&patterns, 64 << 20, 256 << 20).expect("packs compile");
    let reference = meta::Regex::builder()
        .configure(
            meta::Config::new()
                .match_kind(MatchKind::All)
                .utf8_empty(false)
                .nfa_size_limit(Some(64 << 20))
                .hybrid_cache_capacity(256 << 20),
        )
        .build_many_from_hir(&patterns)
        .expect("packs compile");
    let mut rng = Rng(seed(0x0a11_c0de));
    let (mut lines, mut matching) = (0, 0);
    let mut want = PatternSet::new(reference.pattern_len());
    for f in rows() {
        let (line, _) = instantiate(f, &mut rng).unwrap_or_else(|e| panic!("{e}"));
        want.clear();
        reference.which_overlapping_matches(&Input::new(&line), &mut want);
        let found = which.with_matches(line.as_bytes(), |hits| hits.clone());
        assert_eq!(
            found.iter().collect::<Vec<_>>(),
            want.iter().collect::<Vec<_>>(),
            "{line}"
        );
        lines += 1;
        matching += usize::from(!want.is_empty());
    }
    assert!(
        matching > lines / 2,
        "only {matching} of {lines} lines match"
    );
}

/// `TriggerSet` compiles each pattern alone the first time a line holds one of its
/// required literals (`literals.rs`), and the whole set only after many such lines.
/// Both must answer alike on every generated line, failures and look-alikes, also
/// with their letters' case changed (the literal gate folds case; patterns with
/// `(?i)` must still be let through) and cut short (a literal may be lost).
#[test]
fn the_lazy_set_answers_as_the_whole_set() {
    let mut rng = Rng(seed(0x1a2e_1a7e));
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for f in rows() {
        for _ in 0..2 {
            let (line, _) = instantiate(f, &mut rng).unwrap_or_else(|e| panic!("{e}"));
            let cut = line.len() * (1 + rng.below(9) as usize) / 10;
            lines.push(line.as_bytes()[..cut].to_vec());
            lines.push(line.to_ascii_uppercase().into_bytes());
            lines.push(line.to_ascii_lowercase().into_bytes());
            lines.push(line.into_bytes());
        }
    }
    let firing = {
        let whole = TriggerSet::new_whole(all_packs()).expect("packs compile");
        let mut out = Vec::new();
        lines
            .iter()
            .filter(|l| whole.match_line(l, &mut out))
            .count()
    };
    assert!(
        firing > lines.len() / 4,
        "only {firing} of {} fire",
        lines.len()
    );
    common::assert_lazy_and_whole_agree(&lines);
}
