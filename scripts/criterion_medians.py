#!/usr/bin/env python3
"""Print the median (and its 95% interval) of every criterion benchmark in target/criterion.

Usage, after `cargo bench`: python3 scripts/criterion_medians.py
"""
import glob
import json
import os

for path in sorted(glob.glob("target/criterion/**/new/estimates.json", recursive=True)):
    with open(path) as f:
        median = json.load(f)["median"]
    name = os.path.relpath(os.path.dirname(os.path.dirname(path)), "target/criterion")
    ci = median["confidence_interval"]
    print(f"{name:75s} {median['point_estimate']:8.2f} ns  [{ci['lower_bound']:.2f}, {ci['upper_bound']:.2f}]")
