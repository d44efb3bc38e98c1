"""Exact finite-n LLC targets of the validation suite (`fracsgd.llc.suite`, chapter nbs/11d_llc_suite.ipynb).

Computes every case's target at the weight-scale localization (quadrature for chains and normal crossings; the
Gibbs-sweep + MALA sampler on sufficient statistics for matrix chains, deep linear networks and reduced-rank
regressions, to a standard error of at most 0.5%), and a second, independent value for the scalar and matrix chains.
Writes nbs/llc_validation/suite_targets.csv whole after each case and skips cases already in it, so it can be
stopped and restarted. Single-threaded. Prints a summary.

    python tools/suite_targets.py            # the 39 cases of the tuning and held-out parts
    python tools/suite_targets.py --fresh    # the fresh part, into nbs/llc_validation/suite_targets_fresh.csv
    python tools/suite_targets.py --fresh2   # the second fresh part, into nbs/llc_validation/suite_targets_fresh2.csv
    python tools/suite_targets.py --fresh3   # the third fresh part, into nbs/llc_validation/suite_targets_fresh3.csv
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, time

import numpy as np
import pandas as pd
import torch

from fracsgd.llc.suite import (FRESH_TARGETS, FRESH2_TARGETS, FRESH3_TARGETS, SUITE_TARGETS, fresh_cases, fresh2_cases,
                               fresh3_cases, suite_targets)


def summary(df: pd.DataFrame) -> str:
    df = df.assign(ratio=df.target / df.lam, rel_se=df.target_se / df.target.abs())
    lines = [df.groupby(['kind', 'part']).size().unstack(fill_value=0).to_string(), '',
             df.groupby('kind').agg(cases=('case', 'size'), ratio_min=('ratio', 'min'), ratio_max=('ratio', 'max'),
                                    rel_se_max=('rel_se', 'max'), seconds=('seconds', 'sum')).round(4).to_string()]
    checks = df.dropna(subset=['check']) if 'check' in df else df.iloc[:0]
    if len(checks):
        z = (checks.target - checks.check) / np.hypot(checks.target_se, checks.check_se)
        lines += ['', 'second method: ' + ', '.join(f'{c} z={v:+.2f}' for c, v in zip(checks.case, z))]
    lines.append(f"\ntotal target time {df.seconds.sum():.0f} s")
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fresh', action='store_true', help='the fresh part instead of the tuning and held-out parts')
    ap.add_argument('--fresh2', action='store_true', help='the second fresh part (the acceptance rule of 2026-12-02)')
    ap.add_argument('--fresh3', action='store_true', help='the third fresh part (the settling rule of 2026-12-02)')
    a = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    part = 'fresh3' if a.fresh3 else 'fresh2' if a.fresh2 else 'fresh' if a.fresh else None
    out, cases = {'fresh3': (FRESH3_TARGETS, fresh3_cases), 'fresh2': (FRESH2_TARGETS, fresh2_cases),
                  'fresh': (FRESH_TARGETS, fresh_cases), None: (SUITE_TARGETS, None)}[part]
    df = suite_targets(out, cases() if cases else None)
    with pd.option_context('display.width', 250):
        print(summary(df))
    print(f"wall {time.perf_counter() - t0:.0f} s; wrote {out}")


if __name__ == '__main__':
    main()
