//! The `ucx` pack.

use super::{pat, Builtin, Table, PRE, RETRY_PRE};

/// UCX (`uct/ib`, `ucp`): completion errors and endpoint failures as UCX logs them.
pub(super) static UCX: Table = Table {
    name: "ucx",
    summary: "UCX completion errors (ib_mlx5_log, rc/dc verbs) and endpoint timeouts",
    rows: &[
        Builtin {
            name: "ucx-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "UCX: transport retry count exceeded (syndrome 0x15, status 12): the peer stopped ACKing ~30 s earlier",
            example: "[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)",
            patterns: &[
                pat(r"Transport retry count exceeded on (?P<hca>[\w.-]+):(?P<port>\d+)", &[]),
                pat(r"Error on QP (?P<qp>0x[0-9a-fA-F]+) wqe\[\d+\]: Transport retry count exceeded", &[]),
                pat(r"(?i)completion with error on qp (?P<qp>0x[0-9a-f]+): transport retry counter exceeded", &[]),
            ],
            unless: &[],
        },
        Builtin {
            name: "ucx-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "UCX: a work completion failed (protection, remote access, QP operation…) or an endpoint timed out",
            example: "[a670n1:162239:0:162239] ib_mlx5_log.c:177  Local protection on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/2)",
            patterns: &[
                pat(r"\b(?P<error>[A-Z][A-Za-z ]*?) on (?P<hca>[\w.-]+):(?P<port>\d+)/\w+ \(synd 0x(?P<syndrome>[0-9a-fA-F]+)", &[]),
                pat(r"Error on QP (?P<qp>0x[0-9a-fA-F]+) wqe\[\d+\]: (?P<error>[^(]+?) \(synd 0x(?P<syndrome>[0-9a-fA-F]+)", &[]),
                pat(r"(?i)send completion with error(?: on qp (?P<qp>0x[0-9a-f]+))?: (?P<error>[a-z]+(?: [a-z]+)*)", &[]),
                pat(r"error '(?P<error>[^']+)' on (?P<transport>\w+)/(?P<hca>[\w.-]+):(?P<port>\d+) will not be handled", &[]),
                pat(r"UCX\s+ERROR .*?Endpoint timeout", &[]),
            ],
            unless: &[r"(?i)retry count(?:er)? exceeded"],
        },
    ],
};
