"""The automatic LLC on the noiseless rows of the validation suite at n_beta x 10 (the temperature slope of
`fracsgd.llc.temperature`), and on the noiseless held-out deep linear networks also at x 100 (consistency in n),
on the same data (x 1 is tools/suite_estimates.py's run), at the default's own localization. Like tools/suite_estimates.py it feeds the estimator
`equivalent_data` (the same loss on <= 10 rows). Resumable and shardable the same way; single-threaded.

    python tools/suite_temperature.py --shard 0/2 &
    python tools/suite_temperature.py --shard 1/2 &
    python tools/suite_temperature.py --merge
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse

import pandas as pd
import torch

from fracsgd.core import committed_dir, write_table
from fracsgd.llc.suite import SUITE_TARGETS, suite_cases
from suite_estimates import run_case

OUT = committed_dir('llc_validation', 'suite_temperature.csv')
KEEP = ('kind', 'shape', 'n', 'noise', 'd', 'lam', 'mult', 'part')


def jobs() -> pd.DataFrame:
    "One row per (case, factor): every noiseless case at x10, the held-out noiseless DLNs also at x100."
    cases = suite_cases().merge(pd.read_csv(SUITE_TARGETS)[['case', 'target', 'target_se', 'gamma']], on='case')
    cases = cases[cases.noise == 0]
    out = [cases.assign(factor=10.0)]
    out.append(cases[(cases.kind == 'dln') & (cases.part == 'held-out')].assign(factor=100.0))
    return pd.concat(out).assign(work=lambda t: t.factor * t.d).sort_values(['work', 'case']).reset_index(drop=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--shard', default='0/1')
    ap.add_argument('--factor', type=float, default=None, help='run only the jobs at this factor')
    ap.add_argument('--part', default=None, choices=[None, 'held-out', 'tune'])
    ap.add_argument('--merge', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.merge:
        parts = [pd.read_csv(p) for p in sorted(OUT.parent.glob('suite_temperature*.shard*.csv'))]
        old = pd.read_csv(OUT) if OUT.exists() else pd.DataFrame()
        table = pd.concat([old, *parts], ignore_index=True).drop_duplicates(['case', 'factor'], keep='last')
        write_table(table.sort_values(['part', 'kind', 'case', 'factor']), OUT)
        return
    i, k = (int(x) for x in a.shard.split('/'))
    tag = ('' if a.factor is None else f'.x{a.factor:g}') + ('' if a.part is None else f'.{a.part}')
    shard_out = OUT.parent / f'suite_temperature{tag}.shard{i}.csv'
    rows = pd.read_csv(shard_out).to_dict('records') if shard_out.exists() else []
    others = [pd.read_csv(p) for p in [OUT, *OUT.parent.glob('suite_temperature*.shard*.csv')] if p.exists()]
    done = {(r['case'], r['factor']) for t in others for r in t.to_dict('records')}   # by any shard or merged
    todo = jobs() if a.factor is None else jobs().query('factor == @a.factor')
    todo = todo if a.part is None else todo[todo.part == a.part]
    for _, row in todo.iloc[i::k].iterrows():
        if (row.case, row.factor) in done:
            continue
        r = run_case(row, row, None, 'equivalent', n_beta_factor=row.factor)
        for c in ('target', 'target_se', 'target_gamma', 'rel_error', 'abs_error', 'z', 'covered', 'rel_width'):
            r.pop(c)                                        # the exact targets are at x1 only
        rows.append({**{c: row[c] for c in KEEP}, 'factor': row.factor, 'target_x1': row.target, **r})
        write_table(pd.DataFrame(rows), shard_out)
        print(f"{row.case:28s} x{row.factor:<4g} lam {row.lam:.3f} llc {r['llc']:.4f} se {r['se']:.4f} "
              f"draws {r['n_draws']} {r['seconds']:.0f}s", flush=True)


if __name__ == '__main__':
    main()
