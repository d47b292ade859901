"""Per-round ratios to the stock tool, for server-variants.sh and client-variants.sh.

usage: ratios.py FILE LABEL
FILE has one line per run: ROUND NAME GBIT/S CPU% [...]; the runs named "stock"
are the reference. For each name it prints the median Gbit/s and the medians of
the per-round ratios of goodput and of CPU per byte (LABEL names that CPU).
"""
import collections
import statistics
import sys

runs = collections.defaultdict(dict)  # name -> round -> (Gbit/s, CPU %)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[2] != "failed":
        runs[f[1]][f[0]] = (float(f[2]), float(f[3]))
stock = runs["stock"]
for name, v in runs.items():
    rounds = [r for r in v if r in stock]
    g = [v[r][0] / stock[r][0] for r in rounds]
    c = [(v[r][1] / v[r][0]) / (stock[r][1] / stock[r][0]) for r in rounds]
    print(f"{name}: median {statistics.median(x for x, _ in v.values()):.1f} Gbit/s; per round against stock: "
          f"goodput {statistics.median(g):.2f}x ({' '.join(f'{x:.2f}' for x in g)}), "
          f"{sys.argv[2]} CPU per byte {statistics.median(c):.2f}x")
