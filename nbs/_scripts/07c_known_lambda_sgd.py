# %% [markdown]
# # SGD on the exact landscapes
#
# > Minibatch SGD beside Langevin on the degenerate potentials of the known-λ chapter, the LLC estimator against their exact λ, and three of that chapter's findings restated as measured: d_f = 2λ as a count of free directions, the first-passage test with the theorem's capacitance C(ε), and why d_s exceeds λ.

# %%
#| default_exp diffusion.known_lambda_sgd

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** Theorem 3.2 with the escape set's own capacity $C(\varepsilon)$ gives an exponent of 0.49 λ
# where λ is predicted, and on the four-dimensional valleys $d_s$ is up to 5.4 times λ. The paper states both without an
# experiment, so neither row is decisive (*In the ledger*, below). The rows this page puts in the [claims
# ledger](ledger.html), read from it; each row's configuration, rule and reasons are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('known-lambda-sgd')                # this study's rows of the claims ledger, read from it

# %%
#| export
from __future__ import annotations
import math
from fractions import Fraction

import numpy as np
from scipy.special import ellipk

from fracsgd.diffusion.known_lambda import Landscape, _product, dln_landscape, monomial, morse_bott

# %%
import json, time
import matplotlib.pyplot as plt
import pandas as pd
from fracsgd.core import committed_dir
from fracsgd.diffusion.known_lambda import first_passage_times, linear_regression, sgd


# %% [markdown]
# The [known-λ chapter](known_lambda.html) walked its degenerate potentials by Langevin dynamics, whose noise is
# isotropic and the same at every point. SGD's noise is neither: it is the spread of the per-sample gradients, so it
# has the shape of the model's gradient and vanishes wherever that does. This chapter gives every degenerate
# landscape of that chapter a per-sample regression whose population loss is the landscape, runs online minibatch
# SGD on it beside Langevin, runs the automatic LLC estimator on the same models against their exact λ and their exact
# finite-n target, and measures three statements that chapter made in passing:
#
# * (a) "$d_f = 2\lambda$ at regular minima" is arithmetic: free Brownian motion in $\mathbb R^k$ has
#   $d_\text{walk} = 2$, $d_s = k$, so $\rho\lambda = d_\text{walk}d_s/2 = k$ counts the directions the walk is free
#   in, and equals $2\lambda$ only where $k = d = 2\lambda$;
# * (b) Theorem 3.2 says $T(\varepsilon) \propto \varepsilon^\lambda/(DC)$ with $C$ the capacity of the escape set,
#   eq. 33; the known-λ chapter held $C$ fixed. Here $C(\varepsilon)$ is computed and $T\,D\,C$ tested against
#   $\varepsilon^\lambda$;
# * (c) the $d_s$ measured there without λ exceeds λ on every degenerate landscape, against Cor. 3.3 ($d_s \le
#   \bar\lambda$); the explanation tested here is that $d_s$ is the dimension of the set of minima the walk spreads
#   along, which is larger than λ whenever that set is large.

# %%
#| export
def scalar_regression(name: str, phi, grad_phi, w_star, llc, multiplicity: int, minimum_set_dim: int,
                      noise: float = 1.0, why: str = '') -> Landscape:
    """y = φ(w)·x + noise·ξ with x, ξ ~ N(0, 1) and the truth φ(w*): K = ½(φ(w) − φ(w*))², minibatch gradients
    mean_i(x_i(φ x_i − y_i))·∇φ for online SGD."""
    w_star = np.asarray(w_star, float)
    target = float(phi(w_star[None])[0])
    def loss(w): return 0.5 * (phi(w) - target) ** 2
    def grad(w): return (phi(w) - target)[..., None] * grad_phi(w)
    def batch_grad(w, rng, batch):
        x = rng.standard_normal(w.shape[:-1] + (batch,))                     # [walkers, batch]
        r = (phi(w) - target)[..., None] * x - noise * rng.standard_normal(x.shape)
        return (r * x).mean(-1, keepdims=True) * grad_phi(w)
    return Landscape(name, w_star.size, Fraction(llc), multiplicity, loss, grad, w_star, why, minimum_set_dim,
                     batch_grad)

def crossing_regression(a: int, b: int, noise: float = 1.0) -> Landscape:
    "y = w1^a w2^b x + noise·ξ at the truth w1^a w2^b = 0: K = ½ w1^(2a) w2^(2b), the λ of `monomial(a, b)`."
    m = monomial(a, b)
    phi = lambda w: w[..., 0] ** a * w[..., 1] ** b
    grad_phi = lambda w: np.stack([a * w[..., 0] ** (a - 1) * w[..., 1] ** b,
                                   b * w[..., 0] ** a * w[..., 1] ** (b - 1)], -1)
    return scalar_regression(f'y = w1^{a} w2^{b} x', phi, grad_phi, m.w_star, m.llc, m.multiplicity, 1, noise, m.why)

def valley_regression(d: int, c: int, noise: float = 1.0) -> Landscape:
    "y = Σ_{i<c} w_i x_i + noise·ξ, x ~ N(0, I_c), in R^d: K = ½ Σ_{i<c} w_i², the Morse–Bott valley (λ = c/2)."
    mb = morse_bott(d, c)
    def batch_grad(w, rng, batch):
        x = rng.standard_normal(w.shape[:-1] + (batch, c))                    # [walkers, batch, c]
        r = (x @ w[..., :c, None])[..., 0] - noise * rng.standard_normal(x.shape[:-1])
        g = np.zeros_like(w)
        g[..., :c] = (x * r[..., None]).mean(-2)
        return g
    return Landscape(f'y = w_1..{c} · x in R^{d}', d, mb.llc, 1, mb.loss, mb.grad, mb.w_star, mb.why,
                     mb.minimum_set_dim, batch_grad)

def dln_regression(layer_sizes, rank: int, seed: int = 0, noise: float = 1.0) -> Landscape:
    """y = W_L⋯W_1 x + noise·ξ, x ~ N(0, I), for the DLN of `dln_landscape(layer_sizes, rank, seed)`: its population
    loss, Aoyagi's λ, minibatch gradients (W_L⋯W_{k+1})ᵀ G (W_{k−1}⋯W_1)ᵀ with G = mean_i r_i x_iᵀ."""
    base, sizes = dln_landscape(layer_sizes, rank, seed), [int(h) for h in layer_sizes]
    shapes = list(zip(sizes[1:], sizes[:-1]))
    cuts = np.cumsum([0] + [o * i for o, i in shapes])
    split = lambda w: [w[..., a:b].reshape(w.shape[:-1] + s) for a, b, s in zip(cuts[:-1], cuts[1:], shapes)]
    target = _product(split(base.w_star), sizes[0], ())
    def batch_grad(w, rng, batch):
        mats, lead = split(w), w.shape[:-1]
        x = rng.standard_normal(lead + (sizes[0], batch))                     # [walkers, H_0, batch]
        r = (_product(mats, sizes[0], lead) - target) @ x - noise * rng.standard_normal(lead + (sizes[-1], batch))
        G = r @ np.swapaxes(x, -1, -2) / batch                                # [walkers, H_L, H_0]
        parts = []
        for k in range(len(mats)):
            left, right = _product(mats[k + 1:], sizes[k + 1], lead), _product(mats[:k], sizes[0], lead)
            parts.append((np.swapaxes(left, -1, -2) @ G @ np.swapaxes(right, -1, -2)).reshape(lead + (-1,)))
        return np.concatenate(parts, -1)
    return Landscape(base.name + ' regression', base.dim, base.llc, 1, base.loss, base.grad, base.w_star, base.why,
                     base.minimum_set_dim, batch_grad)


# %% [markdown]
# ## Per-sample models and their noise
#
# The noise model, for every landscape below: inputs $x \sim N(0, 1)$ (or $N(0, I)$), labels
# $y = f(x; w^*) + \sigma\xi$ with $\xi \sim N(0, 1)$ independent of $x$ and $\sigma = 1$ unless said, and a fresh
# batch of $B$ samples at every step (online SGD: no finite data set, so the only noise is the minibatch's). The
# per-sample loss is $\tfrac12(f(x; w) - y)^2$, and its expectation over $(x, y)$ is the landscape plus $\sigma^2/2$.
#
# * `crossing_regression(a, b)`: $f = w_1^a w_2^b x$, truth $0$: $K = \tfrac12 w_1^{2a}w_2^{2b}$, the λ of
#   `monomial(a, b)` (a constant factor in $K$ leaves λ alone). `(1, 1)` is the chapter's `product_regression`.
# * `valley_regression(d, c)`: $f = \sum_{i \le c} w_i x_i$ with $x \sim N(0, I_c)$, truth 0: the Morse–Bott valley
#   $K = \tfrac12\sum_{i\le c} w_i^2$ in $\mathbb R^d$, λ = c/2.
# * `dln_regression(widths, rank)`: $f = W_L\cdots W_1 x$, truth the weights of `dln_landscape`: the same $K$ and
#   Aoyagi's λ.
#
# For a scalar model $f = \phi(w)x$ the minibatch gradient is $\bar g\,\nabla\phi(w)$ with the scalar
# $\bar g = \tfrac1B\sum_i x_i(r x_i - \sigma\xi_i)$, $r = \phi(w) - \phi(w^*)$. Its mean is $r\nabla\phi = \nabla K$
# and, since $\mathrm{Var}(x^2) = 2$, its covariance is exactly
# $$\Sigma(w) = \frac{\sigma^2 + 2r^2}{B}\,\nabla\phi\,\nabla\phi^\top .$$
# Rank one, along $\nabla\phi$: across the level sets of φ and never along them, and zero wherever $\nabla\phi = 0$.
# Three consequences follow before any run. At the crossing's origin both components of $\nabla\phi = (w_2, w_1)$
# vanish, so SGD started at $w^*$ never moves; on $w_1 w_2^2$ the gradient $(w_2^2, 2w_1w_2)$ vanishes on the whole
# $w_1$ arm. On the valley the $d - c$ flat coordinates receive no gradient at all and keep their starting values
# exactly. On DLN $[1, 2, 1]$, $\phi = v\cdot u$ and $\nabla\phi = (v, u)$, so a step is $u \mapsto u - \eta\bar g v$,
# $v \mapsto v - \eta\bar g u$: $u + v$ is multiplied by $1 - \eta\bar g$ and $u - v$ by $1 + \eta\bar g$. Both
# directions are fixed for ever, and SGD lives on the two-dimensional set $\{\alpha(u_0 + v_0) + \beta(u_0 - v_0)\}$,
# which meets the three-dimensional fibre $u\cdot v = m$ in a curve.
#
# On linear regression in $\mathbb R^d$ the stationary variance of the discrete step is known in closed form
# (`sgd_stationary_variance`, from $E[x x^\top S x x^\top] = 2S + \mathrm{tr}(S)I$ for Gaussian $x$), which the
# tests and the cell below use.

# %%
#| export
def scalar_noise_covariance(grad_phi_w, residual, noise: float, batch: int) -> np.ndarray:
    "Covariance of a scalar regression's minibatch gradient: (noise² + 2·residual²)/batch · ∇φ∇φᵀ (x Gaussian)."
    g = np.asarray(grad_phi_w, float)
    return (noise**2 + 2 * residual**2) / batch * np.outer(g, g)

def sgd_stationary_variance(lr: float, batch: int, noise: float, d: int) -> float:
    """Per-coordinate stationary variance of online SGD on linear regression y = xᵀw* + noise·ξ, x ~ N(0, I_d):
    s = lr·noise² / (batch·(2 − lr·(1 + (d + 1)/batch))), exact for the discrete step."""
    den = 2 - lr * (1 + (d + 1) / batch)
    if den <= 0:
        raise ValueError(f"SGD has no stationary variance at lr={lr}, batch={batch}, d={d}")
    return lr * noise**2 / (batch * den)

def pair_direction_change(traj, half: int, shrunk: float = 1e-6) -> float:
    """Largest 1 − |cos| between the directions of u ± v at any record and at the start, over walkers, for weights
    w = (u, v) split at `half` (for DLN [1, 2, 1]: u = W_1, v = W_2ᵀ); records where a vector has shrunk below
    `shrunk` times its start are skipped (its direction is then rounding error)."""
    x = np.asarray(traj, float)
    u, v = x[..., :half], x[..., half:]
    worst = 0.0
    for s in (u + v, u - v):
        n = np.linalg.norm(s, axis=-1, keepdims=True)
        ok = n[..., 0] > shrunk * n[:, :1, 0]                      # below that, rounding in u and v sets the direction
        s = s / np.where(n > 0, n, 1.0)
        worst = max(worst, float(np.where(ok, 1 - np.abs((s * s[:, :1]).sum(-1)), 0.0).max()))
    return worst


# %% [markdown]
# Checks: the covariance against 100,000 minibatches, the stationary variance against 2,000 walkers, the frozen
# coordinates and the fixed directions:

# %%
rng = np.random.default_rng(0)
ls = crossing_regression(1, 1)
w = np.array([[0.8, -0.5]])
g = np.stack([ls.batch_grad(w, rng, 8)[0] for _ in range(100_000)])
exact = scalar_noise_covariance([-0.5, 0.8], -0.4, 1.0, 8)
assert np.allclose(np.cov(g.T), exact, rtol=0.03, atol=1e-4), (np.cov(g.T), exact)
x = sgd(linear_regression(2), 2000, 600, lr=0.05, batch=4, seed=2)
assert abs((x[:, 300:] ** 2).mean() / sgd_stationary_variance(0.05, 4, 1.0, 2) - 1) < 0.04
assert (sgd(ls, 10, 1000, lr=0.05, batch=8) == 0).all()                     # at w* = 0 SGD never moves
x = sgd(valley_regression(3, 1), 100, 1000, lr=0.05, batch=8, start=(0.0, 0.3, -0.2))
assert (x[..., 1:] == np.array([0.3, -0.2])).all() and x[..., 0].std() > 0.01
x = sgd(dln_regression([1, 2, 1], 1), 100, 5000, lr=0.05, batch=8)
assert pair_direction_change(x, 2) < 1e-10 < np.abs(x[:, -1] - x[:, 0]).max()
np.cov(g.T).round(4), exact.round(4), pair_direction_change(x, 2)


# %% [markdown]
# ## The capacity of an escape set
#
# Theorem 3.2's proof (appendix D.1) uses the mean first-passage time of a porous domain, $\bar T \propto
# |\Omega|/(D\,\mathrm{Cap}(\Gamma))$ (eq. 34–35), with the Newtonian capacity $\mathrm{Cap}(\Gamma) =
# \inf\{\int|\nabla u|^2 : u \ge 1 \text{ on } \Gamma\}$ of eq. 33 and $\Omega = \mathcal W_\varepsilon = \{w \in
# B(r, w^*): K(w) < \varepsilon\}$. The escape set of the model is where the pore meets the sphere,
# $\Gamma_\varepsilon = \{\lVert w - w^*\rVert = r,\ K(w) < \varepsilon\}$, and it changes with ε.
#
# Two facts fix where the formula can be tested. In $\mathbb R^2$ eq. 33 is zero for every bounded set (a logarithmic
# cut-off $u$ has arbitrarily small energy), so on the two-dimensional crosses and strip of the known-λ chapter the
# formula divides by zero. In $\mathbb R^3$ it is positive, and for the valleys `morse_bott(3, c)` the escape sets are
# zones of the sphere, symmetric about an axis: for c = 1 the band $|w_1| < \sqrt{2\varepsilon}$ about an equator, for
# c = 2 the two caps of radius $\sqrt{2\varepsilon}$ at the poles of the $w_3$ axis (`escape_zones`). `zone_capacity`
# computes eq. 33 for such zones by solving the first-kind integral equation of the single-layer potential
# ($u = \int G\sigma$, $G = 1/(4\pi|x - y|)$, $u = 1$ on the set; then $\int|\nabla u|^2 = \int\sigma$), with the
# azimuth integrated in closed form (a complete elliptic integral), piecewise-constant charge on panels graded towards
# the zone's edges, where the charge is singular, and Gauss quadrature that splits the self panel at its
# log-singularity. The closed forms it must reproduce: a sphere has $4\pi r$ and a cap of half-angle $\theta_0$ has
# $4r(\theta_0 + \sin\theta_0)$ (the classical bowl capacitance, times $4\pi$ for this normalisation), which tends to
# a disc's $8a$.

# %%
#| export
def _graded(lo: float, hi: float, n: int) -> np.ndarray:
    "n panels on [lo, hi], finer towards both ends (cosine spacing), where a charge density is singular."
    return lo + (hi - lo) * (1 - np.cos(np.linspace(0, math.pi, n + 1))) / 2

def zone_capacity(zones, radius: float = 1.0, panels: int = 120, nodes: int = 12) -> float:
    """Newtonian capacity inf ∫|∇u|² (u ≥ 1 on the set) in R³ of a union of polar-angle zones [θ_a, θ_b] on the
    sphere of `radius`: an axisymmetric single-layer boundary-element solve (piecewise-constant charge on graded
    panels, ring kernel K(m)), capacity = total charge. A whole sphere gives 4πr."""
    edges = [e for a, b in zones for e in [_graded(a, b, panels)]]
    lo = np.concatenate([e[:-1] for e in edges]); hi = np.concatenate([e[1:] for e in edges])
    mid = (lo + hi) / 2
    xg, wg = np.polynomial.legendre.leggauss(nodes)
    def kernel(theta_i, th):                             # potential at (θ_i) of unit charge density on rings at th
        ri, zi = radius * np.sin(theta_i), radius * np.cos(theta_i)
        rho, z = radius * np.sin(th), radius * np.cos(th)
        q = (ri + rho) ** 2 + (zi - z) ** 2
        m = np.minimum(4 * ri * rho / q, 1 - 1e-16)
        return radius * rho * ellipk(m) / (math.pi * np.sqrt(q))     # r dθ · ρ ∫dφ/(4π|x − y|)
    def integral(i, a, b, n):
        t = (a + b) / 2 + (b - a) / 2 * np.polynomial.legendre.leggauss(n)[0]
        return (b - a) / 2 * (np.polynomial.legendre.leggauss(n)[1] * kernel(mid[i], t)).sum()
    N = mid.size
    A = np.empty((N, N))
    for i in range(N):
        t = (lo + hi)[None, :] / 2 + (hi - lo)[None, :] / 2 * xg[:, None]          # [nodes, N]
        A[i] = ((hi - lo) / 2 * (wg[:, None] * kernel(mid[i], t)).sum(0))
        for j in range(max(0, i - 1), min(N, i + 2)):                               # near and self panels
            if j == i:
                A[i, j] = integral(i, lo[j], mid[i], 4 * nodes) + integral(i, mid[i], hi[j], 4 * nodes)
            else:
                A[i, j] = integral(i, lo[j], hi[j], 4 * nodes)
    sigma = np.linalg.solve(A, np.ones(N))
    area = 2 * math.pi * radius**2 * (np.cos(lo) - np.cos(hi))
    return float(sigma @ area)

def cap_capacity(theta0: float, radius: float = 1.0) -> float:
    "Closed form: the capacity (∫|∇u|² normalisation) of a spherical cap of half-angle θ0: 4r(θ0 + sin θ0)."
    return 4 * radius * (theta0 + math.sin(theta0))

def escape_zones(c: int, d: int, eps: float, radius: float = 1.0):
    """The escape set {‖w‖ = r, K < ε} of `morse_bott(3, c)` as polar-angle zones: c = 1, the band |w_1| < √(2ε)
    about the equator of the w_1 axis; c = 2, the two caps ρ < √(2ε) at the poles of the w_3 axis."""
    if d != 3 or c not in (1, 2):
        raise ValueError(f"zones are written for d = 3, c = 1 or 2, got d={d}, c={c}")
    t0 = math.asin(min(1.0, math.sqrt(2 * eps) / radius))
    return [(math.pi / 2 - t0, math.pi / 2 + t0)] if c == 1 else [(0.0, t0), (math.pi - t0, math.pi)]

def pore_volume(c: int, eps: float, radius: float = 1.0) -> float:
    "|{w ∈ B(r): K < ε}| for `morse_bott(3, c)`: a slab of half-width a = √(2ε) (c = 1) or a tube of radius a (c = 2)."
    a = min(math.sqrt(2 * eps), radius)
    if c == 1:
        return math.pi * (2 * a * radius**2 - 2 * a**3 / 3)
    if c == 2:
        return 4 * math.pi / 3 * (radius**3 - (radius**2 - a**2) ** 1.5)
    raise ValueError(f"c must be 1 or 2, got {c}")


# %% [markdown]
# The solver against the closed forms, and the two escape sets as ε changes (the band's capacity grows like
# $1/\log(1/\varepsilon)$, as a thin ring's does; the caps' like their radius, $\varepsilon^{1/2}$):

# %%
assert abs(zone_capacity([(0, math.pi)]) / (4 * math.pi) - 1) < 1e-5
for t0 in (0.05, 0.3, 1.5):
    assert abs(zone_capacity([(0, t0)]) / cap_capacity(t0) - 1) < 1e-4, t0
caps = pd.DataFrame([dict(eps=e, band=zone_capacity(escape_zones(1, 3, e)), caps=zone_capacity(escape_zones(2, 3, e)),
                          one_cap_closed=cap_capacity(math.asin(math.sqrt(2 * e)))) for e in (1e-3, 1e-2, 1e-1)])
assert (caps.caps < 2 * caps.one_cap_closed).all() and (caps.caps > caps.one_cap_closed).all()
caps.round(3)


# %% [markdown]
# ## What an LLC estimate targets at finite n
#
# At finite n the estimator of Lau et al. estimates $n\beta\,E[L_n(w) - L_n(w^*)]$ under the localized tempered
# posterior $\propto \exp(-n\beta L_n(w) - \tfrac\gamma2\lVert w - w^*\rVert^2)$, with $n\beta = n/\log n$; that number
# tends to λ only as $n \to \infty$. For the normal crossings `fracsgd.llc.calibrate.crossing_target` computes it by
# 2-D quadrature. For DLN $[1, 2, 1]$ (four weights) quadrature is dear, but $L_n$ depends on $w$ only through the
# scalar $\phi(w) = W_2W_1$, so self-normalised importance sampling from the Gaussian factor is cheap and accurate
# (`scalar_posterior_target`); it is checked against the quadrature on the crossings in the results below, and against
# the Gaussian closed form in the tests.

# %%
#| export
def scalar_posterior_target(phi, w_star, x, y, n_beta: float, localization: float, n_samples: int = 4_000_000,
                            seed: int = 0, chunk: int = 200_000) -> tuple[float, float]:
    """nβ E[L_n(w) − L_n(w*)] under exp(−nβ L_n(w) − γ/2‖w − w*‖²) for y = φ(w)·x (scalar x, y, ½-squared error),
    by self-normalised importance sampling from the Gaussian N(w*, I/γ): (target, its standard error)."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    sxx, sxy, w_star = (x * x).mean(), (x * y).mean(), np.asarray(w_star, float)
    p0 = float(phi(w_star[None])[0])
    rng, E = np.random.default_rng(seed), []
    for _ in range(max(1, n_samples // chunk)):
        w = w_star + rng.standard_normal((chunk, w_star.size)) / math.sqrt(localization)
        p = phi(w)
        e = n_beta * (sxx * (p**2 - p0**2) / 2 - sxy * (p - p0))
        E.append(e)
    e = np.concatenate(E)
    wt = np.exp(-(e - e.min()))
    t = float((wt * e).sum() / wt.sum())
    se = float(np.sqrt((wt**2 * (e - t) ** 2).sum()) / wt.sum())   # delta-method s.e. of the ratio
    return t, se


# %% [markdown]
# ## The experiment
#
# `tools/known_lambda_sgd.py` runs three parts on one CPU thread and writes their tables here (the measured seconds,
# the date and the machine are in `run.json`):
#
# * **walks**: each regression above by online SGD, batch 8, σ = 1, 150 walkers, $8\cdot10^5$ steps recorded every
#   80th, measured by `walk_exponents` with the known-λ chapter's windows ($t \ge t_\text{end}/50$, return lags up to
#   $t_\text{end}/4$), at two step sizes: **the same step** as that chapter's Langevin walks, $\eta = 1.25\cdot10^{-4}$,
#   and a **noise-matched step** $\eta = \sqrt{2\cdot1.25\cdot10^{-4}\,B}/\sigma = 0.0447$, at which SGD's step noise
#   $\eta\sigma|\nabla\phi|/\sqrt B$ equals Langevin's $\sqrt{2\eta_L T}$ where $|\nabla\phi| = 1$. The valley and the
#   DLN start at $w^*$; the crossings start on an arm where their noise does not vanish, $(1, 0)$ for $w_1w_2$ and
#   $(0, 1)$ for $w_1w_2^2$ (at $w^* = 0$ they never move, checked above). The Langevin rows beside them are the known-λ
#   chapter's committed walks (same step, same steps, started at $w^*$), plus two new Langevin valleys for finding
#   (c), `morse_bott(4, 3)` and `morse_bott(4, 1)`, at that chapter's protocol;
# * **passage**: `first_passage_times` (the proof's model: reflected at $K = \varepsilon$, absorbed on the sphere
#   $r = 1$) on `morse_bott(3, 1)` and `morse_bott(3, 2)` at ε ∈ {0.003, 0.01, 0.03, 0.1}, 200 walkers, steps of a
#   fifth of the pore's half-width $\sqrt{2\varepsilon}$, with `zone_capacity` of each escape set;
# * **llc**: `estimate_llc_auto` (precision 5%) on `NormalCrossing(1, 1)`, `(1, 2)`, `(1, 0)` and the DLN
#   $[1, 2, 1]$ at $n = 3000$, σ = 1, beside the exact target at the γ it chose.

# %%
OURS = committed_dir('known_lambda_sgd')
walks = pd.read_csv(OURS / 'walks.csv')
passage = pd.read_csv(OURS / 'passage.csv')
llc = pd.read_csv(OURS / 'llc.csv')
run = json.loads((OURS / 'run.json').read_text())
langevin07b = pd.read_csv(committed_dir('ledger', 'compact', 'known-lambda', 'full') / 'walks.csv')
print({k: (v['wall_seconds'], v['cpu_seconds']) for k, v in run.items()}, run['walks']['machine'])

# %% [markdown]
# ## 1. SGD beside Langevin
#
# One row per landscape and dynamics. `R_end` is the mean final displacement, `spread` the largest eigenvalue of the
# walkers' covariance of their final displacements (how far apart the walkers end), and the exponents are
# `walk_exponents`' with 95% intervals.

# %%
PAIR = {'y = w1^1 w2^1 x': 'w1^2 w2^2', 'y = w1^1 w2^2 x': 'w1^2 w2^4',
        'y = w_1..1 · x in R^3': 'Morse–Bott, d = 3, c = 1',
        'DLN [1, 2, 1], rank 1 regression': 'DLN [1, 2, 1], rank 1'}
ci = lambda r, q: (f"{r[q]:.3g} [{r[q + '_ci_low']:.3g}, {r[q + '_ci_high']:.3g}]" if np.isfinite(r[q]) else '—')
rows = []
for ours, theirs in PAIR.items():
    for _, r in langevin07b[langevin07b.landscape == theirs].iterrows():
        rows.append(dict(landscape=theirs, dynamics='Langevin (known-λ chapter)', λ=r.llc_exact, R_end='', spread='',
                         d_walk=ci(r, 'd_walk'), d_s=ci(r, 'd_s'), d_f=ci(r, 'd_f')))
    for _, r in walks[walks.landscape == ours].iterrows():
        rows.append(dict(landscape=theirs, dynamics=r.dynamics + f' (η = {r.lr:.3g})', λ=r.llc_exact,
                         R_end=f'{r.R_end:.3g}', spread=f"{float(r.disp_var_eigs.split()[0]):.2g}",
                         d_walk=ci(r, 'd_walk'), d_s=ci(r, 'd_s') if not isinstance(r.reason, str) else 'no window',
                         d_f=ci(r, 'd_f') if not isinstance(r.reason, str) else '—'))
side = pd.DataFrame(rows)
side

# %% [markdown]
# What the table says, asserted below. **SGD does not walk along any of these valleys.** At the same step it hardly
# moves: the walkers end $2.3$–$2.9\cdot10^{-3}$ from where they began (Langevin at that step spreads over the
# valley: $d_s \approx 1$–3 and $d_\text{walk} \approx 2$–3 in the committed rows). At the noise-matched step,
# where each step is as noisy as Langevin's, the walkers still do not spread: on each landscape their final
# displacements agree to within a variance of $3\cdot10^{-3}$.
#
# * On the crossings the noise lies across the arm, and the drift $-\nabla K$, second order in the fluctuation across
#   it, pulls the walker *along* the arm to the origin, where the noise vanishes: from $(1, 0)$ every walker of
#   $w_1w_2$ ends at the origin ($R_\text{end} = 1.000$, spread $10^{-57}$) and stays there; from $(0, 1)$ the walkers of
#   $w_1 w_2^2$ slide to $R = 0.95$ and freeze as their noise, $\propto w_2^2$, dies. The fitted $d_\text{walk}$ of 12
#   to 47 is the signature of a walk that stops, not an exponent.
# * On the valley the flat coordinates never change (to the last bit), and the stiff one is an Ornstein–Uhlenbeck
#   process whose variance is the closed form `sgd_stationary_variance` (0.00287 measured, 0.00287 exact); nothing
#   is left to diffuse, so no return window qualifies.
# * On the DLN the directions of $u \pm v$ stay fixed to $10^{-16}$, and $|u - v|$ shrinks geometrically (below): every
#   walker becomes balanced, $u = v$, and ends at the one point of the fibre on the line through $u_0 + v_0$,
#   fluctuating only across the fibre.

# %%
sg = walks[walks.dynamics.str.startswith('SGD')].set_index(['landscape', 'dynamics'])
spread = sg.disp_var_eigs.str.split().str[0].astype(float)
assert (spread < 3e-3).all(), spread                                          # the walkers do not spread
same = sg[sg.lr < 1e-3]
assert (same.R_end < 3e-3).all(), same.R_end                                  # at Langevin's step SGD barely moves
matched = sg[sg.lr > 1e-3].reset_index().set_index('landscape')
assert abs(matched.R_end['y = w1^1 w2^1 x'] - 1) < 1e-3                        # slid from (1, 0) to the origin
assert matched.R_end['y = w1^1 w2^2 x'] > 0.9                                  # slid along the w2 arm towards 0
valley = matched.loc['y = w_1..1 · x in R^3']
assert (sg.flat_change.dropna() == 0).all() and isinstance(valley.reason, str)    # flat coordinates frozen exactly
ou = float(valley.disp_var_eigs.split()[0])
assert abs(ou / sgd_stationary_variance(valley.lr, 8, 1.0, 1) - 1) < 0.1, ou    # the stiff coordinate: exact OU
assert (sg.pair_direction_change.dropna() < 1e-12).all()                       # DLN: u ± v keep their directions
assert (langevin07b[langevin07b.landscape.isin(PAIR.values())].d_s_ci_low > 0.9).all()  # Langevin does spread
ou, sgd_stationary_variance(valley.lr, 8, 1.0, 1)

# %% [markdown]
# The DLN's balancing, in a short run at the noise-matched step: $|u + v|$ stays of order one while $|u - v|$ falls
# by orders of magnitude, so the two-dimensional set SGD lives on collapses to the line $u = v$.

# %%
x = sgd(dln_regression([1, 2, 1], 1), 50, 100_000, lr=float(matched.lr.iloc[0]), batch=8, record_every=1000)
plus, minus = (np.linalg.norm(x[..., :2] + s * x[..., 2:], axis=-1) for s in (1, -1))
assert (minus[:, -1] < 1e-8 * minus[:, 0]).all() and (abs(plus[:, -1] / plus[:, 0] - 1) < 0.3).all()
assert pair_direction_change(x, 2) < 1e-12
print(f'|u − v|: {minus[0, 0]:.3f} → {np.median(minus[:, -1]):.1e};  |u + v|: {plus[0, 0]:.3f} → {np.median(plus[:, -1]):.3f}')

# %% [markdown]
# ## 2. The LLC estimator against exact λ
#
# The automatic estimate on each per-sample model at $n = 3000$, its interval, the exact finite-n target at its γ
# (quadrature for the crossings, importance sampling for the DLN and, as a check, for the crossings too), and λ.
# (`NormalCrossing(1, 0)` is the valley with one stiff weight and one unused one; an unused weight does not change
# λ = ½.)

# %%
llc_shown = llc[['model', 'llc_exact', 'gamma', 'draws', 'llc', 'llc_low', 'llc_high', 'target_quadrature',
                 'target_mc', 'target_mc_se', 'seconds']]
half = llc.llc_high - llc.llc
assert (abs(llc.llc - llc.target_mc) <= half).all()                            # every estimate holds its target
q = llc.dropna(subset=['target_quadrature'])
assert (abs(q.target_quadrature - q.target_mc) < 4 * q.target_mc_se).all()      # the two exact targets agree
assert ((llc.llc_high < llc.llc_exact) & (llc.target_mc < llc.llc_exact)).all()  # ... and both lie below λ
llc_shown.round(4)

# %% [markdown]
# Every estimate matches its exact target within its interval, and every target lies below λ, by 5.5% to 31%
# ($x w_1w_2$: 0.345 against ½; $x w_1w_2^2$: 0.200 against ¼; the valley 0.471 against ½; the DLN 0.473 against ½).
# So at $n = 3000$ the estimator is a correct sampler of a number that is not λ, and its interval excludes λ on all
# four models. How far the crossing's target is from λ as n grows (quadrature, the same data law):

# %%
from fracsgd.llc.calibrate import crossing_data, crossing_target
from fracsgd.llc.settings import default_n_beta
grow = []
for n in (3_000, 30_000, 300_000, 3_000_000):
    data_n = crossing_data(n, 1.0, 0)
    grow.append(dict(n=n, n_beta=default_n_beta(n), S_xy=float((data_n[0] * data_n[1]).mean()),
                     target=crossing_target(1, 1, data_n, default_n_beta(n), 1.0)))
grow = pd.DataFrame(grow)
assert (grow.target < 0.5).all() and (grow.target > 0.3).all()
grow.round(4)

# %% [markdown]
# Up to $n = 3\cdot10^6$ the target of $x w_1 w_2$ stays between 0.34 and 0.42, below ½, and does not rise
# monotonically: through $n\beta S_{xy}$ the data's noise moves it as much as $n$ does. (A multiplicity-2 point
# approaches λ only with a $\log\log n$ correction, so a moderate n cannot be expected to reach it.)
#
# ## 3a. $d_f = 2\lambda$ is a count of free directions
#
# $\rho\lambda = d_\text{walk}d_s/2$ is the walk's own mass dimension. For free Brownian motion in $k$ directions it is
# $2\cdot k/2 = k$. The table puts it beside $k$, the number of directions each walk is free in: $d$ for the regular
# minima inside the pore (the known-λ chapter's window), the dimension of the set of minima near $w^*$ for Langevin on
# a degenerate minimum, and 0 for SGD (above: no walker spreads).

# %%
lv = pd.concat([langevin07b.assign(source='known-λ chapter'), walks[walks.dynamics == 'Langevin'].assign(source='here')])
lv = lv[lv.d_s.notna()].copy()
lv['k'] = np.where(lv.minimum_set_dim == 0, lv.dim, lv.minimum_set_dim)
lv['two_lambda'] = 2 * lv.llc
free = lv[['landscape', 'dynamics', 'source', 'llc_exact', 'k', 'two_lambda', 'd_walk', 'd_s', 'd_f', 'd_f_ci_low',
           'd_f_ci_high']].reset_index(drop=True)
differ = free[free.k != free.two_lambda]
assert (abs(differ.d_f - differ.k) < abs(differ.d_f - differ.two_lambda)).all()   # ρλ follows k, not 2λ
assert (abs(free.d_f - free.k) < 0.7).all()
free.round(3)

# %% [markdown]
# Measured: where $k \ne 2\lambda$ (the five degenerate landscapes but $w_1^2w_2^2$, where $k = 1 = 2\lambda$ by
# coincidence) $\rho\lambda$ is closer to $k$ than to $2\lambda$ every time, and within 0.7 of $k$ everywhere. It
# equals $k$ within its interval on the regular minima and the $d = 3$ valley; elsewhere it sits above $k$ (1.64
# against 1 on $w_1^2w_2^2$, 3.41 against 3 on the DLN) or below ($2.61$ against 3 on `morse_bott(4, 1)`). On the
# crosses and on `morse_bott(4, 3)` the deviation is $d_\text{walk}$'s (3.1, 2.4 and 2.4: on the crosses the arms
# narrow as the walker moves out; on the valley with three stiff directions their confined spread adds a constant to
# $R^2$ that flattens $R(t)$ early in the window), on the DLN and `morse_bott(4, 1)` it is $d_s$'s, whose intervals
# still hold $k$ (next section). The minibatch SGD row of the known-λ chapter (linear regression,
# a regular minimum, where the noise is isotropic) is free in both directions of the pore and gives 2.03; SGD on the
# degenerate landscapes is free in none. So "$d_f = 2\lambda$ at a regular minimum" is
# $k = d = 2\lambda$ there, and no statement about λ: on `morse_bott(4, 3)`, $2\lambda = 3$ and the walk's mass
# dimension is 1.28.
#
# ## 3b. Theorem 3.2 with the theorem's $C(\varepsilon)$
#
# The theorem reads $T(\varepsilon) \propto \varepsilon^\lambda/(DC)$, i.e. $T\,D\,C(\varepsilon) \propto \varepsilon^\lambda$.
# $C(\varepsilon)$ here is eq. 33 for the escape set $\Gamma_\varepsilon$, computed by `zone_capacity` at each ε; $D = \tfrac12$
# per coordinate in the model's time unit; $T$ is the mean exit time of 200 walkers. The slope of
# $\log(T D C)$ against $\log\varepsilon$ (bootstrap over walkers) is tested against λ.

# %%
pf = passage.groupby('landscape', sort=False).first()
pf['capacity_slope'] = [np.polyfit(np.log(g.eps), np.log(g.capacity), 1)[0] for _, g in passage.groupby('landscape', sort=False)]
pf['mean_T'] = passage.groupby('landscape', sort=False).mean_T.apply(lambda t: ', '.join(f'{v:.3f}' for v in t))
pf['capacity'] = passage.groupby('landscape', sort=False).capacity.apply(lambda t: ', '.join(f'{v:.2f}' for v in t))
for name, closed in (('Morse–Bott, d = 3, c = 1', 0.5), ('Morse–Bott, d = 3, c = 2', 1.0)):
    g = passage[passage.landscape == name]                     # exit from a disc (r²/(2·2D)) and from a segment (r²/2D)
    assert (abs(g.mean_T / closed - 1) < 4 * g.sd_T / np.sqrt(g.walkers) / closed + 0.03).all(), g.mean_T
assert ((pf.exponent_T_low < 0) & (0 < pf.exponent_T_high)).all()                 # T does not depend on ε
assert ((pf.exponent_TDC_high < pf.llc)).all()                                    # T·D·C ∝ ε^λ is excluded
assert ((pf.exponent_TDC_low < pf.capacity_slope) & (pf.capacity_slope < pf.exponent_TDC_high)).all()
pf[['llc', 'exponent_volume', 'capacity_slope', 'exponent_T', 'exponent_T_low', 'exponent_T_high', 'exponent_TDC',
    'exponent_TDC_low', 'exponent_TDC_high', 'mean_T', 'capacity']].round(3)

# %% [markdown]
# Measured: the exit time does not depend on ε (slopes −0.012 [−0.050, 0.025] on the slab, 0.016 [−0.036, 0.056]
# on the tube) and equals the closed forms of free diffusion along the valley, $r^2/(2kD)$ = ½ and 1. The pore
# volume does follow $\varepsilon^\lambda$ (slopes 0.48 and 0.99), and the capacity grows with ε (slopes 0.11 and 0.47), so
# $T\,D\,C$ has slope 0.095 [0.057, 0.132] against λ = ½ and 0.49 [0.44, 0.53] against λ = 1: the theorem's formula is
# rejected with its own $C(\varepsilon)$, not only with $C$ held fixed. The reason is geometric: in these pores the escape
# set is the pore's whole cross-section where it meets the sphere, not a small window in a large wall, so the
# narrow-escape asymptotics of eq. 34 ($\delta \to 0$ relative to the domain) do not apply, and the walker crosses the
# pore in the free-diffusion time whatever its width. On the two-dimensional crosses and strip of the known-λ chapter
# eq. 33 is zero and the formula has no value to test.
#
# ## 3c. Why $d_s > \lambda$: $d_s$ is the dimension of the set of minima
#
# The explanation: a Langevin walker near a degenerate minimum spreads along the set of minima $\{K = 0\}$, of
# dimension $k$, and is confined across it, so its return probability decays as in $\mathbb R^k$ and $d_s = k$. For
# a set of minima of dimension $k$ in $\mathbb R^d$, λ is at most the codimension's regular value $(d - k)/2$ (equal on a
# Morse–Bott valley, smaller on the crossings), so $d_s = k > \lambda$ whenever $k > (d - k)/2$, which holds on all four
# degenerate landscapes of the known-λ chapter, and Cor. 3.3 can hold only where $k \le \lambda$. The explanation
# therefore predicts its own exception: `morse_bott(4, 3)` has $k = 1 < \lambda = 3/2$, and there $d_s \le \lambda$ must
# hold; `morse_bott(4, 1)` has $k = 3$ and λ = ½, a violation by a factor six.

# %%
deg = lv[lv.minimum_set_dim > 0][['landscape', 'source', 'llc', 'dim', 'k', 'd_s', 'd_s_ci_low', 'd_s_ci_high']].copy()
deg['k_in_ci'] = (deg.d_s_ci_low <= deg.k) & (deg.k <= deg.d_s_ci_high)
deg['cor33_holds'] = deg.d_s_ci_high <= deg.llc
assert deg.k_in_ci.all(), deg                                                     # d_s = dim{K = 0}, every landscape
assert (deg.cor33_holds == (deg.k < deg.llc)).all(), deg                          # Cor. 3.3 holds exactly where k < λ
assert ((deg.d_s_ci_low > deg.llc) == (deg.k > deg.llc)).all()
deg.reset_index(drop=True).round(3)

# %%
fig, ax = plt.subplots(1, 2, figsize=(10.5, 3.8))
for i, r in enumerate(deg.itertuples()):
    ax[0].errorbar(r.d_s, i, xerr=[[r.d_s - r.d_s_ci_low], [r.d_s_ci_high - r.d_s]], fmt='o', color='C0',
                   label='$d_s$ (returns, no λ)' if i == 0 else None)
    ax[0].plot(r.k, i, 'k|', ms=14, label='dim {K = 0}' if i == 0 else None)
    ax[0].plot(r.llc, i, 'rx', label='λ (exact)' if i == 0 else None)
ax[0].set(yticks=range(len(deg)), yticklabels=deg.landscape, xlabel='dimension', title='Cor. 3.3: $d_s$ against λ')
ax[0].legend(fontsize=7)
for name, g in passage.groupby('landscape', sort=False):
    l, = ax[1].loglog(g.eps, g.mean_T * 0.5 * g.capacity, 'o-', label=f'T·D·C, {name} (λ = {g.llc.iloc[0]:g})')
    ax[1].loglog(g.eps, g.mean_T * 0.5 * g.capacity.iloc[0] * (g.eps / g.eps.iloc[0]) ** g.llc.iloc[0], '--',
                 color=l.get_color(), lw=0.8)
ax[1].set(xlabel='ε', ylabel='T D C(ε)', title='Theorem 3.2 with C(ε) (dashed: ∝ $ε^λ$)')
ax[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# Measured: on all six degenerate landscapes walked by Langevin the interval of $d_s$ holds the dimension of the set
# of minima ($w_1^2w_2^2$ 1.05, $w_1^2w_2^4$ 1.06, `morse_bott(4, 3)` 1.08 [0.95, 1.24] against $k = 1$; the $d = 3$
# valley 1.99 against 2; the DLN 3.24 and `morse_bott(4, 1)` 2.69 [2.40, 3.04] against 3), and Cor. 3.3 holds on
# exactly the one landscape where $k < \lambda$ (`morse_bott(4, 3)`: 1.08 ≤ 3/2). So the violations are not noise in
# $d_s$: $d_s$ measures the fibre of the singular set and λ the volume scaling across it, two different numbers, and
# $d_s \le \lambda$ is a statement about which is larger. Under SGD both the fibre and the walk disappear: the
# minibatch noise has no component along the set of minima, and the walkers converge to points.
#
# **Not done here.** SGD on the deep linear networks beyond $[1, 2, 1]$, first passage under SGD, the capacity of the
# DLN's four-dimensional escape set (not axisymmetric), and a 2-D (logarithmic) version of the narrow-escape formula
# for the crosses.

# %% [markdown]
# ## In the ledger
#
# Two claims are asked here that no earlier result could answer: Theorem 3.2 with the escape set's own $C(\varepsilon)$
# (the exponent of $T\,D\,C$ in ε over λ, the larger of the two valleys, so the theorem gets its better chance), and
# Cor. 3.3 on the two $d = 4$ valleys that no setting of this repository was chosen on (the larger $d_s/\lambda$).
# The summary is built from the tables above; its committed copy in `compact/known-lambda-sgd/full/` must be the
# same. The paper states the theorems without an experiment, so the scale is `assumed`.

# %%
KNOWN_LAMBDA_SGD_SCALE = ('assumed: the paper states Theorem 3.2 and Cor. 3.3 without an experiment; tested on '
                          'Langevin walks and the proof\'s first-passage model on potentials whose λ is exact, beside '
                          'minibatch SGD on per-sample regressions with the same population loss')
def ledger_summary() -> pd.DataFrame:
    "The compact summary of this page: the ledger's quantities, from the tables above."
    rows = []
    for name, g in pf.iterrows():
        what = f'λ = {g.llc:g} exact; ε {passage.eps.min():g}..{passage.eps.max():g}; r = 1; {int(g.walkers)} walkers per ε'
        rows += [(f'exponent of T(ε) in ε: {name}', g.exponent_T, g.exponent_T_low, g.exponent_T_high, what),
                 (f'exponent of T·D·C(ε) in ε: {name}', g.exponent_TDC, g.exponent_TDC_low, g.exponent_TDC_high,
                  f'{what}; C(ε) by eq. 33 (zone_capacity), its own slope in ε {g.capacity_slope:.3f}')]
    ratio = pf.exponent_TDC / pf.llc
    top = ratio.idxmax()
    rows.append(('exponent of T·D·C(ε) in ε over λ, larger of the two valleys', ratio[top],
                 pf.exponent_TDC_low[top] / pf.llc[top], pf.exponent_TDC_high[top] / pf.llc[top],
                 'over λ: ' + '; '.join(f'{n} {r:.3f}' for n, r in ratio.items()) + f'; larger at {top}'))
    for r in deg.itertuples():
        rows.append((f'd_s / λ: {r.landscape}, Langevin ({r.source})', r.d_s / r.llc, r.d_s_ci_low / r.llc,
                     r.d_s_ci_high / r.llc, f'd_s {r.d_s:.3g} [{r.d_s_ci_low:.3g}, {r.d_s_ci_high:.3g}] from the return '
                     f'probability (no λ used), λ = {r.llc:g} exact, set of minima of dimension {r.k}'))
    new = deg[deg.source == 'here']
    q = new.d_s / new.llc
    i = q.idxmax()
    rows.append(('d_s / λ, larger over the d = 4 Morse–Bott valleys (Langevin)', q[i], new.d_s_ci_low[i] / new.llc[i],
                 new.d_s_ci_high[i] / new.llc[i], '; '.join(f'{r.landscape}: d_s {r.d_s:.2f} against λ = {r.llc:g}, '
                                                           f'k = {r.k}' for r in new.itertuples()) + f'; larger at {new.landscape[i]}'))
    for r in llc.itertuples():
        rows.append((f'automatic LLC at n = {r.n}: {r.model}', r.llc, r.llc_low, r.llc_high,
                     f'exact finite-n target {r.target_mc:.4g} (s.e. {r.target_mc_se:.2g}) at γ = {r.gamma:.3g}, '
                     f'nβ = {r.n_beta:.4g}; λ = {r.llc_exact:g}'))
    return pd.DataFrame(rows, columns=['quantity', 'value', 'ci_low', 'ci_high', 'note'])

from fracsgd.core import read_table
from fracsgd.ledger.checks import chapter_result, same_summary
from fracsgd.ledger.claims import read_ledger, rebuild_ledger, stale_rows
from fracsgd.ledger.provenance import COMPACT
summary = ledger_summary()
committed_summary = COMPACT / 'known-lambda-sgd' / 'full' / 'summary.csv'
assert committed_summary.exists() and same_summary(summary, read_table(committed_summary)), \
    'this page and its ledger rows differ: run the heavy cell below'
summary.round(3)

# %%
#| heavy
# Writes the compact result from the committed tables, then every ledger row.
chapter_result('known-lambda-sgd', 'full', summary, [OURS / f for f in ('run.json', 'walks.csv', 'passage.csv', 'llc.csv')]
               + [COMPACT / 'known-lambda' / 'full' / 'walks.csv'], KNOWN_LAMBDA_SGD_SCALE,
               sum(v['cpu_seconds'] for v in run.values()), device=f"cpu ({run['walks']['machine']})",
               when=run['walks']['date'])
rebuild_ledger()

# %%
assert stale_rows() == [], stale_rows()
rows = read_ledger()
rows = rows[rows.source == 'compact/known-lambda-sgd/full'].set_index('claim_id')
assert set(rows.index) == {'thm32-fpt-capacity', 'cor33-ds-le-llc-dim4'}
assert (rows.rule == 'not reproduced').all() and (rows.verdict == 'not run at paper scale').all()
rows[['value', 'ci_low', 'ci_high', 'rule', 'verdict']].round(3)

# %% [markdown]
# Both fail on their numbers: $T\,D\,C$ grows as $\varepsilon^{0.49\lambda}$ at best, and on `morse_bott(4, 1)`
# $d_s$ is more than five times λ, while on `morse_bott(4, 3)`, where the set of minima is a line and λ = 3/2, the
# inequality holds, as the explanation above says it must.

# %%
#| hide
import nbdev
nbdev.nbdev_export()
