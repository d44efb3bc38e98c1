"""The coverage experiment of the chapter "An interval for d_s that carries the fit's choices" (nbs/07d_ds_interval.ipynb).

    OMP_NUM_THREADS=1 python tools/ds_interval.py [exact] [coverage]

`exact`: each known d_s of nbs/ds_interval/test_set.csv checked by an exact computation on the graph (the
return probability averaged over every node, from the eigenvalues of the walk's transition matrix; on Z^d the same
sum over the Fourier modes of a torus too large to wrap), fitted over whole log-periods; writes exact.csv.
`coverage`: about 20 independent walk ensembles per graph (12 graphs), each read by the new rule (`ds_interval`)
and by the old default (`spectral_dimension_from_returns`); writes coverage.csv, one row per ensemble.
Files are written whole (a temporary file, then a rename), with run.json: date, machine, measured seconds.
About seven minutes on one shared core: 6.1 min coverage, 38 s exact (run.json)."""
import datetime, json, os, platform, sys, time
from pathlib import Path

import numpy as np
import pandas as pd

from fracsgd.diffusion.ds_interval import (ds_interval, hanoi_graph, interval_curves, lattice_return_exact,
                                           lattice_walks, sierpinski_tetrahedron, t_fractal,
                                           trace_return_probability, vicsek_fractal)
from fracsgd.diffusion.return_probability import gaussian_walks, graph_walk_positions, spectral_dimension_from_returns
from fracsgd.diffusion.spectral import _loglog_ols
from fracsgd.diffusion.walks import interior_nodes, percolation_cluster, sierpinski_gasket

OUT = Path(__file__).resolve().parents[1] / 'nbs' / 'ds_interval'
WALKERS, STEPS, N_TAU, N_BOOT = 100, 10_000, 40, 200
REPEATS, PERCOLATION_REPEATS = 20, 10


def write_csv(table: pd.DataFrame, name: str):
    tmp = OUT / (name + '.tmp')
    table.to_csv(tmp, index=False)
    os.replace(tmp, OUT / name)


def central(graph, fraction: float = 0.25) -> np.ndarray:
    "Nodes at least `fraction` of the width from every side of the bounding box in the first two coordinates."
    xy = graph.coords[:, :2]
    lo, hi = xy.min(0), xy.max(0)
    m = fraction * (hi - lo)
    keep = np.flatnonzero(np.all((xy >= lo + m) & (xy <= hi - m), axis=1))
    if not keep.size:
        raise ValueError(f"no central node in {graph.name}")
    return keep


def graph_case(graph, lazy: bool):
    starts = central(graph)
    def make(seed):
        chosen = np.random.default_rng(seed).choice(starts, WALKERS)
        return graph_walk_positions(graph, chosen, STEPS, seed=seed, lazy=lazy)
    return make


def percolation_case(seed):
    paths = []
    for k in range(2):
        cl = percolation_cluster(512, seed=1000 + 2 * seed + k)
        starts = np.random.default_rng(seed).choice(interior_nodes(cl, 128), WALKERS // 2)
        paths.append(graph_walk_positions(cl, starts, STEPS, seed=seed * 2 + k, lazy=True))
    return np.concatenate(paths)


def cases():
    "(graph, make(seed) -> paths [walkers, steps + 1, dim], repeats), in the order of test_set.csv."
    return [('vicsek', graph_case(vicsek_fractal(6), True), REPEATS),
            ('t_fractal', graph_case(t_fractal(9), True), REPEATS),
            ('sierpinski_tetrahedron', graph_case(sierpinski_tetrahedron(8), True), REPEATS),
            ('hanoi', graph_case(hanoi_graph(10), True), REPEATS),
            ('Z1', lambda s: lattice_walks(1, WALKERS, STEPS, seed=s), REPEATS),
            ('Z3', lambda s: lattice_walks(3, 2 * WALKERS, 2 * STEPS, seed=s), REPEATS),
            ('gasket', graph_case(sierpinski_gasket(9), False), REPEATS),
            ('Z2', lambda s: lattice_walks(2, WALKERS, STEPS, seed=s), REPEATS),
            ('R1', lambda s: gaussian_walks(WALKERS, STEPS, 1, seed=s), REPEATS),
            ('R2', lambda s: gaussian_walks(WALKERS, STEPS, 2, seed=s), REPEATS),
            ('R3', lambda s: gaussian_walks(WALKERS, STEPS, 3, seed=s), REPEATS),
            ('percolation', percolation_case, PERCOLATION_REPEATS)]


def coverage() -> pd.DataFrame:
    known = pd.read_csv(OUT / 'test_set.csv').set_index('graph')
    rows = []
    for name, make, repeats in cases():
        d = float(known.loc[name, 'd_s'])
        for rep in range(repeats):
            tic = time.time()
            paths = make(50_000 + 101 * rep)
            curves = interval_curves(paths, n_tau=N_TAU)
            new = ds_interval(curves, n_boot=N_BOOT, seed=rep)
            old = spectral_dimension_from_returns(curves, n_boot=N_BOOT, seed=rep)
            r = new.reference
            rows.append(dict(graph=name, role=known.loc[name, 'role'], repeat=rep, known=d, estimate=new.d_s,
                             low=new.low, high=new.high, covered=new.covers(d), width_rel=new.width / d,
                             n_fits=new.n_fits, spread_low=new.spread_low, spread_high=new.spread_high,
                             ref_eps=r.eps, ref_tau_min=r.tau_min, ref_tau_max=r.tau_max,
                             old_estimate=old.d_s, old_low=old.ci_low, old_high=old.ci_high,
                             old_covered=bool(old.ci_low <= d <= old.ci_high), old_width_rel=(old.ci_high - old.ci_low) / d,
                             old_eps=old.eps, old_tau_min=old.tau_min, old_tau_max=old.tau_max,
                             walkers=paths.shape[0], steps=paths.shape[1] - 1, reason=new.reason,
                             seconds=round(time.time() - tic, 2)))
            print(f"{name} {rep}: {new.d_s:.3f} [{new.low:.3f}, {new.high:.3f}] old [{old.ci_low:.3f}, {old.ci_high:.3f}] "
                  f"known {d:.3f} ({rows[-1]['seconds']} s)", flush=True)
    return pd.DataFrame(rows)


def whole_periods(period: float, first: float, periods: int, per_period: int = 24) -> np.ndarray:
    return np.unique(np.round(first * period ** np.linspace(0, periods, periods * per_period + 1)).astype(np.int64))


def exact() -> pd.DataFrame:
    "Exact d_s of each graph: the node-averaged return probability's slope over whole log-periods."
    known = pd.read_csv(OUT / 'test_set.csv').set_index('graph')
    # (graph, the graph or a lattice dimension, time factor of one log-period (scale factor ** d_w), periods)
    checks = [('vicsek', vicsek_fractal(5), 15, 2), ('t_fractal', t_fractal(7), 6, 3),
              ('sierpinski_tetrahedron', sierpinski_tetrahedron(5), 6, 2), ('hanoi', hanoi_graph(7), 5, 3),
              ('gasket', sierpinski_gasket(7), 5, 3), ('Z1', 1, None, None), ('Z2', 2, None, None), ('Z3', 3, None, None)]
    rows = []
    for name, g, period, periods in checks:
        tic = time.time()
        if isinstance(g, int):
            tau = np.unique(np.geomspace(100, 3000, 60).astype(np.int64))
            P = lattice_return_exact(g, tau, n={1: 8192, 2: 1024, 3: 160}[g])
            method, nodes, parts = f'Fourier sum on the {dict(zip((1, 2, 3), (8192, 1024, 160)))[g]}-torus', np.nan, []
        else:
            tau = whole_periods(period, period, periods)
            P = trace_return_probability(g, tau)
            method, nodes = f'eigenvalues of {g.name}', g.n_nodes
            parts = []
            for k in range(periods):
                sel = (tau >= period ** (k + 1)) & (tau <= period ** (k + 2))
                parts.append(-2 * _loglog_ols(np.log(tau[sel]), np.log(P[sel]))[0])
        d = -2 * _loglog_ols(np.log(tau), np.log(P))[0]
        rows.append(dict(graph=name, known=float(known.loc[name, 'd_s']), exact_d_s=d,
                         relative_error=d / float(known.loc[name, 'd_s']) - 1, tau_min=int(tau[0]), tau_max=int(tau[-1]),
                         per_period=' / '.join(f'{p:.3f}' for p in parts), method=method, nodes=nodes,
                         seconds=round(time.time() - tic, 1)))
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


if __name__ == '__main__':
    parts = sys.argv[1:] or ['exact', 'coverage']
    meta_path = OUT / 'run.json'
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    for part in parts:
        tic = time.time()
        write_csv({'exact': exact, 'coverage': coverage}[part](), f'{part}.csv')
        meta[part] = dict(seconds=round(time.time() - tic, 1), date=datetime.date.today().isoformat(),
                          machine='2-core CPU shared with two other jobs, one thread', numpy=np.__version__,
                          python=platform.python_version(),
                          settings=dict(walkers=WALKERS, steps=STEPS, n_tau=N_TAU, n_boot=N_BOOT, repeats=REPEATS,
                                        percolation_repeats=PERCOLATION_REPEATS) if part == 'coverage' else {})
        tmp = meta_path.with_suffix('.tmp')
        tmp.write_text(json.dumps(meta, indent=1) + '\n')
        os.replace(tmp, meta_path)
