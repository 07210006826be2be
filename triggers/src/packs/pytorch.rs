//! The `pytorch` pack: PyTorch's ProcessGroupNCCL, its c10d store and Gloo, and the other
//! ML frameworks that drive NCCL and report its failures in their own words.
//!
//! Written from `triggers/formats/pytorch.tsv` (ids `pytorch/…` and `gloo/…`) and
//! `triggers/formats/frameworks.tsv` (XLA/JAX, TensorFlow, Horovod, CuPy, PaddlePaddle, Ray,
//! torchft, vLLM, SGLang). Each message
//! has one pattern for all its eras: the rank prefix changed from `[Rank N]` to `[PG N Rank N]`,
//! `[PG N (desc) Rank N]` and `[PG ID N PG GUID N(desc) Rank N]`, so the patterns start at the
//! stem (optionally `Rank N] ` before it, to capture the rank) and never at the prefix.
//!
//! One line, one class, where one message quotes another:
//! - `NCCL communicator was aborted on rank N. Original reason for failure was: [Rank N]
//!   Watchdog caught collective operation timeout…` is the abort (`nccl_system_error`), not a
//!   second timeout: `pytorch-nccl-timeout` vetoes it.
//! - `…watchdog thread terminated with exception: [Rank N] Watchdog caught collective
//!   operation timeout…` (also when cut after `[Rank N]` or inside the stem) is the timeout:
//!   the generic `terminated with exception` of `pytorch-nccl-error` vetoes the timeout stems.
//! - NCCL's own error strings (`unhandled system error`, `remote process exited or there was a
//!   network error`) inside `NCCL error in: …` or `NCCL error: …` belong here; the `nccl` pack
//!   fires on them only when they stand alone.
//! - Gloo's ibverbs completion errors (`wc->status == IBV_WC_SUCCESS. 12 vs 0. Send for slot
//!   0: transport retry counter exceeded`, class `rdma_verbs_error`) are fired by the `verbs`
//!   pack's `verbs-retry-exceeded` and `verbs-completion-error`, whose patterns cite the
//!   `gloo/ibverbs/…` rows: a verbs completion error is one failure kind whichever library
//!   polled it. Gloo's ibverbs *timeouts* stay here, with the other Gloo timeouts.
//!
//! Not fired on, on purpose: c10d's per-address `The client socket has failed to connect to
//! [host]:port (errno: 99 - Cannot assign requested address).` and `cannot be initialized to
//! connect to` warnings (the client then tries the next address, and healthy runs print them
//! for `localhost`'s IPv6 address); the failure is `…failed to connect to any network address`
//! or `…has timed out after`, which fire.

use super::{pat, Builtin, Fallbacks, Table, PRE};

/// PyTorch's ProcessGroupNCCL (watchdog, heartbeat monitor), c10d and Gloo.
/// HCCL's own log line at ERROR (`[ERROR] HCCL(pid,process):date [file:line] …`) that says
/// something timed out: `pytorch-nccl-timeout`'s, vetoed in `pytorch-nccl-error`.
const HCCL_ERROR_TIMEOUT: &str =
    r"\[ERROR\] ?HCCL\(\d+ ?,[^)]*\):[^\r\n]*?(?i:timeout|times out|timed out)";

/// The line header of PyTorch's torchcomms NCCL backend (`nccl2`, 2.14+):
/// `[TC][rank=N][name=G] `.
macro_rules! tc_header {
    () => {
        r"\[TC\]\[rank=(?P<rank>\d+)\]\[name=[^\]\r\n]*\] "
    };
}

/// The start of a store error that is not a timeout (c10d's store reports its timeout as
/// `Socket Timeout`, `wait timeout after …ms` or `Wait timeout`, others as `Timeout …` or
/// `timed out`): a refused or reset connection, `failed to format addr`, any other cause.
/// A regex has no negative look-ahead, so this names every first byte but `S`, `T`, `t`,
/// `W` and `w`, and `S`, `W`, `w` when a timeout's second byte does not follow.
/// The ncclUniqueId exchange's class follows it (`pytorch-tcp-error`, vetoed in
/// `pytorch-store-timeout`).
macro_rules! store_error_not_timeout {
    () => {
        r"(?:[^STWtw\r\n]|S[^o\r\n]|[Ww][^a\r\n])"
    };
}

pub(super) static PYTORCH: Table = Table {
    name: "pytorch",
    summary: "PyTorch ProcessGroupNCCL watchdog timeouts, heartbeat hangs, collective mismatches, NCCL errors raised to Python, c10d store and Gloo timeouts and connection errors; the same roles in torchelastic, Horovod, JAX/XLA, TensorFlow, CuPy, PaddlePaddle, Ray, torchft, vLLM and torch_npu's HCCL; ProcessGroupUCC's failed UCC calls; ProcessGroupXCCL's timeouts",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "pytorch-nccl-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "ProcessGroupNCCL watchdog or blocking wait: a collective ran past its timeout (Timeout(ms), ran for … milliseconds) and the follow-up lines (dump signal, process taken down); ProcessGroupXCCL's work that timed out",
            example: "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
            patterns: &[
                pat(
                    r"(?:\[Rank (?P<rank>\d+)\] )?(?:Watchdog c|C|(?:^|[\s:>\]])c)aught collective operation timeout(?:: WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?(?:OpType=(?P<op>\w+))?[^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\)(?: ran for (?P<ran_for_ms>\d+) milliseconds)?)?",
                    &[
                        "pytorch/pgnccl/watchdog-timeout-*",
                        "pytorch/pgnccl/blocking-wait-caught-timeout",
                        "pytorch/pgnccl/watchdog-thread-exc-timeout-*",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-timeout-*",
                        "pytorch/nccl2/watchdog-timeout-exception-v215",
                    ],
                ),
                // ProcessGroupXCCL (the `xccl` backend on Intel GPUs, torch-xpu-ops): a work
                // that `wait()`ed past its timeout.
                pat(
                    r"\bWork (?:timed out|ran time out) after (?P<ran_for_ms>\d+) milliseconds\.",
                    &["xccl/pg/*"],
                ),
                // The torchcomms NCCL backend (`nccl2`: opt-in in 2.14, the default for `nccl`
                // in 2.15): its timeout watchdog (`[TC][rank=N][name=G] …`, then `abort()`),
                // the exceptions of the timed-out work, and the flight recorder's hook.
                pat(
                    concat!(
                        tc_header!(),
                        r"(?:Operation timed out after (?P<timeout_ms>\d+) ms|Aborting process on rank \d+ due to timeout - )|\bNCCL operation timed out\b|\bNCCL \w+ failed(?: in batch operation)? timed out after \d+ ms|Failed to initialize NCCL communicator timed out after \d+ ms|\bWork timed out during finalize\b|FlightRecorderHook: dumping trace on collective failure"
                    ),
                    &[
                        "pytorch/nccl2/operation-timed-out",
                        "pytorch/nccl2/operation-timed-out-exception",
                        "pytorch/nccl2/aborting-process-watchdog-timeout",
                        "pytorch/nccl2/aborting-process-collective-timeout",
                        "pytorch/nccl2/nccl-op-timed-out",
                        "pytorch/nccl2/comm-init-timed-out",
                        "pytorch/nccl2/work-timed-out-finalize",
                        "pytorch/fr/hook-dump-on-collective-failure",
                    ],
                ),
                // The TCPStore barrier (2.12+): how long the rank waited for the others.
                pat(r"\bbarrier timeout after \d+ms, key: ", &["pytorch/c10d/tcpstore-barrier-timeout"]),
                // The same lines cut after the quoted `[Rank N]` or inside `collective`.
                pat(
                    r"watchdog thread terminated with exception: \[Rank (?P<rank>\d+)\](?: Watchdog c|\s*$)",
                    &[
                        "pytorch/pgnccl/watchdog-thread-exc-timeout-*",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-timeout-*",
                    ],
                ),
                pat(
                    r"Work:? WorkNCCL\(.*?\) timed out in (?:call to wait\(\)|blocking wait)",
                    &["pytorch/pgnccl/blocking-wait-abort-reason", "pytorch/pgnccl/blocking-wait-v2*"],
                ),
                pat(
                    r"(?:Rank (?P<rank>\d+)\]\s+)?(?:Timeout at NCCL work|Exception \(either an error or timeout\) detected by watchdog at work|Work timeout is detected by watchdog at work|failure detected by watchdog at work sequence id): (?P<seq>\d+)",
                    &[
                        "pytorch/pgnccl/timeout-at-nccl-work-*",
                        "pytorch/pgnccl/exception-detected-by-watchdog-*",
                        "pytorch/pgnccl/work-timeout-detected-by-watchdog-*",
                        "pytorch/pgnccl/failure-detected-by-watchdog-*",
                    ],
                ),
                pat(r"Some [NH]CCL operations have failed or timed out", &["pytorch/pgnccl/some-ops-failed-*", "hccl/torch_npu/some-ops-failed"]),
                // HCCL's own log (`[ERROR] HCCL(pid,process):date [file:line] …`) at ERROR:
                // a socket, link or topology exchange that timed out.
                pat(
                    HCCL_ERROR_TIMEOUT,
                    &["hccl/log/error-socket-establish-timeout", "hccl/log/error-topo-exchange-get-socket-timeout"],
                ),
                pat(r"To avoid data inconsistency, we are taking the entire process down", &["pytorch/pgnccl/teardown-*"]),
                pat(
                    r"Received a dump signal due to a collective timeout|Observed flight recorder dump signal from another rank|Received a global timeout from another rank|ProcessGroupNCCL's watchdog detected a collective timeout|Terminating the process after attempting to dump debug info, due to collective timeout",
                    &[
                        "pytorch/pgnccl/dump-signal-*",
                        "pytorch/pgnccl/observed-dump-signal-*",
                        "pytorch/pgnccl/global-timeout-received-dev2402",
                        "pytorch/pgnccl/watchdog-detected-collective-timeout-dev2402",
                        "pytorch/pgnccl/terminating-collective-timeout-*",
                    ],
                ),
                pat(r"Exception raised from checkTimeout at", &["pytorch/c10/exception-raised-from-checktimeout"]),
                pat(r"NCCL timeout in: \S", &["pytorch/ncclutils/nccl-timeout-in"]),
                // torch_npu's HCCL (Ascend): a collective's wait for its peer's notify timed out.
                pat(r"\bEI0002\b.*?Notify register times out", &["hccl/notify/ei0002-notify-wait-times-out"]),
                // A device task of HCCL's ran past its timeout (EI9999's task exception).
                pat(r"\bhccl \w+ task timeout occurred during task execution", &["hccl/task/ei9999-task-timeout"]),
                pat(r"Rank (?P<rank>\d+)\] Wrote aborted communicator id to store", &["pytorch/pgnccl/wrote-aborted-comm-id"]),
            ],
            unless: &[r"NCCL communicator was aborted"],
        },
        Builtin {
            name: "pytorch-nccl-comm-aborted",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "ProcessGroupNCCL aborted an NCCL communicator after a failure (the original reason is quoted, a timeout included)",
            example: "RuntimeError: NCCL communicator was aborted on rank 2.  Original reason for failure was: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1805457 milliseconds before timing out.",
            patterns: &[
                pat(
                    r"NCCL communicator was aborted(?: on rank (?P<rank>\d+))?\.(?:.*?SeqNum=(?P<seq>\d+))?(?:.*?Timeout\(ms\)=(?P<timeout_ms>\d+))?(?:.*?ran for (?P<ran_for_ms>\d+) milliseconds)?",
                    &["pytorch/ncclutils/comm-aborted-*"],
                ),
                pat(
                    r"NCCL communicator was aborted after a previous error",
                    &["pytorch/nccl2/comm-aborted-after-error"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-nccl-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "An NCCL error raised into PyTorch (NCCL error in:, ncclSystemError/ncclRemoteError, async error found by the watchdog, another rank's error signalled through the store, watchdog thread died, process terminated), or the same from HCCL (torch_npu, CANN, Gaudi)",
            example: "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
            patterns: &[
                // Another rank signalled its failure through the store (2.7+); a pool
                // allocation through NCCL failed.
                pat(r"\] remote error detected from rank: \d+|\bncclMemAlloc failed", &["pytorch/pgnccl/remote-error-detected", "pytorch/pgnccl/nccl-mem-alloc-failed"]),
                // torch_npu and CANN: an HCCL call failed (HCCL_CHECK_ERROR, ERR02200), HCCP
                // could not start (EJ0001), a communicator could not be created; Intel Gaudi's
                // hccl_demo.
                pat(
                    r"\[ERROR\] HCCL error in: \S+:\d+|\bERR02200 DIST call hccl api failed|\bEJ0001\b.*?Failed to initialize the HCCP process|HcclCommInitRootInfo fail(?:ed)?,? error:? ?-?\d+|HCCL demo error: ",
                    &[
                        "hccl/torch_npu/hccl-error-in",
                        "hccl/torch_npu/err02200-dist-call-failed",
                        "hccl/hccp/ej0001-hccp-init-failed",
                        "hccl/init/comm-init-root-info-fail",
                        "habana/hccl_demo/demo-error",
                    ],
                ),
                // torch_npu's HCCL (Ascend): a link of the communicator could not be set up.
                pat(r"\]Transport init error! createLink", &["hccl/transport/transport-init-error"]),
                pat(r"\bEI0009\b.*?Transport init error", &["hccl/transport/ei0009-transport-init-error"]),
                // HCCL's own log at ERROR (any other failure than a timeout), and its
                // heartbeat: a rank lost (the process exited, the network went down).
                pat(
                    r"\[ERROR\] ?HCCL\(\d+ ?,[^)]*\):",
                    &["hccl/log/error-topo-detect", "hccl/log/error-rank-num-different", "hccl/transport/transport-init-error", "hccl/log/error-socket-connection-failure"],
                ),
                pat(
                    r"ExceptionType:\[Heartbeat Lost Occurred\]|\bHeartbeat Lost Occurred, Possible Reason|\]: rank \[[^\]]+\] status\[LOST\] by rank \[",
                    &["hccl/heartbeat/*"],
                ),
                // torch_npu: an HCCL collective returned an error code.
                pat(r"OPS function error: Hccl\w+, error code is (?P<error>\d+)", &["hccl/ops/*"]),
                pat(r"NCCL error in: (?P<location>[^,]+), (?P<error>[^,(]+)", &["pytorch/ncclutils/nccl-error-in*"]),
                // vLLM's and SGLang's pynccl raise the same text.
                pat(r"NCCL error: (?P<error>[^,(]+)", &["pytorch/pgnccl/nccl-error-async", "vllm/pynccl/nccl-error"]),
                pat(
                    r"(?P<error>nccl(?:UnhandledCuda|System|Internal|Remote)Error|ncclInvalid(?:Argument|Usage)): ",
                    &["pytorch/ncclutils/detail-*"],
                ),
                // The torchcomms NCCL backend (`nccl2`, 2.14+): its watchdog's error aborts, the
                // async errors it polls, and the exceptions of failed work.
                pat(
                    concat!(
                        tc_header!(),
                        r"(?:Aborting process on rank \d+ due to error - |nccl hit async error on rank \d+: |Async error on rank \d+: |Timeout watchdog caught (?:exception: |unknown exception)|Failed to clean up NCCL communicator after |CUDA error during (?:start|end) event query: )|\bNCCL Async Error: |\bNCCL \w+ failed(?: in batch operation)?: |\bNCCL Last Error: |Failed to (?:initialize NCCL communicator|get NCCL unique ID): |\bNCCL operation failed\b"
                    ),
                    &[
                        "pytorch/nccl2/aborting-process-watchdog-error",
                        "pytorch/nccl2/aborting-process-async-error",
                        "pytorch/nccl2/aborting-process-nccl-async-error",
                        "pytorch/nccl2/nccl-hit-async-error",
                        "pytorch/nccl2/async-error-reconfigurable",
                        "pytorch/nccl2/timeout-watchdog-caught-*",
                        "pytorch/nccl2/failed-to-clean-up-comm",
                        "pytorch/nccl2/cuda-error-start-event-query",
                        "pytorch/nccl2/cuda-error-end-event-query",
                        "pytorch/nccl2/nccl-check-ignore-failed",
                        "pytorch/nccl2/nccl-async-error-exception",
                        "pytorch/nccl2/nccl-op-failed-exception",
                        "pytorch/nccl2/nccl-last-error-line",
                        "pytorch/nccl2/comm-init-failed",
                        "pytorch/nccl2/get-unique-id-failed",
                        "pytorch/nccl2/operation-failed-exception",
                    ],
                ),
                pat(r"Unknown NCCL [Ee]rror", &["pytorch/ncclutils/detail-unknown", "pytorch/ncclutils/last-error-unknown"]),
                pat(
                    r"watchdog thread terminated with (?:unknown exception|exception: (?P<error>[^\r\n]*))",
                    &[
                        "pytorch/pgnccl/watchdog-thread-exc-v18",
                        "pytorch/pgnccl/watchdog-thread-unknown-v18",
                        "pytorch/pgnccl/watchdog-thread-exc-v20",
                        "pytorch/pgnccl/watchdog-thread-exc-unknown-v20",
                        "pytorch/pgnccl/watchdog-thread-exc-pg-dev2402",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-23",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-24d",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-24",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-25d",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-25",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-unknown-*",
                        "pytorch/pgnccl/pg-watchdog-thread-exc-what",
                        "pytorch/c10/terminate-what-watchdog",
                    ],
                ),
                pat(r"(?:Rank (?P<rank>\d+)\] )?NCCL error is detected by watchdog at work: (?P<seq>\d+)", &["pytorch/pgnccl/nccl-error-detected-by-watchdog-*"]),
                pat(
                    r"found async exception when checking for NCCL errors|\) raised the following async exception: |Received NCCL errors for communicators in the cache|Aborting communicators that received errors|NCCL communicator encountered error set by ProcessGroupNCCL",
                    &[
                        "pytorch/pgnccl/found-async-exception",
                        "pytorch/pgnccl/raised-async-exception",
                        "pytorch/pgnccl/received-nccl-errors-cache",
                        "pytorch/pgnccl/aborting-comms-errors",
                        "pytorch/pgnccl/comm-encountered-error",
                    ],
                ),
                pat(
                    r"\] Found key in store: .*?, from rank: \d+|Watchdog wrote aborted communicator id to store|Aborted communicators for key in store",
                    &[
                        "pytorch/pgnccl/found-key-in-store*",
                        "pytorch/pgnccl/watchdog-wrote-aborted-comm-id",
                        "pytorch/pgnccl/aborted-comms-for-key",
                    ],
                ),
                pat(
                    r"terminate called after throwing an instance of '(?:c10::DistBackendError|std::runtime_error)",
                    &["pytorch/c10/terminate-distbackenderror"],
                ),
                pat(r"Exception raised from checkForNCCLErrorsInternal at", &["pytorch/c10/exception-raised-from-checkforncclerrors"]),
            ],
            unless: &[
                // HCCL's ERROR lines that say something timed out are `pytorch-nccl-timeout`'s.
                HCCL_ERROR_TIMEOUT,
                // The abort quoting its reason is `pytorch-nccl-comm-aborted`'s.
                r"NCCL communicator was aborted",
                // A quoted timeout: the line is `pytorch-nccl-timeout`'s.
                r"(?:Watchdog c|C|(?:^|[\s:>\]])c)aught collective operation timeout",
                r"watchdog thread terminated with exception: \[Rank \d+\](?: Watchdog c|\s*$)",
                r"\) timed out in (?:call to wait|blocking wait)",
            ],
        },
        Builtin {
            name: "hccl-roce-cqe-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "HCCL (Ascend): an error CQE on the device's RoCE NIC during a collective (EI0013), the counterpart of NCCL's `Got completion from peer … with error`",
            // Huawei Ascend CANN documentation (hiascend.com), EI0013
            example: "[PID: 3448331] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE occurred during operator execution. Local information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer information: server 127.0.0.2, device ID 1, device IP 127.10.0.2.",
            patterns: &[pat(r"\bROCE CQE\(EI0013\)|\bEI0013\b.*?error CQE", &["hccl/roce/ei0013-error-cqe"])],
            unless: &[],
        },
        Builtin {
            name: "pytorch-hang",
            class: "other_hang",
            pre_s: PRE,
            description: "A monitor saw the job stop making progress: ProcessGroupNCCL's heartbeat monitor (the watchdog itself is stuck: CUDA/NCCL API hang, GIL; the process is killed), ranks that called different collectives (ProcessGroupWrapper's check), XLA's rendezvous waiting on participants that never arrived, JAX's client terminating because another task died, vLLM's executor timing out on a worker, torchelastic's exit barrier or an etcd keep-alive lease left to expire, Ray declaring a node dead on missed heartbeats, or Horovod's stall inspector (ranks missing from a collective)",
            example: "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=103",
            patterns: &[
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?ProcessGroupNCCL's watchdog got stuck for (?P<stuck_s>\d+) seconds",
                    &["pytorch/pgnccl/watchdog-stuck-*", "pytorch/nccl2/watchdog-stuck-main"],
                ),
                pat(r"(?:Rank (?P<rank>\d+)\] )?Heartbeat monitor timed out", &["pytorch/pgnccl/heartbeat-monitor-timed-out-*"]),
                pat(
                    r"No PGNCCL's watchdog heartbeat detected|monitoring thread detects no heartbeat and will finally kill the process|NCCL monitor thread timeout\. Basically|First PG on this rank that detected no heartbeat of its watchdog",
                    &[
                        "pytorch/pgnccl/no-heartbeat-dump-v22",
                        "pytorch/pgnccl/monitor-no-heartbeat-kill-v22",
                        "pytorch/pgnccl/monitor-thread-timeout-v22",
                        "pytorch/pgnccl/first-pg-no-heartbeat-24",
                    ],
                ),
                pat(
                    r"Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang",
                    &["pytorch/pgnccl/terminating-watchdog-hang-*"],
                ),
                pat(
                    r"(?:PGNCCL Monitor Thread|ProcessGroupNCCL monitor thread) is disabled, but would have (?:killed|terminated)",
                    &["pytorch/pgnccl/monitor-disabled-would-*", "pytorch/nccl2/monitor-disabled-would-terminate-main"],
                ),
                // The flight recorder's dump of a hang that did not finish (nccl2's monitor),
                // PyTorch 2.15's Python watchdog (`torch.distributed` event-loop watchdog), and
                // torchelastic (2.13+) finding a worker stuck in uninterruptible sleep.
                pat(
                    r"Flight recorder dump did not finish within \d+ ms|Watchdog timeout -- dumping all thread stack traces|Default timeout callback fired, calling os\.abort\(\)|timeout fired \(id=-?\d+\)|Watchdog event loop appears stuck \(no response within|stuck in uninterruptible sleep \(D-state\) for [\d.]+s",
                    &[
                        "pytorch/nccl2/fr-dump-not-finished-main",
                        "pytorch/dist/pywatchdog-*",
                        "pytorch/elastic/worker-d-state-stuck",
                    ],
                ),
                pat(r"Could not acquire GIL within \d+ ms on exit", &["pytorch/pgnccl/gil-not-acquired"]),
                // ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL): the ranks called different
                // collectives, which without the check is a hang.
                pat(
                    r"Detected mismatch between collectives on ranks\. Rank (?P<rank>\d+) is running (?:inconsistent )?collective",
                    &["pytorch/wrapper/collective-mismatch*"],
                ),
                // XLA's rendezvous (JAX, TensorFlow on GPU): a collective's participants did not all
                // arrive (the warning, then the exit after the termination timeout); JAX's client
                // terminating because another task died; vLLM's executor waiting on a worker.
                pat(
                    r"This thread has been waiting for (?:`[^`\r\n]*` for )?(?P<stuck_s>\d+) seconds and may be stuck|Termination timeout (?:for `[^`\r\n]*` )?of -?\d+ seconds exceeded\. Exiting to ensure a consistent program state",
                    &["xla/rendezvous/stuck-*", "xla/rendezvous/termination-timeout-*"],
                ),
                pat(
                    r"Terminating process because (?:the JAX distributed service detected fatal errors|the coordinator detected missing heartbeats|of missing heartbeat response from the coordinator)",
                    &["jax/client/terminating-*"],
                ),
                // XLA's coordination service: a task stopped sending heartbeats, the service or
                // this task's agent is in error, or the leader restarted.
                pat(
                    r"UNAVAILABLE: (?:Task [^\r\n]*? heartbeat timeout\. This indicates that the remote task has failed|The following tasks are unhealthy \(stopped sending heartbeats\))|\bStopping coordination service as (?:the following tasks are unhealthy|heartbeat has timed out for )|\bCoordination service agent in error status: |\bPolled an error from coordination service|\bCoordination agent is (?:in|set to) ERROR: |\bShutdown\(\) was called while coordination agent is in error state|ABORTED: Leader incarnation ID mismatch: the coordination +leader",
                    &[
                        "jax/coordination/heartbeat-timeout-*",
                        "jax/coordination/unhealthy-tasks-stopped-heartbeats",
                        "jax/coordination/stopping-unhealthy-tasks",
                        "jax/coordination/stopping-heartbeat-timed-out-v0",
                        "jax/coordination/agent-*",
                        "jax/coordination/polled-error",
                        "jax/coordination/shutdown-in-error-state",
                        "jax/coordination/leader-incarnation-mismatch*",
                    ],
                ),
                pat(r"\bRPC call to execute_model timed out\.", &["vllm/multiproc/rpc-execute-model-timed-out"]),
                // Monitors beside the job: torchelastic's timer server reaping a worker whose
                // timer expired, PaddlePaddle's comm-task watchdog finding no group started,
                // TensorRT-LLM's hang detector, and nvidia-resiliency-ext's rank monitor (missed
                // heartbeats, a section open too long) and straggler detector stopping the job.
                pat(
                    r"\bReaping worker_(?:id|pid)=\[[^\]\r\n]*\]\. Expired timers: |\bTerminating the server process=\[-?\d+\] because of expired timers",
                    &["pytorch/elastic-timer/*"],
                ),
                pat(r"\bFind no task started in all group\b", &["paddle/comm_task/no-task-started-all-groups"]),
                pat(r"\bHang detected after (?P<stuck_s>\d+) seconds\.", &["trtllm/hang_detector/hang-detected"]),
                pat(
                    r"\b(?:Did not get (?:initial|subsequent) heartbeat\. Waited|Section '[^'\r\n]*' has been open for) (?P<stuck_s>\d+)(?:\.\d+)? seconds\.|\bWas out of section for [\d.]+ seconds\. Timeout is |\bDetected stragglers\. Terminating training",
                    &["nvrx/rank_monitor/*", "nvrx/straggler/detected-terminating"],
                ),
                // A participant's liveness lost: torchelastic's etcd rendezvous saw a keep-alive
                // lease expire; Ray's GCS (or, before 1.0, its monitor) declared a node dead.
                pat(
                    r"Keep-alive key \S+ is not renewed\.|has been marked dead because the (?:detector|monitor) has missed too many heartbeats",
                    &[
                        "pytorch/elastic/etcd-keep-alive-not-renewed",
                        "ray/gcs/node-marked-dead",
                        "ray/monitor/node-marked-dead-v0",
                    ],
                ),
                // SGLang's scheduler watchdog: a batch ran past its timeout and the server is
                // taken down. (vLLM's `No available shared memory broadcast block found in 60
                // seconds` is left silent: it is also printed while workers compile.)
                pat(r"\] Watchdog timeout \(self\.watchdog_timeout=(?P<stuck_s>\d+)\)", &["sglang/scheduler/watchdog-timeout"]),
                // JAX: the coordination service marked a task failed (missed heartbeats).
                pat(r"has been set to ERROR in coordination service", &["jax/coordination/task-set-to-error"]),
                // torchelastic: a worker group whose ranks did not all reach the exit barrier.
                pat(
                    r"Error waiting on exit barrier\. Elapsed: (?P<stuck_s>\d+)(?:\.\d+)? seconds",
                    &["pytorch/elastic/exit-barrier-error"],
                ),
                // Horovod's stall inspector (horovod/common/stall_inspector.cc, operations.cc
                // before v0.20): some ranks submitted a collective the others never did.
                pat(
                    r"One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than (?P<stuck_s>\d+) seconds|(?:^|[\s\]])Stalled ops:|\[missing ranks: \d[\d, ]*\]\s*$",
                    &["horovod/stall/*"],
                ),
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?Future for [^\r\n]*? timed out after (?P<timeout_ms>\d+) ms",
                    &["pytorch/pgnccl/future-timed-out-*"],
                ),
                // A fatal line of ProcessGroupNCCL cut before its text (only the monitor kills).
                pat(
                    r"\bF(?:\d{3,8} [\d:.]+(?: \d+)?)? ProcessGroupNCCL\.cpp:\d+\]",
                    &[
                        "pytorch/pgnccl/watchdog-stuck-fatal-*",
                        "pytorch/pgnccl/watchdog-stuck-any",
                        "pytorch/pgnccl/terminating-watchdog-hang-*",
                        "pytorch/pgnccl/monitor-thread-timeout-v22",
                    ],
                ),
                // The watchdog-stuck line cut after `ProcessGroupNCCL'`.
                pat(r"Rank (?P<rank>\d+)\] ProcessGroupNCCL'\s*$", &["pytorch/pgnccl/watchdog-stuck-2*"]),
            ],
            // The fatal lines that report a collective timeout are `pytorch-nccl-timeout`'s.
            unless: &[r"due to collective timeout or exception|watchdog detected a collective timeout"],
        },
        Builtin {
            name: "pytorch-store-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "c10d store, rendezvous or store-based barrier timed out while the job was being set up (ncclUniqueId exchange, TCPStore wait, clients joining)",
            example: "torch.distributed.DistBackendError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout",
            patterns: &[
                pat(
                    r"\[(?P<rank>\d+)\] is setting up NCCL communicators? and retr(?:ie|ei)ving ncclUniqueIds? from (?:\[\d+\] via c10d key-value store|roots via TCPStore)",
                    &[
                        "pytorch/pgnccl/unique-id-store-error-retreiving-timeout",
                        "pytorch/pgnccl/unique-id-store-error-timeout",
                        "pytorch/pgnccl/unique-id-store-error-line1-timeout",
                        "pytorch/pgnccl/unique-id-store-error-socket-timeout",
                        "pytorch/pgnccl/unique-id-store-unknown*",
                        "pytorch/pgnccl/unique-id-store-roots-*",
                    ],
                ),
                pat(r#"\bSocket Timeout[\s`'"]*$"#, &["pytorch/c10d/socket-timeout"]),
                pat(r"\bwait timeout after (?P<timeout_ms>\d+)ms, keys: ", &["pytorch/c10d/tcpstore-wait-timeout"]),
                pat(r"\bWait timeout\s*$", &["pytorch/c10d/store-wait-timeout"]),
                pat(r"Timeout waiting for key: .*? after (?P<timeout_ms>\d+) ms", &["pytorch/c10d/filestore-timeout-key"]),
                pat(r"Timed out after (?P<stuck_s>\d+) seconds waiting for (?:clients|workers)", &["pytorch/c10d/tcpstore-clients-timeout", "pytorch/c10d/tcpstore-workers-timeout"]),
                pat(
                    r"TCP client failed to connect/validate to host (?P<peer>\S+?):(?P<port>\d+) - timed out \(try=-?\d+, timeout=(?P<timeout_ms>\d+)ms\)",
                    &["pytorch/c10d/tcpclient-connect-timed-out"],
                ),
                pat(
                    r"The client socket has timed out after .+? while trying to connect to(?: \(?(?P<peer>\[[^\]]+\]|[^,\s()]+?)(?:, |:)(?P<port>\d+)\)?)?",
                    &["pytorch/c10d/client-socket-timed-out-*"],
                ),
                pat(r"waitForInput: socket .*? timed out after (?P<timeout_ms>\d+)ms", &["pytorch/c10d/wait-for-input-timed-out"]),
                pat(r"waitForInput: poll for socket .*? returned 0, likely a timeout", &["pytorch/c10d/wait-for-input-poll-returned-0"]),
                // PyTorch 1.x c10d (Utils.hpp/cpp): a store connect that ran out of its timeout.
                pat(r"\bconnect\(\) timed out\. Original timeout was (?P<timeout_ms>\d+) ms", &["pytorch/c10d/connect-timed-out-v1"]),
                pat(
                    r"Timed out initializing process group in store based barrier on rank:? (?P<rank>\d+)",
                    &["pytorch/dist/store-barrier-timeout-*"],
                ),
                pat(
                    r"timed out waiting for all -?\d+ members to join|Timed out waiting on barrier on rank \d+, for key prefix",
                    &["pytorch/elastic/members-join-timeout", "pytorch/elastic/store-barrier-timeout"],
                ),
                // torch_npu's HCCL (Ascend): the socket exchange with a peer rank timed out.
                pat(r"\bEI0006\b.*?Getting socket times out", &["hccl/socket/ei0006-getting-socket-times-out"]),
                pat(
                    r"Health check failure: Failed to initialize NCCL communicator on rank (?P<rank>\d+)",
                    &["pytorch/pgnccl/health-check-failure"],
                ),
            ],
            unless: &[
                // The exchange failed for another cause than a timeout: `pytorch-tcp-error`'s.
                concat!(r"store->get\('[^']*'\) got error: ", store_error_not_timeout!()),
                concat!(r"roots via TCPStore by key '[^']*', but got error: ", store_error_not_timeout!()),
            ],
        },
        Builtin {
            name: "pytorch-gloo-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "Gloo transfer, connection, rendezvous or monitoredBarrier timed out (TCP or ibverbs transport)",
            example: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete",
            patterns: &[
                pat(
                    r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>recv|send) operation to complete",
                    &["gloo/tcp/unbound-buffer-timeout-*", "gloo/ibverbs/unbound-buffer-timeout-*"],
                ),
                pat(
                    r"failed to pass monitoredBarrier in (?P<timeout_ms>\d+) ms",
                    &["pytorch/pggloo/monitored-barrier-rank-failed", "pytorch/pggloo/monitored-barrier-ranks-failed"],
                ),
                pat(
                    r"\bRank \d+ timed out in monitoredBarrier after (?P<timeout_ms>\d+) ms",
                    &["pytorch/pggloo/monitored-barrier-timed-out*"],
                ),
                pat(
                    r"\] (?:(?:Read|Write|Send|Connect) timeout \S|Timeout waiting for memory region from |timed out connecting: |Wait timeout for key\(s\): )|Application timeout caused pair closure",
                    &[
                        "gloo/tcp/read-timeout",
                        "gloo/tcp/write-timeout",
                        "gloo/tcp/connect-timeout",
                        "gloo/tcp/timed-out-connecting",
                        "gloo/tcp/application-timeout-pair-closure",
                        "gloo/ibverbs/read-timeout",
                        "gloo/ibverbs/send-timeout",
                        "gloo/ibverbs/mr-timeout",
                        "gloo/rendezvous/wait-timeout",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-tcp-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "A TCP connection between ranks failed: Gloo pair closed by the peer or read/write error, c10d store socket could not connect, listen or receive, or ProcessGroupNCCL's monitor could not pass its signals through the store",
            example: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:28048",
            patterns: &[
                pat(
                    r"\] Connection closed by peer \[?(?P<peer>[\w.:%-]+)\]?:(?P<port>\d+)(?:[^\w\]:]|$)",
                    &["gloo/tcp/connection-closed-by-peer*"],
                ),
                pat(
                    r"\] (?:Read error |writev |Socket (?:unexpectedly )?closed |short (?:read|write): )",
                    &[
                        "gloo/tcp/read-error*",
                        "gloo/tcp/writev-error",
                        "gloo/tcp/socket-closed",
                        "gloo/tcp/socket-unexpectedly-closed",
                        "gloo/tcp/short-read",
                        "gloo/tcp/short-write",
                    ],
                ),
                pat(
                    r"\] (?:read|write|getsockopt): (?P<error>[A-Z][^,\r\n]*)(?:, remote=|\s*$)",
                    &["gloo/tcp/read-system-error*", "gloo/tcp/write-system-error*", "gloo/tcp/getsockopt-system-error"],
                ),
                pat(r"failed to connect, willRetry=0\b", &["gloo/tcp/connect-failed-final"]),
                // c10d's sockets and store (2.8+): the peer closed the connection, a ping or a
                // timed receive failed, the server could not listen; the heartbeat monitor (2.14+)
                // lost the store.
                pat(
                    r"Failed to (?:recv, got|send, sent) 0 bytes\. Connection was likely closed|recvValueWithTimeout failed on SocketImpl|Ping failed, invalid value returned from server|The server socket has failed to listen on provided socket|TCPStore check for dump key \S+ failed \(store unavailable|\bStop_waiting response is expected",
                    &[
                        "pytorch/c10d/failed-to-recv-v28",
                        "pytorch/c10d/failed-to-send-v28",
                        "pytorch/c10d/recv-value-failed-closed-v28",
                        "pytorch/c10d/recv-value-with-timeout-failed",
                        "pytorch/c10d/tcpstore-ping-failed",
                        "pytorch/c10d/libuv-listen-provided-socket-failed",
                        "pytorch/pgnccl/dump-key-check-failed-v214-25d",
                        "pytorch/pgnccl/should-dump-flag-failed-closed-v28",
                        "pytorch/c10d/stop-waiting-response-expected",
                    ],
                ),
                pat(
                    r"Gloo connectFullMesh failed with |successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0",
                    &["pytorch/pggloo/connect-full-mesh-failed", "pytorch/pggloo/monitored-barrier-rank0-error"],
                ),
                pat(r"\bfailed to (?:recv, got|send, sent) 0 bytes", &["pytorch/c10d/failed-to-recv", "pytorch/c10d/failed-to-send"]),
                pat(
                    r"\[c10d\] (?:recvValue|recvVector|sendBytes) failed on SocketImpl\(.*?\): (?P<error>[A-Z][^\r\n]+)",
                    &["pytorch/c10d/recv-value-failed", "pytorch/c10d/recv-vector-failed", "pytorch/c10d/send-bytes-failed"],
                ),
                // The ncclUniqueId exchange through the store failed for another cause than a
                // timeout (the connection itself, `failed to format addr`, …).
                pat(
                    concat!(
                        r"\[(?P<rank>\d+)\] is setting up NCCL communicator and retr(?:ie|ei)ving ncclUniqueId from \[\d+\] via c10d key-value store by key '[^']*', but store->get\('[^']*'\) got error: (?P<error>",
                        store_error_not_timeout!(),
                        r"[^.\r\n]*)"
                    ),
                    &[
                        "pytorch/pgnccl/store-get-error-connection-reset",
                        "pytorch/pgnccl/store-get-error-broken-pipe",
                        "pytorch/pgnccl/unique-id-store-error",
                        "pytorch/pgnccl/unique-id-store-error-line1",
                        "pytorch/pgnccl/unique-id-store-error-retreiving",
                    ],
                ),
                // The same exchange in scalable init (NCCL_HAS_INIT_RANK_SCALABLE, from roots).
                pat(
                    concat!(
                        r"\[(?P<rank>\d+)\] is setting up NCCL communicators and retrieving ncclUniqueId from roots via TCPStore by key '[^']*', but got error: (?P<error>",
                        store_error_not_timeout!(),
                        r"[^.\r\n]*)"
                    ),
                    &["pytorch/pgnccl/store-get-error-roots-connection-reset"],
                ),
                // The heartbeat monitor lost the store (its server gone, the connection reset);
                // 2.2-2.3 said it as "exception dump flag" (LOG(ERROR)).
                pat(
                    r#"Failed to check the "should dump" flag on TCPStore|\] Failed to get exception dump flag from the global store\."#,
                    &["pytorch/pgnccl/should-dump-flag-failed", "pytorch/pgnccl/exception-dump-flag-failed"],
                ),
                // Its successor (2.7+): the signals ranks pass through the store.
                pat(
                    r"Failed to (?:get timeout rank ID from TCPStore\.|check the signal \S+ on TCPStore, |get source rank of the signal \S+ from TCPStore\.|broadcast signal \S+ through TCPStore\. Error: )",
                    &[
                        "pytorch/pgnccl/timeout-rank-store-failed",
                        "pytorch/pgnccl/check-signal-failed",
                        "pytorch/pgnccl/signal-src-rank-failed",
                        "pytorch/pgnccl/broadcast-signal-failed",
                    ],
                ),
                // PyTorch RPC (TensorPipe): a request to a peer worker failed on its pipe.
                pat(
                    r"RPC agent for \S+ encountered error when sending outgoing request #\d+ to \S+: ",
                    &["pytorch/rpc/tensorpipe-sending-outgoing-request-error"],
                ),
                pat(
                    r"The client socket has failed to connect to any network address of \((?P<peer>[^,]+), (?P<port>\d+)\)|The server socket has failed to listen on any local network address",
                    &[
                        "pytorch/c10d/client-socket-connect-any-failed-*",
                        "pytorch/c10d/server-socket-listen-any-failed-*",
                    ],
                ),
                pat(
                    r"The server socket has failed to (?:bind to|listen on) \S|The server socket on \S+ has failed to accept a connection",
                    &[
                        "pytorch/c10d/server-socket-bind-failed",
                        "pytorch/c10d/server-socket-listen-failed",
                        "pytorch/c10d/server-socket-accept-failed",
                    ],
                ),
                pat(r"The connection to the C10d store has failed", &["pytorch/elastic/c10d-store-connection-failed"]),
                pat(
                    r"\] connect \[(?P<peer>[\w.:%-]+)\]:(?P<port>\d+): (?P<error>[A-Z][^\r\n]*)",
                    &["gloo/tcp/connect-strerror"],
                ),
                pat(r"terminate called after throwing an instance of 'gloo::IoException'", &["gloo/tcp/terminate-io-exception"]),
                pat(
                    r"\brendezvous\.api\.RendezvousTimeoutError\b|\bRendezvousTimeoutError: ",
                    &["pytorch/elastic/rendezvous-timeout-error"],
                ),
            ],
            // A mesh connect that timed out is the Gloo timeout's (pytorch-gloo-timeout).
            unless: &[r"Gloo connectFullMesh failed with \[.*?\] (?:Read|Write|Send|Connect) timeout \S"],
        },
        // ML frameworks that drive NCCL themselves and raise its failures in their own words
        // (`triggers/formats/frameworks.tsv`).
        Builtin {
            name: "framework-nccl-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "An NCCL call failed inside a framework that raises it in its own words: XLA (JAX, TensorFlow) `NCCL operation … failed`, its health check and aborted communicator; TensorFlow's NCCL manager; Horovod; CuPy's NcclError, also as Ray's `RayTaskError(NcclError)`; PaddlePaddle; torchft's all-reduce; the Rust bindings (cudarc, monarch) (vLLM's and SGLang's pynccl raise PyTorch's `NCCL error: …`, which `pytorch-nccl-error` fires on)",
            example: "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work.;",
            patterns: &[
                pat(
                    r"\bNCCL operation (?:(?P<op>nccl\w+)\(|.*? failed: )",
                    &["xla/nccl/operation-failed-*"],
                ),
                pat(
                    r"\. Last NCCL error \(maybe unrelated\): |\bNcclCommunicator aborted\b",
                    &["xla/nccl/health-check-async-error", "xla/nccl/communicator-aborted"],
                ),
                pat(
                    r"\bError invoking NCCL: |\bNCCL: [^\r\n]*?\. Set NCCL_DEBUG=WARN for detail\.|Collective ops is aborted by: failed to connect to all addresses",
                    &[
                        "tensorflow/nccl_manager/error-invoking-nccl",
                        "tensorflow/nccl_manager/nccl-set-debug-warn",
                        "tensorflow/collective/aborted-failed-to-connect",
                    ],
                ),
                pat(
                    r"\b(?P<op>ncclCommInitRank|ncclAllReduce|ncclGetAsyncError) failed: |\bNCCL async error: ",
                    &["horovod/nccl/*"],
                ),
                pat(r"\bNCCL_ERROR_(?P<error>[A-Z_]+): ", &["cupy/nccl/*"]),
                // Ray re-raises a task's CuPy NcclError (`ray.util.collective`) under its own name.
                pat(r"\bRayTaskError\(NcclError\)", &["ray/exceptions/ray-task-error-nccl"]),
                pat(r"\bNCCL error\(\d+\), |\bNccl error, ", &["paddle/enforce/*"]),
                // caffe2's NCCL op (CAFFE_NCCL_CHECK), file and line printed without a separator.
                pat(r"\bError at: \S+?\d+: ", &["caffe2/nccl/error-at"]),
                pat(r"\] got exception in all reduce -- skipping remaining: ", &["torchft/manager/allreduce-exception"]),
                // Legate (cuNumeric, legate.sparse, legate-boost): its NCCL check exits the process.
                pat(r"\bInternal NCCL failure with error ", &["legate/comm/*"]),
                // TensorFlow's collective executor aborting on an internal or unavailable status
                // (not OUT_OF_RANGE, the end of an input, which is routine).
                pat(
                    r"\bBaseCollectiveExecutor::StartAbort (?:INTERNAL|Internal|UNAVAILABLE|Unavailable): ",
                    &["tensorflow/collective/startabort-*"],
                ),
                // Rust bindings: cudarc's NcclError prints only its name (vLLM.rs and other
                // candle users unwrap it); Meta's monarch prints the result's name.
                pat(
                    r"`Err` value: NcclError\b|\bErr\(NcclError\b|\bError: NcclError\b|\bNcclError\((?:NcclError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError|InProgress|UnhandledCudaError)\)|\ba NCCL-level error: ",
                    &["cudarc/nccl/*", "cudarc-downstream/nccl/*", "monarch/nccl/*"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "framework-collective-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "A framework's own collective or rendezvous timed out: vLLM's stateless process group barrier, Ray's collective rendezvous and NCCL unique-id exchange, torchft's process group and futures, XLA's coordination service (JAX, TensorFlow: barriers, key-value gets, task registration, the client's connect, the shutdown barrier), PaddlePaddle's comm-task watchdog and TCPStore",
            example: "RuntimeError: Unable to meet other processes at the rendezvous store",
            patterns: &[
                pat(r"\bBarrier (?:departure )?timed out after [\d.]+ seconds", &["vllm/stateless-pg/*"]),
                pat(
                    r"Unable to meet other processes at the rendezvous store|Unable to get the NCCLUniqueID from the store within (?P<stuck_s>\d+) seconds",
                    &["ray/collective/*"],
                ),
                pat(
                    r"\baborting after \d+:\d+:\d+(?:\.\d+)?!|\bfuture did not complete within \d+:\d+:\d+",
                    &["torchft/process_group/aborting-after-timeout", "torchft/futures/future-timeout"],
                ),
                pat(r"DEADLINE_EXCEEDED: Connect\(\) timed out after ", &["jax/client/connect-timed-out"]),
                // XLA's coordination service (JAX multi-host, TensorFlow): a barrier, a key-value
                // get or the tasks' registration ran out of time, the client gave up connecting,
                // the shutdown barrier failed; a replica's execution stopped on a deadline.
                pat(
                    r"DEADLINE_EXCEEDED: (?:Barrier timed out\. (?:Barrier_id|Id): |GetKeyValue\(\) timed out with key: )|\bGetting local topologies failed: |\bStopping coordination service as (?:cluster registration failed|shutdown barrier timed out)|\bCluster registration failed with error: |\bConnect\(\) failed after -?\d+ retries in |\bFailed to connect to distributed JAX controller: ",
                    &[
                        "jax/coordination/barrier-timed-out*",
                        "jax/coordination/get-key-value-timed-out",
                        "jax/topology/local-topologies-failed",
                        "jax/coordination/cluster-registration-failed",
                        "jax/coordination/stopping-cluster-registration-failed",
                        "jax/coordination/stopping-shutdown-barrier-timed-out*",
                        "jax/client/connect-failed-after-retries",
                        "jax/client/failed-to-connect-controller",
                    ],
                ),
                pat(
                    r"\bShutdown barrier (?:in coordination service has failed|has failed\.|has been passed with status: '[^'\r\n]*', but this task is not at the barrier yet)|\bExecution of replica -?\d+ failed: DEADLINE_EXCEEDED: ",
                    &["jax/coordination/shutdown-barrier-*", "xla/pjrt/execution-replica-deadline-exceeded"],
                ),
                // PaddlePaddle's comm-task watchdog (a collective that never started or never
                // finished in its timeout) and its TCPStore master waiting for the workers.
                pat(
                    r"\bFind timeout (?:init but not start|start but not finish) task: ?|\b_timeout:-?\d+ elapsed:(?P<stuck_s>\d+) \(elapsed > _timeout\)=1",
                    &["paddle/comm_task/timeout-*", "paddle/store/tcpstore-master-timeout"],
                ),
            ],
            unless: &[],
        },
        // PyTorch's `ucc` backend (ProcessGroupUCC): a UCC call that failed (TORCH_UCC_CHECK's
        // `…, error code N: status, system error code N`) or its error log.
        Builtin {
            name: "pytorch-ucc-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "PyTorch's `ucc` backend (ProcessGroupUCC) failed: a UCC call (context, team, collective init or post) returned an error, or it logged an error",
            example: "RuntimeError: [/var/lib/jenkins/workspace/torch/csrc/distributed/c10d/ProcessGroupUCC.cpp:496] [Rank 0][ProcessGroupUCC-0][READY]failed to post triggered collective, error code -6: Unhandled error, system error code 0",
            patterns: &[pat(
                r"\[ProcessGroupUCC--?\d+\]\[\w+\](?:\[ERROR\] |[^\r\n]*?, error code -?\d+: [^\r\n]*?, system error code -?\d+)",
                &["pytorch/ProcessGroupUCC/*"],
            )],
            // Tearing the team down (`ucc team destroy error`) is not the failure.
            unless: &[r"\[ProcessGroupUCC--?\d+\]\[FINALIZE\]"],
        },
    ],
};
