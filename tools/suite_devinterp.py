"""Issue 41, item 6: devinterp 2.0.1's `llc()` on the held-out rows of the validation suite, beside the automatic
LLC (tools/suite_estimates.py) and the exact targets, with the same columns. devinterp has no automatic setting and
no Metropolis test: at the step our Metropolis-adjusted default ends with, its unadjusted chains diverge (tried on
crossing-21: inf). So it is given the settings of our rule for unadjusted chains, `calibrate(..., sampler='sgld')`
(step from pilots at 99.8% MALA acceptance; n_beta, localization, chains, burn-in, draws), through
`fracsgd.llc.depth.devinterp_llc`, on the same `equivalent_data` in one full batch. Its s.e. is the spread of its
chains' means over sqrt(chains). Resumable; single-threaded.

    python tools/suite_devinterp.py
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import math, platform, time, warnings
from datetime import date

import pandas as pd
import torch

from fracsgd.core import committed_dir, write_table
from fracsgd.llc.depth import devinterp_llc
from fracsgd.llc.calibrate import calibrate
from fracsgd.llc.settings import default_n_beta
from fracsgd.llc.suite import equivalent_data, suite_cases, suite_problem

OUT = committed_dir('llc_validation', 'suite_devinterp.csv')
EST = committed_dir('llc_validation', 'suite_estimates.csv')
KEEP = ('kind', 'shape', 'n', 'noise', 'd', 'lam', 'mult', 'part', 'case', 'target', 'target_se')


def main():
    torch.set_num_threads(1)
    est = pd.read_csv(EST).query("part == 'held-out' and data == 'equivalent'")
    cases = suite_cases().set_index('case', drop=False)
    rows = pd.read_csv(OUT).to_dict('records') if OUT.exists() else []
    done = {r['case'] for r in rows}
    for _, e in est.sort_values('seconds').iterrows():
        if e.case in done:
            continue
        model, data = suite_problem(cases.loc[e.case])
        data = equivalent_data(data)
        nb = default_n_beta(int(e.n))
        torch.manual_seed(0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            s = calibrate(model, data, 'regression', n_beta=nb, sampler='sgld').replace(batch_size=len(data[0]))
        pilots = time.perf_counter() - t0
        out = devinterp_llc(model, data, s)
        se = out['llc_chain_sd'] / math.sqrt(s.n_chains)
        se_both = math.hypot(se, e.target_se)
        rows.append({**{c: e[c] for c in KEEP}, 'method': 'devinterp 2.0.1 llc()', 'step': s.step_size,
                     'gamma': s.localization, 'n_burnin': s.n_burnin, 'n_draws': s.n_draws, 'n_chains': s.n_chains,
                     'llc': out['llc'], 'se': se, 'llc_low': out['llc'] - 2 * se, 'llc_high': out['llc'] + 2 * se,
                     'rel_error': out['llc'] / e.target - 1, 'z': (out['llc'] - e.target) / se_both,
                     'covered': bool(abs(out['llc'] - e.target) <= 2 * se), 'rel_width': 4 * se / e.target,
                     'ours': e.llc, 'ours_rel_error': e.rel_error, 'seconds': out['seconds'], 'pilot_seconds': pilots,
                     'ours_seconds': e.seconds, 'machine': f'{platform.machine()} {os.cpu_count()} cores, 1 thread',
                     'date': date.today().isoformat()})
        write_table(pd.DataFrame(rows), OUT)
        r = rows[-1]
        print(f"{e.case:28s} target {e.target:.4f} devinterp {r['llc']:.4f} ({r['rel_error']:+.3f}) ours "
              f"{e.llc:.4f} ({e.rel_error:+.3f}) {r['seconds']:.0f}s", flush=True)


if __name__ == '__main__':
    main()
