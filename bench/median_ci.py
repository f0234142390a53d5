"""The median of a bench's per-round ratios and a bootstrap 95 % confidence
interval of that median, as one table row: LABEL | median | low–high |
min–max. On a shared 2-core machine a run's speed swings by ±20 % over
seconds, so a handful of rounds cannot tell 0.90 from 0.95; the interval
says how far the median can be trusted.

Usage: python3 bench/median_ci.py LABEL RATIO...
"""
import random
import statistics
import sys

label, r = sys.argv[1], [float(v) for v in sys.argv[2:]]
random.seed(1)
meds = sorted(statistics.median(random.choices(r, k=len(r))) for _ in range(5000))
print("%s | %.3f | %.3f–%.3f | %.2f–%.2f" % (label, statistics.median(r), meds[124], meds[-125], min(r), max(r)))
