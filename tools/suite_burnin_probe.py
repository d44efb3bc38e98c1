"""Issue 41, a probe on the tuning part: is the automatic LLC's low lean on deep scalar chains a burn-in bias?

For a suite case (default the tuning part's `chain-d6`), the default's settings (`calibrate`, equivalent data, nβ
from the original n) are run twice with 8,000 draws: at the burn-in the default chose and at 10x that burn-in. Each
row: the estimate, `honest_se`, the chains' means, and the error against the exact target. Writes
nbs/llc_validation/burnin_probe.csv whole (rows of other cases are kept). Single-threaded.

    python tools/suite_burnin_probe.py chain-d6
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, time, warnings
from datetime import date

import numpy as np
import pandas as pd
import torch

from fracsgd.core import committed_dir, write_table
from fracsgd.llc.calibrate import calibrate, honest_se
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.settings import default_n_beta
from fracsgd.llc.suite import SUITE_TARGETS, equivalent_data, suite_cases, suite_problem

OUT = committed_dir('llc_validation', 'burnin_probe.csv')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('case', nargs='?', default='chain-d6')
    ap.add_argument('--draws', type=int, default=8000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    cases = suite_cases().set_index('case')
    if a.case not in cases.index or cases.loc[a.case, 'part'] != 'tune':
        raise SystemExit(f"{a.case!r}: probe only cases of the tuning part")
    row = cases.loc[a.case].to_dict()
    target = float(pd.read_csv(SUITE_TARGETS).set_index('case').loc[a.case, 'target'])
    model, data = suite_problem(row)
    data = equivalent_data(data)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.manual_seed(0)
        s = calibrate(model, data, 'regression', n_beta=default_n_beta(int(row['n'])))
        for factor in (1, 10):
            t0 = time.perf_counter()
            r = estimate_llc(model, data, 'regression', s.replace(n_burnin=factor * s.n_burnin, n_draws=a.draws))
            rows.append(dict(case=a.case, n=row['n'], target=target, step=s.step_size, gamma=s.localization,
                             burnin_factor=factor, n_burnin=factor * s.n_burnin, n_draws=a.draws, llc=r.llc,
                             se=honest_se(r), rel_error=r.llc / target - 1,
                             chain_means=' '.join(f'{v:.4f}' for v in np.ravel(r.per_chain)),
                             seconds=time.perf_counter() - t0, date=date.today().isoformat()))
            print(rows[-1], flush=True)
    old = pd.read_csv(OUT) if OUT.exists() else pd.DataFrame(columns=['case'])
    write_table(pd.concat([old[old.case != a.case], pd.DataFrame(rows)], ignore_index=True), OUT)


if __name__ == '__main__':
    main()
