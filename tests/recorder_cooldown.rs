//! The recorder on a real ring and real files: cooldown and merging decide
//! how many captures a burst of firings makes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tripcap::capture::{IfaceCounters, InterfaceInfo, TsPrecision};
use tripcap::capture_file::pcapng::InterfaceDesc;
use tripcap::recorder::{Fired, Firing, Recorder, TriggerSpec};
use tripcap::ring::{BlockWriter, Ring, RingConfig, WATERMARK_END};
use tripcap::window::CaptureOutcome;

const S: i64 = 1_000_000_000;
const T0: i64 = 1_796_000_000 * S;

struct Feed {
    ring: Arc<Ring>,
    writer: Option<BlockWriter>,
    next: i64,
}

impl Feed {
    /// Push one packet every 10 ms up to `until` (exclusive), then seal.
    fn until(&mut self, until: i64) {
        while self.next < until {
            if self.writer.is_none() {
                self.writer = self.ring.take_block(0, None);
            }
            let w = self.writer.as_mut().expect("block");
            if !w.push(self.next, 60, &[0u8; 60]) {
                let full = self.writer.take().expect("writer");
                self.ring.seal(full);
                continue;
            }
            self.next += S / 100;
        }
        if let Some(w) = self.writer.take() {
            self.ring.seal(w);
        }
        self.ring.advance(0, until - 1);
    }
}

#[test]
fn cooldown_suppresses_and_merges_without_extending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = Ring::new(
        RingConfig {
            memory_limit: 16 << 20,
            block_size: 64 << 10,
            max_age: Duration::from_secs(600),
            prefault: 0,
        },
        1,
        T0 - 1,
    );
    let ifaces = Arc::new(vec![InterfaceInfo {
        desc: InterfaceDesc {
            name: "test0".into(),
            description: String::new(),
            linktype: 1,
            snaplen: 128,
            filter: String::new(),
        },
        precision: TsPrecision::Nano,
        counters: Arc::new(IfaceCounters::default()),
    }]);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let spec = TriggerSpec {
        name: "wd".into(),
        class: "nccl_timeout".into(),
        pre: Duration::from_secs(2),
        post: Duration::from_secs(2),
        cooldown: Duration::from_secs(30),
    };
    let rec = Recorder::new(
        Arc::clone(&ring),
        ifaces,
        dir.path().to_path_buf(),
        "host".into(),
        vec![spec],
        Duration::from_secs(600),
        tx,
    );
    let mut feed = Feed {
        ring: Arc::clone(&ring),
        writer: None,
        next: T0,
    };
    let fire = |rec: &Recorder, at: i64| {
        rec.fire(Firing {
            trigger: 0,
            at_ns: at,
            ..Firing::default()
        })
        .expect("fire")
    };

    feed.until(T0 + 10 * S);
    assert!(matches!(fire(&rec, T0 + 10 * S), Fired::Opened(_)));
    feed.until(T0 + 11 * S);
    assert!(
        matches!(fire(&rec, T0 + 11 * S), Fired::Merged(_)),
        "same trigger, window open, cooling: counted in it"
    );
    feed.until(T0 + 20 * S);
    assert_eq!(
        fire(&rec, T0 + 20 * S),
        Fired::Suppressed,
        "cooling and no window open"
    );
    feed.until(T0 + 45 * S);
    assert!(
        matches!(fire(&rec, T0 + 45 * S), Fired::Opened(_)),
        "after the cooldown"
    );
    feed.until(T0 + 60 * S);
    ring.advance_all(WATERMARK_END);
    rec.join();

    let mut reports = Vec::new();
    while let Ok(o) = rx.try_recv() {
        match o {
            CaptureOutcome::Written { report, pcapng, .. } => {
                assert_eq!(common::tshark_rows_any(&pcapng), report.packets as usize);
                reports.push(report);
            }
            CaptureOutcome::Failed { error, .. } => panic!("capture failed: {error}"),
        }
    }
    reports.sort_by_key(|r| r.window.asked_start_ns);
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].triggers.len(), 1);
    assert_eq!(reports[0].suppressed_matches, 1);
    assert_eq!(
        reports[0].window.asked_end_ns,
        T0 + 12 * S,
        "a cooling trigger does not extend the window"
    );
    assert_eq!(reports[0].packets, 401, "[8 s, 12 s] at 100 packets/s");
    assert_eq!(reports[1].window.asked_start_ns, T0 + 43 * S);
    assert_eq!(
        rec.stats()
            .suppressed
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
}
