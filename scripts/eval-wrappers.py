#!/usr/bin/python3
"""Do the built-in triggers still fire when a collector wraps the line? (BENCHMARKS.md, "triggers")

    scripts/eval-wrappers.py BINARY DIR [-v]

DIR holds positives.tsv and negatives.tsv in the corpus format (tests/data/corpus, or a set of
your own). Each line is rewritten the way a log collector or launcher would hand it over
(containerd's CRI files, Docker's json-file, journald, `srun -l`, CRLF, pdsh, torchrun, Ray,
a whole line in colour, Python logging, `kubectl logs --prefix`, a JSON message field, a tab);
for each form, prints how many positives that fire with their class as given still do, and
how many negatives fire. -v lists the first misses of each form.
"""
import importlib.util, json, os, sys
if len(sys.argv) < 3:
    print(__doc__.strip())
    sys.exit(2)
BIN = sys.argv[1]
# The corpus loader and the runner of `triggers test` are eval-triggers.py's.
_spec = importlib.util.spec_from_file_location(
    "eval_triggers", os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval-triggers.py"))
_ev = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_ev)
def load(path): return [(c, line) for c, _, line in _ev.load(path)]
def fire(lines): return {n: {c for _, c in hits} for n, hits in _ev.fire(BIN, lines).items()}
W={
 "none": lambda l:l,
 "cri": lambda l:"2024-05-01T12:00:00.123456789Z stderr F "+l,
 "docker-json": lambda l:'{"log":'+json.dumps(l+"\n")+',"stream":"stderr","time":"2024-05-01T12:00:00.123456789Z"}',
 "journald": lambda l:"May 01 12:00:00 gpu-node-17 python[4242]: "+l,
 "srun-label": lambda l:"3: "+l,
 "crlf": lambda l:l+"\r",
 "pdsh": lambda l:"gpu-node-17: "+l,
 "elastic": lambda l:"[default3]:"+l,
 "ray": lambda l:"(RayTrainWorker pid=1234, ip=10.0.0.1) "+l,
 "ansi": lambda l:"\x1b[31m"+l+"\x1b[0m",
 "pylog": lambda l:"2024-05-01 12:00:00,123 - ERROR - "+l,
 "kubectl-prefix": lambda l:"[pod/train-worker-0/pytorch] "+l,
 "json-msg": lambda l:'{"level":"error","msg":'+json.dumps(l)+'}',
 "tab-prefix": lambda l:"\t"+l,
}
pos=load(os.path.join(sys.argv[2],"positives.tsv")); neg=load(os.path.join(sys.argv[2],"negatives.tsv"))
base=fire([l for _,l in pos])
baseok={i for i,(c,l) in enumerate(pos,1) if c in base.get(i,set())}
for name,f in W.items():
    g=fire([f(l) for _,l in pos])
    ok=[i for i in baseok if pos[i-1][0] in g.get(i,set())]
    miss=[i for i in baseok if pos[i-1][0] not in g.get(i,set())]
    gn=fire([f(l) for _,l in neg])
    print(f"{name:16} pos {len(ok)}/{len(baseok)}  neg fired {len(gn)}/{len(neg)}")
    if "-v" in sys.argv:
        for i in miss[:15]: print("   MISS",pos[i-1][0],repr(f(pos[i-1][1])[:220]), g.get(i))
        for i in list(gn)[:10]: print("   FALSE",gn[i],repr(f(neg[i-1][1])[:200]))
