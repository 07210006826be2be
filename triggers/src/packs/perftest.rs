//! The `perftest` pack: every failure message of perftest (`ib_{send,write,read,atomic}_{bw,lat}`,
//! `raw_ethernet_*`), V4.1-0.2 to 26.04 and master, as gathered in
//! `triggers/formats/verbs_perftest_nvmeof.tsv` (rows `perftest/…`).
//!
//! perftest prints its errors bare (no logger header, often with a leading space that logs
//! sometimes trim), and hundreds of them, so the patterns are built on perftest's own stems
//! (`Couldn't create …`, `Failed to … RDMA CM …`, `Unable to … socket/rdma_cm`) with the exact
//! objects after them: the same verbs in rdma-core, SPDK or UCX messages name other objects, and
//! none of perftest's healthy output (headers, `local address: LID … QPN … PSN …`, result tables,
//! parameter lines, warnings) contains them.
//!
//! One trigger per failure kind, so the lines of one failure share a cooldown:
//! - `perftest-completion-error`: a work completion with an error status (usually 12, retry
//!   exceeded, hence the longer window) or unexpected flags: `Completion with error at client`,
//!   then `Failed status …: wr_id … syndrom 0x…` (the `syndrom` is the vendor error), then
//!   `scnt=…, ccnt=…`.
//! - `perftest-run-error`: the run loop stopped (`Failed to complete run_iter_bw function
//!   successfully`, printed after a completion error too: the two windows overlap and merge into
//!   one capture), posting, polling, CQ events, a receiver that got nothing for 120 s, data
//!   validation.
//! - `perftest-setup-error`: device, port, context, PD, MR, CQ, QP, SRQ, AH, flows, multicast,
//!   host and GPU memory, QP state changes (`Failed to modify QP to RTS`, then `Unable to Connect
//!   the HCA's through the link`), teardown, options the device does not support.
//! - `perftest-connect-error`: the TCP exchange (`Couldn't connect to host:port`,
//!   `ethernet_read_keys: Couldn't read remote address`, `Unable to read from socket/rdma_cm`,
//!   `Failed to exchange data between server and clients`), RDMA CM (`rdma_bind_addr failed`,
//!   `Event: RDMA_CM_EVENT_REJECTED; error: -111.`, `Failed to … RDMA CM …`), parameter
//!   negotiation (`… mismatch: local=…, remote=…`), the completions of the exchange over rdma_cm
//!   QPs (`Bad wc status -- 12 -- 0`).
//!
//! Not fired (the rows are `ok`): `failed to open {path}` (the `--out_json` file; the test goes
//! on), `Failed to open '{path}'` (the `--payload_file_path` file) and `Failed to resolve
//! {func}: {dlerror}` (MUSA loader; `Failed to load MUSA library dynamically` follows and fires):
//! their wording is that of any program, `Failed to resolve host: …` included.
//!
//! Some perftest messages are word for word those of rdma-core's `ibv_*_pingpong` examples
//! (`Couldn't create CQ`, `Failed to modify QP to RTS`, `Couldn't connect to host:port`,
//! `poll CQ failed`, …); a line cannot tell which program printed it, and this pack fires them
//! as `perftest_error` (perftest is what a cluster runs).

use super::{pat, Builtin, Fallbacks, Table, PRE, RETRY_PRE};

/// perftest failures, by kind.
pub(super) static PERFTEST: Table = Table {
    name: "perftest",
    summary: "perftest (ib_write_bw, ib_read_lat, …) completion, run, setup and connection errors",
    fallbacks: Fallbacks::None,
    rows: &[
        Builtin {
            name: "perftest-completion-error",
            class: "perftest_error",
            // Usually status 12 (transport retry counter exceeded): the peer went quiet ~30 s before.
            pre_s: RETRY_PRE,
            description: "perftest got a work completion with an error (`Failed status 12` is retry exceeded, `syndrom` the vendor error) or with unexpected flags",
            example: " Completion with error at client Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0",
            patterns: &[
                // The first line of a completion error (the status line follows; some logs join them).
                pat(
                    r"Completion with error at (?:client|server)(?:.*?Failed status[- ](?:(?P<error>[^(:]+?) \()?(?P<status>\d+)\)?: (?:qp_num (?P<qp>\d+) )?wr_id -?\d+ syndrom 0x(?P<vendor_err>[0-9a-fA-F]+))?",
                    &[
                        "perftest/completion-with-error-at-*",
                    ],
                ),
                // The status line: `Failed status 12:` (to 25.07), `Failed status 12: qp_num 1234`
                // (25.10), `Failed status-transport retry counter exceeded (12):` (26.01). `syndrom`
                // is the vendor error.
                pat(
                    r"Failed status[- ](?:(?P<error>[^(:]+?) \()?(?P<status>\d+)\)?: (?:qp_num (?P<qp>\d+) )?wr_id -?\d+ syndrom 0x(?P<vendor_err>[0-9a-fA-F]+)",
                    &[
                        "perftest/failed-status-*",
                    ],
                ),
                // The counters line after it (leading space from 26.01).
                pat(
                    r"scnt=\d+, ccnt=\d+",
                    &[
                        "perftest/completion-error-scnt-ccnt*",
                    ],
                ),
                // Completions with unexpected flags (26.01), and the run_infinitely server's
                // completion errors.
                pat(
                    concat!(
                        r"Completion with wc_flags mismatch at (?:client|server)",
                        r"|Failed wr_id -?\d+ flag: 0x[0-9a-fA-F]+ \(should contain 0x",
                        r"|A completion with (?:Error|flags mismatch) in run_infinitely_bw_server function",
                    ),
                    &[
                        "perftest/a-completion-with-error-in-run-infinitely",
                        "perftest/completion-wc-flags-mismatch-*",
                        "perftest/failed-wr-id-flag-0x-should-contain",
                        "perftest/run-infinitely-flags-mismatch",
                    ],
                ),
                // A send completion with an error status in the credit-based flow.
                pat(
                    r"Poll send CQ error status=(?P<status>\d+) qp -?\d+",
                    &[
                        "perftest/poll-send-cq-error-status-qp*",
                    ],
                ),
            ],
            unless: &[],
        },
        Builtin {
            name: "perftest-run-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest failed while running: its run loop stopped (after any error in it), posting or polling failed, the receiver got nothing for 120 s, a `-w`/`-y` limit was missed, or data validation found corrupt data; HPE Slingshot's cxi test tools waiting in vain for an event or failing to set up their control connection",
            example: " Failed to complete run_iter_bw function successfully",
            patterns: &[
                // HPE Slingshot's perftest counterparts (libcxi's cxi_write_bw, cxi_read_bw,
                // cxi_send_bw, cxi_heatsink_check): a triggered operation that never came back.
                pat(
                    r"\bFailed to get (?:(?:\w+ )+TRIGGERED_OP|(?:target )?LINK|STATE_CHANGE target) event: |\bFailed to get initiator (?:ACK|REPLY): |\bproc\d+ wait failed: |\bFailed to (?:init control messaging|exchange client/server (?:config|addrs)): ",
                    &[
                        "libcxi/utils/failed-to-get-*",
                        "libcxi/utils/proc-wait-failed",
                        "libcxi/utils/failed-to-init-control-messaging",
                        "libcxi/utils/failed-to-exchange-*",
                    ],
                ),
                // The run loop's exit line, printed after any failure in it (a completion error too).
                pat(
                    concat!(
                        r"Failed to complete (?P<op>run_iter_\w+) function successfully",
                        r"|Error occurr?ed (?:in run_iter function|while running(?: infinitely)?(?: on server)?! aborting)",
                        r"|Test exited with Error",
                        r"|Unable to run iter fs rate",
                    ),
                    &[
                        "perftest/error-occured-*",
                        "perftest/error-occurred-*",
                        "perftest/failed-to-complete-run-iter-*",
                        "perftest/test-exited-with-error",
                        "perftest/unable-to-run-iter-fs-rate",
                    ],
                ),
                // glibc aborting a perftest binary (heap corruption; 2.11-2.25's form).
                pat(
                    r"\*\*\* Error in `[^'`]*\b(?:ib_(?:write|read|send|atomic)_(?:bw|lat)|raw_ethernet_\w+)': ",
                    &["perftest/glibc-error-in"],
                ),
                // Posting work requests.
                pat(
                    r"Couldn't post (?:send(?:[ :]|\s*$)|recv[ :])",
                    &[
                        "perftest/couldnt-post-recv-*",
                        "perftest/couldnt-post-send",
                        "rdma-core/ibv_examples/couldnt-post-send",
                        "perftest/couldnt-post-send-during-warm-up-qp*",
                        "perftest/couldnt-post-send-qp-*",
                        "perftest/couldnt-post-send-scnt*",
                    ],
                ),
                // Polling the CQ.
                pat(
                    r"[Pp]oll (?:on )?(?:[Ss]end |Rece?ie?ve )?CQ (?:to clean credit )?failed",
                    &[
                        "perftest/poll-cq-failed",
                        "rdma-core/ibv_examples/poll-cq-failed",
                        "perftest/poll-on-send-cq-failed",
                        "perftest/poll-receive-cq-failed",
                        "perftest/poll-recieve-cq-failed",
                        "perftest/poll-send-cq-failed-ne",
                        "perftest/poll-send-cq-to-clean-credit-failed",
                    ],
                ),
                // CQ events (`-e`).
                pat(
                    concat!(
                        r"Couldn't request R?CQ notification",
                        r"|Failed to notify (?:receive |send )?events to CQ",
                        r"|Failed to get (?:cq_event|completion events)",
                    ),
                    &[
                        "perftest/couldnt-request-*",
                        "perftest/failed-to-get-completion-events",
                        "perftest/failed-to-get-cq-event",
                        "rdma-core/ibv_examples/failed-to-get-cq-event",
                        "perftest/failed-to-notify-*",
                    ],
                ),
                // Warm-up, a receiver that got nothing for 120 s, the `-w`/`-y` limits.
                pat(
                    concat!(
                        r"Problems with warm up",
                        r"|Did not get Message for \d+ Seconds",
                        r"|Total Received=-?\d+, Total Iters Required=-?\d+",
                        r"|Error: (?:BW result is below bw limit|Msg rate\s+is below msg_rate limit)",
                    ),
                    &[
                        "perftest/did-not-get-message-for-120-seconds/*",
                        "perftest/error-bw-result-is-below-bw-limit",
                        "perftest/error-msg-rate-is-below-msg-rate",
                        "perftest/problems-with-warm-up",
                    ],
                ),
                // Data validation (26.04) found corrupt data or could not run.
                pat(
                    concat!(
                        r"VALIDATION: (?:FAILED|ERROR)",
                        r"|Data validation: (?:cannot start|buffer layout computation failed)",
                        r"|Failed to (?:start validation kernel|sync before stopping validation)",
                        r"|\[DATA_VALIDATION\] (?:Failed to|Validator\[-?\d+\] failed to pin)",
                    ),
                    &[
                        "perftest/data-validation-*",
                        "perftest/failed-to-start-validation-kernel",
                        "perftest/failed-to-sync-before-stopping-validation",
                        "perftest/validation-*",
                    ],
                ),
                // Threads, timers and reports of the run.
                pat(
                    concat!(
                        r"Fail to create thread",
                        r"|[Ee]rror when try to (?:wait for SIGALRM|mask alram)",
                        r"|Error stopping gpu_touch thread",
                        r"|Can't produce a report",
                        r"|Perftest cannot produce a report",
                    ),
                    &[
                        "perftest/cant-produce-a-report",
                        "perftest/due-to-this-issue-perftest-cannot-produce",
                        "perftest/error-stopping-gpu-touch-thread",
                        "perftest/error-when-try-to-*",
                        "perftest/fail-to-create-thread",
                    ],
                ),
            ],
            unless: &[
                // Open MPI's openib prints the same stem with its error after it (mpi pack).
                r"Couldn't request CQ notification with error",
                // The UD exchange's `Couldn't post send my QP number {status}` is a connection failure.
                r"Couldn't post send my QP number",
                // MVAPICH2's connection manager (`[Rank N][file: line N]poll CQ failed`, the
                // mpi pack's `mvapich-error`).
                r"\[Rank -?\d+\]\[[^\]\r\n]*: line \d+\]",
            ],
        },
        Builtin {
            name: "perftest-setup-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest could not set up its test: no device or active port, creating the context, PD, MR, CQ, QP or SRQ failed, a QP state change (INIT, RTR, RTS) failed, host or GPU memory could not be had, or the device does not support an option",
            example: "Failed to modify QP to RTS",
            patterns: &[
                // QP state changes (`ctx_connect`, then `Unable to Connect the HCA's`).
                pat(
                    concat!(
                        r"Failed to modify QP (?:to (?:INIT|RTS)|(?P<qp>-?[0-9a-fA-F]+) to (?:RTR|RTS))",
                        r"|Unable to Connect the HCA's through the link",
                    ),
                    &[
                        "perftest/failed-to-modify-qp-to-*",
                        // rc_pingpong's wording, which perftest was forked from.
                        "rdma-core/ibv_examples/failed-to-modify-qp-to-init",
                        "rdma-core/ibv_examples/failed-to-modify-qp-to-rts",
                        "perftest/unable-to-connect-the-hcas-through-the",
                    ],
                ),
                // `Couldn't …` resources: context, PD, MR, CQ, QP, SRQ, XRC, flows, multicast, GPU.
                pat(
                    concat!(
                        r"Couldn't create (?:IB resources|CQ|a receiver CQ|exp CQ|CQ family|completion channel|send completion channel|receive completion channel|resource domain|XRC resources|SRQ XRC resources|SRQ|null MR|rdma (?:new |old )?QP)",
                        r"|Couldn't allocate (?:PD|MR|context|work buf|TD|PAD|DMAH)",
                        r"|Couldn't get (?:context for the device|device attributes|ibv_(?:exp_)?post_send pointer|ibv_poll_cq pointer|QP burst family|data direct sysfs path)",
                        r"|[Cc]ouldn't query device (?:capabilities|extended attributes|for inline-receive|for on-demand paging|for On-Demand Paging)",
                        r"|Couldn't set (?:the link layer|Eth MTU|credentials)",
                        r"|Couldn't open (?:IB device (?P<hca>\S+)|XRC SRQ)",
                        r"|Couldn't init GPU context",
                        r"|Couldn't initialize (?:mlu|Neuron|ROCm) device",
                        r"|Couldn't attach (?:QP|promiscuous rule QP|SNIFFER rule QP)",
                        r"|Couldn't dettach QP to MultiCast group",
                        r"|Couldn't leave multicast group",
                        r"|Couldn't (?:Register|Unregister) the (?:Base )?Mcast group on the SM",
                        r"|Couldn't login\. err=",
                        r"|Couldn't close the file for the XRC Domain",
                        r"|Couldn't destroy (?:QP|SRQ|XRC domain|flow|promisc flow|sniffer flow|all SEND resources)",
                        r"|Couldn't Destory (?:flow|promisc flow|sniffer flow|all SEND resources)",
                        r"|Can't create masked atomic QP",
                    ),
                    &[
                        "perftest/cant-create-masked-atomic-qp",
                        "perftest/couldnt-allocate-*",
                        "perftest/couldnt-attach-*",
                        "perftest/couldnt-close-the-file-for-the-xrc",
                        "perftest/couldnt-create-*",
                        "rdma-core/ibv_examples/couldnt-create-cq",
                        "perftest/couldnt-destory-*",
                        "perftest/couldnt-destroy-*",
                        "perftest/couldnt-dettach-qp-to-multicast-group",
                        "perftest/couldnt-get-context-for-the-device*",
                        "perftest/couldnt-get-data-direct-sysfs-path-with",
                        "perftest/couldnt-get-device-attributes",
                        "perftest/couldnt-get-ibv-*",
                        "perftest/couldnt-get-qp-burst-family",
                        "perftest/couldnt-init-gpu-context*",
                        "perftest/couldnt-initialize-*",
                        "perftest/couldnt-leave-multicast-group",
                        "perftest/couldnt-login-err",
                        "perftest/couldnt-open-*",
                        "perftest/couldnt-query-device-*",
                        "perftest/couldnt-register-the-mcast-group-on-the",
                        "perftest/couldnt-set-*",
                        "perftest/couldnt-unregister-the-*",
                    ],
                ),
                // `Unable to …` resources.
                pat(
                    concat!(
                        r"Unable to create (?:QP|DC QP|RSS QP|XRC QP|exp QP)\.",
                        r"|Unable to (?:find the Infiniband/RoCE device|query port \d+ attributes|set up flow rules|Join Sender to Mcast gid|calibrate cycles|access performance counters|retrieve dmabuf fd of Neuron)",
                        r"|Unable to (?:open|mmap) '",
                    ),
                    &[
                        "perftest/unable-to-access-performance-counters",
                        "perftest/unable-to-calibrate-cycles-exiting",
                        "perftest/unable-to-create-dc-qp",
                        "perftest/unable-to-create-exp-qp",
                        "perftest/unable-to-create-qp",
                        "perftest/unable-to-create-rss-qp",
                        "perftest/unable-to-create-xrc-qp",
                        "perftest/unable-to-find-the-infiniband-roce-device*",
                        "perftest/unable-to-join-sender-to-mcast-gid",
                        "perftest/unable-to-mmap",
                        "perftest/unable-to-open",
                        "perftest/unable-to-query-port-attributes",
                        "perftest/unable-to-retrieve-dmabuf-fd-of-neuron",
                        "perftest/unable-to-set-up-flow-rules",
                    ],
                ),
                // `Failed to …` resources, memory and teardown.
                pat(
                    concat!(
                        r"Failed to create (?:QP(?: with inline receive)?\.|MR|CQs|AH(?: for UD)?\s*$|DMAH|dek|mkey|validation context)",
                        r"|Failed to allocate (?:hugepage region|hugepages|dynamic polling context|device memory of size|DV slot lookup table|HL memory on device|memory for data validation|host buffer for data validation|context for gpu_touch|\d+ bytes of device memory)",
                        r"|Failed to deallocate (?:PD|TD|PAD|DMAH) - ",
                        r"|Failed to deregister (?:MR #|send credit MR)",
                        r"|Failed to destroy(?: AH| CQ - | dct| MKey| data encryption key| resources|_ctx)",
                        r"|Failed to close (?:device context|event channel|send event channel|receive event channel)",
                        r"|Failed to query device (?:attributes|capabilities|vendor id)",
                        r"|Failed to (?:attach shared memory region|mark shm for removal|set dek|set qp_timeout|Join Mcast request|get IB devices list|get va for the allocated tensor|map device memory allocation|unmap host memory|remove memory handle|post receive recv_wqes|init memory|set environment variable|set CPU affinity|run on node|unlock mutex|read payload file|parse DWORD number)",
                        r"|Failed to (?:initialize (?:synapse|validation context via plugin)|acquire device, status|get device info, status|launch validation kernel via plugin)",
                        r"|Failed to export (?:DM as dmabuf fd|dmabuf\.)",
                        r"|Failed to lock mutex while (?:allocating|deallocating) memory",
                        r"|Failed to load (?:CUDA (?:library dynamically|runtime library)|MUSA library|required (?:CUDA runtime|kernel plugin) symbols|kernel plugin|validation kernel plugin)",
                        r"|Failed to resolve cuGetProcAddress",
                    ),
                    &[
                        "perftest/failed-to-acquire-device-status",
                        "perftest/failed-to-allocate-bytes-of-device-memory",
                        "perftest/failed-to-allocate-context-for-gpu-touch",
                        "perftest/failed-to-allocate-device-memory-of-size",
                        "perftest/failed-to-allocate-dv-slot-lookup-table",
                        "perftest/failed-to-allocate-dynamic-polling-context",
                        "perftest/failed-to-allocate-hl-memory-on-device",
                        "perftest/failed-to-allocate-host-buffer-for-data",
                        "perftest/failed-to-allocate-hugepage-region",
                        "perftest/failed-to-allocate-hugepages-please-configure-hugepages",
                        "perftest/failed-to-allocate-memory-for-data-validation",
                        "perftest/failed-to-attach-shared-memory-region",
                        "perftest/failed-to-close-device-context",
                        "perftest/failed-to-close-event-channel",
                        "perftest/failed-to-close-receive-event-channel",
                        "perftest/failed-to-close-send-event-channel",
                        "perftest/failed-to-create-ah",
                        "perftest/failed-to-create-ah-for-ud",
                        "perftest/failed-to-create-cqs",
                        "perftest/failed-to-create-dek",
                        "perftest/failed-to-create-dmah",
                        "perftest/failed-to-create-mkey",
                        "perftest/failed-to-create-mr-2",
                        "perftest/failed-to-create-qp*",
                        "perftest/failed-to-create-validation-context",
                        "perftest/failed-to-deallocate-*",
                        "perftest/failed-to-deregister-mr",
                        "perftest/failed-to-deregister-send-credit-mr",
                        "perftest/failed-to-destroy-ah",
                        "perftest/failed-to-destroy-cq",
                        "perftest/failed-to-destroy-ctx",
                        "perftest/failed-to-destroy-data-encryption-key",
                        "perftest/failed-to-destroy-dct",
                        "perftest/failed-to-destroy-mkey",
                        "perftest/failed-to-destroy-resources*",
                        "perftest/failed-to-export-dm-as-dmabuf-fd",
                        "perftest/failed-to-export-dmabuf-sz-ptr-err",
                        "perftest/failed-to-get-device-info-status",
                        "perftest/failed-to-get-ib-devices-list",
                        "perftest/failed-to-get-va-for-the-allocated",
                        "perftest/failed-to-init-memory",
                        "perftest/failed-to-initialize-synapse-status",
                        "perftest/failed-to-initialize-validation-context-via-plugin",
                        "perftest/failed-to-join-mcast-request",
                        "perftest/failed-to-launch-validation-kernel-via-plugin",
                        "perftest/failed-to-load-*",
                        "perftest/failed-to-lock-mutex-while-*",
                        "perftest/failed-to-map-device-memory-allocation",
                        "perftest/failed-to-mark-shm-for-removal",
                        "perftest/failed-to-parse-dword-number",
                        "perftest/failed-to-post-receive-recv-wqes*",
                        "perftest/failed-to-query-device-*",
                        "perftest/failed-to-read-payload-file",
                        "perftest/failed-to-remove-memory-handle",
                        "perftest/failed-to-resolve-cugetprocaddress",
                        "perftest/failed-to-run-on-node",
                        "perftest/failed-to-set-cpu-affinity",
                        "perftest/failed-to-set-dek",
                        "perftest/failed-to-set-environment-variable",
                        "perftest/failed-to-set-qp-timeout",
                        "perftest/failed-to-unlock-mutex",
                        "perftest/failed-to-unmap-host-memory",
                    ],
                ),
                // Multicast registration with the SM (UMAD) and P_Key.
                pat(
                    concat!(
                        r"failed to (?:create mr|init the UMAD library|open UMAD port|register UMAD agent|deregister UMAD agent|allocate MAD buffer|set the destination address of the SMP|send MAD|receive MAD response|get mlid from MAD|close UMAD portid|set pkey index|export dmabuf handle)",
                        r"|received UMAD with an error",
                    ),
                    &[
                        "perftest/failed-to-allocate-mad-buffer",
                        "perftest/failed-to-close-umad-portid",
                        "perftest/failed-to-create-mr",
                        "perftest/failed-to-deregister-umad-agent-for-mads",
                        "perftest/failed-to-export-dmabuf-handle-for-addr",
                        "perftest/failed-to-get-mlid-from-mad",
                        "perftest/failed-to-init-the-umad-library",
                        "perftest/failed-to-open-umad-port",
                        "perftest/failed-to-receive-mad-response",
                        "perftest/failed-to-register-umad-agent-for-mads",
                        "perftest/failed-to-send-mad",
                        "perftest/failed-to-set-pkey-index",
                        "perftest/failed-to-set-the-destination-address-of",
                        "perftest/received-umad-with-an-error-0x",
                    ],
                ),
                // Host, GPU and accelerator memory (CUDA, ROCm, MUSA, MLU, Neuron, Gaudi, OpenCL).
                pat(
                    concat!(
                        r"(?:cu|mu|cn|hip)(?:Ctx(?:Create(?:_v2)?|SetCurrent)\(\)|Mem(?:Alloc(?:Host|Managed)?|GetHandleForAddressRange)|Malloc) error=(?P<retcode>-?\d+)",
                        r"|(?:cu|mu)DeviceGetByPCIBusId failed with error",
                        r"|We have an error from cuDeviceGetByPCIBusId",
                        r"|init_gpu_stop_flag\(\) error=",
                        r"|memalign error=",
                        r"|nrt_tensor_allocate_error =",
                        r"|error occur, func: \S+, line: -?\d+, ret:",
                        r"|load_cuda_function: Failed",
                        r"|cl(?:CreateCommandQueueWithProperties|EnqueueSVMMigrateMem) failed with ret=",
                        r"|clSVMAlloc failed",
                        r"|Allocation of (?:platform|device)_ids failed",
                        r"|SVM needed caps are not supported",
                        r"|invalid CUDA memory type",
                        r"|Can't allocate Neuron memory",
                        r"|DMA-?BUF (?:is not supported on this|requested but not supported)",
                        r"|\[HOST_MEMORY\] Failed to allocate",
                    ),
                    &[
                        "perftest/allocation-of-*",
                        "perftest/cant-allocate-neuron-memory-max-tensors-reached",
                        "perftest/clcreatecommandqueuewithproperties-failed-with-ret",
                        "perftest/clenqueuesvmmigratemem-failed-with-ret",
                        "perftest/clsvmalloc-failed",
                        "perftest/cnctxcreate-error",
                        "perftest/cnctxsetcurrent-error",
                        "perftest/cnmalloc-error",
                        "perftest/cnmemgethandleforaddressrange-error",
                        "perftest/cuctxcreate-*",
                        "perftest/cuctxsetcurrent-error",
                        "perftest/cudevicegetbypcibusid-failed-with-error-failed-to-get",
                        "perftest/cumemalloc-error",
                        "perftest/cumemallochost-error",
                        "perftest/cumemallocmanaged-error",
                        "perftest/cumemgethandleforaddressrange-error",
                        "perftest/dma-buf-is-not-supported-on-this*",
                        "perftest/dmabuf-requested-but-not-supported-in-this",
                        "perftest/error-occur-func-line-ret-cn-error",
                        "perftest/hipmalloc-error",
                        "perftest/host-memory-failed-to-allocate-bytes-errno",
                        "perftest/init-gpu-stop-flag-error",
                        "perftest/invalid-cuda-memory-type",
                        "perftest/load-cuda-function-failed-to-get-driver",
                        "perftest/memalign-error",
                        "perftest/muctxcreate-error",
                        "perftest/muctxsetcurrent-error",
                        "perftest/mudevicegetbypcibusid-failed-with-error-failed-to-get",
                        "perftest/mumemalloc-error",
                        "perftest/mumemallochost-error",
                        "perftest/mumemgethandleforaddressrange-error",
                        "perftest/nrt-tensor-allocate-error",
                        "perftest/svm-needed-caps-are-not-supported",
                        "perftest/we-have-an-error-from-cudevicegetbypcibusid",
                    ],
                ),
                // The device, its port and its capabilities.
                pat(
                    concat!(
                        r"Couldn't get context for the device",
                        r"|No IB devices found",
                        r"|IB device (?P<hca>\S+) not found",
                        r"|Did not detect devices",
                        r"|If device exists, check if driver is up",
                        r"|Internal error, existing\.",
                        r"|Port number \d+ state is",
                        r"|Link layer on port \d+ is Unknown",
                        r"|Error when trying to query (?:port|EFA device)",
                        r"|(?:ibv_exp_query_device|ibv_query_device_ex|create dct|query dct) failed",
                        r"|ibv_query_qp failed to get ah_attr",
                        r"|Error opening (?:XRC domain|file \S+ errno: |perf event)",
                        r"|Error reading perf event",
                        r"|could not open kernel conf file",
                        r"|MKEY T10DIF configuration failed",
                    ),
                    &[
                        "perftest/could-not-open-kernel-conf-file-error",
                        "perftest/create-dct-failed",
                        "perftest/did-not-detect-devices",
                        "perftest/error-opening-*",
                        "perftest/error-reading-perf-event",
                        "perftest/error-when-trying-to-query-*",
                        "perftest/ib-device-not-found",
                        "rdma-core/ibv_asyncwatch/ib-device-not-found",
                        "rdma-core/ibv_examples/ib-device-not-found",
                        "perftest/ibv-*",
                        "perftest/if-device-exists-check-driver",
                        "perftest/internal-error-existing",
                        "perftest/link-layer-unknown",
                        "perftest/mkey-t10dif-configuration-failed-ibv-wr-complete",
                        "perftest/no-ib-devices-found",
                        "rdma-core/examples/ud_pingpong/ok/no-ib-devices-found",
                        "rdma-core/ibv_devinfo/no-ib-devices-found",
                        "rdma-core/ibv_examples/no-ib-devices-found",
                        "perftest/port-state-not-active",
                        "perftest/query-dct-failed",
                    ],
                ),
                // Options the device or the build does not support, invalid options.
                pat(
                    concat!(
                        r"Parser function exited with Error",
                        r"|Invalid MTU - ",
                        r"|Failed: (?:Unknown rate limit units|margin is not long enough|couldn't acquire cpu frequency)",
                        r"|The input value for hw rate limit is not supported",
                        r"|The QP failed to accept HW rate limit(?:\s|$)",
                        r"|(?:is|are) not supported for [^.]*? transport\.",
                        r"|Inline-receive not supported by driver",
                        r"|atomic test is not supported with -R/-z flag",
                        r"|The post send properties are not supported on",
                        r"|verb is not supported with this EFA device",
                        r"|T10DIF signature offload is not supported",
                        r"|Warm up not supported for WRITE_IMM verb",
                        r"|DC is not supported\.",
                        r"|RSS not supported",
                        r"|flow steering is not supported",
                        r"|Raw Etherent test can only run on Ethernet link",
                        r"|This test cannot run Raw Ethernet QPs",
                        r"|Max (?:message|RDMA read|RDMA request) size in (?:UD|SRD) cannot be greater than",
                        r"|Completion vector specified is invalid",
                        r"|Incompatible OOO settings",
                        r"|Post send failed: unknown operation code",
                        r"|Invalid (?:credentials|data_encryption_key) file",
                        r"|Invalid hex char in DWORD number",
                        r"|Cannot Allocate",
                        r#"|Assertion "[^"]*" failed at"#,
                        r"|gettimeofday failed\.",
                        r"|error : spec is NULL",
                        r"|pkt is null:error happened",
                    ),
                    &[
                        "perftest/assertion-failed-at",
                        "perftest/atomic-test-is-not-supported-with-r",
                        "perftest/cannot-allocate",
                        "perftest/completion-vector-specified-is-invalid",
                        "perftest/dc-is-not-supported",
                        "perftest/error-spec-is-null",
                        "perftest/failed-couldnt-acquire-cpu-frequency-for-rate",
                        "perftest/failed-margin-is-not-long-enough-taking",
                        "perftest/failed-unknown-rate-limit-units",
                        "perftest/flow-steering-is-not-supported",
                        "perftest/gettimeofday-failed",
                        "perftest/incompatible-ooo-settings",
                        "perftest/inline-receive-not-supported-by-driver",
                        "perftest/invalid-credentials-file",
                        "perftest/invalid-data-encryption-key-file",
                        "perftest/invalid-hex-char-in-dword-number",
                        "perftest/invalid-mtu",
                        "perftest/max-*",
                        "perftest/odp-*",
                        "perftest/parser-function-exited-with-error",
                        "perftest/pkt-is-null-error-happened-cant-print",
                        "perftest/post-send-failed-unknown-operation-code",
                        "perftest/raw-etherent-test-can-only-run-on",
                        "perftest/read-verb-is-not-supported-with-this",
                        "perftest/receive-is-not-supported-for-rc-transport",
                        "perftest/rss-not-supported",
                        "perftest/send-is-not-supported-for-rc-transport",
                        "perftest/t10dif-signature-offload-is-not-supported-by",
                        "perftest/the-input-value-for-hw-rate-limit",
                        "perftest/the-post-send-properties-are-not-supported*",
                        "perftest/the-qp-failed-to-accept-hw-rate-2",
                        "perftest/this-test-cannot-run-raw-ethernet-qps",
                        "perftest/warm-up-not-supported-for-write-imm",
                        "perftest/write-verb-is-not-supported-with-this",
                    ],
                ),
                // 25.01+: the OOO receive queue too small for the requested depth; 26.04: the
                // GPU touch of the kernel validation plugin missing.
                pat(
                    r"RX Depth=-?\d+ +must not exceed the maximal OOO receive WR's|\bGPU touch not available in kernel plugin",
                    &[
                        "perftest/rx-depth-must-not-exceed-maximal-ooo-receive-wrs",
                        "perftest/gpu-touch-not-available-in-kernel-plugin",
                    ],
                ),
            ],
            unless: &[
                // rdma-core's EFA provider prints `{dev}: {func}:{line}: Failed to create AH`.
                r":\d+: Failed to (?:create|destroy) AH",
                // Mooncake's handshake (the verbs pack's `mooncake-rdma-error`).
                r"\[Handshake\] Failed to modify QP to ",
                // Mooncake's device discovery (glog, `topology.cpp`) logs it as a WARNING and
                // goes on: a probe, not a tool that exits (`ambiguous.tsv`).
                r"topology\.cpp:\d+\] No IB devices found",
                // An MPICH-style error stack (MVAPICH2's `func(N)......: Failed to modify QP to
                // INIT`, the mpi pack's `mvapich-error`).
                r"\w\(-?\d+\)\.*: Failed to modify QP to ",
            ],
        },
        Builtin {
            name: "perftest-connect-error",
            class: "perftest_error",
            pre_s: PRE,
            description: "perftest client and server could not connect or exchange their parameters (TCP socket, RDMA CM bind, resolve, connect and events, key exchange, negotiation)",
            example: "Event: RDMA_CM_EVENT_REJECTED; error: -111.",
            patterns: &[
                // RDMA CM event errors.
                pat(
                    concat!(
                        r"Event: (?P<event>[^;]+); error: (?P<error>-?\d+)",
                        r"|RDMA CM event error",
                    ),
                    &[
                        "perftest/rdma-cm-event-error/*",
                    ],
                ),
                // The peer's name did not resolve (`gai_strerror(n)` then `for host:port`).
                pat(
                    r"(?:Name or service not known|Temporary failure in name resolution|Address family for hostname not supported|No address associated with hostname|Servname not supported for ai_socktype|Non-recoverable failure in name resolution|ai_family not supported) for \S+:\d+\s*$",
                    &["perftest/getaddrinfo-failed-for-host-port*"],
                ),
                // The TCP connection of the key exchange.
                pat(
                    r"Couldn't connect to (?P<peer>\S+?):(?P<port>\d+)",
                    &[
                        "perftest/couldnt-connect-to",
                        "rdma-core/ibv_examples/couldnt-connect-to",
                    ],
                ),
                // The RDMA CM connection (v4.4-): every `Failed to … RDMA CM …` message.
                pat(
                    r"Failed (?:to|request) [^.]*?\bRDMA CM\b",
                    &[
                        "perftest/failed-request-ud-connection-parameters-for-rdma",
                        "perftest/failed-to-accept-rdma-cm-connection",
                        "perftest/failed-to-ack-rdma-cm-event-after",
                        "perftest/failed-to-allocate-memory-for-rdma-cm",
                        "perftest/failed-to-allocate-rdma-cm-nodes",
                        "perftest/failed-to-bind-rdma-cm-address-on",
                        "perftest/failed-to-connect-*",
                        "perftest/failed-to-create-ah-for-rdma-cm",
                        "perftest/failed-to-create-rdma-cm-*",
                        "perftest/failed-to-destroy-rdma-cm-*",
                        "perftest/failed-to-disconnect-rdma-cm-*",
                        "perftest/failed-to-establish-ud-connection-for-rdma",
                        "perftest/failed-to-get-rdma-cm-*",
                        "perftest/failed-to-handle-rdma-cm-event",
                        "perftest/failed-to-initialize-ud-connection-parameters-for",
                        "perftest/failed-to-listen-on-rdma-cm-server",
                        "perftest/failed-to-post-receive-for-connection-for",
                        "perftest/failed-to-post-send-for-connection-for",
                        "perftest/failed-to-reallocate-rdma-cm-nodes-during",
                        "perftest/failed-to-resolve-rdma-cm-*",
                        "perftest/failed-to-set-tos-type-of-service",
                        "perftest/failed-to-sync-between-client-and-server*",
                    ],
                ),
                // rdma_cm calls and events (V4.1-), RDMA_CM resources.
                pat(
                    concat!(
                        r"rdma_(?:bind_addr|create_event_channel|create_id|get_cm_events|listen) failed",
                        r"|rdma_resolve_(?:addr|route) failed\s*$",
                        r"|Function (?:rdma_(?:connect|accept)|ibv_post_send) failed",
                        r"|Function ibv_post_recv failed for RDMA_CM QP",
                        r"|Unable to perform rdma_(?:client|server) function",
                        r"|Received -?\d+ times ADDR_ERROR",
                        r"|unexpected CM event -?\d+",
                        r"|Unexpected CM event bl blka",
                        r"|bad event waiting for connect request",
                        r"|Set (?:TOS|RDMA-CM Ack timeout) option failed",
                        r"|Failed to find matching CM node",
                        r"|Unable to (?:create (?:the )?(?:rdma_resources|rdma resources|RDMA_CM resources)|destroy rdma resources)",
                        r"|Failed to initialize RDMA contexts",
                        r"|Failed to add DV access flags to rdma_cm QP",
                    ),
                    &[
                        "perftest/bad-event-waiting-for-connect-request",
                        "perftest/failed-to-add-dv-access-flags-to",
                        "perftest/failed-to-find-matching-cm-node",
                        "perftest/failed-to-initialize-rdma-contexts",
                        "perftest/function-*",
                        "perftest/rdma-bind-addr-failed",
                        "perftest/rdma-create-*",
                        "perftest/rdma-get-cm-events-failed",
                        "perftest/rdma-listen-failed",
                        "perftest/rdma-resolve-*",
                        "perftest/received-times-addr-error*",
                        "perftest/set-*",
                        "perftest/unable-to-create-rdma-*",
                        "perftest/unable-to-create-the-rdma-resources",
                        "perftest/unable-to-destroy-rdma-resources",
                        "perftest/unable-to-perform-rdma-*",
                        "perftest/unexpected-cm-event*",
                    ],
                ),
                // Reading and writing the keys, on the socket or over rdma_cm (`rdam_cm` to 4.4-0.29).
                pat(
                    concat!(
                        r"(?:ethernet|pp)_read_(?:keys|data): ",
                        r"|Couldn't (?:read remote address|send local address|send reports|write to socket|listen to port|post send my QP number|parse line|get SRQ number)",
                        r"|Unable to (?:read|write) (?:to|from) socket/rd(?:am|ma)_cm",
                    ),
                    &[
                        "perftest/couldnt-get-srq-number",
                        "perftest/couldnt-listen-to-port",
                        "perftest/couldnt-parse-line",
                        "perftest/couldnt-post-send-my-qp-number",
                        "perftest/couldnt-send-*",
                        "perftest/couldnt-write-to-socket",
                        "perftest/ethernet-read-*",
                        "perftest/old/*",
                        "perftest/unable-to-read-*",
                        "perftest/unable-to-write-*",
                    ],
                ),
                // Setting up the exchange.
                pat(
                    concat!(
                        r"Unable to (?:init the socket connection|open file descriptor for socket connection|set up socket connection|send my QP number|set up my IB connection parameters|create the resources needed by comm struct|connect \(retries = -?\d+\)|create AH from WC|create address handler for UD QP)",
                        r"|accept\(\) failed",
                        r"|Failed to bind socket",
                        r"|Problem in resolving basic add?ress and port",
                        r"|Check server address provided",
                    ),
                    &[
                        "perftest/accept-failed",
                        "perftest/check-server-address-provided",
                        "perftest/failed-to-bind-socket",
                        "perftest/problem-in-resolving-basic-*",
                        "perftest/unable-to-connect-retries",
                        "perftest/unable-to-create-address-handler-for-ud",
                        "perftest/unable-to-create-ah-from-wc",
                        "perftest/unable-to-create-the-resources-needed-by",
                        "perftest/unable-to-init-the-socket-connection",
                        "perftest/unable-to-open-file-descriptor-for-socket*",
                        "perftest/unable-to-send-my-qp-number",
                        "perftest/unable-to-set-up-my-ib-connection",
                        "perftest/unable-to-set-up-socket-connection",
                    ],
                ),
                // Exchanging and checking parameters.
                pat(
                    concat!(
                        r"Failed to (?:exchange (?:data|Page Size data|Cache Line Size data|negotiation parameters) between server and clients?|close connection between server and client|sync between (?:server and client|client and server)|negotiate parameters|send UD connection parameters to the remote node)",
                        r"| mismatch: local=[^,]*, remote=",
                        r"|Unexpected compare type \w[\w ]* for ",
                        r"|Found Incompatibility issue with GID types",
                        r"|Please Try to use a different IP version",
                        r"|SRD connection was not found",
                    ),
                    &[
                        "perftest/compare-mismatch-*",
                        "perftest/failed-to-close-connection-between-server-and*",
                        "perftest/failed-to-exchange-*",
                        "perftest/failed-to-negotiate-parameters",
                        "perftest/failed-to-send-ud-connection-parameters-to",
                        "perftest/failed-to-sync-between-*",
                        "perftest/found-incompatibility-issue-with-gid-types",
                        "perftest/please-try-different-ip-version",
                        "perftest/srd-connection-was-not-found",
                        "perftest/unexpected-compare-type-for",
                    ],
                ),
                // Work completions of the exchange over rdma_cm QPs.
                pat(
                    concat!(
                        r"Bad wc status (?:when trying to create AH )?(?:-- )?(?P<status>\d+)(?: --|\s*$)",
                        r"|Bad WQE status when trying to (?:create AH for UD connection|send UD connection parameters) in RDMA CM",
                        r"|Failed to poll CQ\.",
                        r"|Status: -?\d+ ; ID: -?\d+\.",
                    ),
                    &[
                        "perftest/bad-wc-status*",
                        "perftest/failed-to-poll-cq/*",
                    ],
                ),
                // The source address (`--bind_source_ip`, 25.04-).
                pat(
                    concat!(
                        r"Invalid (?:IPv6 )?source address\.",
                        r"|Failed to (?:allocate memory for|set) source address\.",
                        r"|Invalid network address in the specified address family\.",
                        r"|Invalid address family\.",
                    ),
                    &[
                        "perftest/failed-to-allocate-memory-for-source-address",
                        "perftest/failed-to-set-source-address",
                        "perftest/invalid-address-family",
                        "perftest/invalid-ipv6-source-address",
                        "perftest/invalid-network-address-in-the-specified-address",
                        "perftest/invalid-source-address",
                    ],
                ),
            ],
            unless: &[
                // rdma-core's pingpong examples print `%d/%d: Couldn't read remote address`.
                r"-?\d+/-?\d+: Couldn't read remote address",
                // Another program's function naming the rdma_cm call it failed in (LDMS's
                // `z_rdma_listen: rdma_create_event_channel failed`, the kernel's `isert_rdma_accept:
                // rdma_accept() failed with: `): the generic pack's or the verbs pack's.
                r"[a-z][a-z0-9]*_\w+: rdma_\w+(?:\(\))? failed",
                // UCX's own log lines (either of its headers) name the same rdma_cm calls:
                // they are the `ucx` pack's and the generic fallbacks' (`rdma_verbs_error`;
                // nothing at DIAG, where UCX logs probing its rdmacm component on a host
                // without RDMA devices).
                r"\.c:\d+ +UCX +(?:ERROR|WARN|DIAG|INFO|DEBUG|TRACE)\b|\[[\w.-]+:\d+:\d+:\d+\] +\w+\.c:\d+ ",
            ],
        },
    ],
};

#[cfg(test)]
mod tests {
    use super::super::pack;
    use crate::TriggerSet;

    fn fire(line: &str) -> (String, Vec<(String, String)>) {
        let set = TriggerSet::new(pack("perftest").expect("pack")).expect("valid");
        let mut out = Vec::new();
        assert!(set.match_line(line.as_bytes(), &mut out), "{line:?}");
        assert_eq!(out.len(), 1, "{line:?}: {out:?}");
        (
            set.defs()[out[0].trigger].name.clone(),
            out[0].groups.clone(),
        )
    }

    fn get(groups: &[(String, String)], k: &str) -> Option<String> {
        groups.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn every_status_line_wording_carries_status_and_vendor_error() {
        for (line, error, qp) in [
            // To 25.07.
            (" Failed status 12: wr_id 0 syndrom 0x81", None, None),
            // 25.10: the QP number.
            (
                " Failed status 12: qp_num 4660 wr_id 0 syndrom 0x81",
                None,
                Some("4660"),
            ),
            // 26.01: the status text.
            (
                " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81",
                Some("transport retry counter exceeded"),
                None,
            ),
        ] {
            let (name, g) = fire(line);
            assert_eq!(name, "perftest-completion-error", "{line}");
            assert_eq!(get(&g, "status").as_deref(), Some("12"), "{line}");
            assert_eq!(get(&g, "vendor_err").as_deref(), Some("81"), "{line}");
            assert_eq!(get(&g, "error").as_deref(), error, "{line}");
            assert_eq!(get(&g, "qp").as_deref(), qp, "{line}");
        }
        // Old and new counters lines.
        assert_eq!(fire("scnt=128, ccnt=0").0, "perftest-completion-error");
        assert_eq!(fire(" scnt=128, ccnt=0").0, "perftest-completion-error");
        // A joined paste keeps the status.
        let (_, g) = fire(" Completion with error at client Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0");
        assert_eq!(get(&g, "status").as_deref(), Some("12"));
    }

    #[test]
    fn groups_name_the_peer_the_event_and_the_call() {
        let (name, g) = fire("Couldn't connect to 192.168.125.211:18515");
        assert_eq!(name, "perftest-connect-error");
        assert_eq!(get(&g, "peer").as_deref(), Some("192.168.125.211"));
        assert_eq!(get(&g, "port").as_deref(), Some("18515"));
        let (_, g) = fire("Event: RDMA_CM_EVENT_REJECTED; error: -111.");
        assert_eq!(get(&g, "event").as_deref(), Some("RDMA_CM_EVENT_REJECTED"));
        assert_eq!(get(&g, "error").as_deref(), Some("-111"));
        let (name, g) = fire(" Failed to complete run_iter_bw_server function successfully");
        assert_eq!(name, "perftest-run-error");
        assert_eq!(get(&g, "op").as_deref(), Some("run_iter_bw_server"));
        let (name, g) = fire("Failed to modify QP 4660 to RTR");
        assert_eq!(name, "perftest-setup-error");
        assert_eq!(get(&g, "qp").as_deref(), Some("4660"));
        let (_, g) = fire("cuMemAlloc error=2");
        assert_eq!(get(&g, "retcode").as_deref(), Some("2"));
        let (_, g) = fire("Couldn't open IB device mlx5_3");
        assert_eq!(get(&g, "hca").as_deref(), Some("mlx5_3"));
    }

    #[test]
    fn healthy_output_and_look_alikes_fire_nothing() {
        let set = TriggerSet::new(pack("perftest").expect("pack")).expect("valid");
        let mut out = Vec::new();
        for line in [
            " local address: LID 0x02 QPN 0x0032 PSN 0x5f2841 RKey 0x002440 VAddr 0x007f2e5f64b000",
            " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]",
            " 65536      5000             11025.44            11024.71\t\t     0.176395",
            " TX depth        : 128",
            "\u{1b}[31mThe QP failed to accept HW rate limit, providing SW rate limit \u{1b}[0m",
            "Requested SQ size might be too big. Try reducing TX depth and/or inline size.",
            // rdma-core's EFA provider and pingpong examples.
            "mlx5_0: efa_ah_create:123: Failed to create AH",
            "1/2: Couldn't read remote address",
            "rdma_resolve_route failed: Connection timed out (110)",
            "Unexpected CM event [10]",
            "Failed to resolve host: Name or service not known",
        ] {
            assert!(
                !set.match_line(line.as_bytes(), &mut out),
                "{line:?} fired {out:?}"
            );
        }
    }
}
