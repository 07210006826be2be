//! The `nccl` pack: NCCL/RCCL's own WARN lines, the error strings NCCL returns
//! (`ncclGetErrorString`) where another program prints them, and nccl-tests.
//!
//! Written from `triggers/formats/nccl.tsv` (every NCCL release's wording of each
//! message) and the nccl-tests/rccl-tests rows of `apps.tsv`. How the rows are told
//! apart:
//! - **`NCCL WARN`, not `NCCL INFO`.** NCCL prints a failure it expects and recovers
//!   from (an optional verbs call, a probe inside `NCCL_DEBUG_NOWARN`) with the same
//!   text under an INFO header, and texts that are generic on their own (`Call to X
//!   failed`, `Cuda failure '…'`, `Allocation failed`, `Could not find …`) also appear
//!   in the copy PyTorch prints after `Last error:` (context, see `ambiguous.tsv`):
//!   those are matched only right after `NCCL WARN `. Stems that only NCCL prints
//!   (`NET/IB : Got completion from peer`, `socketProgressOpt: Call to recv from`,
//!   `[Proxy Service N] Failed to execute operation`) match with or without the
//!   header, so a log without `NCCL_DEBUG=WARN` still fires on them. (No trigger
//!   vetoes `NCCL INFO`: a veto that healthy lines match costs a scan of every line.)
//! - **The more specific wording wins.** `Got async event : port active` is an IB port
//!   coming up (`unless`), `status=12` is retry-exceeded and not a generic completion
//!   error, `no device found matching NCCL_OOB_NET_IFNAME=…, ignoring` is not the
//!   `…, verify NCCL_OOB_NET_IFNAME` error.
//! - **Error strings embedded in someone else's message fire once.** PyTorch's
//!   `NCCL error in: …, unhandled system error` and nccl-tests' `Test NCCL failure …
//!   'internal error …'` fire their own triggers; `nccl-error-string` is a fallback
//!   (it fires only where no specific trigger does) and stands back (`unless`) for
//!   NCCL's own WARN lines that quote a result string (`hostStreamPlanCallback()
//!   failed : …`).
//!
//! Triggers are grouped by failure kind (one incident for the several lines a failure
//! logs): IB completions (retry-exceeded apart, for its longer window), IB async and
//! fatal events, verbs calls, IB device setup, IB protocol mismatches; sockets, proxy,
//! CUDA, communicator/bootstrap/topology, error strings, nccl-tests; and the one hang
//! NCCL reports itself.

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// NCCL/RCCL's own WARN lines (`NCCL_DEBUG=WARN` or more), its error strings and nccl-tests.
pub(super) static NCCL: Table = Table {
    name: "nccl",
    summary: "NCCL/RCCL WARN lines: NET/IB completion errors and async events, verbs calls, sockets, proxy, CUDA, bootstrap/topology; NCCL error strings; nccl-tests failures; the SHARP plugin's CollNet and UCX net plugins",
    // Only where nothing specific fires: a result string quoted by a wrapper
    // with its own trigger (PyTorch, nccl-tests, XLA…) is that trigger's line.
    fallbacks: Fallbacks::Only(&["nccl-error-string"]),
    rows: &[
        Builtin {
            name: "nccl-ib-retry-exceeded",
            class: "nccl_ib_error",
            pre_s: RETRY_PRE,
            description: "NET/IB completion with status 12 (IBV_WC_RETRY_EXC_ERR): the peer stopped ACKing ~30 s earlier",
            example: "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
            patterns: &[pat(
                r"NET/IB\w*(?:/GIN)? ?: ?Got completion (?:from peer (?:(?P<peer>[^\s<]+)(?:<(?P<port>\d+)>)? )?)?with (?:status=(?:[^(=\r\n]*\()?|error )(?P<status>12)\b(?:.*?vendor[ _]err[ =](?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?",
                &[
                    "nccl/net_ib/completion-error-v1",
                    "nccl/net_ib/completion-from-peer*",
                    "nccl/net_ib/gin-completion-from-peer*",
                ],
            )],
            unless: &[],
        },
        Builtin {
            name: "nccl-ib-completion-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB work completion with an error status other than 12 (protection, flush, remote access…), a CQE with error, or the resiliency layer's view of one; the data path of Google's GPUDirect-TCPX/TCPXO net plugins failing the same role (a send or receive timed out, transmit completions stopped, bad segments or control messages, a request left pending)",
            example: "kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)",
            patterns: &[
                pat(
                    r"NET/IB\w*(?:/GIN)? ?: ?Got completion (?:from peer (?:(?P<peer>[^\s<]+)(?:<(?P<port>\d+)>)? )?)?with (?:status=(?:[^(=\r\n]*\()?|error )(?P<status>\d+)(?:.*?vendor[ _]err[ =](?P<vendor_err>\d+))?(?:.*?\bhca (?P<hca>[\w.-]+))?",
                    &[
                        "nccl/net_ib/completion-error-v1",
                        "nccl/net_ib/completion-from-peer*",
                        "nccl/net_ib/gin-completion-from-peer*",
                    ],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?Got CQE with error \((?:.*?qp_num=(?P<qp>\d+))?",
                    &["nccl/net_ib/cqe-with-error*"],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?(?:Unsupported completion status (?P<error>[^(\r\n]*?) ?\((?P<status>\d+)\)|Encountered a stale CQE with error|Failed to initialize a resiliency send request)",
                    &[
                        "nccl/net_ib/res-unsupported-status*",
                        "nccl/net_ib/res-stale-cqe*",
                        "nccl/net_ib/res-send-request-init-failed*",
                    ],
                ),
                // GPUDirect-TCPX and -TCPXO (FasTrak), Google's net plugins on A3 VMs: the data
                // path, the role NET/IB's completions have.
                pat(
                    r"\b(?:send|recv) timeout error -?\d+, |\btx comp timeout poll upper |\breceived -?\d+/-?\d+ segs, failstop|\bcmsg truncated, current msg_controllen |\brequest too many pages -?\d+, failstop|NET/FasTrak [^\r\n]*?: (?:Send|Recv) Test pending request:",
                    &["nccl-tcpx/data/*", "nccl-tcpx/rx/*", "nccl-tcpxo/data/*"],
                ),
            ],
            unless: &[
                r"NET/IB\w*(?:/GIN)? ?: ?Got completion (?:from peer \S+ )?with (?:status=(?:[^(=\r\n]*\()?|error )12\b",
            ],
        },
        Builtin {
            name: "nccl-ib-fatal-event",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB async event (port error, catastrophic error, fatal QP/CQ/SRQ event), a communicator's fatal IB error, or the resiliency layer giving up on a device",
            example: "...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
            patterns: &[
                pat(
                    r"NET/IB ?: (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?Got (?:non-fatal )?async (?:error )?event ?: ?(?P<event>[^\r\n]+)",
                    &[
                        "nccl/net_ib/async-event-v1",
                        "nccl/net_ib/async-event-v2",
                        "nccl/net_ib/async-error-event-v3",
                        "nccl/net_ib/async-nonfatal-event-port-error",
                        "nccl/net_ib/async-nonfatal-event",
                    ],
                ),
                pat(
                    r"NET/IB ?: (?P<hca>[\w.-]+):(?P<port>\d+) (?:async fatal event.*?(?:qpn=(?P<qp>\d+).*?)?: (?P<event>[^\r\n]+)|GID table changed|unknown event type)",
                    &[
                        "nccl/net_ib/async-fatal-*",
                        "nccl/net_ib/async-gid-table-changed",
                        "nccl/net_ib/async-unknown-event",
                    ],
                ),
                pat(
                    r"communicator encountered a fatal error(?: \(detected in (?P<op>\w+)\))?",
                    &["nccl/net_ib/fatal-error-detected*"],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?(?:Device -?\d+ marked as failed|The error is fatal|Fatal error\. Detected -?\d+ failed devices|Could not find a replacement QP|Cannot replace QP with|Could not find a functional device to post the probe|Maximum number of probing attempts)",
                    &[
                        "nccl/net_ib/res-device-failed*",
                        "nccl/net_ib/res-error-fatal*",
                        "nccl/net_ib/res-multiple-failed-devices*",
                        "nccl/net_ib/res-no-replacement-qp*",
                        "nccl/net_ib/res-replace-qp-nonfunctional*",
                        "nccl/net_ib/res-no-functional-device-probe*",
                        "nccl/net_ib/res-max-probing-attempts*",
                    ],
                ),
            ],
            // A port coming (back) up is reported through the same stem.
            unless: &[r"async (?:error )?event ?: ?port active\b"],
        },
        Builtin {
            name: "nccl-ibverbs-call-failed",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NCCL's call to a verbs function (ibv_create_qp, ibv_modify_qp, ibv_post_send, mlx5dv_create_qp…) failed, or its verbs symbols could not be resolved",
            example: "ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out.",
            patterns: &[
                // `Call to X failed : E` / `failed: E` is a system call (nccl-socket-error).
                pat(
                    r"NCCL WARN Call to (?P<op>\w+) failed(?: with (?:error )?(?P<error>[^,\r\n]+)(?:, on dev (?P<hca>[\w.-]+):(?P<port>\d+))?| ?[^ :\r\n]|\s*$)",
                    &[
                        "nccl/ibvwrap/call-failed*",
                        "nccl/ibvwrap/modify-qp-failed*",
                        "nccl/ibvwrap/create-qp-failed",
                        "nccl/ibvwrap/get-async-event-failed",
                    ],
                ),
                pat(
                    r"NCCL WARN (?:Call to ibv_poll_cq\(\) returned (?P<retcode>-?\d+)|ibv_post_(?P<op>send|recv)\(\) failed with error (?P<error>[^,\r\n]+)|dlvsym failed on \w+|lib wrapper not initialized)",
                    &[
                        "nccl/ibvwrap/poll-cq-returned",
                        "nccl/ibvwrap/post-send-failed*",
                        "nccl/ibvwrap/post-recv-failed",
                        "nccl/ibvwrap/dlvsym-failed",
                        "nccl/ibvwrap/lib-wrapper-not-initialized",
                    ],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?mlx5dv_create_qp failed to create QP: (?P<error>[^\r\n]+)",
                    &["nccl/net_ib/mlx5dv-create-qp-failed*"],
                ),
            ],
            // GPUDirect-TCPX's socket calls (`nccl-tcpx-socket-error`).
            unless: &[r"NCCL WARN Call to (?:send|recv) failed, "],
        },
        Builtin {
            name: "nccl-ib-device-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB could not open or query an HCA or port, or the NICs it was given cannot work together (link layers, merged/virtual NICs, OOO RQ)",
            example: "NCCL WARN NET/IB : Unable to open device erdma_1",
            patterns: &[
                pat(
                    r"NET/IB ?: (?:Unable to (?:open|query) device (?P<hca>[\w.-]+)|Unable to query port|No IP interface found|Error in mlx5dv_get_data_direct_sysfs_path|(?:open|read) failed in ncclIbRoceGetVersionNum)",
                    &[
                        "nccl/net_ib/unable-to-open-device",
                        "nccl/net_ib/unable-to-query-*",
                        "nccl/net_ib/no-ip-interface",
                        "nccl/net_ib/data-direct-sysfs-error",
                        "nccl/net_ib/roce-version-*",
                    ],
                ),
                pat(
                    r"NET/IB ?: (?:Can't (?:merge|connect) net devices with different link_layer|Attempted to (?:connect|merge) incompatible devices|Remote .+? device is incompatible with the local|Trying to merge multiple devices together|Trying to use non-exist[ae]nt virtual device|Requested properties for vNic|Can't make virtual NIC with 0 devices|Cannot allocate any more virtual devices|Cannot use physical device)",
                    &[
                        "nccl/net_ib/merge-*",
                        "nccl/net_ib/connect-*",
                        "nccl/net_ib/remote-device-incompatible",
                        "nccl/net_ib/nonexistant-vdev",
                        "nccl/net_ib/nonexistent-vdev",
                        "nccl/net_ib/vnic-*",
                        "nccl/net_ib/vdev-alloc",
                        "nccl/net_ib/physical-device-max",
                    ],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?OOO RQ is force enabled but",
                    &["nccl/net_ib/ooo-rq-*"],
                ),
                // Also printed under INFO (NCCL_DEBUG_NOWARN) when it is expected.
                pat(
                    r"NCCL WARN NET/IB ?: Local mergedDev[= ]\S+ has a different number of devices",
                    &[
                        "nccl/net_ib/merged-dev-count-mismatch-v1",
                        "nccl/net_ib/merged-dev-count-mismatch-warn",
                    ],
                ),
                // The HCA's sysfs path (or, from 2.8.4, the device name and path); the GPU's
                // and NIC's PCI paths are the topology's (nccl-comm-error).
                pat(
                    r"NCCL WARN Could not find real path of (?:/sys/class/infiniband/|[\w.-]+ \()",
                    &["nccl/net_ib/realpath*"],
                ),
                // GPU-initiated networking (GIN) over DOCA GPUNetIO (GDAKI), 2.28-: its QPs and
                // NICs, and the DOCA calls under them; the mlx5dv wrapper (2.28-).
                pat(
                    r"Failed to connect GDAKI QP: |NET/IB : Requested properties for GIN GDAKI NIC|NCCL WARN DOCA (?:failure|Error) -?\d+|NCCL WARN NET/MLX5: (?:Call to \w+ failed with error|lib wrapper not initialized)",
                    &[
                        "nccl/net_ib/gdaki-connect-qp-failed",
                        "nccl/net_ib/gin-gdaki-nic-props",
                        "nccl/net_ib/gdaki-doca-*",
                        "nccl/mlx5dvwrap/call-failed-with-error",
                        "nccl/mlx5dvwrap/lib-wrapper-not-initialized",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-ib-protocol-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/IB peers disagree (collective size mismatch, bad receive info) or a completion matches no request: mismatched collectives or corrupted state",
            example: "n136-081-017:201805:201927 [0] transport/net_ib.cc:667 NCCL WARN NET/IB : collective mismatch error local size 32768 remote 1048576 addr 0 rkey 3beac3 seq adf/adf",
            patterns: &[
                pat(
                    r"NET/IB ?: (?:req -?\d+/-?\d+ tag \w+ )?(?:peer (?P<peer>\S+?)<(?P<port>\d+)> )?(?:collective mismatch error|posted incorrect receive info)",
                    &[
                        "nccl/net_ib/collective-mismatch-*",
                        "nccl/net_ib/incorrect-receive-info*",
                    ],
                ),
                pat(
                    r"NET/IB: (?:\w+: )?(?:sendReq\(\w+\)->events=|wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM and req->type=|Unknown completion \(|Invalid request index|Invalid wr_id)",
                    &[
                        "nccl/net_ib/sendreq-events*",
                        "nccl/net_ib/recv-rdma-with-imm-type",
                        "nccl/net_ib/unknown-completion*",
                        "nccl/net_ib/invalid-request-index*",
                        "nccl/net_ib/res-invalid-wr-id*",
                    ],
                ),
                // The resiliency layer (2.29-) lost track of its requests or state.
                pat(
                    r"NET/IB: (?:\w+: )?(?:Attempting to (?:initiate a (?:replay using an old|failed) request|free a non-existent failed request|repost an unused request)|Unsupported type of request reposting|Unrecognized request type\. |There are still -?\d+ outstanding recovery operations|Failed to allocate failure queue node|Unexpected GoToPrevState result)",
                    &[
                        "nccl/net_ib/res-replay-old-request*",
                        "nccl/net_ib/res-failed-request-not-send*",
                        "nccl/net_ib/res-free-nonexistent-request*",
                        "nccl/net_ib/res-repost-unused-request*",
                        "nccl/net_ib/res-unsupported-repost-type*",
                        "nccl/net_ib/res-unrecognized-request-type*",
                        "nccl/net_ib/res-outstanding-recovery-on-destroy*",
                        "nccl/net_ib/res-failure-queue-alloc-failed*",
                        "nccl/net_ib/res-unexpected-prev-state*",
                    ],
                ),
                pat(
                    r"comm could not retreive a request found for a successful completion|(?:Receiver|Sender) expected a '\w+' request but got",
                    &[
                        "nccl/net_ib/no-request-for-completion*",
                        "nccl/net_ib/receiver-expected-recv*",
                        "nccl/net_ib/sender-expected-send*",
                    ],
                ),
            ],
            unless: &[],
        },
        // Google's GPUDirect-TCPX and -TCPXO (FasTrak) net plugins (A3 and A3 Mega VMs): the
        // control sockets, connection setup and receive-datapath manager failed (their data
        // path is `nccl-ib-completion-error`'s).
        // NCCL's SHARP plugin (Mellanox/nccl-rdma-sharp-plugins): its CollNet (SHARP) setup and
        // collectives, and its UCX-based net plugins. Its IB plugin prints NCCL's own
        // net_ib wordings (the `nccl-ib-*` triggers).
        Builtin {
            name: "nccl-sharp-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL's SHARP plugin (CollNet) failed: SHARP could not be initialised (no SHARP job, no resources), a SHARP group could not be created, a buffer registration or a SHARP collective failed",
            example: "ib-vm-52:1047884:1048148 [7] sharp_plugin.c:320 NCCL WARN NET/IB : SHARP coll init error: Cannot create SHARP job(-11)",
            patterns: &[pat(
                r"NCCL WARN (?:NET/IB ?: ?SHARP coll init error: |sharp_coll_caps_query failed : |SHARP group create(?: failed)?: |SHARP regmr failed|SHARP (?:allreduce|Allgather|reduce_scatt?er) failed|SHARP : unable to allocate request)",
                &["nccl-rdma-sharp-plugins/sharp/*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "nccl-sharp-ucx-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "The UCX net plugins of NCCL's SHARP plugin (`NCCL_NET=UCX`, `UCX-RMA`, `UCX-UCT`) failed: a UCX call returned an error, a send, receive or flush could not be posted or completed, the connect message did not arrive, an interface would not open",
            example: "compute-8:1458299:1458532 [3] ucx_plugin.c:539 NCCL WARN Failed: UCX error ucx_plugin.c:539 '-5' Invalid parameter",
            patterns: &[pat(
                r"NCCL WARN (?:Failed: UCX error [^\r\n]*?:-?\d+ '-?\d+' |ucx_isend: unable to send message|ucx_irecv: unable to post receive|ucx_i?flush: unable to read data|Unable to receive connect msg \(|Send check requested returned error|NET/UCX_RMA: isend am_send_nb failed|Failed to open iface for tl_name=)",
                &["nccl-rdma-sharp-plugins/ucx/*", "nccl-rdma-sharp-plugins/ucx_rma/*", "nccl-rdma-sharp-plugins/ucx_uct/*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "nccl-tcpx-socket-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "GPUDirect-TCPX/TCPXO control path: a control channel timed out, a socket could not connect, accept, send or receive, the peer closed the connection, or the receive-datapath manager (flow steering, GPU memory import) failed",
            example: "[0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN 0xadca8062b70:0xadca805d0f0, nic 0, enp12s0, 172.16.0.11<39187><-172.16.0.95<46723> rx rx ctrl timeout cnt 7331502, nanos 10000000585",
            patterns: &[
                pat(
                    r"\b[rt]x ctrl timeout cnt \d+, nanos \d+|NET/GPUDirectTCPX (?:failed to connect socket|failed accept socket)|Net/GPUDirectTCPX : Connection closed by remote peer|NCCL WARN Call to (?:send|recv) failed, |NCCL WARN Call to socket op (?:send|recv)\(-?\d+\) [^\r\n]*? failed : |NCCL WARN Connect to [^\r\n]*? from [^\r\n]*? failed : |\bsendmsg\(\) ret 0, connection closed\?|NCCL WARN Error for fd -?\d+, |\bassume first conn to be ctrl fd failed|\bupdate flow steering rule: [^\r\n]*? failed against receive-datapath-manager|, listen FAILED \(no flow steering\)|\bgpumem (?:fd|metadata) client connect failed",
                    &["nccl-tcpx/ctrl/*", "nccl-tcpx/socket/*", "nccl-tcpx/flow-steering/*", "nccl-tcpx/rxdm/*"],
                ),
                pat(
                    r"NET/FasTrak [^\r\n]*?: (?:Tcp control channel timeout for fd:|[^\r\n]*?DXS flow ID -?\d+ (?:connect|accept) timeout|Timeout: RxDM not ready on |Connect to [^\r\n]*? failed : |Net : Connection closed by remote peer|Call to recv failed : )|\bDXS flow ID -?\d+ failed to establish",
                    &["nccl-tcpxo/ctrl/*", "nccl-tcpxo/dxs/*", "nccl-tcpxo/rxdm/*", "nccl-tcpxo/socket/*"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-socket-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL's bootstrap/proxy/NET-Socket TCP connection failed or was closed by the peer, a socket or UDS call failed, or a system call failed",
            example: "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe",
            patterns: &[
                pat(
                    r"Call to (?P<op>recv|send) (?:from|to) (?P<peer>\S+?)<(?P<port>\d+)> failed : (?P<error>[^\r\n]+)",
                    &[
                        "nccl/socket/recv-failed-v2",
                        "nccl/socket/recv-failed-v3",
                        "nccl/socket/recv-failed-v4",
                        "nccl/socket/recv-failed",
                        "nccl/socket/send-failed*",
                    ],
                ),
                // include/socket.h before v2.10: creating the socket itself failed.
                pat(r"\bSocket creation failed : (?P<error>[^\r\n]+)", &["nccl/socket/socket-creation-failed-v1"]),
                pat(
                    r"(?:(?:Net|[sS]ocket\w*) ?: |\bsocket\.h:\d+ WARN )Connection closed by remote peer(?: (?P<peer>[^<\s]+)<(?P<port>\d+)>)?",
                    &["nccl/socket/closed-by-remote-peer*"],
                ),
                pat(
                    r"[Cc]onnect to (?P<peer>\S+?)<(?P<port>\d+)> failed(?: :| with error) (?P<error>[^\r\n]+)",
                    &[
                        "nccl/socket/connect-failed*",
                        "nccl/socket/poll-connect-failed",
                        "nccl/socket/poll-connect-failed-v2",
                    ],
                ),
                pat(
                    r"NCCL WARN (?:socket|ncclOsSocket)PollConnect\b(?:.*?\berror (?P<error>[^,\r\n]+))?(?:.*?connect to (?P<peer>\[[^\]]+\]|[^\s<:]+)[:<](?P<port>\d+))?",
                    &[
                        "nccl/socket/poll-connect-returned-errno",
                        "nccl/socket/poll-connect-poll-*",
                        "nccl/socket/poll-connect-no-pollout",
                        "nccl/socket/poll-connect-failed*",
                    ],
                ),
                pat(
                    r"exceeded error retry count|(?:socket|ncclOsSocket)(?:TryAccept: (?:Accept failed|get errno)|(?:Start|Poll)Connect: exceeded)",
                    &[
                        "nccl/socket/connect-retry-exceeded*",
                        "nccl/socket/accept-failed*",
                        "nccl/socket/accept-retry-exceeded*",
                        "nccl/socket/accept-bad-errno",
                        "nccl/socket/start-connect-exceeded-*",
                        "nccl/socket/poll-connect-exceeded-*",
                    ],
                ),
                pat(
                    r"socketFinalizeAccept(?: from (?P<peer>\S+?)<(?P<port>\d+)>)?: wrong (?:magic|type) ",
                    &["nccl/socket/finalize-accept-wrong-magic", "nccl/socket/finalize-accept-wrong-type-v1", "nccl/socket/finalize-accept-wrong-type"],
                ),
                pat(
                    r"ncclSocket(?:Ready: unexpected socket state|(?:Connect|Accept): wrong socket state|(?:Send|Recv|SendRecv): socket state \([-\d/]+\) is not ready)",
                    &[
                        "nccl/socket/ready-unexpected-state",
                        "nccl/socket/connect-wrong-state",
                        "nccl/socket/accept-wrong-state",
                        "nccl/socket/send-not-ready",
                        "nccl/socket/recv-not-ready",
                        "nccl/socket/sendrecv-not-ready",
                    ],
                ),
                pat(
                    r"(?:Net :|Error :|ncclSocketInit:) (?:No interface found in the same subnet|error encountered when getting address info|No valid \S+ pair found|Socket creation failed|connecting to address)",
                    &[
                        "nccl/socket/no-interface-same-subnet",
                        "nccl/socket/getaddrinfo-error",
                        "nccl/socket/no-valid-*",
                        "nccl/socket/creation-failed*",
                        "nccl/socket/family-neither*",
                    ],
                ),
                // Also printed under INFO (NCCL_DEBUG_NOWARN) when it is expected.
                pat(
                    r"NCCL WARN Net : Unsupported address family type",
                    &["nccl/socket/unsupported-family-warn"],
                ),
                pat(
                    r"UDS: (?:(?:Binding to|Sending data over|Receiving data over) socket (?:\S+ )?failed|Socket creation error)",
                    &["nccl/uds/*"],
                ),
                pat(
                    r"(?:NET/)?Socket : (?:(?:peer (?P<peer>\S+?)<(?P<port>\d+)> )?message truncated|socket progress error|no interface found|No usable listening interface found|unable to allocate (?:requests|subtasks)|test called with NULL request)|NCCL WARN No usable listening interface found",
                    &[
                        "nccl/net_socket/message-truncated*",
                        "nccl/net_socket/socket-progress-error",
                        "nccl/net_socket/no-interface",
                        "nccl/net_socket/no-listening-interface",
                        "nccl/net_socket/unable-to-allocate-*",
                        "nccl/net_socket/test-null-request",
                        "nccl/net_socket/no-usable-interface-v23",
                    ],
                ),
                // SYSCHECK: the failing system call is nearly always a socket one.
                pat(
                    // NCCL before 2.3 printed its header without `NCCL`: `… include/socket.h:194 WARN Call to recv failed : …`.
                    r"\bWARN Call to (?P<op>\w+) (?:failed ?:|timeout :) (?P<error>[^\r\n]+)",
                    &[
                        "nccl/socket/recv-failed-v1",
                        "nccl/checks/syscall-failed*",
                        "nccl/checks/syscall-timeout-v0",
                    ],
                ),
            ],
            // RAS's client listener (2.24+) gives up when its port is taken; the job runs on.
            unless: &[
                r"ras/client_support\.cc:\d+ NCCL WARN Call to (?:bind|listen|socket|setsockopt) failed",
                // XLA quotes NCCL's last WARN after the error string it reports, which
                // `nccl-error-string` fires on: one failure, one trigger.
                r"Last NCCL warning\(error\) log entry \(may be unrelated\)",
                // GPUDirect-TCPXO's own socket lines (`nccl-tcpx-socket-error`).
                r"NET/FasTrak ",
            ],
        },
        Builtin {
            name: "nccl-proxy-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL's proxy or service thread failed an operation (often a peer's connection dropping) or lost track of a request",
            example: "a100-st-p4d24xlarge-22:183006:183220 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6",
            patterns: &[
                pat(
                    r"Failed to execute operation (?P<op>.+?) from rank (?P<rank>\d+), retcode (?P<retcode>\d+)",
                    &["nccl/proxy/service-failed-to-execute"],
                ),
                // NCCL 2.3: the proxy thread's error relay (`transport.cu:153 -> 2 [Proxy thread error]`).
                pat(r"-> ?-?\d+ \[Proxy thread error\]", &["nccl/transport/proxy-thread-error"]),
                pat(
                    r"\[(?:Proxy [Ss]ervice(?: UDS)?|Service thread|Rem Allocator)\] (?:Poll failed|proxyDestroy failed|Get listenSock fd fails|Too many connections|Error encountered progressing operation|Could not receive type from localRank|Unknown command|Get peers\[-?\d+\]\.sock fd fails|Initialize peers\[-?\d+\]\.sock fails|Allocation failed|(?:cuda|hip)IpcGetMemHandle failed)",
                    &[
                        "nccl/proxy/service-poll-failed*",
                        "nccl/proxy/service-uds-poll-failed",
                        "nccl/proxy/proxy-destroy-failed",
                        "nccl/proxy/get-listensock-fd-fails",
                        "nccl/proxy/uds-get-listensock-fd-fails",
                        "nccl/proxy/too-many-connections",
                        "nccl/proxy/service-error-progressing",
                        "nccl/proxy/could-not-receive-type*",
                        "nccl/proxy/service-unknown-command*",
                        "nccl/proxy/service-peers-sock-*",
                        "nccl/bootstrap/rem-allocator-*",
                    ],
                ),
                pat(
                    r"Proxy Call to rank (?P<rank>\d+) failed|Socket recv failed while polling for opId|ncclProxyCallAsync\(\) - Saw abortFlag|(?:Mismatched response size for|Couldn't find|Proxy response for) opId=|Unable to post incomplete proxy op chain|Proxy append (?:out of bounds|mismatch|on running operation)|Attempting to dequeue (?:nonexistent async opId|null operation)|Storing response for already completed opId=|ncclProxyConnect: (?:proxyRank|tpRank|peerIndex) -?\d+ out of bounds|\[Proxy Service\] WSAPoll failed|\[Service thread\] (?:shm close|proxy ops shm unlink) failed|RAS received unknown message type|NCCL WARN Could not find pool of op |(?:Error no|has no) transport for ",
                    &[
                        "nccl/proxy/call-to-rank-failed",
                        "nccl/proxy/socket-recv-failed-polling",
                        "nccl/proxy/saw-abort-flag",
                        "nccl/proxy/mismatched-response-size",
                        "nccl/proxy/couldnt-find-opid",
                        "nccl/proxy/response-no-match",
                        "nccl/proxy/incomplete-op-chain",
                        "nccl/proxy/append-*",
                        "nccl/proxy/dequeue-*",
                        "nccl/proxy/response-already-completed",
                        "nccl/proxy/connect-proxy-rank-out-of-bounds",
                        "nccl/proxy/connect-tp-rank-out-of-bounds",
                        "nccl/proxy/connect-peer-index-out-of-bounds",
                        "nccl/proxy/service-wsapoll-failed",
                        "nccl/proxy/service-shm-close-failed",
                        "nccl/proxy/ops-shm-unlink-failed",
                        "nccl/ras-conn/unknown-message-type",
                        "nccl/proxy/op-pool-not-found",
                        "nccl/proxy/no-transport*",
                    ],
                ),
                pat(
                    r"ncclProxy(?:CallBlockingUDS|Client\w+) call to (?:top parent rank|tpRank|rank) (?P<rank>\d+)",
                    &[
                        "nccl/proxy/call-blocking-uds-failed",
                        "nccl/proxy/client-*",
                    ],
                ),
                pat(r"NCCL WARN Comm \S+ is in abort state", &["nccl/proxy/comm-in-abort-state"]),
                // Also printed under INFO (NCCL_DEBUG_NOWARN) when it is expected.
                pat(
                    r"NCCL WARN \[Service thread\] Accept failed",
                    &["nccl/proxy/service-accept-failed-warn"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-cuda-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "A CUDA/HIP call inside NCCL failed (Cuda failure, device memory allocation, IPC handles, peer access, driver too old, CUDA device/context not set; RCCL's HIP failure)",
            example: "sharbox-ultra:204802:204836 [1] /home/elias/rccl/build/release/hipify/src/transport/p2p.cc:220 NCCL WARN hipIpcGetMemHandle failed : invalid argument",
            patterns: &[
                pat(
                    r"NCCL WARN (?P<op>(?:cuda|hip)\w+|cuDriverGetVersion) failed(?: :| with) (?P<error>[^\r\n]+)",
                    &[
                        "nccl/p2p/cuda-ipc-get-mem-handle",
                        "nccl/cudawrap/driver-get-version",
                    ],
                ),
                pat(
                    r"NCCL WARN Cuda failure (?:-?\d+ )?'(?P<error>[^'\r\n]*)(?:'|$)",
                    &["nccl/checks/cuda-failure", "nccl/checks/cuda-failure-code"],
                ),
                // alloc.h: a device or pinned host allocation failed (out of GPU memory);
                // PyTorch relays the text after `ncclUnhandledCudaError: `.
                pat(
                    r"Failed to CUDA (?P<op>calloc(?: async)?|malloc|host alloc) (?P<bytes>\d+) bytes",
                    &[
                        "nccl/alloc/cuda-calloc-failed",
                        "nccl/alloc/cuda-calloc-async-failed",
                        "nccl/alloc/cuda-malloc-failed",
                        "nccl/alloc/cuda-host-alloc-failed",
                    ],
                ),
                // RCCL's own ERROR level (rcclCudaErrorHandler).
                pat(
                    r"\[FATAL ERROR\]: (?:HIP failure: '(?P<error>[^'\r\n]*)'|Application is trying to use an invalidated stream to launch RCCL kernel)",
                    &["rccl/debug/hip-failure", "rccl/debug/invalidated-stream"],
                ),
                pat(
                    r"failed to (?:peer with device \d+|open CUDA IPC handle|get CUDA IPC handle to device)",
                    &[
                        "nccl/net/failed-to-peer",
                        "nccl/p2p/failed-to-peer*",
                        "nccl/p2p/open-cuda-ipc-handle",
                        "nccl/p2p/ipc-handle*",
                    ],
                ),
                pat(
                    r"CUDA Driver version found is -?\d+\. Minimum requirement is|CUDA some PFN functions not found|Failed to find CUDA library",
                    &[
                        "nccl/cudawrap/driver-too-old",
                        "nccl/cudawrap/pfn-not-found",
                        "nccl/cudawrap/find-library",
                    ],
                ),
                pat(
                    r"(?:NCCL WARN|\[Proxy (?:Service(?: UDS)?|Progress)\]) Failed to (?:set|create) CUDA (?:device|context on device) \d+(?:\s*$|[^ \d]| [^w])",
                    &[
                        "nccl/proxy/service-set-cuda-*",
                        "nccl/proxy/uds-set-cuda-device",
                        "nccl/proxy/progress-set-cuda-*",
                        "nccl/proxy/create-cuda-context-failed",
                        "nccl/proxy/set-cuda-context-failed",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-comm-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NCCL communicator setup or use failed: bootstrap, topology search and the topology XML, mismatched versions or collectives, duplicate GPUs, invalid arguments, enqueue, async jobs, allocation, MNNVL/NVLS, the NVML and GDRCopy wrappers, NET/IB internal state",
            example: "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
            patterns: &[
                // Shared memory for the intra-node transports could not be set up (shmutils.cc,
                // shm.h before 2.12): `/dev/shm` full or too small in a container.
                pat(
                    r"Error: (?:failed to extend \S+ to \d+ bytes|Could not map \S+ size \d+|failed to create shared memory file \S+)|Error while (?:creating|attaching to) shared memory segment \S+ \(size \d+\)|Failed to find reverse path from remNode",
                    &["nccl/shm/*", "nccl/paths/failed-to-find-reverse-path"],
                ),
                pat(
                    r"Mismatched collective detected|Mismatched NCCL version detected|Duplicate GPU detected|Attempt to use communicator before the previous operation returned ncclSuccess|Failed to determine (?:intra|local|intra proc) ranks|Failed to initialize any NET plugin|GIN Error (?:on gin context|detected)|Legacy IPC cleanup callback failed|(?:ncclProxyStop|commDestroySync): (?:cleanup )?comm \S+ \(?rank|NCCL WARN commReclaim: (?:cleanup )?comm \S+ \(?rank",
                    &[
                        "nccl/init/mismatched-collective",
                        "nccl/init/version-mismatch",
                        "nccl/init/duplicate-gpu*",
                        "nccl/init/attempt-use-after-error*",
                        "nccl/init/intra-ranks-v1",
                        "nccl/init/intra-proc-ranks",
                        "nccl/init/local-ranks",
                        "nccl/init/no-net-plugin",
                        "nccl/init/gin-error-*",
                        "nccl/init/legacy-ipc-cleanup-failed",
                        "nccl/init/reclaim-*",
                        "nccl/init/proxy-stop-resource",
                        "nccl/init/destroy-sync-*",
                    ],
                ),
                pat(
                    r"Bootstrap : no socket interface found|Bootstrap Root : (?:mismatch in|rank \d+ of \d+ ranks has already checked in|localId -?\d+ is out of range)|Invalid NCCL_COMM_ID, please use format|, verify NCCL_OOB_NET_IFNAME",
                    &[
                        "nccl/bootstrap/no-socket-interface",
                        "nccl/bootstrap/root-*",
                        "nccl/bootstrap/invalid-comm-id",
                        "nccl/bootstrap/oob-no-device-matching",
                        "nccl/bootstrap/oob-no-device-excluding",
                    ],
                ),
                pat(
                    r"hostStreamPlanCallback\(\) failed|Failure in host setup : |: communicator was revoked|[Nn]o algorithm/protocol (?:nor symKernelId )?available|ncclAsyncJobComplete: job \S+ failed|Error waiting for pthread_join ?:|asyncJobLaunch: failed to join thread|PXN should not use host buffers|(?:send|recv)ProxySetup: (?:coll)?net plugin returned invalid value|Error : Network returned 0 device|Unrecoverable error detected: malloc",
                    &[
                        "nccl/enqueue/host-*",
                        "nccl/enqueue/communicator-revoked",
                        "nccl/enqueue/no-algo-proto*",
                        "nccl/tuning/no-algo-proto-symkernel",
                        "nccl/group/*",
                        "nccl/net/pxn-host-buffers",
                        "nccl/net/send-proxy-setup-max-p2p-bytes",
                        "nccl/net/recv-proxy-setup-max-p2p-bytes",
                        "nccl/coll_net/send-proxy-setup-max-coll-bytes",
                        "nccl/coll_net/recv-proxy-setup-max-coll-bytes",
                        "nccl/net/network-returned-0-device",
                        "nccl/utils/malloc-null*",
                    ],
                ),
                pat(
                    r"P2P is disabled between NVLINK connected GPUs|Set CPU affinity : unable to find GPU/CPU|No path computed to go from|XML Topology has wrong version|TOPO/NET : (?:Could not force merge NICs|Only matched -?\d+ devices, -?\d+ requested|Tried to merge too many NICs)|localHostHash = \S+ not found in the list|Rank \d+ requires NIC -?\d+ but that NIC is not available",
                    &[
                        "nccl/graph/nvlink-p2p-disabled",
                        "nccl/graph/set-cpu-affinity",
                        "nccl/graph/no-path-computed",
                        "nccl/graph/xml-topology-version",
                        "nccl/graph/topo-net-force-merge",
                        "nccl/graph/topo-net-only-matched",
                        "nccl/graph/topo-net-too-many-nics",
                        "nccl/graph/local-host-hash",
                        "nccl/graph/rank-requires-nic",
                    ],
                ),
                // Generic on their own: only as the text of a WARN.
                pat(
                    r"NCCL WARN (?:Could not (?:find (?:any local path from gpu|NIC for rank|intermediate GPU|node of type|NET with id|net id|local GPU with rank|gpu rank)|open XML (?:topology|graph) file)|Error : (?:could not find CPU close to GPU|ring -?\d+ does not (?:contain rank|loop back to start)))",
                    &[
                        "nccl/graph/no-local-path-to-net",
                        "nccl/graph/no-nic-nvls",
                        "nccl/graph/no-intermediate-gpu*",
                        "nccl/graph/no-node",
                        "nccl/graph/no-net-id",
                        "nccl/graph/no-net-id-v26",
                        "nccl/graph/no-local-gpu",
                        "nccl/graph/no-gpu-rank",
                        "nccl/graph/xml-topology-open",
                        "nccl/graph/xml-graph-open",
                        "nccl/graph/no-cpu-close-to-gpu",
                        "nccl/graph/ring-missing-rank",
                        "nccl/graph/ring-no-loop-back",
                    ],
                ),
                pat(
                    r"NCCL WARN Could not find real path of /sys/(?:class/pci_bus|devices)/",
                    &["nccl/graph/pci-realpath", "nccl/graph/cuda-realpath-v2.3"],
                ),
                pat(
                    r"NCCL WARN (?:Message truncated : received|Unexpected connections are not empty|Thread (?:creation|join) failed|Allocation failed|Unknown device error|No transport found !|Error: network .*? not found|comm \S+ has already been destroyed|Error: trying to connect already connected sendComm|Listencomm in unknown state|Cannot store sizes of)",
                    &[
                        "nccl/bootstrap/message-truncated*",
                        "nccl/bootstrap/unexpected-connections*",
                        "nccl/checks/thread-creation-failed",
                        "nccl/utils/thread-join-failed",
                        "nccl/checks/allocation-failed*",
                        "nccl/init/unknown-device-error",
                        "nccl/init/no-transport-found",
                        "nccl/init/network-not-found",
                        "nccl/init/comm-already-destroyed",
                        "nccl/net_ib/already-connected",
                        "nccl/net_ib/listencomm-unknown-state*",
                        "nccl/net_ib/sizes-32bit",
                    ],
                ),
                // The topology XML (graph/xml.h, xml.cc, search.cc): a missing attribute, a
                // file that does not parse, a channel naming a device or rank not there. The
                // attribute line is also relayed without its header (vLLM's Ray utils).
                pat(
                    r"Attribute \S+ of node \S+ not found|Error : (?:too many XML (?:sub)?nodes \(max|XML parser is limited to -?\d+ (?:sub)?nodes)|XML Mismatch : |XML Graph has wrong version|KV Convert to str : could not find value|XML (?:Import Channel : dev|Export Channel : rank) -?\d+ not found|XML Parse(?: error)? : (?:Unexpected EOF|Expected \(double\) quote|Unexpected value with name|unterminated|expecting '<'|unexpected trailing|expected >)",
                    &[
                        "nccl/graph/xml-attribute-not-found",
                        "nccl/graph/xml-too-many-*",
                        "nccl/graph/xml-parser-limit-*",
                        "nccl/graph/xml-mismatch",
                        "nccl/graph/xml-graph-version",
                        "nccl/graph/xml-kv-convert-str",
                        "nccl/graph/xml-import-channel-dev",
                        "nccl/graph/xml-export-channel-rank",
                        "nccl/graph/xml-parse-*",
                    ],
                ),
                pat(r"NCCL WARN Failed to malloc \d+ bytes", &["nccl/alloc/malloc-failed"]),
                // Older releases' wordings of the same failures (2.3 to 2.29).
                pat(
                    r"NET/IB : memory register : no MR available|Error : Could not find transport to connect next group|Error : mixing different streams within a group call|Multiple ranks detected using the same GPU on this node|NCCL library version is too old\. This application was compiled|compiled with too old version of NCCL\.|MNNVL \(cliqueSize -?\d+\) is available but not supported|Failed to load CUDA missing symbol cu\w+|NCCL WARN NVML failure '|Unable to allocate shared memory \(\d+ bytes\) : |shm_open failed to open \S+ : |failure in mmap of \S+ \(size \d+\) : |NCCL WARN Could not map \S+ size \d+, error: |NCCL WARN malloc of \d+ bytes failed|\[Rem Allocator\] (?:Failed to set CUDA device|cudaFree \S+ failed)|Bootstrap thread : failed to allocate memory|Bootstrap Root : invalid op type received|NET/TOPO : Couldn't find net with name|Internal error : NVswitch links mismatch|Failed to determine intra node ranks|Trying to launch too many (?:collectives|work elements)|Too many async operations in progress",
                    &[
                        "nccl/net_ib/no-mr-available-v23",
                        "nccl/rings/no-transport-next-group",
                        "nccl/enqueue/mixing-streams-in-group",
                        "nccl/graph/multiple-ranks-same-gpu-v2303",
                        "nccl/dev_runtime/library-version-too-old-v229",
                        "nccl/devcomm/app-compiled-too-old",
                        "nccl/mnnvl/not-supported-imex-v225",
                        "nccl/cudawrap/missing-symbol-*",
                        "nccl/nvmlwrap/nvml-failure-v1",
                        "nccl/shm/unable-to-allocate-v23",
                        "nccl/shm/shm-open-failed-v23",
                        "nccl/shm/mmap-failed-v23",
                        "nccl/shm/could-not-map-v216",
                        "nccl/p2p/malloc-failed-v23",
                        "nccl/bootstrap/rem-allocator-set-device",
                        "nccl/bootstrap/rem-allocator-cuda-free",
                        "nccl/bootstrap/thread-alloc-failed-v23",
                        "nccl/bootstrap/root-invalid-op-v23",
                        "nccl/graph/net-name-not-found",
                        "nccl/p2p/nvswitch-links-mismatch",
                        "nccl/init/intra-node-ranks-v210",
                        "nccl/enqueue/too-many-collectives",
                        "nccl/enqueue/too-many-work-elements",
                        "nccl/enqueue/too-many-async-ops",
                    ],
                ),
                // argcheck.cc: a collective called with arguments NCCL refuses (ncclInvalidArgument).
                pat(
                    r"NCCL WARN \w+ : (?:\w+ (?:(?:0x[0-9a-fA-F]+|\(nil\)) is not a valid pointer|allocated on device -?\d+ mismatchs with NCCL device|argument is NULL)|invalid (?:reduction operation|type) -?\d+|invalid root -?\d+ \(root should be in the)",
                    &["nccl/argcheck/*"],
                ),
                // Setup refused or impossible: ranks, devices, versions, fabrics, group calls.
                pat(
                    r"Invalid (?:rank|device count) requested : |improper usage of ncclCommInitRank|NCCL version mismatch with remote peer|NCCL library is (?:too old|not backwards compatible)\. This application was compiled|MNNVL \(cliqueSize -?\d+\) is available but not working|Multiple Ranks are using the same GPU|No transport found for rank|Failed to bind NVLink SHARP \(NVLS\) Multicast memory|ncclGroupEnd: not in a group call|Trying to (?:send|recv) to self without a matching|Internal error : tree already has|P2p schedule creation has bugs|Detected mixed local Net device counts across ranks \(min -?\d+, max -?\d+\)\. Set|cudaArch -?\d+ dynamic smem -?\d+ exceeds device/fn maxSharedMem|fails to share parent comms \(nRanks",
                    &[
                        "nccl/init/invalid-rank-requested",
                        "nccl/init/invalid-device-count",
                        "nccl/init/improper-init-rank-scalable",
                        "nccl/ras-conn/version-mismatch",
                        "nccl/dev_runtime/*",
                        "nccl/mnnvl/*",
                        "nccl/init/multiple-ranks-same-gpu",
                        "nccl/transport/no-transport-for-rank",
                        "nccl/nvls/bind-multicast-failed",
                        "nccl/group/not-in-group-call",
                        "nccl/enqueue/send-to-self-unmatched",
                        "nccl/enqueue/recv-to-self-unmatched",
                        "nccl/graph/tree-too-many-children",
                        "nccl/init/p2p-schedule-bugs",
                        "nccl/init/mixed-net-device-counts",
                        "nccl/enqueue/smem-exceeds",
                        "nccl/coll_net/child-sharp-share",
                    ],
                ),
                // The NVML and GDRCopy wrappers: a call into the driver's library failed.
                pat(
                    r"NCCL WARN (?:nvml|gdr_)\w*\([^)\r\n]*\) failed: ",
                    &[
                        "nccl/nvmlwrap/*",
                        "nccl/gdrwrap/pin-buffer-failed",
                        "nccl/gdrwrap/map-failed",
                        "nccl/gdrwrap/driver-get-version-failed",
                        "nccl/gdrwrap/get-attribute-failed",
                    ],
                ),
                // NCCL's own DMA-BUF mapping for GDRCopy (2.31 pre-releases), GIN/RMA setup
                // (2.28-), CollNet and buffer registration, plugins, shared memory, CPU
                // affinity, loading NVML; RCCL's ROCm runtime and SMI libraries. Generic
                // wordings only as the text of a WARN.
                pat(
                    r"NCCL WARN (?:mmap DMA-BUF fd -?\d+ size \d+ offset \d+ failed|munmap DMA-BUF mapping \S+ size \d+ failed|cu[A-Z]\w+ failed: -?\d+|No (?:GIN|RMA)-capable devices found\.|rank -?\d+ deregister (?:NET|NVLS|COLLNET|IPC) buffer |munmap of shared memory |sched_[gs]etaffinity failed with error|Failed to open libnvidia-ml\.so\.1|Failed to (?:find ROCm runtime library in|load ROCr missing symbol) |pfn_hsa_\w+ failed with|ROCm SMI init failure|ARSMI failure -?\d+|(?:rocm_smi_lib|ARSMI_lib): [^\r\n]*device index not found|Failed to open topo/nodes directory|Error reading link properties files)",
                    &[
                        "nccl/gdrwrap/dmabuf-*",
                        "nccl/gin/no-gin-capable-devices",
                        "nccl/rma/no-rma-capable-devices",
                        "nccl/register/dereg-*",
                        "nccl/shm/munmap-failed*",
                        "nccl/os/sched-*",
                        "nccl/nvmlwrap/open-library-failed*",
                        "rccl/rocmwrap/*",
                        "rccl/rocm_smi/*",
                        "rccl/alt_rsmi/*",
                    ],
                ),
                pat(
                    r"NET/Socket : finalize called with zero reference count|NCCL_GDRCOPY_USE_INTERNAL_DMABUF=1 but NCCL internal DMA-BUF mmap backend could not initialize|Detected mixed local CollNet device counts across ranks \(min -?\d+, max -?\d+\)\. Set |(?:GIN|RMA) Symmetric register failed: |Error on GFD test -?\d+ - stateIdx|GIN plugin [^\r\n]{1,64}? returned invalid context|(?:Rma|Gin) connect : min local net count is zero|Unable to use GIN: Peermem is not supported, and device |(?:send|recv)ProxyConnect: (?:req|resp)Size is -?\d+ != |CollNet sizes: want=|NCCL_DEVICE_UNPACK plugin has incompatible version|RMA v13 \([^)\r\n]*\) requires GIN PROXY type",
                    &[
                        "nccl/net_socket/finalize-zero-refcount",
                        "nccl/init/gdrcopy-internal-dmabuf-init-failed",
                        "nccl/init/mixed-collnet-device-counts",
                        "nccl/gin/symmetric-register-failed",
                        "nccl/rma/symmetric-register-failed",
                        "nccl/gin/gfd-test-error",
                        "nccl/gin/plugin-invalid-context",
                        "nccl/rma/min-local-net-count-zero*",
                        "nccl/net_ib/gin-peermem-dmabuf-unsupported",
                        "nccl/coll_net/send-proxy-connect-req-size",
                        "nccl/coll_net/send-proxy-connect-resp-size",
                        "nccl/coll_net/recv-proxy-connect-req-size",
                        "nccl/coll_net/recv-proxy-connect-resp-size",
                        "nccl/coll_net/sizes-mismatch",
                        "nccl/plugin/device-unpack-incompatible",
                        "nccl/plugin/rma-v13-not-gin-proxy",
                    ],
                ),
                pat(
                    r"NET/IB ?: (?:unable to allocate requests|could not find mr \S+ inside cache|ncclIbI(?:send|recv)\(\) called when comm->)",
                    &[
                        "nccl/net_ib/unable-to-allocate-requests",
                        "nccl/net_ib/mr-cache-miss",
                        "nccl/net_ib/irecv-not-ready*",
                        "nccl/net_ib/isend-not-ready*",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-error-string",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "An NCCL result string (ncclGetErrorString: unhandled system/cuda error, remote process exited…) printed by a program without its own trigger",
            example: "what():  NCCL Error 1: unhandled cuda error",
            patterns: &[pat(
                r"(?P<error>unhandled (?:system|cuda) error|internal error - please report this issue to the NCCL developers|remote process exited or there was a network error|invalid (?:usage|argument) \(run with NCCL_DEBUG=WARN for details\))",
                &[
                    "nccl/errstr/system-error*",
                    "nccl/errstr/cuda-error*",
                    "nccl/errstr/internal-error",
                    "nccl/errstr/remote-error",
                    "nccl/errstr/invalid-usage",
                    "nccl/errstr/invalid-argument",
                ],
            )],
            // NCCL's own WARN lines that quote a result string (`hostStreamPlanCallback()
            // failed : unhandled cuda error`) come with the line of the program that got it;
            // wrappers with their own trigger need no veto: this one is a fallback.
            unless: &[r"NCCL WARN"],
        },
        Builtin {
            name: "nccl-tests-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "nccl-tests/rccl-tests gave up on a collective after its `-T` timeout (the window is back-dated by it)",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "gpu-node-017: Test timeout (1800s) common.cu:1180",
            patterns: &[pat(
                r"Test timeout \((?P<stuck_s>\d+)s\) \S+:-?\d+",
                &["nccl-tests/test-timeout", "rccl-tests/test-timeout"],
            )],
            unless: &[],
        },
        Builtin {
            name: "nccl-tests-failure",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "nccl-tests/rccl-tests (or RCCL's unit tests) stopped on a failed NCCL or CUDA/HIP call (the failing call, then one relay line per caller), or found wrong values in a result buffer",
            example: "Test NCCL failure common.cu:958 'internal error - please report this issue to the NCCL developers / '",
            patterns: &[
                // `{host}: Test NCCL failure common.cu:958 '<result> / <last error>'`, the CUDA/HIP
                // twin, and v1's bare `NCCL failure`/`Cuda failure` (no host).
                pat(
                    r"(?:Test (?:NCCL|CUDA|HIP) |NCCL |Cuda )failure \S+:-?\d+ '(?P<error>[^'\r\n]*)|\bFailed, NCCL error \S+:-?\d+ '",
                    &[
                        "nccl-examples/ncclcheck-failed",
                        "nccl-tests/test-nccl-failure*",
                        "nccl-tests/test-cuda-failure",
                        "nccl-tests/nccl-failure-v1",
                        "nccl-tests/cuda-failure-v1",
                        "rccl-tests/test-nccl-failure*",
                        "rccl-tests/test-hip-failure",
                    ],
                ),
                // ` .. {host} pid {pid}: Test failure common.cu:891` (` .. {host}: ` before v2.10).
                pat(
                    r"(?:\.\. \S+| pid -?\d+): Test failure \S+:-?\d+",
                    &["nccl-tests/test-failure-relay-*", "rccl-tests/test-failure-relay-pid"],
                ),
                // RCCL's unit tests (`rccl-UnitTests`): a child process's NCCL call failed.
                pat(
                    r"Child process -?\d+ fails NCCL call \S+ with code -?\d+",
                    &["rccl/test/child-nccl-call-failed"],
                ),
                // Data validation (`-c 1`): `# Out of bounds values : 3 FAILED`; `: 0 OK` passes.
                pat(
                    r"Out of bounds values\s*: -?\d+ FAILED",
                    &["nccl-tests/out-of-bounds-failed*", "rccl-tests/out-of-bounds-failed"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "nccl-collective-hang",
            class: "other_hang",
            pre_s: PRE,
            description: "NCCL saw a peer stop making progress in a collective (a hang, often a collective mismatch around the named rank)",
            example: "jupyter-vmarkovtsev:15892:15892 [0] init.cc:1259 NCCL WARN Your program may be hanging, this may be caused by a collective mismatch around rank 3. Please check your collective calls at and around this rank. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
            patterns: &[
                pat(
                    r"Your program may be hanging, this may be caused by a collective mismatch around rank (?P<rank>\d+)",
                    &["nccl/init/program-may-be-hanging"],
                ),
                // The RAS report (`ncclras`, 2.24+): a communicator whose ranks are missing or
                // disagree on how many collectives they launched, and the ranks behind (those
                // lines are printed only in that section).
                pat(
                    r"(?:^|[\s:>]|\[[\d;]*m)#\d+-\d+ \([0-9a-f]{16}\) (?:MISMATCH|INCOMPLETE)\s*$|\bCommunicator ranks have different (?:\w+ operation counts|status)\s*$|\b\d+ ranks have (?:launched up to operation \d+|not launched any operations)\s*$|\bRank \d+ has (?:launched up to operation \d+|not launched any operations) -- (?:GPU |\[process information not found\])",
                    &["nccl/ras/*"],
                ),
            ],
            unless: &[],
        },
    ],
};
