//! The `libfabric` pack: libfabric's providers and fabtests, and oneCCL, the collective
//! library that runs over them.

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// A verbs completion status of retry exceeded, as rxm, EFA and fabtests pass it on.
/// `pub(super)`: the `verbs` pack's generic retry pattern must veto these lines.
pub(super) const RETRY: &str = r"(?:prov_err: |provider errno: -?\d+ \(|\(Provider errno: -?\d+\) : |msg cq error info: |Work completion status: )(?P<error>(?:transport|RNR) retry counter exceeded)";
/// rxm's `fi_cq_readerr` of a flushed (canceled) work request: debug level in v1.9.0.
const CQ_CANCELED: &str = r"fi_cq_readerr: err: Operation canceled \(";
/// rxm's `fi_eq_readerr` of a rejected connection: expected during connection setup
/// (simultaneous connects), rate-limited since v1.15.2.
const EQ_CONNREFUSED: &str = r"fi_eq_readerr: err: Connection refused \(";

/// libfabric (`verbs`, `ofi_rxm`, `efa` providers and fabtests): completion, connection
/// and setup failures as libfabric logs them (`triggers/formats/ucx_libfabric.tsv`,
/// `libfabric/…` rows; `FI_LOG_LEVEL=warn`, the default, prints them).
pub(super) static LIBFABRIC: Table = Table {
    name: "libfabric",
    summary: "libfabric verbs/rxm/EFA provider warnings and fabtests errors: completion errors, EFA internal errors, CM and connection failures, QP setup failures; oneCCL over libfabric: transport, worker and key-value store failures",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "libfabric-completion-error",
            class: "rdma_verbs_error",
            // Often transport retry exceeded (status 12), which libfabric prints only inside
            // the error text: the retry-exceeded window for all of them. (A trigger of its
            // own would need an example line, and no published libfabric line has status 12.)
            pre_s: RETRY_PRE,
            description: "libfabric: a completion failed (transport or RNR retry exceeded, fi_cq_readerr, rxm `Invalid state!`, EFA rx/tx error or internal error and abort, lost completion, CQ poll/arm failure) or a fabtests completion wait failed or timed out",
            // ofiwg/libfabric#5738
            example: "libfabric:18218:ofi_rxm:cq:rxm_cq_read_write_error():1236<warn> fi_cq_readerr: err: Input/output error (5), prov_err: remote access error (10)",
            patterns: &[
                // fi_pingpong (util/pingpong.c): a failed completion.
                pat(r"\[error\] \S*util/pingpong\.c:\d+ *: cq_readerr: ", &["libfabric/pingpong/cq-readerr"]),
                pat(
                    RETRY,
                    &[
                        "libfabric/rxm/fi-cq-readerr",
                        "libfabric/rxm/msg-cq-error-info-*",
                        "libfabric/efa/work-completion-status-v1.11",
                        "libfabric/fabtests/cq-readerr-*",
                    ],
                ),
                pat(
                    r"fi_cq_readerr: err: (?:(?P<error>[^(,]+?) \()?(?P<retcode>-?\d+)\)?, prov_err: ",
                    &[
                        "libfabric/rxm/fi-cq-readerr-v1.9.0",
                        "libfabric/rxm/fi-cq-readerr",
                        "libfabric/efa/rxr-fi-cq-readerr",
                        // oneCCL's OFI transport passes libfabric's error on as it is.
                        "oneccl/atl-ofi/cq-readerr*",
                    ],
                ),
                pat(r"\b[Uu]nable to fi_cq_readerr\b", &["libfabric/rxm/unable-to-cq-readerr"]),
                // Generic on its own: only with libfabric's header (`…<warn> `) before it.
                pat(r"libfabric:[^ ]*<warn> Invalid state!", &["libfabric/rxm/invalid-state"]),
                pat(r"msg cq error info: (?P<error>.+)", &["libfabric/rxm/msg-cq-error-info-*"]),
                pat(
                    r"rxr_cq_(?:handle|write)_[rt]x_error: err: (?P<retcode>-?\d+), prov_err: (?P<error>.+?) \(-?\d+\)",
                    &["libfabric/efa/rxr-cq-*"],
                ),
                pat(
                    r"(?:EFA provider internal [rt]xe failure |libfabric:[^ ]*<warn> )err: (?P<retcode>-?\d+), message: (?P<error>.*) \(-?\d+\)",
                    &[
                        "libfabric/efa/internal-rxe-failure",
                        "libfabric/efa/internal-txe-failure",
                        "libfabric/efa/ope-err-message-v1.18",
                    ],
                ),
                pat(
                    r"Libfabric EFA provider has encountere?d an internal error:|Libfabric error: \(-?\d+\) |EFA internal error: \(-?\d+\) |Your application will now abort\(\)\.",
                    &["libfabric/efa/internal-error-*"],
                ),
                pat(
                    r"Writing error (?:to EQ: err: |.+? to EQ\.)|Unable to write to EQ\b|Writing eq error for [rt]xe from internal operations",
                    &[
                        "libfabric/efa/writing-error-to-eq-*",
                        "libfabric/efa/unable-to-write-eq-*",
                        "libfabric/efa/writing-eq-error-for-*",
                    ],
                ),
                pat(r"Work completion status: (?P<error>.+)", &["libfabric/efa/work-completion-status-*"]),
                pat(r"Post send failed - (?P<retcode>-?\d+)", &["libfabric/verbs/post-send-failed"]),
                pat(
                    r"Unable to save completion, completion lost!|Unknown poll error: check revents|ibv_req_notify_cq error: (?P<retcode>-?\d+)",
                    &[
                        "libfabric/verbs/completion-lost",
                        "libfabric/verbs/unknown-poll-error",
                        "libfabric/verbs/req-notify-cq-error",
                    ],
                ),
                pat(
                    r"\[error\] (?:-?\d+:)?fabtests:\S+:-?\d+: cq_readerr ",
                    &["libfabric/fabtests/cq-readerr-*"],
                ),
                pat(
                    r"(?:fi_cq_readerr|fi_cq_read/sread|ft_get_cq_comp)\(\): \S+:-?\d+, ret=(?P<retcode>-?\d+)",
                    &[
                        "libfabric/fabtests/printerr-fi-cq-readerr",
                        "libfabric/fabtests/printerr-fi-cq-read-sread",
                        "libfabric/fabtests/printerr-ft-get-cq-comp",
                    ],
                ),
                pat(r"\d+s timeout expired\s*$", &["libfabric/fabtests/timeout-expired"]),
            ],
            unless: &[CQ_CANCELED],
        },
        Builtin {
            name: "libfabric-connection-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "libfabric: a connection failed (RDMA CM error event or reject, rdma_connect/resolve failure, rxm fi_eq_readerr/fi_connect, EFA handshake failure, unresponsive peer, address handle creation) or a fabtests EQ read failed",
            // ofiwg/libfabric#7336
            example: "172.31.9.77     [error] fabtests:common/shared.c:2546: eq_readerr (Provider errno: 0) : Success",
            patterns: &[
                pat(
                    r"CM error event (?P<event>.+?), status (?P<status>-?\d+)",
                    &["libfabric/verbs/cm-error-event"],
                ),
                pat(
                    r"\brdma_(?:connect|resolve_route) failed(?::? (?P<error>[A-Z][^(]*?) ?\((?P<retcode>-?\d+)\)|: (?P<status>-?\d+))",
                    &["libfabric/verbs/rdma-connect-failed", "libfabric/verbs/rdma-resolve-route-failed-*"],
                ),
                pat(
                    r"<warn> rdma_(?:resolve_addr|accept): (?P<error>[A-Z][^(]*?) ?\((?P<retcode>-?\d+)\)",
                    &["libfabric/verbs/warn-errno-rdma-resolve-addr", "libfabric/verbs/warn-errno-rdma-accept"],
                ),
                pat(
                    r"Stale/invalid CM reject -?\d+ received|Non-application generated CM Reject -?\d+",
                    &["libfabric/verbs/stale-cm-reject", "libfabric/verbs/non-app-cm-reject"],
                ),
                pat(
                    r"fi_eq_readerr: err: (?P<error>[^(]+?) \((?P<retcode>-?\d+)\), prov_err: ",
                    &["libfabric/rxm/fi-eq-readerr"],
                ),
                pat(
                    r"\bunable to fi_eq_readerr: -?\d+|\bfi_(?:eq_readerr|connect)(?P<error>[A-Z][^(]*?) ?\((?P<retcode>-?\d+)\)",
                    &[
                        "libfabric/rxm/unable-to-eq-readerr",
                        "libfabric/rxm/warn-err-fi-eq-readerr",
                        "libfabric/rxm/warn-err-fi-connect",
                    ],
                ),
                pat(
                    r"\[error\] (?:-?\d+:)?fabtests:\S+:-?\d+: eq_readerr |fi_eq_readerr\(\): \S+:-?\d+, ret=(?P<retcode>-?\d+)",
                    &["libfabric/fabtests/eq-readerr-*", "libfabric/fabtests/printerr-fi-eq-readerr"],
                ),
                pat(
                    r"The peer of address (?P<peer>.+?) becomes unresponsive|Failed to post HANDSHAKE to peer ",
                    &["libfabric/efa/peer-becomes-unresponsive", "libfabric/efa/handshake-post-failed-*"],
                ),
                pat(r"ibv_create_ah failed(?:! errno: | with EINVAL\.)", &["libfabric/efa/create-ah-failed-*"]),
                // fi_pingpong (util/pingpong.c): its control connection or its EQ.
                pat(
                    r"\[error\] \S*util/pingpong\.c:\d+ *: (?:failed to connect: |ctrl/read: no data or remote connection closed|eq_readerr: )",
                    &[
                        "libfabric/pingpong/failed-to-connect",
                        "libfabric/pingpong/ctrl-read-closed",
                        "libfabric/pingpong/eq-readerr",
                    ],
                ),
                // EFA (2.4+ and main): address-handle and connection inserts that failed, a
                // peer that aborted a message (PEER_ERROR_PKT), a peer that could not be
                // allocated; rxm's lazy multi-endpoint connect.
                pat(
                    r"[Ff]ailed to post PEER_ERROR_PKT err=|PEER_ERROR_PKT TX failed asynchronously|Received PEER_ERROR_PKT \(op_id=|Peer-abort marked on rxe |Unable to allocate overflow entry for aborted msg_id|\) for unsolicited write recv|Failed to insert fi_addr \d+ into shm provider's AV|Failed to insert connection for fi_addr \d+ into (?:array|reverse AV)|Cannot allocate peer for addr \d+|lazy connect of ep \d+ failed",
                    &[
                        "libfabric/efa/peer-error-pkt-post-failed",
                        "libfabric/efa/sender-abort-peer-error-pkt-post-failed",
                        "libfabric/efa/peer-error-pkt-tx-failed-async",
                        "libfabric/efa/received-peer-error-pkt",
                        "libfabric/efa/peer-abort-marked-on-rxe",
                        "libfabric/efa/overflow-entry-alloc-failed-abort-marker",
                        "libfabric/efa/unsolicited-write-recv-error",
                        "libfabric/efa/insert-*",
                        "libfabric/efa/cannot-allocate-peer-for-addr",
                        "libfabric/rxm/lazy-connect-failed-truncating-conn",
                    ],
                ),
            ],
            unless: &[EQ_CONNREFUSED],
        },
        Builtin {
            name: "libfabric-setup-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "libfabric: the verbs provider could not create or modify a QP, create a CM id or query a port/GID, or a provider assertion failed; the cxi provider (HPE Slingshot) lost its NIC, a request, a flow-control peer, its link or its event queue, or the Slingshot retry handler gave up on a connection",
            // ofiwg/libfabric#7368
            example: "libfabric:22102:1638393161:verbs:ep_ctrl:vrb_ep_enable():884<warn> rdma_create_qp: Cannot allocate memory (12)",
            patterns: &[
                pat(
                    r"<warn> (?:ibv_create_qp|ibv_modify_qp|rdma_create_qp|rdma_create_id|ibv_query_port|ibv_query_gid): (?P<error>[A-Z][^(]*?) ?\((?P<retcode>-?\d+)\)",
                    &[
                        "libfabric/verbs/warn-errno-ibv-create-qp",
                        "libfabric/verbs/warn-errno-ibv-modify-qp",
                        "libfabric/verbs/warn-errno-rdma-create-qp",
                        "libfabric/verbs/warn-errno-rdma-create-id",
                        "libfabric/verbs/warn-errno-ibv-query-port",
                        "libfabric/verbs/warn-errno-ibv-query-gid",
                    ],
                ),
                pat(
                    r"Unable to create rdma qp: (?P<error>.+?) \((?P<retcode>-?\d+)\)",
                    &["libfabric/verbs/unable-to-create-rdma-qp"],
                ),
                // A provider's assert() (debug builds): glibc's `prog: file:line: func:
                // Assertion `…' failed.`, the file under `prov/`.
                pat(
                    r"\bprov/\w+/src/\w+\.c:\d+: \w+: Assertion `[^\r\n]*' failed",
                    &["libfabric/verbs/assertion-failed"],
                ),
                // The cxi provider (HPE Slingshot), 1.21-: no logical NIC (the CXI service is
                // disabled or its VNI not granted; libcxi's test tools print the same),
                // requests completing in error, a command the NIC rejected, a flow-control
                // peer it lost, the interface link going down.
                pat(
                    r"Failed to allocate LNI(?:, ret: -?\d+|: )|\bTXC \(0x[0-9a-fA-F]+(?::\d+)+\):: Fatal, FC peer not found: |\bRequest dest_addr: -?\d+ caddr\.nic: 0X[0-9a-fA-F]+ caddr\.pid: \d+ (?:rxc_id: \d+ +)?error: |\b(?:Cassini|H/W) Event Queue overflow detected|\bRH: will close sct=\d+(?:\.| because| when)|\bRXC \(0x[0-9a-fA-F]+:\d+\) PtlTE \d+: Request error: |\bCommand failure: cq=\d+ target=\d+ fail_loc=|\bInterface cxi\d+ link down\.",
                    &[
                        "libfabric/cxi/lni-alloc-failed",
                        "libcxi/utils/failed-to-allocate-lni",
                        "libfabric/cxi/txc-request-error*",
                        "libfabric/cxi/eq-overflow-hpe",
                        "libcxi/retry_handler/*",
                        "libfabric/cxi/hw-eq-overflow",
                        "libfabric/cxi/rxc-request-error",
                        "libfabric/cxi/command-failure",
                        "libfabric/cxi/fc-peer-not-found",
                        "libfabric/cxi/interface-link-down",
                    ],
                ),
            ],
            unless: &[],
        },
        // oneCCL (Intel's collective library, under PyTorch's `ccl` and `xccl` backends)
        // over libfabric: `|CCL_ERROR| file.cpp:123 func: text` (2021.6 on; `|ERROR|` before,
        // and in 2021.1–2021.3 two spaces and no colon before the text), its exceptions as
        // `oneCCL: file.cpp:123 func: EXCEPTION: text`. A failed libfabric call prints the
        // call on one line and ` fails with ret: N, strerror: …` on the next, without the
        // header: the first line fires, the second is its context. Its `fi_cq_readerr` is
        // `libfabric-completion-error`'s.
        Builtin {
            name: "oneccl-transport-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "oneCCL's OFI transport failed: a libfabric call it makes (fi_domain, fi_scalable_ep, fi_mr_regattr, fi_tsendmsg…) returned an error, no provider or network provider could be opened, the transport could not be initialised, an endpoint could not connect, or a send or receive of a collective's schedule failed",
            // intel/intel-extension-for-pytorch#810
            example: "2025:05:23-19:04:20:(168952) |CCL_ERROR| atl_ofi_helper.cpp:1204 atl_ofi_prov_init: fi_scalable_ep(prov->domain, info, &prov->sep, nullptr)",
            patterns: &[
                pat(
                    r"\|(?:CCL_)?ERROR\| \S+:\d+ +\w+:? (?:(?P<op>fi_\w+)\(|can't find suitable provider|can not open network providers\s*$|can't init provider (?P<provider>\S+)|fi_getinfo error: ret -?\d+|can't create providers for name |atl_ofi_open_nw_provs failed with status|atl_ofi_prov_eps_connect error|open_providers\(|condition transport->init\(.*?\) == ATL_STATUS_SUCCESS failed)|\(-?\d+\): \S+: @ \S+:\d+:\w+\(\) can't find suitable provider",
                    &[
                        "oneccl/atl-ofi/fi-*",
                        "oneccl/atl-ofi/no-suitable-provider*",
                        "oneccl/atl-ofi/cannot-*",
                        "oneccl/atl-ofi/open-*",
                        "oneccl/atl-ofi/eps-connect-error",
                        "oneccl/atl/init-transport-condition",
                    ],
                ),
                pat(
                    r"\boneCCL: \S+?:(?:\d+ \w+|\w+:\d+): EXCEPTION: (?:unable to read error from cq|OFI function error|failed to register mr, ret: -?\d+|failed to initialize ATL|init transport failed|(?P<op>[\w ]+?) entry failed\. atl_status: (?P<error>\w+))|\bfailed to initialize ATL\s*$",
                    &[
                        "oneccl/atl-ofi/cq-readerr-unreadable",
                        "oneccl/atl-ofi/ofi-function-error-exc",
                        "oneccl/atl-ofi/mr-register-failed-exc",
                        "oneccl/atl/failed-to-initialize-atl-*",
                        "oneccl/atl/init-transport-failed-exc",
                        "oneccl/sched/*",
                        "oneccl/exec/worker-caught-send-entry-failed",
                        "oneccl/exec/worker-caught-recv-entry-failed",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "oneccl-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "oneCCL failed outside its transport: a worker thread caught an exception or could not be started, a Level Zero (GPU driver) call failed, the MPI thread level is too low, or its key-value store's socket failed",
            // intel/torch-ccl#54
            example: "2023:11:28-16:35:45:(35980) |CCL_ERROR| base_thread.cpp:36 start: error while creating worker thread #0 pthread_create returns 22",
            patterns: &[
                pat(
                    r"\|(?:CCL_)?ERROR\| \S+:\d+ +\w+:? (?:worker -?\d+ caught (?:internal |general )?exception|error while creating [\w ]+? thread #-?\d+ pthread_create returns -?\d+|condition workers\.back\(\)->start\(|unexpected MPI thread level: |read/write error: (?P<error>.+))",
                    &[
                        "oneccl/exec/worker-caught-internal-exception",
                        "oneccl/exec/worker-caught-exception",
                        "oneccl/exec/worker-caught-general-exception",
                        "oneccl/exec/worker-caught-ze-error",
                        "oneccl/exec/thread-create-error",
                        "oneccl/exec/start-workers-condition",
                        "oneccl/atl-mpi/thread-level",
                        "oneccl/kvs/read-write-error",
                    ],
                ),
                pat(
                    r"\boneCCL: \S+?:(?:\d+ \w+|\w+:\d+): EXCEPTION: (?:failed to start worker # -?\d+|ze error at (?P<op>\w+), code: (?P<error>\S+))|\bfailed to start worker # -?\d+\s*$",
                    &[
                        "oneccl/exec/failed-to-start-worker-*",
                        "oneccl/ze/*",
                    ],
                ),
            ],
            // A schedule's send or receive that failed, caught on a worker: the transport's.
            unless: &[r"EXCEPTION: [\w ]+? entry failed\. atl_status: "],
        },
        Builtin {
            name: "oneccl-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "oneCCL's key-value store timed out while the ranks set up a communicator: a connection to it, or a key another rank never put",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "2024:03:01-10:00:00:( 4456) |CCL_ERROR| internal_kvs.cpp:520 kvs_init: connection time (121) >= limit (120)",
            patterns: &[pat(
                r"\bconnection time \(\d+\) >= limit \(\d+\)|\bkvs_init: connection error: timeout limit \(\d+ > \d+|\bKVS get error: timeout limit[: ] ?\(?(?:\d+ > \d+|%zu > %zu)",
                &["oneccl/kvs/connection-timeout*", "oneccl/kvs/get-timeout*"],
            )],
            unless: &[],
        },
    ],
};
