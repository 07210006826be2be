//! Built-in trigger packs: `nccl` (with nccl-tests), `pytorch` (with Gloo, the
//! c10d store and the ML frameworks that wrap NCCL), `perftest`, `verbs` (rdma-core providers, verbs applications
//! such as Mooncake's transfer engine, NIXL, MoRI and GPI-2, the kernel RDMA drivers mlx5,
//! EFA, bnxt_re and irdma), `ucx`, `libfabric`, `nvmeof` (SPDK and the Linux
//! NVMe-oF RDMA drivers), `mpi` (Open MPI's openib BTL, bml/r2 and UCX PML;
//! MPICH's ch4 OFI and UCX netmods), `nccl-ofi` (the NCCL OFI net plugin,
//! aws-ofi-nccl) and `generic` (for programs none of those knows: a failed
//! verbs, rdma_cm or libfabric call named by whatever program prints it, a queue
//! pair gone to error; its triggers are fallbacks, see
//! [`crate::TriggerDef::fallback`]).
//!
//! Each pack is a table of `Builtin` rows turned into [`TriggerDef`]s by
//! [`pack`], one file per pack. **Every pattern is written from the format
//! strings of the program that prints the line** (`triggers/formats/*.tsv`, read
//! in the sources across the releases in use; see [`crate::formats`]) and cites
//! the rows it covers, so [`TriggerDef::sources`] and `tripcap triggers list` say
//! where each comes from. Two tests hold the packs to that: `tests/formats.rs`
//! generates lines from every format string (varied values, logger headers,
//! launcher prefixes) and requires each failure wording to fire one trigger of
//! its class through a pattern that cites it, and as many look-alikes (success,
//! progress, configuration from the same sources) to fire nothing;
//! `tests/corpus.rs` checks real lines from public bug reports
//! (`tests/data/corpus`). Precision is the contract: a built-in trigger fires
//! only on message stems that appear in failures, never on generic words
//! (`timeout`, `fail`, `WARN`) that healthy logs also print. The `generic` pack
//! keeps to it too: its words are the API's own names (`ibv_post_send`,
//! `rdma_resolve_addr`, `fi_getinfo`) next to a failure, not a failure word alone.
//!
//! How the packs are shaped:
//! - **One trigger per failure kind, many stems per trigger.** One failure is
//!   logged several times (the watchdog line, `Some NCCL operations have
//!   failed`, `To avoid data inconsistency…`): putting those stems in one
//!   trigger lets its cooldown turn them into one incident. The first pattern of
//!   a trigger is the most informative one (it has the most capture groups).
//! - **One line, one class.** Every trigger has one `class`, and a line that
//!   quotes another failure is kept out of the other trigger with `unless`
//!   (`NCCL communicator was aborted … Watchdog caught collective operation
//!   timeout` is the abort, not a second timeout; a retry-exceeded completion is
//!   not also a generic completion error). The corpus test checks that every
//!   positive line fires exactly one built-in trigger.
//! - **Matched anywhere, bytes, ASCII classes.** Wrappers prefix lines (mpirun
//!   `[1,12]<stdout>:`, torchrun `[rank0]:`, Ray, pdsh, timestamps, ANSI codes),
//!   so no pattern is anchored at the start. Every pattern is compiled with
//!   `(?-u)` so that `.`, `\w`, `\d` and `\s` work on bytes and a line that is
//!   not valid UTF-8 still fires.
//! - **Windows.** Retry-exceeded triggers (NET/IB `status=12`/`error 12`, UCX
//!   and verbs `transport retry counter exceeded`, perftest completion errors,
//!   which are usually status 12) keep [`RETRY_EXCEEDED_PRE`] (60 s) before the
//!   line: the error is reported after the IB retry budget is spent (about
//!   4.3 s × 7 retries with `NCCL_IB_TIMEOUT=20`), ~30 s after the last ACK.
//!   Everything else keeps the default 30 s before and after; cooldown 60 s.
//!
//! Capture groups use one vocabulary across packs, so the agent can put them in
//! a capture's metadata without knowing the trigger: `rank`, `peer`, `port`,
//! `hca`, `qp`, `status`, `vendor_err`, `syndrome`, `seq`, `op`, `timeout_ms`,
//! `ran_for_ms`, `stuck_s`, `error`, `event`, `retcode`.
//!
//! ## Ambiguous lines (`ambiguous.tsv`): none fires
//! The built-in packs deliberately fire on none of them; `tests/corpus.rs`
//! pins this. Why, by kind:
//! - `error_context` (`NCCL INFO transport/net_ib.cc:368 -> 2`, UCX `RC QP …
//!   wqe[0]: SEND` dumps, `Last error:`, stack frames, `preparing to dump debug
//!   info`): the propagation of an error whose WARN line already fired; firing
//!   on them would only repeat the incident, and `-> N` also appears on
//!   recoverable paths.
//! - `ambiguous_teardown_info` (`Connection closed by localRank`, `Abort
//!   COMPLETE`, `ProcessGroupNCCL destroyed communicator`): normal shutdown
//!   prints them too.
//! - `ambiguous_warn_nonfatal` (FastSocket `Maximum retry reached`, UCX `IB
//!   Async event … was flushed`): NCCL and UCX recover from them; NVSHMEM's `init
//!   failed for transport: IBGDA` is one transport failing while it tries the next
//!   (`Unable to initialize any transports` fires when all do). libibverbs'
//!   `no userspace device-specific driver found for …` names one device of a
//!   node that may have others (a look-alike row in the format table).
//! - `ambiguous_retry_info` (`socketPollConnect: connect returned …, retrying
//!   (1/34)`; torchelastic's `has failed to send a keep-alive heartbeat to the
//!   rendezvous`, sent again each interval): a retry in progress; the WARN after
//!   the last retry (or `RendezvousTimeoutError`) fires.
//! - `ambiguous_perftest_warning` (`Requested SQ size might be too big`): a hint
//!   printed before `Couldn't create IB resources`, which fires.
//! - `ambiguous_process_exit` (torchrun `ChildFailedError`, `exitcode: -6`,
//!   `SIGTERM`): the launcher reporting a death whose cause was logged (and fired)
//!   by the rank; users who only see launcher logs can add a custom trigger.

use std::time::Duration;

use crate::colour;
use crate::def::{TriggerDef, DEFAULT_COOLDOWN, DEFAULT_POST, DEFAULT_PRE};

mod generic;
mod libfabric;
mod mpi;
mod nccl;
mod nccl_ofi;
mod nvmeof;
mod perftest;
mod pytorch;
mod ucx;
mod verbs;

/// Window kept before retry-exceeded triggers (the error arrives ~30 s after
/// the last ACK).
pub const RETRY_EXCEEDED_PRE: Duration = Duration::from_secs(60);

/// Names of the built-in packs, in the order [`all_packs`] concatenates them.
pub const PACK_NAMES: &[&str] = &[
    "nccl",
    "pytorch",
    "perftest",
    "verbs",
    "ucx",
    "libfabric",
    "nvmeof",
    "mpi",
    "nccl-ofi",
    "generic",
];

/// One built-in pack, for `tripcap triggers list`.
#[derive(Debug, Clone, PartialEq)]
pub struct PackInfo {
    /// Pack name as accepted by [`pack`].
    pub name: &'static str,
    /// One sentence on what the pack watches.
    pub summary: &'static str,
    /// Its triggers, as [`pack`] returns them (each has `class`, `description`
    /// and `example`).
    pub triggers: Vec<TriggerDef>,
}

/// The triggers of built-in pack `name`, or `None` if no pack has that name
/// (see [`PACK_NAMES`]).
pub fn pack(name: &str) -> Option<Vec<TriggerDef>> {
    let table = table(name)?;
    Some(table.defs())
}

/// Every built-in trigger, packs in [`PACK_NAMES`] order. Names are unique
/// across packs, so the result is a valid [`crate::TriggerSet`].
pub fn all_packs() -> Vec<TriggerDef> {
    PACK_NAMES
        .iter()
        .filter_map(|n| pack(n))
        .flatten()
        .collect()
}

/// Every pack with its triggers, for listing.
pub fn describe() -> Vec<PackInfo> {
    PACK_NAMES
        .iter()
        .filter_map(|n| {
            let table = table(n)?;
            Some(PackInfo {
                name: table.name,
                summary: table.summary,
                triggers: table.defs(),
            })
        })
        .collect()
}

/// The format rows (`triggers/formats/*.tsv` ids) each pattern of built-in trigger
/// `name` cites, one list per pattern in pattern order; empty for an unknown name.
pub fn citations(name: &str) -> Vec<&'static [&'static str]> {
    PACK_NAMES
        .iter()
        .filter_map(|n| table(n))
        .flat_map(|t| t.rows.iter())
        .find(|b| b.name == name)
        .map(|b| b.patterns.iter().map(|p| p.from).collect())
        .unwrap_or_default()
}

/// A pack as written in its file.
struct Table {
    name: &'static str,
    summary: &'static str,
    rows: &'static [Builtin],
    /// Which triggers of the pack are [`TriggerDef::fallback`]s.
    fallbacks: Fallbacks,
}

/// Which triggers of a pack are [`TriggerDef::fallback`]s.
#[derive(Clone, Copy)]
enum Fallbacks {
    /// None of them.
    None,
    /// Every one (the `generic` pack).
    All,
    /// The ones named.
    Only(&'static [&'static str]),
}

impl Fallbacks {
    fn has(self, name: &str) -> bool {
        match self {
            Fallbacks::None => false,
            Fallbacks::All => true,
            Fallbacks::Only(names) => names.contains(&name),
        }
    }
}

/// One built-in trigger as written in this file.
struct Builtin {
    name: &'static str,
    class: &'static str,
    /// Seconds kept before the line.
    pre_s: u64,
    description: &'static str,
    /// A line of `tests/data/corpus/positives.tsv` this trigger fires on.
    example: &'static str,
    patterns: &'static [Pat],
    unless: &'static [&'static str],
}

/// One pattern and the format rows (`triggers/formats/*.tsv` ids) it was written from.
struct Pat {
    re: &'static str,
    from: &'static [&'static str],
}

/// A pattern written from the format rows `from`.
const fn pat(re: &'static str, from: &'static [&'static str]) -> Pat {
    Pat { re, from }
}

impl Table {
    fn defs(&self) -> Vec<TriggerDef> {
        self.rows
            .iter()
            .map(|b| b.to_def(self.fallbacks.has(b.name)))
            .collect()
    }
}

impl Builtin {
    fn to_def(&self, fallback: bool) -> TriggerDef {
        let bytes = |p: &&str| format!("(?-u){}", colour::tolerate(p));
        TriggerDef {
            name: self.name.to_string(),
            class: self.class.to_string(),
            patterns: self.patterns.iter().map(|p| bytes(&p.re)).collect(),
            cites: self.patterns.iter().map(|p| p.from).collect(),
            unless: self.unless.iter().map(bytes).collect(),
            pre: Duration::from_secs(self.pre_s),
            post: DEFAULT_POST,
            cooldown: DEFAULT_COOLDOWN,
            description: self.description.to_string(),
            example: self.example.to_string(),
            fallback,
        }
    }
}

fn table(name: &str) -> Option<&'static Table> {
    [
        &generic::GENERIC,
        &nccl::NCCL,
        &pytorch::PYTORCH,
        &perftest::PERFTEST,
        &verbs::VERBS,
        &ucx::UCX,
        &libfabric::LIBFABRIC,
        &nvmeof::NVMEOF,
        &mpi::MPI,
        &nccl_ofi::NCCL_OFI,
    ]
    .into_iter()
    .find(|t| t.name == name)
}

const PRE: u64 = DEFAULT_PRE.as_secs();
const RETRY_PRE: u64 = RETRY_EXCEEDED_PRE.as_secs();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LineMatch, TriggerSet};

    #[test]
    fn every_pack_compiles_and_names_are_unique() {
        for name in PACK_NAMES {
            let defs = pack(name).expect("listed pack exists");
            assert!(!defs.is_empty(), "{name}");
            TriggerSet::new(defs).unwrap_or_else(|e| panic!("pack {name}: {e}"));
        }
        let set = TriggerSet::new(all_packs()).expect("all packs together");
        assert_eq!(
            set.defs().len(),
            describe().iter().map(|p| p.triggers.len()).sum::<usize>()
        );
        assert!(pack("nope").is_none());
    }

    #[test]
    fn named_fallbacks_exist_and_stand_back_for_a_specific_trigger() {
        for table in PACK_NAMES.iter().filter_map(|n| table(n)) {
            if let Fallbacks::Only(names) = table.fallbacks {
                for name in names {
                    assert!(
                        table.rows.iter().any(|b| b.name == *name),
                        "pack {}: no trigger `{name}` to be a fallback",
                        table.name
                    );
                }
            }
        }
        let defs = all_packs();
        let is_fallback = |name: &str| defs.iter().any(|d| d.name == name && d.fallback);
        assert!(is_fallback("nccl-error-string"));
        assert!(!is_fallback("pytorch-nccl-error"));
        let set = TriggerSet::new(defs.clone()).expect("valid");
        let mut out = Vec::new();
        let fired = |line: &[u8], out: &mut Vec<LineMatch>| -> Vec<String> {
            set.match_line(line, out);
            out.iter().map(|m| defs[m.trigger].name.clone()).collect()
        };
        // The result string alone: the fallback fires.
        assert_eq!(
            fired(b"RuntimeError: unhandled system error", &mut out),
            vec!["nccl-error-string"]
        );
        // Quoted by a wrapper with its own trigger: that one alone.
        let wrapped = fired(
            b"RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3",
            &mut out,
        );
        assert_eq!(wrapped.len(), 1, "{wrapped:?}");
        assert_ne!(wrapped[0], "nccl-error-string");
    }

    /// Wrappers can put a colour code right before the text (`\x1b[36mconnect() timed
    /// out`). Every built-in example still fires its trigger with one inserted right
    /// before the word its matching pattern starts on.
    #[test]
    fn a_colour_code_before_the_first_word_still_fires() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        let mut tried = 0;
        for (i, def) in set.defs().iter().enumerate() {
            let line = def.example.as_bytes();
            let Some(at) = def.patterns.iter().find_map(|p| {
                let m = regex::bytes::Regex::new(p).expect("valid").find(line)?;
                Some(m.start())
            }) else {
                panic!("{}: no pattern matches its example", def.name)
            };
            let word = |j: usize| {
                line.get(j)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            };
            if !word(at) || (at > 0 && word(at - 1)) {
                continue; // The match does not open on a word.
            }
            let mut coloured = line[..at].to_vec();
            coloured.extend_from_slice(b"\x1b[1;31m");
            coloured.extend_from_slice(&line[at..]);
            assert!(
                set.match_line(&coloured, &mut out) && out.iter().any(|m| m.trigger == i),
                "{}: {:?}",
                def.name,
                String::from_utf8_lossy(&coloured)
            );
            tried += 1;
        }
        assert!(tried >= 50, "only {tried} examples open on a word");
    }

    #[test]
    fn every_example_fires_its_own_trigger_first() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        for (i, def) in set.defs().iter().enumerate() {
            assert!(
                !def.example.is_empty() && !def.description.is_empty(),
                "{}",
                def.name
            );
            assert!(
                set.match_line(def.example.as_bytes(), &mut out),
                "{} example does not fire",
                def.name
            );
            assert_eq!(out[0].trigger, i, "{} example fires {:?}", def.name, out);
        }
    }

    #[test]
    fn retry_exceeded_and_deepep_timeouts_keep_a_longer_pre_window() {
        for def in all_packs() {
            let expect = if def.name.contains("retry-exceeded")
                || def.name == "perftest-completion-error"
                || def.name == "libfabric-completion-error"
            {
                RETRY_EXCEEDED_PRE
            } else if def.name == "deepep-timeout" {
                // DeepEP waits 100 s before it says so.
                Duration::from_secs(120)
            } else {
                DEFAULT_PRE
            };
            assert_eq!(def.pre, expect, "{}", def.name);
            assert_eq!(def.post, DEFAULT_POST, "{}", def.name);
            assert_eq!(def.cooldown, DEFAULT_COOLDOWN, "{}", def.name);
        }
    }

    #[test]
    fn groups_carry_the_useful_values() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        let groups = |line: &str, out: &mut Vec<crate::LineMatch>| {
            assert!(set.match_line(line.as_bytes(), out), "{line}");
            let name = set.defs()[out[0].trigger].name.clone();
            (name, out[0].groups.clone())
        };
        let get = |g: &[(String, String)], k: &str| {
            g.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };

        let (name, g) = groups("2025-11-09 15:39:31.043 +08:00 [2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:2451 NCCL WARN NET/IB: Got completion from peer 172.16.12.34<38081> with status=4 opcode=0 len=0 vendor err 83 (Send) hca mlx5_ib0", &mut out);
        assert_eq!(name, "nccl-ib-completion-error");
        assert_eq!(get(&g, "peer").as_deref(), Some("172.16.12.34"));
        assert_eq!(get(&g, "status").as_deref(), Some("4"));
        assert_eq!(get(&g, "vendor_err").as_deref(), Some("83"));
        assert_eq!(get(&g, "hca").as_deref(), Some("mlx5_ib0"));

        let (name, g) = groups("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f", &mut out);
        assert_eq!(name, "nccl-ib-retry-exceeded");
        assert_eq!(get(&g, "status").as_deref(), Some("12"));
        assert_eq!(get(&g, "port").as_deref(), Some("54862"));

        let (name, g) = groups("[rank4]:[E226 11:16:37.104512039 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5653, OpType=ALLREDUCE, NumelIn=58720256, NumelOut=58720256, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.", &mut out);
        assert_eq!(name, "pytorch-nccl-timeout");
        for (k, v) in [
            ("rank", "4"),
            ("seq", "5653"),
            ("op", "ALLREDUCE"),
            ("timeout_ms", "600000"),
            ("ran_for_ms", "600011"),
        ] {
            assert_eq!(get(&g, k).as_deref(), Some(v), "{k}");
        }

        let (name, g) = groups("CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10", &mut out);
        assert_eq!(name, "verbs-retry-exceeded");
        assert_eq!(get(&g, "qp").as_deref(), Some("0x2c10"));

        let (name, g) = groups("[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)", &mut out);
        assert_eq!(name, "ucx-retry-exceeded");
        assert_eq!(get(&g, "hca").as_deref(), Some("mlx5_0"));
    }

    #[test]
    fn invalid_utf8_around_a_stem_still_fires() {
        let set = TriggerSet::new(all_packs()).expect("valid");
        let mut out = Vec::new();
        let line = b"\x1b[36m\xff(RayWorkerWrapper pid=1) \xfe NCCL WARN Call to ibv_create_qp failed \xc3";
        assert!(set.match_line(line, &mut out));
        assert_eq!(set.defs()[out[0].trigger].name, "nccl-ibverbs-call-failed");
    }
}
