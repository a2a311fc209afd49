"""Read a CSV file of ``name,amount`` rows and print the total per name as JSON."""

import csv
import json
import sys
from collections import defaultdict

totals: dict[str, float] = defaultdict(float)
with open(sys.argv[1], newline="") as f:
    for row in csv.DictReader(f):
        totals[row["name"]] += float(row["amount"])
print(json.dumps(dict(sorted(totals.items()))))
