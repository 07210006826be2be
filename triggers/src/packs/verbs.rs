//! The `verbs` pack.

use super::{pat, Builtin, Table, PRE, RETRY_PRE};

/// Verbs users other than NCCL and UCX: rdma-core's providers, Open MPI, Gloo's ibverbs
/// transport and RDMA applications.
pub(super) static VERBS: Table = Table {
    name: "verbs",
    summary: "RDMA verbs completion errors from rdma-core providers, Open MPI, Gloo's ibverbs transport and other verbs applications",
    rows: &[
        Builtin {
            name: "verbs-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "Transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR, status 12, syndrome 0x15): the peer stopped ACKing ~30 s earlier",
            example: "CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10",
            patterns: &[
                pat(r"status=12\(transport retry counter exceeded\)(?:.*?qp_num=(?P<qp>0x[0-9a-fA-F]+))?", &[]),
                pat(r"(?i)transport retry count(?:er)? exceeded", &[]),
                pat(r"wc->status == IBV_WC_SUCCESS.*? error: (?P<status>12)\b", &[]),
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
                super::libfabric::RETRY,
                // NCCL >= 2.28.7 prints the status name: the nccl pack's line.
                r"Got completion from peer ",
                // perftest >= 26.01 prints the status name: the perftest pack's line.
                r"Failed status-[^(]*\(\d+\): ",
            ],
        },
        Builtin {
            name: "verbs-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "A verbs work completion failed (protection, remote access, QP operation…)",
            example: "@10.150.240.28 [single_op.hpp:129] poll till completion error: 10 remote access error",
            patterns: &[
                pat(r"WC error, .*?status: \((?P<status>\d+)\): (?P<error>[a-z]+(?: [a-z]+)*)", &[]),
                pat(r"ibv_poll_cq failed, status: (?P<status>\d+)", &[]),
                pat(r"poll till completion error: (?P<status>\d+)(?: (?P<error>[a-z]+(?: [a-z]+)*))?", &[]),
                pat(r"Check failed: wc->status == IBV_WC_SUCCESS(?:.*? error: (?P<status>\d+))?", &[]),
                pat(r"got bad completion with status: (?P<status>0x[0-9a-fA-F]+|\d+)", &[]),
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
            ],
            unless: &[
                // Transport retry exceeded is `verbs-retry-exceeded`'s; RNR retry exceeded is a
                // completion error like the others.
                r"(?i)transport retry count(?:er)? exceeded",
                r"wc->status == IBV_WC_SUCCESS.*? error: 12\b",
                r"IBV_WC_SUCCESS\. 12 vs 0\.",
            ],
        },
        Builtin {
            name: "mpi-openib-unreachable",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's openib BTL could not connect two processes over verbs",
            example: "At least one pair of MPI processes are unable to reach each other for",
            patterns: &[
                pat(r"At least one pair of MPI processes are unable to reach each other", &[]),
                pat(r"error exit from mca_btl_openib_proc_create", &[]),
                pat(r"udcm_process_messages\] could not find associated endpoint", &[]),
            ],
            unless: &[],
        },
    ],
};
