//! The `pytorch` pack.

use super::{pat, Builtin, Table, PRE};

/// PyTorch's ProcessGroupNCCL (watchdog, heartbeat monitor), c10d and Gloo.
pub(super) static PYTORCH: Table = Table {
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
                pat(r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout(?:: WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?(?:OpType=(?P<op>\w+))?[^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\)(?: ran for (?P<ran_for_ms>\d+) milliseconds)?)?", &[]),
                pat(r"watchdog thread terminated with exception: \[Rank (?P<rank>\d+)\]", &[]),
                pat(r"(?:Rank (?P<rank>\d+)\] )?Timeout at NCCL work: (?P<seq>\d+)", &[]),
                pat(r"(?:Rank (?P<rank>\d+)\] )?Exception \(either an error or timeout\) detected by watchdog at work: (?P<seq>\d+)", &[]),
                pat(r"Received a dump signal due to a collective timeout", &[]),
                pat(r"Some NCCL operations have failed or timed out", &[]),
                pat(r"To avoid data inconsistency, we are taking the entire process down", &[]),
                pat(r"Exception raised from checkTimeout at", &[]),
                pat(r"WorkNCCL\([^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\) timed out in call to wait", &[]),
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
                pat(r"NCCL communicator was aborted on rank (?P<rank>\d+)\.(?:.*?SeqNum=(?P<seq>\d+))?(?:.*?Timeout\(ms\)=(?P<timeout_ms>\d+))?(?:.*?ran for (?P<ran_for_ms>\d+) milliseconds)?", &[]),
                pat(r"NCCL error in: (?P<location>[^,]+), (?P<error>[^,(]+)", &[]),
                pat(r"NCCL error: (?P<error>[^,(]+)", &[]),
                pat(r"\bnccl(?P<code>Remote|System|UnhandledCuda|Internal)Error: ", &[]),
                pat(r"terminate called after throwing an instance of '(?P<exception>c10::DistBackendError|std::runtime_error)", &[]),
                pat(r"watchdog thread terminated with exception: (?P<error>CUDA error[^\r\n]*)", &[]),
                pat(r"Exception raised from checkForNCCLErrorsInternal at", &[]),
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
                pat(r"(?:Rank (?P<rank>\d+)\] )?Heartbeat monitor timed out", &[]),
                pat(r"(?:Rank (?P<rank>\d+)\] )?ProcessGroupNCCL's watchdog got stuck for (?P<stuck_s>\d+) seconds", &[]),
                pat(r"Future for ProcessGroup abort timed out after (?P<timeout_ms>\d+) ms", &[]),
                pat(r"\bF(?:\d{3,8} [\d:.]+(?: \d+)?)? ProcessGroupNCCL\.cpp:\d+\]", &[]),
                pat(r"Rank (?P<rank>\d+)\] ProcessGroupNCCL'\s*$", &[]),
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
                pat(r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>recv|send) operation to complete", &[]),
                pat(r"store->get\('(?P<key>[^']*)'\) got error: Socket Timeout", &[]),
            ],
            unless: &[],
        },
        Builtin {
            name: "pytorch-gloo-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "Gloo TCP pair closed by the peer",
            example: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:28048",
            patterns: &[pat(r"\] Connection closed by peer \[(?P<peer>[^\]]+)\]:(?P<port>\d+)", &[])],
            unless: &[],
        },
    ],
};
