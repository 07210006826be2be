//! The `nccl-ofi` pack: the NCCL OFI net plugin (aws-ofi-nccl).

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// A completion line whose provider error string says the transport gave up on the peer:
/// EFA's unresponsive or unreachable remote (SRD's retransmissions ran out), or a verbs-based
/// provider's transport/RNR retry exceeded. The retry-exceeded trigger's line, so the generic
/// completion trigger vetoes it.
const RETRY_COMPLETION: &str = r"completed with error\b[^\r\n]*?(?:Unresponsive (?:receiver|remote)|Unreachable remote|(?:transport|RNR) retry counter exceeded)";

/// The completion-error stems: the completion triggers' lines, which the catch-all of
/// `nccl-ofi-error` must leave to them.
const COMPLETION: &str = r"NET/OFI (?:(?:Request|Remote write)\b[^\r\n]*? completed with error|Fatal: (?:Bounce|rx) buffer recv completed with error|Operation with NULL context completed with error|Send close message complete with error|Received error entry without a context|Completion with unexpected NULL op_context|Unknown remote write error|Unable to (?:read from fi_cq_readerr|retrieve completion queue entries))";

/// WARN lines of the plugin that are not failures of a running job: the plugin cannot be
/// used on this host and NCCL falls back to its own transports (no provider, no EFA, too
/// old a libfabric: `… initialization failed`, `Unable to find a protocol that worked`),
/// platform detection that healthy runs print (`pciPath: Could not find real path`,
/// `Error opening file: /sys/devices/virtual/dmi/id/product_name`, `Could not find
/// ncclGetVersion symbol`), configuration hints and deprecations, optional features being
/// unavailable (tuner, GDRCopy, GIN/GDAKI, CUDA flush), teardown leak reports, and a retry
/// in progress (`Trying again until success`).
const BENIGN: &str = r"NET/OFI (?:aws-ofi-nccl initialization failed|Initializing plugin failed|Unable to find a protocol that worked|Failed to initialize [^\r\n]*?protocol|OFI fi_getinfo\(\) call failed|OFI call failed with RC|Could(?:n't| not) find any optimal provider|Only EFA provider is supported|No viable endpoint found for TCP provider|EFA provider requires at least libfabric version|Could not find ncclGetVersion symbol|ncclGetVersion returned|(?:pciPath: )?Could not find real path of|Error (?:opening|reading) file: |GDR disabled on GDR-supported instance type|NCCL_PROTO was set to|The tuner plugin can not be loaded|NCCL_OFI_TUNER is not available|AWS platform priority|Could not capture a CUDA context|Unrecognized histogram|Cannot (?:print|aggregate|register) histogram|\S+ (?:inactive )?(?:domains|endpoint) (?:are )?still (?:active|open) after cleanup|[^\r\n]*? freelist: there are \d+ in-use entries|MR cache destroyed while|Closing (?:recv|send)_comm \S+ with inflight requests|Use of [^\r\n]*? is deprecated|WARNING: |Unable to post receive of connect message [^\r\n]*?Trying again|Failed to (?:find|parse) shared library info|Unable to configure (?:tuner|NVLS option)|Failed to initialize GDRCopy|GDRCopy support not available|Failed to resolve (?:libgdrapi|GDRCopy v2)|gin GDAKI: (?:createContext on a non-GDA-capable|not supported on this platform)|GIN (?:requires GDRCopy|only supports RDMA transport|plugin does not support FI_MR_ENDPOINT)|gin: OFI NET plugin has not been initialized|OFI_NCCL_GIN_TYPE=GDAKI requested but|CUDA flush requested, but|Could not query CUDA device for gdrcopy worker|Model is not supported for platform|Failed to get tuner parameters for model|Failed to destroy an existing tuner context|(?:Model|Region) Context allocation failed)";

/// The NCCL OFI net plugin (aws-ofi-nccl, `NET/Libfabric`, `NET/AWS Libfabric`): it logs
/// through NCCL's logger, every line starting `NET/OFI ` (`triggers/formats/nccl_ofi.tsv`,
/// read in the sources of v1.0.0 to v1.21.1). Its `WARN` lines report failures except the
/// wordings in [`BENIGN`]; its `INFO` lines are progress and configuration.
pub(super) static NCCL_OFI: Table = Table {
    name: "nccl-ofi",
    summary: "the NCCL OFI net plugin (aws-ofi-nccl): libfabric completion, endpoint, AV and memory-registration errors",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "nccl-ofi-retry-exceeded",
            class: "nccl_ib_error",
            pre_s: RETRY_PRE,
            description: "NET/OFI request completed with an error saying the transport gave up on the peer (EFA unresponsive/unreachable remote, transport or RNR retry exceeded): the peer stopped answering well before the line",
            // gnosia93/training-on-eks appendix/a1-karpenter-message.md (EFA; the error as
            // PyTorch repeats it after `Last error:`)
            example: "[rank0]: NET/OFI Request 0x7f456c224810 completed with error. RC: 103. Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed) My EFA addr: fi_addr_efa://[fe80::c55:2eff:fe44:db5]:0:142160333 My host id: i-07792e0f955a9673b Peer EFA addr: fi_addr_efa://[fe80::454:14ff:fedd:d5b3]:0:825957744 Peer host id: N/A). Completed length: 0",
            patterns: &[pat(
                r"NET/OFI (?:Request|Remote write)\b[^\r\n]*? completed with error[.:] (?:RC|err): (?P<retcode>-?\d+)[^\r\n]*?(?:Error|strerror): (?:(?P<status>-?\d+) \()?(?P<error>Unresponsive (?:receiver|remote)|Unreachable remote|(?:transport|RNR) retry counter exceeded)",
                &["nccl-ofi/cq/request-*", "nccl-ofi/cq/remote-write-*"],
            )],
            unless: &[],
        },
        Builtin {
            name: "nccl-ofi-completion-error",
            class: "nccl_ib_error",
            pre_s: PRE,
            description: "NET/OFI request or remote write completed with an error (libfabric CQ error entry), a receive buffer or context-less operation completed with error, or the plugin could not read the CQ or its error entry",
            // aws/aws-ofi-nccl#161 (title)
            example: "NCCL WARN NET/OFI Request completed with error. RC: 21. Error: unknown error",
            patterns: &[
                pat(
                    r"NET/OFI (?:Request|Remote write)\b[^\r\n]*? completed with error\b(?:[.:] (?:RC|err): (?P<retcode>-?\d+))?(?:[^\r\n]*?(?:Error|strerror): (?:(?P<status>-?\d+) \()?(?P<error>[^(),\r\n]+?)(?:\)|\. Completed|, len|$))?",
                    &["nccl-ofi/cq/request-*", "nccl-ofi/cq/remote-write-*"],
                ),
                pat(
                    r"NET/OFI Unable to (?:read from fi_cq_readerr|retrieve completion queue entries)\. RC: (?P<retcode>-?\d+)[.,] (?:Error|ERROR): (?P<error>[^\r\n]+)",
                    &["nccl-ofi/cq/unable-*"],
                ),
                pat(
                    r"NET/OFI (?:Fatal: (?:Bounce|rx) buffer recv completed with error|Operation with NULL context completed with error|Send close message complete with error|Received error entry without a context|Completion with unexpected NULL op_context|Unknown remote write error)",
                    &[
                        "nccl-ofi/cq/fatal-*",
                        "nccl-ofi/cq/operation-null-context-*",
                        "nccl-ofi/cq/send-close-message-complete-error",
                        "nccl-ofi/cq/received-error-entry-without-context",
                        "nccl-ofi/cq/completion-unexpected-null-op-context",
                        "nccl-ofi/cq/unknown-remote-write-error*",
                    ],
                ),
            ],
            unless: &[RETRY_COMPLETION],
        },
        Builtin {
            name: "nccl-ofi-error",
            class: "nccl_system_error",
            pre_s: PRE,
            description: "NET/OFI failure other than a completion error: opening the fabric, domain, CQ or AV, creating or enabling an endpoint, memory registration, address-vector insert, posting a send/recv/RMA, an invalid tag or message from a peer, or any other plugin WARN that is not a known benign one",
            // aws/aws-ofi-nccl#24
            example: "[1,23]<stdout>:ip-172-32-45-165:72593:73427 [7] create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument",
            patterns: &[
                pat(
                    r"NET/OFI Couldn't (?P<op>[^.\r\n]+?)\.(?: optlen: \d+,)? RC: (?P<retcode>-?\d+), ERROR: (?P<error>[^\r\n]+)",
                    &["nccl-ofi/sys/couldnt-*"],
                ),
                pat(
                    r"NET/OFI Creating new endpoint for (?:domain|device) \S+ failed(?:: (?P<error>[^\r\n]+))?",
                    &["nccl-ofi/sys/creating-new-endpoint-*"],
                ),
                pat(
                    r"NET/OFI (?:CM: )?Unable to (?:register memory|bind MR to EP|enable MR|de-register memory)\b[^\r\n]*?RC: (?P<retcode>-?\d+), Error: (?P<error>[^\r\n]+)",
                    &[
                        "nccl-ofi/sys/unable-register-memory*",
                        "nccl-ofi/sys/unable-bind-mr-*",
                        "nccl-ofi/sys/unable-enable-mr-*",
                        "nccl-ofi/sys/unable-de-register-memory*",
                        "nccl-ofi/sys/cm-unable-*",
                    ],
                ),
                pat(
                    r"NET/OFI (?:CM: )?Unable to insert (?:remote|local) address into address vector",
                    &[
                        "nccl-ofi/sys/unable-insert-*",
                        "nccl-ofi/sys/cm-unable-insert-*",
                    ],
                ),
                pat(
                    r"NET/OFI (?:Received an invalid (?:tag|communicator ID)|Received (?:close|ctrl|eager|write-immediate) message for non-existent|Unexpected (?:status|type) \(-?\d+\) for message|Unexpected number of remote (?:control )?rails|(?:Write|Read|Send) complet(?:e|ion) from unexpected req)",
                    &[
                        "nccl-ofi/sys/received-*",
                        "nccl-ofi/sys/unexpected-status-message",
                        "nccl-ofi/sys/unexpected-type-message",
                        "nccl-ofi/sys/unexpected-number-remote-*",
                        "nccl-ofi/sys/write-complete-*",
                        "nccl-ofi/sys/read-complete-*",
                        "nccl-ofi/sys/send-complete*",
                    ],
                ),
                // Every other WARN of the plugin reports a failure (a libfabric call, an
                // allocation, an invalid state); the benign ones are vetoed below. Also
                // the plugin's own test binaries' logger (`WARN: Function: f Line: n: `).
                pat(
                    r"(?:NCCL WARN|WARN: Function: \S+ Line: \d+:) NET/OFI \S",
                    &["nccl-ofi/sys/*"],
                ),
            ],
            unless: &[COMPLETION, BENIGN],
        },
    ],
};
