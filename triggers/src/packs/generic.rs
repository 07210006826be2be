//! The `generic` pack: the shapes every RDMA program's failure reports share, for
//! the programs no other pack knows. A failed call of the verbs, rdma_cm or
//! libfabric API names the call (`ibv_post_send failed`, `Fail to ibv_post_send:
//! Cannot allocate memory`, `rdma_getaddrinfo: No such device`, `fi_getinfo()
//! failure`); a queue pair that goes to the error state, or a verbs object that
//! cannot be set up, says so in a few fixed words; a UCX application passes on
//! UCX's own status strings. The names come from the API
//! headers (`infiniband/verbs.h`, `rdma/rdma_cma.h`, `rdma/fabric.h` and
//! `rdma/fi_*.h`), the wordings from the programs cited in
//! `triggers/formats/generic.tsv`.
//!
//! Every trigger here is a fallback ([`crate::TriggerDef::fallback`]): it fires
//! only on a line that no specific trigger fires on, so a line NCCL, UCX or
//! perftest already explains keeps its own trigger and class. Lines at a debug or
//! information level, and retries in progress, are vetoed.

use super::{pat, Builtin, Fallbacks, Table, PRE};

/// Levels and states that are not failures (yet).
const NOT_A_FAILURE: &[&str] = &[
    r"NCCL INFO|<info>|<debug>|<trace>|\*(?:DEBUG|INFO)\*",
    // UCX's levels below WARN: DIAG is what it logs while probing transports and devices
    // (the `ucx` pack fires on the DIAG lines that are failures).
    r"\bUCX +(?:DIAG|INFO|DEBUG|TRACE) ",
    r"(?i)\bretrying\b|\bwill retry\b|\bfalling back\b|\bfall back\b|\bcontinuing\b",
    // A program saying it ignores an event (CCI's `ignoring RDMA_CM_EVENT_UNREACHABLE event`).
    r"(?i)\bignoring\b",
    // EFA's address vector evicts an address handle to make room and tries again.
    r"AV insertion\. Attempting to evict AH entry",
    // UCX probes DC support by creating a DCT; a failure there is logged at debug level.
    r"ibv_modify_qp\(DCT",
    // The NCCL OFI plugin's own lines belong to the `nccl-ofi` pack (a failed
    // `fi_getinfo` of one provider is how it probes).
    r"NET/OFI",
    // A feature turned off and gone on without (libfabric's `MR cache init failed:
    // … MR caching disabled.`).
    r"\bdisabled\.?\s*$",
    // libfabric without gdrcopy (its CUDA support goes on without it): warn level, healthy
    // runs. And the sockets provider's connection management (`::sockets:ep_ctrl:`),
    // whose thread races the close of every healthy connection (`failed to unmonitor fd
    // 15: -9`, `failed to read from fd: Bad file descriptor`, `io failed for fd 16`; seen
    // at random in `tests/healthy_stacks.rs`): a lost peer there surfaces in the
    // application's own error.
    r"<warn> (?:gdr_open failed!|gdrcopy_dl_hmem_init failed!|gdrcopy initialization failed!)|::sockets:ep_ctrl:",
];

/// What follows a failed call's name: a failure word, or a null or error return.
macro_rules! failed {
    () => {
        r"(?i:fail(?:ed|ure|s)?\b|error\b|returned (?:null|nil|-?[1-9]))"
    };
}

/// The `strerror` texts a call's report ends with (`perror` style).
macro_rules! strerror {
    () => {
        r"(?P<error>Invalid argument|Cannot allocate memory|No such device|No such file or directory|Operation not permitted|Permission denied|Resource temporarily unavailable|Connection timed out|Connection refused|Connection reset by peer|No route to host|Network is unreachable|Broken pipe|Input/output error|Bad address|Device or resource busy|No space left on device|Operation not supported|Function not implemented|Protocol not supported|No data available|Address already in use|Cannot assign requested address|Too many open files|Out of memory|Unknown error -?\d+)"
    };
}

/// The verbs calls that set up or move data (and their experimental `ibv_exp_`
/// forms); not the teardown ones (`destroy`, `dealloc`, `dereg`, `free`, `close`) nor
/// `ibv_fork_init`, whose failures healthy runs log and carry on.
macro_rules! ibv_call {
    () => {
        r"(?P<op>ibv_(?:exp_)?(?:open_device|get_device_list|get_cq_event|get_async_event|query_[a-z_]+|alloc_[a-z_]+|reg_[a-z_]+|rereg_mr|create_[a-z_]+|modify_[a-z_]+|post_[a-z_]+|poll_cq|req_notify_cq|resize_cq|attach_mcast|bind_mw|advise_mr|import_[a-z_]+|open_xrcd|open_qp|init_ah_from_wc|wr_complete))\b"
    };
}

/// The rdma_cm calls that set up or use a connection (not `rdma_disconnect`, which
/// teardown also calls).
macro_rules! cm_call {
    () => {
        r"(?:\b|\x1b\[[0-9;]*m)(?P<op>rdma_(?:getaddrinfo|create_event_channel|create_id|create_ep|bind_addr|resolve_addr|resolve_route|connect|accept|listen|create_qp|create_srq|get_cm_event|get_request|reg_msgs|reg_read|reg_write|join_multicast|establish|migrate_id|post_send|post_recv|post_write|post_read))\b"
    };
}

/// The libfabric calls that set up or move data.
macro_rules! fi_call {
    () => {
        r"(?:\b|\x1b\[[0-9;]*m)(?P<op>fi_(?:getinfo|fabric|domain|endpoint|scalable_ep|ep_bind|enable|mr_reg|mr_regv|mr_regattr|mr_bind|mr_enable|av_open|av_insert|av_insertsvc|cq_open|cntr_open|eq_open|tsend|tsendv|tsendmsg|tsenddata|tinject|trecv|trecvv|trecvmsg|send|sendv|sendmsg|senddata|inject|recv|recvv|recvmsg|write|writev|writemsg|writedata|read|readv|readmsg|atomic|connect|accept|listen|passive_ep))\b"
    };
}

/// The words that open a failure report naming the call after them (`Fail to
/// ibv_post_send`, `unable to create QP`).
macro_rules! could_not {
    () => {
        r"(?i:fail(?:ed)? to|unable to|couldn'?t|could not|cannot|error (?:-?\d+ )?(?:in|calling|from))"
    };
}

/// [`could_not`] with literals the scan's prefilter can use (a pattern made only of
/// case-insensitive classes would let every line through it).
macro_rules! could_not_cased {
    () => {
        r"(?:[Ff]ail(?:ed)? to|[Uu]nable to|[Cc]ouldn'?t|[Cc]ould not|[Cc]annot)"
    };
}

/// A verbs object being set up (not torn down: `destroy`, `dealloc` and `dereg`
/// failures come with teardown, which healthy runs do too).
macro_rules! setup {
    () => {
        r"(?:modify|create|init(?:iali[sz]e)?|allocate|alloc|register|reg|query|resize|open|bring up|transition|post to)"
    };
}
/// A word that may come between the setup verb and the object (`failed to create
/// extended queue pair`, `Couldn't register GPU MR`).
macro_rules! qualifier {
    () => {
        r"(?:(?:extended|new|GPU|gpu|host|CPU|cpu|device|user|dmabuf|DMA-BUF|RC|UD|UC|XRC|DC|DCT|DCI|send|recv|receive|local|remote) )?"
    };
}
macro_rules! object {
    () => {
        r"(?:(?:rdma |RDMA |ib |IB |verbs |ibv )?(?:qp|QP|cq|CQ|srq|SRQ|pd|PD|mr|MR|ah|AH|xrcd|XRCD|memory region|completion queue|queue pair|protection domain|address handle|comp(?:letion)? channel|shared receive queue)s?)"
    };
}

pub(super) static GENERIC: Table = Table {
    name: "generic",
    summary: "any program's report of a failed verbs, rdma_cm or libfabric call, of a queue pair gone to error or a verbs object that cannot be set up, of a UCX operation failed with UCX's own fatal status, of any UCX error line outside its intra-node transports, or of a kernel task hung for minutes; fires only where no other trigger does",
    fallbacks: Fallbacks::All,
    rows: &[
        Builtin {
            name: "verbs-call-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "a program reports that a libibverbs call failed (`ibv_post_send failed`, `Fail to ibv_post_send: Cannot allocate memory`, `ibv_reg_mr returned null`)",
            example: "2025-10-15T06:49:33.973431Z :BLOCKSTORE_RDMA ERROR: ibv_post_recv failed with error 12: Cannot allocate memory",
            patterns: &[
                pat(
                    concat!(ibv_call!(), r"(?:\(\))?(?: \([\w -]{1,24}\))?:? ", failed!()),
                    &["generic/verbs/failed/*", "libfabric/efa/create-ah-failed-av-insertion-errno"],
                ),
                // The RDMA_RC_example's wording, copied with the buffer's name in it
                // (omnireduce: `ibv_reg_mr cuda_comm_buf failed with mr_flags=7`).
                pat(
                    r"\bibv_reg_mr [a-z]\w{0,30}_\w{0,30} failed with mr_flags=",
                    &["generic/verbs/failed/reg-mr-named-buffer"],
                ),
                pat(
                    concat!(ibv_call!(), r"(?:\(\))?(?: [A-Z]{2,5} -> [A-Z]{2,5})?: ", strerror!()),
                    &["generic/verbs/strerror/*"],
                ),
                pat(
                    concat!(could_not!(), r" (?:call )?", ibv_call!()),
                    &["generic/verbs/fail-to/*", "brpc/rdma/post-recv"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "rdma-cm-call-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "a program reports that a librdmacm call failed (address or route resolution, connect, listen, event channel), or the CM rejected or could not reach the peer",
            example: "rdma_getaddrinfo: No such device",
            patterns: &[
                pat(
                    concat!(cm_call!(), r"(?:\(\))?:? ", failed!()),
                    &["generic/rdma_cm/failed/*"],
                ),
                pat(
                    concat!(cm_call!(), r"(?:\(\))?: ", strerror!()),
                    &["generic/rdma_cm/strerror/*"],
                ),
                pat(
                    r"\bRDMA_CM_EVENT_(?P<event>REJECTED|UNREACHABLE|CONNECT_ERROR|ROUTE_ERROR|ADDR_ERROR)\b|\bCheck failed: 0 OnEvent: unknown event \d+",
                    &["generic/rdma_cm/event/*"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "libfabric-call-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "a program reports that a libfabric call failed (`fi_getinfo() failure`, `fi_mr_reg failed`, `fi_tsend error`)",
            example: "[0]  # na_ofi_getinfo(): fi_getinfo failed, rc: -61(No data available).",
            patterns: &[
                pat(
                    concat!(fi_call!(), r"(?:\(\)| ?\(\w+\))?:?(?: call)? ", failed!()),
                    &["generic/libfabric/failed/*"],
                ),
                // libfabric's own log at warn level saying something failed, in a provider no
                // `libfabric` trigger knows the words of.
                pat(
                    r"(?:\b|\x1b\[[0-9;]*m)libfabric:[^<\s]*\(\):\d+<warn> [^\r\n]*?\b(?:failed|[Ff]ailure|[Uu]nable to)\b",
                    &["generic/libfabric/warn-failed/*"],
                ),
                // fabtests' early examples: a CQ read that returned an error.
                pat(r"\bEvent queue read -\d+ \(", &["generic/libfabric/fabtests/event-queue-read"]),
                // fabtests' FT_PRINTERR: `"%s(): %s:%d, ret=%d (%s)\n"`.
                pat(
                    concat!(fi_call!(), r"\(\): \S+:\d+, ret=(?P<retcode>-\d+) \((?P<error>[^)\r\n]+)\)"),
                    &["generic/libfabric/fabtests/*"],
                ),
                // fabtests' first FT_PRINTERR: the line and the return value, no file.
                pat(
                    concat!(fi_call!(), r"\(\): \d+, (?P<retcode>-\d+) \((?P<error>[^)\r\n]+)\)"),
                    &["generic/libfabric/fabtests/getinfo-v1"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "ucx-status-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "a UCX application reports an operation or endpoint that failed with one of UCX's own fatal statuses (`Destination is unreachable`, `Connection reset by remote peer`, `Endpoint timeout`, `Operation rejected by remote peer`: `ucs_status_string` of UCS_ERR_UNREACHABLE, _CONNECTION_RESET, _ENDPOINT_TIMEOUT, _REJECTED)",
            example: "error handling callback was invoked with status -6 (Destination is unreachable)",
            patterns: &[
                pat(
                    r"(?i:fail(?:ed|ure)?|error|unable to|status -?\d+)\b[^\n]{0,120}?(?P<error>Destination is unreachable|Connection reset by remote peer|Endpoint timeout|Operation rejected by remote peer)",
                    &["generic/ucx-status/*"],
                ),
                // UCX's client/server example (and the programs built from it): the endpoint's
                // error callback, with UCS_ERR_IO_ERROR.
                pat(
                    r"error handling callback was invoked with status -\d+ \((?P<error>Input/output error)\)",
                    &["generic/ucx-status/err-cb-io-error"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "ucx-error-logged",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCX logged that something failed at ERROR level (`failed`, `unable`, `cannot`, `timed out`), or a fatal error (ucs_fatal), in words no UCX trigger knows, except in its intra-node transports (shared memory, CMA, KNEM, XPMEM, CUDA/ROCm copy), which carry no network traffic",
            // openucx/ucx#6334
            example: "[2021-02-13T11:37:50.444Z] [1613216270.230449] [r-vmb-ppc-jenkins:3086 :0]          wireup.c:137  UCX  ERROR failed to send wireup: Unsupported operation",
            patterns: &[pat(
                r"\b\w+\.c:\d+ +(?:UCX +ERROR .*?(?i:fail|unable|cannot|could ?n[o']t|timed out)|(?:UCX +)?Fatal: |(?:UCX +)?Assertion `[^\r\n]*' failed)",
                &["generic/ucx-log/ucs-error", "generic/ucx-log/ucs-fatal", "generic/ucx-log/ucs-assertion*"],
            )],
            unless: &[
                // The IB transports' own ERROR lines: the `ucx` pack knows which of them
                // are failures (completion dumps, async events) and which are context. An
                // assertion or fatal error there is a crash, and fires here.
                r"\b(?:ib_log|ib_mlx5_log|ib_device|rc_verbs|rc_mlx5\w*|dc_mlx5\w*|ud_\w+)\.c:\d+ +UCX +(?:ERROR|WARN|DIAG)\b",
                r"\b(?:mm|posix|sysv|xpmem|knem|cma|cuda_copy|cuda_ipc|rocm_copy|rocm_ipc|gdr_copy|self|sm)_?\w*\.c:\d+ ",
                r"\b(?:shm_open|shmget|xpmem_|knem|process_vm_readv|cuMem|cuda|hsa_)",
            ],
        },
        Builtin {
            name: "ib-management-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "infiniband-diags and libibmad (ibnetdiscover, ibqueryerrors, smpquery, perfquery, …) report that a management query failed: `iberror: failed: …`, `ibwarn: … failed`, or a MAD that came back with a bad status",
            // infiniband-diags' iberror() and libibmad's IBWARN
            example: "ibwarn: [298726] mad_rpc_open_port: client_register for mgmt 1 failed",
            patterns: &[pat(
                r"(?:\b|\x1b\[[0-9;]*m)(?:iberror: (?:\[\d+\] )?(?:\w+: )?failed: |(?:ibwarn|ibpanic): \[\d+\] \w+: [^\r\n]*?\bfailed\b)|\bumad \(DR path [^)]*\) bad status (?P<status>\d+); ",
                &["generic/ib-management/*"],
            )],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "qp-error-or-setup-failed",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "a queue pair went to the error state, or a QP, CQ, PD or MR could not be created, modified or registered (the verbs examples' `failed to modify QP state to RTR`, rxe's `qp#17 moved to error state`)",
            example: "[    7.345365] rdma_rxe: qp#17 moved to error state",
            patterns: &[
                pat(
                    r"\b(?:qp|QP) ?#? ?(?P<qp>0x[0-9a-fA-F]+|-?\d+)? ?(?:moved|changed|transitioned|went|switched) to:? (?:the )?(?:error|ERROR|IBV_QPS_ERR|ERR)\b",
                    &["generic/qp/error-state/*"],
                ),
                pat(
                    concat!(could_not_cased!(), " ", setup!(), r" (?:the |a |an )?", qualifier!(), object!(), r"\b"),
                    &[
                        "generic/qp/setup-failed/*",
                        "brpc/rdma/modify-qp-*",
                        "brpc/rdma/create-qp",
                        "brpc/rdma/create-send-cq",
                        "brpc/rdma/create-recv-cq",
                        "brpc/rdma/create-cq",
                        "brpc/rdma/create-comp-channel",
                        "brpc/rdma/allocate-pd",
                    ],
                ),
                pat(
                    r"\b(?:init|create|modify|register|reg|alloc|allocate|resize|query)[ _](?:qp|QP|cq|CQ|srq|SRQ|pd|PD|mr|MR)(?:/(?:qp|QP|cq|CQ|srq|SRQ))? failed",
                    &["generic/qp/setup-word-failed/*"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
        Builtin {
            name: "kernel-task-hung",
            class: "other_hang",
            pre_s: PRE,
            description: "the kernel's hung-task detector saw a task blocked (uninterruptible) for minutes, or its lockup detector a CPU stuck: a driver, file system or device that stopped answering; back-dated by the seconds it names",
            // LINBIT/drbd#58 (DRBD over RDMA, shutdown)
            example: "Jun 12 15:28:33 os-hv-am-4 kernel: [  489.615298] INFO: task drbdsetup:3646 blocked for more than 120 seconds.",
            patterns: &[
                pat(
                    r"\bINFO: task .+?:\d+ blocked for more than (?P<stuck_s>\d+) seconds",
                    &["generic/kernel/hung-task"],
                ),
                // The lockup detectors: a CPU that did not schedule for the soft-lockup
                // threshold (back-dated by its seconds), or did not take timer interrupts.
                pat(
                    r"BUG: soft lockup - CPU#-?\d+ stuck for (?P<stuck_s>\d+)s!|Watchdog detected hard LOCKUP on cpu -?\d+",
                    &["generic/kernel/soft-lockup", "generic/kernel/hard-lockup"],
                ),
            ],
            unless: NOT_A_FAILURE,
        },
    ],
};
