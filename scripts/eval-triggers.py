#!/usr/bin/python3
"""How well the built-in triggers do on lines of your own (BENCHMARKS.md, "triggers").

    scripts/eval-triggers.py BINARY DIR [-v]

DIR holds positives.tsv and negatives.tsv in the corpus format (header row; columns class,
source, line; see tests/data/README.md). Prints, per class, how many positive lines fire a
trigger of their class, and how many negative lines fire anything; -v lists each miss and
each false firing. Runs `BINARY triggers test --json` once per file.
"""
import json, subprocess, sys, collections, tempfile, os


def load(path):
    """The rows of a corpus-format TSV: (class, source, line)."""
    rows = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        next(f)
        for l in f:
            l = l.rstrip("\n")
            if not l: continue
            c, s, line = l.split("\t", 2)
            rows.append((c, s, line))
    return rows


def fire(bin_, lines):
    """`bin_ triggers test --json` over `lines`: line number -> [(trigger, class)]."""
    with tempfile.NamedTemporaryFile("w", delete=False, encoding="utf-8", errors="surrogateescape", newline="") as t:
        for line in lines: t.write(line + "\n")
    out = subprocess.run([bin_, "triggers", "test", "--json", t.name], capture_output=True, text=True).stdout
    os.unlink(t.name)
    got = collections.defaultdict(list)
    for l in out.splitlines():
        if l.startswith("{"):
            j = json.loads(l); got[j["line_no"]].append((j["trigger"], j["class"]))
    return got


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip())
        sys.exit(2)
    bin_, d = sys.argv[1], sys.argv[2]
    pos = load(os.path.join(d, "positives.tsv")); neg = load(os.path.join(d, "negatives.tsv"))
    g = fire(bin_, [line for _, _, line in pos])
    per = collections.Counter(); ok = collections.Counter(); miss = []
    for i, (c, s, line) in enumerate(pos, 1):
        per[c] += 1
        classes = {cl for _, cl in g.get(i, [])}
        if c in classes: ok[c] += 1
        else: miss.append((c, g.get(i), line[:200]))
    tot = sum(per.values()); hit = sum(ok.values())
    print(f"positives: {hit}/{tot} fire with their class ({100*hit/tot:.1f} %)")
    for c in sorted(per): print(f"  {c}: {ok[c]}/{per[c]}")
    gn = fire(bin_, [line for _, _, line in neg])
    print(f"negatives: {len(gn)}/{len(neg)} fired")
    if "-v" in sys.argv:
        for m in miss: print("MISS", m)
        for i in sorted(gn): print("FALSE", gn[i], neg[i-1][2][:200])


if __name__ == "__main__":
    main()
