# %% [markdown]
# # An interval for d_s that carries the fit's choices
#
# > The return-probability estimate of d_s with an interval that includes the spread over every admissible fit window and ε, tested on fractals and walks on which nothing was tuned.

# %%
#| default_exp diffusion.ds_interval

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from fracsgd.diffusion.walks import Graph, graph_from_edges, _grid_graph
from fracsgd.diffusion.return_probability import (RETURN_EPS, ReturnCurves, ReturnFit, _as_walks, return_curves,
                                                  spectral_dimension_from_returns)

# %%
import json, time
import matplotlib.pyplot as plt
import pandas as pd
from fracsgd.core import committed_dir
from fracsgd.diffusion.walks import interior_nodes, is_bipartite, propagate_walk, square_lattice
from fracsgd.diffusion.return_probability import gaussian_walks, graph_walk_positions

# %% [markdown]
# The [return-probability chapter](return_probability.html) reads the spectral dimension from how often walks come
# back, $P_\varepsilon(\tau) \sim \tau^{-d_s/2}$, on one automatic lag window at one ε. Its 95% interval is a bootstrap
# over walkers: it carries the sampling error and nothing else. Which window and which ε are choices, and on media
# where the power law holds only on average (log-periodic fractals, finite-time corrections) the choice moves the
# estimate by more than the bootstrap says. This chapter builds an interval that carries those choices, and tests it
# on six graphs and walks on which nothing was tuned.
#
# ## What it found
#
# 230 walk ensembles (`tools/ds_interval.py`, six CPU-minutes on one shared core, committed in `nbs/ds_interval/`),
# about 20 per graph with different seeds, each read by the old default and by the new rule:
# - **Held out** (Vicsek, T-fractal, Sierpinski tetrahedron, Hanoi, $\mathbb Z^1$, $\mathbb Z^3$): the new interval holds
#   the known $d_s$ in **116 of 120** ensembles (97%) at a median width of **16.0%** of $d_s$. The old interval holds it
#   in 63 of 120 at 4.2%: it misses every Vicsek and T-fractal ensemble (its medians read 7.8% and 4.9% low) and 12 of
#   20 on $\mathbb Z^3$.
# - **The cases the old default was validated on** (gasket, $\mathbb Z^2$, Gaussian walks in $\mathbb R^{1,2,3}$):
#   100 of 100 at 14.8% (old: 78 of 100 at 4.2%; its gasket median reads 2.7% low, 4 of 20 covered).
# - **Critical percolation**: 9 of 10 (old: 0 of 10; its median reads 9.9% low). The new point estimate is still 5%
#   low; the interval covers by being wide enough, not by removing the bias.
# - The four misses are all on the Vicsek fractal, all low (see "Where it fails").
#
# The width is the price of the coverage: about four times the bootstrap's.

# %%
RESULTS = committed_dir('ds_interval')
test_set = pd.read_csv(RESULTS / 'test_set.csv')
cov = pd.read_csv(RESULTS / 'coverage.csv')
run = json.loads((RESULTS / 'run.json').read_text())
def summary(t):
    return pd.Series({'ensembles': len(t), 'new: covered': int(t.covered.sum()),
                      'new: median width / d_s': t.width_rel.median(), 'old: covered': int(t.old_covered.sum()),
                      'old: median width / d_s': t.old_width_rel.median(),
                      'old: median (estimate / d_s − 1)': (t.old_estimate / t.known - 1).median()})
order = list(test_set.graph)
table = cov.groupby('graph', sort=False).apply(summary).loc[order]
table.insert(0, 'role', test_set.set_index('graph').role.loc[order])
table.insert(1, 'known d_s', test_set.set_index('graph').d_s.loc[order])
roles = cov.assign(group=np.where(cov.role == 'held out', 'all held out',
                                  np.where(cov.graph == 'percolation', 'percolation', 'tuned on, but percolation')))
by_role = roles.groupby('group').apply(summary)
assert cov.reason.isna().all() and len(cov) == 230, cov.reason.unique()
held = cov[cov.role == 'held out']
assert (held.covered.sum(), round(held.width_rel.median(), 3), held.old_covered.sum()) == (116, 0.16, 63)
assert set(cov[~cov.covered & (cov.role == 'held out')].graph) == {'vicsek'}
assert (cov.low <= cov.estimate).all() and (cov.estimate <= cov.high).all()
assert (cov.low <= cov.old_low + 1e-9).sum() >= 0.9 * len(cov)     # the union nearly always holds the old interval
print(f"{run['coverage']['date']}, {run['coverage']['machine']}: {run['coverage']['seconds'] / 60:.0f} min for "
      f"{len(cov)} ensembles; exact checks {run['exact']['seconds']:.0f} s")
pd.concat([table, by_role.assign(role='')]).round(3)

# %%
fig, ax = plt.subplots(figsize=(10, 4.2))
for k, g in enumerate(order):
    t = cov[cov.graph == g]
    x = k + np.linspace(-0.38, 0.38, len(t))
    ax.vlines(x - 0.008, t.old_low / t.known, t.old_high / t.known, color='C3', lw=1.4,
              label='old: automatic window, bootstrap' if k == 0 else None)
    ax.vlines(x + 0.008, t.low / t.known, t.high / t.known, color='C0', lw=0.9, alpha=0.8,
              label='new: union over admissible windows and ε' if k == 0 else None)
ax.axhline(1, color='k', lw=0.8)
ax.axvline(5.5, color='grey', lw=0.6, ls=':')
ax.text(2.5, 1.33, 'held out', ha='center')
ax.text(8.5, 1.33, 'tuned on (old default)', ha='center')
ax.set_xticks(range(len(order)), [g.replace('sierpinski_', 'S. ') for g in order], rotation=20)
ax.set(ylabel='interval / known $d_s$', ylim=(0.6, 1.4),
       title='95% intervals of 230 walk ensembles, relative to the known $d_s$')
ax.legend(loc='lower left', fontsize=8)
plt.tight_layout()
plt.show()


# %% [markdown]
# ## The rule
#
# The paper reads $d_s$ from the displacement slope and the LLC (its eq. 17), so its walk relation
# $d_\text{walk} = 2\lambda/d_s$ and the bound $d_s \le \bar\lambda$ are built into every number computed that way.
# The return probability needs no λ: on a medium of spectral dimension $d_s$ the chance of being back within ε after
# a lag τ falls as $\tau^{-d_s/2}$ once τ is long enough for ε and the step to be small against the distance walked.
# "Long enough" is where the choices enter: `spectral_dimension_from_returns` fits the first contiguous run of lags
# where MSD(τ) ≥ ε²/`max_bias` and at least `min_hits` returns were counted, at the smallest ε, and reports a
# bootstrap interval over walkers. Other runs of lags and other ε satisfy the same conditions and read other slopes.
#
# **Admissible.** A fit (ε, lag window) is admissible when (`admissible_windows`):
# - ε is one of the curves' ε (here ¼, ½, 1, 2 and 4 times the walk's root mean squared step, `interval_curves`);
# - the window is a contiguous run of at least `min_lags` = 3 lags of the log-spaced grid spanning at least
#   `min_decades` = 1 decade;
# - on every lag of it at least `min_hits` = 100 returns were counted (pooled over walkers), and
#   MSD(τ) ≥ max(ε, step)²/`max_bias` with `max_bias` = 3%. The ε half of this is the old rule's condition: for
#   Gaussian increments the local slope is off by a relative $\tfrac{d}{d+2}\varepsilon^2/\mathrm{MSD}$ in every
#   dimension. The step half is new and applies the same bound to the other small length of a walk on a graph, its
#   step: with ε below a lattice spacing the old condition holds from τ ≈ 3, where the walk still feels single
#   sites.
#
# A decade, not the old half-decade, because a shorter window reads the noise of a few correlated lags and the
# log-periodic wiggle of a fractal (whose period, $\tau \to \tau\,\ell^{d_w}$ for a fractal made of copies scaled by
# $1/\ell$, is 0.7 decades on the gasket and the Hanoi graph and 1.2 on the Vicsek fractal). These two bounds and the
# ε grid were fixed before the coverage experiment ran, and the lattice and Gaussian cases of the old validation
# (chapter 07a) were the only ones used to choose between half a decade and one. One disclosure: the step bound was
# added after a first look at a single ensemble each of the Vicsek fractal and $\mathbb Z^1$ (under half-decade
# windows, where early windows read 0.8 on Vicsek), so those two are not perfectly untouched.
#
# **The interval** (`ds_interval`). The reference fit is the longest admissible window at the smallest ε that has
# one, fitted by `spectral_dimension_from_returns` itself; its estimate is the point estimate and its bootstrap over
# walkers (Hesterberg-expanded, as in the [spectral chapter](spectral.html)) measures the sampling error. Every
# admissible fit $k$ gives an estimate $\hat d_k$ (the same least-squares slope on the same mean curve, computed for
# all windows at once from prefix sums). Each is widened by the reference's bootstrap, and the interval is the
# union:
#
# $$\Bigl[\min_k \hat d_k - (\hat d_\text{ref} - \ell_\text{ref}),\; \max_k \hat d_k + (u_\text{ref} - \hat d_\text{ref})\Bigr],$$
#
# with $[\ell_\text{ref}, u_\text{ref}]$ the reference's 95% interval. It holds every admissible estimate and the
# reference's own interval. It is not a confidence interval in the strict sense: its coverage is whatever the
# test below measures. Its width is the price: the spread over windows is systematic (a fractal's power law is only
# an average) and also sampling noise counted again at each window, so it is wider than the bootstrap alone
# would be. When no window is admissible the result is NaN with the reason.

# %%
#| export
def interval_curves(paths, eps_factors=RETURN_EPS, n_tau: int = 40) -> ReturnCurves:
    "`return_curves` of `paths` [walkers, steps, dim] at ε = factor × the root mean squared one-step increment."
    x = _as_walks(paths)
    step = math.sqrt(float(((x[:, 1:] - x[:, :-1]) ** 2).sum(-1).mean()))
    if not step > 0:
        raise ValueError("the paths do not move: no step length to measure ε in")
    return return_curves(x, np.asarray(eps_factors, float) * step, n_tau=n_tau)

def admissible_windows(curves: ReturnCurves, max_bias: float = 0.03, min_hits: int = 100, min_decades: float = 0.5,
                       min_lags: int = 3, tau_min=None, tau_max=None, step_floor: bool = True) -> np.ndarray:
    """Every admissible (ε index, first lag index, last lag index): a contiguous run of at least `min_lags` lags
    spanning `min_decades` decades, on every lag of which at least `min_hits` returns were counted and
    MSD ≥ max(ε, step)²/`max_bias` (step: the root mean squared one-step increment, MSD at τ = 1, when
    `step_floor`), inside `tau_min`..`tau_max` if given."""
    for name, v, ok in (('max_bias', max_bias, max_bias > 0), ('min_hits', min_hits, min_hits >= 1),
                        ('min_decades', min_decades, min_decades >= 0), ('min_lags', min_lags, min_lags >= 3)):
        if not ok:
            raise ValueError(f"{name} out of range: {v!r}")
    tau = curves.tau.astype(float)
    lt = np.log10(tau)
    step2 = float(curves.msd[0]) if step_floor and curves.tau[0] == 1 else 0.0
    inside = (tau >= (tau_min or 0)) & (tau <= (tau_max or np.inf))
    out = []
    for j, e in enumerate(curves.eps):
        ok = (curves.msd >= max(e ** 2, step2) / max_bias) & (curves.hits[:, j].sum(0) >= min_hits) & inside
        for a in np.flatnonzero(ok):
            b = a
            while b + 1 < tau.size and ok[b + 1]:
                b += 1
            out += [(j, a, c) for c in range(a + min_lags - 1, b + 1) if lt[c] - lt[a] >= min_decades - 1e-12]
    return np.array(out, dtype=np.int64).reshape(-1, 3)

def _window_slopes(lt: np.ndarray, ly: np.ndarray, windows: np.ndarray) -> np.ndarray:
    "OLS slopes of ly[eps, taus] against lt on every window (j, a, b), from prefix sums: [windows]."
    ly = np.where(np.isfinite(ly), ly, 0.0)        # lags with no return are in no admissible window
    z = np.zeros((ly.shape[0], 1))
    cy, cxy = (np.concatenate([z, np.cumsum(v, -1)], -1) for v in (ly, ly * lt))
    cx, cxx = np.r_[0, np.cumsum(lt)], np.r_[0, np.cumsum(lt ** 2)]
    j, a, b1 = windows[:, 0], windows[:, 1], windows[:, 2] + 1
    n = (b1 - a).astype(float)
    sx, sxx, sy, sxy = cx[b1] - cx[a], cxx[b1] - cxx[a], cy[j, b1] - cy[j, a], cxy[j, b1] - cxy[j, a]
    return (n * sxy - sx * sy) / (n * sxx - sx ** 2)


# %%
#| export
@dataclass
class DsInterval:
    "`ds_interval`: the reference fit's d_s, the interval over every admissible fit, and what went into it."
    d_s: float
    low: float
    high: float
    n_fits: int
    spread_low: float
    spread_high: float
    reference: ReturnFit
    fits: object = field(default=None, repr=False)
    reason: str = ''
    @property
    def width(self) -> float: return self.high - self.low
    def covers(self, value: float) -> bool: return bool(self.low <= value <= self.high)
    def as_dict(self):
        out = {k: getattr(self, k) for k in ('d_s', 'low', 'high', 'n_fits', 'spread_low', 'spread_high', 'reason')}
        out.update({f'reference_{k}': v for k, v in self.reference.as_dict().items()})
        return out

def ds_interval(curves: ReturnCurves, max_bias: float = 0.03, min_hits: int = 100, min_decades: float = 1.0,
                min_lags: int = 3, tau_min=None, tau_max=None, step_floor: bool = True, n_boot: int = 200,
                seed: int = 0, level: float = 0.95) -> DsInterval:
    """d_s with an interval that carries the choice of fit: the union, over every admissible window and ε
    (`admissible_windows`), of each fit's estimate widened by the reference fit's bootstrap interval (the
    reference: the longest admissible window at the smallest ε that has one, fitted by
    `spectral_dimension_from_returns`)."""
    if not isinstance(curves, ReturnCurves):
        raise TypeError(f"curves must be ReturnCurves (from return_curves), got {type(curves).__name__}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if isinstance(n_boot, bool) or int(n_boot) != n_boot or n_boot < 20:
        raise ValueError(f"n_boot must be an integer ≥ 20 (the widening is a bootstrap interval), got {n_boot!r}")
    windows = admissible_windows(curves, max_bias, min_hits, min_decades, min_lags, tau_min, tau_max, step_floor)
    nan = math.nan
    if not len(windows):
        why = spectral_dimension_from_returns(curves, max_bias=max_bias, min_hits=min_hits, min_decades=min_decades,
                                              tau_min=tau_min, tau_max=tau_max, n_boot=0).reason
        none = ReturnFit(nan, nan, nan, float(curves.eps[0]), nan, nan, n_units=curves.hits.shape[0], reason=why)
        return DsInterval(nan, nan, nan, 0, nan, nan, none, None, 'no admissible window' + (f' ({why})' if why else ''))
    import pandas as pd
    tau, lt = curves.tau.astype(float), np.log(curves.tau.astype(float))
    first = windows[windows[:, 0] == windows[:, 0].min()]
    j, a, b = first[np.argmax(lt[first[:, 2]] - lt[first[:, 1]])]
    ref = spectral_dimension_from_returns(curves, curves.eps[j], tau_min=tau[a], tau_max=tau[b], max_bias=max_bias,
                                          min_hits=min_hits, min_decades=0, n_boot=n_boot, seed=seed, level=level)
    P = (curves.hits / curves.pairs[:, None, :]).mean(0)                            # [eps, taus], as the fit reads it
    with np.errstate(divide='ignore'):
        est = -2 * _window_slopes(lt, np.log(P), windows)
    below, above = ref.d_s - ref.ci_low, ref.ci_high - ref.d_s
    fits = pd.DataFrame({'eps': curves.eps[windows[:, 0]], 'tau_min': curves.tau[windows[:, 1]],
                         'tau_max': curves.tau[windows[:, 2]], 'lags': windows[:, 2] - windows[:, 1] + 1,
                         'd_s': est, 'ci_low': est - below, 'ci_high': est + above})
    return DsInterval(ref.d_s, float(est.min() - below), float(est.max() + above), len(windows), float(est.min()),
                      float(est.max()), ref, fits)


# %% [markdown]
# ## The test set, and its known values checked exactly
#
# Six media built here, on which no setting of this chapter or of the old default was tuned (`nbs/ds_interval/test_set.csv`,
# committed before the experiment first ran):
# - **Vicsek fractal** (`vicsek_fractal`): the sites of a $3^n$ square grid whose base-3 digits all fall in a plus
#   sign, joined to their grid neighbours: five copies at scale ⅓, a tree. On a tree the resistance between two
#   points is their path length, which triples per generation, so the resistance exponent is ζ = 1 and the
#   Einstein relation $d_w = d_f + \zeta$ gives $d_w = \ln 15/\ln 3$ and $d_s = 2d_f/d_w = 2\ln 5/\ln 15 \approx 1.189$.
# - **T-fractal** (`t_fractal`): each edge a–b becomes a–m–b with a side branch m–c; a tree of $3^n$ edges, scale ½,
#   so $d_f = \ln 3/\ln 2$, ζ = 1, $d_w = \ln 6/\ln 2$, $d_s = 2\ln 3/\ln 6 \approx 1.226$. Its equal-edge drawing in the
#   plane puts some nodes on top of others, so each such node is lifted by one unit in a third coordinate.
# - **Sierpinski tetrahedron** (`sierpinski_tetrahedron`), the 3-D gasket: four copies at scale ½ ($d_f = 2$), corner
#   resistance × 3/2 per generation, $d_w = \log_2 6$, $d_s = 2\ln 4/\ln 6 \approx 1.547$; walks in three coordinates.
# - **Hanoi graph** (`hanoi_graph`), the states of the three-peg Tower of Hanoi: three copies joined corner to corner by
#   single edges. Those edges add a constant to the corner resistance, which still grows × 5/3 per generation as on
#   the gasket, so $d_w = \log_2 5$ and $d_s = 2\ln 3/\ln 5 \approx 1.365$ — the gasket's value on a different graph (it is
#   not bipartite, it has bridges, and its nodes have degree 3 rather than 4).
# - **$\mathbb Z^1$ and $\mathbb Z^3$** (`lattice_walks`): lazy simple walks on the infinite lattices, $d_s = d$ by the
#   local central limit theorem.
#
# Every walk is lazy (it holds with probability ½), which removes the parity of bipartite graphs. Walkers start at
# nodes of the central half of the graph's box (in its first two coordinates), 100 walkers of 10,000 steps, none long
# enough to feel the graph's edge; $\mathbb Z^3$ returns rarely and gets 200 walkers of 20,000 steps.
#
# Each known value was checked by an exact computation on the graph before being trusted (`tools/ds_interval.py
# exact`). For a finite graph the return probability averaged over **every** node is a sum over the eigenvalues μ
# of the walk's transition matrix, $\frac1N\sum_k \mu_k^\tau$ (`trace_return_probability`, with the stationary μ = 1
# removed); on $\mathbb Z^d$ the same sum runs over the Fourier modes of a torus too large for the walk to wrap around
# (`lattice_return_exact`). Fitted over whole log-periods (two or three factors of $\ell^{d_w}$ = 15, 6, 6, 5), every
# exact slope is within 1% of the known value; the per-period slopes show the log-periodic wiggle and a drift
# upwards in the last period, where the smaller graphs of the exact check begin to feel their size:

# %%
exact = pd.read_csv(RESULTS / 'exact.csv')
assert (exact.relative_error.abs() < 0.01).all(), exact
exact[['graph', 'known', 'exact_d_s', 'relative_error', 'tau_min', 'tau_max', 'per_period', 'method']].round(4)

# %%
#| export
VICSEK_DS = 2 * math.log(5) / math.log(15)        # d_f = ln5/ln3, d_w = ln15/ln3
T_FRACTAL_DS = 2 * math.log(3) / math.log(6)      # d_f = ln3/ln2, d_w = ln6/ln2
TETRAHEDRON_DS = 2 * math.log(4) / math.log(6)    # d_f = 2, d_w = ln6/ln2
HANOI_DS = 2 * math.log(3) / math.log(5)          # d_f = ln3/ln2, d_w = ln5/ln2


# %%
#| export
def _check_level(level, low: int = 0) -> int:
    if isinstance(level, bool) or int(level) != level or level < low:
        raise ValueError(f"level must be an integer ≥ {low}, got {level!r}")
    return int(level)

def _graph(i, j, coords, corners, name) -> Graph:
    "`graph_from_edges` for coordinates in any dimension (it checks its own 2-D case)."
    coords = np.asarray(coords, float)
    if coords.shape[1] == 2:
        return graph_from_edges(i, j, coords, corners, name)
    n = len(coords)
    a = sp.coo_matrix((np.ones(2 * len(i)), (np.r_[i, j], np.r_[j, i])), shape=(n, n)).tocsr()
    a.data[:] = 1.0
    a.sort_indices()
    return Graph(a, coords, np.asarray(corners, dtype=np.int64), name)

def vicsek_fractal(level: int) -> Graph:
    "The cross-shaped Vicsek fractal: the sites of a 3^level square grid whose base-3 digits all lie in a plus sign."
    level = _check_level(level)
    side = 3 ** level
    x = np.arange(side)
    keep = np.ones((side, side), dtype=bool)
    plus = np.zeros((3, 3), dtype=bool)
    plus[1, :] = plus[:, 1] = True
    for k in range(level):
        d = (x // 3 ** k) % 3
        keep &= plus[d[:, None], d[None, :]]
    return _grid_graph(keep, f'vicsek_fractal(level={level})')

def t_fractal(level: int) -> Graph:
    """The T-fractal: each edge a–b of the previous generation becomes a–m–b with a side branch m–c (3^level edges,
    all of one length). The plane drawing stacks some nodes on others; each such node is lifted by one unit in a
    third coordinate per node already there, so no two nodes are closer than one edge."""
    level = _check_level(level)
    coords = np.array([[0, 0], [1, 0]], dtype=np.int64)
    edges = np.array([[0, 1]])
    for g in range(level):
        coords = 2 * coords
        a, b = edges[:, 0], edges[:, 1]
        n, e = len(coords), len(edges)
        m, c = n + np.arange(e), n + e + np.arange(e)
        mid = (coords[a] + coords[b]) // 2
        v = (coords[b] - coords[a]) // 2
        side = mid + (-1) ** g * np.stack([-v[:, 1], v[:, 0]], 1)            # a quarter turn, alternating sides
        coords = np.concatenate([coords, mid, side])
        edges = np.concatenate([np.stack([a, m], 1), np.stack([m, b], 1), np.stack([m, c], 1)])
    _, first, where = np.unique(coords, axis=0, return_index=True, return_inverse=True)
    where = where.ravel()
    order = np.argsort(where, kind='stable')                              # nodes grouped by point, in index order
    rank = np.empty(len(coords), dtype=np.int64)
    rank[order] = np.arange(len(coords)) - np.searchsorted(where[order], where[order])
    xyz = np.c_[coords, rank].astype(float)
    return _graph(edges[:, 0], edges[:, 1], xyz, [0, 1], f't_fractal(level={level})')

_TET = np.array([[1, 0, 0], [0.5, math.sqrt(3) / 2, 0], [0.5, math.sqrt(3) / 6, math.sqrt(2 / 3)]])

def sierpinski_tetrahedron(level: int) -> Graph:
    "The Sierpinski tetrahedron (3-D gasket) of 4^level unit tetrahedra, edge 2^level; nodes are their vertices."
    level = _check_level(level)
    corner = np.zeros((1, 3), dtype=np.int64)
    unit = np.eye(3, dtype=np.int64)
    for k in range(level):
        corner = np.concatenate([corner] + [corner + 2 ** k * u for u in unit])
    tet = np.stack([corner, *(corner + u for u in unit)], axis=1)             # [tetrahedra, 4, 3]
    side = 2 ** level + 1
    keys, node = np.unique((tet[..., 0] * side + tet[..., 1]) * side + tet[..., 2], return_inverse=True)
    node = node.reshape(-1, 4)
    pairs = np.array([(p, q) for p in range(4) for q in range(p + 1, 4)])
    ijk = np.stack([keys // side**2, (keys // side) % side, keys % side], 1)
    corners = np.searchsorted(keys, [0, (side - 1) * side**2, (side - 1) * side, side - 1])
    return _graph(node[:, pairs[:, 0]].ravel(), node[:, pairs[:, 1]].ravel(), ijk @ _TET, corners,
                  f'sierpinski_tetrahedron(level={level})')

_TRI = np.array([[0, 0], [1, 0], [0.5, math.sqrt(3) / 2]])

def hanoi_graph(level: int) -> Graph:
    "The Tower-of-Hanoi graph of `level` discs: three copies of the previous one, joined corner to corner by single edges."
    level = _check_level(level, 1)
    coords, i, j = _TRI.copy(), np.array([0, 1, 2]), np.array([1, 2, 0])
    for n in range(1, level):
        size = 3 ** n
        corner = np.arange(3) * (size - 1) // 2                                 # node j…j of each copy: j(3^n − 1)/2
        bi, bj = zip(*[(a * size + corner[b], b * size + corner[a]) for a in range(3) for b in range(a + 1, 3)])
        coords = np.concatenate([coords + 2 ** n * v for v in _TRI])
        i = np.concatenate([i + a * size for a in range(3)] + [np.array(bi)])
        j = np.concatenate([j + a * size for a in range(3)] + [np.array(bj)])
    size = 3 ** level
    return graph_from_edges(i, j, coords, np.arange(3) * (size - 1) // 2, f'hanoi_graph(level={level})')


# %%
#| export
def lattice_walks(dim: int, n_walkers: int, n_steps: int, seed: int = 0, lazy: bool = True) -> np.ndarray:
    "Simple random walks on the infinite lattice Z^`dim` from the origin (lazy: hold with probability ½): [walkers, steps + 1, dim]."
    for name, v in (('dim', dim), ('n_walkers', n_walkers), ('n_steps', n_steps)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    rng = np.random.default_rng(seed)
    axis = rng.integers(0, dim, (n_walkers, n_steps))
    sign = rng.integers(0, 2, (n_walkers, n_steps), dtype=np.int8) * 2 - 1
    if lazy:
        sign = sign * (rng.random((n_walkers, n_steps)) < 0.5)
    steps = np.zeros((n_walkers, n_steps, dim), dtype=np.int8)
    np.put_along_axis(steps, axis[..., None], sign[..., None].astype(np.int8), axis=2)
    x = np.zeros((n_walkers, n_steps + 1, dim))
    np.cumsum(steps, axis=1, out=x[:, 1:])
    return x

def lattice_return_exact(dim: int, tau, lazy: bool = True, n: int = 256) -> np.ndarray:
    """Exact return probability of the simple walk on Z^`dim` after `tau` steps, as the mean of φ(k)^τ over the
    Fourier grid of the n-torus (equal to the lattice's value while the walk cannot wrap around: τ ≪ n²)."""
    k = 2 * np.pi * np.arange(n) / n
    c = np.cos(k)
    phi = c
    for _ in range(dim - 1):
        phi = np.add.outer(phi, c)
    phi = phi.ravel() / dim
    if lazy:
        phi = 0.5 + 0.5 * phi
    tau = np.atleast_1d(np.asarray(tau, dtype=np.int64))
    return np.array([np.mean(phi ** int(t)) for t in tau])


# %%
#| export
def trace_return_probability(graph: Graph, tau, lazy: bool = True) -> np.ndarray:
    """Exact return probability averaged over every node, (1/N) Σ_k μ_k^τ over the eigenvalues μ_k of the walk's
    transition matrix, with the stationary mode (μ = 1) removed: the heat-kernel trace whose decay defines d_s."""
    deg = graph.degree.astype(float)
    if np.any(deg == 0):
        raise ValueError("the graph has an isolated node")
    s = 1 / np.sqrt(deg)
    m = (graph.adjacency.multiply(s[:, None]).multiply(s[None, :])).toarray()   # D^-1/2 A D^-1/2, same spectrum as D^-1 A
    mu = np.linalg.eigvalsh(m)
    if lazy:
        mu = 0.5 + 0.5 * mu
    mu = np.delete(mu, np.argmax(mu))
    tau = np.atleast_1d(np.asarray(tau, dtype=np.int64))
    return np.array([np.sum(mu ** int(t)) for t in tau]) / graph.n_nodes


# %% [markdown]
# ## A live check on small graphs
#
# The committed table above is the experiment; this cell reruns the rule on three small cases in a few seconds:
# lazy walks on $\mathbb Z^1$ (the interval must hold 1), a Hanoi graph of 7 discs, whose exact node-averaged return
# probability (eigenvalues, as above) must agree with the known value to 1%, and a pure power law, where every
# admissible window reads the same slope and the interval collapses to the reference fit's bootstrap.

# %%
tic = time.time()
z1 = ds_interval(interval_curves(lattice_walks(1, 80, 5000, seed=7), n_tau=30), n_boot=100)
assert z1.covers(1.0) and z1.n_fits > 20 and z1.low <= z1.reference.ci_low and z1.reference.ci_high <= z1.high, z1
h = hanoi_graph(7)
tau = np.unique(np.round(5 * 5 ** np.linspace(0, 3, 49)).astype(int))
P = trace_return_probability(h, tau)
hanoi_exact = -2 * np.polyfit(np.log(tau), np.log(P), 1)[0]
assert abs(hanoi_exact / HANOI_DS - 1) < 0.01, hanoi_exact
walks = graph_walk_positions(h, np.random.default_rng(0).choice(np.arange(h.n_nodes), 60), 3000, seed=0, lazy=True)
hr = ds_interval(interval_curves(walks, n_tau=30), n_boot=100)
tau_fake = np.arange(1, 400)
fake = ReturnCurves(tau_fake, np.array([1.0]), (1e6 * tau_fake[None, None] ** -0.6).repeat(6, 0) * np.linspace(0.9, 1.1, 6)[:, None, None],
                    np.full((6, tau_fake.size), 1e6), 10.0 * tau_fake, 'walkers')
pure = ds_interval(fake, n_boot=50)
assert np.allclose(pure.fits.d_s, 1.2) and np.isclose(pure.low, pure.reference.ci_low) and np.isclose(pure.high, pure.reference.ci_high)
print(f'{time.time() - tic:.1f} s; Hanoi(7): exact {hanoi_exact:.3f} vs {HANOI_DS:.3f}')
pd.DataFrame([dict(case='Z1 walks', known=1.0, **z1.as_dict()), dict(case='Hanoi(7) walks', known=HANOI_DS, **hr.as_dict()),
              dict(case='pure power law', known=1.2, **pure.as_dict())])[
    ['case', 'known', 'd_s', 'low', 'high', 'n_fits', 'spread_low', 'spread_high', 'reference_tau_min', 'reference_tau_max']].round(3)

# %% [markdown]
# ## Where it fails
#
# - **The Vicsek fractal**: 16 of 20. The four misses read 1.07–1.12 against 1.189, and every admissible window of
#   those ensembles reads at or below the reference (spreads 0.06–0.09, all downwards); with the reference's
#   bootstrap (+0.06 to +0.08) the upper ends stop at 1.15–1.19. Its log-period is 1.2 decades and the walks give 1.6 decades of lag past the step bound, so no admissible
#   window averages over more than about one period. The exact node-averaged kernel over two periods reads within 1%,
#   so the medium is not to blame; walkers started in the central cross of a tree see a different mixture of
#   branches than the node average, which 100 walkers may not sample well. This was not investigated further.
# - **Percolation** is covered 9 times in 10, but its estimate is biased low (5%) by the cluster's structure on
#   these time scales, as the [return-probability chapter](return_probability.html) found with its exact kernel: no
#   window removes that, the interval only spans it.
# - **The width** is the spread over windows plus the sampling noise counted again at each window; on pure power laws
#   with no noise it collapses to the reference's bootstrap (above), but on any real ensemble it is several times
#   wider. A reader who needs a few per cent must buy longer walks, not a narrower rule.
# - **High dimension**: the rule inherits every limit of the estimator it is built on. Where fewer than 100 returns are
#   counted at the lags the window needs (`pairs_needed` grows like $10^{d/4}$), or the walk is shorter than a decade
#   past the step bound, there is no admissible window and the result is NaN with the reason, not a number.
# - **Not a confidence interval**: its coverage was measured on 12 media and walks of one size; other media, or much
#   shorter walks, may cover less.

# %%
#| hide
import nbdev
nbdev.nbdev_export()
