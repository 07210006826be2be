//! What the trigger tests share.

use tripcap_triggers::scan::{count_lines, Chunks};
use tripcap_triggers::TriggerSet;

/// The numbers (from 0) of the lines of `log` that the scan of whole chunks of
/// `chunk` bytes finds, as `tripcap triggers test` reads a log.
pub fn candidate_lines(set: &TriggerSet, log: &[u8], chunk: usize) -> Vec<usize> {
    let mut chunks = Chunks::new(log, chunk);
    let mut cache = set.scan_cache();
    let (mut found, mut ranges, mut before) = (Vec::new(), Vec::new(), 0);
    while let Some(chunk) = chunks.next_chunk().expect("reads") {
        ranges.clear();
        set.lines_that_may_fire(chunk, &mut cache, &mut ranges);
        let mut counted = 0;
        for r in &ranges {
            before += count_lines(&chunk[counted..r.start]);
            counted = r.start;
            found.push(before);
        }
        before += count_lines(&chunk[counted..]);
    }
    found
}

/// Panics, listing them, on the lines where a lazy set (the built-in packs, never
/// compiled whole) and the whole set answer differently: what fired, with which
/// pattern and groups, and whether `may_fire` let a firing line through.
pub fn assert_lazy_and_whole_agree(lines: &[Vec<u8>]) {
    let lazy = TriggerSet::new(tripcap_triggers::all_packs())
        .expect("packs compile")
        .with_lazy_lines(usize::MAX);
    let whole = TriggerSet::new_whole(tripcap_triggers::all_packs()).expect("packs compile");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut cache = lazy.scan_cache();
    let mut wrong = Vec::new();
    for line in lines {
        let line = line.as_slice();
        let fired = lazy.match_line(line, &mut a);
        whole.match_line(line, &mut b);
        if a != b {
            wrong.push(format!(
                "lazy {a:?} whole {b:?}: {:?}",
                String::from_utf8_lossy(line)
            ));
        } else if fired && !lazy.may_fire(line, &mut cache) {
            wrong.push(format!(
                "fires but may_fire says no: {:?}",
                String::from_utf8_lossy(line)
            ));
        }
    }
    assert!(lazy.lazy_counts().0 > 0, "the gate let nothing through");
    assert!(
        wrong.is_empty(),
        "{} of {} lines answered differently:
{}",
        wrong.len(),
        lines.len(),
        wrong.iter().take(40).cloned().collect::<Vec<_>>().join(
            "
"
        )
    );
}
