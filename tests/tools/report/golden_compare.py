#!/usr/bin/env python3
# Prints the answers of Google Benchmark compare.py (tools/gbench/report.py) for two JSON files:
# its calculate_change() on each compared row and its calc_utest() p-value (scipy mannwhitneyu,
# two-sided) over the real_time repetitions. report_compare_test.cpp hard-codes its output.
# Usage: /usr/bin/python3 golden_compare.py data/compare_base.json data/compare_new.json
# compare.py's get_difference_report semantics: partitions by exact name, utest over real_time of
# the iteration entries, change on each measurement row (the _median aggregate row for repetitions).
import json, sys
from scipy.stats import mannwhitneyu
def calc(o,n):
    if o==0 and n==0: return 0.0
    if o==0: return (n-o)/((o+n)/2)
    return (n-o)/abs(o)
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
names=[]
for x in a["benchmarks"]:
    if x["name"] not in names: names.append(x["name"])
for nm in names:
    l=[x for x in a["benchmarks"] if x["name"]==nm and "real_time" in x and not x.get("error_occurred")]
    r=[x for x in b["benchmarks"] if x["name"]==nm and "real_time" in x and not x.get("error_occurred")]
    if not l or not r: continue
    if l[0].get("run_type")=="aggregate" and not nm.endswith("_median"): continue
    if l[0].get("run_type")=="aggregate" or len(l)==1:
        print("CHANGE", nm, repr(calc(l[0]["real_time"], r[0]["real_time"])))
    if len(l)>=2 and len(r)>=2:
        print("PVALUE", nm, repr(mannwhitneyu([x["real_time"] for x in l],[x["real_time"] for x in r],alternative='two-sided').pvalue))
