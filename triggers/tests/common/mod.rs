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
