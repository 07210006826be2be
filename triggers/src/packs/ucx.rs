//! The `ucx` pack.

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// The verbs completion-error wordings: retry exceeded (`ucx-retry-exceeded`) or any
/// other status (`ucx-completion-error`), one set of rows for both.
const WC_ERROR_ROWS: &[&str] = &[
    "ucx/rc_verbs/send-completion-with-error-*",
    "ucx/dc_verbs/send-completion-with-error-*",
    "ucx/ib_iface/receive-completion-with-error-v1.2",
    "ucx/rc_verbs/receive-completion-with-error-xrq",
    "ucx/ib_iface/receive-completion-idx-with-error",
    "ucx/ib_iface/send-completion-idx-with-error",
    "ucx/ud_verbs/send-completion-wr-id-with-error",
];

// The retry wordings are `pub(super)`: the `verbs` pack's generic retry pattern must
// veto these lines, and `ucx-completion-error` does.

/// mlx5 CQE error (`ib_mlx5_log.c`, v1.6+): transport or RNR retry count exceeded.
pub(super) const RETRY_MLX5: &str = r"(?P<error>(?:Transport|Receive-no-ready) retry count exceeded) on (?P<hca>[\w.-]+):(?P<port>\d+)/\w+ \(synd (?P<syndrome>0x[0-9a-fA-F]+) vend (?P<vendor_err>0x[0-9a-fA-F]+)";
/// mlx5 CQE error as v1.2–v1.5 printed it (`Error on [dev:port ]QP … wqe[…]: …`).
pub(super) const RETRY_QP: &str = r"Error on (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?QP (?P<qp>0x[0-9a-fA-F]+) wqe\[-?\d+\]: (?P<error>(?:Transport|Receive-no-ready) retry count exceeded)";
/// rc/dc/ud verbs and `ib_iface` completion messages with a retry-exceeded status.
pub(super) const RETRY_WC: &str = r"(?i)(?:send|receive) completion(?:\[-?\d+\]| \(wr_id=0x[0-9a-f]+)? with error(?: on (?:qp (?P<qp>0x[0-9a-f]+)|xrq|(?P<hca>[\w.-]+)/\S+?))?: (?P<error>(?:transport|rnr) retry counter exceeded)";
/// The UMR completion poll (`ib_mlx5dv_md.c`, v1.18+) with a retry-exceeded status.
pub(super) const RETRY_UMR: &str = r"(?P<hca>[\w.-]+): ibv_poll_cq\(UMR CQ, [^,]*, UMR mkey \S+ index 0x[0-9a-fA-F]+\) returned (?P<retcode>-?\d+), status: (?P<error>(?i:transport|rnr) retry counter exceeded)";

/// UCX (`uct/ib`, `ucp`): completion errors, endpoint failures and verbs setup failures
/// as UCX logs them (`triggers/formats/ucx_libfabric.tsv`, `ucx/…` rows).
pub(super) static UCX: Table = Table {
    name: "ucx",
    summary: "UCX completion errors (ib_mlx5_log, rc/dc/ud verbs), IB async events, endpoint failures and verbs setup failures; UCC's (collectives over UCX, NCCL, SHARP, verbs) failures and timeouts",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "ucx-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "UCX: transport retry count exceeded (syndrome 0x15, status 12: the peer stopped ACKing ~30 s earlier) or RNR retry count exceeded (status 13: the peer posted no receive)",
            example: "[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)",
            patterns: &[
                pat(RETRY_MLX5, &["ucx/ib_mlx5_log/transport-retry-*", "ucx/ib_mlx5_log/rnr-retry-*"]),
                pat(
                    RETRY_QP,
                    &[
                        "ucx/ib_mlx5_log/error-on-qp-transport-retry-v1.2",
                        "ucx/ib_mlx5_log/error-on-dev-qp-transport-retry-v1.5",
                    ],
                ),
                pat(
                    RETRY_WC,
                    WC_ERROR_ROWS,
                ),
                pat(RETRY_UMR, &["ucx/mlx5dv_md/umr-poll-cq-returned-status"]),
            ],
            unless: &[],
        },
        Builtin {
            name: "ucx-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCX: a work completion failed (protection, remote access, QP operation…), a post or CQ poll/arm failed, or the HCA raised a fatal async event (QP/CQ/SRQ error, port error, catastrophic error)",
            example: "[a670n1:162239:0:162239] ib_mlx5_log.c:177  Local protection on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/2)",
            patterns: &[
                pat(
                    r"(?P<error>(?:Local (?:length|QP operation|protection|access)|Memory window bind|Bad response|Invalid request|Remote (?:access|QP|OP|operation|side aborted)|Generic)(?: error)?) on (?P<hca>[\w.-]+):(?P<port>\d+)/\w+ \(synd (?P<syndrome>0x[0-9a-fA-F]+) vend (?P<vendor_err>0x[0-9a-fA-F]+)",
                    &[
                        "ucx/ib_mlx5_log/local-*",
                        "ucx/ib_mlx5_log/mw-bind-*",
                        "ucx/ib_mlx5_log/bad-resp-*",
                        "ucx/ib_mlx5_log/invalid-req-*",
                        "ucx/ib_mlx5_log/remote-*",
                        "ucx/ib_mlx5_log/generic-*",
                    ],
                ),
                pat(
                    r"strides -?\d+ next wqe \d+ desc \S+ .*?\] on (?P<hca>[\w.-]+):(?P<port>\d+)/\w+ \(synd (?P<syndrome>0x[0-9a-fA-F]+) vend (?P<vendor_err>0x[0-9a-fA-F]+)",
                    &["ucx/ib_mlx5_log/resp-err-srq-dump-*"],
                ),
                pat(
                    r"Error on (?:(?P<hca>[\w.-]+):(?P<port>\d+) )?QP (?P<qp>0x[0-9a-fA-F]+) wqe\[-?\d+\]: (?P<error>[^(]+?) \(synd (?P<syndrome>0x[0-9a-fA-F]+) vend (?P<vendor_err>0x[0-9a-fA-F]+)",
                    &[
                        "ucx/ib_mlx5_log/error-on-qp-v1.2",
                        "ucx/ib_mlx5_log/error-on-qp-local-qp-op-v1.2",
                        "ucx/ib_mlx5_log/error-on-qp-remote-access-v1.2",
                        "ucx/ib_mlx5_log/error-on-dev-qp-v1.5",
                    ],
                ),
                pat(
                    r"(?i)(?:send|receive) completion(?:\[-?\d+\]| \(wr_id=0x[0-9a-f]+)? with error(?: on (?:qp (?P<qp>0x[0-9a-f]+)|xrq|(?P<hca>[\w.-]+)/\S+?))?: (?P<error>[^,\[]+?)(?: qpn 0x| syndrome 0x|,| \[|\s*$)",
                    WC_ERROR_ROWS,
                ),
                pat(
                    r"IB Async event on (?P<hca>[\w.-]+): (?P<event>CQ error|local work queue catastrophic error|invalid request local work queue error|local access violation work queue error|path migration request error|SRQ catastrophic error|local catastrophic error|port error|DCT key violation|DCT access error|DCT requester error) on ",
                    &[
                        "ucx/ib_device/async-cq-error",
                        "ucx/ib_device/async-qp-*",
                        "ucx/ib_device/async-path-mig-err",
                        "ucx/ib_device/async-srq-err",
                        "ucx/ib_device/async-device-fatal",
                        "ucx/ib_device/async-port-err",
                        "ucx/ib_device/async-dct-*",
                    ],
                ),
                pat(
                    r"[Ff]ailed to poll (?:send|receive) CQ",
                    &["ucx/ud_verbs/failed-to-poll-send-cq", "ucx/ib_device/failed-to-poll-receive-cq"],
                ),
                pat(
                    r"ibv_post_(?:send|recv|srq_recv)\(\) returned (?P<retcode>-?\d+)",
                    &[
                        "ucx/rc_verbs/ibv-post-send-returned",
                        "ucx/rc_verbs/ibv-post-srq-recv-returned",
                        "ucx/ud_verbs/ibv-post-recv-returned",
                    ],
                ),
                pat(
                    r"ibv_req_notify_cq\((?P<hca>[\w.-]+):(?P<port>\d+)(?:/\w+)?, -?\d+, sol=-?\d+\) failed: (?P<error>.+)",
                    &["ucx/ib_iface/ibv-req-notify-cq-failed-*"],
                ),
                pat(
                    r"DCI \(qpnum=-?\d+\) does not exist|failed to (?:reset|connect) dci\[-?\d+\] qpn (?P<qp>0x[0-9a-fA-F]+): (?P<error>.+)",
                    &[
                        "ucx/dc_mlx5/dci-does-not-exist",
                        "ucx/dc_mlx5/failed-to-reset-dci",
                        "ucx/dc_mlx5/failed-to-connect-dci",
                    ],
                ),
                pat(r"tx wq overrun: hw_ci: \d+ sw_pi: \d+", &["ucx/mlx5/tx-wq-overrun"]),
                // `transport error: ` alone is far too common; UCX's header comes right before it.
                pat(
                    r"(?:UCX +ERROR|\.c:\d+) +(?:Fatal: |FATAL: )?transport error: (?P<error>.+)",
                    &["ucx/ud_iface/transport-error-v1.8"],
                ),
            ],
            unless: &[RETRY_MLX5, RETRY_QP, RETRY_WC],
        },
        Builtin {
            name: "ucx-endpoint-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCX: an endpoint failed (timeout, a UD peer that stopped answering, unreachable peer, keepalive, rdmacm error event, a shared-memory segment it could not attach or connect to) and the application installed no error handler, wireup found no transport to the peer, or a flush failed",
            example: "[1701292112.836497] [a670n1:162239:0]          ucp_ep.c:1508 UCX  DIAG  ep 0x7f1eac0b5108: error 'Input/output error' on rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed",
            patterns: &[
                pat(
                    r"\b[Ee]rror '(?P<error>[^']*)' (?:on (?:(?:CM|wireup|NULL) lane|[\w -]+?/(?:(?P<hca>[\w.-]+):(?P<port>\d+)|[\w.-]+)) |occurred on wireup )?will not be handled",
                    &[
                        "ucx/ucp_worker/error-will-not-be-handled-*",
                        "ucx/ucp_worker/error-wireup-will-not-be-handled-*",
                        "ucx/ucp_ep/ep-error-will-not-be-handled*",
                        "ucx/ucp_worker/ep-error-will-not-be-handled-wireup-lane",
                    ],
                ),
                pat(
                    r"\bError (?P<error>.+?) was not handled for ep 0x",
                    &["ucx/uct_iface/error-was-not-handled-v1.2", "ucx/ucp_worker/error-was-not-handled-v1.3"],
                ),
                pat(
                    r"UD endpoint \S+(?: to (?:(?P<peer>[^\s:]+):-?\d+|<no debug data>))?: unhandled timeout error",
                    &["ucx/ud_ep/unhandled-timeout-*"],
                ),
                // A UD endpoint's peer stopped answering (logged at DEBUG in releases; ERROR
                // in the 2019 build the report came from): how long, and the configured limit.
                pat(
                    r"\bep 0x[0-9a-fA-F]+: timeout of (?P<stuck_s>\d+)(?:\.\d+)? sec(?:, config::peer_timeout - | \(timeout - |\s*$)",
                    &["ucx/ud_ep/ep-timeout-*"],
                ),
                // Shared-memory transports (sysv, posix, xpmem) could not attach or connect
                // to a peer's segment (not `shm_open(…) failed`: probing for a segment it may
                // create, which it survives); a sockaddr client or server on a device UCX
                // does not use.
                pat(
                    r"\bshmat\(shmid=-?\d+\) failed: |\bfailed to connect to remote peer with mm\b|\bFailed to attach to remote mmid:|\bmm ep failed to connect to remote FIFO id |\bError returned from open in attach\. |\bxpmem_get\(segid=0x[0-9a-fA-F]+\) failed: |\bfailed to attach xpmem apid |\bconnect to \S+ failed: device .+? is not enabled, enable it in UCX_NET_DEVICES|\bfailed to create a uct sockaddr endpoint on |\bgot connection request from \S+ on a device .+? which was not present during UCP initialization",
                    &["ucx/mm_sysv/*", "ucx/mm_ep/*", "ucx/mm_posix/*", "ucx/mm_xpmem/*", "ucx/wireup_cm/*"],
                ),
                pat(
                    r"keepalive failed on ep 0x[0-9a-fA-F]+ lane\[-?\d+\]=\S+: (?P<error>.+)",
                    &["ucx/ucp_worker/keepalive-failed"],
                ),
                pat(r"Failed to cancel tag rndv op (?P<error>.+)", &["ucx/ucp_tag/failed-to-cancel-tag-rndv-op"]),
                pat(
                    r"got error event (?P<event>.+?), (?:event )?status (?P<status>-?\d+|.+?\(-?\d+\))",
                    &["ucx/rdmacm/got-error-event-*"],
                ),
                pat(
                    r"received event (?P<event>.+?)\. status = (?P<status>-?\d+)\. Peer: (?P<peer>\S+?)\.?\s*$",
                    &["ucx/rdmacm/received-event-status"],
                ),
                pat(
                    r"ibv_create_ah\(.*?\)(?: for .+?)?(?: on (?P<hca>[\w.-]+))? failed: (?P<error>.+)",
                    &["ucx/ib_device/ibv-create-ah-failed-*"],
                ),
                pat(r"\bno [\w -]+ transport to .+?: ", &["ucx/ucp_wireup/no-transport-to"]),
                // ucp flush: v1.8–v1.9 bare, v1.10+ `req %p: ` (v1.10–v1.13 add the comp count).
                pat(r"\berror during flush: (?P<error>[^,\r\n]+)", &["ucx/ucp_flush/error-during-flush-*"]),
                // v1.22 lane failover and recovery: a lane failed and the endpoint could not
                // (or could only partly) recover.
                pat(
                    r"\bep:? (?:0x[0-9a-fA-F]+|\(nil\)): (?:failover reconfig, failed_lanes |recovery retries exhausted|no lanes to recover|AM lane not found after reconfiguration|failed to clear FAILED states for lanes |set_next_ep failed for recovery |connect_to_ep_v2 failed for recovery |local failover for LANES_ADDR_REQ failed|recovery support requires UCX 1\.22)",
                    &[
                        "ucx/ucp_ep/failover-reconfig-failed-lanes-diag",
                        "ucx/ucp_ep/recovery-*",
                        "ucx/ucp_ep/no-lanes-to-recover-diag",
                        "ucx/ucp_ep/am-lane-not-found-after-reconfig-diag",
                        "ucx/ucp_ep/failed-to-clear-failed-lane-states",
                        "ucx/wireup/local-failover-lanes-addr-req-failed-diag",
                    ],
                ),
                // v1.16+: no protocol reaches the peer's memory for this operation (the request
                // is aborted): a transport or memory type missing on one side.
                pat(r"cannot find remote protocol for: ", &["ucx/proto_reconfig/cannot-find-remote-protocol"]),
            ],
            unless: &[
                // A gtest that skips for want of a transport (`[     SKIP ] (no active messages
                // transport to …)`) is a test run, not a failure.
                r"\[\s+SKIP\s+\]",
            ],
        },
        Builtin {
            name: "ucx-setup-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCX: a verbs or DEVX resource call failed (QP/CQ/UMR creation, QP state change, device/port query, memory registration, async event read), GPUDirect RDMA could not be enabled, no usable transport was found, or none could listen for connections; a uGNI (Cray) call returned an error code",
            example: "[1652739463.054681] [cn0022:4071024:0]        ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
            patterns: &[
                // The uGNI transport (Cray Gemini/Aries): a GNI call that returned an error
                // code, which it prints by name.
                pat(
                    r"\bGNI_\w+(?:,| failed| falied\.?)[^\r\n]*?\bError status:? (?P<error>GNI_RC_\w+)",
                    &["ucx/ugni/*"],
                ),
                // ucp_listener_create: no transport (v1.3-v1.10) or component (v1.11-) can
                // listen on the address, so no client can connect.
                pat(
                    r"\bnone of the available transports can listen for connections on |\bcannot create listener: none of the available components supports it",
                    &["ucx/ucp_listener/*"],
                ),
                pat(
                    r"\b(?:ibv|mlx5dv)_create_cq\((?:cqe=-?\d+)?\) failed: (?P<error>[^.:]*[^.: ])",
                    &[
                        "ucx/ib_iface/ibv-create-cq-failed*",
                        "ucx/mlx5/mlx5dv-create-cq-failed*",
                    ],
                ),
                pat(
                    r"failed to create [\w ]+? QP TX wr:-?\d+ sge:-?\d+ inl:-?\d+ ",
                    &["ucx/ib_iface/create-qp-failed-*"],
                ),
                pat(
                    r"(?:UCX  ERROR |rc_(?:iface|ep)\.c:\d+ +)failed to create qp: (?P<error>.+)",
                    &["ucx/rc_iface/failed-to-create-qp"],
                ),
                pat(
                    r"\w+\(address=(?:0x[0-9a-fA-F]+|\(nil\)), length=\d+, access=0x[0-9a-fA-F]+\)(?: failed: (?P<error>[^.:]*[^.: ])|\. Application is using HUGE pages)",
                    &["ucx/ib_md/reg-mr-failed*"],
                ),
                pat(
                    r"\bmodify qp (?P<qp>0x[0-9a-fA-F]+) to state -?\d+ failed: (?P<error>.+)",
                    &["ucx/ib_device/modify-qp-state-failed"],
                ),
                pat(
                    r"\berror modifying QP to (?:INIT|RTR|RTS): (?P<error>.+)",
                    &["ucx/rc_iface/error-modifying-qp-to-*"],
                ),
                pat(
                    r"ibv_get_async_event\(\) failed: (?P<error>.+)",
                    &["ucx/ib_device/ibv-get-async-event-failed"],
                ),
                pat(
                    r"(?P<hca>[\w.-]+): Couldn't enable GPUDirect RDMA\. Please make sure",
                    &["ucx/ib_md/gpudirect-rdma-*"],
                ),
                pat(r"no usable transports/devices \(asked ", &["ucx/ucp_context/no-usable-transports"]),
                // v1.18+: a transport's interface on a device would not open (the worker is
                // not created).
                pat(
                    r"\buct_iface_open\([^/()\r\n]+/[^()\r\n]+\) failed: (?P<error>.+)",
                    &["ucx/ucp_worker/uct-iface-open-failed"],
                ),
                // v1.14-1.22 and master: ECE, the DMA/MMO buffer, relaxed-ordering memory keys
                // the firmware requires, GPU memory pinning, the transports/devices limit.
                pat(
                    r"ibv_set_ece\(device=\S+ qpn=0x[0-9a-fA-F]+[^)\r\n]*\) failed: |ibv_reg_mr\([^)\r\n]*\) failed to register DMA/MMO opaque buffer|: firmware requires relaxed-only memory keys|IB_PCI_RELAXED_ORDERING=yes requires relaxed-only memory keys|strong-order memory keys are not supported; IB_PCI_RELAXED_ORDERING=n is invalid|GPU memory pin failed\. length \d+ ret |exceeded transports/devices limit \(",
                    &[
                        "ucx/rc_iface/ibv-set-ece-failed-v1.22",
                        "ucx/ib_device/ibv-set-ece-failed-v1.14",
                        "ucx/gga_mlx5/ibv-reg-mr-dma-mmo-opaque-buffer-failed",
                        "ucx/ib_md/firmware-requires-relaxed-only-mkeys",
                        "ucx/ib_md/relaxed-order-yes-requires-relaxed-only-mkeys",
                        "ucx/ib_md/strong-order-mkeys-not-supported",
                        "ucx/gdr_copy_md/gpu-memory-pin-failed-v1.22",
                        "ucx/ucp_context/exceeded-transports-devices-limit-*",
                    ],
                ),
                // The IB transports' other resource setup: DCT/DCI, SRD (EFA) and tag-matching
                // control QPs, SRQs, parent domains, DEVX event channels, rdmacm listeners.
                pat(
                    concat!(
                        r"(?:UCX +ERROR +|\w\.[ch]:\d+ +)(?:(?:error modifying DCT|[Ff]ailed to modify (?:TM control|SRD) QP) to (?:INIT|RTR|RTS): ",
                        r"|failed to create (?:TM control QP: |a dummy ud qp\. )",
                        r"|ibv_(?:alloc_parent_domain\(\) on \S+|create_srq_ex\(device=\S+\)|query_ece\(device=\S+ qpn=0x[0-9a-fA-F]+\)) failed: ",
                        r"|mlx5dv_devx_(?:create_event_channel\(\)|subscribe_devx_event\([^)\r\n]*\)) failed",
                        r"|rdma_listen\(id:=[^)\r\n]*\) failed: ",
                        r"|iface (?:0x[0-9a-fA-F]+|\(nil\)): failed to (?:connect|create) dci -?\d+ at pool -?\d+",
                        r"|Can't allocate TX resources, try to decrease dcis number",
                        r"|cannot create verbs (?:DCI|DCT|RC QP) with DEVX CQ",
                        r"|failed to get port MTU: |failed to post receives)",
                    ),
                    &[
                        "ucx/dc_mlx5/error-modifying-dct-to-*",
                        "ucx/rc_mlx5_common/failed-to-*",
                        "ucx/rdmacm_cm_ep/failed-to-create-a-dummy-ud-qp",
                        "ucx/srd_iface/failed-to-modify-srd-qp-to-*",
                        "ucx/ib_mlx5/ibv-alloc-parent-domain-on-failed",
                        "ucx/rc_mlx5_common/ibv-create-srq-ex-device-failed",
                        "ucx/rc_iface/ibv-query-ece-device-qpn-0x-failed",
                        "ucx/rc_mlx5_devx/mlx5dv-devx-*",
                        "ucx/rdmacm_listener/rdma-listen-id-addr-backlog-failed",
                        "ucx/dc_mlx5_ep/iface-failed-to-*",
                        "ucx/dc_mlx5/can-t-allocate-tx-resources-try-to-decrease-dcis-n",
                        "ucx/dc_mlx5/cannot-create-verbs-*",
                        "ucx/rc_mlx5_iface/cannot-create-verbs-rc-qp-with-devx-cq",
                        "ucx/rc_mlx5_iface/failed-to-get-port-mtu",
                        "ucx/rc_verbs_iface/failed-to-post-receives",
                    ],
                ),
                // DEVX object create/modify/query with the firmware syndrome (v1.8–v1.13 `%x`,
                // v1.14+ `0x%x` and `failed on <dev>`). Probes (DUMMY_QP, KSM mkey) are vetoed.
                pat(
                    r"mlx5dv_devx_(?:obj_create|obj_modify|obj_query|qp_modify|qp_query)\([^)]*\) failed(?: on (?P<hca>[\w.-]+))?, syndrome (?P<syndrome>(?:0x)?[0-9a-fA-F]+): (?P<error>.+)",
                    &["ucx/mlx5dv/devx-*"],
                ),
                pat(
                    r"ibv_(?:exp_)?query_(?:device(?:_ex)?|port|gid) ?\((?:dev=)?(?P<hca>[\w.-]*)[^)]*\) (?:returned (?P<retcode>-?\d+)|failed): (?P<error>.+)",
                    &[
                        "ucx/ib_verbs/ibv-*",
                        "ucx/rdmacm_cm/ibv-query-*",
                        "ucx/ib_device/ibv-query-port-returned",
                        "ucx/ib_device/ibv-query-gid-failed",
                    ],
                ),
                pat(
                    r"ibv_(?:exp_)?modify_qp\(DCI, (?:INIT|RTR|RTS)\) failed : (?P<error>.+)",
                    &["ucx/dc_mlx5/ibv-modify-qp-dci-*", "ucx/dc_mlx5/ibv-exp-modify-qp-dci-*"],
                ),
                pat(
                    r"(?P<hca>[\w.-]+): (?:ibv_modify_qp\(UMR QP (?P<qp>0x[0-9a-fA-F]+)\) failed to modify to \w+|(?:ibv_create_cq|mlx5dv_create_qp|mlx5dv_create_mkey)\(\) failed to create UMR (?:CQ|QP|mkey)): (?P<error>.+)",
                    &[
                        "ucx/mlx5dv_md/umr-modify-qp-*",
                        "ucx/mlx5dv_md/umr-create-*",
                    ],
                ),
                pat(
                    r"(?P<hca>[\w.-]+): ibv_(?:post_send\(UMR QP|poll_cq\(UMR CQ), [^,]*, UMR mkey \S+ index 0x[0-9a-fA-F]+\) (?:returned (?P<retcode>-?\d+)(?:, status)?: (?P<error>.+)|timed out)",
                    &[
                        "ucx/mlx5dv_md/umr-post-send-returned",
                        "ucx/mlx5dv_md/umr-poll-cq-*",
                    ],
                ),
                pat(
                    r"failed to register address (?:0x[0-9a-fA-F]+|\(nil\)) (?:mem_type bit 0x[0-9a-fA-F]+|\([^)]*\)) length \d+(?: dmabuf_fd -?\d+)? on md\[-?\d+\]=[^:]*: (?P<error>.+?) \(md (?:reg_mem_types|supports)",
                    &["ucx/ucp_mm/failed-to-register-address-*"],
                ),
                pat(
                    r"failed to register user buffer datatype 0x[0-9a-fA-F]+ address (?:0x[0-9a-fA-F]+|\(nil\)) len \d+: (?P<error>.+)",
                    &["ucx/ucp_request/failed-to-register-user-buffer"],
                ),
                // ucx_perftest (libperf): endpoint setup.
                pat(
                    r"\b(?:ucp_ep_create\(\) failed|Failed to setup endpoints): (?P<error>.+)",
                    &["ucx/libperf/*"],
                ),
                // v1.9-1.14: DEVX could not register the memory it needs (at ERROR only when it is
                // required).
                pat(
                    r"(?:UCX +ERROR +|\w\.[ch]:\d+ +)mlx5dv_devx_umem_reg\(\) failed: ",
                    &["ucx/ib_mlx5/devx-umem-reg-failed"],
                ),
            ],
            unless: &[RETRY_UMR, r"mlx5dv_devx_\w+\((?:[\w.-]+:\d+, DUMMY_QP|CREATE_MKEY, mode=KSM)"],
        },
        // UCC (openucx/ucc, PyTorch's `ucc` backend, Open MPI's coll/ucc): its log header
        // is UCX's with the component's name (`UCC`, `TL_UCP`, `TL_NCCL`, `CL_HIER`, …) in
        // place of `UCX`. Its transport failures (tl/ucp over UCX, tl/mlx5 on verbs) are
        // `ucc-transport-error`; the rest of its failures, the collective library's own,
        // are here.
        Builtin {
            name: "ucc-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "UCC, the collective library under PyTorch's `ucc` backend and Open MPI's coll/ucc, failed: no TL or CL context or team could be created, library init or the address exchange failed, a collective could not be initialised or a task failed, NCCL (tl/nccl), SHARP (tl/sharp) or CUDA (tl/cuda, mc/cuda) returned an error, a reduction failed; or a collective through Open MPI's coll/ucc failed",
            example: "[1620909051.938235] [jazz32:87543:0]     ucc_context.c:370  UCC  ERROR no CL context created in ucc_context_create",
            patterns: &[
                pat(
                    r"\bTL_NCCL +ERROR +(?:NCCL error -?\d+ |failed to get unique id|incorrect unique id|oob req test failed)",
                    &["ucc/tl_nccl/*"],
                ),
                pat(
                    r"\bUCC +ERROR +(?:failure in task |failed to init collective: |failed to create (?:tl|cl) context for |no (?:tl contexts were|CL context|TL context) created|failed to exchange addresses during context creation|ctx create epilog for [^\r\n]*? failed|[Nn]o CL teams were created|lib_init failed for component: [^,\r\n]*?\s*$|service allreduce test failure: |failed to create service tl ucp team|oob req test failed during team addr exchange|[^\r\n]*?\(\) failed: -?\d+\(|cudaIpcOpenMemHandle error |[^\r\n]*?: failed to open ipc mem handle\. )",
                    &["ucc/core/*", "ucc/tl_cuda/ipc-open-memhandle", "ucc/tl_cuda/open-ipc-mem-handle"],
                ),
                pat(
                    r"\bCL_(?:HIER|BASIC) +ERROR +(?:no tl teams were created|failed to init oob for sbgp |failed to post tl team create \(|no TL contexts are available)",
                    &["ucc/cl_hier/*", "ucc/cl_basic/*"],
                ),
                pat(
                    r"\bTL_SHARP +ERROR +(?:sharp_coll_\w+ failed|failed to broadcast SHARP job_id|Failed to initialize SHARP collectives:|sharp group create failed:|ucc_tl_sharp_mem_register failed)",
                    &["ucc/tl_sharp/*"],
                ),
                pat(
                    r"\bTL_CUDA +ERROR +(?:NVML error -?\d+ |error cudaEventQuery |CUDA device mismatch, )|\bcuda mc +ERROR +cuda failed with ret:",
                    &["ucc/tl_cuda/nvml-error", "ucc/tl_cuda/event-query", "ucc/tl_cuda/device-mismatch", "ucc/mc_cuda/cuda-failed-v1.0"],
                ),
                pat(
                    r"\bTL_UCP +ERROR +(?:no tl/ucp address for rank -?\d+|failed to perform dt reduction)",
                    &["ucc/tl_ucp/no-address-for-rank", "ucc/tl_ucp/dt-reduction-failed"],
                ),
                // Open MPI's coll/ucc on a collective that failed. Its set-up failures (lib or
                // context init, team create, coll/hcoll's init) are not failures: the
                // component disables itself and Open MPI runs its own collectives.
                pat(
                    r"\bError: [^\r\n]*? - \w+\(\) ucc_collective_test failed",
                    &["ompi/coll_ucc/collective-test"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "ucc-transport-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCC's transports failed: tl/ucp (over UCX) a send, receive, put, get or flush completing with an error, a connect error, a UCP context or worker that could not be created; tl/mlx5 (verbs) a failed CQ poll, RC QPs that could not connect (its completions with an error are `verbs-completion-error`'s)",
            example: "[1620909051.935207] [jazz32:87543:0]  tl_ucp_context.c:88   TL_UCP ERROR failed to create ucp worker, Input/output error",
            patterns: &[
                pat(
                    r"\bTL_UCP +ERROR +(?:failure in (?:send|recv|put|get|ep flush|alltoallv_hybird) completion |tag \d+; dest -?\d+; team_id \d+; errmsg |ucp returned connect error: |failed to connect team ep|error during ucp ep close, |failed to init ucp context, |failed to create ucp worker, |unable to complete UCX request=)",
                    &[
                        "ucc/tl_ucp/send-completion*",
                        "ucc/tl_ucp/recv-completion",
                        "ucc/tl_ucp/put-completion",
                        "ucc/tl_ucp/get-completion",
                        "ucc/tl_ucp/ep-flush-completion",
                        "ucc/tl_ucp/req-status-errmsg",
                        "ucc/tl_ucp/ucp-connect-error",
                        "ucc/tl_ucp/failed-connect-team-ep",
                        "ucc/tl_ucp/ep-close-error",
                        "ucc/tl_ucp/init-ucp-context",
                        "ucc/tl_ucp/create-ucp-worker",
                        "ucc/tl_ucp/alltoallv-hybrid-completion",
                        "ucc/tl_ucp/sliding-window-ucx-request",
                    ],
                ),
                pat(
                    r"\bTL_MLX5 +ERROR +(?:ibv_poll_cq\(\) failed, errno |failed to connect rc qps, )",
                    // Its completions with an error print the status the libibverbs way:
                    // `verbs-completion-error` and `verbs-retry-exceeded` (`ucc/tl_mlx5-wc/*`).
                    &["ucc/tl_mlx5/*"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "ucc-timeout",
            class: "nccl_timeout",
            pre_s: PRE,
            description: "UCC timed a collective out (`UCC_COLL_TIMEOUT`; the window is back-dated by the wait)",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "[1723681724.918927] [node1:4242:0]    ucc_schedule.h:252  UCC  WARN  timeout 600 sec. has expired on allreduce",
            patterns: &[pat(
                r"\bUCC +WARN +timeout [\d.e+-]+ sec\.? has expired on ",
                &["ucc/timeout/*"],
            )],
            unless: &[],
        },
    ],
};
