#!/usr/bin/env python3
"""mutate.py: merges from lawful families (sums, products, maxima, the
online softmax's rescale, affine maps, max-plus pairs, ties broken by
index), each with parts changed at random, checked by `assoc check
--json`: a law the prover proved must hold in every trial, and one it
disproved must fail a trial.  Prints each disagreement and a count of
the (law, trial verdict, proof status) combinations seen; exit 1 on a
disagreement.  tests/prove/mutants/ holds a few of each combination.

    python3 tests/prove/mutate.py [SEED [COUNT [DIR]]]   (defaults 1 100 build/mutants)
"""
import collections
import json
import os
import random
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ASSOC = os.environ.get("ASSOC", os.path.join(ROOT, "build", "assoc"))

# (state type, merge by field, identity by field): each lawful as written
FAMILIES = [
    ("f32", {"x": "a.x + b.x"}, {"x": "0"}),
    ("f32", {"x": "a.x + b.x + a.x * b.x"}, {"x": "0"}),
    ("f32", {"x": "a.x + b.x - 1"}, {"x": "1"}),
    ("f32", {"x": "max(a.x, b.x)"}, {"x": "-inf"}),
    ("f32", {"x": "min(a.x, b.x) + 0"}, {"x": "inf"}),
    ("f32", {"x": "a.x * b.x"}, {"x": "1"}),
    ("f32", {"x": "b.x"}, {"x": "0"}),
    ("f32", {"x": "a.x"}, {"x": "0"}),
    ("f32", {"x": "max(a.x, b.x)", "y": "where(a.x > b.x, a.y, where(a.x < b.x, b.y, a.y + b.y))"},
     {"x": "-inf", "y": "0"}),
    ("f32", {"x": "max(a.x, b.x)", "y": "a.y * exp(a.x - x) + b.y * exp(b.x - x)"}, {"x": "-inf", "y": "0"}),
    ("f32", {"x": "a.x * b.x", "y": "a.y * b.x + b.y"}, {"x": "1", "y": "0"}),
    ("f32", {"x": "a.x + b.x", "y": "max(a.y, a.x + b.y)"}, {"x": "0", "y": "-inf"}),
    ("f32", {"x": "a.x + b.x", "y": "a.y + b.y + a.x * b.x"}, {"x": "0", "y": "0"}),
    ("i32", {"x": "a.x + b.x"}, {"x": "0"}),
    ("i32", {"x": "max(a.x, b.x)"}, {"x": "-2147483647"}),
    ("i32", {"x": "a.x * b.x"}, {"x": "1"}),
    ("i32", {"x": "a.x + b.x", "y": "where(a.y != 0, a.y, b.y)"}, {"x": "0", "y": "0"}),
    ("i32", {"x": "min(a.x, b.x)", "y": "where(a.x < b.x, a.y, where(b.x < a.x, b.y, min(a.y, b.y)))"},
     {"x": "2147483647", "y": "2147483647"}),
    ("i32", {"x": "a.x + b.x", "y": "max(a.y, a.x + b.y)", "z": "max(b.z, b.x + a.z)",
             "w": "max(max(a.w, b.w), a.z + b.y)"}, {"x": "0", "y": "-1000000", "z": "-1000000", "w": "-1000000"}),
]


def mutations(rng):
    c = lambda: rng.choice(["0", "1", "2", "-1", "3", "0.5"])
    return [
        lambda e: e,
        lambda e: e,
        lambda e: e.replace("a.x", "b.x", 1),
        lambda e: e.replace("+", "-", 1),
        lambda e: e.replace("max", "min", 1),
        lambda e: e.replace(">", ">=", 1),
        lambda e: "(%s) + %s" % (e, c()),
        lambda e: "(%s) * %s" % (e, c()),
        lambda e: "max(%s, %s)" % (e, c()),
        lambda e: "min(%s, %s)" % (e, c()),
        lambda e: "abs(%s)" % e,
        lambda e: e.replace("a.y", "b.y", 1),
    ]


def spec(rng, i):
    ty, merge, ident = rng.choice(FAMILIES)
    merge, ident, muts = dict(merge), dict(ident), mutations(rng)
    for f in merge:
        if rng.random() < 0.5:
            merge[f] = rng.choice(muts)(merge[f])
    if rng.random() < 0.3:
        f = rng.choice(list(ident))
        ident[f] = rng.choice(["0", "1", "-1", ident[f]])
    fields = list(merge)
    lift = {f: "v" if k == 0 else rng.choice(["v", "1", "0", "j" if ty == "i32" else "v * v"])
            for k, f in enumerate(fields)}
    if ty == "i32":
        merge = {f: e.replace("0.5", "2").replace("exp", "abs") for f, e in merge.items()}
    assume = "assume: v >= -1000 && v <= 1000\n" if ty == "i32" and rng.random() < 0.7 else ""
    join = lambda d: ", ".join("%s: %s" % (f, d[f]) for f in fields)
    return ("carrier: mutant%d\nelement: {v: %s}\n%sstate: {%s}\nidentity: {%s}\nlift: {%s}\nmerge:\n%slaws: %s\n" % (
        i, ty, assume, ", ".join("%s: %s" % (f, ty) for f in fields), join(ident), join(lift),
        "".join("  %s: %s\n" % (f, merge[f]) for f in fields), rng.choice(["[]", "[commutative]"])))


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    out = sys.argv[3] if len(sys.argv) > 3 else os.path.join(ROOT, "build", "mutants")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    seen, bad = collections.Counter(), 0
    for i in range(count):
        path = os.path.join(out, "s%d_%d.yaml" % (seed, i))
        with open(path, "w") as f:
            f.write(spec(rng, i))
        r = subprocess.run([ASSOC, "check", path, "--json"], capture_output=True, text=True, timeout=120)
        if r.returncode not in (0, 1):
            if r.returncode == 2 and "error:" in r.stderr:
                continue  # a mutation the front end refuses (a type error): not a law's case
            print("%s: exit %d: %s" % (path, r.returncode, r.stderr.strip()[:300]))
            bad += 1
            continue
        for law in json.loads(r.stdout.strip().splitlines()[-1]).get("laws", []):
            verdict, status = law.get("verdict"), (law.get("proof") or {}).get("status")
            if verdict is None or status is None:
                continue
            seen[(law["law"], verdict, status)] += 1
            if (status == "proved" and verdict != "holds") or (status == "disproved" and verdict == "holds"):
                print("%s: %s %s, but the trials say %s: %s" % (path, law["law"], status, verdict,
                                                               json.dumps(law)[:400]))
                bad += 1
    for (law, verdict, status), n in sorted(seen.items()):
        print("%5d  %-12s trials %-6s proof %s" % (n, law, verdict, status))
    print("%d specs, %d disagreements" % (count, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
