"""Summarise the event chunks of one or more month folders (JSON lines)."""

import argparse
import collections
import csv
import json
import pathlib
import statistics

p = argparse.ArgumentParser()
p.add_argument("months", nargs="+")
p.add_argument("--config")
p.add_argument("--csv")
p.add_argument("--index")
args = p.parse_args()
conf = {"kinds": None, "slow_ms": 800}
if args.config:
    conf = json.loads(pathlib.Path(args.config).read_text())
counts, times = collections.Counter(), []
files = sorted(f for m in args.months for f in pathlib.Path("chunks", m).glob("*.jsonl"))
for f in files:
    for line in f.open():
        r = json.loads(line)
        if conf["kinds"] is None or r["kind"] in conf["kinds"]:
            counts[r["kind"]] += 1
            times.append(r["ms"])
print(len(files), "chunks", dict(sorted(counts.items())))
print("median", statistics.median(times), "slow", sum(t > conf["slow_ms"] for t in times))
if args.csv:
    out = pathlib.Path(args.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        csv.writer(fh).writerows(sorted(counts.items()))
    print("wrote", out)
if args.index:
    idx = pathlib.Path(args.index)
    idx.mkdir(parents=True, exist_ok=True)
    for f in files:
        (idx / (f.stem + ".n")).write_text(str(sum(1 for _ in f.open())))
    print("indexed", len(list(idx.iterdir())))
