//! The `mpi` pack: Open MPI over verbs and UCX, and MPICH's ch4 netmods (OFI, UCX).
//!
//! Written from the `ompi/` rows of `triggers/formats/apps.tsv`: the openib BTL (v1.x–v4.1;
//! removed in v5.0) and its connection managers (udcm, rdmacm), bml/r2, the help texts
//! `opal_show_help` prints for them (one row per distinctive printed line, since every line
//! of a help message is a log line of its own) and orte's aggregation of repeated help
//! messages, and the UCX PML/OSC `Error:` lines. How the rows are told apart:
//! - **Retry exceeded apart.** `status number 12` (`RETRY EXCEEDED ERROR`) and the
//!   `pp retry exceeded` help text keep the longer window; the receiver-not-ready (RNR)
//!   variants are completion errors like the others.
//! - **Help texts by their first distinctive lines.** The frame (`-----`), `Local host:`,
//!   `Peer host:` and `You may need to consult with your system administrator` are shared
//!   by warnings and errors alike (`ok` rows), so only lines that name the failure fire.
//! - **`Warning:` is not `Error:`.** The UCX PML prints configuration warnings (old UCX,
//!   no `MPI_THREAD_MULTIPLE`, `VM_UNMAP`) with the same header.
//!
//! MPICH is written from the `mpich/` rows of `triggers/formats/more_stacks.tsv`: the messages
//! its ch4 netmods put at the end of the error stack it prints when a call fails (`Fatal error
//! in PMPI_Recv: Other MPI error, error stack:`, one line per frame). Only the frame that names
//! the libfabric or UCX cause fires: the `Fatal error in …` header is printed for every MPI
//! error class, and the intermediate frames (`MPIR_Wait_state(698)....:`) carry no message.
//! - **OFI.** `OFI poll failed (…)` is a failed completion (`fi_cq_readerr`); `OFI tagged send
//!   failed (file:line:func:error)` (v3.3–v4.2) and `OFI call tsenddata failed (default nic=…:
//!   error)` (v4.3 on) a failed libfabric call.
//! - **UCX.** `ucx function returned with failed status(file line func status)` and
//!   `returned failed request in UCX netmod(…)`; UCX's own lines are the ucx pack's.
//! - **ch3.** nemesis over TCP and the sock channel losing a connection (`Communication
//!   error with rank N`, `connection closed by peer (set=…,sock=…)`), and the close handshake
//!   failing. Texts that name no call (`No valid libfabric provider`, `socket closed`) fire
//!   only as a frame: `FUNC(LINE)`, dots padding it to the stack's longest frame (0 or more),
//!   then `: `.

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// Open MPI: the openib BTL and its connection managers, bml/r2, the UCX PML/OSC; MPICH's
/// ch4 OFI and UCX netmods.
pub(super) static MPI: Table = Table {
    name: "mpi",
    summary: "Open MPI: openib BTL completion errors (retry exceeded, RNR, flushes), IB async events, connection setup (udcm, rdmacm, bml/r2 unreachable peers), UCX PML/OSC errors; MPICH ch4 OFI/UCX netmod failures (OFI poll and call failures, UCX status and request failures) and ch3 connection failures (nemesis TCP, sock); MVAPICH2/MVAPICH completion errors, fatal events and setup failures; ParaStation MPI's pscom transport failures and deadlock reports",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "mpi-openib-retry-exceeded",
            class: "rdma_verbs_error",
            pre_s: RETRY_PRE,
            description: "Open MPI's openib BTL got a work completion with status 12 (RETRY EXCEEDED ERROR): the peer stopped ACKing ~30 s earlier",
            example: "[[12065,1],23][btl_openib_component.c:2948:handle_wc] from compute-0-0.local to: compute-0-7 error polling LP CQ with status RETRY EXCEEDED ERROR status number 12 for wr_id 396116864 opcode 0  vendor error 129 qp_idx 1",
            patterns: &[
                pat(
                    r"error polling [LH]P CQ with status (?P<error>.*?) status number (?P<status>12) for wr_id \S+ opcode -?\d+(?: +vendor error (?P<vendor_err>-?\d+))?",
                    &[
                        "ompi/openib/error-polling-lp-cq-status",
                        "ompi/openib/error-polling-hp-cq-status",
                        "ompi/openib/error-polling-cq-retry-exceeded",
                        "ompi/openib/error-polling-cq-status-nopeer",
                    ],
                ),
                // help-mpi-btl-openib.txt [pp retry exceeded].
                pat(
                    r#"The InfiniBand retry count between two MPI processes has been|exceeded\. +"Retry count" is defined in the InfiniBand spec|InfiniBand fabric itself\. +You should note the hosts on which this"#,
                    &["ompi/openib/help-pp-retry-exceeded-*"],
                ),
                pat(
                    r"more process(?:es have| has) sent help message help-mpi-btl-openib\.txt / pp retry exceeded",
                    &["ompi/orte/help-aggregate-pp-retry-exceeded*"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpi-openib-completion-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's openib BTL got a failed work completion (flush, RNR retry exceeded, protection…), could not poll its CQ or post a work request, or lost track of a queue",
            example: "[[56157,8],1][btl_openib_component.c:2951:handle_wc] from svbu-mpi042 to: svbu-mpi042 error polling HP CQ with status WORK REQUEST FLUSHED ERROR status number 5 for wr_id 12750656 opcode 0  vendor error 249 qp_idx 0",
            patterns: &[
                pat(
                    r"error polling [LH]P CQ with status (?P<error>.*?) status number (?P<status>\d+) for wr_id \S+ opcode -?\d+(?: +vendor error (?P<vendor_err>-?\d+))?",
                    &[
                        "ompi/openib/error-polling-lp-cq-status",
                        "ompi/openib/error-polling-hp-cq-status",
                        "ompi/openib/error-polling-cq-status-nopeer",
                        "ompi/openib/error-polling-cq-flush",
                    ],
                ),
                pat(
                    r"\] (?:error polling .+? with -?\d+ errno says|error polling CQ returned -?\d+|Unhandled work completion opcode is|Failed to get CQ event with error|Couldn't request CQ notification with error|Eager RDMA wrong SEQ: received)",
                    &[
                        "ompi/openib/error-polling-cq-ne",
                        "ompi/openib/sl-poll-cq",
                        "ompi/openib/unhandled-wc-opcode",
                        "ompi/openib/cq-event-failed",
                        "ompi/openib/cq-notify-failed",
                        "ompi/openib/eager-rdma-wrong-seq",
                    ],
                ),
                pat(
                    r"\] (?:error posting (?:send request (?:error -?\d+: |errno -?\d+ says)|receive descriptors to shared receive queue)|error -?\d+ posting receive on qp -?\d+|Error sending RDMA buffer: |Failed to ibv_query_qp, qp num: (?P<qp>\d+))",
                    &[
                        "ompi/openib/post-send-error",
                        "ompi/openib/post-send-errno",
                        "ompi/openib/srq-post-recv-failed",
                        "ompi/openib/post-recv-qp",
                        "ompi/openib/send-rdma-buffer",
                        "ompi/openib/query-qp-failed",
                    ],
                ),
                pat(
                    r"Open MPI tried to access a shared receive queue \(SRQ\) on the device",
                    &["ompi/openib/srq-not-found"],
                ),
                // help-mpi-btl-openib.txt [pp rnr retry exceeded], [srq rnr retry exceeded].
                pat(
                    r#"The OpenFabrics "receiver not ready" retry count on a (?:per-peer|shared receive)|connection between two MPI processes has been exceeded\. +In general,|queue or XRC receive queue has been exceeded\. +This error can occur if"#,
                    &["ompi/openib/help-pp-rnr-retry-exceeded-*", "ompi/openib/help-srq-rnr-retry-exceeded-*"],
                ),
                pat(
                    r"more process(?:es have| has) sent help message help-mpi-btl-openib\.txt / (?:pp|srq) rnr retry exceeded",
                    &[
                        "ompi/orte/help-aggregate-pp-rnr-retry-exceeded",
                        "ompi/orte/help-aggregate-srq-rnr-retry-exceeded",
                    ],
                ),
            ],
            unless: &[r"error polling [LH]P CQ with status .*? status number 12 for wr_id"],
        },
        Builtin {
            name: "mpi-openib-fatal-event",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's openib BTL got an IB async error event (port error, QP/CQ/SRQ fatal, device removal) or could not read one",
            example: "The OpenFabrics stack has reported a network error event.  Open MPI",
            patterns: &[
                // help-mpi-btl-openib.txt [of error event], [of unknown event].
                pat(
                    r"Error number: +-?\d+ \((?P<event>IBV_EVENT_\w+)",
                    &["ompi/openib/help-of-error-event-errno", "ompi/openib/help-of-error-event-port-err"],
                ),
                pat(
                    r"The OpenFabrics stack has reported (?:a|an unknown) network error event|This error may indicate connectivity problems within the fabric;",
                    &[
                        "ompi/openib/help-of-error-event-1",
                        "ompi/openib/help-of-unknown-event-1",
                        "ompi/openib/help-of-error-event-connectivity",
                    ],
                ),
                pat(
                    r"more process(?:es have| has) sent help message help-mpi-btl-openib\.txt / of (?:error|unknown) event",
                    &["ompi/orte/help-aggregate-of-error-event"],
                ),
                pat(
                    r"The RDMA CM returned that the device Open MPI was trying to use has|\] Failed to get async event|Failed to request limit event for srq on ",
                    &[
                        "ompi/openib/help-rdmacm-device-removal-1",
                        "ompi/openib/async-event-failed",
                        "ompi/openib/srq-limit-event-failed",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpi-openib-unreachable",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI could not connect two processes over verbs: bml/r2 found no BTL to the peer, or the openib BTL could not open or query a device, or its connection setup (udcm, rdmacm, QP creation and state changes, SA path query) failed",
            example: "At least one pair of MPI processes are unable to reach each other for",
            patterns: &[
                // help-mca-bml-r2.txt [unreachable proc].
                pat(
                    r"At least one pair of MPI processes are unable to reach each other|MPI communications\. +This means that no Open MPI device has indicated|each other\. +This error can sometimes be the result of forgetting to",
                    &["ompi/bml-r2/help-unreachable-proc-*"],
                ),
                pat(
                    r"more process(?:es have| has) sent help message (?:help-mca-bml-r2\.txt / unreachable proc|help-mpi-btl-openib-cpc-rdmacm\.txt / rdma cm event error)",
                    &[
                        "ompi/orte/help-aggregate-unreachable-proc",
                        "ompi/orte/help-aggregate-rdma-cm-event-error",
                    ],
                ),
                // init_one_device: a device that cannot be opened or queried.
                pat(
                    r"\] error (?:obtaining device (?:context|attributes) for|allocating protection domain for|creating channel for|getting port attributes for device|getting pkey for index -?\d+, device) \S+ .*?errno says",
                    &[
                        "ompi/openib/device-context-failed",
                        "ompi/openib/device-attributes-failed",
                        "ompi/openib/alloc-pd-failed",
                        "ompi/openib/comp-channel-failed",
                        "ompi/openib/query-port-failed",
                        "ompi/openib/query-pkey-failed",
                    ],
                ),
                pat(
                    r"error exit from mca_btl_openib_proc_create",
                    &["ompi/openib/proc-create-error-exit*"],
                ),
                // udcm and rdmacm looking up the peer of a connection request.
                pat(
                    r"\] (?:could not (?:find (?:associated endpoint\.|endpoint with port: (?P<port>\d+)|endpoint for peer )|get proc associated with remote peer|initialize cpc data for endpoint)|Cannot find endpoint\.|Invalid endpoint status -?\d+|Failed to connect pending endpoint)",
                    &[
                        "ompi/openib/udcm-no-*",
                        "ompi/openib/udcm-init-cpc-data",
                        "ompi/openib/udcm-invalid-endpoint-status",
                        "ompi/openib/rdmacm-no-*",
                        "ompi/openib/rdmacm-cannot-find-endpoint",
                        "ompi/openib/connect-pending-failed",
                    ],
                ),
                // udcm: its UD messages and the QP state changes it drives.
                pat(
                    r"\] (?:send failed with verbs status (?P<status>\d+)|recv work request for buffer -?\d+ failed, code = (?P<retcode>-?\d+)|(?:Error sending|error sending xrc) connect request, error code -?\d+|error modify?ing (?:qp|QP)(?: 0x[0-9a-fA-F]+)? to (?:INIT|RTR|RTS) errno says|Error modifying (?:XRC recv )?QP\[[0-9a-fA-F]+\] to IBV_QPS_(?:INIT|RTR|RTS),? errno says)|too many retries sending message to 0x[0-9a-fA-F]+:0x[0-9a-fA-F]+, giving up",
                    &[
                        "ompi/openib/udcm-send-failed-status",
                        "ompi/openib/udcm-recv-wr-failed",
                        "ompi/openib/udcm-connect-request-error",
                        "ompi/openib/udcm-xrc-connect-request-error",
                        "ompi/openib/udcm-qp*",
                        "ompi/openib/udcm-xrc-recv-qp-rtr",
                        "ompi/openib/udcm-too-many-retries",
                    ],
                ),
                pat(
                    r"\] (?:Unknown RDMA CM error event_handler: |rdma_connect Failed with -?\d+|Failed to resolve the (?:remote address|route) with -?\d+|rdma_accept error -?\d+|rdma_reject failed -?\d+|rdma_get_cm_event error -?\d+|rdmacm_setup_qp error -?\d+|Failed to create qp with -?\d+|rdmacm_client_connect_one error \(real QP|No response from SA after -?\d+ retries)",
                    &[
                        "ompi/openib/rdmacm-unknown-event",
                        "ompi/openib/rdmacm-connect-failed",
                        "ompi/openib/rdmacm-resolve-*",
                        "ompi/openib/rdmacm-accept",
                        "ompi/openib/rdmacm-reject",
                        "ompi/openib/rdmacm-get-event",
                        "ompi/openib/rdmacm-setup-qp",
                        "ompi/openib/rdmacm-create-qp",
                        "ompi/openib/rdmacm-client-connect-one",
                        "ompi/openib/sl-no-sa-response",
                    ],
                ),
                // help-mpi-btl-openib-cpc-rdmacm.txt, help-mpi-btl-openib.txt.
                pat(
                    r"The RDMA CM returned an event error while attempting to make a|The OpenFabrics device in an MPI process received an RDMA CM connect|A process failed to create a queue pair\. This usually means either|The Open MPI receive queue configuration for the OpenFabrics devices|specific nodes were unable to communicate with each other\. +This",
                    &[
                        "ompi/openib/help-rdmacm-event-error-1",
                        "ompi/openib/help-rdmacm-no-matching-endpoint-1",
                        "ompi/openib/help-create-qp-failed-1",
                        "ompi/openib/help-unsupported-queues-config-*",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpi-ucx-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's UCX PML/OSC could not create, resolve or disconnect an endpoint to a rank, or a UCX send/receive failed; the PML or SPML asked for could not be selected; OpenSHMEM's UCX SPML could not connect its processes, create a context or fence",
            example: "[n097:127549] pml_ucx.c:421  Error: ucp_ep_create(proc=108) failed: Destination is unreachable",
            patterns: &[
                pat(
                    r"Error: (?:ucp_ep_create\(proc=|Failed to (?:resolve UCX endpoint|get ep) for rank |Failed to connect to proc: )(?P<rank>-?\d+)(?:.*?failed: (?P<error>[^\r\n]+))?",
                    &[
                        "ompi/pml-ucx/ep-create-failed*",
                        "ompi/pml-ucx/resolve-endpoint-failed*",
                        "ompi/pml-ucx/get-ep-failed-v3",
                        "ompi/pml-ucx/connect-to-proc-failed-v3",
                        "ompi/spml-ucx/ep-create-proc-failed",
                        "ompi/spml-ucx/ep-create-proc-failed-v4.0.0",
                    ],
                ),
                pat(
                    r"Error: (?:ucx (?:send|recv|bsend|msg recv) failed|mca_pml_ucx_send_nbr failed|ucp_disconnect_nb\(-?\d+\) failed|disconnect request failed|Failed to receive UCX worker address): (?P<error>[^\r\n]+)|Error: Open MPI couldn't distribute EP connection details|\bpml_ucx\.c:\d+ +Error: Failed to create UCP worker\b",
                    &[
                        "ompi/pml-ucx/send-failed*",
                        "ompi/pml-ucx/recv-failed*",
                        "ompi/pml-ucx/bsend-failed*",
                        "ompi/pml-ucx/msg-recv-failed*",
                        "ompi/pml-ucx/persistent-send-failed*",
                        "ompi/pml-ucx/send-nbr-failed",
                        "ompi/common-ucx/disconnect-failed*",
                        "ompi/pml-ucx/disconnect-*",
                        "ompi/pml-ucx/recv-worker-address-failed*",
                        "ompi/pml-ucx/distribute-ep-details*",
                        "ompi/pml-ucx/create-worker-failed",
                    ],
                ),
                // The PML or SPML asked for (`--mca pml ucx`) could not start: the process
                // exits; OpenSHMEM's UCX SPML could not connect its processes, create a
                // context, or fence (in the forms of 1.10–3.1 and 4.0+).
                pat(
                    r"\bS?PML .+? cannot be selected\b|\bError: (?:add procs FAILED rc=-?\d+|fence failed: )|\bError \S+:-?\d+ - \w+\(\) (?:add procs FAILED rc=|ucp_ep_create(?:\(proc=-?\d+/-?\d+\))? failed: |ctx create FAILED rc=)",
                    &["ompi/pml-base/*", "ompi/spml-base/*", "ompi/spml-ucx/*"],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpich-ofi-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "MPICH's ch4 OFI netmod failed on libfabric: a failed completion (`OFI poll failed`) or a failed libfabric call (`OFI tagged send failed`, `OFI call tsenddata failed`), the last frame of its error stack",
            example: "MPIDI_OFI_handle_cq_error(1075): OFI poll failed (ofi_events.c:1077:MPIDI_OFI_handle_cq_error:Input/output error - PTLTE_NOT_FOUND)",
            patterns: &[
                pat(
                    r"OFI poll failed \((?:default nic=[^:()]*|[\w.]+:\d+:\w+): ?(?P<error>[^)\r\n]+)",
                    &["mpich/ofi/poll-failed*", "mpich/ch3_ofi/poll-failed"],
                ),
                // Every libfabric call the netmod makes, by the text errnames.txt gives it
                // (`OFI endpoint open failed`, `OFI OFI Counter wait failed`; v3.3–v4.2.2; the
                // ch3 nemesis netmod's to v4.0), by its name (`OFI call ep failed`, v4.2.3), or
                // with the NIC instead of the place (v4.3 on).
                pat(
                    r"OFI (?:(?:call (?P<op>\w+)|OFI Counter wait) failed \(default nic=[^:()]*: ?|[A-Za-z][\w ]*?(?:\(\))? failed \([\w.]+:\d+:\w+:)(?P<error>[^)\r\n]+)",
                    &[
                        "mpich/ofi/call-failed-*",
                        "mpich/ofi/counter-wait-failed*",
                        "mpich/ch3_ofi/getinfo-failed",
                        "mpich/ch3_ofi/fabric-open-failed",
                        "mpich/ch3_ofi/domain-open-failed",
                        "mpich/ch3_ofi/ep-enable-failed",
                        "mpich/ch3_ofi/tsend-failed",
                        "mpich/ch3_ofi/trecv-failed",
                        "mpich/ch3_ofi/cancel-failed",
                    ],
                ),
                // `**ofid_getinfo` and friends: the message text, or the raw errname with its
                // arguments when MPICH was built without the message table (or the call has
                // no text in it). The texts that name no call or place, only as a frame of
                // the error stack (`find_provider(2683)....: `, the dots 0 or more).
                pat(
                    r"\bOFI (?P<op>\w+)\(\) failure\b|\*\*ofid?_\w+ [\w.]+ \d+ \w+ (?P<error>[^\r\n]+)|\w\(-?\d+\)\.*: (?:OFI (?:call \w+|[A-Za-z][\w ]*?(?:\(\))?) failed\s*$|OFI get address vector map failed|OFI Provider name does not match configure-time provider name|No valid libfabric provider|OFI has a different number of nics available|Operation could not be issued \(EAGAIN\))",
                    &[
                        "mpich/ofi/getinfo-*",
                        "mpich/ofi/addrinfo-failure",
                        "mpich/ofi/call-failed-unnamed",
                        "mpich/ofi/avmap-generic",
                        "mpich/ofi/provider-mismatch",
                        "mpich/ofi/no-valid-provider",
                        "mpich/ofi/num-nics-mismatch",
                        "mpich/ofi/eagain-retries-exhausted",
                        "mpich/ofi/frame-*",
                    ],
                ),
                // A frame's place and error on a line of their own (a wrapped stack).
                pat(
                    r"(?:^|[\s:>\]])\([\w.]+\.[ch]:\d+:MPIDI_OFI_\w+:(?P<error>[^)\r\n]+)\)\s*$",
                    &["mpich/ofi/frame-place-on-its-own-line"],
                ),
                // Cray MPICH on CXI: the completion queue is exhausted and progress stalls.
                pat(r"MPICH WARNING: OFI is failing to make progress", &["mpich/ofi/failing-to-make-progress"]),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpi-ofi-mtl-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's OFI MTL got an error completion from libfabric (`Error returned from fi_cq_readerr`) or gave up and aborted the job",
            example: ">  mtl_ofi.h:101: Error returned from fi_cq_readerr: Resource temporarily unavailable(-11).",
            patterns: &[pat(
                r"mtl_ofi\w*\.[ch]:\d+: Error returned from fi_cq_readerr: (?P<error>[^(\r\n]+)\((?P<retcode>-?\d+)\)|The Open MPI OFI MTL is aborting the MPI job",
                &["ompi/mtl-ofi/*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "mpi-fabric-unavailable",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "The MPI's fabric layer could not open the NIC: PSM2/PSM3 could not open an hfi or verbs unit (or, in Open MPI's words, an endpoint), or Intel MPI found its fabric (dapl, ofa, tmi, ofi) unavailable with no fallback allowed",
            example: "runnervm76f27:rank0: PSM3 can't open nic unit: 0 (err=23)",
            patterns: &[
                pat(
                    r"PSM[23]? can't open (?:nic|hfi) unit: -?\d+ \(err=(?P<error>-?\d+)\)|\bUnable to initialize verbs NIC (?P<hca>\S+) \(unit -?\d+:-?\d+\)|\bPSM2? was unable to open an endpoint\b",
                    &[
                        "psm/ep/*",
                        "ompi/mtl-psm/help-unable-to-open-endpoint",
                        "ompi/mtl-psm2/help-unable-to-open-endpoint",
                    ],
                ),
                pat(
                    r"MPI startup\(\): (?P<op>\w+) fabric is not available and fallback fabric is not enabled",
                    &["intel-mpi/startup/fabric-not-available"],
                ),
                // Open MPI's openib BTL asserting on its own QP bookkeeping.
                pat(r"\bbtl_openib\w*\.c:\d+: \w+: Assertion `[^`]*' failed", &["ompi/openib/assertion-failed"]),
            ],
            unless: &[],
        },
        Builtin {
            name: "mpi-tcp-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "Open MPI's TCP BTL lost or could not make a connection to a peer rank: a readv/writev failed or errored, connect() failed, the peer hung up or the handshake failed",
            example: "[svbu-mpi044][[55297,1],7][btl_tcp_frag.c:216:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: Connection timed out (110)",
            patterns: &[
                pat(
                    r"\bmca_btl_tcp_frag_(?:recv: readv|send: writev) (?:failed: (?P<error>[^(\r\n]+)|error \()|:mca_btl_tcp_endpoint_complete_connect\] connect\(\) to (?P<peer>\S+) failed: ",
                    &["ompi/btl-tcp/frag-*", "ompi/btl-tcp/connect-failed-v3.0"],
                ),
                pat(
                    r"WARNING: Open MPI failed to (?:TCP connect to a peer MPI process|handshake with a connecting peer MPI)|An MPI communication peer process has unexpectedly disconnected",
                    &["ompi/btl-tcp/help-*"],
                ),
            ],
            unless: &[],
        },
        // Open MPI's fatal error handler prints a banner (`*** An error occurred in MPI_X`, the
        // process, the communicator, the class, `*** MPI_ERRORS_ARE_FATAL …`); the class line
        // says what failed. Only the classes that name an internal or unknown error or a
        // failed peer fire: an application's own bug (MPI_ERR_TRUNCATE, MPI_ERR_RANK…) prints
        // the same banner.
        Builtin {
            name: "ompi-fatal-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "Open MPI's fatal error handler aborted the job on an internal or unknown error or a failed or aborted peer (MPI_ERR_INTERN, MPI_ERR_OTHER, MPI_ERR_PROC_FAILED, MPI_ERR_PROC_ABORTED), or a process aborted before MPI_Init completed",
            example: "[calypso-rhel73GA:12532] *** MPI_ERR_INTERN: internal error",
            patterns: &[
                pat(
                    r"\*\*\* (?P<error>MPI_ERR_(?:INTERN|OTHER|PROC_FAILED|PROC_ABORTED)): ",
                    &["ompi/errhandler/*"],
                ),
                pat(
                    r"\bLocal abort before MPI_INIT completed (?:completed )?successfully",
                    &["ompi/mpi_abort/*"],
                ),
            ],
            unless: &[],
        },
        // PSM2 (Omni-Path) and PSM3 (Intel's verbs-based PSM) report their own failures to
        // stderr with the host and process glued in front (`host.pidError …`, `host:rankN: …`):
        // no word boundary before the text.
        Builtin {
            name: "psm-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "PSM2 or PSM3 (under Open MPI, MPICH, Intel MPI or libfabric) failed: a completion error or a failed CQ poll on the NIC, a fatal async event, a connect it could not issue, SDMA completion errors, messages from an unknown process, duplicate LIDs, an assertion in its own code, or a shared-memory segment it could not create or open",
            example: "Error opening remote shared memory object in shm_open: No such file or directory (err=9)",
            patterns: &[
                pat(
                    r"(?:opening remote|creating) shared memory object (?:\S+ )?in shm_open: ",
                    &["psm2/am-shm/*", "psm3/am-shm/*"],
                ),
                pat(
                    r"SDMA completion error: -?\d+ \(fd=|Assertion failure at (?:\S*/)?(?:psm|ips|ptl|am|hfi)\w*\.c:-?\d+: |Received [^\r\n]*?message\(s\) [^\r\n]*?from an unknown process|Network connectivity problem: Locally detected duplicate LIDs ",
                    &[
                        "psm2/ips/*",
                        "psm2/assert/*",
                        "psm3/verbs/received-from-unknown-process",
                    ],
                ),
                pat(
                    r":rank\d+\b[^\r\n]*?: (?:failed (?:recv '[^'\r\n]*' \(-?\d+\) on |ibv_poll_cq '|[^\r\n]*? on \S+ port \d+ status: ')|Fatal [^\r\n]*? Async Event on |Unable to issue connect from )",
                    &[
                        "psm3/verbs/send-completion-error",
                        "psm3/verbs/recv-completion-error",
                        "psm3/verbs/ibv-poll-cq-failed",
                        "psm3/verbs/fatal-async-event",
                        "psm3/ips/unable-to-issue-connect",
                    ],
                ),
            ],
            unless: &[],
        },
        // MPICH's (and Intel MPI's, Cray MPICH's) fatal-error header: the error stack under
        // it names the device or netmod frame that failed, which the triggers above fire on
        // when they know it; the header fires either way.
        Builtin {
            name: "mpich-fatal-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "An MPICH-based MPI (MPICH, Intel MPI, Cray MPICH) aborted on an internal error (MPI_ERR_OTHER, or a class it cannot name): the header of the error stack whose frames say which device, netmod or fabric call failed",
            example: "Abort(2138767) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init: Unknown error class, error stack:",
            patterns: &[pat(
                r"\bFatal error in (?P<op>\w+): (?:Other MPI error|Unknown error class), error stack:",
                &["mpich/errhan/*"],
            )],
            unless: &[],
        },
        // ch3 (nemesis over TCP, the sock channel): a connection to another rank lost or
        // never made, as a frame of the error stack; the sock channel's own `[ch3:sock]`
        // lines stand alone.
        Builtin {
            name: "mpich-connection-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "MPICH's ch3 lost a connection to another rank or could not make one (nemesis TCP's `Communication error with rank N`, a socket read or write that failed, a peer that closed its socket, the sock channel unable to connect), or could not close its connections cleanly, a frame of its error stack",
            example: "MPID_nem_tcp_connpoll(1845): Communication error with rank 1: Connection refused",
            patterns: &[pat(
                r#"\w\(-?\d+\)\.*: (?:Communication error (?:with rank (?P<peer>\d+)|during connect sequence)|(?:read from|write to|writev to) socket failed - |socket closed\s*$|Unable to establish connection to rank \d+|Connection is in error state|Error while cleaning up failed connection|Failure during connection protocol|(?:accept of socket fd|poll of socket fds) failed - |The network interface, "[^"]*", specified in MPIR_CVAR_CH3_NETWORK_IFACE was not found|connection (?:closed by peer|failure) \(set=-?\d+,sock=|an error occurred (?:while handling an event returned by MPIDI_CH3I_Sock_Wait|when the device attempted to acknowledge the closing of a connection|while the device was waiting for all open connections to close))|\[ch3:sock\] (?:failed to connect to process|rank \d+ unable to connect to rank \d+)"#,
                &[
                    "mpich/ch3_tcp/*",
                    "mpich/ch3_sock/*",
                    "mpich/ch3/*",
                    "psmpi/psp/irecv-done-read-failed",
                    "psmpi/psp/isend-done-write-failed",
                ],
            )],
            unless: &[],
        },
        // ParaStation MPI (psmpi, an MPICH derivative) and its communication library pscom:
        // `<PSP:rNNNNNNN:plugin:text>` (`<PSP:host:pid:…>` before the socket is named; the
        // launcher's `359: ` in front). A failed completion whose status is transport retry
        // exceeded is `verbs-retry-exceeded`'s; psmpi's `read from socket failed` frames are
        // `mpich-connection-error`'s.
        Builtin {
            name: "pscom-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "ParaStation MPI's pscom failed on its transport: InfiniBand returned a completion it cannot place (wrong opcode, a failed receive or send), a QP or memory registration failed, the openib, UCX, PSM2, EXTOLL or Portals plugin failed, a connection to another rank broke, or psmpi could not connect two ranks",
            example: "359: <PSP:r0000359:ib:ibv_poll_cq(): Infiniband returned the wrong Opcode 5408>",
            patterns: &[
                pat(
                    r"\bibv_poll_cq\(\) ?: (?:Infiniband returned the wrong Opcode -?\d+|IBV_WC_(?:RECV|SEND) with status (?P<status>-?\d+)|Unknown opcode: )",
                    &["pscom/openib/wrong-opcode*", "pscom/ofed/poll-cq-*"],
                ),
                pat(
                    r"<PSP:[^>]*?:ib:Failed (?P<op>send|receive|RDMA write|RDMA READ) request \(status (?P<status>-?\d+) : (?P<error>[^)]*)\)\. Connection broken!",
                    &["pscom/openib/failed-*"],
                ),
                pat(
                    r#"<PSP:[^>]*?:(?:ib:(?:psoib_con_init failed : (?P<op>ibv_\w+)\(\) failed|OPENIB: memlock(?:\(\d+\))? failed|OPENIB disabled : (?:Port not in state ACTIVE|Port has no lid|ibv_open_device\(\) failed|IB device "[^"]*" : No such device)|ibv_post_send\(\) failed|psofed_con_connect\(\) : ibv_create_ah\(\) failed|psofed_con_init\(\) : )|ucp:psucp_(?:con_connect|sendv|recv|con_init)\(\) : |psm:(?:_?pspsm_(?:open_endpoint|init_mq|init|con_connect|recvlook|send_buf): |fatal error: )|extoll:(?:psex_con_connect\(\) : |EXTOLL disabled : |EXTOLL: rma2_register)|portals:(?:Ptl\w+\(\) failed: |Rendezvous ack failed))"#,
                    &[
                        "pscom/openib/con-init-*",
                        "pscom/openib/memlock-*",
                        "pscom/openib/disabled-*",
                        "pscom/ofed/post-send-failed",
                        "pscom/ofed/create-ah-failed",
                        "pscom/ofed/con-init-failed",
                        "pscom/ucp/*",
                        "pscom/psm/*",
                        "pscom/extoll/*",
                        "pscom/portals/*",
                    ],
                ),
                // A connection that broke (`read : Broken pipe`); the end of file of one that
                // was closed is normal, but not while it was being set up (`type:none`).
                pat(
                    r"<PSP:[^>]*?:(?:connection to .*? \(type:[^,)]*,state:[^)]*\) : (?:(?:read|write|rw|connect) : (?:[^E>]|E[^n]|En[^d])|read : End of file)|precon\([^)]*\): write\(-?\d+, [^)]*\) : (?:[^B>]|B[^r]))",
                    &["pscom/core/connection-*", "pscom/precon/write-failed"],
                ),
                pat(
                    r"\bError:Connecting .+? \(rank -?\d+ to -?\d+\) failed : |\bdo_connect\(-?\d+\)\.*: Connecting failed with error code|\bpscom_listen on PSCOM_ANYPORT failed with error code",
                    &["psmpi/psp/connecting-failed-printerror", "psmpi/psp/connect-failed-errstack", "psmpi/psp/listen-anyport-failed"],
                ),
            ],
            unless: &[
                // Transport retry exceeded: `verbs-retry-exceeded`'s.
                r"(?i)transport retry count(?:er)? exceeded",
                // Not failures: no PSM2 device (the plugin stands aside), a connection closed.
                r"psm:pspsm_init: No psm2 device found",
                r"\(type:(?:[^n,)][^,)]*|n[^o,)][^,)]*|no[^n,)][^,)]*|non[^e,)][^,)]*|none[^,)]+)?,state:[^)]*\) : read : End of file",
            ],
        },
        Builtin {
            name: "pscom-deadlock",
            class: "other_hang",
            pre_s: PRE,
            description: "ParaStation MPI's pscom found a rank waiting with nothing outstanding (`Deadlock detected! Process N will wait forever`, or its repeated warning), or psmpi's finalize timed out",
            // No printed line of this wording is published: the format string instantiated
            // (tests/corpus.rs, NO_PUBLISHED_LINE).
            example: "<PSP:r0000012:Deadlock detected! Process 12 will wait forever ('wait' called without outstanding send or recv requests). Exit!>",
            patterns: &[pat(
                r"\bDeadlock detected! Process -?\d+ will wait forever|\bWarning of deadlock in Process -?\d+ for -?\d+ times!|\bWarning: PSP_FINALIZE_TIMEOUT\b",
                &["pscom/core/deadlock-*", "psmpi/psp/finalize-timeout"],
            )],
            unless: &[],
        },
        Builtin {
            name: "mpich-ucx-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "MPICH's ch4 UCX netmod got a failed UCX status or request (endpoint timeout, unreachable peer, I/O error), the last frame of its error stack",
            example: "MPIDI_UCX_init_local(227):  ucx function returned with failed status(ucx_init.c 227 MPIDI_UCX_init_local Invalid parameter)",
            patterns: &[pat(
                r"(?:ucx function returned with failed status|returned failed request in UCX netmod)\([\w.]+ -?\d+ \w+ (?P<error>[^)\r\n]+)",
                &["mpich/ucx/*"],
            )],
            unless: &[],
        },
        // MVAPICH2 / MVAPICH (OSU's MPI on InfiniBand/RoCE, the mrail gen2 channel, 1.x to
        // 3.0). Most lines carry `[host:mpi_rank_N][function] `, the abort macros' `file:line: `
        // after it; older and connection-manager lines have `[N] Abort: `, `[Rank N][file: line
        // N]`, or no prefix. A completion's status printed by name (`IBV_WC_…: This event is
        // generated …`, `wc.status=N (name)`) is `verbs-completion-error`'s or
        // `verbs-retry-exceeded`'s (`mvapich2/cq-wc/*`).
        Builtin {
            name: "mvapich-error",
            class: "rdma_verbs_error",
            pre_s: PRE,
            description: "MVAPICH2 / MVAPICH on InfiniBand or RoCE failed: a completion with an error (`Got completion with error N, vendor code=…, dest rank=…`, send/recv descriptor errors), a fatal async event on a QP, port, CQ or SRQ, UD retries exhausted, a CQ that could not be polled, a QP state change, QP or address-handle creation failed, registration of its buffers failed, no HCA or no active port",
            example: "[gcn-4-11.sdsc.edu:mpi_rank_10][MPIDI_CH3I_MRAILI_Cq_poll] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:586: [] Got completion with error 12, vendor code=0x81, dest rank=17",
            patterns: &[
                pat(
                    r"\[\] Got completion with error -?\d+, vendor code=(?:0x)?[0-9a-fA-F]+, dest rank=-?\d+",
                    &["mvapich2/cq/got-completion-with-error*"],
                ),
                pat(
                    r"\b(?:Send desc error in msg to|Recv desc error in msg from) -?\d+, wc_opcode=|\[-?\d+(?:->|<-)-?\d+\] (?:(?:send|recv) desc error, wc_opcode=|wc\.status=-?\d+, wc\.wr_id=)|\bMsg from -?\d+: wc\.status=-?\d+, wc\.wr_id=",
                    &[
                        "mvapich2/cq/send-desc-error*",
                        "mvapich2/cq/recv-desc-error*",
                        "mvapich2/cq/msg-from-wc-status",
                        "mvapich2/cq/wc-status-legacy",
                    ],
                ),
                pat(
                    r":mpi_rank_-?\d+\]\[[^\]\r\n]*\] (?:\S+:\d+: )?(?:ERROR: Unknown work completion status |Fail to poll cq|Failed to get cq event: |Couldn't request for CQ notification|Got FATAL event |Error in UD RNDV ibv_poll got completion with error code |Got error completion in RNDV UD recv error\. |Failed to modify QP\s*$|Error creating qp on hca -?\d+ using rdma_cm\.|vbuf pool allocation failed|Cannot reregister vbuf region|deregister fails|No HCAs found on the system\.|The HCA \([^)\r\n]*\) the user requested for is not available|Failed to open the HCA context|HCA not found on the system\. DPM functionality requires an active HCA|UD reliability error\. \w+ max retries\()|\[-?\d+\] Abort: Got FATAL event ",
                    &[
                        "mvapich2/cq/wc-status-explain-unknown",
                        "mvapich2/cq/fail-to-poll-cq",
                        "mvapich2/cq/failed-to-get-cq-event",
                        "mvapich2/cq/couldnt-request-cq-notification",
                        "mvapich2/async/*",
                        "mvapich2/ud/reliability-error-*",
                        "mvapich/ud/reliability-error-exceeded-mvp",
                        "mvapich2/ud/zcopy-*",
                        "mvapich2/qp/modify-qp-failed-abort",
                        "mvapich2/rdma_cm/error-creating-qp",
                        "mvapich2/reg/vbuf-pool-*",
                        "mvapich2/reg/cannot-reregister-vbuf-region",
                        "mvapich2/reg/dreg-deregister-fails",
                        "mvapich2/hca/*",
                    ],
                ),
                pat(
                    r"\[Rank -?\d+\]\[[^\]\r\n]*: line \d+\](?:Failed status -?\d+ for wr_id|ibv_post_send to ud qp failed|poll CQ failed|Cannot create ah|Failed to get cq_event: )|\] Could not modify (?:qpto RTR|rdma qp to RTS)|\] Cannot register vbuf region|\bError in creating UD QP\s*$",
                    // Its bare `Failed to modify QP to RTR` / `RTS` (UD) are perftest's words
                    // too, and read as perftest's (`perftest-setup-error`): no row here.
                    &["mvapich2/cm/*", "mvapich2/qp/could-not-*", "mvapich2/reg/cannot-register-vbuf-region", "mvapich2/ud/create-ud-qp"],
                ),
                pat(
                    r"\w\(-?\d+\)\.*: (?:No IB device found|Requested IB device not found|Failed to open HCA(?: number -?\d+|: )|Failed to alloc pd(?: number -?\d+|: )|Insufficient ports in active state, need -?\d+|Query of port -?\d+ failed or port is not active|Failed to retrieve gid on rank|Failed to create qp for rank|Failed to modify QP to INIT|could not find active port|rdma_connect error -?\d+ after -?\d+ attempts)",
                    &["mvapich2/errstack/*"],
                ),
                // Hardware multicast for MPI_Bcast (MV2_USE_MCAST): ibv_post_send on the UD
                // multicast QP failed (IBV_POST_MCAST_SEND, PRINT_ERROR).
                pat(
                    r"\bFailed to post mcast send errno:-?\d+",
                    &["mvapich2/mcast/post-mcast-send-failed"],
                ),
            ],
            unless: &[],
        },
    ],
};
