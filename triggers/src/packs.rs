//! Built-in trigger packs: `nccl`, `pytorch`, `perftest` and `verbs`.
//!
//! Each pack is a table of `Builtin` rows turned into [`TriggerDef`]s by
//! [`pack`]. The rows were written against the corpus of real log lines
//! (`tests/data/corpus/*.tsv`, checked by `tests/corpus.rs`), and precision is the
//! contract: a built-in trigger fires only on message stems that appear in
//! failures, never on generic words (`timeout`, `fail`, `WARN`) that healthy
//! logs also print.
//!
//! How the packs are shaped:
//! - **One trigger per failure kind, many stems per trigger.** One failure is
//!   logged several times (the watchdog line, `Some NCCL operations have
//!   failed`, `To avoid data inconsistency…`): putting those stems in one
//!   trigger lets its cooldown turn them into one incident. The first pattern of
//!   a trigger is the most informative one (it has the most capture groups).
//! - **One line, one class.** Every trigger has one `class`, and a line that
//!   quotes another failure is kept out of the other trigger with `unless`
//!   (`NCCL communicator was aborted … Watchdog caught collective operation
//!   timeout` is the abort, not a second timeout; a retry-exceeded completion is
//!   not also a generic completion error). The corpus test checks that every
//!   positive line fires exactly one built-in trigger.
//! - **Matched anywhere, bytes, ASCII classes.** Wrappers prefix lines (mpirun
//!   `[1,12]<stdout>:`, torchrun `[rank0]:`, Ray, pdsh, timestamps, ANSI codes),
//!   so no pattern is anchored at the start. Every pattern is compiled with
//!   `(?-u)` so that `.`, `\w`, `\d` and `\s` work on bytes and a line that is
//!   not valid UTF-8 still fires.
//! - **Windows.** Retry-exceeded triggers (NET/IB `status=12`/`error 12`, UCX
//!   and verbs `transport retry counter exceeded`, perftest completion errors,
//!   which are usually status 12) keep [`RETRY_EXCEEDED_PRE`] (60 s) before the
//!   line: the error is reported after the IB retry budget is spent (about
//!   4.3 s × 7 retries with `NCCL_IB_TIMEOUT=20`), ~30 s after the last ACK.
//!   Everything else keeps the default 30 s before and after; cooldown 60 s.
//!
//! Capture groups use one vocabulary across packs, so the agent can put them in
//! a capture's metadata without knowing the trigger: `rank`, `peer`, `port`,
//! `hca`, `qp`, `status`, `vendor_err`, `syndrome`, `seq`, `op`, `timeout_ms`,
//! `ran_for_ms`, `stuck_s`, `error`, `event`, `retcode`.
//!
//! ## Ambiguous lines (`ambiguous.tsv`): none fires
//! The built-in packs deliberately fire on none of them; `tests/corpus.rs`
//! pins this. Why, by kind:
//! - `error_context` (`NCCL INFO transport/net_ib.cc:368 -> 2`, UCX `RC QP …
//!   wqe[0]: SEND` dumps, `Last error:`, stack frames, `preparing to dump debug
//!   info`): the propagation of an error whose WARN line already fired; firing
//!   on them would only repeat the incident, and `-> N` also appears on
//!   recoverable paths.
//! - `ambiguous_teardown_info` (`Connection closed by localRank`, `Abort
//!   COMPLETE`, `ProcessGroupNCCL destroyed communicator`): normal shutdown
//!   prints them too.
//! - `ambiguous_warn_nonfatal` (FastSocket `Maximum retry reached`, UCX `IB
//!   Async event … was flushed`): NCCL and UCX recover from them.
//! - `ambiguous_retry_info` (`socketPollConnect: connect returned …, retrying
//!   (1/34)`): a retry in progress; the WARN after the last retry fires.
//! - `ambiguous_perftest_warning` (`Requested SQ size might be too big`): a hint
//!   printed before `Couldn't create IB resources`, which fires.
//! - `ambiguous_process_exit` (torchrun `ChildFailedError`, `exitcode: -6`,
//!   `SIGTERM`): the launcher reporting a death whose cause was logged (and fired)
//!   by the rank; users who only see launcher logs can add a custom trigger.

use std::time::Duration;

use crate::def::{TriggerDef, DEFAULT_COOLDOWN, DEFAULT_POST, DEFAULT_PRE};

/// Window kept before retry-exceeded triggers (the error arrives ~30 s after
/// the last ACK).
pub const RETRY_EXCEEDED_PRE: Duration = Duration::from_secs(60);

/// Names of the built-in packs, in the order [`all_packs`] concatenates them.
pub const PACK_NAMES: &[&str] = &["nccl", "pytorch", "perftest", "verbs"];

/// One built-in pack, for `tripcap triggers list`.
#[derive(Debug, Clone, PartialEq)]
pub struct PackInfo {
    /// Pack name as accepted by [`pack`].
    pub name: &'static str,
    /// One sentence on what the pack watches.
    pub summary: &'static str,
    /// Its triggers, as [`pack`] returns them (each has `class`, `description`
    /// and `example`).
    pub triggers: Vec<TriggerDef>,
}

/// The triggers of built-in pack `name`, or `None` if no pack has that name
/// (see [`PACK_NAMES`]).
pub fn pack(name: &str) -> Option<Vec<TriggerDef>> {
    let table = table(name)?;
    Some(table.rows.iter().map(Builtin::to_def).collect())
}

/// Every built-in trigger, packs in [`PACK_NAMES`] order. Names are unique
/// across packs, so the result is a valid [`crate::TriggerSet`].
pub fn all_packs() -> Vec<TriggerDef> {
    PACK_NAMES
        .iter()
        .filter_map(|n| pack(n))
        .flatten()
        .collect()
}

/// Every pack with its triggers, for listing.
pub fn describe() -> Vec<PackInfo> {
    PACK_NAMES
        .iter()
        .filter_map(|n| {
            let table = table(n)?;
            Some(PackInfo {
                name: table.name,
                summary: table.summary,
                triggers: table.rows.iter().map(Builtin::to_def).collect(),
            })
        })
        .collect()
}

/// A pack as written in this file.
struct Table {
    name: &'static str,
    summary: &'static str,
    rows: &'static [Builtin],
}

/// One built-in trigger as written in this file.
struct Builtin {
    name: &'static str,
    class: &'static str,
    /// Seconds kept before the line.
    pre_s: u64,
    description: &'static str,
    /// A line of `tests/data/corpus/positives.tsv` this trigger fires on.
    example: &'static str,
    patterns: &'static [&'static str],
    unless: &'static [&'static str],
}

impl Builtin {
    fn to_def(&self) -> TriggerDef {
        let bytes = |p: &&str| format!("(?-u){p}");
        TriggerDef {
            name: self.name.to_string(),
            class: self.class.to_string(),
            patterns: self.patterns.iter().map(bytes).collect(),
            unless: self.unless.iter().map(bytes).collect(),
            pre: Duration::from_secs(self.pre_s),
            post: DEFAULT_POST,
            cooldown: DEFAULT_COOLDOWN,
            description: self.description.to_string(),
            example: self.example.to_string(),
        }
    }
}

fn table(name: &str) -> Option<&'static Table> {
    [&NCCL, &PYTORCH, &PERFTEST, &VERBS]
        .into_iter()
        .find(|t| t.name == name)
}

const PRE: u64 = DEFAULT_PRE.as_secs();
const RETRY_PRE: u64 = RETRY_EXCEEDED_PRE.as_secs();

/// NCCL/RCCL's own WARN lines (`NCCL_DEBUG=WARN` or more) and nccl-tests.
static NCCL: Table = Table {
    name: "nccl",
    summary: "NCCL/RCCL WARN lines: NET/IB completion errors and async events, verbs calls, sockets, proxy",
    rows: &[
        Builtin {
            name: "nccl-ib-retry-exceeded",
            class: "nccl_ib_error",
            pre_s: RETRY_PRE,
            description: "NET/IB completion with status 12 (IBV_WC_RETRY_EXC_ERR): the peer stopped ACKing ~30 s earlier",
            example: "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
            patterns: &[
                r"NET/IB ?: Got completion from peer (?P<peer>\S+?)<(?P<port>\d+)> with (?:status=|error )(?P<status>12)\b(?:.*?vendor err (?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?",
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-ib-completion-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB work completion with an error status other than 12 (protection, flush, remote access…)",
            example: "kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)",
            patterns: &[
                r"NET/IB ?: Got completion from peer (?P<peer>\S+?)<(?P<port>\d+)> with (?:status=|error )(?P<status>\d+)(?:.*?vendor err (?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?",
            ],
            unless: &[r"NET/IB ?: Got completion from peer \S+ with (?:status=|error )12\b"],
        },
        Builtin {
            name: "nccl-ib-fatal-event",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB async event (port error, catastrophic error, fatal QP event) or a communicator's fatal IB error",
            example: "...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
            patterns: &[
                r"NET/IB ?: (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?Got async event : (?P<event>[^\r\n]+)",
                r"NET/IB ?: (?P<hca>[\w.-]+):(?P<port>\d+) async fatal event on (?P<object>\w+)[^:]*: (?P<event>[^\r\n]+)",
                r"NCCL WARN communicator encountered a fatal error(?: \(detected in (?P<detected_in>\w+)\))?",
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-ibverbs-call-failed",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NCCL's call to a verbs function (ibv_create_qp, ibv_modify_qp, …) failed",
            example: "ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out.",
            patterns: &[r"NCCL WARN Call to (?P<verb>ibv_\w+) failed(?: with error (?P<error>[^\r\n]+))?"],
            unless: &[],
        },
        Builtin {
            name: "nccl-socket-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL's bootstrap/proxy/NET-Socket TCP connection failed or was closed by the peer",
            example: "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe",
            patterns: &[
                r"Call to (?P<op>recv|send) from (?P<peer>\S+?)<(?P<port>\d+)> failed : (?P<error>[^\r\n]+)",
                r"Connection closed by remote peer (?P<peer>[^<\s]+)(?:<(?P<port>\d+)>)?",
                r"socketStartConnect: Connect to (?P<peer>\S+?)<(?P<port>\d+)> failed : (?P<error>[^\r\n]+)",
                r"NCCL WARN socketPollConnect(?:.*?\berror (?P<error>[^,]+))?(?:.*?connect to (?P<peer>[\w.-]+):(?P<port>\d+))?",
                r"NCCL WARN Socket recv failed while polling",
                r"NCCL WARN socketFinalizeAccept: (?P<error>[^\r\n]+)",
                r"NCCL WARN Call to connect(?: timeout)? : (?P<error>[^\r\n]+)",
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-runtime-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL proxy operation, CUDA/HIP call or nccl-tests run failed",
            example: "a100-st-p4d24xlarge-22:183006:183220 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6",
            patterns: &[
                r"Failed to execute operation (?P<op>\w+) from rank (?P<rank>\d+), retcode (?P<retcode>\d+)",
                r"NCCL WARN (?P<call>(?:hip|cuda)\w+) failed : (?P<error>[^\r\n]+)",
                r"NCCL WARN Cuda failure '(?P<error>[^']+)'",
                r"Test NCCL failure (?P<location>\S+) '(?P<error>[^']*)",
                r"pid \d+: Test failure (?P<location>\S+)",
            ],
            unless: &[],
        },
    ],
};

/// PyTorch's ProcessGroupNCCL (watchdog, heartbeat monitor), c10d and Gloo.
static PYTORCH: Table = Table {
    name: "pytorch",
    summary: "PyTorch ProcessGroupNCCL watchdog timeouts, heartbeat hangs, NCCL errors raised to Python, Gloo/store timeouts",
    rows: &[
        Builtin {
            name: "pytorch-nccl-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "ProcessGroupNCCL watchdog: a collective ran past its timeout (Timeout(ms), ran for … milliseconds) and follow-up lines",
            example: "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
            patterns: &[
                r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout(?:: WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?(?:OpType=(?P<op>\w+))?[^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\)(?: ran for (?P<ran_for_ms>\d+) milliseconds)?)?",
                r"watchdog thread terminated with exception: \[Rank (?P<rank>\d+)\]",
                r"(?:Rank (?P<rank>\d+)\] )?Timeout at NCCL work: (?P<seq>\d+)",
                r"(?:Rank (?P<rank>\d+)\] )?Exception \(either an error or timeout\) detected by watchdog at work: (?P<seq>\d+)",
                r"Received a dump signal due to a collective timeout",
                r"Some NCCL operations have failed or timed out",
                r"To avoid data inconsistency, we are taking the entire process down",
                r"Exception raised from checkTimeout at",
                r"WorkNCCL\([^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\) timed out in call to wait",
            ],
            unless: &[r"NCCL communicator was aborted"],
        },
        Builtin {
            name: "pytorch-nccl-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "An NCCL error raised into PyTorch (NCCL error in:, ncclSystemError/ncclRemoteError, communicator aborted, process terminate)",
            example: "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
            patterns: &[
                r"NCCL communicator was aborted on rank (?P<rank>\d+)\.(?:.*?SeqNum=(?P<seq>\d+))?(?:.*?Timeout\(ms\)=(?P<timeout_ms>\d+))?(?:.*?ran for (?P<ran_for_ms>\d+) milliseconds)?",
                r"NCCL error in: (?P<location>[^,]+), (?P<error>[^,(]+)",
                r"NCCL error: (?P<error>[^,(]+)",
                r"\bnccl(?P<code>Remote|System|UnhandledCuda|Internal)Error: ",
                r"terminate called after throwing an instance of '(?P<exception>c10::DistBackendError|std::runtime_error)",
                r"watchdog thread terminated with exception: (?P<error>CUDA error[^\r\n]*)",
                r"Exception raised from checkForNCCLErrorsInternal at",
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-hang",
            class: "other_hang",
            pre_s: PRE,
            description: "ProcessGroupNCCL heartbeat monitor: the watchdog itself is stuck (CUDA/NCCL API hang), process killed",
            example: "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=103",
            patterns: &[
                r"(?:Rank (?P<rank>\d+)\] )?Heartbeat monitor timed out",
                r"(?:Rank (?P<rank>\d+)\] )?ProcessGroupNCCL's watchdog got stuck for (?P<stuck_s>\d+) seconds",
                r"Future for ProcessGroup abort timed out after (?P<timeout_ms>\d+) ms",
                r"\bF(?:\d{3,8} [\d:.]+(?: \d+)?)? ProcessGroupNCCL\.cpp:\d+\]",
                r"Rank (?P<rank>\d+)\] ProcessGroupNCCL'\s*$",
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-gloo-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "Gloo transfer or c10d store lookup timed out (TCP side of a hung job)",
            example: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete",
            patterns: &[
                r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>recv|send) operation to complete",
                r"store->get\('(?P<key>[^']*)'\) got error: Socket Timeout",
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-gloo-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "Gloo TCP pair closed by the peer",
            example: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:28048",
            patterns: &[r"\] Connection closed by peer \[(?P<peer>[^\]]+)\]:(?P<port>\d+)"],
            unless: &[],
        },
    ],
};

/// perftest (`ib_{send,write,read}_{bw,lat}`) failures.
static PERFTEST: Table = Table {
    name: "perftest",
    summary: "perftest (ib_write_bw, ib_read_lat, …) completion, setup and connection errors",
    rows: &[
        Builtin {
            name: "perftest-completion-error",
            class: "perftest_error",
            // Usually status 12 (retry exceeded), and the status is only on the next line.
            pre_s: RETRY_PRE,
            description: "perftest got a work completion with an error (Failed status N), so the run stopped",
            example: " Completion with error at client Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0",
            patterns: &[
                r"Completion with error at (?P<side>client|server)(?:.*?Failed status (?P<status>\d+): wr_id \d+ syndrom 0x(?P<syndrome>[0-9a-fA-F]+))?",
                r"Failed status (?P<status>\d+): wr_id \d+ syndrom 0x(?P<syndrome>[0-9a-fA-F]+)",
                r"\bscnt=(?P<scnt>\d+), ccnt=(?P<ccnt>\d+)",
                r"Failed to complete (?P<phase>run_iter_\w+) function successfully",
            ],
            unless: &[],
        },
        Builtin {
            name: "perftest-setup-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest could not open the device or create/modify its QP",
            example: "Failed to modify QP to RTS",
            patterns: &[
                r"Failed to modify QP (?:\d+ )?to (?P<state>\w+)",
                r"(?:Unable|Failed) to create QP",
                r"Couldn't create IB resources",
                r"Couldn't set the link layer",
                r"Couldn't get context for the device",
                r"Unable to Connect the HCA's through the link",
            ],
            unless: &[],
        },
        Builtin {
            name: "perftest-connect-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest client and server could not connect or exchange keys (TCP or RDMA CM)",
            example: "Event: RDMA_CM_EVENT_REJECTED; error: -111.",
            patterns: &[
                r"Event: (?P<event>RDMA_CM_EVENT_\w+); error: (?P<error>-?\d+)",
                r"Couldn't connect to (?P<peer>[\w.:-]+?):(?P<port>\d+)",
                r"RDMA CM event error",
                r"Failed to (?:handle|connect) RDMA CM event",
                r"\b(?:pp|ethernet)_read_keys: ",
                r"Couldn't read remote address",
                r"Unable to read to socket/rd",
                r"Failed to exchange data between server and clients?",
                r"Failed to close connection between server and client",
                r"Unable to (?:open file descriptor for socket connection|init the socket connection)",
            ],
            unless: &[],
        },
    ],
};

/// Verbs users other than NCCL: UCX, Open MPI, SPDK and RDMA applications.
static VERBS: Table = Table {
    name: "verbs",
    summary: "RDMA verbs completion errors from UCX, Open MPI and other verbs applications",
    rows: &[
        Builtin {
            name: "verbs-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "Transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR, status 12, syndrome 0x15): the peer stopped ACKing ~30 s earlier",
            example: "[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)",
            patterns: &[
                r"Transport retry count exceeded on (?P<hca>[\w.-]+):(?P<port>\d+)",
                r"Error on QP (?P<qp>0x[0-9a-fA-F]+) wqe\[\d+\]: Transport retry count exceeded",
                r"(?i)completion with error on qp (?P<qp>0x[0-9a-f]+): transport retry counter exceeded",
                r"status=12\(transport retry counter exceeded\)(?:.*?qp_num=(?P<qp>0x[0-9a-fA-F]+))?",
                r"(?i)transport retry count(?:er)? exceeded",
                r"wc->status == IBV_WC_SUCCESS.*? error: (?P<status>12)\b",
            ],
            unless: &[],
        },
        Builtin {
            name: "verbs-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs work completion failed (protection, remote access, QP operation…) or a UCX endpoint timed out",
            example: "[a670n1:162239:0:162239] ib_mlx5_log.c:177  Local protection on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/2)",
            patterns: &[
                r"\b(?P<error>[A-Z][A-Za-z ]*?) on (?P<hca>[\w.-]+):(?P<port>\d+)/\w+ \(synd 0x(?P<syndrome>[0-9a-fA-F]+)",
                r"Error on QP (?P<qp>0x[0-9a-fA-F]+) wqe\[\d+\]: (?P<error>[^(]+?) \(synd 0x(?P<syndrome>[0-9a-fA-F]+)",
                r"(?i)send completion with error(?: on qp (?P<qp>0x[0-9a-f]+))?: (?P<error>[a-z]+(?: [a-z]+)*)",
                r"WC error, .*?status: \((?P<status>\d+)\): (?P<error>[a-z]+(?: [a-z]+)*)",
                r"ibv_poll_cq failed, status: (?P<status>\d+)",
                r"poll till completion error: (?P<status>\d+)(?: (?P<error>[a-z]+(?: [a-z]+)*))?",
                r"Check failed: wc->status == IBV_WC_SUCCESS(?:.*? error: (?P<status>\d+))?",
                r"got bad completion with status: (?P<status>0x[0-9a-fA-F]+|\d+)",
                r"error '(?P<error>[^']+)' on (?P<transport>\w+)/(?P<hca>[\w.-]+):(?P<port>\d+) will not be handled",
                r"UCX\s+ERROR .*?Endpoint timeout",
            ],
            unless: &[
                r"(?i)retry count(?:er)? exceeded",
                r"wc->status == IBV_WC_SUCCESS.*? error: 12\b",
            ],
        },
        Builtin {
            name: "mpi-openib-unreachable",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's openib BTL could not connect two processes over verbs",
            example: "At least one pair of MPI processes are unable to reach each other for",
            patterns: &[
                r"At least one pair of MPI processes are unable to reach each other",
                r"error exit from mca_btl_openib_proc_create",
                r"udcm_process_messages\] could not find associated endpoint",
            ],
            unless: &[],
        },
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TriggerSet;

    #[test]
    fn every_pack_compiles_and_names_are_unique() {
        for name in PACK_NAMES {
            let defs = pack(name).expect("listed pack exists");
            assert!(!defs.is_empty(), "{name}");
            TriggerSet::new(defs).unwrap_or_else(|e| panic!("pack {name}: {e}"));
        }
        let set = TriggerSet::new(all_packs()).expect("all packs together");
        assert_eq!(
            set.defs().len(),
            describe().iter().map(|p| p.triggers.len()).sum::<usize>()
        );
        assert!(pack("nope").is_none());
    }

    #[test]
    fn every_example_fires_its_own_trigger_first() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        for (i, def) in set.defs().iter().enumerate() {
            assert!(
                !def.example.is_empty() && !def.description.is_empty(),
                "{}",
                def.name
            );
            assert!(
                set.match_line(def.example.as_bytes(), &mut out),
                "{} example does not fire",
                def.name
            );
            assert_eq!(out[0].trigger, i, "{} example fires {:?}", def.name, out);
        }
    }

    #[test]
    fn retry_exceeded_keeps_a_longer_pre_window() {
        for def in all_packs() {
            let expect =
                if def.name.contains("retry-exceeded") || def.name == "perftest-completion-error" {
                    RETRY_EXCEEDED_PRE
                } else {
                    DEFAULT_PRE
                };
            assert_eq!(def.pre, expect, "{}", def.name);
            assert_eq!(def.post, DEFAULT_POST, "{}", def.name);
            assert_eq!(def.cooldown, DEFAULT_COOLDOWN, "{}", def.name);
        }
    }

    #[test]
    fn groups_carry_the_useful_values() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        let groups = |line: &str, out: &mut Vec<crate::LineMatch>| {
            assert!(set.match_line(line.as_bytes(), out), "{line}");
            let name = set.defs()[out[0].trigger].name.clone();
            (name, out[0].groups.clone())
        };
        let get = |g: &[(String, String)], k: &str| {
            g.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };

        let (name, g) = groups("2025-11-09 15:39:31.043 +08:00 [2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:2451 NCCL WARN NET/IB: Got completion from peer 172.16.12.34<38081> with status=4 opcode=0 len=0 vendor err 83 (Send) hca mlx5_ib0", &mut out);
        assert_eq!(name, "nccl-ib-completion-error");
        assert_eq!(get(&g, "peer").as_deref(), Some("172.16.12.34"));
        assert_eq!(get(&g, "status").as_deref(), Some("4"));
        assert_eq!(get(&g, "vendor_err").as_deref(), Some("83"));
        assert_eq!(get(&g, "hca").as_deref(), Some("mlx5_ib0"));

        let (name, g) = groups("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f", &mut out);
        assert_eq!(name, "nccl-ib-retry-exceeded");
        assert_eq!(get(&g, "status").as_deref(), Some("12"));
        assert_eq!(get(&g, "port").as_deref(), Some("54862"));

        let (name, g) = groups("[rank4]:[E226 11:16:37.104512039 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5653, OpType=ALLREDUCE, NumelIn=58720256, NumelOut=58720256, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.", &mut out);
        assert_eq!(name, "pytorch-nccl-timeout");
        for (k, v) in [
            ("rank", "4"),
            ("seq", "5653"),
            ("op", "ALLREDUCE"),
            ("timeout_ms", "600000"),
            ("ran_for_ms", "600011"),
        ] {
            assert_eq!(get(&g, k).as_deref(), Some(v), "{k}");
        }

        let (name, g) = groups("CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10", &mut out);
        assert_eq!(name, "verbs-retry-exceeded");
        assert_eq!(get(&g, "qp").as_deref(), Some("0x2c10"));

        let (name, g) = groups("[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)", &mut out);
        assert_eq!(name, "verbs-retry-exceeded");
        assert_eq!(get(&g, "hca").as_deref(), Some("mlx5_0"));
    }

    #[test]
    fn invalid_utf8_around_a_stem_still_fires() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        let line = b"\x1b[36m\xff(RayWorkerWrapper pid=1) \xfe NCCL WARN Call to ibv_create_qp failed \xc3";
        assert!(set.match_line(line, &mut out));
        assert_eq!(set.defs()[out[0].trigger].name, "nccl-ibverbs-call-failed");
    }
}
