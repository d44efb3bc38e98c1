# %% [markdown]
# # Cor. 3.2 where the posterior is exact
#
# > A two-weight model with three basins: the Bayes posterior by quadrature on a grid, thousands of minibatch-SGD walkers at stationarity, one temperature fitted at one (lr, B) and tested at others, and where SGD's anisotropic noise leaves the tempered posterior behind.

# %%
#| default_exp posterior.exact

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** Where the posterior is exact, β = 1 is far from SGD's basin masses (KL at least 6.3), one tempered
# posterior fitted at one setting carries to the others (KL at most 0.003), and the temperature scales as
# $(B/\eta)^{0.88}$, not $(B/\eta)^1$. The paper tests Cor. 3.2 only on networks, so the scale is `assumed` (*In the
# ledger*, below). The rows this page puts in the [claims ledger](ledger.html), read from it; each row's
# configuration, rule and reasons are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('exact-posterior')                # this study's rows of the claims ledger, read from it

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg import solve_continuous_lyapunov, solve_discrete_lyapunov
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, logsumexp, rel_entr

from fracsgd.posterior.clusters import split_rhat as _split_rhat

# %%
import time
import matplotlib.pyplot as plt
import pandas as pd
_t0 = time.perf_counter()


# %% [markdown]
# Corollary 3.2 of the paper (Hennick & De Baerdemacker, ICLR 2026, §3.4, eqs. 14–15) rests on Lemma 3.3: where the
# effective diffusion coefficient $D_\xi$ is one scalar, SGD's steady state is a Boltzmann density
# $p_s(w)\propto e^{-\gamma\mathcal L_m(w)/D_\xi}$, so that $p_s^{mD_\xi}$ is the likelihood and $\rho\,p_s^{mD_\xi}/Z$ the
# Bayes posterior. Put the other way round: the SGD distribution should be the posterior *tempered* to an inverse
# temperature $\beta=\gamma/(mD_\xi)$, $p_\beta(w)\propto\rho(w)\,e^{-\beta m\mathcal L_m(w)}$. In a network, neither side of
# that statement can be computed exactly, so the [tempering chapter](tempering.html) compares cluster masses of SGD
# solutions with SGLD draws. Here both sides are exact up to Monte Carlo error: the model has two weights, so the
# posterior is a quadrature on a grid, and SGD is thousands of independent walkers run to stationarity.
#
# What the paper leaves open, and this chapter has to choose:
#
# * **What sets the temperature.** Lemma 3.2 gives $D_\xi=\xi^{2-d_{\rm walk}}$, and a walk in a smooth regular basin is
#   Brownian ($d_{\rm walk}=2$), so $D_\xi=1$ at every scale; read literally, Cor. 3.2 then says that SGD samples the
#   Bayes posterior itself ($\beta=1$). (Eq. 13 as printed, $D_\xi=\xi^{2-2\lambda/d_s}$ with $\lambda=1$ and $d_s=2$, gives
#   $D_\xi=\xi$ instead: the factor of two in eq. 12 that the [known-λ chapter](known_lambda.html) measures. Then
#   $\beta=1/(m\xi)$, and the fitted β below names the ξ it would take.) The literal reading is tested below and fails
#   by more than an order of magnitude in temperature. Neither form of $D_\xi$ carries the learning rate or the batch
#   size. The usual diffusion limit of minibatch SGD does: a step moves $w$ by $-\eta\nabla\mathcal L_m$ plus a noise of
#   covariance $\eta^2C/B$ ($C$ the covariance of one per-sample gradient), which over the time $t=\eta\cdot$steps is a
#   diffusion with coefficient $\eta C/(2B)$; with $C$ fixed, the temperature scales as $\eta/B$. That is the scaling
#   tested: **fit β once at one $(\eta,B)$, predict $\beta\propto B/\eta$ elsewhere.**
# * **The prior.** Eq. 15 leaves $\rho$ arbitrary. Here $\rho$ is flat on the grid's square and SGD has no weight decay;
#   the model's loss confines the walkers, and the fraction of recorded positions outside the square is measured.
# * **What is compared.** Basin masses (the plane split by steepest descent on the grid), the density on the grid
#   (its tails), and each basin's covariance, all with bootstrap intervals over walkers.

# %% [markdown]
# ## A model with three basins
#
# The model is the location of a bivariate Student-t with $\nu=1$ degree of freedom and scale $s$,
# $-\log p(x\mid w)=\tfrac{\nu+2}{2}\log\!\big(1+\lVert x-w\rVert^2/(\nu s^2)\big)+\text{const}$, fitted to points drawn from
# three clusters. Its heavy tails make the log-likelihood multimodal: each cluster holds its own minimum, deeper for a
# larger or tighter cluster, wider for a looser one. The loss is the true log-loss (the constant included), so
# $e^{-m\mathcal L_m}$ is exactly the likelihood of eq. 55–56. `StudentLocation` gives the loss on any array of weights, the
# minibatch gradient SGD uses, and the local Hessian and per-sample gradient covariance that the linear (Ornstein–
# Uhlenbeck) picture of SGD needs.

# %%
#| export
@dataclass
class StudentLocation:
    "Location `w` of a 2-D Student-t with `nu` degrees of freedom and scale `s`, fitted to the rows of `X` (m, 2)."
    X: np.ndarray
    s: float = 0.5
    nu: float = 1.0

    @property
    def m(self) -> int: return len(self.X)

    def _const(self) -> float:
        nu, s = self.nu, self.s
        return float(gammaln((nu + 2) / 2) - gammaln(nu / 2) - math.log(nu * math.pi * s * s))

    def per_sample_loss(self, w, x) -> np.ndarray:
        "−log p(x | w) for weights `w` (..., 2) against points `x` broadcastable to (..., k, 2): shape (..., k)."
        d2 = ((np.asarray(w)[..., None, :] - x) ** 2).sum(-1)
        return (self.nu + 2) / 2 * np.log1p(d2 / (self.nu * self.s ** 2)) - self._const()

    def loss(self, w, chunk: int = 4096) -> np.ndarray:
        "The empirical log-loss L_m(w) (mean over the m points) for weights of shape (..., 2)."
        w = np.asarray(w, dtype=float)
        flat = w.reshape(-1, 2)
        out = np.concatenate([self.per_sample_loss(flat[i:i + chunk], self.X).mean(-1)
                              for i in range(0, len(flat), chunk)])
        return out.reshape(w.shape[:-1])

    def batch_grad(self, w, xb) -> np.ndarray:
        """Mean gradient of the per-sample loss over each walker's batch: `w` (N, 2), `xb` (N, B, 2) -> (N, 2).
        For B ≤ 2 (SGD's inner loop) it works on the two coordinates' (N, B) arrays and sums the batch in order
        before dividing by B: the same floats as the (N, B, 2) broadcast and `.mean(1)` of larger batches, faster."""
        B = xb.shape[1]
        if B > 2:
            d = w[:, None, :] - xb
            return ((self.nu + 2) / (self.nu * self.s ** 2 + (d * d).sum(-1)))[..., None].__mul__(d).mean(1)
        d0, d1 = w[:, 0, None] - xb[..., 0], w[:, 1, None] - xb[..., 1]
        c = (self.nu + 2) / (self.nu * self.s ** 2 + (d0 * d0 + d1 * d1))
        g0, g1 = c * d0, c * d1
        if B == 2:
            return np.stack([(g0[:, 0] + g0[:, 1]) / 2, (g1[:, 0] + g1[:, 1]) / 2], -1)
        return np.stack([g0[:, 0], g1[:, 0]], -1)

    def local_noise(self, w) -> tuple[np.ndarray, np.ndarray]:
        "(Hessian of L_m, covariance of one per-sample gradient over the data) at one point `w` (2,)."
        d = np.asarray(w, dtype=float) - self.X
        q = self.nu * self.s ** 2 + (d * d).sum(-1)
        g = (self.nu + 2) * d / q[:, None]
        H = (self.nu + 2) * (np.eye(2) / q[:, None, None] - 2 * d[:, :, None] * d[:, None, :] / q[:, None, None] ** 2)
        return H.mean(0), np.cov(g.T, bias=True)

def cluster_data(m: int, centres, weights, spreads, seed: int = 0) -> np.ndarray:
    "`m` points in the plane from isotropic Gaussian clusters (`centres` (k, 2), mixing `weights`, `spreads`)."
    rng = np.random.default_rng(seed)
    centres, spreads = np.asarray(centres, float), np.asarray(spreads, float)
    k = rng.choice(len(centres), size=m, p=np.asarray(weights) / np.sum(weights))
    return centres[k] + spreads[k, None] * rng.standard_normal((m, 2))


# %% [markdown]
# ## Basins on a grid and the posterior by quadrature
#
# `steepest_basins` sends every grid node to its steepest lower neighbour (of eight, the drop divided by the step's
# length) and follows the pointers to a local minimum; the basins are numbered by the depth of their minimum, deepest
# first. `saddle_heights` gives, for each pair of adjacent basins, the lowest loss on their common boundary.
# `grid_posterior` returns the probability of every grid cell under $\rho\,e^{-\beta m\mathcal L_m}$ (the prior, as in
# eq. 15, untempered), computed in log space.

# %%
#| export
_STEPS = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1) if (di, dj) != (0, 0)]

def _shift(a, di, dj, fill):
    "a[i + di, j + dj], `fill` outside."
    out = np.full_like(a, fill)
    n1, n2 = a.shape
    out[max(0, -di):n1 - max(0, di), max(0, -dj):n2 - max(0, dj)] = a[max(0, di):n1 - max(0, -di) or None,
                                                                      max(0, dj):n2 - max(0, -dj) or None]
    return out

def steepest_basins(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    "(labels of the grid `U` by basin of steepest descent, deepest basin 0; flat index of each basin's minimum)."
    U = np.asarray(U, dtype=float)
    idx = np.arange(U.size).reshape(U.shape)
    nxt, best = idx.copy(), np.zeros_like(U)
    for di, dj in _STEPS:
        drop = (U - _shift(U, di, dj, np.inf)) / math.hypot(di, dj)
        take = drop > best
        best, nxt = np.where(take, drop, best), np.where(take, _shift(idx, di, dj, -1), nxt)
    nxt = nxt.ravel()
    while not np.array_equal(nxt[nxt], nxt):
        nxt = nxt[nxt]
    roots, lab = np.unique(nxt, return_inverse=True)
    order = np.argsort(U.ravel()[roots], kind='stable')
    rank = np.empty_like(order); rank[order] = np.arange(len(order))
    return rank[lab].reshape(U.shape), roots[order]

def saddle_heights(U: np.ndarray, labels: np.ndarray) -> np.ndarray:
    "(K, K): the lowest max(U) over neighbouring node pairs that join basins a and b (inf where they do not touch)."
    K = int(labels.max()) + 1
    out = np.full((K, K), np.inf)
    for di, dj in _STEPS:
        lb, ub = _shift(labels, di, dj, -1), _shift(U, di, dj, np.inf)
        join = (lb >= 0) & (lb != labels)
        h = np.maximum(U, ub)[join]
        np.minimum.at(out, (labels[join], lb[join]), h)
    return np.minimum(out, out.T)

def grid_posterior(loss_grid, m: float, beta: float = 1.0, log_prior=None) -> np.ndarray:
    "Cell probabilities ∝ ρ·exp(−β m L_m) on a uniform grid (prior `log_prior` on the grid, default flat)."
    a = -beta * m * np.asarray(loss_grid, dtype=float)
    if log_prior is not None:
        a = a + log_prior
    return np.exp(a - logsumexp(a))

def basin_masses(prob, labels, K: int | None = None) -> np.ndarray:
    "The probability of each basin: the cell probabilities summed by label."
    K = int(labels.max()) + 1 if K is None else K
    return np.bincount(np.ravel(labels), np.ravel(prob), minlength=K)

def basin_moments(prob, labels, axes) -> list[tuple[np.ndarray, np.ndarray]]:
    "(mean, covariance) of the grid density restricted to each basin; `axes` = (w1 values, w2 values)."
    W = np.stack(np.meshgrid(*axes, indexing='ij'), -1).reshape(-1, 2)
    p, lab = np.ravel(prob), np.ravel(labels)
    out = []
    for k in range(int(lab.max()) + 1):
        q = p * (lab == k); q = q / q.sum()
        mu = q @ W
        out.append((mu, ((W - mu) * q[:, None]).T @ (W - mu)))
    return out


# %% [markdown]
# ## SGD walkers, their basins and their mixing
#
# `sgd_walkers` runs N independent walkers of plain minibatch SGD, $w\leftarrow w-\eta\,\nabla\frac1B\sum_{i\in b}\ell_i(w)$,
# with each walker drawing its own batch of $B$ indices with replacement every step (so one step's gradient noise has
# covariance exactly $C(w)/B$), vectorized over walkers; it records all positions after every `every` steps (records ×
# walkers × 2). `basin_of` looks a point up on the grid (−1 outside it). `split_rhat` is the Gelman–Rubin statistic with every walker's record split
# in two halves, treating each half as a chain: near 1 when walkers that started far apart have forgotten where.

# %%
#| export
def sgd_walkers(grad: Callable, data: np.ndarray, w0: np.ndarray, lr: float, batch: int, steps: int,
                every: int = 50, seed: int = 0, chunk: int = 250) -> np.ndarray:
    """Minibatch SGD from each row of `w0` (N, d); `grad(w, data[idx])`, idx (N, batch): positions after every `every`
    steps. The indices are drawn `chunk` steps at a time, the same stream as one draw per step."""
    rng = np.random.default_rng(seed)
    w, out = np.array(w0, dtype=float), []
    for t0 in range(0, steps, chunk):
        xb = data[rng.integers(0, len(data), (min(chunk, steps - t0), len(w), batch))]
        for t, x in enumerate(xb, t0 + 1):
            w = w - lr * grad(w, x)
            if t % every == 0:
                out.append(w.copy())
    return np.array(out)

def basin_of(points, axes, labels) -> np.ndarray:
    "The basin label of the grid node nearest each point (..., 2); −1 beyond half a step outside the grid."
    ij = []
    for k, a in enumerate(axes):
        h = a[1] - a[0]
        ij.append(np.rint((points[..., k] - a[0]) / h).astype(int))
    inside = (ij[0] >= 0) & (ij[0] < len(axes[0])) & (ij[1] >= 0) & (ij[1] < len(axes[1]))
    out = np.full(points.shape[:-1], -1)
    out[inside] = labels[ij[0][inside], ij[1][inside]]
    return out

def occupancy(basins: np.ndarray, K: int) -> np.ndarray:
    "Per-walker fraction of records in each basin: `basins` (S, N) -> (N, K) (records outside the grid count in none)."
    return np.stack([(basins == k).mean(0) for k in range(K)], -1)

def split_rhat(chains: np.ndarray) -> float:
    """Split-R̂ of walkers' records `chains` (S records, N walkers): the clusters chapter's `split_rhat` with each
    walker a chain, and 1 where nothing varies at all (a basin no walker visits)."""
    r = _split_rhat(np.asarray(chains, dtype=float).T)
    return 1.0 if math.isnan(r) else r


# %% [markdown]
# ## One temperature, distances, intervals, and the linear picture
#
# `fit_beta` finds the inverse temperature whose tempered posterior's basin masses are closest to given masses in
# $\mathrm{KL}(\text{SGD}\,\Vert\,p_\beta)$ (one parameter, searched over $\log\beta$). `bootstrap_walkers` resamples walkers
# (each walker's late-window occupancy is one unit, so autocorrelation along a walker is kept inside the unit) and
# returns a statistic of the resampled masses. `sgd_covariance` is the stationary covariance of SGD linearised at a
# minimum with Hessian $H$ and per-sample gradient covariance $C$: the discrete Lyapunov equation of
# $w_{t+1}=(I-\eta H)w_t+\eta\varepsilon_t$, $\mathrm{Cov}\,\varepsilon=C/B$, or its continuous (Ornstein–Uhlenbeck) limit
# $H\Sigma+\Sigma H=\eta C/B$. A Boltzmann density at temperature $T$ has covariance $T H^{-1}$, which solves the
# continuous equation only when the noise is isotropic, $\eta C/B=2T\,I$; near a well-specified minimum $C\approx H$
# instead (the Fisher information is the Hessian), and linearised SGD is round where the Boltzmann density is shaped by
# $H^{-1}$. `bootstrap_basin_covariances` resamples walkers for each basin's covariance (from per-walker sums, so a
# resample costs no pass over the records); `disc_moments` gives the moments of any grid array (a density, or a histogram
# of walkers on the same cells) restricted to a disc.

# %%
#| export
def kl(p, q) -> float:
    "KL(p ‖ q) in nats for discrete distributions."
    return float(rel_entr(np.asarray(p, float), np.asarray(q, float)).sum())

def fit_beta(masses, loss_grid, labels, m: float, bounds=(1e-4, 10.0)) -> float:
    "The β minimizing KL(`masses` ‖ basin masses of the posterior tempered to β)."
    K = len(masses)
    f = lambda lb: kl(masses, basin_masses(grid_posterior(loss_grid, m, math.exp(lb)), labels, K))
    r = minimize_scalar(f, bounds=tuple(math.log(b) for b in bounds), method='bounded', options={'xatol': 1e-6})
    return math.exp(r.x)

def bootstrap_walkers(occ: np.ndarray, stat: Callable, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    "`stat(masses)` over `n_boot` resamples of the walkers (rows of `occ`, (N, K)): masses = the mean occupancy."
    rng = np.random.default_rng(seed)
    N = len(occ)
    return np.array([stat(occ[rng.integers(0, N, N)].mean(0)) for _ in range(n_boot)])

def sgd_covariance(H, C, lr: float, batch: int, discrete: bool = True) -> np.ndarray:
    "Stationary covariance of SGD linearised at a minimum (Hessian `H`, per-sample gradient covariance `C`)."
    H, C = np.asarray(H, float), np.asarray(C, float)
    if discrete:
        A = np.eye(len(H)) - lr * H
        return solve_discrete_lyapunov(A, lr ** 2 * C / batch)
    return solve_continuous_lyapunov(H, lr * C / batch)

def sample_moments(points: np.ndarray, basins: np.ndarray, K: int) -> list[tuple[np.ndarray, np.ndarray]]:
    "(mean, covariance) of the recorded points (..., 2) that fall in each basin."
    P, b = points.reshape(-1, 2), basins.ravel()
    return [(P[b == k].mean(0), np.cov(P[b == k].T, bias=True)) for k in range(K)]

def bootstrap_basin_covariances(points: np.ndarray, basins: np.ndarray, K: int, n_boot: int = 200,
                                seed: int = 0) -> np.ndarray:
    "Covariances (n_boot, K, 2, 2) of the points (S, N, 2) in each basin, over resamples of the N walkers."
    one = np.stack([(basins == k) for k in range(K)], -1).astype(float)            # (S, N, K)
    n = one.sum(0)                                                                 # (N, K)
    s1 = np.einsum('snk,sni->nki', one, points)
    s2 = np.einsum('snk,sni,snj->nkij', one, points, points)
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, K, 2, 2))
    for b in range(n_boot):
        c = np.bincount(rng.integers(0, len(n), len(n)), minlength=len(n)).astype(float)
        N_, m1, m2 = c @ n, np.einsum('n,nki->ki', c, s1), np.einsum('n,nkij->kij', c, s2)
        mu = m1 / N_[:, None]
        out[b] = m2 / N_[:, None, None] - mu[:, :, None] * mu[:, None, :]
    return out

def disc_moments(prob, axes, centre, radius: float) -> tuple[np.ndarray, np.ndarray]:
    "(mean, covariance) of a non-negative grid array `prob` (cell masses or counts) restricted to a disc."
    W = np.stack(np.meshgrid(*axes, indexing='ij'), -1).reshape(-1, 2)
    q = np.ravel(prob) * (np.linalg.norm(W - centre, axis=1) <= radius)
    q = q / q.sum()
    mu = q @ W
    return mu, ((W - mu) * q[:, None]).T @ (W - mu)


# %% [markdown]
# ## The landscape
#
# $m=200$ points from three clusters of weights 0.40, 0.33, 0.27 and spreads 0.20, 0.30, 0.12; $s=0.5$, $\nu=1$. The
# grid is $[-5,5]^2$ with step 0.05.

# %%
X = cluster_data(200, 1.75 * np.array([[-1, -0.6], [1, -0.6], [0, 1.1]]), [0.40, 0.33, 0.27], [0.20, 0.30, 0.12], seed=0)
model = StudentLocation(X, s=0.5, nu=1.0)
axes = (np.linspace(-5, 5, 201),) * 2
W = np.stack(np.meshgrid(*axes, indexing='ij'), -1)
L = model.loss(W)
labels, roots = steepest_basins(L)
K = int(labels.max()) + 1
w_min = W.reshape(-1, 2)[roots].astype(float)
for _ in range(20):                         # Newton steps from the grid node to the minimum itself
    w_min = np.array([w - np.linalg.solve(model.local_noise(w)[0], model.batch_grad(w[None], X[None])[0]) for w in w_min])
assert max(np.abs(model.batch_grad(w[None], X[None])[0]).max() for w in w_min) < 1e-10
assert np.all(basin_of(w_min, axes, labels) == np.arange(len(roots)))      # each Newton limit stays in its basin
depth = L.ravel()[roots] - L.ravel()[roots].min()
saddle = saddle_heights(L, labels)
barrier = np.array([saddle[k].min() - L.ravel()[roots[k]] for k in range(K)])
curv = [np.linalg.eigvalsh(model.local_noise(w)[0]) for w in w_min]
pd.DataFrame({'w1': w_min[:, 0], 'w2': w_min[:, 1], 'depth [nats]': depth.round(3),
              'lowest barrier [nats]': barrier.round(3), 'Hessian eigenvalues': [c.round(2) for c in curv]})

# %%
assert K == 3, K
assert np.all(np.diff(depth) > 0.02), depth                     # three minima of different depth ...
assert max(c.min() for c in curv) / min(c.min() for c in curv) > 1.5   # ... and of different width
assert np.all(barrier > 0.1), barrier                           # each a real basin, not a shoulder

# %% [markdown]
# The Bayes posterior ($\beta=1$) and its tempered versions, by quadrature. Two checks that the quadrature is good
# enough: the mass on the grid's border is negligible, and the basin masses do not move when the grid is refined
# (step 0.05 against 0.0333).

# %%
betas = [1.0, 0.1, 0.05, 0.03, 0.02]
post = {b: grid_posterior(L, model.m, b) for b in betas}
border = lambda p: p[[0, -1], :].sum() + p[1:-1, [0, -1]].sum()
axes_f = (np.linspace(-5, 5, 301),) * 2
L_f = model.loss(np.stack(np.meshgrid(*axes_f, indexing='ij'), -1))
lab_f = steepest_basins(L_f)[0]
refine = max(np.abs(basin_masses(post[b], labels, K) - basin_masses(grid_posterior(L_f, model.m, b), lab_f, K)).max()
             for b in betas)
pd.DataFrame([basin_masses(post[b], labels, K) for b in betas], index=pd.Index(betas, name='β'),
             columns=[f'basin {k}' for k in range(K)]).round(4)

# %%
assert max(border(p) for p in post.values()) < 1e-5      # the coldest case shown, β = 0.02, leaves 1.3e-6
assert refine < 2e-3, refine
assert basin_masses(post[1.0], labels, K)[0] > 0.999     # at β = 1 (m = 200) the posterior sits in the deepest basin

# %% [markdown]
# ## SGD at three settings
#
# 2,000 walkers start uniformly on $[-4,4]^2$. The fit is made at $(\eta,B)=(0.2,1)$. The tests: $(0.1,1)$ and $(0.2,2)$,
# where $\eta/B$ is halved so the prediction is $\beta$ doubled, and $(0.4,2)$, where $\eta/B$ is the same but the step is
# twice as long, so the prediction is the same $\beta$. The two settings with equal $\eta/B$ but different steps test the
# diffusion limit itself (SGD's distribution should depend on $\eta/B$ alone), apart from whether that distribution is a
# tempered posterior. Runs last 6,000 in units of $\eta\cdot$steps at $\eta/B=0.2$ and 12,000 at the colder
# $\eta/B=0.1$; positions are recorded every 50 steps and the second half of each run is the stationary window.

# %%
SETTINGS = {'fit (0.2, 1)': (0.2, 1, 30_000), 'test (0.1, 1)': (0.1, 1, 120_000), 'test (0.4, 2)': (0.4, 2, 15_000),
            'test (0.2, 2)': (0.2, 2, 60_000)}
w0 = np.random.default_rng(1).uniform(-4, 4, (2000, 2))
runs = {}
for i, (name, (lr, B, steps)) in enumerate(SETTINGS.items()):
    t = time.perf_counter()
    tr = sgd_walkers(model.batch_grad, X, w0, lr, B, steps, every=50, seed=10 + i)
    late = tr[len(tr) // 2:]
    b = basin_of(late, axes, labels)
    S = len(b) // 2
    runs[name] = dict(lr=lr, B=B, late=late, basins=b, occ=occupancy(b, K), outside=(b < 0).mean(),
                      first=occupancy(b[:S], K).mean(0), second=occupancy(b[S:], K).mean(0),
                      drift=occupancy(b[:S], K) - occupancy(b[S:], K),
                      rhat=max(split_rhat((b == k).astype(float)) for k in range(K)),
                      hops=(np.diff(b, axis=0) != 0).sum() / b.shape[1], seconds=time.perf_counter() - t)
for r in runs.values():
    r['drift_ci'] = np.quantile(bootstrap_walkers(r['drift'], lambda x: x, 500, seed=5), [0.025, 0.975], axis=0)
pd.DataFrame({n: {'masses, 1st half of window': r['first'].round(3), 'masses, 2nd half': r['second'].round(3),
                  '1st − 2nd, 95% low': r['drift_ci'][0].round(3), '1st − 2nd, 95% high': r['drift_ci'][1].round(3),
                  'max split-R̂ (basin indicators)': round(r['rhat'], 4), 'basin changes per walker': round(r['hops'], 1),
                  'outside the grid': r['outside'], 'seconds': round(r['seconds'], 1)} for n, r in runs.items()})

# %% [markdown]
# With 2,000 walkers and a few hundred records each, split-R̂ exceeds 1 by about half the autocorrelation time over
# the half-record length even for walkers that have mixed, so the bar used is 1.05 (Gelman and Rubin's original one is
# 1.1); the occupancies of the two halves of the window are compared directly as well.

# %%
for n, r in runs.items():
    assert r['outside'] < 1e-3, (n, r['outside'])
    assert r['rhat'] < 1.05, (n, r['rhat'])                                 # walkers mixed between basins
    assert np.abs(r['first'] - r['second']).max() < 0.015, (n, r['first'], r['second'])   # occupancies stable
    assert r['hops'] > 10, (n, r['hops'])

# %% [markdown]
# ## The fit, made before looking at the tests
#
# One inverse temperature, fitted to the basin masses at $(0.2,1)$, with its bootstrap interval over walkers; then the
# predictions at the two test settings from $\beta\propto B/\eta$.

# %%
fit = runs['fit (0.2, 1)']
beta_fit = fit_beta(fit['occ'].mean(0), L, labels, model.m)
beta_boot = bootstrap_walkers(fit['occ'], lambda q: fit_beta(q, L, labels, model.m), 200, seed=2)
beta_ci = np.quantile(beta_boot, [0.025, 0.975])
mD = 1 / beta_fit                                       # Cor. 3.2 with γ = 1: β = 1/(m D_ξ); with eq. 13, D_ξ = ξ
predicted = {n: beta_fit * (fit['lr'] / fit['B']) / (r['lr'] / r['B']) for n, r in runs.items()}
print(f"β fitted at (0.2, 1) = {beta_fit:.4f} (95% {beta_ci[0]:.4f}–{beta_ci[1]:.4f}); m·D_ξ = {mD:.1f}; "
      f"(eq. 13 as printed: ξ = {mD / model.m:.3f}); predictions: " + ', '.join(f'{n}: β = {b:.4f}' for n, b in predicted.items()))


# %% [markdown]
# ## The tests
#
# For every setting: the SGD basin masses with 95% bootstrap intervals, the tempered posterior's masses at the
# *predicted* β, their difference with its interval, and $\mathrm{KL}(\text{SGD}\Vert p_\beta)$ over basins with its
# interval. The literal reading of Cor. 3.2 ($D_\xi=1$, so $\beta=1$) is shown beside it.

# %%
def mass_table(name, beta):
    r = runs[name]
    q = basin_masses(grid_posterior(L, model.m, beta), labels, K)
    boot = bootstrap_walkers(r['occ'], lambda x: x, 1000, seed=3)
    d = boot - q
    klb = np.array([kl(x, q) for x in boot])
    rows = [{'setting': name, 'basin': k, 'SGD': r['occ'].mean(0)[k],
             'SGD 95%': tuple(np.quantile(boot[:, k], [0.025, 0.975]).round(4)), 'tempered': q[k],
             'SGD − tempered': r['occ'].mean(0)[k] - q[k], 'diff 95%': tuple(np.quantile(d[:, k], [0.025, 0.975]).round(4))}
            for k in range(K)]
    return pd.DataFrame(rows), kl(r['occ'].mean(0), q), np.quantile(klb, [0.025, 0.975])

tables, kls = [], {}
for n in runs:
    t, k_, ci = mass_table(n, predicted[n]); tables.append(t); kls[n] = (k_, ci)
masses = pd.concat(tables, ignore_index=True)
kl_literal = {n: kl(r['occ'].mean(0), basin_masses(post[1.0], labels, K)) for n, r in runs.items()}
print('\n'.join(f"{n}: KL(SGD‖p_β predicted) = {k_:.4f} (95% {ci[0]:.4f}–{ci[1]:.4f}); "
                f"KL(SGD‖Bayes, β = 1) = {kl_literal[n]:.2f}" for n, (k_, ci) in kls.items()))
masses.round(4)

# %% [markdown]
# After the test, each test setting is fitted on its own, to say how far off the predicted β was:

# %%
refits = {}
for n, r in runs.items():
    bb = beta_boot if n == 'fit (0.2, 1)' else bootstrap_walkers(r['occ'], lambda q: fit_beta(q, L, labels, model.m), 200, seed=4)
    refits[n] = (fit_beta(r['occ'].mean(0), L, labels, model.m), np.quantile(bb, [0.025, 0.975]),
                 np.quantile(bb / beta_boot, [0.025, 0.975]) if bb is not beta_boot else np.full(2, np.nan))
                 # independent runs: the ratio of independent resamples
pd.DataFrame({n: {'β fitted here': round(b, 4), '95%': tuple(ci.round(4)), 'β predicted': round(predicted[n], 4),
                  'fitted / predicted': round(b / predicted[n], 3), 'β / β(fit)': round(b / beta_fit, 3),
                  'β / β(fit) 95%': tuple(rci.round(3)), 'predicted β / β(fit)': round(predicted[n] / beta_fit, 3)}
              for n, (b, ci, rci) in refits.items()})


# %% [markdown]
# Does SGD's distribution depend on $\eta/B$ alone, as the diffusion limit says? The pairs with equal $\eta/B$ are
# compared directly (largest basin-mass difference, with its interval), and the exponent $a$ in $\beta\propto(B/\eta)^a$
# is read off the two values of $\eta/B$ ($a=1$ is the prediction).

# %%
def pair(a, b):
    d = bootstrap_walkers(runs[a]['occ'], lambda x: x, 1000, seed=7) - bootstrap_walkers(runs[b]['occ'], lambda x: x, 1000, seed=8)
    k = int(np.argmax(np.abs(runs[a]['occ'].mean(0) - runs[b]['occ'].mean(0))))
    return runs[a]['occ'].mean(0)[k] - runs[b]['occ'].mean(0)[k], np.quantile(d[:, k], [0.025, 0.975])
pairs = {('fit (0.2, 1)', 'test (0.4, 2)'): pair('fit (0.2, 1)', 'test (0.4, 2)'),
         ('test (0.1, 1)', 'test (0.2, 2)'): pair('test (0.1, 1)', 'test (0.2, 2)')}
for (a, b), (d, ci) in pairs.items():
    print(f"{a} against {b}: largest basin-mass difference {d:+.4f} (95% {ci[0]:+.4f} to {ci[1]:+.4f})")
exponent = {n: (math.log2(refits[n][0] / beta_fit), np.log2(refits[n][2])) for n in ('test (0.1, 1)', 'test (0.2, 2)')}
for n, (a, ci) in exponent.items():
    print(f"β ∝ (B/η)^a between (0.2, 1) and {n}: a = {a:.3f} (95% {ci[0]:.3f}–{ci[1]:.3f})")

# %% [markdown]
# What the numbers say, and what the asserts below hold them to:
#
# * The literal reading ($D_\xi=1$, β = 1) is off by more than an order of magnitude in temperature:
#   $m D_\xi=1/\beta\approx 32$ at the fit setting, and the KL from SGD's basin masses to the Bayes posterior's is
#   6 to 10 nats.
# * One fitted temperature reproduces the three basin masses at the fit setting to within a percentage point of mass,
#   but not exactly: the differences' intervals exclude zero.
# * At the same $\eta/B$ with twice the step, (0.4, 2), the prediction holds: the refitted β's interval contains it.
# * Halving $\eta/B$, at (0.1, 1) and at (0.2, 2), the walkers are about 8–9% hotter than $\beta\propto B/\eta$
#   predicts: the refitted β is outside the prediction's reach, the exponent $a$ is about 0.86–0.88 with an interval that
#   excludes 1, and the masses at the predicted β miss by up to two percentage points of mass.
# * The diffusion limit itself nearly holds: settings with equal $\eta/B$ give basin masses within 0.003 of each other
#   (at the colder pair the 0.0025 is resolved, a small effect of the step's length). So what fails is not the $\eta/B$ scaling of SGD but the claim that SGD's distribution is a member of the
#   tempered family $e^{-\beta m\mathcal L_m}$: SGD's noise $\eta C(w)/B$ depends on $w$, and a diffusion with
#   state-dependent noise has a stationary density that is not $e^{-\mathcal L_m/T}$ for any $T$; the tempered family
#   then fits it with a β that does not scale exactly as $B/\eta$. The next section shows the same thing inside basins.

# %%
d_fit = masses[masses.setting == 'fit (0.2, 1)']
assert min(kl_literal.values()) > 5, kl_literal                                   # β = 1 is far off
assert 20 < 1 / beta_fit < 50, 1 / beta_fit
assert d_fit['SGD − tempered'].abs().max() < 0.01                                 # close at the fit ...
assert all(lo > 0 or hi < 0 for lo, hi in d_fit['diff 95%']), d_fit               # ... but resolvably not exact
same = refits['test (0.4, 2)']
assert same[1][0] <= predicted['test (0.4, 2)'] <= same[1][1], same               # same η/B: prediction inside
assert masses[masses.setting == 'test (0.4, 2)']['SGD − tempered'].abs().max() < 0.01
for n in ('test (0.1, 1)', 'test (0.2, 2)'):                                       # η/B halved: prediction outside
    b, ci, rci = refits[n]
    assert not ci[0] <= predicted[n] <= ci[1], (n, refits[n])
    assert 0.85 < b / predicted[n] < 0.95 and rci[1] < 2, (n, refits[n])
    assert exponent[n][1][1] < 1 and exponent[n][1][0] > 0.7, exponent[n]
    assert masses[masses.setting == n]['SGD − tempered'].abs().max() < 0.03
for (a, b), (d, ci) in pairs.items():                                             # equal η/B: equal distributions
    assert abs(d) < 0.005, (a, b, d, ci)

# %% [markdown]
# The first plot shows the landscape with its basins, the second the SGD histogram at the fit setting against the
# tempered density at the fitted β (levels of log10 cell mass from −5, about where 600,000 recorded positions stop
# resolving), the third the basin masses.

# %%
fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
ax[0].contourf(*axes, L.T, levels=40, cmap='viridis')
ax[0].contour(*axes, labels.T, levels=np.arange(K) + 0.5, colors='w', linewidths=1)
ax[0].plot(*w_min.T, 'r*', ms=12); ax[0].plot(*X.T, 'k.', ms=2)
ax[0].set(title='L_m(w), basins (white) and minima', xlabel='w1', ylabel='w2', xlim=(-3.5, 3.5), ylim=(-3, 3.5))
edges = [np.concatenate([a - 0.025, [a[-1] + 0.025]]) for a in axes]
hist = np.histogram2d(*fit['late'].reshape(-1, 2).T, bins=edges)[0]
ax[1].contourf(*axes, np.log10(hist.T / hist.sum() + 1e-9), levels=[-5, -4.5, -4, -3.5, -3, -2.5, -2], cmap='Blues')
ax[1].contour(*axes, np.log10(grid_posterior(L, model.m, beta_fit).T + 1e-12), levels=[-5, -4, -3, -2.5],
              colors='r', linewidths=0.8)
ax[1].set(title=f'SGD (0.2, 1), log10 cell mass (blue)\ntempered posterior β = {beta_fit:.3f} (red)', xlabel='w1',
          xlim=(-3.5, 3.5), ylim=(-3, 3.5))
xs = np.arange(K)
for j, n in enumerate(runs):
    t = masses[masses.setting == n]
    lo, hi = np.array(t['SGD 95%'].tolist()).T
    ax[2].errorbar(xs + 0.18 * (j - 1.5), t.SGD, yerr=[t.SGD - lo, hi - t.SGD], fmt='o', label=f'SGD {n}')
    ax[2].plot(xs + 0.18 * (j - 1.5), t.tempered, 'kx')
ax[2].set(xticks=xs, xlabel='basin', ylabel='mass', title='SGD (dots, 95%); tempered at predicted β (×)')
ax[2].legend(fontsize=8); plt.tight_layout()

# %% [markdown]
# The picture shows a third departure: outside the basins' cores SGD's cloud stops short of the tempered posterior's
# outer contours. The tail mass is measured in the cells where the tempered posterior's cell mass is below $10^{-4.5}$
# (outside its second contour), for SGD per walker with a bootstrap interval. Beside it, the gradient noise
# $\operatorname{tr}C(w)$ and the pull $\lVert\nabla\mathcal L_m(w)\rVert$ averaged over those cells and over the rest
# (400 cells drawn from the tempered posterior in each): where the noise is weaker and the pull stronger, SGD is colder
# than one temperature allows.

# %%
tails = {}
for n in ('fit (0.2, 1)', 'test (0.1, 1)'):
    r = runs[n]
    pb = grid_posterior(L, model.m, predicted[n])
    cold_cells = pb < 10 ** -4.5
    ij = [np.clip(np.rint((r['late'][..., k] - axes[k][0]) / (axes[k][1] - axes[k][0])).astype(int), 0, len(axes[k]) - 1)
          for k in range(2)]
    per_walker = cold_cells[ij[0], ij[1]].mean(0)[:, None]
    tails[n] = (per_walker.mean(), np.quantile(bootstrap_walkers(per_walker, lambda q: q[0], 500, seed=9), [0.025, 0.975]),
                pb[cold_cells].sum())
    print(f"{n}: tail mass SGD {tails[n][0]:.4f} (95% {tails[n][1][0]:.4f}–{tails[n][1][1]:.4f}), "
          f"tempered posterior {tails[n][2]:.4f}")
pb = grid_posterior(L, model.m, beta_fit)
noise = {}
for where, cells in (('tail cells', pb < 10 ** -4.5), ('other cells', pb >= 10 ** -4.5)):
    idx = np.flatnonzero(cells.ravel())
    pick = np.random.default_rng(11).choice(idx, 400, p=pb.ravel()[idx] / pb.ravel()[idx].sum())
    pts = W.reshape(-1, 2)[pick]
    noise[where] = (np.mean([np.trace(model.local_noise(w)[1]) for w in pts]),
                    np.linalg.norm(model.batch_grad(pts, np.broadcast_to(X, (len(pts),) + X.shape)), axis=1).mean())
pd.DataFrame(noise, index=['mean tr C', 'mean |∇L_m|']).round(3)

# %%
for n, (sgd_tail, ci, tmp_tail) in tails.items():
    assert ci[1] < 0.3 * tmp_tail, (n, tails[n])           # SGD's tails are much thinner than the tempered posterior's
assert noise['tail cells'][0] < 0.8 * noise['other cells'][0] and noise['tail cells'][1] > noise['other cells'][1]

# %% [markdown]
# ## Inside the basins: the shape SGD's noise gives
#
# Three basin masses are only two numbers; the shape of each basin's distribution is a sharper test of
# $p_s\propto e^{-\mathcal L_m/T}$. Two comparisons, at the fit setting and at the cold test (each at its own predicted β):
#
# * **whole basins**: the covariance of the SGD walkers that are in basin $k$ against the covariance of the tempered
#   posterior restricted to basin $k$ (quadrature);
# * **cores**: the same on a disc of radius 0.5 around each minimum (two to three standard deviations), where the
#   linearised SGD of the previous section applies; its Gaussian $\mathcal N(w_k^*,\Sigma_k)$, with $\Sigma_k$ from the
#   discrete Lyapunov equation with the local $H$ and $C$, is restricted to the same disc on the same grid. The SGD
#   walkers are histogrammed on the grid's cells, so all three are treated alike.
#
# Each covariance is summarised by its two eigenvalues and the angle of its major axis. The table also gives each
# basin's local temperature under linearised SGD, $T_k=\tfrac12\operatorname{tr}(H\Sigma_k)$ (for a Boltzmann density,
# $\Sigma=TH^{-1}$, this is $T$), beside the fitted $1/(m\beta)$.

# %%
edges = [np.concatenate([a - (a[1] - a[0]) / 2, [a[-1] + (a[1] - a[0]) / 2]]) for a in axes]
R_CORE = 0.5

def summary(S):
    ev, vec = np.linalg.eigh(S)
    return ev[1], ev[0], float(np.degrees(np.arctan2(vec[1, 1], vec[0, 1])) % 180)

def shape_rows(name, beta):
    r = runs[name]
    pb = grid_posterior(L, model.m, beta)
    hist = np.histogram2d(*r['late'].reshape(-1, 2).T, bins=edges)[0]
    boot = bootstrap_basin_covariances(r['late'], r['basins'], K, 200, seed=6)
    sgd_basin, tmp_basin = sample_moments(r['late'], r['basins'], K), basin_moments(pb, labels, axes)
    rows = []
    for k in range(K):
        H, C = model.local_noise(w_min[k])
        lin = sgd_covariance(H, C, r['lr'], r['B'])
        d = W.reshape(-1, 2) - w_min[k]
        gauss = np.exp(-0.5 * np.einsum('ij,jk,ik->i', d, np.linalg.inv(lin), d)).reshape(L.shape)
        ratio_ci = np.quantile([summary(S)[0] / summary(S)[1] for S in boot[:, k]], [0.025, 0.975])
        minor_ci = np.quantile([summary(S)[1] for S in boot[:, k]], [0.025, 0.975])
        row = {'setting': name, 'basin': k}
        for what, S in (('basin SGD', sgd_basin[k][1]), ('basin tempered', tmp_basin[k][1]),
                        ('core SGD', disc_moments(hist, axes, w_min[k], R_CORE)[1]),
                        ('core tempered', disc_moments(pb, axes, w_min[k], R_CORE)[1]),
                        ('core linearised', disc_moments(gauss, axes, w_min[k], R_CORE)[1])):
            big, small, angle = summary(S)
            row.update({f'{what}: minor var': small, f'{what}: major/minor': big / small, f'{what}: angle': angle})
        row.update({'basin SGD: minor var 95%': tuple(minor_ci.round(4)), 'basin SGD: major/minor 95%': tuple(ratio_ci.round(2)),
                    'T_k linearised': 0.5 * np.trace(H @ lin), 'T = 1/(mβ)': 1 / (model.m * beta),
                    'tr C': float(np.trace(C))})
        rows.append(row)
    return rows

shapes = pd.DataFrame(shape_rows('fit (0.2, 1)', beta_fit) + shape_rows('test (0.1, 1)', predicted['test (0.1, 1)']))
shapes.round(4).T

# %% [markdown]
# Inside the basins the tempered posterior does not describe SGD: over whole basins SGD's distribution is 2.3 to 3.3
# times more elongated than the tempered posterior's (the major axes agree and point along the valleys towards the other
# basins; SGD is narrower across them). In the cores the linearised SGD's Gaussian, built from nothing but the local
# $H$, $C$, η and $B$, predicts SGD's anisotropy better than the tempered posterior in every basin and at both settings.
# The local temperatures differ by basin (in the continuous limit $T_k=\eta\operatorname{tr}C/(4B)$, so basin 1, whose
# gradient noise $\operatorname{tr}C$ is the smallest, is the coldest), which a single $D_\xi$ cannot express; Lemma 3.3 assumes a scalar diffusion coefficient, and SGD's is a
# state-dependent matrix.

# %%
for _, row in shapes.iterrows():
    assert row['basin SGD: major/minor 95%'][0] > 1.5 * row['basin tempered: major/minor'], row
    off = lambda what: abs(math.log(row['core SGD: major/minor'] / row[f'core {what}: major/minor']))
    assert off('linearised') < off('tempered'), row
    assert abs(row['basin SGD: angle'] - row['basin tempered: angle']) < 15, row
t_lin = shapes.groupby('setting')['T_k linearised'].agg(lambda t: t.max() / t.min())
assert (t_lin > 1.2).all(), t_lin                  # no single temperature in the linear picture either

# %% [markdown]
# ## In the ledger
#
# Three claims are asked here where the posterior is exact: the literal reading of Cor. 3.2 (β = 1), a tempered
# posterior whose temperature carries from one (η, B) to others, and the diffusion limit's $\beta\propto B/\eta$. Both
# KL claims are held to table 2's 0.009 nats, the agreement the paper reports between tempered SGD and its posterior
# on moons. The intervals are over resampled walkers; a smallest or largest over settings takes the smallest or
# largest of the ends. The summary is computed on this page from its walkers; their basin counts are committed
# (`nbs/exact_posterior/basin_counts.csv`, one row per setting and walker) and must equal this run's, and the
# summary's committed copy in `compact/exact-posterior/full/` must be the same. The paper tests Cor. 3.2 only on
# networks, so the scale is `assumed`.

# %%
EXACT_POSTERIOR_SCALE = ('assumed: the paper tests Cor. 3.2 only on networks (§4.2); here a two-weight Student-t '
                         'location model with three basins, its posterior by quadrature, 2,000 SGD walkers at '
                         'stationarity per (η, B)')
TESTS = [n for n in runs if n != 'fit (0.2, 1)']
from fracsgd.core import committed_dir
COUNTS = committed_dir('exact_posterior') / 'basin_counts.csv'

def basin_counts() -> pd.DataFrame:
    "Per setting and walker: the number of late records in each basin (and the records in all)."
    return pd.concat([pd.DataFrame({'setting': n, 'lr': r['lr'], 'B': r['B'], 'walker': np.arange(r['basins'].shape[1]),
                                    'records': len(r['basins']),
                                    **{f'basin_{k}': (r['basins'] == k).sum(0) for k in range(K)}})
                      for n, r in runs.items()], ignore_index=True)

def ledger_summary() -> pd.DataFrame:
    "The compact summary of this page: the ledger's quantities, from the tables above."
    bayes = basin_masses(post[1.0], labels, K)
    rows, lit = [], {}
    for n, r in runs.items():
        boot = bootstrap_walkers(r['occ'], lambda x: x, 1000, seed=3)
        ci = np.quantile([kl(x, bayes) for x in boot], [0.025, 0.975])
        lit[n] = (kl_literal[n], *ci)
        rows.append((f'KL(SGD‖Bayes, β = 1) over basins: {n}', *lit[n], f'(η, B) = ({r["lr"]:g}, {r["B"]:g})'))
    low = min(lit, key=lambda n: lit[n][0])
    rows.append(('KL(SGD‖Bayes, β = 1) over basins, smallest over the settings', lit[low][0],
                 min(v[1] for v in lit.values()), min(v[2] for v in lit.values()), f'smallest at {low}'))
    rows.append(('β fitted at (0.2, 1)', beta_fit, *beta_ci, f'm·D_ξ = 1/β = {1 / beta_fit:.1f}, m = {model.m}'))
    for n in runs:
        k_, ci = kls[n]
        rows.append((f'KL(SGD‖p_β) at the predicted β: {n}', k_, *ci, f'β = {predicted[n]:.4g} from β ∝ B/η'))
    top = max(TESTS, key=lambda n: kls[n][0])
    rows.append(('KL(SGD‖p_β) at the predicted β, largest over the three test settings', kls[top][0],
                 max(kls[n][1][0] for n in TESTS), max(kls[n][1][1] for n in TESTS), f'largest at {top}'))
    for n, (a, ci) in exponent.items():
        rows.append((f'exponent a of β ∝ (B/η)^a: (0.2, 1) to {n}', a, *ci, 'refitted β over the fitted one, resampled'))
    near = min(exponent, key=lambda n: abs(exponent[n][0] - 1))
    rows.append(('exponent a of β ∝ (B/η)^a, nearer 1 of the two halvings', exponent[near][0], *exponent[near][1],
                 f'nearer at {near}; ' + '; '.join(f'{n}: {a:.3f}' for n, (a, _) in exponent.items())))
    for (a, b), (d, ci) in pairs.items():
        rows.append((f'largest basin-mass difference at equal η/B: {a} − {b}', d, *ci, 'resampled walkers'))
    return pd.DataFrame(rows, columns=['quantity', 'value', 'ci_low', 'ci_high', 'note']).astype(
        {'value': float, 'ci_low': float, 'ci_high': float})

from fracsgd.core import read_table, write_table
from fracsgd.ledger.checks import chapter_result, same_summary
from fracsgd.ledger.claims import read_ledger, rebuild_ledger, stale_rows
from fracsgd.ledger.provenance import COMPACT
counts = basin_counts()
assert COUNTS.exists(), 'the basin counts are not committed: run the heavy cell below'
pd.testing.assert_frame_equal(read_table(COUNTS), counts, check_dtype=False)      # the same walkers as committed
ledger_table = ledger_summary()
committed_summary = COMPACT / 'exact-posterior' / 'full' / 'summary.csv'
assert committed_summary.exists() and same_summary(ledger_table, read_table(committed_summary)), \
    'this page and its ledger rows differ: run the heavy cell below'
ledger_table.round(4)

# %%
#| heavy
# Writes the walkers' basin counts (commit them first: the result records the commit that holds them), then the
# compact result and every ledger row.
write_table(counts, COUNTS)
chapter_result('exact-posterior', 'full', ledger_table, [COUNTS], EXACT_POSTERIOR_SCALE,
               time.perf_counter() - _t0, device='cpu (2 cores shared, one thread)',
               when=pd.Timestamp.now('UTC').isoformat(timespec='seconds'))
rebuild_ledger()

# %%
assert stale_rows() == [], stale_rows()
rows = read_ledger()
rows = rows[rows.source == 'compact/exact-posterior/full'].set_index('claim_id')
assert rows.rule.to_dict() == {'cor32-literal-beta': 'not reproduced', 'cor32-tempered-transfer': 'reproduced',
                               'cor32-temperature-exponent': 'not reproduced'}
assert (rows.verdict == 'not run at paper scale').all()
rows[['value', 'ci_low', 'ci_high', 'rule', 'verdict']].round(4)

# %% [markdown]
# On basin masses the tempered family passes at table 2's level: carried by $\beta\propto B/\eta$, the temperature
# fitted at one setting predicts the masses at the other three to a KL of at most 0.003 nats. The literal reading
# (β = 1) fails by three orders of magnitude in KL, and the exponent of the temperature's scaling is 0.88 at best,
# not 1. The ledger files all three as not run at paper scale: a toy model with an exact posterior is not the paper's
# experiment, and the agreement of masses hides the shapes of the previous section.

# %%
print(f"notebook body: {time.perf_counter() - _t0:.0f} s")
