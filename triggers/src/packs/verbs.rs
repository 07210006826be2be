//! The `verbs` pack.

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// How far before a DeepEP timeout its window starts: the 100 s it waited, and 20 more.
const DEEPEP_TIMEOUT_PRE: u64 = 120;

/// libibverbs' `ibv_wc_status_str` wordings (and the kernel's `ib_wc_status_msg`, the same
/// but for three) of every error status that is not a common phrase, transport retry
/// exceeded aside (`verbs-retry-exceeded`'s).
macro_rules! wc_status_str {
    () => {
        r"(?:local (?:length|QP operation|EE context operation|protection|access|RDD violation) error|work request flushed error|memory management operation error|bad response error|remote (?:invalid request|access|operation) error|RNR retry counter exceeded|remote invalid RD request|invalid EE context (?:number|state)|response timeout error)"
    };
}

/// The error statuses by enum name (`enum ibv_wc_status`, the kernel's `enum ib_wc_status`),
/// success, tag-matching rendezvous and transport retry exceeded aside.
macro_rules! wc_status_enum {
    () => {
        r"IBV?_WC_(?:LOC_LEN_ERR|LOC_QP_OP_ERR|LOC_EEC_OP_ERR|LOC_PROT_ERR|WR_FLUSH_ERR|MW_BIND_ERR|BAD_RESP_ERR|LOC_ACCESS_ERR|REM_INV_REQ_ERR|REM_ACCESS_ERR|REM_OP_ERR|RNR_RETRY_EXC_ERR|LOC_RDD_VIOL_ERR|REM_INV_RD_REQ_ERR|REM_ABORT_ERR|INV_EECN_ERR|INV_EEC_STATE_ERR|FATAL_ERR|RESP_TIMEOUT_ERR|GENERAL_ERR|TM_ERR)\b"
    };
}

/// Verbs users other than NCCL and UCX: rdma-core's providers and examples, Open MPI, Gloo's
/// ibverbs transport, RDMA applications (Mooncake, GPI-2, brpc, …) and the kernel's RDMA drivers.
pub(super) static VERBS: Table = Table {
    name: "verbs",
    summary: "RDMA verbs completion errors and QP/CQ async errors, CM failures and setup errors from rdma-core providers and examples, Open MPI, Gloo's ibverbs transport and other verbs applications (Mooncake, MSCCL++, GPI-2, brpc), and the kernel RDMA drivers (mlx5, EFA, bnxt_re, irdma, hns, ionic, qedr, rxe, siw) and core (ib_mad) and upper layers (NFS over RDMA, iSER, SRP, RDS, SMB Direct); HPC runtimes' transports (GASNet-EX, Mercury and DAOS's CaRT, BeeGFS, Sandia OpenSHMEM)",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "verbs-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "Transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR, status 12, syndrome 0x15): the peer stopped ACKing ~30 s earlier",
            example: "CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10",
            patterns: &[
                pat(
                    r"Failed status transport retry counter exceeded \((?P<status>\d+)\) for wr_id",
                    &["rdma-core/ibv_examples/failed-status-for-wr-id"],
                ),
                pat(
                    r"(?:cq completion failed status|recv wc error:|Work completion error) (?P<status>12)\b",
                    &[
                        "rdma-core/rdmacm_examples/cq-completion-failed-status",
                        "rdma-core/rdmacm_examples/recv-wc-error",
                        "rdma-core/ibv_examples/work-completion-error",
                    ],
                ),
                pat(
                    r"Fail to handle RDMA completion, error status\((?P<status>12)\)",
                    &["brpc/rdma/completion-error-status"],
                ),
                pat(r"status=12\(transport retry counter exceeded\)(?:.*?qp_num=(?P<qp>0x[0-9a-fA-F]+))?", &["uccl/ep-cqe-error*", "uccl/lite-ep-cqe-error-thread"]),
                pat(r"(?i)transport retry count(?:er)? exceeded", &["mori/io/cqe-error-*", "mori/io/notif-*", "mori/device/*", "rdma-core/libibverbs/wc-status-str/transport-retry-counter-exceeded", "rdma-core/ionic/cqe-with-error-npg", "rlib/poll-till-completion-*", "r2/single-op-poll-till-completion-error", "r2/rc-session-wait-completion-error", "r2/ring-session-wait-completion-error", "rlibv2/poll-till-completion-error", "wukong/bad-completion*", "uccl/ep-cqe-error*", "uccl/lite-ep-cqe-error-thread", "uccl/ep-rdma-error", "uccl/p2p-cqe-error-*", "uccl/p2p-efa-cqe-error", "uccl/efa-*", "linux-rdma/mlx5_ib/cq/wc-error", "linux-rdma/mlx5_ib/qp/qp-err-syndrome", "mooncake/worker_pool/process-failed-for-slice*", "gpi2/ib_io/failed-request-queue-broken", "gpi2/ib_io/failed-request-queue-broken-noerrno", "gpi2/ib_atomic/failed-request-v1.1", "ucc/tl_mlx5-wc/*", "mvapich2/cq-wc/*", "pscom/openib/failed-*", "linux-rdma/xprtrdma/verbs/recv-completion-error", "linux-rdma/svcrdma/sendto/send-completion-error", "linux-rdma/svcrdma/recvfrom/recv-completion-error", "linux-rdma/iser/verbs/err-comp", "linux-rdma/isert/print-wc-failure", "linux-rdma/srp/qp-err-completion", "linux-rdma/rds/ib-send-completion-error", "linux-rdma/rds/ib-recv-completion-error", "linux-rdma/rds/ib-frmr-completion-error", "linux-rdma/smbdirect-client/wc-status-7x", "linux-rdma/ksmbd/send-error", "linux-rdma/ksmbd/recv-error", "linux-rdma/ksmbd/rw-error"]),
                // bnxt_re: CQ_REQ_STATUS_TRANSPORT_RETRY_CNT_ERR.
                pat(
                    r"FP: CQ Processed Req wr_id\[-?\d+\] = 0x[0-9a-fA-F]+ with status 0xa(?:[^0-9a-fA-F]|$)",
                    &["linux-rdma/bnxt_re/qplib_fp/cq-processed-req-retry-exceeded"],
                ),
                pat(r"wc->status == IBV_WC_SUCCESS.*? error: (?P<status>12)\b", &["uccl/rc-send-cq-state-error*", "uccl/rc-recv-cq-state-error*", "uccl/uc-send-cq-state-error*", "uccl/uc-recv-cq-state-error*", "uccl/ctrl-cq-state-error*"]),
                // By enum name (`enum ibv_wc_status`, the kernel's `enum ib_wc_status`), and
                // rdma-core's ionic provider with the status number.
                pat(
                    r"IBV?_WC_RETRY_EXC_ERR\b|cqe with error (?P<status>12) for 0x[0-9a-fA-F]+ \((?:recv|msn)\)(?:, qpid (?P<qp>\d+))?",
                    &[
                        "rdma-core/libibverbs/wc-status-enum/ibv-wc-retry-exc-err",
                        "linux/ib_verbs_h/wc-status-enum/ib-wc-retry-exc-err",
                        "mvapich2/cq-wc/wc-status-explain-retry-exc",
                        "rdma-core/ionic/cqe-with-error-recv",
                        "rdma-core/ionic/cqe-with-error-msn",
                    ],
                ),
                // Gloo ibverbs: `wc->status == IBV_WC_SUCCESS. 12 vs 0. Send for slot 0: …`.
                pat(
                    r"IBV_WC_SUCCESS\. (?P<status>12) vs 0\.|IBV_WC_SUCCESS\. -?\d+ vs 0\. (?:Send|Recv|Memory region (?:send|recv)) for slot -?\d+: transport retry counter exceeded",
                    &["gloo/ibverbs/wc-status-*"],
                ),
            ],
            unless: &[
                // UCX's own wordings belong to the ucx pack.
                r"Transport retry count exceeded on [\w.-]+:\d+",
                r"Error on QP 0x[0-9a-fA-F]+ wqe\[",
                r"(?i)completion with error on qp 0x[0-9a-f]+: transport retry",
                super::ucx::RETRY_MLX5,
                super::ucx::RETRY_QP,
                super::ucx::RETRY_WC,
                super::ucx::RETRY_UMR,
                super::libfabric::RETRY,
                // NCCL >= 2.28.7 prints the status name: the nccl pack's line.
                r"Got completion from peer ",
                // The NCCL OFI plugin's completion lines: the nccl-ofi pack's.
                r"NET/OFI ",
                // perftest >= 26.01 prints the status name: the perftest pack's line.
                r"Failed status-[^(]*\(\d+\): ",
                // NVMe-oF's (SPDK, Linux nvme-rdma/nvmet-rdma) belong to the nvmeof pack.
                r"for CQE(?: 0x[0-9a-fA-F]+)? failed with status ",
                r"WC error, (?:qid \d+, )?qp state ",
                r"Error on CQ 0x",
                r"CQ error(?: on |, abort| \()",
                r"Send CQ error ",
            ],
        },
        Builtin {
            name: "verbs-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs work completion failed (protection, remote access, QP operation, flush…), a provider found a bad CQE, or an async event put a QP or CQ in error; also any application printing a failed completion or an error async event with libibverbs' status or event string or enum name",
            example: "@10.150.240.28 [single_op.hpp:129] poll till completion error: 10 remote access error",
            patterns: &[
                pat(
                    r"mlx4: local QP operation err \(QPN (?P<qp>[0-9a-fA-F]+), WQE index [0-9a-fA-F]+, vendor syndrome (?P<vendor_err>[0-9a-fA-F]+), opcode = [0-9a-fA-F]+\)",
                    &["rdma-core/mlx4/mlx4-local-qp-operation-err-qpn-wqe"],
                ),
                pat(
                    r"local QP operation err \(QPN (?P<qp>[0-9a-fA-F]+), WQE @ [0-9a-fA-F]+, CQN [0-9a-fA-F]+, index -?\d+\)",
                    &["rdma-core/mthca/local-qp-operation-err"],
                ),
                pat(
                    r"mlx5: [\w.-]+: got completion with error:",
                    &["rdma-core/mlx5/mlx5-got-completion-with-error"],
                ),
                // ionic (AMD Pensando, rdma-core 61+): its poll loop's error CQEs.
                pat(
                    r"\bcqe with error \S+ for 0x[0-9a-fA-F]+ \((?:recv|msn|npg)\), qpid (?P<qp>\d+) cqid \d+",
                    &["rdma-core/ionic/cqe-error-*"],
                ),
                pat(
                    r"Error: POLL CQ with (?P<error>\w+)\. (?:CQ icid=0x[0-9a-fA-F]+, )?QP icid=0x(?P<qp>[0-9a-fA-F]+)",
                    &[
                        "rdma-core/qedr/dp_log/error-poll-cq-with-*",
                        "rdma-core/qedr/verbs_log/error-poll-cq-with-*",
                        // The kernel's qedr (DP_ERR) names the CQ too.
                        "linux-rdma/qedr/verbs/poll-cq-req-*",
                    ],
                ),
                pat(
                    r"Failed status (?P<error>\w[\w ]*?) \((?P<status>\d+)\) for wr_id",
                    &["rdma-core/ibv_examples/failed-status-for-wr-id"],
                ),
                pat(
                    r"(?:cq completion failed status|recv wc error:|Work completion error) (?P<status>\d+)",
                    &[
                        "rdma-core/rdmacm_examples/cq-completion-failed-status",
                        "rdma-core/rdmacm_examples/recv-wc-error",
                        "rdma-core/ibv_examples/work-completion-error",
                    ],
                ),
                pat(
                    r"libi40iw-\w+: Error polling CQ, status (?P<status>-?\d+)",
                    &["rdma-core/i40iw/libi40iw-error-polling-cq-status"],
                ),
                pat(
                    r"hns: error cqe!|Invalid CQE status detected|Error: CQE QP pointer is NULL|Error: invalid CQE type = |:\d+: (?:un-expected (?:TM )?opcode in cqe|CQE invalid|got unexpected list op CQE|unknown signature error, syndrome 0x|unexpected signature error for non-signature domain)|Completion for unknown wr_id -?\d+|parse WC failed -?\d+|Error polling cq -?\d+|Failed to get cq event!|(?:^|[^0-9A-Za-ln-z_])poll error -?\d+\s*$",
                    &[
                        "rdma-core/hns/hns-error-cqe",
                        "rdma-core/hns/verbs_log/hns-error-cqe",
                        "rdma-core/qedr/dp_log/invalid-cqe-status-detected",
                        "rdma-core/qedr/verbs_log/invalid-cqe-status-detected",
                        "rdma-core/qedr/dp_log/error-cqe-qp-pointer-is-null-cqe",
                        "rdma-core/qedr/verbs_log/error-cqe-qp-pointer-is-null-cqe",
                        "rdma-core/qedr/error-invalid-cqe-type",
                        "rdma-core/mlx5/mlx5_dbg/un-expected-*",
                        "rdma-core/mlx5/mlx5_dbg/cqe-invalid",
                        "rdma-core/mlx5/mlx5_dbg/got-unexpected-list-op-cqe",
                        "rdma-core/mlx5/mlx5_dbg/unknown-signature-error-syndrome-0x",
                        "rdma-core/mlx5/mlx5_dbg/unexpected-signature-error-for-non-signature-domain",
                        "rdma-core/ibv_examples/completion-for-unknown-wr-id",
                        "rdma-core/ibv_examples/parse-wc-failed",
                        "rdma-core/ibv_examples/error-polling-cq",
                        "rdma-core/rdmacm_examples/failed-to-get-cq-event",
                        "rdma-core/rdmacm_examples/poll-error",
                    ],
                ),
                pat(
                    r"libsiw: (?:QP|CQ)\[-?\d+\] event: (?P<event>\w[\w ]*)|qelr_async_event not implemented yet",
                    &[
                        "rdma-core/siw/libsiw-qp-event-*",
                        "rdma-core/siw/libsiw-cq-event-error",
                        "rdma-core/siw/verbs_log/libsiw-qp-event-*",
                        "rdma-core/siw/verbs_log/libsiw-cq-event-error",
                        "rdma-core/qedr/qelr-async-event-not-implemented-yet-cq",
                    ],
                ),
                pat(r"ibv_poll_cq failed, status: (?P<status>\d+)", &["nvshmem/ibrc-poll-cq-wc-status"]),
                pat(r"poll till completion error: (?P<status>\d+)(?: (?P<error>[a-z]+(?: [a-z]+)*))?", &["rlib/poll-till-completion-error", "r2/single-op-*", "rlibv2/poll-till-completion-error"]),
                pat(r"Check failed: wc->status == IBV_WC_SUCCESS(?:.*? error: (?P<status>\d+))?", &["uccl/rc-send-cq-state-error", "uccl/rc-send-cq-state-error-v0", "uccl/rc-recv-cq-state-error", "uccl/uc-send-cq-state-error", "uccl/uc-recv-cq-state-error", "uccl/ctrl-cq-state-error"]),
                pat(r"got bad completion with status: (?P<status>0x[0-9a-fA-F]+|\d+)", &["wukong/bad-completion-qp", "wukong/bad-completion"]),
                // Gloo's ibverbs transport: the failed completion, the exception that carries it
                // out of the completion handler, and a failed post.
                pat(
                    r"wc->status == IBV_WC_SUCCESS\. (?P<status>-?\d+) vs 0\. (?:Send|Recv|Memory region (?:send|recv)) for slot -?\d+: (?P<error>[^\r\n]+)",
                    &["gloo/ibverbs/wc-status-*"],
                ),
                pat(
                    r": Exception in handleCompletion: |\] ERROR Exception while handling completion event: ",
                    &["gloo/ibverbs/handle-completion-exception", "gloo/ibverbs/completion-event-exception"],
                ),
                pat(r"\] ibv_post_(?:send|recv): -?\d+", &["gloo/ibverbs/post-send-failed*", "gloo/ibverbs/post-recv-failed*"]),
                // Vendor CQE prints: rdma-core's ionic, mana (debug builds) and cxgb4 (syslog)
                // providers, DPDK's mlx5 PMD (debug builds).
                pat(
                    r"cqe with error (?:(?P<status>\d+) for 0x[0-9a-fA-F]+ \((?:recv|msn)\)|[^\r\n]*? for 0x[0-9a-fA-F]+ \(npg\))(?:, qpid (?P<qp>\d+))?|error CQE wqid=\d+ psn=\d+ is_send=-?\d+ vendor_err=(?P<vendor_err>\d+) qp_num=\d+|cxgb4 err cqe [0-9a-fA-F]+ [0-9a-fA-F]+ |unexpected CQE error \d+ \(0x[0-9a-fA-F]+\) syndrome (?P<syndrome>0x[0-9a-fA-F]+)|MLX5 Error CQE: at \[",
                    &[
                        "rdma-core/ionic/cqe-with-error-*",
                        "rdma-core/mana/error-cqe-shadow-wqe-not-found",
                        "rdma-core/cxgb4/err-cqe",
                        "dpdk/mlx5/unexpected-cqe-error",
                        "dpdk/mlx5/error-cqe-hexdump",
                    ],
                ),
                // Any application that prints a failed completion's status the libibverbs way
                // (`ibv_wc_status_str`, or the kernel's `ib_wc_status_msg`) or by enum name, in
                // its own words. Four strings are common phrases (`fatal error`, `general
                // error`, …): claimed only after a word naming the completion.
                pat(
                    concat!(r"(?i)(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)", wc_status_str!(), r"\b"),
                    &[
                        "rdma-core/libibverbs/wc-status-str/*",
                        "rdma-core/ionic/cqe-with-error-npg",
                        "ucc/tl_mlx5-wc/*",
                        "mvapich2/cq-wc/*",
                    ],
                ),
                pat(
                    r"(?i)(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)(?:wc|wc_status|cqe|completion|mcast_recv|mcast_poll_send)\b[^\r\n]{0,48}?\b(?:fatal error|general error|aborted error|TM error|WR flushed|invalid request error|operation aborted)\b",
                    &["rdma-core/libibverbs/wc-status-str/*", "linux/ib_core/wc-status-msg/*", "ucc/tl_mlx5-wc/*", "mvapich2/cq-wc/*"],
                ),
                pat(
                    concat!(r"(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)", wc_status_enum!()),
                    &["rdma-core/libibverbs/wc-status-enum/*", "linux/ib_verbs_h/wc-status-enum/*", "mvapich2/cq-wc/*"],
                ),
                // An application's async event handler printing an error event the libibverbs
                // way (`ibv_event_type_str`), the kernel's (`ib_event_msg`) or by enum name;
                // `port error`, `CQ error` and the like only after a word naming the event.
                // The benign events (port active, LID/P_Key/GID/SM change, client
                // reregistration, last WQE reached, path migrated, SRQ limit reached,
                // communication established, send queue drained, link speed change) are not
                // failures.
                pat(
                    r"(?i)(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)(?:local work queue catastrophic error|invalid request local work queue error|local access violation work queue error|path migration request error|local catastrophic error|SRQ catastrophic error|QP fatal error|QP request error|QP access error)\b|(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)IBV?_EVENT_(?:CQ_ERR|QP_FATAL|QP_REQ_ERR|QP_ACCESS_ERR|PATH_MIG_ERR|DEVICE_FATAL|PORT_ERR|SRQ_ERR|WQ_FATAL)\b",
                    &[
                        "rdma-core/libibverbs/event-type-str/*",
                        "rdma-core/libibverbs/event-type-enum/*",
                        "linux/ib_core/event-msg/*",
                        "ceph/rdma-event/local-catastrophic",
                        "brpc/rdma/qp-fatal-error",
                    ],
                ),
                pat(
                    r"(?i)(?:^|[^A-Za-z0-9_]|\[[0-9;]*m)(?:async(?:hronous)?[ _]event|event)\b[^\r\n]{0,48}?\b(?P<event>port error|CQ error|SRQ error|WQ fatal|path migration error|device fatal error)\b",
                    &["rdma-core/libibverbs/event-type-str/*", "linux/ib_core/event-msg/*"],
                ),
            ],
            unless: &[
                // Accelio logs the flushed work requests of a closing connection at TRACE
                // (other completion errors at ERROR).
                r"\[TRACE\] - rdma_hndl:",
                // Transport retry exceeded is `verbs-retry-exceeded`'s; RNR retry exceeded is a
                // completion error like the others.
                r"(?i)transport retry count(?:er)? exceeded",
                // The kernel's RDMA upper layers print a failed completion by status name:
                // `kernel-rdma-ulp-error`'s.
                r"\b(?:rpc|svc)rdma: (?:Recv|Send): |\biser: iser_err_comp: |\bisert: isert_print_wc: |\bib_srp: failed [^\r\n]*? status |RDS/IB: (?:(?:send|recv) completion on|frmr completion) <|CIFS: VFS: \w+:-?\d+ wc->status=|ksmbd: smb_direct: (?:Send|Recv|read/write) error",
                r"wc->status == IBV_WC_SUCCESS.*? error: 12\b",
                r"IBV_WC_SUCCESS\. 12 vs 0\.",
                r"(?:cq completion failed status|recv wc error:|Work completion error) 12\b",
                r"IBV?_WC_RETRY_EXC_ERR\b",
                // ParaStation MPI's pscom: `pscom-error`'s.
                r"<PSP:[^>]*?:ib:Failed [\w ]+? request \(status -?\d+ : ",
                r"cqe with error 12 for 0x[0-9a-fA-F]+ \((?:recv|msn)\)",
                // Programs with their own trigger print the same status and event strings (UCX,
                // NCCL, SPDK, the kernel's NVMe-oF drivers and mlx5_ib, libfabric, Open MPI,
                // perftest, Mooncake, GPI-2, UCCL, rlib/r2): their wordings stay theirs.
                // A counter of zero in a stats table is not a failure.
                concat!(r"(?i)", wc_status_str!(), r"s?\s*[:=]?\s*0+\s*$"),
                // UCX (`ucx` pack).
                r"\(synd (?:0x)?[0-9a-fA-F]+ vend ",
                r"(?i)\b(?:send|receive) completion(?:\[-?\d+\]| \(wr_id=0x[0-9a-fA-F]+)? with error\b",
                r"IB Async event on ",
                r"ibv_poll_cq\(UMR CQ",
                // NCCL's NET/IB and the OFI plugin.
                r"NET/IB : [^\r\n]*\basync\b",
                r"Got completion from peer ",
                r"NET/OFI ",
                // perftest.
                r"Failed status-[^(]*\(\d+\): ",
                // NVMe-oF: SPDK, Linux nvme-rdma/nvmet-rdma.
                r"for CQE(?: 0x[0-9a-fA-F]+)? failed with status ",
                r"nvmet_rdma: received IB QP event: ",
                r"WC error, (?:qid \d+, )?qp state ",
                r"Error on CQ 0x",
                r"CQ error(?: on |, abort| \()",
                r"Send CQ error ",
                // libfabric.
                r"libfabric:\d+:",
                r"msg cq error info: |Work completion status: |fi_cq_readerr: ",
                // The kernel's mlx5_ib (`kernel-rdma-cqe-error`).
                r"WC error: \d+, Message: ",
                r"/\d+: QP -?\d+ error: ",
                // Open MPI's openib BTL.
                r"error polling [HL]P CQ with status ",
                r"Error number: +\d+ \(IBV_EVENT_",
                // Mooncake, GPI-2, UCCL, rlib/r2.
                r"Worker: (?:Received context async event|Process failed for slice)",
                r"\):Failed request to \d+",
                r"CQE ERROR wr_id=|CQE error, wr_id=|(?:poll_(?:send|recv)_cq|recv_acks): completion error: |RDMA error: ",
                r"Assertion! wait completion error: ",
                // MoRI (`mori-rdma-error`).
                r"ProcessOneCqe: |NotifManager receive (?:send )?cqe failed |\) CQE error: |\[BNXT PollCq\] CQE error: |\bRDMA async event IBV_EVENT_\w+ \(type=",
            ],
        },
        Builtin {
            name: "verbs-cm-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs application could not connect or lost its connection: RDMA CM errors (address/route resolution, connect, accept, rejected, device removal) or its out-of-band exchange of QP numbers failed",
            example: "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110",
            patterns: &[
                pat(
                    r"cma event (?P<event>[^,]+), error (?P<error>-?\d+)",
                    &["rdma-core/rdmacm_examples/cma-event-error", "glusterfs/rdma-cm/cma-event-error"],
                ),
                pat(
                    r"(?:^|[^_])rdma_(?:resolve_addr|resolve_route|connect|accept|bind_addr|listen|get_cm_event): (?P<error>[A-Z][\w /-]*)",
                    &[
                        "rdma-core/rdmacm_examples/rdma-resolve-addr",
                        "rdma-core/rdmacm_examples/rdma-resolve-route",
                        "rdma-core/rdmacm_examples/rdma-connect",
                        "rdma-core/rdmacm_examples/rdma-accept",
                        "rdma-core/rdmacm_examples/rdma-bind-addr",
                        "rdma-core/rdmacm_examples/rdma-listen",
                        "rdma-core/rdmacm_examples/rdma-get-cm-event",
                    ],
                ),
                pat(
                    r"cma detected device removal|getaddrinfo failed \([^)]*\) - invalid hostname or IP address|rping (?:client|server) failed: -?\d+|Couldn't connect to remote QP|Couldn't send/recv local address|Couldn't read/write remote address|-?\d+/-?\d+: Couldn't read remote address|client read/write: |server read: ",
                    &[
                        "rdma-core/rdmacm_examples/cma-detected-device-removal",
                        "rdma-core/rdmacm_examples/getaddrinfo-failed-invalid-hostname-or-ip-address",
                        "rdma-core/rdmacm_examples/rping-client-failed",
                        "rdma-core/rdmacm_examples/rping-server-failed",
                        "rdma-core/ibv_examples/couldnt-connect-to-remote-qp",
                        "rdma-core/ibv_examples/couldnt-send-recv-local-address",
                        "rdma-core/ibv_examples/couldnt-read-write-remote-address",
                        "rdma-core/ibv_examples/couldnt-read-remote-address",
                        "rdma-core/ibv_examples/client-read-write",
                        "rdma-core/ibv_examples/server-read",
                    ],
                ),
            ],
            unless: &[
                // libfabric's verbs provider logs the same calls (libfabric pack).
                r"libfabric:\d+:",
            ],
        },
        Builtin {
            name: "verbs-setup-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs provider or application could not set up or use its resources: device open/ABI mismatch, PD/MR/CQ/QP/SRQ creation or modify, doorbell mapping, or a work request rejected at post time",
            example: "IB device 'rxe0' wasn't found",
            patterns: &[
                // TensorPipe (PyTorch RPC's transport) over InfiniBand: a verbs call its
                // wrappers make failed (`TP_THROW_SYSTEM_IF`, `In FUNC at FILE:LINE "": errno`).
                pat(
                    r#"\bIn [\w:~<>]+(?:\(\))? at (?:\S*/)?tensorpipe/common/ibv\.h:\d+ "[^"]*": (?P<error>[^\r\n]+)"#,
                    &["tensorpipe/common/ibv-call-failed"],
                ),
                // libibverbs' pingpong examples (rc, uc, ud, srq, xsrq): setup that failed.
                pat(
                    r"Couldn't (?:post receives|allocate (?:base PD|parent domain)|get SRQ num(?:$|[^b])|query device for its features|find QPN [0-9a-fA-F]+|Open the XRC Domain -?\d+)|Failed to (?:get port info|post receive to SRQ)|can't read sgid of index -?\d+|Unable to find qp [0-9a-fA-F]+",
                    &[
                        "rdma-core/ibv_examples/couldnt-post-receives",
                        "rdma-core/ibv_examples/couldnt-allocate-*",
                        "rdma-core/ibv_examples/couldnt-get-srq-num",
                        "rdma-core/ibv_examples/couldnt-query-device-features",
                        "rdma-core/ibv_examples/couldnt-find-qpn",
                        "rdma-core/ibv_examples/couldnt-open-xrc-domain",
                        "rdma-core/ibv_examples/failed-to-get-port-info",
                        "rdma-core/ibv_examples/failed-to-post-receive-srq",
                        "rdma-core/ibv_examples/cant-read-sgid",
                        "rdma-core/ibv_examples/unable-to-find-qp",
                    ],
                ),
                pat(
                    r"libibverbs: Fatal: |mlx4: Fatal: ABI version|Fatal: libqedr ABI version|pvrdma: (?:ABI version -?\d+ of .*? is not supported|couldn't allocate device for|invalid post send opcode)|bnxt_re : (?:Failed to allocate (?:context|device) for|FATAL: Max supported ABI)|rxe: (?:Failed to query sgid|Fatal: couldn't allocate device for)|libi40iw-(?:\w+: )?(?:failed to|Failed to|incompatible kernel driver version|query device failed|invalid (?:SQ|RQ) attributes|post work request failed)",
                    &[
                        "rdma-core/libibverbs/libibverbs-fatal-*",
                        "rdma-core/mlx4/mlx4-fatal-abi-version-of-is-not",
                        "rdma-core/qedr/fatal-libqedr-abi-version-of-is-not",
                        "rdma-core/vmw_pvrdma/*",
                        "rdma-core/bnxt_re/*",
                        "rdma-core/rxe/rxe-*",
                        "rdma-core/i40iw/libi40iw-failed-*",
                        "rdma-core/i40iw/libi40iw-incompatible-kernel-driver-version-need-version",
                        "rdma-core/i40iw/libi40iw-query-device-failed-and-returned-status",
                        "rdma-core/i40iw/libi40iw-invalid-*",
                        "rdma-core/i40iw/libi40iw-post-work-request-failed-invalid-opcode",
                    ],
                ),
                // libibverbs skipped a device whose kernel driver speaks another ABI than the
                // provider in this image: the device is unusable (NCCL falls back to sockets).
                pat(
                    r"libibverbs: Warning: Driver .+? does not support the kernel ABI of \d+",
                    &["rdma-core/libibverbs/libibverbs-warning-driver-does-not-support-the"],
                ),
                // gdrcopy's driver could not pin the GPU pages (nvidia_p2p_get_pages).
                pat(r"\bgdrdrv:nvidia_p2p_get_pages\(.*?\) failed \[ret = -?\d+\]", &["gdrcopy/gdrdrv/*"]),
                // DPDK's mlx5 drivers (verbs underneath) found no verbs device for the port or
                // gave up probing it.
                pat(
                    r"\b[Nn]o Verbs device matches PCI device [\da-fA-F:.]+|\bVerbs device not found: [\da-fA-F:.]+|\bprobe of PCI device [\da-fA-F:.]+ aborted after encountering an error: ",
                    &["dpdk/mlx5_common/*", "dpdk/mlx5_net/*"],
                ),
                pat(
                    r"hns_roce_lite_handle_error_cqe\(\d+\) : error cqe status: 0x[0-9a-fA-F]+|hns: (?:can't find qp!|failed to (?:modify qp|handle recv inline wqe)!)|hns_roce_(?:find_qp fail|verify_sizes failed|alloc_qp_buf failed|store_qp failed|create_idx_que failed|alloc_srq_buf failed)!|wr->num_sge\(<=-?\d+\) = -?\d+, check failed!|inline data len\(1-32\)=-?\d+, send_flags = 0x[0-9a-fA-F]+, check failed!|2nd parm addr is NULL!|3st parm length is 0!|ibv_cmd_create_qp failed!|pthread_spin_init failed!|malloc failed!|Not supported (?:transport opcode -?\d+|inline data!)|:\d+: (?:failed to mmap (?:uar page|direct wqe page)|QP type -?\d+ not supported for qp_ex send ops|unsupported (?:cq depth|wc flags|srq type|cq comps)|failed to exec create (?:cq|srq|qp) cmd|invalid srq attr size|invalid (?:hnsdv )?comp_mask 0x|failed to check the pad of cq|not a HNS RoCE device!)",
                    &[
                        "hns/roce_lite/handle-error-cqe",
                        "rdma-core/hns/hns-cant-find-qp",
                        "rdma-core/hns/hns-failed-to-*",
                        "rdma-core/hns/hns-roce-*",
                        "rdma-core/hns/wr-num-sge-check-failed",
                        "rdma-core/hns/inline-data-len-1-32-send-flags",
                        "rdma-core/hns/2nd-parm-addr-is-null",
                        "rdma-core/hns/3st-parm-length-is-0",
                        "rdma-core/hns/ibv-cmd-create-qp-failed",
                        "rdma-core/hns/pthread-spin-init-failed",
                        "rdma-core/hns/malloc-failed",
                        "rdma-core/hns/not-supported-*",
                        "rdma-core/hns/verbs_log/hns-cant-find-qp",
                        "rdma-core/hns/verbs_log/hns-failed-to-handle-recv-inline-wqe",
                        "rdma-core/hns/verbs_log/hns-roce-find-qp-fail",
                        "rdma-core/hns/verbs_log/wr-num-sge-check-failed",
                        "rdma-core/hns/verbs_log/inline-data-len-1-32-send-flags",
                        "rdma-core/hns/verbs_log/2nd-parm-addr-is-null",
                        "rdma-core/hns/verbs_log/3st-parm-length-is-0",
                        "rdma-core/hns/verbs_log/failed-to-*",
                        "rdma-core/hns/verbs_log/qp-type-not-supported-for-qp-ex",
                        "rdma-core/hns/verbs_log/unsupported-*",
                        "rdma-core/hns/verbs_log/invalid-*",
                        "rdma-core/hns/verbs_log/not-a-hns-roce-device",
                    ],
                ),
                pat(
                    r":\d+: (?:Invalid comp_mask|Parent domain set but not provided|Invalid flags\s*$|Invalid QP(?: type |\[)|Max (?:RDMA SGE|inline data|[Ss]end WR|send SGE|receive SGE|receive WR) \d+ > |Requested max SGE \d+, max receive WR|SQ\[\d+\] (?:efa_wq_initialize failed|inline op_type|is full|is in invalid state|Non signaled WRs not supported|Unsupported wr_flags|unsupported opcode|WR (?:total bytes|num_sge|inline length))|RQ\[\d+\] (?:Invalid QP state|WR num_sge|is full)|Unsupported (?:wr_flags|type or flag|comp_mask\[|send_ops_flags|QP type|EFA flags)|Invalid EFA wc_flags|ibv_cmd_(?:get_context|query_device_any) failed|Not an EFA device|Compatibility issues|Failed to (?:allocate|deallocate) PD|Failed to (?:register|deregister|query) MR|QP\[\d+\] does not exist in QP table|Failed to (?:create|destroy) (?:CQ|QP|AH)|Failed to modify QP\[|Send/Receive CQ not provided|SRQ is not supported|(?:SQ|RQ) buffer mmap failed|RQ efa_wq_initialize failed|Driver QP type must be SRD)",
                    &[
                        "rdma-core/efa/verbs_log/ibv-cmd-get-context-failed",
                        "rdma-core/efa/verbs_log/ibv-cmd-query-device-any-failed",
                        "rdma-core/efa/verbs_log/not-an-efa-device",
                        "rdma-core/efa/verbs_log/compatibility-issues",
                        "rdma-core/efa/verbs_log/failed-to-allocate-pd",
                        "rdma-core/efa/verbs_log/failed-to-deallocate-pd",
                        "rdma-core/efa/verbs_log/failed-to-register-mr",
                        "rdma-core/efa/verbs_log/failed-to-deregister-mr",
                        "rdma-core/efa/verbs_log/qp-does-not-exist-in-qp-table",
                        "rdma-core/efa/verbs_log/invalid-comp-mask",
                        "rdma-core/efa/verbs_log/failed-to-create-cq",
                        "rdma-core/efa/verbs_log/invalid-comp-mask-or-wc-flags",
                        "rdma-core/efa/verbs_log/failed-to-destroy-cq",
                        "rdma-core/efa/verbs_log/sq-efa-wq-initialize-failed",
                        "rdma-core/efa/verbs_log/sq-buffer-mmap-failed",
                        "rdma-core/efa/verbs_log/rq-efa-wq-initialize-failed",
                        "rdma-core/efa/verbs_log/rq-buffer-mmap-failed",
                        "rdma-core/efa/verbs_log/driver-qp-type-must-be-srd",
                        "rdma-core/efa/verbs_log/unsupported-comp-mask-supported",
                        "rdma-core/efa/verbs_log/invalid-qp-type",
                        "rdma-core/efa/verbs_log/unsupported-send-ops-flags-supported",
                        "rdma-core/efa/verbs_log/send-receive-cq-not-provided",
                        "rdma-core/efa/verbs_log/srq-is-not-supported",
                        "rdma-core/efa/verbs_log/max-send-sge",
                        "rdma-core/efa/verbs_log/max-receive-sge",
                        "rdma-core/efa/verbs_log/max-send-wr",
                        "rdma-core/efa/verbs_log/max-receive-wr",
                        "rdma-core/efa/verbs_log/failed-to-create-qp",
                        "rdma-core/efa/verbs_log/unsupported-qp-type",
                        "rdma-core/efa/verbs_log/unsupported-qp-type-2",
                        "rdma-core/efa/verbs_log/failed-to-modify-qp",
                        "rdma-core/efa/verbs_log/failed-to-destroy-qp",
                        "rdma-core/efa/verbs_log/sq-is-in-invalid-state",
                        "rdma-core/efa/verbs_log/sq-non-signaled-wrs-not-supported",
                        "rdma-core/efa/verbs_log/sq-unsupported-wr-flags-supported",
                        "rdma-core/efa/verbs_log/sq-is-full-wqe-posted-wqe-completed",
                        "rdma-core/efa/verbs_log/sq-unsupported-opcode",
                        "rdma-core/efa/verbs_log/sq-wr-total-bytes",
                        "rdma-core/efa/verbs_log/sq-wr-num-sge",
                        "rdma-core/efa/verbs_log/sq-wr-inline-length",
                        "rdma-core/efa/verbs_log/rq-invalid-qp-state",
                        "rdma-core/efa/verbs_log/rq-wr-num-sge",
                        "rdma-core/efa/verbs_log/rq-is-full-wqe-posted-wqe-completed",
                        "rdma-core/efa/verbs_log/failed-to-create-ah",
                        "rdma-core/efa/verbs_log/failed-to-destroy-ah",
                        "rdma-core/efa/verbs_log/invalid-efa-wc-flags",
                        "rdma-core/efa/verbs_log/failed-to-query-mr",
                        "rdma-core/efa/verbs_log/unsupported-efa-flags-supported",
                        "rdma-core/efa/verbs_log/invalid-comp-mask-2",
                        "rdma-core/efa/verbs_log/parent-domain-set-but-not-provided",
                        "rdma-core/efa/verbs_log/invalid-flags",
                        "rdma-core/efa/verbs_log/invalid-qp",
                        "rdma-core/efa/verbs_log/max-rdma-sge",
                        "rdma-core/efa/verbs_log/max-inline-data",
                        "rdma-core/efa/verbs_log/max-send-wr-2",
                        "rdma-core/efa/verbs_log/requested-max-sge-max-receive-wr",
                        "rdma-core/efa/verbs_log/sq-inline-op-type-isnt-supported",
                        "rdma-core/efa/verbs_log/unsupported-wr-flags",
                        "rdma-core/efa/verbs_log/unsupported-type-or-flag",
                    ],
                ),
                pat(
                    r"(?::\d+\]|:\d+: )(?:alloc context: doorbell (?:rec )?mapping failed|Atomic not supported on this machine|Can't post WR|(?:open|close) xrcd: failed|create (?:cq|qp|srq): (?:failed|fatal fault)|destroy (?:cq|qp): failed|error: (?:WQ (?:PBL )?is full|WR is bad)|Failed to allocate context for device|failed to (?:allocate srq_table|create srq type)|(?:Invalid flags detected|Invalid opcode -?\d+ in work request|invalid srq_id)|QP is associated with SRQ|QP Modify: Failed|srq handle is null|Too much inline data in WR|POST SEND FAILED)",
                    &[
                        "rdma-core/qedr/dp_log/alloc-context-*",
                        "rdma-core/qedr/verbs_log/alloc-context-*",
                        "rdma-core/qedr/dp_log/atomic-not-supported-on-this-machine",
                        "rdma-core/qedr/verbs_log/atomic-not-supported-on-this-machine",
                        "rdma-core/qedr/dp_log/cant-post-wr*",
                        "rdma-core/qedr/verbs_log/cant-post-wr*",
                        "rdma-core/qedr/dp_log/open-xrcd-failed-with-rc",
                        "rdma-core/qedr/verbs_log/open-xrcd-failed-with-rc",
                        "rdma-core/qedr/dp_log/close-xrcd-failed-with-rc",
                        "rdma-core/qedr/verbs_log/close-xrcd-failed-with-rc",
                        "rdma-core/qedr/dp_log/create-cq-failed-*",
                        "rdma-core/qedr/verbs_log/create-cq-failed-*",
                        "rdma-core/qedr/dp_log/create-qp-f*",
                        "rdma-core/qedr/verbs_log/create-qp-f*",
                        "rdma-core/qedr/dp_log/create-srq-failed-*",
                        "rdma-core/qedr/verbs_log/create-srq-failed-*",
                        "rdma-core/qedr/dp_log/destroy-cq-failed-to-destroy-got",
                        "rdma-core/qedr/verbs_log/destroy-cq-failed-to-destroy-got",
                        "rdma-core/qedr/dp_log/destroy-qp-failed-to-destroy-got",
                        "rdma-core/qedr/verbs_log/destroy-qp-failed-to-destroy-got",
                        "rdma-core/qedr/dp_log/error-wq-*",
                        "rdma-core/qedr/verbs_log/error-wq-*",
                        "rdma-core/qedr/dp_log/error-wr-is-bad-post-send-on",
                        "rdma-core/qedr/verbs_log/error-wr-is-bad-post-send-on",
                        "rdma-core/qedr/verbs_log/failed-to-allocate-context-for-device",
                        "rdma-core/qedr/dp_log/failed-to-*",
                        "rdma-core/qedr/verbs_log/failed-to-*",
                        "rdma-core/qedr/dp_log/invalid-flags-detected",
                        "rdma-core/qedr/verbs_log/invalid-flags-detected",
                        "rdma-core/qedr/dp_log/invalid-opcode-in-work-request-on-qp",
                        "rdma-core/qedr/verbs_log/invalid-opcode-in-work-request-on-qp",
                        "rdma-core/qedr/dp_log/invalid-srq-id",
                        "rdma-core/qedr/verbs_log/invalid-srq-id",
                        "rdma-core/qedr/dp_log/qp-is-associated-with-srq-cannot-post",
                        "rdma-core/qedr/verbs_log/qp-is-associated-with-srq-cannot-post",
                        "rdma-core/qedr/dp_log/qp-modify-failed-*",
                        "rdma-core/qedr/verbs_log/qp-modify-failed-*",
                        "rdma-core/qedr/dp_log/srq-handle-is-null",
                        "rdma-core/qedr/verbs_log/srq-handle-is-null",
                        "rdma-core/qedr/dp_log/too-much-inline-data-in-wr",
                        "rdma-core/qedr/verbs_log/too-much-inline-data-in-wr",
                        "rdma-core/qedr/dp_log/post-send-failed",
                    ],
                ),
                pat(
                    r"libsiw: (?:(?:CQ|QP) creation failed|creating SRQ failed|prepare (?:CQ|QP|SRQ) mapping failed|(?:CQ|SRQ|SQ|RQ) mapping failed|opcode -?\d+ unsupported|QP\[-?\d+\]: (?:SQ|RQ) overflow|SRQ\[0x[0-9a-fA-F]+\]: SRQ overflow)|validate send failed",
                    &[
                        "rdma-core/siw/libsiw-cq-creation-failed",
                        "rdma-core/siw/libsiw-qp-creation-failed",
                        "rdma-core/siw/libsiw-creating-srq-failed",
                        "rdma-core/siw/libsiw-prepare-*",
                        "rdma-core/siw/libsiw-cq-mapping-failed",
                        "rdma-core/siw/libsiw-srq-mapping-failed",
                        "rdma-core/siw/libsiw-sq-mapping-failed",
                        "rdma-core/siw/libsiw-rq-mapping-failed",
                        "rdma-core/siw/libsiw-opcode-unsupported",
                        "rdma-core/siw/libsiw-qp-sq-overflow-idx",
                        "rdma-core/siw/libsiw-qp-rq-overflow-idx",
                        "rdma-core/siw/libsiw-srq-srq-overflow",
                        "rdma-core/siw/verbs_log/libsiw-cq-creation-failed",
                        "rdma-core/siw/verbs_log/libsiw-qp-creation-failed",
                        "rdma-core/siw/verbs_log/libsiw-creating-srq-failed",
                        "rdma-core/siw/verbs_log/libsiw-prepare-*",
                        "rdma-core/siw/verbs_log/libsiw-cq-mapping-failed",
                        "rdma-core/siw/verbs_log/libsiw-srq-mapping-failed",
                        "rdma-core/siw/verbs_log/libsiw-sq-mapping-failed",
                        "rdma-core/siw/verbs_log/libsiw-rq-mapping-failed",
                        "rdma-core/siw/verbs_log/libsiw-opcode-unsupported",
                        "rdma-core/siw/verbs_log/libsiw-qp-sq-overflow-idx",
                        "rdma-core/siw/verbs_log/libsiw-qp-rq-overflow-idx",
                        "rdma-core/siw/verbs_log/libsiw-srq-srq-overflow",
                        "rdma-core/rxe/validate-send-failed",
                        "rdma-core/rxe/verbs_log/validate-send-failed",
                    ],
                ),
                pat(
                    r"BUG: huge allocation|Bad allocation type|: roundup overflow|resize CQ failed to get resize CQE|\*\*\* ERROR: multithreading vio?lation \*\*\*|You are running a multithreaded application but|you set MLX5_SINGLE_THREADED=1\. Please unset it\.|:\d+: (?:illegal num_sge|bad opcode -?\d+|[Ww]ork queue overflow|max gs exceeded|atomic operations are not supported|copy_eth_inline_headers failed|inline layout failed|[Uu]nsupported (?:vendor )?(?:comp_mask|creation flags|vendor flags)|Couldn't (?:find free user index|create dct)|External (?:mode dontfork_range|alloc) failed|got idx -?\d+ which wasn't added|tag matching list is (?:full|corrupted)|num_sge must be at most 1|removing tag which isn't in HW ownership|-?\d+B CQE paddind is not supported|DC QP must be of type|Num SGEs \d+ exceeds the maximum|Inline data \d+ exceeds the maximum|Failed to handle operations flags|not supported signature type|unknown signature domain|Wrong usage of creation flags|Invalid max_recv_wr value|CQE Compression is not supported)",
                    &[
                        "rdma-core/mlx5/bug-huge-allocation",
                        "rdma-core/mlx5/bad-allocation-type",
                        "rdma-core/mlx5/roundup-overflow",
                        "rdma-core/mlx5/resize-cq-failed-to-get-resize-cqe",
                        "rdma-core/mlx5/error-multithreading-*",
                        "rdma-core/mlx5/mlx5_dbg/illegal-num-sge-*",
                        "rdma-core/mlx5/mlx5_dbg/bad-opcode",
                        "rdma-core/mlx5/mlx5_dbg/work-queue-overflow*",
                        "rdma-core/mlx5/mlx5_dbg/max-gs-exceeded-max",
                        "rdma-core/mlx5/mlx5_dbg/atomic-operations-are-not-supported",
                        "rdma-core/mlx5/mlx5_dbg/copy-eth-inline-headers-failed-err",
                        "rdma-core/mlx5/mlx5_dbg/inline-layout-failed-err",
                        "rdma-core/mlx5/mlx5_dbg/unsupported-*",
                        "rdma-core/mlx5/mlx5_dbg/couldnt-*",
                        "rdma-core/mlx5/mlx5_dbg/external-*",
                        "rdma-core/mlx5/mlx5_dbg/got-idx-which-wasnt-added",
                        "rdma-core/mlx5/mlx5_dbg/tag-matching-list-is-*",
                        "rdma-core/mlx5/mlx5_dbg/num-sge-must-be-at-most-1",
                        "rdma-core/mlx5/mlx5_dbg/removing-tag-which-isnt-in-hw-ownership",
                        "rdma-core/mlx5/mlx5_dbg/b-cqe-paddind-is-not-supported",
                        "rdma-core/mlx5/mlx5_dbg/dc-qp-must-be-of-type-ibv",
                        "rdma-core/mlx5/mlx5_dbg/num-sges-exceeds-the-maximum",
                        "rdma-core/mlx5/mlx5_dbg/inline-data-exceeds-the-maximum",
                        "rdma-core/mlx5/mlx5_dbg/failed-to-handle-operations-flags-errno",
                        "rdma-core/mlx5/mlx5_dbg/not-supported-signature-type-0x",
                        "rdma-core/mlx5/mlx5_dbg/unknown-signature-domain-0x",
                        "rdma-core/mlx5/mlx5_dbg/wrong-usage-of-creation-flags-requested-for",
                        "rdma-core/mlx5/mlx5_dbg/invalid-max-recv-wr-value",
                        "rdma-core/mlx5/mlx5_dbg/cqe-compression-is-not-supported",
                    ],
                ),
                pat(
                    r"Couldn't get context for \S+|IB device '[^']*' wasn't found|Couldn't get port info|Couldn't get local LID|Couldn't register MR|Couldn't create QP|Couldn't post receive \(|Failed to modify QP to RTR|Failed to (?:open|close) device\s*$|Failed to query (?:device props|port \d+ props|gid to port)|ibv_create_cq failed|setup_qp failed: |rdma_create_qp: [A-Z]|invalid data in page -?\d+|data mismatch!|post (?:send|recv) error:? -?\d+",
                    &[
                        "rdma-core/ibv_examples/couldnt-get-context-for",
                        "rdma-core/ibv_asyncwatch/couldn-t-get-context-for",
                        "rdma-core/ibv_devinfo/ib-device-wasn-t-found",
                        "rdma-core/ibv_examples/couldnt-get-port-info",
                        "rdma-core/ibv_examples/couldnt-get-local-lid",
                        "rdma-core/ibv_examples/couldnt-register-mr",
                        "rdma-core/ibv_examples/couldnt-create-qp",
                        "rdma-core/ibv_examples/couldnt-post-receive",
                        "rdma-core/ibv_examples/failed-to-modify-qp-to-rtr",
                        "rdma-core/ibv_devinfo/failed-to-*",
                        "rdma-core/rdmacm_examples/ibv-create-cq-failed",
                        "rdma-core/rdmacm_examples/setup-qp-failed",
                        "rdma-core/rdmacm_examples/rdma-create-qp",
                        "rdma-core/ibv_examples/invalid-data-in-page",
                        "rdma-core/rdmacm_examples/data-mismatch",
                        "rdma-core/rdmacm_examples/post-send-error",
                        "rdma-core/rdmacm_examples/post-recv-error",
                    ],
                ),
                // mana's data path and QP setup (verbs_log), mlx5's CQ out of step with the
                // hardware, EFA on a kernel without AH udata.
                pat(
                    r"expected cqe in sw ownership|\w+:\d+: (?:rc post send error, ret -?\d+|Failed to post send request ret -?\d+|Failed to post RQ wqe , ret -?\d+|(?:recv )?shadow queue full|Create QP failed|Kernel does not support AH udata)",
                    &[
                        "rdma-core/mlx5/expected-cqe-in-sw-ownership",
                        "rdma-core/mana/verbs_log/*",
                        "rdma-core/efa/verbs_log/kernel-does-not-support-ah-udata",
                    ],
                ),
            ],
            unless: &[
                // perftest's wording (perftest pack).
                r"Couldn't get context for the device",
                // Mooncake's handshake (`mooncake-rdma-error`).
                r"\[Handshake\] Failed to modify QP to ",
                // libfabric's verbs provider logs the same calls (libfabric pack).
                r"libfabric:\d+:",
                // NCCL's verbs wrapper (`nccl-ibverbs-call-failed`).
                r"NCCL WARN Call to ibv_",
                // MoRI's verbs setup with the device's limits after it (`mori-rdma-error`).
                r"\bibv_\w+(?:\((?:INIT|RTR|RTS)\))? failed: err(?:no)?=-?\d+ \([^)\r\n]*\); (?:dev|transition)=",
            ],
        },
        // Verbs applications with their own wordings (UCCL, NVSHMEM, rlib/r2, xstore,
        // Wukong): written from their rows of `apps.tsv`. Their `poll till completion error:`,
        // `Check failed: wc->status == IBV_WC_SUCCESS`, `got bad completion with status`
        // and `ibv_poll_cq failed, status:` lines, and every line naming transport retry
        // exceeded, are `verbs-retry-exceeded`'s and `verbs-completion-error`'s.
        Builtin {
            name: "nvshmem-gpu-timeout",
            class: "other_hang",
            pre_s: PRE,
            description: "NVSHMEM's proxy thread was told by a GPU thread that an operation timed out",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "src/host/proxy/proxy.cpp:progress_channels:1020: received timeout signal from GPU thread(s) in nvshmem_quiet",
            patterns: &[pat(
                r"received timeout signal from GPU thread\(s\) in (?P<op>\S+)",
                &["nvshmem/proxy-gpu-timeout"],
            )],
            unless: &[],
        },
        // DeepEP's dispatch and combine are the all-to-all collectives of expert
        // parallelism: one that times out is a collective timeout, as the watchdog's is
        // (two of three blind sets' collectors read it so).
        Builtin {
            name: "deepep-timeout",
            class: "nccl_timeout",
            // Both of DeepEP's timeouts are 100 s (`NUM_CPU_TIMEOUT_SECS`, and
            // `NUM_TIMEOUT_CYCLES`, 200 G GPU cycles) unless built with ENABLE_FAST_DEBUG
            // (10 s): the traffic that stopped is that far before the line.
            pre_s: DEEPEP_TIMEOUT_PRE,
            description: "A DeepEP dispatch or combine timed out: an internode kernel waited about 100 s for a peer's data and trapped, or the host gave up waiting for the GPU (`DeepEP error: timeout (dispatch CPU)`)",
            example: "RuntimeError: DeepEP error: timeout (dispatch CPU)",
            patterns: &[pat(
                r"DeepEP dispatch (?:NVL receiver|forwarder) timeout(?: \((?:prefix|RDMA meta)\))?, channel: -?\d+, RDMA: -?\d+, nvl: -?\d+|DeepEP error: timeout \((?P<op>\w+) CPU\)",
                &["deepep/internode/*", "deepep/runtime/*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "verbs-app-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs application (UCCL, NVSHMEM, rlib/r2, Wukong, eRPC) got a failed work completion or could not poll its CQ or post a work request",
            example: "[WARN chi-mi325x-pod2-098 1711891 1711891 pollOnce rdma/providers/ib_data_channel_impl.cc:203] pollOnce - channel_id: 4, CQE error, wr_id=19395, status=10 (remote access error), opcode=1, byte_len=0, vendor_err=0x7, qp_num=0x2c21, wc_flags=0x0",
            patterns: &[
                // UCCL p2p (`poll_once`, later `pollOnce`), UCCL EP.
                pat(
                    r"poll_?[oO]nce - channel_id: -?\d+, CQE error, wr_id=-?\d+, status=(?P<status>\d+) \((?P<error>[^)\r\n]*)\)(?:.*?qp_num=(?P<qp>0x[0-9a-fA-F]+))?",
                    &["uccl/p2p-cqe-error-*", "uccl/p2p-efa-cqe-error"],
                ),
                pat(
                    r"CQE ERROR wr_id=-?\d+ status=(?P<status>\d+)\((?P<error>[^)\r\n]*)\)(?:.*?qp_num=(?P<qp>0x[0-9a-fA-F]+))?",
                    &["uccl/ep-cqe-error", "uccl/ep-cqe-error-here-v0", "uccl/lite-ep-cqe-error-thread"],
                ),
                // UCCL collective: its own CHECK logger, glog's `Check failed: false`, the credit CQs.
                pat(
                    r"(?:CHECK failed: \((?:false|wc->status == IBV_WC_SUCCESS)\)|Check failed: false) (?:(?:RC|UC) (?:send|recv)|Ctrl|data path) CQ state error: (?P<status>\d+)(?:.*? from QP:(?P<qp>\d+))?",
                    &[
                        "uccl/rc-send-cq-state-error-uccl-logger",
                        "uccl/rc-recv-cq-state-error-uccl-logger",
                        "uccl/uc-send-cq-state-error-uccl-logger",
                        "uccl/uc-recv-cq-state-error-uccl-logger",
                        "uccl/ctrl-cq-state-error-uccl-logger",
                        "uccl/ctrl-cq-ex-state-error*",
                        "uccl/data-path-cq-state-error*",
                    ],
                ),
                pat(
                    r"(?:pacer credit|Credit) CQ state error: (?P<status>\d+)",
                    &["uccl/pacer-credit-cq-state-error*", "uccl/credit-cq-state-error*"],
                ),
                pat(
                    r"(?:poll_send_cq|poll_recv_cq|recv_acks): completion error: (?P<error>[^\r\n]+)",
                    &["uccl/efa-*"],
                ),
                // `RDMA error: ` + ibv_wc_status_str(): only the status strings.
                pat(
                    r"RDMA error: (?P<error>local (?:length|QP operation|EE context operation|protection|access) error|Work Request Flushed Error|memory management operation error|bad response error|remote (?:invalid request|access|operation) error|(?:transport|RNR) retry counter exceeded|local RDD violation error|remote invalid RD request|operation aborted|invalid EE context (?:number|state)|fatal error|response timeout error|general error|TM (?:rendezvous )?error)",
                    &["uccl/ep-rdma-error"],
                ),
                // rlib/r2 (`RDMA_ASSERT` adds `Assertion! `), Wukong.
                pat(
                    r"Assertion! (?:error wc status (?P<status>\d+) at|poll UD completion reply error: |wait completion error: (?P<error>[^\r\n]+))|\] post recv -?\d+; w error: |completion wasn't found in the CQ after timeout",
                    &[
                        "rlib/ud-error-wc-status",
                        "rlib/ud-poll-reply-error",
                        "r2/rc-session-wait-completion-error",
                        "r2/ring-session-wait-completion-error",
                        "rlib/post-recv-error",
                        "wukong/cq-timeout",
                    ],
                ),
                // eRPC (erpc-io): a failed completion ends the process.
                pat(
                    r"\beRPC: Fatal error\. Bad wc status (?P<status>\d+)\.",
                    &["erpc/verbs_common/bad-wc-status"],
                ),
                // NVSHMEM's IBRC/IBGDA transports and proxy.
                pat(
                    r"non-zero status: -?\d+ (?P<op>ibv_poll_cq|progress_send|progress_recv|check_poll|ibv_post_send) failed|exiting\.\.\. error in progress_transport|aborting due to error in progress_quiet|\[-?\d+\] got completion with err:|\bgot completion with err: syndrome=0x[0-9a-fA-F]+, vendor_err_synd=|: non-zero status: -?\d+: [^,\r\n]+, exiting",
                    &[
                        "nvshmem/ibrc-poll-cq-failed",
                        "nvshmem/progress-*",
                        "nvshmem/check-poll-failed",
                        "nvshmem/ibv-post-send-failed",
                        "nvshmem/proxy-progress-transport-exit",
                        "nvshmem/proxy-abort-progress-quiet",
                        "nvshmem/ibgda-cqe-err-debug",
                        "nvshmem/ibgda-cqe-err-syndrome",
                        "nvshmem/nz-exit-strerror",
                    ],
                ),
            ],
            unless: &[
                // `verbs-retry-exceeded`'s (retry exceeded by name, or glog's `wc->status ==
                // IBV_WC_SUCCESS … error: 12`) and `verbs-completion-error`'s (NVSHMEM's
                // `ibv_poll_cq failed, status:`).
                r"(?i)transport retry count(?:er)? exceeded",
                r"wc->status == IBV_WC_SUCCESS.*? error: 12\b",
                r"ibv_poll_cq failed, status: \d",
            ],
        },
        Builtin {
            name: "verbs-app-setup-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs application (Wukong, rlib/rlibv2, xstore, NVSHMEM, async-rdma, eRPC) could not register memory, open the device, create a CQ or address handle, bring a QP to INIT/RTR/RTS or connect it to its peer",
            example: "[librdma] qp: Failed to modify RC to RTR state, No such device or address",
            patterns: &[
                // async-rdma (Rust): a memory registration refused.
                pat(r"\bibv_reg_mr err, arguments:", &["async-rdma/memory_region/ibv-reg-mr-err"]),
                pat(
                    r"\[librdma\] (?:qp)?: Failed to (?:modify (?:RC|UC|UD) to (?:INIT|RTR|RTS) state|create cq|open device)",
                    &["wukong/modify-*", "wukong/create-cq-failed", "wukong/open-device-failed"],
                ),
                pat(
                    r"QP connect fail!, val -?\d+|\] (?:change qp status to ready to (?:receive|send) error|create (?:cq|address handler) error): ",
                    &[
                        "wukong/qp-connect-fail",
                        "rlib/qp-rtr-error",
                        "rlib/qp-rts-error",
                        "rlib/create-cq-error",
                        "rlib/create-ah-error",
                    ],
                ),
                pat(
                    r"\] (?:failed to bring QP to init: |CM create error with: )|Assertion! (?:a QP should be Ok to send, current status: |cm connect to server timeout|conn failed at thread:)",
                    &[
                        "rlibv2/qp-init-failed",
                        "rlibv2/cm-create-error",
                        "rlibv2/rc-not-ok-to-send",
                        "xstore/ycsb-*",
                    ],
                ),
                pat(
                    r"non-zero status: -?\d+ (?:(?P<op>ep_connect|ibv_modify_qp|ibgda_\w+) failed|Error in mlx5dv_devx_obj_modify for \w+ with syndrome|connect EPS failed|nvshmem detect topo failed)|nvshmem setup connections failed|nvshmemi_transport_init:\d+: Unable to initialize any transports",
                    &[
                        "nvshmem/ep-connect-failed",
                        "nvshmem/ibv-modify-qp-failed",
                        "nvshmem/ibgda-*",
                        "nvshmem/connect-eps-failed",
                        "nvshmem/setup-connections-failed",
                        "nvshmem/detect-topo-failed",
                        "nvshmem/unable-to-initialize-any-transports",
                    ],
                ),
                // NVSHMEM's init chain (nvshmemi_common_init, nvshmemi_init_thread): each step's
                // NZ_ERROR_JMP, and the exit of an API that found NVSHMEM not initialized.
                pat(
                    r"non-zero status: -?\d+ (?:building transport map|nvshmem (?:transport init|setup stream priorities|reserve static heaps|handles setup|register static heaps|device state setup|common init|update device state)|cuda handles setup|cpu collective setup|proxy initialization|team setup|mps setup|nvshmem_bootstrap) failed|:\d+: nvshmem initialization failed, exiting",
                    &["nvshmem/init/*"],
                ),
                // eRPC (erpc-io): no device or port to run on (an uncaught runtime_error), or
                // a session whose peer's routing info (LID, QPN, GID) cannot be resolved.
                pat(
                    r"\bFailed to open dev \d+\s*$|\bFailed to resolve verbs port index \d+|\. Issue: Unable to resolve routing info |\. Issue: Error \[Routing resolution failure\]",
                    &[
                        "erpc/verbs_common/failed-to-open-dev",
                        "erpc/verbs_common/failed-to-resolve-port",
                        "erpc/sm/*",
                    ],
                ),
                // LDMS (OVIS): the daemon could not listen on its RDMA transport.
                pat(r"\bError -?\d+ listening on the 'rdma' transport", &["ldms/ldmsd/*"]),
                // MSCCL++ throws IbError for a failed ibverbs call; uncaught, the C++ runtime
                // names it.
                pat(r"instance of 'mscclpp::IbError'", &["mscclpp/errors/iberror-terminate"]),
            ],
            unless: &[],
        },
        // Mooncake's transfer engine and GPI-2's ibverbs device: written from their rows of
        // `more_stacks.tsv`. A completion that names transport retry exceeded is
        // `verbs-retry-exceeded`'s.
        Builtin {
            name: "mooncake-rdma-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Mooncake's RDMA transport failed a transfer slice on a bad work completion, could not poll its CQs, got an error async event, could not connect an endpoint (handshake QP state change, QP creation, rejected handshake, ready-ACK timeout), could not register a buffer, or timed out a synchronous batch transfer; Mooncake Store's transfers that failed or did not complete in time",
            example: "E0331 12:03:04.222625 56060 rdma_endpoint.cpp:385] [Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp num: Connection timed out [110]",
            patterns: &[
                pat(
                    r"Worker: Process failed for slice \(opcode: -?\d+, .*?local_nic: (?P<hca>[\w.-]+), peer_nic: (?P<peer>\S+?), .*?\): (?P<error>[^\r\n]+)",
                    &["mooncake/worker_pool/process-failed-for-slice*"],
                ),
                pat(
                    r"Worker: (?:Failed to poll completion queues|Received context async event (?P<event>local work queue catastrophic error|local access violation work queue error|invalid request local work queue error|CQ error|local catastrophic error|port error) for context (?P<hca>[\w.-]+)|Cannot make connection for endpoint: (?P<peer>\S+?),|Timed out waiting for RDMA ready ACK for endpoint: )|Failed to poll CQ -?\d+ of device |Too many errors found in local RNIC |rdma_context\.cpp:\d+\] Context is not active: |rdma_transport\.cpp:\d+\] Device \d+ is not active",
                    &[
                        "mooncake/worker_pool/failed-to-poll-cq",
                        "mooncake/rdma_context/failed-to-poll-cq-of-device",
                        "mooncake/worker_pool/async-event-*",
                        "mooncake/worker_pool/cannot-make-connection*",
                        "mooncake/worker_pool/ready-ack-timeout",
                        "mooncake/worker_pool/too-many-errors-mark-inactive",
                        "mooncake/rdma_context/context-not-active",
                        "mooncake/rdma_transport/device-not-active",
                    ],
                ),
                pat(
                    r"\[Handshake\] Failed to modify QP to (?P<op>RTR|INIT|RTS|RESET)|\] (?:Failed to (?:create QP|ibv_post_send): |Reject(?:ed)? (?:the )?handshake request by peer |Failed to open device \S+ on port (?:\S{0,4} )?with GID)",
                    &[
                        "mooncake/rdma_endpoint/handshake-modify-qp-*",
                        "mooncake/rdma_endpoint/failed-to-*",
                        "mooncake/rdma_endpoint/reject*",
                        "mooncake/rdma_context/failed-to-open-device*",
                    ],
                ),
                // Registration failures: a buffer no NIC can reach, so every transfer from
                // it fails (`Memory region not registered`); the batch register only warns.
                pat(
                    r"\] Failed to register memory (?:0x[0-9a-fA-F]+|\(nil\)): |\bFailed to register memory (?:0x[0-9a-fA-F]+|\(nil\)): [^\[\r\n]+ \[\d+\]|(?:Rdma|Efa)Transport: Failed to register memory: addr |Memory region not registered by any active device\(s\)|Sync batch data transfer timeout after \d+ns|\] Transfer failed for task\d*\s*$|\bPut operation failed with error: TRANSFER_FAIL\b|\bFailed to complete transfers after (?P<stuck_s>\d+) seconds for batch",
                    &[
                        "mooncake/store/*",
                        "mooncake/rdma_context/failed-to-register-memory",
                        "mooncake/rdma_transport/failed-to-register-memory-batch",
                        "mooncake/efa_transport/failed-to-register-memory-batch",
                        "mooncake/rdma_transport/memory-region-not-registered",
                        "mooncake/transfer_engine_py/sync-batch-transfer-timeout",
                    ],
                ),
                // The transport could not start (every RNIC failed to open, query its GID
                // or allocate a PD: `No available RNIC`), the handshake daemon's socket
                // failed, or an endpoint's handshake went wrong. The warnings before
                // `No available RNIC` (`Device mlx5_3 port not active`, `Disable device`)
                // are also what a healthy host with an unused port prints: left alone.
                pat(
                    r"RdmaTransport: (?:No available RNIC|cannot initialize RDMA resources)|\bEfaTransport: (?:No available EFA devices|cannot initialize EFA resources|cannot start handshake daemon|No EFA devices found\s*$)|\bFailed to register memory region with context -?\d+|\bFailed to install RDMA transport\b|\bNo matched device found: |\] ibv_open_device\([^)\r\n]*\) failed|\bFailed to query GID -?\d+ on |\bGID is NULL, please check your GID index|\bFailed to allocate new protection domain on device |SocketHandShakePlugin: (?:connect\(\)|failed to (?:send|receive) handshake message)|\bPeer NIC \S+ not found in |\breceived packet mismatch\b|\bActive handshake RPC failed; resetting endpoint|\bFailed to select remote NIC for address ",
                    &[
                        "mooncake/rdma_transport/no-available-rnic",
                        "mooncake/rdma_transport/cannot-initialize-rdma-resources",
                        "mooncake/efa_transport/no-*",
                        "mooncake/efa_transport/cannot-*",
                        "mooncake/rdma_transport/failed-to-register-mr-with-context",
                        "mooncake/transfer_engine/failed-to-install-rdma-transport",
                        "mooncake/rdma_context/no-matched-device-found",
                        "mooncake/rdma_context/ibv-open-device-failed",
                        "mooncake/rdma_context/failed-to-query-gid",
                        "mooncake/rdma_context/gid-is-null",
                        "mooncake/rdma_context/failed-to-alloc-pd",
                        "mooncake/metadata_plugin/*",
                        "mooncake/rdma_endpoint/peer-nic-not-found",
                        "mooncake/rdma_endpoint/packet-mismatch*",
                        "mooncake/rdma_endpoint/active-handshake-rpc-failed",
                        "mooncake/worker_pool/failed-to-select-remote-nic",
                    ],
                ),
            ],
            unless: &[r"(?i)transport retry count(?:er)? exceeded"],
        },
        // Mooncake's TCP transport (`more_stacks.tsv`): a socket to the peer failed, as NCCL's
        // socket errors are `nccl_system_error`. `readHeader` failing with `End of file` is a
        // peer closing its connection after its last request (a look-alike row).
        Builtin {
            name: "mooncake-tcp-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "Mooncake's TCP transport could not connect to a peer or lost the connection while writing a request or reading or writing a transfer's data",
            example: "E0904 21:29:13.709401 30396 tcp_transport.cpp:138] Session::writeBody failed. Error: Connection reset by peer (value: 104), total_transferred_bytes_: 2621440, current transferred_bytes: 0",
            patterns: &[pat(
                r"\bTcpTransport: ASIO exception: |\b(?:Client|Server)?Session::(?:writeBody|readBody|writeHeader) failed\. (?:Error: |Attempt to )|\bTcpTransport::getConnection failed to create connection to (?P<peer>\S+?):(?P<port>\d+)\. ",
                &[
                    "mooncake/tcp_transport/asio-exception",
                    "mooncake/tcp_transport/session-*",
                    "mooncake/tcp_transport/client-session-*",
                    "mooncake/tcp_transport/get-connection-failed",
                ],
            )],
            unless: &[],
        },
        // brpc's RDMA transport (`more_stacks.tsv`, 1.4.0 to main): a handshake that failed (the
        // connection is failed: `Fail to complete rdma handshake`), a bad completion, a CQ
        // that overran or could not be polled, the transport not starting. The lines where
        // it goes on over TCP (`…, fallback to tcp:`), tries the next device (`Device mlx5_1
        // port not active`) or goes without ECE are look-alike rows. A QP state change, a
        // QP, CQ or PD that could not be created and a failed receive post are worded as any
        // verbs program words them: those rows are the generic triggers'. A completion with
        // status 12 is `verbs-retry-exceeded`'s.
        Builtin {
            name: "brpc-rdma-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "brpc's RDMA transport failed: the RDMA handshake of a connection (reading, sending or parsing the hello or ACK message, unexpected data), a work completion with an error status, a CQ that overran or could not be polled or armed, the transport not starting (no device, GID or library, memory pool, block pool)",
            example: "W0417 03:25:46.823136 102786 4294968066 src/brpc/rdma/rdma_endpoint.cpp:571] Fail to read Hello Message from client:brpc::Socket{id=93 fd=1055 addr=10.1.104.30:53044:8002} (0x7f017c01cec0) 10.1.104.30:53044: Got EOF",
            patterns: &[
                pat(
                    r"\bFail to (?:read Hello Message from client|get [Hh]ello [Mm]essage from server|parse Hello Message length from (?:client|server)|send Hello Message to client|send hello message to server|read ack message from client|send Ack Message to server|receive hello from server):|\bRead unexpected data during handshake:|\bFail to send server hello to |\bToo many bytes in handshake ACK, drop connection: |\bFail to complete rdma handshake from ",
                    &["brpc/rdma/handshake-*"],
                ),
                pat(
                    r"\bFail to handle RDMA completion(?:, error status\((?P<status>-?\d+)\))?: |\bCQ overruns, the connection will be stopped\b|\bFail to (?:poll cq: |get cq event(?: from |: )|arm (?:(?:send|recv) )?CQ comp channel|create polling CQ\b|post recv wr\b|allocate rbuf\b|start rdma polling bthread\b|get block from memory pool\b)",
                    &[
                        "brpc/rdma/completion-*",
                        "brpc/rdma/cq-overruns",
                        "brpc/rdma/poll-cq",
                        "brpc/rdma/get-cq-event*",
                        "brpc/rdma/arm-cq*",
                        "brpc/rdma/create-polling-cq",
                        "brpc/rdma/post-recv-wr",
                        "brpc/rdma/allocate-rbuf",
                        "brpc/rdma/polling-bthread",
                        "brpc/rdma/block-pool-empty",
                    ],
                ),
                pat(
                    r"\bFail to (?:find available RDMA (?:device|GID)\b|find rdma device\b|open rdma device |load rdma dynamic lib\b|initialize RDMA memory pool\b|get the device information\b|register memory\b|ibv_fork_init\b)|\bFailed to load any of the RDMA libraries\b|\bRDMA is disabled due to some unrecoverable problem\b",
                    &[
                        "brpc/rdma/no-*",
                        "brpc/rdma/open-device",
                        "brpc/rdma/load-*",
                        "brpc/rdma/memory-pool-init",
                        "brpc/rdma/device-information",
                        "brpc/rdma/register-memory",
                        "brpc/rdma/ibv-fork-init",
                        "brpc/rdma/disabled-unrecoverable",
                    ],
                ),
            ],
            unless: &[r"Fail to handle RDMA completion, error status\(12\)"],
        },
        // MSCCL++ (Microsoft's collective communication library), from its rows of
        // `more_stacks.tsv`: every IbError's text ends with `(Ib failure: <strerror>)`. Before
        // v0.9 a failed work completion's *status* went through strerror, so retry-exceeded
        // (12) reads `Cannot allocate memory`: the line is a completion error, not memory.
        Builtin {
            name: "mscclpp-ib-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "MSCCL++ threw an IbError or logged a failed IB work item: a failed ibverbs call (open, register, modify QP), a work completion with an error status, a CQ it could not poll, no active or usable port",
            example: "  what():  a work item failed: status 12 (Ib failure: Cannot allocate memory)",
            patterns: &[
                pat(
                    r"\(Ib failure: (?P<error>[^)\r\n]+)\)",
                    &[
                        "mscclpp/connection/work-item-failed-v04",
                        "mscclpp/connection/pollcq-failed-*",
                        "mscclpp/connection/pollsendcq-failed",
                        "mscclpp/ib/ibv-*",
                    ],
                ),
                pat(
                    r"\ban IB work item failed(?: in progressFlush)?: |\bNo (?:active|usable) port found\b[^\r\n]*\([Mm]scclpp failure: |\bIBConnection recvThreadFunc: recv work completion failed: |\bmscclpp\._mscclpp\.IbError: ",
                    &[
                        "mscclpp/connection/ib-work-item-failed*",
                        "mscclpp/connection/recv-wc-failed",
                        "mscclpp/ib/no-*",
                        "mscclpp/python/iberror-traceback",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "mscclpp-timeout",
            class: "other_hang",
            pre_s: PRE,
            description: "MSCCL++ waited for completions that never came (`pollCq timed out: waited for N seconds`): the peer or the fabric stopped answering (the window is back-dated by the wait)",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "2026-01-02 12:34:56 MSCCLPP 4242 ERROR CONN connection.cc:210 pollSendCq timed out: waited for 30.0012 seconds. Expected 4 signals (mscclpp failure: Timeout)",
            patterns: &[pat(
                r"\bpoll(?:Send)?Cq timed out: waited for (?P<stuck_s>\d+)(?:\.\d+)? seconds",
                &[
                    "mscclpp/connection/pollcq-timed-out",
                    "mscclpp/connection/pollsendcq-timed-out",
                ],
            )],
            unless: &[],
        },
        Builtin {
            name: "mscclpp-cuda-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "MSCCL++ threw a CudaError or CuError: a CUDA runtime or driver call it made failed (`Call to cuMemCreate(…) failed. FILE:LINE (Cu failure: …)`)",
            example: "mscclpp._mscclpp.CuError: (800, 'Call to cuMemCreate(&memHandle, nbytes, &prop, 0 ) failed./root/mscclpp/src/gpu_utils.cc:113 (Cu failure: operation not permitted)')",
            patterns: &[pat(
                r"\bCall to .+? failed\. ?\S+:-?\d+ \((?:Cu|Cuda) failure: (?P<error>[^)\r\n]+)\)",
                &[
                    "mscclpp/gpu/*",
                    "mscclpp/python/cuerror-traceback",
                ],
            )],
            unless: &[],
        },
        // NIXL, the KV-cache transfer library of disaggregated serving (vLLM, SGLang, Dynamo),
        // and AMD's MoRI, from their rows of `more_stacks.tsv`; TensorRT-LLM's cache transceiver
        // and nvidia-resiliency-ext's NIC check, from `frameworks.tsv`.
        Builtin {
            name: "framework-rdma-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A serving or training framework's RDMA transfer layer failed, in its own words: NIXL (the agent's post, status, prepare, registration and connection errors, its UCX and libfabric backends' completion-queue errors, failed writes and reads, memory mapping and handshake timeouts, nixlbench's failed transfers, the Python bindings' exceptions); ucxx's uncaught transport exceptions; TensorFlow 1.x's verbs transport finding no active port; TensorRT-LLM's KV-cache transfers (failed, past their timeout, or finished after the deadline and failed) and its UCX connections; nvidia-resiliency-ext's NIC health check (a link-down counter that grew, a port that left ACTIVE)",
            example: "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND",
            patterns: &[
                pat(
                    r"\bnixl\w*Error(?:: |\(')NIXL_ERR_\w+|encountered error during [\w -]+ with status NIXL_ERR_\w+|ucx_utils\.cpp:\d+\] (?:.*?: )?UCX endpoint create failed: ",
                    &["nixl/bindings/*", "nixl/agent/*", "nixl/ucx/*"],
                ),
                pat(
                    r"\b(?P<op>postXferReq|getXferStatus|genNotif|getNotifs|releaseXferReq|createXferReq|makeXferReq|registerMem|makeConnection|loadRemoteMD): (?:remote agent '[^'\r\n]*' was (?:disconnected|invalidated)|backend '[^'\r\n]*' (?:failed to (?:post|prepare) the transfer request|(?:could not release transfer request and )?returned error status)|registration failed|connect\('[^'\r\n]*'\) failed|no common backend|error loading connection info)",
                    &["nixl/agent/*"],
                ),
                pat(
                    r"\bUnexpected UCX error: |\bUCX AM send failed with status |\b[Ff]ailed to ucp_mem_map: |\bVRAM memory is detected as host by UCX",
                    &["nixl/ucx/*"],
                ),
                pat(
                    r"\bfi_cq_read returned error -?\d+ on rail|\bCQ read failed on rail -?\d+ with error: |\bfi_cq_readerr failed with -?\d+|\bCQ error in drain interleave on rail|\b(?P<op>fi_writedata|fi_read|fi_senddata|fi_mr_reg) failed on rail -?\d+: |\bFailed to establish connection with |\bHandshake from peer '[^'\r\n]*' not received after (?P<stuck_s>\d+)s",
                    &["nixl/libfabric/*"],
                ),
                pat(
                    r"\bNIXL Xfer failed with status: |\bTransfer failed on slot -?\d+: NIXL_ERR_|\bpostSlot failed (?:on resubmit )?for slot -?\d+: |\bcreateXferReq failed: |\bNIXL: registerMem failed \(",
                    &["nixl/bench/*"],
                ),
                pat(
                    r"\b(?:Unknown error|Error) occurred during (?:context|generation) transfer for request \d+|\b(?:Context|Generation) KV cache transfer for request \d+ (?:exceeded configured timeout: elapsed \d+ ms|completed after its deadline: elapsed \d+ ms > limit -?\d+ ms \(failing request\))|\bTerminating [^\r\n]*? request \d+ due to KV cache transfer timeout|\bError in UcxConnection constructor for rank (?P<rank>\d+): ",
                    &["trtllm/cache_transceiver/*", "trtllm/py_executor/kv-transfer-timeout-terminating", "trtllm/ucx/connection-constructor-error"],
                ),
                // ucxx (RAPIDS, Dask, Ray shuffles): an exception for a UCX transport status
                // that nothing caught, by libstdc++'s terminate message or Ray's (mangled).
                pat(
                    r"(?:terminate called after throwing an instance of 'ucxx::|Unhandled exception: N4ucxx\d+)(?P<error>(?:TimedOut|ConnectionReset|Unreachable|EndpointTimeout|IO|NotConnected|Rejected|FirstLinkFailure|LastLinkFailure|FirstEndpointFailure|LastEndpointFailure|NoDevice)Error)",
                    &["ucxx/exception/terminate-*", "ucxx/exception/ray-*"],
                ),
                // TensorFlow 1.x's verbs transport (contrib/verbs, and Yahoo's fork): CHECKs that abort,
                // among them a verbs call that returned an error.
                pat(
                    r"\bThere is no active port in the system\b|\bCheck failed: context Open context failed for |\bCheck failed: !\(?(?:\w+ = )?(?P<op>ibv_\w+)\(",
                    &["tensorflow/verbs/*"],
                ),
                pat(
                    r"\bNIC(?:/IB| device) (?P<hca>[\w.-]+)(?: link down counter has been incremented: |: Port state changed from ACTIVE to [^\r\n]*?\. Health check FAILED\.)",
                    &["nvrx/health_check/*"],
                ),
            ],
            unless: &[r"(?i)transport retry count(?:er)? exceeded"],
        },
        // HPC runtimes and file systems with their own RDMA transports: GASNet-EX's ibv and ofi
        // conduits, Mercury's NA plugins (DAOS), BeeGFS's client (`more_stacks.tsv`).
        Builtin {
            name: "hpc-runtime-rdma-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "An HPC runtime or file system failed on its RDMA transport: GASNet-EX aborting on a failed send or receive, a failed connect or a completion-queue error (and its dump of failed operations); Mercury's OFI or UCX plugin (DAOS) getting a completion error, an error event on an operation, a retry that ran out, Mercury not starting on OFI (no fabric, domain or endpoint) or an RPC whose NA operation failed; DAOS's CaRT failing a progress, forward, reply or bulk transfer, an RPC failed by the transport or to an unreachable target, its network layer not starting; BeeGFS's client failing to send a message, a communication error or timeout with a node, an IB post or completion error",
            example: "*** FATAL ERROR (proc 21): in gasnetc_snd_reap() at gasnet/GASNet-2021.9.0/ibv-conduit/gasnet_core_sndrcv.c:843: aborting on reap of failed send",
            patterns: &[
                pat(
                    r"\*\*\* FATAL ERROR \(proc -?\d+\): (?:[^\r\n]*?: )?(?:aborting on reap of failed (?:send|recv)|failed to connect \((?:snd|rcv)\) status=|Unexpected error [^\r\n]*? while reaping the (?:send|recv) queue|fi_cq_read for (?:tx_poll|am_recv_poll) (?:failed with error|returned unexpected error)|fi_send for [^\r\n]*? am failed: |fi_recvmsg failed inside am_recv_poll: )",
                    &["gasnet/ibv/abort-*", "gasnet/ibv/failed-to-connect-*", "gasnet/ibv/reap-*", "gasnet/ofi/*"],
                ),
                pat(
                    r"@ -?\d+> (?:snd (?:comp\.)?status=(?:TIMEOUT|-?\d+) (?:comp\.)?opcode=|rcv comp->status=|- [^\r\n]*? -?\d+ op\(s\) (?:FLUSHED by error|with status=))",
                    &["gasnet/ibv/dump-*"],
                ),
                pat(
                    r"\bfi_cq_readerr\(\) got err: |# na_ofi_cq_read\(\): fi_cq_readerr got err: |\bfi_cq_read(?:err)?\(\) failed, rc: |\berror event on operation ID \S+ \(|\bRetry time elapsed, aborting operation |\bretry operation of \S+ \([^)\r\n]*\) failed|\b(?:ucp_tag_send_nbx|ucp_tag_recv_nbx|ucp_am_send_nbx|na_ucp_rma_cb|ucp_ep_create)\(\) failed \(",
                    &["mercury/na_ofi/cq-*", "mercury/na_ofi/error-event-*", "mercury/na_ofi/retry-*", "mercury/na_ucx/*"],
                ),
                // Mercury not starting on its OFI plugin (no fabric, domain or endpoint), and an
                // RPC whose NA operation failed (`NA_HOSTUNREACH`, …).
                pat(
                    r"\bna_ofi_initialize\(\) Could not (?:create endpoint|open domain for |open fabric for |verify info for |get endpoint src address|create address)|\bhg_core_init\(\) Could not initialize NA class|\b\w+\(\) NA callback returned error \(NA_\w+",
                    &["mercury/na_ofi/initialize-*", "mercury/core/*"],
                ),
                // DAOS's CaRT over Mercury: a failed progress, forward, reply or bulk transfer,
                // an RPC failed by the transport or an unreachable target, the network layer
                // not starting (`daos/cart`, v2.0-v2.8).
                pat(
                    r"\bcrt_hg_progress\(\) HG_(?:Progress|Trigger) failed, hg_ret: |\bHG_(?:Forward|Respond) failed, hg_ret: |\bRPC failed; rc: DER_HG(?:_FATAL)?\(-?\d+\)|\bfailed, DER_UNREACH\(-?\d+\)|\bcrt_req_timeout_hdlr\([^)\r\n]*\) [^\r\n]*? can't reach the target|\bcrt_hg_bulk_transfer_cb,hg_cbinfo->ret: |\bHG_Bulk_\(bind\)transfer failed, hg_ret: |\bcrt_hg_class_init\(\) Could not initialize HG class\.|\bcrt_hg_ctx_init\(\) (?:Could not create HG context\.|failed, )|\bRequested provider [^\r\n]+? not found|\bcrt_hg_init\(\) failed, |\bHG_Addr_lookup2?\(\) failed\. uri=|\bURI lookups exceeded -?\d+ retries",
                    &["daos/cart/*"],
                ),
                pat(
                    r"\(communication\): (?:Failed to send message to |Communication (?:error|timeout)(?: in (?:SEND|RECV)DATA stage)?\. Node: |SocketError\. ErrCode: )|Messaging \(RPC\): Communication error: Node: |NodeConn \(acquire stream\): Connect failed on all available routes|__IBVSocket_postSend:-?\d+: ib_post_send\(\) failed|__IBVSocket_recvWC:-?\d+: retrieval of completion event failed|IBVSocket \((?:recv work completion|wait for total send completion)\): Connection error \(wc_status: ",
                    &["beegfs/commkit/*", "beegfs/messagingtk/*", "beegfs/connpool/connect-failed-all-routes", "beegfs/ibvsocket/*"],
                ),
                // Sandia OpenSHMEM (SOS, also under Intel SHMEM): the message line of its
                // RETURN_ERROR_MSG / OFI_CHECK_RETURN_* reports (`[%04d]        `, the PE prefix
                // under `[PE] ERROR: file:line: func`) on the transport's init path.
                pat(
                    r"\[(?:\d{4,}|\?{4})\] +(?:(?:Shared memory t|T)ransport (?:init|startup) failed \(-?\d+\)|Runtime exchange failed \(-?\d+\)|OFI MR registration (?:with HMEM )?failed|OFI transport did not find any valid fabric services|(?:fabric|domain) initialization failed|AV creation failed|(?:target endpoint|ep) creation failed \(|cq_open failed \(|fi_enable on (?:target )?endpoint failed|fi_ep_bind [\w ]+? to (?:target )?endpoint failed|target memory \((?:heap|data|all)\) registration failed)",
                    &["sos/init/*", "sos/transport_ofi/*"],
                ),
            ],
            unless: &[r"(?i)transport retry count(?:er)? exceeded"],
        },
        // DAOS: an RPC that timed out, and the SWIM failure detector finding the network
        // silent or a member dead (`daos/cart`, v2.0-v2.8). Not the transport failing: DAOS
        // resends a timed-out RPC, and the line does not say why the answer did not come.
        Builtin {
            name: "hpc-runtime-timeout",
            class: "other_hang",
            pre_s: PRE,
            description: "DAOS's network layer (CaRT) timed out: an RPC got no answer in time (the line says how long it waited), progress stopped on a timeout, or the SWIM failure detector saw the network idle for too long, too many glitches, or declared a member dead",
            example: "02/26-13:46:02.55 wolf-229 DAOS[289719/289741/0] hg   WARN src/cart/crt_hg.c:1376 crt_hg_req_send_cb(0x7f58f8001050) [opc=0x2070003 (DAOS_POOL_MODULE:POOL_QUERY) rpcid=0x379d3f300000009a rank:tag=1:0] RPC failed; rc: DER_TIMEDOUT(-1011): 'Time out'",
            patterns: &[pat(
                r"\bRPC failed; rc: DER_TIMEDOUT\(-?\d+\)|\bcrt_context_timeout_check\([^)\r\n]*\) [^\r\n]*? timed out \(\d+ seconds\)|\bcrt_ctx_epi_abort\(\) stop progress due to timed out|\b(?:SWIM network|Network) outage detected \(idle during |\bToo many network glitches are detected|\bswim_member_dead\(\) (?:-?\d+: )?member -?\d+ -?\d+ is DEAD\b",
                &["daos/timeout/*", "daos/swim/*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "mori-rdma-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "AMD's MoRI (MoE dispatch and KV transfer over RDMA) failed: memory registration, GID selection, verbs objects and QP state changes, completion errors (with its root-cause hint), flushed completion rounds, a full send queue, a partly posted send, engine and session read/write errors, fatal async events, its TCP bootstrap",
            example: "[application][error] RegisterRdmaMemoryRegion failed! addr:0x..., size:943718400, accessFlag:15, errno:22 (Invalid argument)",
            patterns: &[
                pat(
                    r"\bRegisterRdmaMemoryRegion(?:Dmabuf(?:Iova0)?)? failed! addr:|\bRegisterRdmaMemoryRegionAuto failed: |\bFailed to auto-detect a valid GID on port",
                    &["mori/rdma/register-mr-*", "mori/rdma/auto-detect-gid-failed"],
                ),
                pat(
                    r"\b(?P<op>ibv_create_cq|ibv_create_qp|ibv_alloc_pd|ibv_create_comp_channel|ibv_modify_qp)(?:\((?:INIT|RTR|RTS)\))? failed: err(?:no)?=",
                    &["mori/ibverbs/create-*", "mori/ibverbs/alloc-pd-failed", "mori/ibverbs/modify-qp-*"],
                ),
                pat(
                    r"\bProcessOneCqe: (?:\[ROOT CAUSE\] )?CQE error: wr_id=\d+ status=(?P<status>\d+)|\bNotifManager receive (?:send )?cqe failed for |\) CQE error: |\[BNXT PollCq\] CQE error: ",
                    &["mori/io/cqe-error-*", "mori/io/notif-*", "mori/device/*"],
                ),
                pat(
                    r"\bCQ poll round summary: \d+ flush errors across|\bSQ full timeout \(|\bibv_post_send partially posted -?\d+ / -?\d+ WRs|\bibv_post_send failed on ep -?\d+: |\b(?:Engine|Session)(?: batch)? (?:read|write) error -?\d+ message |\bcontrol-plane handler for fd -?\d+ failed: ",
                    &[
                        "mori/io/cq-flush-round-summary*",
                        "mori/io/sq-full-timeout*",
                        "mori/io/post-send-*",
                        "mori/io/engine-*",
                        "mori/io/session-*",
                        "mori/io/control-plane-handler-failed-errno",
                    ],
                ),
                pat(
                    r"\bRDMA async event (?P<event>IBV_EVENT_(?:PORT_ERR|QP_FATAL|QP_REQ_ERR|QP_ACCESS_ERR|CQ_ERR|DEVICE_FATAL|SRQ_ERR|PATH_MIG_ERR)) \(type=",
                    &["mori/io/async-event-*"],
                ),
                pat(
                    r"\bRank (?P<rank>\d+) failed to connect to (?:root|next rank \d+ for ring) after -?\d+ retries|\bAcceptSocket timed out after (?P<timeout_ms>\d+) ms|\] syscall failed with ",
                    &["mori/bootstrap/*", "mori/check/syscall-failed"],
                ),
            ],
            unless: &[r"(?i)transport retry count(?:er)? exceeded"],
        },
        Builtin {
            name: "gpi2-ib-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "GPI-2's ibverbs device (debug library) reported a failed request that left a queue broken, or could not set up its verbs resources (QP/CQ/SRQ creation, QP state change, device and port, memory registration)",
            example: "> [Rank    0]: Error 22 (Invalid argument) at (.../GPI-2-1.3.0/src/devices/ib/GPI2_IB.c:813):Failed to modify QP (libibverbs)",
            patterns: &[
                pat(
                    r":\d+\):Failed request to \d+(?:\. Queue (?P<qp>-?\d+) might be broken|\. Collectives queue might be broken| :)(?: (?P<error>[^\r\n]+))?",
                    &[
                        "gpi2/ib_io/failed-request-queue-broken*",
                        "gpi2/ib_atomic/failed-request-v1.1",
                        "gpi2/ib_grp/failed-request-collectives-queue-broken",
                    ],
                ),
                pat(
                    r"\):(?:(?:Failed to (?:modify QP|create (?:QP|CQ|SRQ))|Failed to open IB device|Failed to query port \(\d+\)|Memory registration failed) \(libibverbs\)|No IB active port found|No active Ethernet \(RoCE\) port with active link found|Failed to find topology! Is subnet-manager running \?)",
                    &["gpi2/ib/*"],
                ),
            ],
            unless: &[r"(?i)transport retry count(?:er)? exceeded"],
        },
        // The Linux kernel's RDMA drivers (dmesg / kern.log): written from the rows of
        // `kernel_rdma.tsv` and the `linux-rdma/` rows of `more_stacks.tsv`. A `WC error: 12, Message: transport retry counter exceeded`
        // line is `verbs-retry-exceeded`'s.
        Builtin {
            name: "kernel-rdma-cqe-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A kernel RDMA driver reported an error completion or an error event on a QP or CQ: mlx5_ib error CQEs (requestor/responder, syndrome and vendor syndrome, the CQE dump, signature errors) and fatal QP error syndromes, mlx5_core CQ error events, bnxt_re error requester CQEs, irdma abnormal asynchronous events",
            example: "[15601.662158] infiniband rocep33s0f0: mlx5_poll_one:530:(pid 0): syndrome 0x5, vendor syndrome 0xf9",
            patterns: &[
                pat(
                    r"infiniband (?P<hca>[\w.-]+): \w+:-?\d+:\(pid -?\d+\): syndrome (?P<syndrome>0x[0-9a-fA-F]+), vendor syndrome (?P<vendor_err>0x[0-9a-fA-F]+)",
                    &["linux-rdma/mlx5_ib/cq/syndrome-vendor-syndrome"],
                ),
                pat(
                    r"(?:Requestor|Responder) error cqe on cqn 0x[0-9a-fA-F]+:",
                    &["linux-rdma/mlx5_ib/cq/error-cqe-on-cqn-*"],
                ),
                pat(
                    r"\(pid -?\d+\): (?:dump error cqe\b|WC error: (?P<status>\d+), Message: )",
                    &["linux-rdma/mlx5_ib/cq/dump-error-cqe", "linux-rdma/mlx5_ib/cq/wc-error"],
                ),
                pat(
                    r"CQN: 0x[0-9a-fA-F]+ Got SIGERR on key: 0x",
                    &["linux-rdma/mlx5_ib/cq/sigerr"],
                ),
                // mlx5_ib on a fatal/access-error QP event, mlx5_core on a CQ error event.
                pat(
                    r"/\d+: QP (?P<qp>-?\d+) error: (?P<error>[^(\r\n]*?) \((?P<vendor_err>0x[0-9a-fA-F]+) 0x[0-9a-fA-F]+ 0x[0-9a-fA-F]+\)",
                    &["linux-rdma/mlx5_ib/qp/qp-err-syndrome*"],
                ),
                pat(
                    r"CQ error on CQN 0x[0-9a-fA-F]+, syndrome? (?P<syndrome>0x[0-9a-fA-F]+)",
                    &["linux-rdma/mlx5_core/eq/cq-error-on-cqn*"],
                ),
                // bnxt_re's error requester CQE, irdma's QP/CQ asynchronous events.
                pat(
                    r"FP: CQ Processed Req wr_id\[-?\d+\] = 0x[0-9a-fA-F]+ with status (?P<status>0x[0-9a-fA-F]+)",
                    &["linux-rdma/bnxt_re/qplib_fp/cq-processed-req-error"],
                ),
                pat(
                    r"abnormal ae_id = (?P<event>0x[0-9a-fA-F]+) bool qp=-?\d+ qp_id = (?P<qp>-?\d+)",
                    &["linux-rdma/irdma/hw/abnormal-ae-id*"],
                ),
                // bnxt_re's terminal CQE and QP in error, hns's error CQE and work queue or CQ
                // error events, irdma's QP not flushed, ionic's error CQEs (their lines start
                // with the Ethernet driver's name: `bnxt_en`, `hns3`, `ice`, `ionic`).
                pat(
                    r"FP: CQ Process Terminal Error status = 0x|QPLIB: FP: QP \(0x[0-9a-fA-F]+\) is in the 0x[0-9a-fA-F]+ state|\bhns3 [^\r\n]*?: (?:error cqe status 0x[0-9a-fA-F]+:|[Ll]ocal work queue 0x[0-9a-fA-F]+ catast error|local access violation work queue 0x[0-9a-fA-F]+ error|CQ 0x[0-9a-fA-F]+ (?:access err\.|overflow))|fatal QP event: SQ in error but not flushed|Flush QP\[-?\d+\] failed, SQ has more work|\bionic [^\r\n]*?: qp -?\d+ (?:recv|msn) cqe with error",
                    &[
                        "linux-rdma/bnxt_re/qplib_fp/cq-terminal-error",
                        "linux-rdma/bnxt_re/qplib_fp/qp-in-error-state",
                        "linux-rdma/hns/*",
                        "linux-rdma/irdma/hw/fatal-qp-event-sq-not-flushed",
                        "linux-rdma/irdma/hw/flush-qp-failed",
                        "linux-rdma/ionic/datapath/*",
                    ],
                ),
                // Soft-iWARP's send queue failing a work request (siw_dbg_qp, dynamic debug), and
                // Soft-RoCE's responder finding no MR or MW for a remote key (pr_err, later
                // rxe_dbg_qp; its `qp#N moved to error state` is the generic pack's).
                pat(
                    r"\bQP\[\d+\] (?:siw_qp_sq_process: (?:wqe type -?\d+ processing failed: |proc\. read\.response failed: )|siw_sq_resume: SQ task failed: err )|\bcheck_rkey: (?:no M[RW] matches rkey 0x|MW doesn't have an MR)",
                    &[
                        "linux-rdma/siw/qp_tx/wqe-processing-failed",
                        "linux-rdma/siw/qp_tx/read-response-failed",
                        "linux-rdma/siw/qp_tx/sq-task-failed",
                        "linux-rdma/rxe/rkey/*",
                    ],
                ),
            ],
            unless: &[
                // `verbs-retry-exceeded`'s.
                r"(?i)transport retry count(?:er)? exceeded",
                r"FP: CQ Processed Req wr_id\[-?\d+\] = 0x[0-9a-fA-F]+ with status 0xa(?:[^0-9a-fA-F]|$)",
            ],
        },
        // The kernel's RDMA upper layers (`kernel_rdma.tsv`): NFS over RDMA (xprtrdma client,
        // svcrdma server), iSER (initiator and isert target), SRP (initiator, transport class
        // and srpt target), RDS over IB, SMB Direct (cifs client, ksmbd server). A failed
        // completion they print by status name is theirs, not `verbs-completion-error`'s
        // (vetoed there); transport retry exceeded stays `verbs-retry-exceeded`'s.
        Builtin {
            name: "kernel-rdma-ulp-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A kernel storage or file protocol over RDMA failed: NFS over RDMA (rpcrdma/svcrdma) a completion with an error, a QP async error, a connection closed or a device removed; iSER/isert a completion error, a QP or async error event, a post or connect failure; SRP a failed CQE, a path record query, a rejected login or connection (`REJ received`), a reconnect that failed, fast_io_fail/dev_loss timeouts; srpt RDMA, send or receive failures and a target port that could not be set up; RDS/IB completion errors and rejected connections; SMB Direct (cifs, ksmbd) completion errors, QP errors, connect or negotiate failures",
            example: "[  397.190547] scsi host11: ib_srp: REJ received",
            patterns: &[
                pat(
                    r"\brpcrdma: (?:removing device \S+ for |connection to \S+ closed \(-?\d+\)|Recv: [^\r\n]*? \(-?\d+/0x[0-9a-fA-F]+\)|'frwr' mode is not supported by device|HCA provides only \d+ send SGEs|[^\r\n]*? on device \S+ ep [0-9a-fA-F]+)|\brpcrdma_qp_async_error_upcall: [^\r\n]*? on device |\bListener dead, address change failed for device |\bsvcrdma: (?:(?:Send|Recv): [^\r\n]*? \(-?\d+/0x[0-9a-fA-F]+\)|Could not send reply, err=-?\d+\. Closing transport)",
                    &["linux-rdma/xprtrdma/*", "linux-rdma/svcrdma/*"],
                ),
                pat(
                    r"\biser: (?:iser_err_comp: [^\r\n]*? failure: |iser_qp_event_callback: qp event |iser_event_handler: async event |iser_post_send: ib_post_send failed|iser_post_recvm: ib_post_recv failed|iser_route_handler: failure connecting: |iser_addr_handler: resolve route failed: |iser_cma_handler: Unexpected RDMA CM event: |iser_create_fastreg_desc: Failed to allocate ib_fast_reg_mr|iser_check_remote_inv: conn [0-9a-fA-F]+: unexpected remote invalidation)|\bisert: (?:isert_print_wc: [^\r\n]*? failure: |isert_qp_event_callback: |isert_post_response: ib_post_send failed|isert_post_recvm: ib_post_recv\(\) failed|isert_rdma_accept: rdma_accept\(\) failed|isert_cma_handler: failed handle connect request|isert_rdma_rw_ctx_post: Cmd: [0-9a-fA-F]+ failed to post RDMA res|isert_allocate_cmd: Unable to allocate iscsit_cmd \+ isert_cmd)",
                    &["linux-rdma/iser/*", "linux-rdma/isert/*"],
                ),
                pat(
                    r"\bib_srp: (?:failed [^\r\n]*? status [^\r\n]*?(?: for CQE| \(-?\d+\)\s*$)|Got failed path rec status|Path record query failed|Connection -?\d+/-?\d+ to [^\r\n]*? failed|REJ received|SRP LOGIN from [^\r\n]*? REJECTED|SRP_LOGIN_REJ: requested max_it_iu_len too large|DREQ received - connection closed|connection closed|No route available from |Sending CM (?:REQ|DREP) failed|Unhandled RSP opcode 0x)|\bscsi host-?\d+: +(?:REJ reason 0x|reconnect attempt -?\d+ failed \()|\b(?:fast_io_fail_tmo|dev_loss_tmo) expired for SRP port-|\bib_srpt (?:RDMA_READ for ioctx 0x[0-9a-fA-F]+ failed with status|sending response for ioctx 0x[0-9a-fA-F]+ failed with status|Received CM REJ for ch |[^\r\n]*?: QP transition to RTS failed|srpt_write_pending: ib_post_send\(\) returned|received unrecognized IB QP event|ib_cm_listen\(\) failed: |ib_create_cm_id\(\) failed: |MAD registration failed for |srpt_add_one\([^)\r\n]*\) failed\.)|\bib_srpt receiving failed for ioctx (?:0x)?[0-9a-fA-F]+ with status (?:[0-46-9]|\d\d+)\b",
                    &[
                        "linux-rdma/srp/qp-err-completion",
                        "linux-rdma/srp/path-*",
                        "linux-rdma/srp/connection-*",
                        "linux-rdma/srp/rej-*",
                        "linux-rdma/srp/login-rejected",
                        "linux-rdma/srp/dreq-connection-closed",
                        "linux-rdma/srp/no-route-available",
                        "linux-rdma/srp/qp-err-completion-wrapped",
                        "linux-rdma/srp/sending-cm-*",
                        "linux-rdma/srp/login-rej-*",
                        "linux-rdma/srp/unhandled-rsp-opcode",
                        "linux-rdma/srp-transport/*",
                        "linux-rdma/srpt/*",
                    ],
                ),
                pat(
                    r"\bRDS/IB: (?:(?:send|recv) completion on <[^>\r\n]*> had status -?\d+ \(|frmr completion <[^>\r\n]*> status -?\d+\(|ib_post_send to \S+ returned -?\d+)|\bRDS/RDMA: conn <[^>\r\n]*> rejected, dropping connection|\bCIFS: VFS: (?:send_done:-?\d+ wc->status=-?\d+ wc->opcode=|smbd_qp_async_error_upcall:-?\d+ |\w+:-?\d+ (?:ib_post_send failed rc=|wc->status=[^\r\n]*? \(-?\d+\) wc->opcode=)|_smbd_get_connection:-?\d+ (?:rdma_connect failed port=|smbd_negotiate rc=))|\bksmbd: smb_direct: (?:(?:Send|Recv) error\. status='|read/write error\. opcode = )",
                    &["linux-rdma/rds/*", "linux-rdma/smbdirect-client/*", "linux-rdma/ksmbd/*"],
                ),
            ],
            unless: &[
                r"(?i)transport retry count(?:er)? exceeded",
                // Events that every healthy login and link-up prints at error level.
                r"\biser: iser_qp_event_callback: qp event communication established|\biser: iser_event_handler: async event port active|\bisert: isert_qp_event_callback: communication established",
            ],
        },
        // SRP's SCSI error handler aborting a command or resetting the host: a command timed
        // out on the RDMA path.
        Builtin {
            name: "kernel-srp-abort",
            class: "other_hang",
            pre_s: PRE,
            description: "SRP (SCSI over RDMA) aborted a command or reset the host: a SCSI command timed out on the RDMA path",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "[ 5123.456789] scsi host11: SRP abort called",
            patterns: &[pat(
                r"\bscsi host-?\d+: (?:ib_srp: )?SRP (?:abort|reset_host) called",
                &["linux-rdma/srp/abort-called", "linux-rdma/srp/reset-host-called"],
            )],
            unless: &[],
        },
        Builtin {
            name: "kernel-rdma-device-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "The kernel RDMA device driver reported the adapter unhealthy, not brought up (a step of mlx5_core's setup, mlx5_load_one/mlx5_init_one or a driver probe failed), Soft-RoCE unable to send a response, or a firmware command failure: mlx5_core health poll (miss count, fatal sensor, health syndrome, failed recovery), an mlx5 firmware command timeout, an EFA admin command failure, a bnxt_re firmware channel timeout, stall or failed command, an irdma control QP error, an erdma memory registration past the device's limit, or an RDMA module that did not load (unknown symbols)",
            example: "b1360: [14280.445226] mlx5_core 0000:61:00.0: wait_func:1132:(pid 141181): CREATE_DCT(0x710) timeout. Will cause a leak of a command resource",
            patterns: &[
                // An RDMA module that did not load (its symbols missing: an OFED/kernel mismatch).
                // erdma (Alibaba Cloud's elastic RDMA) refusing a memory registration: every
                // transfer from that buffer fails.
                pat(r"\bERROR: Out of mr size: \d+, max \d+", &["linux-rdma/erdma/out-of-mr-size"]),
                pat(
                    r"\b(?:ko2iblnd|ib_\w+|rdma_\w+|mlx[45]_(?:ib|core)|irdma|bnxt_re|efa|nvme_rdma|nvmet_rdma|rpcrdma|svcrdma): Unknown symbol \S+ \(err -?\d+\)",
                    &["linux/module/unknown-symbol-rdma"],
                ),
                pat(
                    r"(?:\(pid -?\d+\)|\bmlx5_core [\w:.]+): (?:device's health compromised - reached miss count|Fatal error (?P<error>\d+) detected|synd (?P<syndrome>0x[0-9a-fA-F]+): |Health issue observed, (?P<event>[^,]*), severity\(|PCI slot is unavailable|health recovery (?:failed|flow aborted, PCI reads still not working))",
                    &[
                        "linux-rdma/mlx5_core/health/health-compromised",
                        "linux-rdma/mlx5_core/health/fatal-error-detected",
                        "linux-rdma/mlx5_core/health/synd",
                        "linux-rdma/mlx5_core/health/health-issue-observed",
                        "linux-rdma/mlx5_core/health/pci-slot-unavailable",
                        "linux-rdma/mlx5_core/health/recovery-*",
                        "linux-rdma/mlx5_core/health/old-*",
                    ],
                ),
                // The steps of bringing the adapter up (main.c: mlx5_function_setup, mlx5_load_one
                // and their older forms), each logged by dev_err or mlx5_core_err when it fails.
                pat(
                    r"\bmlx5_core [\w:.]+: (?:\w+:\d+:\(pid -?\d+\): )?(?:Firmware over \d+ MS in (?:pre-)?initializing state, aborting|Failed initializing command interface, aborting|(?:enable hca|mlx5_pagealloc_start|set_hca_ctrl|handle_hca_cap(?:_atomic|_odp|_2)?|init hca|query hca|query adapter|sw objs init|enable msix) failed|failed to (?:set issi|allocate (?:boot|init) pages|initialize eq)|Failed allocating uar, aborting|Failed to start pages and async EQs|Failed to (?:alloc IRQs|create EQs|init flow steering|set hca defaults|init embedded CPU|init FW tracer\s*$)|sriov init failed -?\d+)",
                    &["linux-rdma/mlx5_core/setup/*"],
                ),
                // Soft-RoCE could not send a response (rxe_resp.c).
                pat(r"\brdma_rxe: (?:\w+: )?Failed sending (?:ack|RDMA reply)", &["linux-rdma/rxe/resp/*"]),
                // Soft-RoCE could not open its UDP tunnel (RoCEv2 port 4791) or watch netdevs
                // (rxe_net.c): the device does not come up.
                pat(
                    r"\brdma_rxe: (?:Failed to create IPv[46] UDP tunnel|failed to create udp socket\. err = |Failed to register netdev notifier)",
                    &[
                        "linux-rdma/rxe/net/failed-to-create-ipv4-udp-tunnel",
                        "linux-rdma/rxe/net/failed-to-create-ipv6-udp-tunnel",
                        "linux-rdma/rxe/net/failed-to-create-udp-socket",
                        "linux-rdma/rxe/net/failed-to-register-netdev-notifier",
                    ],
                ),
                // Soft-RoCE could not pin a user buffer, create a QP, route to the peer, or post
                // on a QP not ready to send (rxe_mr.c, rxe_verbs.c, rxe_net.c; each era's wording).
                pat(
                    r"\brdma_rxe: (?:err -?\d+ from rxe_umem_get|no route to |Host not reachable)|rxe_mr_init_user: +Unable to pin memory region err = |\brxe_(?:reg_user_mr|create_qp): returned err = |\brxe_post_send: qp not ready to send",
                    &["linux-rdma/rxe/mr/*", "linux-rdma/rxe/verbs/*", "linux-rdma/rxe/net/no-route-to", "linux-rdma/rxe/net/host-not-reachable"],
                ),
                // HPE Slingshot's Cassini NIC (cxi_core): critical, uncorrectable and the
                // diagnostic degraded or transient error flags (cass_errors.c), the link going
                // down, the driver disabling the device, uncorrectable PCIe errors.
                pat(
                    r"\bcxi_core \S+: cxi\d+\[[\w.-]+\]:? (?:C_EC_(?:CRIT|UNCOR_NS|UNCOR_S): |C_EC_DEGRD_NS: \S+ error: pbuf_rd_err |C_EC_TRNSNT_NS: \S+ error: pcs_link_down|CXI_EVENT_LINK_DOWN|\(sbl\): -?\d+: link down alert|Disabling device\. Reason: Unrecoverable error|disabling device\s*$|PCIe error: (?:FC Timeout|Poisoned TLP|ECRC Error|Unsupported Request|Completer Abort|Completion Timeout)=)",
                    &[
                        "linux-rdma/cxi/errflg/crit*",
                        "linux-rdma/cxi/errflg/uncor-*",
                        "linux-rdma/cxi/errflg/degrd-ns-pbuf-rd-err",
                        "linux-rdma/cxi/errflg/trnsnt-pcs-link-down*",
                        "linux-rdma/cxi/phy/event-link-down",
                        "linux-rdma/cxi/sbl/link-down-alert",
                        "linux-rdma/cxi/core/disabling-device-*",
                        "linux-rdma/cxi/pcie-mon/pcie-uncorrectable-error",
                    ],
                ),
                // Soft-RoCE could not set its device up; the core could not pin a user buffer.
                pat(
                    r"\brdma_rxe: failed to allocate crc algorithm|\bib_umem_get: failed to get user pages",
                    &["linux-rdma/rxe/init/*", "linux-rdma/ib_core/umem/*"],
                ),
                pat(
                    r"(?P<op>\w+)\(0x[0-9a-fA-F]+\) (?:(?:Async, )?timeout\. Will cause a leak of a command resource|No done completion)",
                    &[
                        "linux-rdma/mlx5_core/cmd/wait-func-timeout",
                        "linux-rdma/mlx5_core/cmd/cb-timeout-*",
                        "linux-rdma/mlx5_core/cmd/no-done-completion",
                    ],
                ),
                pat(
                    r"Failed to (?:process|submit) command .+? \(opcode \d+\)(?: comp_status -?\d+)? err (?P<error>-?\d+)|Failed to register mr \[(?P<retcode>-?\d+)\]",
                    &["linux-rdma/efa/efa_com/*", "linux-rdma/efa/efa_com_cmd/failed-to-register-mr"],
                ),
                // bnxt_re's firmware channel (RCFW), irdma's control QP (CQP).
                pat(
                    r"cmdq\[(?:0x)?[0-9a-fA-F]+\]=(?:0x)?[0-9a-fA-F]+ (?:timedout \(-?\d+\)msec|status (?P<status>(?:0x)?[0-9a-fA-F]+)|send failed)|FW STALL Detected\. cmdq\[",
                    &[
                        "linux-rdma/bnxt_re/qplib_rcfw/cmdq-send-failed*",
                        "linux-rdma/bnxt_re/qplib_rcfw/cmdq-timedout",
                        "linux-rdma/bnxt_re/qplib_rcfw/cmdq-status",
                        "linux-rdma/bnxt_re/qplib_rcfw/fw-stall-detected",
                    ],
                ),
                pat(
                    r"cqp opcode = 0x[0-9a-fA-F]+ maj_err_code = (?P<error>0x[0-9a-fA-F]+) min_err_code = 0x",
                    &["linux-rdma/irdma/hw/cqp-error"],
                ),
                // The adapter could not be brought up: mlx5_core's probe, or any RDMA driver's
                // probe as the driver core reports it.
                pat(
                    r"\bmlx5_(?:load|init)_one failed with error code (?P<error>-?\d+)",
                    &["linux-rdma/mlx5_core/main/*"],
                ),
                pat(
                    r"\b(?:mlx[45]_core|mlx[45]_ib|efa|bnxt_re|irdma|qedr|hns_roce_hw_v2|erdma|mana_ib|rdma_rxe|siw): probe of \S+ failed with error (?P<error>-?\d+)|\bprobe with driver (?:mlx[45]_core|mlx[45]_ib|efa|bnxt_re|irdma|qedr|hns_roce_hw_v2|erdma|mana_ib) failed with error (?P<retcode>-?\d+)",
                    &["linux-rdma/driver-core/*"],
                ),
                // mlx5_core's failed firmware command (mlx5_cmd_check, later mlx5_cmd_out_err).
                // Case-insensitive: issue trackers sometimes carry a lower-cased copy, and typeset
                // pages an `0×` (U+00D7, bytes C3 97) for `0x`.
                pat(
                    r"(?i)\b(?P<op>[a-z][a-z0-9_]+)\(0(?:x|\xC3\x97)[0-9a-f]+\) op_mod\(0(?:x|\xC3\x97)[0-9a-f]+\)(?: uid\(-?\d+\))? failed, status (?P<error>[^(\r\n]+)\((?P<status>0(?:x|\xC3\x97)[0-9a-f]+)\), syndrome \((?P<syndrome>0(?:x|\xC3\x97)[0-9a-f]+)\)",
                    &["linux-rdma/mlx5_core/cmd/cmd-*"],
                ),
                // irdma's control QP command errors, async event queue overflow, critical
                // protocol-engine error, QP suspend timeout, failed hardware init; bnxt_re's
                // firmware stall and RCFW timeout; ionic's admin command timeout.
                pat(
                    r"\]\[op_code=-?\d+\] status=-?\d+ waiting=-?\d+ completion_err=|\bcqp opcode = 0x[0-9a-fA-F]+ maj_err_code = 0x|\bAEQ has overflowed|\bcritical PE Error, GLPE_CRITERR=0x|\bmodify_qp timed out waiting for suspend\. qp_id = |\bIRDMA hardware initialization FAILED init_state=|\bbnxt_re_is_fw_stalled: FW STALL Detected\.|\brcfw timedout: cookie = 0x|\bionic [^\r\n]*?: admin command timed out, aq -?\d+ after: ",
                    &[
                        "linux-rdma/irdma/utils/cqp-cmd-error",
                        "linux-rdma/irdma/hw/cqp-opcode-error",
                        "linux-rdma/irdma/hw/aeq-overflow",
                        "linux-rdma/irdma/icrdma/critical-pe-error",
                        "linux-rdma/irdma/verbs/modify-qp-suspend-timeout",
                        "linux-rdma/irdma/hw/hw-init-failed",
                        "linux-rdma/bnxt_re/qplib_rcfw/fw-stall",
                        "linux-rdma/bnxt_re/qplib_rcfw/rcfw-timedout",
                        "linux-rdma/ionic/admin/*",
                    ],
                ),
            ],
            unless: &[
                // Register reads at probe that the firmware does not support: not the fabric.
                r"(?i)\bACCESS_REG\(0x805\) op_mod\(",
                // Cassini flags the driver logs at INFO (llr_eopb) or that follow correctable
                // PCIe errors (pri_rbyp_abort, HPE's CXI error guide).
                r"C_EC_(?:CRIT|UNCOR_NS): [^\r\n]*? error: (?:pri_rbyp_abort|llr_eopb) \(",
            ],
        },
        // Kernel RDMA drivers and the RDMA core failing to create or change a verbs resource
        // (`kernel_rdma.tsv`): the consumer (a ULP, an application through uverbs, the MAD
        // layer) gets an error. Requests past the device's limits are the caller's (ok rows).
        Builtin {
            name: "kernel-rdma-resource-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A kernel RDMA driver or the RDMA core could not create or change a verbs resource: bnxt_re's hardware QP, CQ, SRQ, AH, PD or fence MR/MW (its firmware refused), hns RoCE's QP creation, mlx5_ib's QP creation, or ib_mad bringing up a port's management QPs (port open, receive posting, a fatal error on a MAD QP)",
            example: "[    5.531709] infiniband bnxt_re0: Couldn't open port 1",
            patterns: &[
                pat(
                    r"\b(?:infiniband [\w.-]+|ib_mad): (?:Couldn't (?:open port (?P<port>\d+)(?: for agents)?|start port|post receive WRs|create ib_mad (?:PD|CQ|QP-?\d+)|change QP-?\d+ state to \w+: )|Fatal error \((?P<event>-?\d+)\) on MAD QP \((?P<qp>\d+)\)|ib_post_recv failed: (?P<error>-?\d+)|Failed to request completion notification: )",
                    &["linux-rdma/ib_core/mad/*"],
                ),
                pat(
                    r": (?:Failed to (?:register fence-MR|alloc fence-HW-MR|dma-map fence-MR-mem|create fence-MW for PD: |create Fence-MR|allocate HW (?:PD|AH)|create HW (?:QP|CQ)\b|modify HW QP|query HW QP|destroy HW QP|(?:create|modify) Shadow QP for QP1)|create HW QP1 failed!|(?:Create|Modify|Query) HW SRQ failed!)",
                    &[
                        "linux-rdma/bnxt_re/verbs/register-fence-mr-failed",
                        "linux-rdma/bnxt_re/verbs/alloc-fence-hw-mr-failed",
                        "linux-rdma/bnxt_re/verbs/dma-map-fence-mr-failed",
                        "linux-rdma/bnxt_re/verbs/create-fence-mw-failed",
                        "linux-rdma/bnxt_re/verbs/create-fence-mr-warn",
                        "linux-rdma/bnxt_re/verbs/allocate-hw-*",
                        "linux-rdma/bnxt_re/verbs/create-hw-*",
                        "linux-rdma/bnxt_re/verbs/create-shadow-qp-failed",
                        "linux-rdma/bnxt_re/verbs/modify-*",
                        "linux-rdma/bnxt_re/verbs/query-*",
                        "linux-rdma/bnxt_re/verbs/destroy-hw-qp-failed",
                    ],
                ),
                pat(
                    r"\bhns(?:3|_roce) [^\r\n]*?: (?:Create (?:RC )?QP (?:0x[0-9a-fA-F]+ )?failed|create QP type (?:0x)?[0-9a-fA-F]+ failed\(-?\d+\)|Create GSI QP failed!|hns_roce_set_user_sq_size error for create qp)",
                    &["linux-rdma/hns_roce/qp/*"],
                ),
                pat(
                    r"\(pid -?\d+\): Create QP type -?\d+ failed",
                    &["linux-rdma/mlx5_ib/qp/create-qp-type-failed"],
                ),
            ],
            unless: &[],
        },
    ],
};
