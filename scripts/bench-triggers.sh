#!/usr/bin/env bash
# Scan throughput of every built-in trigger pack vs `grep -E -f` of the same
# patterns, over a log made of the test corpus lines (tests/data/corpus) (BENCHMARKS.md, "triggers").
#
#   scripts/bench-triggers.sh [SIZE_MB] [RUNS]      (default 200 MB, 5 runs)
#
# Both tools read the same file once and write what fires to a file:
# tripcap one JSON object per firing (`triggers test --json`), grep each matching line.
# grep cannot take the Rust regex syntax as is, so the patterns are translated
# (see translate() below) and the script checks that both select the same lines.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-200}
RUNS=${2:-5}
CORPUS=${CORPUS:-tests/data/corpus}
WORK=${WORK:-$(mktemp -d /tmp/tripcap-bench.XXXXXX)}
BIN=${BIN:-target/release/tripcap}
[ -x "$BIN" ] || cargo build --release --bin tripcap >&2

LOG="$WORK/corpus.log"
if [ ! -s "$LOG" ] || [ "$(stat -c %s "$LOG")" -lt $((SIZE_MB * 1000000)) ]; then
  { for f in "$CORPUS"/positives.tsv "$CORPUS"/negatives.tsv "$CORPUS"/ambiguous.tsv; do
      tail -n +2 "$f" | cut -f3-
    done
    cat "$CORPUS"/perftest/*.txt
  } > "$WORK/lines.txt"
  : > "$LOG"
  while [ "$(stat -c %s "$LOG")" -lt $((SIZE_MB * 1000000)) ]; do
    for _ in $(seq 200); do cat "$WORK/lines.txt"; done >> "$LOG"
  done
  truncate -s $((SIZE_MB * 1000000)) "$LOG"
  # end on a whole line
  head -c $((SIZE_MB * 1000000)) "$LOG" | sed '$d' > "$LOG.tmp" && mv "$LOG.tmp" "$LOG"
fi

"$BIN" triggers list --patterns > "$WORK/patterns.rust"
# Rust regex → POSIX ERE (GNU grep): drop flags and group names, lazy → greedy
# (same lines match), Perl classes → POSIX classes, (?i) and (?i:…) → [xX] per letter.
python3 - "$WORK/patterns.rust" > "$WORK/patterns.ere" <<'PY'
import re, sys
def fold_groups(p):
    # `(?i:…)` groups: `(` and [xX] per letter inside (outside brackets and escapes).
    while "(?i:" in p:
        start = p.index("(?i:")
        out, i, depth, inb = [], start + 4, 1, False
        while i < len(p) and depth:
            c = p[i]
            if c == "\\":
                out.append(p[i:i+2]); i += 2; continue
            if c == "[": inb = True
            elif c == "]": inb = False
            elif c == "(" and not inb: depth += 1
            elif c == ")" and not inb: depth -= 1
            out.append("[" + c.lower() + c.upper() + "]" if c.isalpha() and not inb else c)
            i += 1
        p = p[:start] + "(" + "".join(out) + p[i:]
    return p
def translate(p):
    p = p.replace("(?-u)", "").replace("\\x1b", "\x1b")
    icase = p.startswith("(?i)")
    if icase: p = p[4:]
    p = re.sub(r"\(\?P<\w+>", "(", p).replace("(?:", "(")
    p = fold_groups(p)
    p = p.replace("[^\\r\\n]", ".").replace("[^\\n]", ".")
    # A bounded gap `{0,N}` makes GNU grep's DFA blow up (minutes for 50 MB); `*`
    # selects a superset, and the check below makes sure it selects the same lines.
    p = re.sub(r"(?<!\\)\{0,\d+\}\??", "*", p)
    out, i, inb = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            n = p[i+1]
            if inb:
                # `\r`, `\n` never occur inside a line; in ERE brackets `\` is literal, so
                # `[^'\r\n]` would exclude backslash, r and n.
                out.append({"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]", "]": "]", "r": "", "n": "", "t": "\t"}.get(n, "\\" + n if n not in ".-" else n))
            else:
                out.append({"d": "[0-9]", "w": "[[:alnum:]_]", "s": "[[:space:]]", "S": "[^[:space:]]"}.get(n, "\\" + n))
            i += 2; continue
        if c == "[" and not inb:
            inb = True; out.append(c)
            if p[i+1:i+2] == "^": out.append("^"); i += 1
            i += 1; continue
        if c == "]" and inb:
            inb = False; out.append(c); i += 1; continue
        if c in "*+?" and p[i+1:i+2] == "?" and not inb:
            out.append(c); i += 2; continue
        if icase and c.isalpha() and not inb:
            out.append("[" + c.lower() + c.upper() + "]"); i += 1; continue
        # (?i) inside a bracket: `a-f` gains `A-F`, a letter its other case.
        if icase and inb and c.isalpha() and p[i+1:i+2] == "-" and p[i+2:i+3].isalpha():
            out.append(c + "-" + p[i+2] + c.swapcase() + "-" + p[i+2].swapcase()); i += 3; continue
        if icase and inb and c.isalpha():
            out.append(c + c.swapcase()); i += 1; continue
        out.append(c); i += 1
    # (`[^\]]` became `[^]]`: a `]` first in a bracket is literal in ERE)
    return "".join(out)
for line in open(sys.argv[1]):
    print(translate(line.rstrip("\n")))
PY

# Same lines selected?
T_LINES=$("$BIN" triggers test --json "$WORK/lines.txt" 2>/dev/null | python3 -c 'import sys,json; print(len({json.loads(l)["line_no"] for l in sys.stdin}))')
G_LINES=$(LC_ALL=C grep -E -c -f "$WORK/patterns.ere" "$WORK/lines.txt")
echo "corpus lines selected: tripcap $T_LINES, grep $G_LINES (of $(wc -l < "$WORK/lines.txt"); grep has no \`unless\`, so it also selects the lines a pack vetoes)"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# Output goes to a file: GNU grep stops at the first match when stdout is /dev/null.
time_it() { local s e; s=$(date +%s.%N); "$@" > "$WORK/out" 2>/dev/null || true; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
cat "$LOG" > /dev/null   # warm the page cache
T=(); G=()
for _ in $(seq "$RUNS"); do
  T+=("$(time_it "$BIN" triggers test --json "$LOG")")
  G+=("$(time_it env LC_ALL=C grep -E -f "$WORK/patterns.ere" "$LOG")")
done
TM=$(printf '%s\n' "${T[@]}" | median)
GM=$(printf '%s\n' "${G[@]}" | median)
MB=$(echo "$(stat -c %s "$LOG") / 1000000" | bc -l)
printf 'log: %.0f MB, %d lines, %d patterns; %d runs each (median)\n' "$MB" "$(wc -l < "$LOG")" "$(wc -l < "$WORK/patterns.ere")" "$RUNS"
printf 'tripcap triggers test --json: %.2f s  (%.0f MB/s)  runs: %s\n' "$TM" "$(echo "$MB / $TM" | bc -l)" "${T[*]}"
printf 'LC_ALL=C grep -E -f:          %.2f s  (%.0f MB/s)  runs: %s\n' "$GM" "$(echo "$MB / $GM" | bc -l)" "${G[*]}"
printf 'ratio (grep time / tripcap time): %.2fx\n' "$(echo "$GM / $TM" | bc -l)"
