"""The automatic LLC (`fracsgd.llc.calibrate.estimate_llc_auto`) on the validation suite (`fracsgd.llc.suite`), beside
each case's exact target (nbs/llc_validation/suite_targets.csv) at the localization the default chose.

By default the estimator is fed `equivalent_data`: a few rows with the same loss at every weight (the suite's
models are linear in x, the loss squared error), with n_beta from the original n, so the posterior and every
automatic choice are the same but a step costs the model on <= 10 rows; `--data full` feeds all n rows (the
column `data` says which). Cases run cheapest first (samples x weights); the table is written whole after every case and a rerun skips the
cases already in it, so a stopped run resumes. `--shard i/k` runs every k-th case from the i-th (one process per
core), each into its own file; `--merge` joins the shards into the committed table. Single-threaded.

    python tools/suite_estimates.py --part held-out --shard 0/2 &
    python tools/suite_estimates.py --part held-out --shard 1/2 &
    python tools/suite_estimates.py --part held-out --merge
    python tools/suite_estimates.py --part fresh2             # the second fresh part (its targets first)
    python tools/suite_estimates.py --part fresh3 --out nbs/llc_validation/suite_estimates_settled.csv   # the third
    python tools/suite_estimates.py --part gap                # seen rows run at acceptance 0.85-0.9, under today's rule

Each row records `mala_run_min`, the acceptance below which its MALA runs were repeated (0.85 before 2026-12-02), and
`settling`: True from the rule that also lengthens runs whose diagnostics find them unsettled (2026-12-02, evening).
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, math, platform, time, warnings
from datetime import date
from pathlib import Path

import pandas as pd
import torch

from fracsgd.core import committed_dir, write_table
from fracsgd.llc.calibrate import MALA_RUN_MIN, estimate_llc_auto
from fracsgd.llc.settings import default_n_beta
from fracsgd.llc.suite import (FRESH_TARGETS, FRESH2_TARGETS, FRESH3_TARGETS, SUITE_TARGETS, equivalent_data, fresh_cases,
                               fresh2_cases, fresh3_cases, suite_cases, suite_problem)

OUT = committed_dir('llc_validation', 'suite_estimates.csv')
LOSS = 'regression'
Z = 2.0                                  # the interval: estimate +- 2 s.e. (the estimator's own)


def run_case(row, target, sampler, rows='equivalent', n_beta_factor=1.0, **rules):
    model, data = suite_problem(row)
    data = equivalent_data(data) if rows == 'equivalent' else data
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                  # the flags are in the row
        res, done = estimate_llc_auto(model, data, LOSS, sampler=sampler,
                                      n_beta=n_beta_factor * default_n_beta(int(row.n)), **rules)
    seconds = time.perf_counter() - t0
    d, s = res.diagnostics.iloc[0], done['settings']
    se_both = math.hypot(res.llc_se, target.target_se)  # the target's own Monte-Carlo error, where it has one
    return dict(case=row.case, sampler=done['sampler'], data=rows, rows=len(data[0]), gamma=done['localization'],
                target_gamma=target.gamma,
                step=done['final_step_size'], n_burnin=s.n_burnin, n_draws=s.n_draws, n_chains=s.n_chains,
                halvings=done['retries'], lengthened=done['lengthened'], acceptance=done['run_acceptance'],
                llc=res.llc, se=res.llc_se, llc_low=res.llc_low, llc_high=res.llc_high,
                target=target.target, target_se=target.target_se, rel_error=res.llc / target.target - 1,
                abs_error=res.llc - target.target, z=(res.llc - target.target) / se_both,
                covered=bool(res.llc_low <= target.target <= res.llc_high),
                rel_width=(res.llc_high - res.llc_low) / target.target, flagged=bool(d.flagged),
                problems=d.problems, mala_run_min=MALA_RUN_MIN, settling=True, seconds=seconds, machine=f'{platform.machine()} {os.cpu_count()} cores, 1 thread',
                date=date.today().isoformat())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--part', default='held-out', choices=['held-out', 'tune', 'fresh', 'fresh2', 'fresh3', 'gap', 'all'])
    ap.add_argument('--sampler', default=None, choices=[None, 'mala', 'sgld'])
    ap.add_argument('--shard', default='0/1')
    ap.add_argument('--data', default='equivalent', choices=['equivalent', 'full'])
    ap.add_argument('--merge', action='store_true')
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = OUT if a.out is None else Path(a.out)
    tag = f'{a.part}-{a.sampler or "auto"}-{a.data}'
    if a.merge:
        parts = [pd.read_csv(p) for p in sorted(out.parent.glob(f'suite_estimates.{tag}.shard*.csv'))]
        old = pd.read_csv(out) if os.path.exists(out) else pd.DataFrame()
        table = pd.concat([old, *parts], ignore_index=True)
        table['mala_run_min'] = table.get('mala_run_min', pd.Series(dtype=float)).fillna(0.85)   # the rule before 2026-12-02
        table = table.drop_duplicates(['case', 'sampler', 'data', 'mala_run_min'], keep='last').sort_values(['part', 'kind', 'case'])
        write_table(table, out)
        print(summary(table))
        return
    i, k = (int(x) for x in a.shard.split('/'))
    shard_out = out.parent / f'suite_estimates.{tag}.shard{i}.csv'
    targets = pd.concat([pd.read_csv(p) for p in (SUITE_TARGETS, FRESH_TARGETS, FRESH2_TARGETS, FRESH3_TARGETS) if p.exists()])
    cases = pd.concat([suite_cases(), fresh_cases(), fresh2_cases(), fresh3_cases()]).merge(targets[['case', 'target', 'target_se', 'gamma']],
                                                                          on='case')
    if a.part == 'gap':                  # seen rows whose MALA run was accepted 0.85-0.9: the rows the new rule repeats
        old = pd.read_csv(OUT)
        old = old[(old.data == 'equivalent') & (old.sampler == 'mala') & old.part.isin(['held-out', 'fresh'])]
        cases = cases[cases.case.isin(old[(old.acceptance >= 0.85) & (old.acceptance < MALA_RUN_MIN)].case)]
    elif a.part != 'all':
        cases = cases[cases.part == a.part]
    cases = cases.assign(work=cases.n * cases.d).sort_values('work').iloc[i::k]
    rows = pd.read_csv(shard_out).to_dict('records') if shard_out.exists() else []
    done = {c for p in out.parent.glob(f'suite_estimates.{tag}.shard*.csv') for c in pd.read_csv(p).case}  # any shard's
    for _, row in cases.iterrows():
        if row.case in done:
            continue
        r = run_case(row, row, a.sampler, a.data)
        rows.append({**{c: row[c] for c in ('kind', 'shape', 'n', 'noise', 'd', 'lam', 'mult', 'part')}, **r})
        write_table(pd.DataFrame(rows), shard_out)
        print(f"{row.case:28s} {r['sampler']} target {r['target']:.4f} llc {r['llc']:.4f} se {r['se']:.4f} "
              f"err {r['rel_error']:+.3f} z {r['z']:+.2f} {r['seconds']:.0f}s", flush=True)


def summary(t: pd.DataFrame) -> pd.DataFrame:
    "Per part and sampler: rows, mean and worst |relative error|, coverage and the median full width."
    g = t.groupby(['part', 'sampler', 'data'])
    return pd.DataFrame(dict(rows=g.size(), mean_abs_error=g.rel_error.apply(lambda e: e.abs().mean()),
                             worst=g.rel_error.apply(lambda e: e.abs().max()), covered=g.covered.mean(),
                             median_width=g.rel_width.median(), seconds=g.seconds.sum()))


if __name__ == '__main__':
    main()
