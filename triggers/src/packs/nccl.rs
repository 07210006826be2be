//! The `nccl` pack.

use super::{pat, Builtin, Table, PRE, RETRY_PRE};

/// NCCL/RCCL's own WARN lines (`NCCL_DEBUG=WARN` or more) and nccl-tests.
pub(super) static NCCL: Table = Table {
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
                pat(r"NET/IB ?: Got completion from peer (?P<peer>\S+?)<(?P<port>\d+)> with (?:status=|error )(?P<status>12)\b(?:.*?vendor err (?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?", &[]),
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
                pat(r"NET/IB ?: Got completion from peer (?P<peer>\S+?)<(?P<port>\d+)> with (?:status=|error )(?P<status>\d+)(?:.*?vendor err (?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?", &[]),
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
                pat(r"NET/IB ?: (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?Got async event : (?P<event>[^\r\n]+)", &[]),
                pat(r"NET/IB ?: (?P<hca>[\w.-]+):(?P<port>\d+) async fatal event on (?P<object>\w+)[^:]*: (?P<event>[^\r\n]+)", &[]),
                pat(r"NCCL WARN communicator encountered a fatal error(?: \(detected in (?P<detected_in>\w+)\))?", &[]),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-ibverbs-call-failed",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NCCL's call to a verbs function (ibv_create_qp, ibv_modify_qp, …) failed",
            example: "ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out.",
            patterns: &[pat(r"NCCL WARN Call to (?P<verb>ibv_\w+) failed(?: with error (?P<error>[^\r\n]+))?", &[])],
            unless: &[],
        },
        Builtin {
            name: "nccl-socket-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL's bootstrap/proxy/NET-Socket TCP connection failed or was closed by the peer",
            example: "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe",
            patterns: &[
                pat(r"Call to (?P<op>recv|send) from (?P<peer>\S+?)<(?P<port>\d+)> failed : (?P<error>[^\r\n]+)", &[]),
                pat(r"Connection closed by remote peer (?P<peer>[^<\s]+)(?:<(?P<port>\d+)>)?", &[]),
                pat(r"socketStartConnect: Connect to (?P<peer>\S+?)<(?P<port>\d+)> failed : (?P<error>[^\r\n]+)", &[]),
                pat(r"NCCL WARN socketPollConnect(?:.*?\berror (?P<error>[^,]+))?(?:.*?connect to (?P<peer>[\w.-]+):(?P<port>\d+))?", &[]),
                pat(r"NCCL WARN Socket recv failed while polling", &[]),
                pat(r"NCCL WARN socketFinalizeAccept: (?P<error>[^\r\n]+)", &[]),
                pat(r"NCCL WARN Call to connect(?: timeout)? : (?P<error>[^\r\n]+)", &[]),
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
                pat(r"Failed to execute operation (?P<op>\w+) from rank (?P<rank>\d+), retcode (?P<retcode>\d+)", &[]),
                pat(r"NCCL WARN (?P<call>(?:hip|cuda)\w+) failed : (?P<error>[^\r\n]+)", &[]),
                pat(r"NCCL WARN Cuda failure '(?P<error>[^']+)'", &[]),
                pat(r"Test NCCL failure (?P<location>\S+) '(?P<error>[^']*)", &[]),
                pat(r"pid \d+: Test failure (?P<location>\S+)", &[]),
            ],
            unless: &[],
        },
    ],
};
