"""Issue 41, item 6: what one LLC estimate costs, on the MNIST MLP 784-128-64-10 and on a depth-6 deep linear
network of the validation suite (`dln-4-2-2-3-5-2-2-r1`, n = 10,000, its full data), three ways, one after another
in one process, single-threaded:

* `auto`: `estimate_llc_auto`, the default (pilots, the run, its re-runs and lengthenings: everything it does);
* `curvature`: the default this replaced, `estimate_llc` at `calibrate_at_curvature`'s settings (a Hessian
  eigenvalue, then one run);
* `devinterp`: devinterp 2.0.1's `llc()` at the settings `auto` ended with (it has no automatic setting), unadjusted:
  `DEVINTERP_STEPS` steps timed and scaled to the length of `auto`'s last run (burn-in + draws); its LLC from those
  few steps is not comparable and is left out.

The MLP is trained first (SGD, lr 0.05, batch 64, 3 epochs) on the MNIST training half of the paper's subset
(n = 5,000; a labelled random stand-in without MNIST). Writes nbs/llc_validation/auto_llc_cost.csv.

    FRACSGD_DATA=/path/to/mnist python tools/time_auto_llc.py
    python tools/time_auto_llc.py --only dln --dln-n 3000      # one model; rows of the other are kept

`--dln-n` takes the network's first rows only (the case's n is 10,000); the row's label says which n ran.
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, platform, time, warnings
from datetime import date

import pandas as pd
import torch
import torch.nn.functional as F

from fracsgd.bench.llc import _devinterp_llc, _mnist
from fracsgd.core import committed_dir, write_table
from fracsgd.llc.calibrate import estimate_llc_auto
from fracsgd.llc.depth import devinterp_llc
from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc
from fracsgd.llc.sgld import SGLDDivergenceError
from fracsgd.llc.suite import suite_cases, suite_problem
from fracsgd.nets.models import make_mlp

OUT = committed_dir('llc_validation', 'auto_llc_cost.csv')
DLN_CASE = 'dln-4-2-2-3-5-2-2-r1'
DEVINTERP_STEPS = 2000


def mnist_mlp():
    X, y, source = _mnist(5000, 'cpu')
    net = make_mlp([784, 128, 64, 10], seed=0)
    opt, g = torch.optim.SGD(net.parameters(), lr=0.05), torch.Generator().manual_seed(0)
    for _ in range(3):
        for idx in torch.randperm(len(X), generator=g).split(64):
            opt.zero_grad()
            F.cross_entropy(net(X[idx]), y[idx]).backward()
            opt.step()
    return net, (X, y), 'classification', f'MNIST MLP 784-128-64-10, n = {len(X)} ({source})'


def depth6_dln(n=None):
    row = suite_cases().set_index('case').loc[DLN_CASE]
    model, data = suite_problem(row)
    n = int(n or row.n)
    return model, tuple(t[:n] for t in data), 'regression', f'DLN {row["shape"]} (depth 6, d = {row.d}), n = {n}, full data'


def timed(fn):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--only', choices=['mnist', 'dln'], default=None, help='time one model; keep the rows of the other')
    ap.add_argument('--dln-n', type=int, default=None, help="the network's first N rows (default: all 10,000)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    builds = dict(mnist=mnist_mlp, dln=lambda: depth6_dln(a.dln_n))
    keep = pd.read_csv(OUT) if a.only and OUT.exists() else pd.DataFrame(columns=['model'])
    rows = keep[~keep.model.str.startswith('MNIST' if a.only == 'mnist' else 'DLN')].to_dict('records')
    def save(row):
        rows.append(row)
        write_table(pd.DataFrame(rows), OUT)
        print({k: row.get(k) for k in ('model', 'method', 'seconds', 'llc', 'failed')}, flush=True)
    for name, build in builds.items():
        if a.only and name != a.only:
            continue
        model, data, loss, label = build()
        base = dict(model=label, machine=f'{platform.machine()} {os.cpu_count()} cores, 1 thread',
                    date=date.today().isoformat())
        torch.manual_seed(0)
        (res, done), t_auto = timed(lambda: estimate_llc_auto(model, data, loss))
        s = done['settings']
        save(dict(base, method='auto', sampler=done['sampler'], seconds=t_auto, llc=res.llc, se=res.llc_se,
                  step=s.step_size, gamma=s.localization, chains=s.n_chains, burnin=s.n_burnin, draws=s.n_draws,
                  batch=s.batch_size, halvings=done['retries'], lengthened=done['lengthened']))
        try:
            c = calibrate_at_curvature(model, data, loss)
            r, t_old = timed(lambda: estimate_llc(model, data, loss, c))
            save(dict(base, method='curvature', sampler='sgld', seconds=t_old, llc=r.llc, se=r.llc_se, step=c.step_size,
                      gamma=c.localization, chains=c.n_chains, burnin=c.n_burnin, draws=c.n_draws, batch=c.batch_size))
        except (ValueError, SGLDDivergenceError) as e:                  # refused, or its run diverged
            save(dict(base, method='curvature', sampler='sgld', failed=f'{type(e).__name__}: {str(e)[:160]}'))
        steps = s.n_burnin + s.n_draws
        short = s.replace(batch_size=s.batch_size or len(data[0]), n_burnin=0, n_draws=DEVINTERP_STEPS)
        if loss == 'regression':
            _, t_dev = timed(lambda: devinterp_llc(model, data, short))
        else:
            _, t_dev = timed(lambda: _devinterp_llc(model, *data, short))
        save(dict(base, method='devinterp', sampler='sgld (unadjusted)', seconds=t_dev * steps / DEVINTERP_STEPS,
                  step=short.step_size, gamma=short.localization, chains=short.n_chains, burnin=s.n_burnin,
                  draws=s.n_draws, batch=short.batch_size, timed_steps=DEVINTERP_STEPS))


if __name__ == '__main__':
    main()
