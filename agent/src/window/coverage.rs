//! How complete a window's capture is: the span it covers and, for each way
//! it falls short of what was asked, one sentence that says why and what to do.
//! A pure function of what the writer observed, tested without a ring or a file.

use crate::clock::rfc3339;

/// What the writer observed, as [`coverage`] needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Observed {
    /// The window: [start, end].
    pub(crate) start: i64,
    /// See `start`.
    pub(crate) end: i64,
    /// Earliest start a trigger asked for (before `start` when a later trigger
    /// asked to reach back further than the file already had).
    pub(crate) asked_start: i64,
    /// When the first trigger fired.
    pub(crate) first_trigger_at: Option<i64>,
    /// How far back the ring reached when the window opened.
    pub(crate) reaches_back_to: i64,
    /// Whether the ring had evicted blocks by then (else it had not started earlier).
    pub(crate) evicted: bool,
    /// The last real watermark the writer saw (the capture's end).
    pub(crate) last_watermark: i64,
    /// Packets dropped because every ring buffer was pinned.
    pub(crate) ring_full_drops: u64,
    /// Packets of compressed ring blocks that could not be decoded.
    pub(crate) undecoded: u64,
    /// Interfaces whose capture stopped: (name, when, why).
    pub(crate) stopped: Vec<(String, i64, String)>,
    /// Kernel and interface drops while the window was open.
    pub(crate) kernel_drops: u64,
    /// NIC discard counters that rose while the window was open: (which, how many).
    pub(crate) nic_discards: Vec<(String, u64)>,
}

/// The span a capture covers and why it falls short.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Coverage {
    /// First capture time the file is complete from.
    pub(crate) covered_start: i64,
    /// Last capture time the file is complete to.
    pub(crate) covered_end: i64,
    /// Why the capture is not complete; empty when it is.
    pub(crate) shortfall: Vec<String>,
}

fn seconds(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// The coverage of a window from what was observed.
pub(crate) fn coverage(o: &Observed) -> Coverage {
    // The ring's reach at open bounds the start; the last real watermark bounds
    // the end (a replay ending or the agent stopping early).
    let covered_start = o.start.max(o.reaches_back_to);
    let covered_end = o.end.min(o.last_watermark.max(covered_start));
    let mut shortfall = Vec::new();
    if o.asked_start < o.start {
        shortfall.push(format!(
            "a later trigger asked for packets from {} but the file had already started at {}",
            rfc3339(o.asked_start),
            rfc3339(o.start)
        ));
    }
    if covered_start > o.start {
        let at = o.first_trigger_at.unwrap_or(covered_start);
        let (what, fix) = if o.evicted {
            (
                "the ring reached back only to",
                "raise memory_limit (or max_age) or narrow the filter",
            )
        } else {
            (
                "tripcap started capturing at",
                "nothing before that was recorded",
            )
        };
        shortfall.push(format!(
            "{what} {} ({:.3} s before the trigger; the window asked for {:.3} s): {fix}",
            rfc3339(covered_start),
            seconds(at.saturating_sub(covered_start)),
            seconds(at.saturating_sub(o.start)),
        ));
    }
    if covered_end < o.end {
        shortfall.push(format!(
            "capture stopped at {} before the window's end {} (replay ended or agent stopped)",
            rfc3339(covered_end),
            rfc3339(o.end)
        ));
    }
    if o.ring_full_drops > 0 {
        shortfall.push(format!(
            "{} packets dropped because every ring buffer was held by captures being written (disk too slow?)",
            o.ring_full_drops
        ));
    }
    if o.undecoded > 0 {
        shortfall.push(format!(
            "{} packets of the ring's compressed blocks could not be read back and are missing (the log says why)",
            o.undecoded
        ));
    }
    for (name, at, why) in &o.stopped {
        if *at <= o.end {
            shortfall.push(format!(
                "capture on `{name}` stopped at {} ({why}): its packets after that are missing",
                rfc3339(*at)
            ));
        }
    }
    if o.kernel_drops > 0 {
        shortfall.push(format!(
            "the kernel dropped {} packets while the window was open: raise buffer_size or narrow the filter",
            o.kernel_drops
        ));
    }
    if !o.nic_discards.is_empty() {
        let total: u64 = o.nic_discards.iter().map(|(_, n)| n).sum();
        let which: Vec<String> = o
            .nic_discards
            .iter()
            .map(|(c, n)| format!("{c} +{n}"))
            .collect();
        shortfall.push(format!(
            "the NIC discarded {total} packets while the window was open ({}): they are in no capture; look for receive-buffer or PFC pressure on that port",
            which.join(", ")
        ));
    }
    Coverage {
        covered_start,
        covered_end,
        shortfall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn window() -> Observed {
        Observed {
            start: 100 * S,
            end: 160 * S,
            asked_start: 100 * S,
            first_trigger_at: Some(130 * S),
            reaches_back_to: 0,
            last_watermark: 200 * S,
            ..Observed::default()
        }
    }

    #[test]
    fn a_window_the_ring_fully_held_is_complete() {
        let c = coverage(&window());
        assert_eq!((c.covered_start, c.covered_end), (100 * S, 160 * S));
        assert!(c.shortfall.is_empty());
    }

    #[test]
    fn an_evicting_ring_says_to_raise_memory_and_a_young_one_says_it_started_late() {
        let mut o = window();
        o.reaches_back_to = 120 * S;
        o.evicted = true;
        let c = coverage(&o);
        assert_eq!(c.covered_start, 120 * S);
        assert!(
            c.shortfall[0].contains(
                "10.000 s before the trigger; the window asked for 30.000 s): raise memory_limit"
            ),
            "{:?}",
            c.shortfall
        );
        o.evicted = false;
        assert!(coverage(&o).shortfall[0].starts_with("tripcap started capturing at"));
    }

    #[test]
    fn an_early_stop_a_stopped_interface_and_drops_each_get_a_sentence() {
        let mut o = window();
        o.last_watermark = 150 * S;
        o.stopped = vec![
            ("eth1".into(), 140 * S, "device went down".into()),
            ("eth2".into(), 170 * S, "later".into()),
        ];
        o.kernel_drops = 3;
        o.ring_full_drops = 2;
        o.undecoded = 7;
        o.asked_start = 90 * S;
        let c = coverage(&o);
        assert_eq!(c.covered_end, 150 * S);
        assert_eq!(c.shortfall.len(), 6, "{:?}", c.shortfall);
        assert!(c.shortfall[0].starts_with("a later trigger asked for packets from"));
        assert!(c.shortfall[1].starts_with("capture stopped at"));
        assert!(c.shortfall[2].starts_with("2 packets dropped"));
        assert!(c.shortfall[3].starts_with("7 packets of the ring's compressed blocks"));
        assert!(c.shortfall[4].starts_with("capture on `eth1` stopped at"));
        assert!(c.shortfall[5].starts_with("the kernel dropped 3 packets"));
    }

    #[test]
    fn nic_discards_make_the_window_incomplete_and_say_which_counter() {
        let mut o = window();
        o.nic_discards = vec![
            ("mlx5_0 port 1 out_of_buffer".into(), 3),
            ("mlx5_0 port 1 port_rcv_discards".into(), 2),
        ];
        let c = coverage(&o);
        assert_eq!(
            c.shortfall,
            ["the NIC discarded 5 packets while the window was open (mlx5_0 port 1 out_of_buffer +3, mlx5_0 port 1 port_rcv_discards +2): they are in no capture; look for receive-buffer or PFC pressure on that port"]
        );
    }
}
