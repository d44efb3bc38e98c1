"""A reference posterior that converges (issue 43 item 4): replica-exchange MALA on the global posterior of the moons
net, started in every function-space cluster of the committed SGD solutions, and table 2 / fig. 3 recomputed on it.

    python tools/reference_posterior.py sample seed0 [seed1 ...]   # the chains (minutes each, one thread)
    python tools/reference_posterior.py analyse seed0 [...]        # tables from the committed draws (seconds)
    python tools/reference_posterior.py all                        # every run of RUNS, then every analysis

Each run writes nbs/replica_exchange/<run>/: draws.csv (one row per chain and draw at β = 1: the cluster of the
draw's function on the probe grid, its distance to every SGD centroid, log likelihood, log prior), ladder.csv (per
rung: β, the fixed MALA step, acceptance, swap rate to the next rung), starts.csv and run.json (settings, machine,
date, measured seconds). `analyse` adds masses.csv (per chain), rhat.csv, table2.csv, scan.csv and summary.csv.
Files are written whole (a temporary file renamed onto its name); a run whose run.json holds the same settings is
skipped, so an interrupted `all` resumes at the first run not finished.

The SGD solutions are the committed moons-posterior results (nbs/moons_posterior/reference for data seed 0,
reference-test for data seed 1): the 100 nets are retrained from their seeds with the study's own code (the
reproduction is checked: every net must fall in the committed cluster of its committed solution) and the chains
start at the nets nearest each cluster's centre. Measured on the 2-core shared CPU, one thread: about 0.05–0.1 s per
MALA step of 64 replicas (8 chains × 8 rungs) on a free core; run.json has each run's measured seconds.
"""
from __future__ import annotations
import datetime, json, os, platform, sys, time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fracsgd.core import atomic_path, read_table, write_table
from fracsgd.nets.models import make_mlp
from fracsgd.posterior.clusters import (assign_to_clusters, cluster_masses, function_features, predict_on_probe,
                                        reference_starts)
from fracsgd.posterior.replica import NetPosterior, ReplicaSettings, geometric_ladder, replica_exchange
from fracsgd.studies.moons_posterior import REFERENCE, REFERENCE_TEST, STUDY, _data

OUT = Path(os.environ.get('REPLICA_OUT', ROOT / 'nbs' / 'replica_exchange'))
SOURCES = {0: ('reference', REFERENCE), 1: ('reference-test', REFERENCE_TEST)}
MAIN = ReplicaSettings(betas=geometric_ladder(8, 0.25, prior=False), step_size=0.01, n_burnin=1000, n_draws=600,
                       thin=5, adapt_rate=0.1, seed=0)
RUNS = {   # run: (data seed, prior scale on the standard deviation, chains per cluster, settings)
    'seed0': (0, 1.0, 4, MAIN),
    'seed1': (1, 1.0, 4, MAIN.replace(seed=1)),
    'seed0-prior4x': (0, 2.0, 4, MAIN),                                      # 4× the prior variance
    'seed0-ladder': (0, 1.0, 4, MAIN.replace(betas=geometric_ladder(6, 0.05, prior=True))),   # to the prior, coarser
    'seed0-mala': (0, 1.0, 4, MAIN.replace(betas=(1.0,))),                   # no exchange: MALA alone, a control
    'smoke': (0, 1.0, 1, MAIN.replace(n_burnin=10, n_draws=4, thin=2)),       # seconds: a check of the tool
}


def committed(data_seed: int):
    "The committed SGD result of a data seed: (folder, study configuration, solutions, centroids [k, probe × 2])."
    name, cfg = SOURCES[data_seed]
    folder = ROOT / 'nbs' / 'moons_posterior' / name
    sol = read_table(folder / 'solutions.csv').set_index('net')
    cen = read_table(folder / 'centroids.csv')
    p1 = cen.pivot(index='cluster', columns='probe', values='p1').sort_index().to_numpy()
    return folder, cfg, sol, np.stack([1 - p1, p1], -1).reshape(len(p1), -1)


def sgd_nets(cfg):
    "The study's nets retrained from their seeds, exactly as stage 1 trained them."
    nets = []
    for run in STUDY.runs(cfg):
        data, group = STUDY.load_data(run), STUDY.build_models(run)
        STUDY.train(run, data, group)
        nets += group
    return nets


def sample(run: str) -> Path:
    data_seed, prior_scale, per_cluster, settings = RUNS[run]
    out = OUT / run
    inputs = dict(run=run, data_seed=data_seed, prior_scale=prior_scale, chains_per_cluster=per_cluster,
                  settings={k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()})
    if (out / 'run.json').exists():
        done = json.loads((out / 'run.json').read_text())
        if {k: done.get(k) for k in inputs} == json.loads(json.dumps(inputs)):
            print(f'{run}: done already ({out})'); return out
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    folder, cfg, sol, centroids = committed(data_seed)
    nets = sgd_nets(cfg)
    X, y, probe = _data(cfg)
    F = function_features(predict_on_probe(nets, probe))
    labels = assign_to_clusters(F, centroids)
    if not (labels == sol.cluster.to_numpy()).all():
        raise RuntimeError(f'{run}: the retrained nets do not reproduce the committed clusters of {folder}')
    starts = reference_starts(F, labels, centroids, sol.index.to_numpy(), per_cluster)
    ids = list(starts.values())
    target = NetPosterior(make_mlp([2, *cfg.hidden, 2]), X, y, prior_scale=prior_scale)
    w0 = torch.stack([torch.cat([p.detach().reshape(-1) for p in nets[i].parameters()]) for i in ids])
    train_seconds = time.perf_counter() - t0

    def record(z):                                         # the cold states' functions: distance to each centroid
        p = target.outputs(z, probe).softmax(-1).double().numpy()
        f = p.reshape(len(p), -1)
        return ((f[:, None, :] - centroids[None]) ** 2).sum(-1)          # [chains, k]

    res = replica_exchange(target, target.whiten(w0), settings, record=record)
    dist = np.stack(res.recorded, 1)                                     # [chains, draws, k]
    C, D, k = dist.shape
    draws = pd.DataFrame({'chain': np.repeat(np.arange(C), D), 'draw': np.tile(np.arange(D), C),
                          'cluster': dist.argmin(-1).ravel(), 'log_lik': res.log_lik.ravel(),
                          'log_prior': res.log_prior.ravel(),
                          **{f'dist_C{c + 1}': dist[..., c].ravel() for c in range(k)}})
    sgd_dist = ((F[:, None, :] - centroids[None]) ** 2).sum(-1)
    start_rows = pd.DataFrame({'chain': range(C), 'start': list(starts), 'net': ids,
                               'start_cluster': labels[ids], 'start_loss': sol.loss.loc[ids].to_numpy(),
                               'start_dist_own': sgd_dist[ids, labels[ids]]})
    ladder = pd.DataFrame({'rung': range(len(settings.betas)), 'beta': settings.betas, 'step': res.steps,
                           'accept': res.accept, 'swap_to_next': [*res.swap, np.nan]})
    write_table(draws, out / 'draws.csv')
    write_table(start_rows, out / 'starts.csv')
    write_table(ladder, out / 'ladder.csv')
    meta = dict(inputs, source=str(folder.relative_to(ROOT)), n_train=len(X), n_params=int(target.stack.n_params),
                prior='Gaussian N(0, s²·var_default), var_default = 1/(3·fan_in) for every weight and bias (PyTorch '
                      'nn.Linear default init, uniform on ±1/√fan_in)', s=prior_scale,
                sgd_median_dist_to_own_centroid=float(np.median(sgd_dist[np.arange(len(F)), labels])),
                seconds_sampling=res.seconds, seconds_retraining=train_seconds,
                seconds_per_step=res.seconds / settings.n_steps, replicas=C * len(settings.betas),
                machine=f'{platform.node()} {platform.machine()} {platform.processor() or ""}'.strip(),
                cpu='2 cores shared with two other jobs, torch.set_num_threads(1)', torch=torch.__version__,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'))
    with atomic_path(out / 'run.json') as tmp:
        tmp.write_text(json.dumps(meta, indent=1) + '\n')
    print(f'{run}: {res.seconds:.0f} s sampling, accept {np.round(res.accept, 2)}, swap {np.round(res.swap, 2)}')
    return out


# ------------------------------------------------------------------------------------------------ analysis
XI_PAPER, N_BOOT, BLOCK, RHAT_OK = 0.5, 200, 20, 1.05      # table 2's ξ; posterior draws resampled 20 at a time
PAPER = {'KL(Bayes‖Q) [nats]': 0.009, 'W1 [ground |x_i − x_j|, x = cluster index]': 0.002, 'JS divergence [bits]': 0.003}


def _row(quantity, value, lo=np.nan, hi=np.nan, note=''):
    return dict(quantity=quantity, value=float(value), ci_low=float(lo), ci_high=float(hi), note=note)


def sgd_side(data_seed: int):
    "SGD labels [nets], k, and D_ξ's per-cluster form (eq. 13: λ_k, global d_s = 2 λ̄ s) from the committed study."
    from fracsgd.studies.posterior_comparison import LEDGER_CHOICE, tempering_choices
    folder, cfg, sol, centroids = committed(data_seed)
    summary = read_table(folder / 'summary.csv').set_index('quantity')
    k = len(centroids)
    s = float(summary.value['late exponent s (log-log slope after t_c)'])
    pos = sol[sol.llc > 0]
    lam_k = pos.groupby('cluster').llc.mean().reindex(range(k)).to_numpy()
    choices = tempering_choices(s, pos.llc.mean(), lam_k, np.full(k, s))
    return sol.cluster.to_numpy(), k, choices[LEDGER_CHOICE], cfg, sol


def analyse(run: str, xi_other: float | None = None) -> pd.DataFrame:
    """Tables of one sampled run: masses per chain, R-hats, fig. 3's scan, table 2 (raw and tempered SGD at the
    paper's ξ and at ξ*) with bootstrap intervals, and summary.csv; `xi_other`: ξ* chosen on the other data seed."""
    from fracsgd.posterior.replica import convergence_table
    from fracsgd.posterior.tempering import best_xi, compare_to_posterior, tempered_masses, xi_scan
    out = OUT / run
    meta = json.loads((out / 'run.json').read_text())
    draws, starts = read_table(out / 'draws.csv'), read_table(out / 'starts.csv')
    labels_sgd, k, factor, cfg, sol = sgd_side(meta['data_seed'])
    post = draws.pivot(index='chain', columns='draw', values='cluster').to_numpy()          # [chains, draws]
    energy = -(draws.log_lik + draws.log_prior).to_numpy().reshape(post.shape)
    dist = draws[[f'dist_C{c + 1}' for c in range(k)]].to_numpy()                          # [draws, k]
    conv = convergence_table(post, k, energy)
    write_table(conv, out / 'rhat.csv')
    masses = pd.DataFrame({'chain': range(len(post)), 'start': starts.start, 'start_cluster': starts.start_cluster + 1,
                           **{f'C{c + 1}': (post == c).mean(1) for c in range(k)},
                           'transitions': (np.diff(post, axis=1) != 0).sum(1)})
    write_table(masses, out / 'masses.csv')
    p_sgd, p_post = cluster_masses(labels_sgd, k), cluster_masses(post, k)
    xis = cfg.xis
    scan = pd.concat([xi_scan(p_sgd, p_post, xis, 1, compare=c, **factor).assign(comparison=c)
                      for c in ('untempered', 'tempered')], ignore_index=True)
    write_table(scan, out / 'scan.csv')
    block = min(BLOCK, post.shape[1])
    star = best_xi(labels_sgd, post, k, xis, 1, n_boot=N_BOOT, block=block, **factor)
    parts = {'paper ξ': XI_PAPER, 'ξ*': star[0]} | ({'ξ from the other seed': xi_other} if xi_other else {})
    table2 = pd.concat([compare_to_posterior(labels_sgd, post, k, xi, 1, n_boot=N_BOOT, block=block, **factor)
                        .assign(at=name, xi=xi) for name, xi in parts.items()], ignore_index=True)
    write_table(table2, out / 'table2.csv')
    rmax, emax = float(conv.rhat.iloc[:k].max()), float(conv.rhat.iloc[k])
    ok = rmax <= RHAT_OK
    flag = '' if ok else f'INCONCLUSIVE: split R-hat {rmax:.3f} > {RHAT_OK}, the chains disagree; '
    ladder = read_table(out / 'ladder.csv')
    edge = lambda v: ('; AT THE GRID EDGE: the curve falls towards it' if v in (min(xis), max(xis)) else '')
    rows = [_row('nets analysed', len(sol)),
            _row('LLC (mean over analysed nets, LLC > 0)', sol.llc[sol.llc > 0].mean(),
                 note=f"{int((sol.llc <= 0).sum())} nets with LLC ≤ 0; {int(sol.llc_flagged.sum())} flagged by the diagnostics"),
            _row('clusters k', k, note=f"the committed clusters of {meta['source']}"),
            _row('chains', len(post), note=f"{meta['chains_per_cluster']} started in each cluster; {post.shape[1]} draws "
                 f"each, every {meta['settings']['thin']} MALA steps after {meta['settings']['n_burnin']} of burn-in"),
            _row('split R-hat, cluster indicators (max over clusters)', rmax,
                 note='per cluster: ' + ', '.join(f'{r:.4f}' for r in conv.rhat.iloc[:k]) + f'; {RHAT_OK} or less: converged'),
            _row('split R-hat, energy', emax),
            _row('MALA acceptance at β = 1', ladder.accept.iloc[0], note=f"step {ladder.step.iloc[0]:.4g} (whitened)"),
            _row('swap rate, lowest over adjacent rungs', ladder.swap_to_next.min(),
                 note=f"{len(ladder)} rungs, β from 1 to {ladder.beta.iloc[-1]:.3g}"),
            _row('cluster transitions per chain (mean)', masses.transitions.mean(),
                 note=f"min {masses.transitions.min()}, max {masses.transitions.max()}"),
            _row('sampling seconds', meta['seconds_sampling'], note=meta['cpu']),
            _row('posterior draws: mean train loss (−log likelihood / n)', (-draws.log_lik / meta['n_train']).mean(),
                 note=f"SGD nets: {sol.loss.mean():.4f}"),
            _row('posterior draws: median squared probe distance to the nearest SGD centroid', np.median(dist.min(1)),
                 note='features: class probabilities on the probe grid, as the clusters are formed'),
            _row('SGD nets: median squared probe distance to their own centroid', meta['sgd_median_dist_to_own_centroid']),
            _row('posterior draws: median ratio of the nearest to the second-nearest centroid distance',
                 np.median(np.sort(dist, 1)[:, 0] / np.sort(dist, 1)[:, 1]), note='near 1: the draw sits between clusters')]
    rows += [_row(f'raw SGD mass of cluster C{c + 1}', p_sgd[c]) for c in range(k)]
    rows += [_row(f'posterior mass of cluster C{c + 1}', p_post[c], conv.chain_min.iloc[c], conv.chain_max.iloc[c],
                  flag + 'interval: the smallest and largest mass over chains') for c in range(k)]
    rows += [_row(f'tempered SGD mass of cluster C{c + 1}, ξ = {XI_PAPER}', v)
             for c, v in enumerate(tempered_masses(p_sgd, XI_PAPER, 1, **factor))]
    rows.append(_row('ξ minimising KL(SGD‖theoretical SGD)', *star,
                     f"{flag}m = 1, D_ξ per cluster: λ_k, global d_s (eq. 13); grid {min(xis)}–{max(xis)}" + edge(star[0])))
    t2 = table2.set_index(['at', 'comparison', 'metric'])
    for name, xi in parts.items():
        for metric in PAPER:
            for comp, label in (('Q = tempered SGD', 'tempered SGD'), ('Q = raw SGD', 'raw SGD')):
                r = t2.loc[(name, comp, metric)]
                where = f'ξ = {xi:g}' + (' (ξ*)' if name == 'ξ*' else ' (chosen on the other data seed)'
                                        if name == 'ξ from the other seed' else '')
                if label == 'raw SGD' and name != 'paper ξ':
                    continue
                q = f'{metric}, {label} vs Bayes' + (f', {where}' if label == 'tempered SGD' else ' (baseline)')
                rows.append(_row(q, r.value, r.ci_low, r.ci_high, flag + f'm = 1, D_ξ eq. 13; paper: {PAPER[metric]}'))
        r = t2.loc[(name, 'noise floor: Q = Bayes resample', 'KL(Bayes‖Q) [nats]')]
    r = t2.loc[('paper ξ', 'noise floor: Q = Bayes resample', 'KL(Bayes‖Q) [nats]')]
    rows.append(_row('KL(Bayes‖Q) [nats], noise floor (two resamples of Bayes)', r.value, np.nan, r.ci_high,
                     'value: median; ci_high: 95% quantile'))
    summary = pd.DataFrame(rows)
    write_table(summary, out / 'summary.csv')
    print(f"{run}: R-hat {rmax:.4f} (energy {emax:.4f}), masses post {np.round(p_post, 3)} sgd {np.round(p_sgd, 3)}, "
          f"xi* {star}")
    return summary


if __name__ == '__main__':
    what, names = sys.argv[1], sys.argv[2:] or [r for r in RUNS if r != 'smoke']
    if what in ('sample', 'all'):
        for n in names:
            sample(n)
    if what in ('analyse', 'all'):
        for n in names:                                     # seed 1 last: it reads ξ* of seed 0 (out of sample)
            other = (read_table(OUT / 'seed0' / 'summary.csv').set_index('quantity').value
                     ['ξ minimising KL(SGD‖theoretical SGD)'] if n == 'seed1' and (OUT / 'seed0' / 'summary.csv').exists()
                     else None)
            analyse(n, other)
