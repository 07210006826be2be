#!/usr/bin/env bash
# Benchmark: upload throughput to Ceph RGW on loopback, `tripcap run` against
# `curl --upload-file` of the same file to a presigned PUT URL, in one run.
#
# Builds the release binary, then runs the ignored test
# `bench_s3_upload_against_curl` of tests/object_store.rs (release), which starts
# the tests' one-node Ceph RGW (tests/common/rgw.rs), writes a file of SIZE_MiB
# and, ROUNDS times, in an order that rotates each round: uploads it with curl;
# with `tripcap run` (the file as a capture unit in its output directory,
# `--upload-wait`) with parts_in_flight 4 (the default) and 1, timing the whole
# process and reading its peak RSS; and times the agent's hashing pre-pass alone.
# Every object is checked (size, MD5 or SHA-256) before it counts. Prints the
# medians, MB/s, the ratio curl/tripcap (target >= 0.9) and peak RSS against
# part_size x parts_in_flight. Needs ceph-mon ceph-osd radosgw ceph-common and
# curl (as .ci/run installs); SIZE_MiB at most 1536 (RGW's memstore holds 2 GiB).
#
#   scripts/bench-s3.sh [SIZE_MiB] [ROUNDS]
#
# CARGO overrides the cargo command (e.g. CARGO="flock /tmp/lock cargo").
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${1:-1024}
ROUNDS=${2:-3}
read -r -a CARGO <<<"${CARGO:-cargo}"
"${CARGO[@]}" build --release -q
LOG=$(mktemp /tmp/tripcap-bench-s3.XXXXXX.log)
trap 'rm -f "$LOG"' EXIT
TRIPCAP_BENCH_S3_MIB=$SIZE_MIB TRIPCAP_BENCH_S3_ROUNDS=$ROUNDS \
  "${CARGO[@]}" test --release -q --test object_store -- --ignored --exact --nocapture \
  bench::bench_s3_upload_against_curl 2>&1 | tee "$LOG"
echo
sed -n '/^== summary/,$p' "$LOG" | grep -v "^test \|^$\|test result\|^\.$"
