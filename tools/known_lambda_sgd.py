"""The experiments of the chapter "SGD on the exact landscapes" (nbs/07c_known_lambda_sgd.ipynb).

    OMP_NUM_THREADS=1 python tools/known_lambda_sgd.py [walks|passage|llc ...]

Writes small CSVs whole (a temporary file, then a rename) under nbs/known_lambda_sgd/, and run.json with the date,
the machine and the measured seconds of each part. About seven CPU-minutes on one core (run.json)."""
import datetime, json, math, os, platform, sys, time, warnings
from pathlib import Path

import numpy as np
import pandas as pd

from fracsgd.diffusion.known_lambda import (first_passage_times, langevin, morse_bott, passage_exponent, sgd,
                                            walk_exponents)
from fracsgd.diffusion.known_lambda_sgd import (crossing_regression, dln_regression, escape_zones,
                                                pair_direction_change, pore_volume, scalar_posterior_target,
                                                valley_regression, zone_capacity)

OUT = Path(__file__).resolve().parents[1] / 'nbs' / 'known_lambda_sgd'
LANGEVIN = dict(lr=1.25e-4, n_steps=800_000, record_every=80)      # the known-λ chapter's degenerate protocol
BATCH, NOISE, WALKERS = 8, 1.0, 150
LR_MATCHED = math.sqrt(2 * LANGEVIN['lr'] * BATCH) / NOISE          # SGD's step noise = Langevin's where |∇φ| = 1
PASSAGE_EPS, RADIUS = (0.003, 0.01, 0.03, 0.1), 1.0
N_LLC, SIGMA_LLC = 3000, 1.0


def write_csv(table: pd.DataFrame, name: str):
    tmp = OUT / (name + '.tmp')
    table.to_csv(tmp, index=False)
    os.replace(tmp, OUT / name)


def flatten(m: dict) -> dict:
    out = {}
    for k, v in m.items():
        if isinstance(v, tuple):
            out[k + '_low'], out[k + '_high'] = v
        else:
            out[k] = v
    return out


def measure(kind, ls, x, lr, start, seconds):
    end = LANGEVIN['n_steps']
    m = walk_exponents(x, ls.llc, LANGEVIN['record_every'], (end / 50, end), (end / 50, end / 4), n_boot=200)
    disp = x[:, -1] - x[:, 0]
    row = dict(dynamics=kind, landscape=ls.name, dim=ls.dim, llc=float(ls.llc), llc_exact=str(ls.llc),
               minimum_set_dim=ls.minimum_set_dim, walkers=x.shape[0], steps=end, lr=lr,
               batch=BATCH if kind.startswith('SGD') else np.nan, noise=NOISE if kind.startswith('SGD') else np.nan,
               start=' '.join(f'{v:.3g}' for v in start), R_end=float(np.linalg.norm(disp, axis=-1).mean()),
               disp_var_eigs=' '.join(f'{v:.3g}' for v in np.linalg.eigvalsh(np.cov(disp.T))[::-1]),
               seconds=round(seconds, 1))
    if ls.name.startswith('y = w_1'):                                  # the valley's flat coordinates
        row['flat_change'] = float(np.abs(x[..., 1:] - x[:, :1, 1:]).max())
    if ls.name.startswith('DLN'):
        row['pair_direction_change'] = pair_direction_change(x, 2)
    return row | flatten(m)


def walks():
    rows = []
    cases = [(crossing_regression(1, 1), (1.0, 0.0)), (crossing_regression(1, 2), (0.0, 1.0)),
             (valley_regression(3, 1), None), (dln_regression([1, 2, 1], 1), None)]
    for ls, start in cases:
        s = ls.w_star if start is None else np.asarray(start)
        for lr, kind in ((LANGEVIN['lr'], f'SGD, batch {BATCH}, same step'),
                         (LR_MATCHED, f'SGD, batch {BATCH}, noise-matched step')):
            t0 = time.time()
            x = sgd(ls, WALKERS, LANGEVIN['n_steps'], lr, BATCH, seed=0, record_every=LANGEVIN['record_every'],
                    start=s)
            rows.append(measure(kind, ls, x, lr, s, time.time() - t0))
            print(ls.name, kind, f"{rows[-1]['seconds']:.0f} s", flush=True)
    for d, c in ((4, 3), (4, 1)):                                     # Langevin on two more valleys (finding c)
        ls, t0 = morse_bott(d, c), time.time()
        x = langevin(ls, WALKERS, LANGEVIN['n_steps'], LANGEVIN['lr'], seed=0, record_every=LANGEVIN['record_every'])
        rows.append(measure('Langevin', ls, x, LANGEVIN['lr'], ls.w_star, time.time() - t0))
        print(ls.name, 'Langevin', f"{rows[-1]['seconds']:.0f} s", flush=True)
    write_csv(pd.DataFrame(rows), 'walks.csv')


def passage():
    rows = []
    for c in (1, 2):
        ls, times = morse_bott(3, c), []
        for e in PASSAGE_EPS:
            t0 = time.time()
            step = 0.2 * math.sqrt(2 * e)                           # a fifth of the pore's half-width
            times.append(first_passage_times(ls, e, RADIUS, step, n_walkers=200, seed=1))
            cap = zone_capacity(escape_zones(c, 3, e, RADIUS), RADIUS)
            rows.append(dict(landscape=ls.name, c=c, llc=float(ls.llc), eps=e, step=step, mean_T=times[-1].mean(),
                             sd_T=times[-1].std(), walkers=200, capacity=cap, volume=pore_volume(c, e, RADIUS),
                             seconds=round(time.time() - t0, 1)))
        D = 0.5                                                      # per coordinate, in units of step²
        caps = [r['capacity'] for r in rows[-len(PASSAGE_EPS):]]
        fit_T = passage_exponent(PASSAGE_EPS, times)
        fit_TDC = passage_exponent(PASSAGE_EPS, [t * D * k for t, k in zip(times, caps)])
        vol = np.polyfit(np.log(PASSAGE_EPS), np.log([r['volume'] for r in rows[-len(PASSAGE_EPS):]]), 1)[0]
        for r in rows[-len(PASSAGE_EPS):]:
            r.update(exponent_T=fit_T['exponent'], exponent_T_low=fit_T['ci'][0], exponent_T_high=fit_T['ci'][1],
                     exponent_TDC=fit_TDC['exponent'], exponent_TDC_low=fit_TDC['ci'][0],
                     exponent_TDC_high=fit_TDC['ci'][1], exponent_volume=vol)
        print(ls.name, 'passage', flush=True)
    write_csv(pd.DataFrame(rows), 'passage.csv')


def llc():
    import torch
    from fracsgd.llc.calibrate import NormalCrossing, crossing_data, crossing_lambda, crossing_target, estimate_llc_auto
    from fracsgd.llc.settings import default_n_beta
    from fracsgd.nets.models import make_dln
    torch.set_num_threads(1)
    torch.manual_seed(0)
    nb, rows = default_n_beta(N_LLC), []
    cases = [(f'x·w1^{p}·w2^{q}', NormalCrossing(p, q), crossing_data(N_LLC, SIGMA_LLC, 0), crossing_lambda(p, q), (p, q))
             for p, q in ((1, 1), (1, 2), (1, 0))]
    net = make_dln([1, 2, 1], 1, 0)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N_LLC, 1, generator=g)
    with torch.no_grad():
        Y = net(X) + SIGMA_LLC * torch.randn(N_LLC, 1, generator=g)
    cases.append(('DLN [1, 2, 1], rank 1', net, (X, Y), 0.5, None))
    for name, model, data, lam, pq in cases:
        w_star = np.concatenate([p.detach().double().numpy().ravel() for p in model.parameters()])
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            res, done = estimate_llc_auto(model, data, 'regression', precision=0.05)
        sec, gamma = time.time() - t0, done['localization']
        if pq:
            p, q = pq
            phi = lambda w, p=p, q=q: w[:, 0] ** p * w[:, 1] ** q
            quad = crossing_target(p, q, data, nb, gamma)
        else:
            phi, quad = (lambda w: w[:, 0] * w[:, 2] + w[:, 1] * w[:, 3]), np.nan   # W_2 W_1 for [1, 2, 1]
        mc, mc_se = scalar_posterior_target(phi, w_star, data[0].numpy(), data[1].numpy(), nb, gamma)
        rows.append(dict(model=name, llc_exact=lam, n=N_LLC, sigma=SIGMA_LLC, n_beta=nb, gamma=gamma,
                         sampler=done['sampler'], step=done['final_step_size'], draws=done['n_draws'],
                         acceptance=done['run_acceptance'], llc=res.llc, llc_se=res.llc_se, llc_low=res.llc_low,
                         llc_high=res.llc_high, target_quadrature=quad, target_mc=mc, target_mc_se=mc_se,
                         seconds=round(sec, 1)))
        print(name, f'{sec:.0f} s', res.llc, quad, mc, flush=True)
    write_csv(pd.DataFrame(rows), 'llc.csv')


if __name__ == '__main__':
    OUT.mkdir(parents=True, exist_ok=True)
    parts = sys.argv[1:] or ['walks', 'passage', 'llc']
    info = json.loads((OUT / 'run.json').read_text()) if (OUT / 'run.json').exists() else {}
    for part in parts:
        t0, c0 = time.time(), time.process_time()
        globals()[part]()
        info[part] = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
                          machine=f'{platform.node()}: {platform.processor() or platform.machine()}, '
                                  f'{os.cpu_count()} cores shared, OMP_NUM_THREADS={os.environ.get("OMP_NUM_THREADS")}',
                          wall_seconds=round(time.time() - t0, 1), cpu_seconds=round(time.process_time() - c0, 1))
        tmp = OUT / 'run.json.tmp'
        tmp.write_text(json.dumps(info, indent=1) + '\n')
        os.replace(tmp, OUT / 'run.json')
