//! The `perftest` pack.

use super::{pat, Builtin, Table, PRE, RETRY_PRE};

/// perftest (`ib_{send,write,read}_{bw,lat}`) failures.
pub(super) static PERFTEST: Table = Table {
    name: "perftest",
    summary: "perftest (ib_write_bw, ib_read_lat, …) completion, setup and connection errors",
    rows: &[
        Builtin {
            name: "perftest-completion-error",
            class: "perftest_error",
            // Usually status 12 (retry exceeded), and the status is only on the next line.
            pre_s: RETRY_PRE,
            description: "perftest got a work completion with an error (Failed status N), so the run stopped",
            example: " Completion with error at client Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0",
            patterns: &[
                pat(r"Completion with error at (?P<side>client|server)(?:.*?Failed status (?P<status>\d+): wr_id \d+ syndrom 0x(?P<syndrome>[0-9a-fA-F]+))?", &[]),
                pat(r"Failed status (?P<status>\d+): wr_id \d+ syndrom 0x(?P<syndrome>[0-9a-fA-F]+)", &[]),
                pat(r"\bscnt=(?P<scnt>\d+), ccnt=(?P<ccnt>\d+)", &[]),
                pat(r"Failed to complete (?P<phase>run_iter_\w+) function successfully", &[]),
            ],
            unless: &[],
        },
        Builtin {
            name: "perftest-setup-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest could not open the device or create/modify its QP",
            example: "Failed to modify QP to RTS",
            patterns: &[
                pat(r"Failed to modify QP (?:\d+ )?to (?P<state>\w+)", &[]),
                pat(r"(?:Unable|Failed) to create QP", &[]),
                pat(r"Couldn't create IB resources", &[]),
                pat(r"Couldn't set the link layer", &[]),
                pat(r"Couldn't get context for the device", &[]),
                pat(r"Unable to Connect the HCA's through the link", &[]),
            ],
            unless: &[],
        },
        Builtin {
            name: "perftest-connect-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest client and server could not connect or exchange keys (TCP or RDMA CM)",
            example: "Event: RDMA_CM_EVENT_REJECTED; error: -111.",
            patterns: &[
                pat(r"Event: (?P<event>RDMA_CM_EVENT_\w+); error: (?P<error>-?\d+)", &[]),
                pat(r"Couldn't connect to (?P<peer>[\w.:-]+?):(?P<port>\d+)", &[]),
                pat(r"RDMA CM event error", &[]),
                pat(r"Failed to (?:handle|connect) RDMA CM event", &[]),
                pat(r"\b(?:pp|ethernet)_read_keys: ", &[]),
                pat(r"Couldn't read remote address", &[]),
                pat(r"Unable to read to socket/rd", &[]),
                pat(r"Failed to exchange data between server and clients?", &[]),
                pat(r"Failed to close connection between server and client", &[]),
                pat(r"Unable to (?:open file descriptor for socket connection|init the socket connection)", &[]),
            ],
            unless: &[],
        },
    ],
};
