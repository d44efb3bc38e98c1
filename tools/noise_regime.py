"""Issue 43, item 1: a regime where SGD and full-batch GD differ (chapter nbs/20b_noise_regime.ipynb).

The paper's moons nets are trained to convergence by the paper's SGD, then continued from the same weights by SGD at
lr 0.05, batch 8, and by full-batch GD at lr 0.05, recording R(t), the increments at several ages, a 32-dimensional
projection at every step and the full weights at log-spaced steps; the LLC (paper preset) at the converged weights
and at both ends. Writes small tables to nbs/noise_regime/ (each whole, through a temporary file). Re-runnable; the
converged weights and LLCs are kept in results/noise_regime/ so a second run skips convergence. Single-threaded.

    python tools/noise_regime.py            # ~7 CPU-minutes on one core
    python tools/noise_regime.py --smoke    # seconds; writes to results/noise_regime/smoke/ only
"""
import os
os.environ.setdefault('OMP_NUM_THREADS', '1')
import argparse, datetime, json, platform, time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from fracsgd.core import committed_dir, write_table
from fracsgd.datasets.moons import load_moons
from fracsgd.nets.models import make_mlp
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.settings import PAPER_PRESET
from fracsgd.diffusion.return_probability import path_returns
from fracsgd.diffusion.noise_regime import (NOISE_REGIME, SMOKE, continue_from, converge, full_batch_loss, log_steps)

RETURN_DIMS = (2, 32)              # the projection's first k coordinates: a k-dimensional random projection


def llc(models, data, seed: int) -> np.ndarray:
    "One LLC per net at its current weights (the paper's table-3 SGLD setting)."
    return np.atleast_1d(estimate_llc(models, data, 'classification', PAPER_PRESET.replace(seed=seed)).llc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--smoke', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = SMOKE if a.smoke else NOISE_REGIME
    out = Path('results/noise_regime/smoke') if a.smoke else committed_dir('noise_regime')
    cache = Path('results/noise_regime') / ('smoke' if a.smoke else 'full') / 'converged.pt'
    out.mkdir(parents=True, exist_ok=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    seconds, started = {}, datetime.datetime.now(datetime.timezone.utc)
    X, y, source = load_moons(cfg.n_samples, cfg.noise, seed=cfg.data_seed)
    data = (X, y)
    nets = [make_mlp([2, *cfg.hidden, 2], seed=s) for s in range(cfg.n_nets)]

    t0 = time.process_time()
    if cache.exists():
        saved = torch.load(cache, weights_only=False)                   # our own file, written below
        for m, sd in zip(nets, saved['weights']):
            m.load_state_dict(sd)
        conv, lam0 = saved['convergence'], saved['llc']
        seconds.update(saved['seconds'])
    else:
        conv = converge(nets, data, cfg)
        seconds['converge'] = time.process_time() - t0
        t0 = time.process_time()
        lam0 = llc(nets, data, seed=0)
        seconds['llc_converged'] = time.process_time() - t0
        torch.save(dict(weights=[m.state_dict() for m in nets], convergence=conv, llc=lam0,
                        seconds={k: seconds[k] for k in ('converge', 'llc_converged')}), cache)
    write_table(conv, out / 'convergence.csv')
    loss0 = full_batch_loss(nets, X, y)

    record = log_steps(cfg.n_steps, cfg.n_points)
    runs = {}
    for opt, batch in (('sgd', cfg.batch_size), ('gd', cfg.n_samples)):
        runs[opt] = continue_from(nets, data, cfg.lr, batch, cfg.n_steps, ages=cfg.ages, lags=cfg.lags,
                                  proj_dim=cfg.proj_dim, record=record, seed=cfg.seed)
        seconds[f'continue_{opt}'] = runs[opt]['seconds']
        print(opt, f"{runs[opt]['seconds']:.0f} s", flush=True)
    for opt, seed in (('sgd', 1), ('gd', 2)):
        t0 = time.process_time()
        runs[opt]['llc'] = llc(runs[opt]['models'], data, seed=seed)
        seconds[f'llc_{opt}_end'] = time.process_time() - t0

    t0 = time.process_time()
    curves = pd.concat([runs[o]['trajectory'][['member', 'step', 'R', 'loss']].assign(optimizer=o)
                        for o in ('sgd', 'gd')], ignore_index=True)
    sg, gd = runs['sgd'], runs['gd']
    assert list(sg['snap_steps']) == list(gd['snap_steps']) == record
    twin = ((sg['snaps'] - gd['snaps']) ** 2).sum(-1)                            # [nets, steps]
    curves = curves.merge(pd.DataFrame({'member': np.repeat(np.arange(cfg.n_nets), len(record)),
                                        'step': np.tile(record, cfg.n_nets), 'twin_sq': twin.reshape(-1)}),
                          on=['member', 'step'], how='left')
    write_table(curves, out / 'curves.csv')
    inc = pd.concat([runs[o]['increments'].assign(optimizer=o) for o in ('sgd', 'gd')], ignore_index=True)
    inc = (inc.groupby(['optimizer', 'member', 'age', 'lag'], as_index=False)
           .agg(start=('start', 'min'), sq=('sq', 'mean'), sq_start=('sq_start', 'mean'), sq_end=('sq_end', 'mean')))
    write_table(inc, out / 'increments.csv')
    paths = dict(sgd=sg['paths'], gd=gd['paths'], noise=sg['paths'] - gd['paths'])
    ret = pd.concat([path_returns(p[..., :k]).assign(path=name, dims=k)
                     for name, p in paths.items() for k in RETURN_DIMS], ignore_index=True)
    write_table(ret.rename(columns={'unit': 'member'}), out / 'returns.csv')
    nets_table = pd.DataFrame({'member': np.arange(cfg.n_nets), 'loss_converged': loss0,
                               'loss_sgd_end': full_batch_loss(sg['models'], X, y),
                               'loss_gd_end': full_batch_loss(gd['models'], X, y),
                               'llc_converged': lam0, 'llc_sgd_end': sg['llc'], 'llc_gd_end': gd['llc']})
    write_table(nets_table, out / 'nets.csv')
    seconds['tables'] = time.process_time() - t0
    meta = dict(date=started.isoformat(timespec='seconds'), config=asdict(cfg), data=source,
                llc_settings=repr(PAPER_PRESET), return_dims=list(RETURN_DIMS),
                machine=dict(platform=platform.platform(), processor=platform.processor() or platform.machine(),
                             cpu_count=os.cpu_count(), torch=torch.__version__, threads=torch.get_num_threads(),
                             load_average=os.getloadavg()),
                cpu_seconds={k: round(v, 1) for k, v in seconds.items()},
                note='CPU seconds of this process (time.process_time), single-threaded, on a shared 2-core machine')
    tmp = out / 'meta.json.tmp'
    tmp.write_text(json.dumps(meta, indent=1) + '\n')
    tmp.replace(out / 'meta.json')
    print(json.dumps(meta['cpu_seconds']))


if __name__ == '__main__':
    main()
