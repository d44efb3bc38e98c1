# %% [markdown]
# # Theory
#
# > Late SGD as a time-fractional Fokker–Planck process: relations, Caputo, Mittag-Leffler, a 1-D solver.

# %%
#| default_exp diffusion.theory

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_banded
from scipy.special import gamma as gamma_fn

# %%
import matplotlib.pyplot as plt
from scipy.special import erfcx


# %% [markdown]
# ## Why a fractional Fokker–Planck equation
#
# **The Brownian baseline.** The usual continuous-time caricature of SGD is a Langevin equation: the weights
# drift down the gradient of the loss and are kicked by gradient noise (paper eq. 1),
# $\mathrm{d}w/\mathrm{d}t = -\gamma\nabla\mathcal{L}(w) + \Sigma_w$. Whatever the potential, on scales where
# the noise dominates such a process spreads like Brownian motion: the distance travelled from the start grows
# as $R(t)\propto t^{1/2}$.
#
# **What trained networks actually do.** Measured weight trajectories do not follow $t^{1/2}$. Early in
# training the weights move faster than diffusively (*super-diffusion*), and late in training much slower: the
# displacement $R(t)=\lVert w_t-w_0\rVert$ follows a power law $R(t)\propto t^{1/d_\text{walk}}$ with walk
# dimension $d_\text{walk}>2$ (paper §3.1.1, fig. 1, eq. 11), and with momentum and weight decay it can even
# grow like $\ln t$. A Langevin equation with ordinary noise cannot produce this. The standard way to obtain
# it is a continuous-time random walk with power-law distributed waiting times between moves (the route of
# Metzler et al. 1999 and Barkai 2001, both cited in §3.1.1): the weights get "stuck" in the narrow,
# degenerate valleys that singular learning theory describes, and the longer they have been stuck, the longer
# they tend to stay.
#
# **From trajectories to densities.** Instead of single runs, follow the density $p(w,t)$ of the weights over
# many runs. For the Langevin equation it obeys the Fokker–Planck equation (paper eq. 2)
#
# $$\partial_t p = \nabla\cdot\big(D\,\nabla p + \gamma\, p\,\nabla\mathcal{L}\big),$$
#
# a continuity equation whose flux has a diffusive part $-D\nabla p$ and a drift part
# $-\gamma p\nabla\mathcal{L}$ that pushes probability downhill. (As printed, eq. 2 and eq. 4 carry
# $-\gamma p\nabla\mathcal{L}$ inside the divergence; with that sign $e^{+\gamma\mathcal{L}/D}$ would be the
# stationary density. Lemma 3.3 and its proof, eq. 50–51, give $e^{-\gamma\mathcal{L}/D}$, so we use the
# downhill sign throughout.)
#
# **Memory.** Heavy-tailed waiting times turn the time derivative into the Caputo fractional derivative of order
# $0<\alpha<1$ (paper eq. 3, appendix F.1),
#
# $$\mathcal{D}^\alpha_t f(t) = \frac{1}{\Gamma(1-\alpha)}
# \int_0^t \frac{f'(\tau)}{(t-\tau)^{\alpha}}\,\mathrm{d}\tau ,$$
#
# a weighted average of *all past* rates of change with the power-law memory kernel
# $(t-\tau)^{-\alpha}/\Gamma(1-\alpha)$. For $\alpha\to1$ the kernel concentrates on the present and
# $\mathcal{D}^1_t = \partial_t$; the smaller $\alpha$, the longer the system remembers where it has been.
# Applying it to the Fokker–Planck equation gives the time-fractional Fokker–Planck equation (FFPE) the
# paper proposes for late-stage SGD (eq. 4):
#
# $$\mathcal{D}^\alpha_t\, p(w,t) = \nabla\cdot\big(D\,\nabla p + \gamma\, p\,\nabla\mathcal{L}_m[w]\big).$$
#
# Three consequences, each checked numerically below:
#
# 1. **Sub-diffusion.** Without a potential, the mean squared displacement is
#    $\langle (w-w_0)^2\rangle = 2D\,t^\alpha/\Gamma(1+\alpha)$ per dimension, so $R(t)\propto t^{\alpha/2}$ and
#    $\alpha = 2/d_\text{walk}$.
# 2. **Slow relaxation.** In a confining potential, modes no longer decay like $e^{-kt}$ but like the
#    Mittag-Leffler function $E_\alpha(-k t^\alpha)$, which has a power-law tail $\propto t^{-\alpha}$.
# 3. **The same steady state.** A stationary density has $\mathcal{D}^\alpha_t p = 0$, so the right-hand side
#    must vanish exactly as for the ordinary equation: the memory changes *how fast* the density gets there,
#    never *where* it goes. With a scalar diffusion coefficient the answer is the Boltzmann density
#    $p_s\propto e^{-\gamma\mathcal{L}_m/D}$ (paper Lemma 3.3 and its proof, eq. 50–51). This is why the paper
#    can say something about *which* solutions SGD finds without solving the dynamics.
#
# **What the equation does not cover.** Two regimes sit at the edges of the model. The early *super-diffusive*
# phase ($d_\text{walk}<2$) would need a space-fractional term; the paper instead shifts the clock to a
# crossover time $t_c$, $R(t)\sim \mathbb{1}[t\ge t_c]\,(t-t_c)^{1/d_\text{walk}} + r(t)$ (appendix B.3,
# eq. 32), and argues that as long as no probability mass is lost the steady state does not depend on how the
# density got through the early phase. The *ultra-slow* regime $R\propto\ln t$ is not a power law at all; it
# is reached as a limit of the power-law family (Kochubei 2008, cited in §3.1.1): for $\alpha\ln t \ll 1$,
# $t^{\alpha} = e^{\alpha\ln t}\approx 1+\alpha\ln t$, so over any finite window a very small exponent is
# indistinguishable from logarithmic growth, and a true $\ln t$ law follows from letting the order of the
# derivative itself be distributed near zero. Finally, a displacement with a persistent linear drift,
# $R\sim t^{1/d_\text{walk}}+ct$, has no steady state at all (Proposition D.1); the spectral chapter compares
# these regimes on data.

# %% [markdown]
# ## Names: which "α"?
#
# Two different numbers go by "α" in the paper. This library keeps `alpha` for the order of the Caputo
# derivative and calls the other one `slope`.
#
# | quantity | here | formula | TinyStories-1M (Table 1) |
# |---|---|---|---|
# | slope of $R(t)$ (eq. 11, 17) | `slope` | $1/d_\text{walk} = d_s/(2\lambda)$ | $21.4/(2\cdot 32) = 0.33$ |
# | Caputo order, MSD exponent (eq. 3–4) | `alpha` (`msd_exponent`) | 2 `slope` $=2/d_\text{walk}$ | $0.67$ |
#
# The column "α" of the paper's Table 1 is the **slope** ($d_s/2\lambda$), not the order of the fractional
# derivative: in the FFPE the MSD grows like $t^\alpha$, so $R=\sqrt{\text{MSD}}$ grows like $t^{\alpha/2}$.
# Everywhere in `fracsgd`, `alpha` means the Caputo order / MSD exponent, and the $R(t)$ exponent is called
# `slope`.

# %% [markdown]
# ## The relations between the dimensions
#
# The paper ties together three exponents (§3.3): the local learning coefficient $\lambda$, which plays the
# role of a mass (fractal) dimension of the set of low-loss weights (eq. 5–7, appendix B.1); the spectral
# dimension $d_s$, which measures how fast diffusion explores that set, $V_s(t)\sim t^{d_s/2}$ (eq. 8); and
# the walk dimension $d_\text{walk}$ of the displacement, $R(t)\sim t^{1/d_\text{walk}}$ (eq. 11). The
# Alexander–Orbach-type relation (Theorem 3.1, eq. 12) links them,
#
# $$d_\text{walk} = \frac{2\lambda}{d_s},$$
#
# so a log-log fit of the displacement, $\log R = \frac{d_s}{2\lambda}\log t + c$ (eq. 17), turns a measured
# slope into $d_s = 2\lambda\cdot\text{slope}$. Rescaling time so that the walker covers a length $\xi$ gives
# the effective diffusion coefficient at that scale,
# $D_\xi = \xi^2/\xi^{d_\text{walk}} = \xi^{2-2\lambda/d_s}$ (Lemma 3.2, Lemma D.3, Corollary 3.1, eq. 13).
#
# **λ cancels.** When $d_s$ itself was estimated from the displacement slope by eq. 17, then
# $2\lambda/d_s = 1/\text{slope}$ and $D_\xi = \xi^{2-1/\text{slope}}$: the LLC drops out. The same
# circularity makes the bound $d_s\le\bar\lambda$ (Corollary 3.3) equivalent to slope $\le 1/2$; the spectral
# chapter discusses an independent estimate of $d_s$.
#
# **Checked where it can be.** Eq. 12 is the Alexander–Orbach relation $d_w = 2d_f/d_s$ of diffusion on
# fractals, with the LLC in the role of the mass dimension $d_f$. On fractals all three exponents can be
# measured independently, so the relation can be checked rather than assumed; the [walks chapter](walks.html)
# does this on the Sierpinski gasket and on critical percolation clusters.
#
# **Tested where λ is exact, it does not hold.** The [λ-against-the-walk chapter](known_lambda.html) measures
# $d_\text{walk}$ from $R(t)$ and $d_s$ from the return probability ([returns chapter](return_probability.html)), each
# without λ, for Langevin walks and minibatch SGD on potentials whose λ is known in closed form. At a regular minimum
# (λ = d/2, inside the pore where the walk has exponents at all) $d_\text{walk}d_s/2 = d = 2\lambda$: the ratio
# $\rho = d_\text{walk}d_s/(2\lambda)$ that eq. 12 sets to 1 is 1.96 [1.86, 2.06] in d = 2. At degenerate minima
# ($w_1^2w_2^2$, $w_1^2w_2^4$, a Morse–Bott valley, a deep linear network) ρ is 3.3 to 6.8, and $d_\text{walk}d_s/2$
# follows the dimension of the set of minima rather than λ or 2λ. So eq. 12 with the LLC as the mass dimension fails
# wherever it can be checked; reading the mass dimension as 2λ repairs it at a regular minimum only. Eq. 17, which
# computes $d_s = 2\lambda\cdot$slope from it, gives $d_s/\rho$ on these landscapes, half or less of the spectral
# dimension the walk shows, and the first-passage time of Theorem 3.2 does not scale as $\varepsilon^\lambda$ on any of
# them (ledger rows `thm31-eq12-regular`, `thm31-eq12-degenerate`, `thm32-fpt-exponent`).
#
# The LLC and length scales must be positive; slopes are only required to be finite, so that confidence bounds
# that cross zero pass through the linear maps unharmed.

# %%
#| export
def _positive(name, v):
    "`v` as a float array, or a ValueError naming `name` if any entry is non-finite or not positive."
    a = np.asarray(v, dtype=float)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and positive, got {v!r}")
    return a

def _finite(name, v):
    "`v` as a float array, or a ValueError naming `name` if it is empty or has a NaN/inf entry."
    a = np.asarray(v, dtype=float)
    if a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be non-empty and finite, got {v!r}")
    return a

def _out(a):
    "A 0-d array as a Python float, anything else unchanged."
    return float(a) if np.ndim(a) == 0 else a


# %%
#| export
def walk_dimension(llc, d_s):
    "Walk dimension $d_{walk} = 2\\lambda/d_s$ (paper eq. 12) from the LLC and the spectral dimension $d_s$."
    return _out(2 * _positive('llc', llc) / _positive('d_s', d_s))

def spectral_dimension_from_slope(slope, llc):
    "Spectral dimension $d_s = 2\\lambda\\cdot$`slope` from the log-log slope of $R(t)$ and the LLC (eq. 17)."
    return _out(2 * _positive('llc', llc) * _finite('slope', slope))

def msd_exponent(slope):
    "MSD exponent $\\alpha = 2\\cdot$`slope` $= 2/d_{walk}$, the FFPE's Caputo order, from the slope of $R(t)$."
    return _out(2 * _finite('slope', slope))

def effective_diffusion(xi, llc, d_s):
    "Effective diffusion coefficient $D_\\xi = \\xi^{2-2\\lambda/d_s}$ at length scale `xi` (paper eq. 13)."
    return _out(_positive('xi', xi) ** (2 - walk_dimension(llc, d_s)))


# %% [markdown]
# The paper's Table 1 lists $\lambda$, $d_s$ and the slope (its column "α") for six models; the relations
# reproduce the slope column from the other two to the printed precision (VGG16 prints 0.001 where
# $0.14/(2\cdot159.7)=0.0004$).

# %%
table1 = {'TinyStories-1M': (32, 21.422, 0.33), 'TinyLlama-15M': (76.1, 48.3, 0.32),
          'TinyStories-33M': (39.3, 38.7, 0.49), 'ResNet18': (72.05, 0.57, 0.004),
          'ResNet34': (73.5, 0.62, 0.004), 'VGG16': (159.7, 0.14, 0.001)}
for name, (llc, d_s, slope_printed) in table1.items():
    slope = 1 / walk_dimension(llc, d_s)
    assert abs(slope - slope_printed) < 0.006, name
    assert abs(spectral_dimension_from_slope(slope, llc) - d_s) < 1e-12
    print(f"{name:16s} slope={slope:.4f} (printed {slope_printed})  d_walk={1/slope:8.1f}  "
          f"alpha={msd_exponent(slope):.4f}")

# %%
# λ cancels when d_s comes from the slope; Brownian motion (slope ½) has d_walk = 2 and a scale-free D_ξ = 1
slope, llc = 0.33, 32.0
d_s = spectral_dimension_from_slope(slope, llc)
assert np.isclose(effective_diffusion(0.5, llc, d_s), 0.5 ** (2 - 1 / slope))
assert walk_dimension(5.0, 5.0) == 2 and effective_diffusion(3.7, 5.0, 5.0) == 1.0
assert np.allclose(effective_diffusion(np.array([0.5, 2.0]), 4.0, 2.0), [0.5**-2, 2.0**-2])
try:
    walk_dimension(-1.0, 2.0)
    raise AssertionError('a negative LLC must be rejected')
except ValueError as e:
    assert 'llc' in str(e)

# %% [markdown]
# Since $d_s\le\lambda$ (Lemma 3.4), the exponent $2-2\lambda/d_s$ is at most 0: the coarse-grained diffusion
# coefficient falls with the length scale, steeply when $\lambda/d_s$ is large (a region with much low-loss
# volume that diffusion explores slowly).

# %%
xi = np.logspace(-1, 1, 200)
fig, ax = plt.subplots(figsize=(5, 3.5))
for ratio in (1, 1.25, 1.5, 2, 3):
    ax.loglog(xi, effective_diffusion(xi, ratio, 1.0),
              label=f"$\\lambda/d_s$ = {ratio}  ($d_{{walk}}$ = {2*ratio:g})")
ax.set(xlabel='length scale $\\xi$ (weight-space units)', ylabel='$D_\\xi$ (length² / time)',
       title='Effective diffusion coefficient (eq. 13)')
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()


# %% [markdown]
# ## Steady state and tempering
#
# With $\mathcal{D}^\alpha_t p=0$ and a scalar $D_\xi$ the FFPE's right-hand side must vanish, which the
# Boltzmann density does: $p_s(w)\propto e^{-\gamma\mathcal{L}_m[w]/D_\xi}$ (Lemma 3.3). For a log-loss,
# $e^{-m\mathcal{L}_m[w]} = p(X_m\mid w)$ is the likelihood of the $m$ training points, so raising the steady
# state to the power $mD_\xi$ (with $\gamma=1$) gives back the likelihood, and multiplying by a prior gives
# the Bayesian posterior (Corollary 3.2, eq. 14–15). SGD's distribution of solutions is therefore a *tempered*
# posterior, with the temperature set by $D_\xi$, i.e. by how accessible each region is.

# %%
#| export
def steady_state(loss_values, D, gamma=1.0, dx=None):
    """Boltzmann steady state $p_s \\propto e^{-\\gamma L/D}$ (paper Lemma 3.3) at the given loss values.
    Without `dx` it sums to 1 (probabilities of discrete states); with a grid spacing `dx` it integrates
    to 1."""
    L = _finite('loss_values', loss_values)
    D, gamma = float(_positive('D', D)), float(_positive('gamma', gamma))
    logp = -gamma * L / D
    p = np.exp(logp - logp.max())  # shifted by the maximum: no overflow, and the largest term is exactly 1
    w = 1.0 if dx is None else _positive('dx', dx)
    return p / np.sum(p * w)

def tempering_exponent(m, D):
    "The power $mD_\\xi$ that makes the steady state the likelihood, $p_s^{mD_\\xi}\\propto p(X_m|w)$ (eq. 14)."
    return _out(_positive('m', m) * _positive('D', D))


# %%
# three solutions with per-sample log-losses L; m = 100 training points; D_ξ at ξ = 0.5 for slope 0.4
L, m = np.array([0.30, 0.32, 0.45]), 100
D = effective_diffusion(0.5, 10.0, spectral_dimension_from_slope(0.4, 10.0))
p_s = steady_state(L, D)
assert np.isclose(p_s.sum(), 1) and np.all(np.diff(p_s) < 0)   # lower loss, more mass
weights = p_s ** tempering_exponent(m, D)
tempered = weights / weights.sum()
raw_likelihood = np.exp(-m * L)
likelihood = raw_likelihood / raw_likelihood.sum()
assert np.allclose(tempered, likelihood)                       # Corollary 3.2 with a flat prior
x = np.linspace(-3, 3, 601)
assert np.isclose(np.sum(steady_state(x**2 / 2, 1.0, dx=x[1] - x[0])) * (x[1] - x[0]), 1)
assert np.all(np.isfinite(steady_state([0.0, 1e4], 1e-3)))      # no overflow even when γL/D is huge
print(f"D_xi = {D:.3f};  p_s = {p_s.round(3)};  tempered = {tempered.round(3)}")


# %% [markdown]
# ## The Caputo derivative: the L1 scheme
#
# On a time grid $0=t_0<t_1<\dots<t_N$ (not necessarily uniform), replace $f$ on each interval $[t_{k-1},t_k]$
# by its chord, slope $\delta_k = (f_k-f_{k-1})/\tau_k$ with $\tau_k=t_k-t_{k-1}$, and integrate the kernel
# exactly. This is the L1 scheme:
#
# $$\mathcal{D}^\alpha_t f(t_n) \approx \sum_{k=1}^{n} a_{n,k}\,(f_k-f_{k-1}),\qquad
# a_{n,k} = \frac{(t_n-t_{k-1})^{1-\alpha}-(t_n-t_k)^{1-\alpha}}{\Gamma(2-\alpha)\,\tau_k}.$$
#
# It is exact for piecewise-linear $f$ (in particular for $f=at+b$, where it returns
# $a\,t^{1-\alpha}/\Gamma(2-\alpha)$, paper eq. 71) and for smooth $f$ its error is $O(\tau^{2-\alpha})$. Two
# numerical details matter. The difference of two nearly equal powers in $a_{n,k}$ loses digits when
# $\tau_k\ll t_n-t_k$ (late times on a fine grid), so we evaluate it as
# $(t_n-t_k)^{1-\alpha}\,\mathrm{expm1}\big((1-\alpha)\,\mathrm{log1p}(\tau_k/(t_n-t_k))\big)$. And functions
# such as $t^\alpha$, which appear in every solution of the FFPE, are not smooth at $t=0$; a mesh graded
# towards 0, $t_j = T\,(j/N)^r$ with $r=(2-\alpha)/\alpha$, restores the full order there (Stynes, O'Riordan &
# Gracia, SIAM J. Numer. Anal. 2017). For $\alpha=1$ the weights reduce to the backward difference.

# %%
#| export
def _check_time_grid(t):
    t = _finite('t', t)
    if t.ndim != 1 or t.size < 2 or t[0] != 0 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be a 1-D grid starting at 0 and strictly increasing")
    return t

def _check_alpha(alpha):
    if not (np.isfinite(alpha) and 0 < alpha <= 1):
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    return float(alpha)

def _l1_row(t, n, alpha):
    "L1 weights $a_{n,1..n}$ at $t_n$, computed without cancellation."
    tau, B, e = np.diff(t[:n + 1]), t[n] - t[1:n + 1], 1 - alpha
    pos = B > 0
    Bs = np.where(pos, B, 1.0)
    diff = np.where(pos, Bs**e * np.expm1(e * np.log1p(tau / Bs)), tau**e)
    return diff / (gamma_fn(2 - alpha) * tau)

def l1_weights(t, alpha):
    """Lower-triangular $N\\times N$ matrix `W` of L1 weights:
    $\\mathcal{D}^\\alpha f(t_n) \\approx$ `(W @ np.diff(f))[n-1]`."""
    t, alpha = _check_time_grid(t), _check_alpha(alpha)
    W = np.zeros((len(t) - 1, len(t) - 1))
    for n in range(1, len(t)): W[n - 1, :n] = _l1_row(t, n, alpha)
    return W

def caputo_l1(f, t, alpha):
    "Caputo derivative of order `alpha` of samples `f` on grid `t` (from `t[0]=0`) by L1; values at `t[1:]`."
    t, f = _check_time_grid(t), _finite('f', f)
    if f.shape != t.shape:
        raise ValueError(f"f has shape {f.shape} but t has shape {t.shape}")
    return l1_weights(t, alpha) @ np.diff(f)

def graded_mesh(T, n, grading=1.0):
    """Time grid $t_j = T\\,(j/n)^{grading}$, $j=0..n$; `grading` $=(2-\\alpha)/\\alpha$ suits solutions
    $\\sim t^\\alpha$."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return float(_positive('T', T)) * (np.arange(int(n) + 1) / int(n)) ** float(_positive('grading', grading))


# %%
t = graded_mesh(2.0, 50, grading=1.7)                          # a non-uniform grid
alpha = 0.6
assert np.allclose(caputo_l1(3 * t + 1, t, alpha), 3 * t[1:]**(1 - alpha) / gamma_fn(2 - alpha), rtol=1e-12)
t = np.linspace(0, 1, 257)
exact = gamma_fn(3) / gamma_fn(3 - alpha) * t[1:]**(2 - alpha)  # D^α t² = Γ(3)/Γ(3-α) t^{2-α}
err = np.abs(caputo_l1(t**2, t, alpha) / exact - 1)
assert err[t[1:] >= 0.5].max() < 5e-4, err.max()
assert np.allclose(caputo_l1(t**2, t, 1.0), np.diff(t**2) / np.diff(t))   # α = 1: backward difference
print(f"relative error of D^{alpha} t² on 256 uniform steps: {err[t[1:] >= 0.5].max():.1e} for t ≥ 0.5, "
      f"{err[0]:.2f} at the first grid point")

# %% [markdown]
# For $t^\beta$ on a uniform grid the relative error at $t_n$ depends only on $n$ (the problem is
# scale-invariant), so the first few points always carry an $O(1)$ relative error — the chord through $(0,0)$
# and $(t_1, t_1^\beta)$ is a poor stand-in for $t^\beta$ on the first interval — and accuracy statements are
# about points many steps in (here: the second half of the interval, at least 128 steps in). The observed
# order of convergence is $2-\alpha$: halving the step divides the error by $2^{2-\alpha}$. The convergence
# study (several α, uniform and graded meshes, target ±0.05) is in `tests/test_theory.py`.

# %%
orders = {}
for alpha in (0.3, 0.5, 0.7):
    e = []
    for N in (256, 512):
        t = np.linspace(0, 1, N + 1)
        ex = gamma_fn(3) / gamma_fn(3 - alpha) * t[-1]**(2 - alpha)
        e.append(abs(caputo_l1(t**2, t, alpha)[-1] - ex) / ex)
    orders[alpha] = np.log2(e[0] / e[1])
    assert abs(orders[alpha] - (2 - alpha)) < 0.05, orders
orders


# %% [markdown]
# ## The Mittag-Leffler function
#
# The Mittag-Leffler function $E_{\alpha,\beta}(z)=\sum_{k\ge0} z^k/\Gamma(\alpha k+\beta)$ (with
# $E_\alpha=E_{\alpha,1}$) is to fractional equations what the exponential is to ordinary ones:
# $y(t)=E_\alpha(-k t^\alpha)$ solves the fractional relaxation equation $\mathcal{D}^\alpha_t y = -k\,y$,
# $y(0)=1$. It interpolates between a stretched exponential $\approx\exp(-k t^\alpha/\Gamma(1+\alpha))$ at
# short times and a power law $\approx t^{-\alpha}/(k\,\Gamma(1-\alpha))$ at long times. Special cases:
# $E_1(z)=e^z$, $E_{1/2}(-x)=e^{x^2}\mathrm{erfc}(x)=\mathrm{erfcx}(x)$, $E_2(-t^2)=\cos t$.
#
# We use the maintained package `pymittagleffler` (Garrappa's 2015 algorithm, SIAM J. Numer. Anal. 53:1350),
# which agrees with those closed forms to about $10^{-15}$, and wrap it to return real values for real
# arguments.

# %%
#| export
def mittag_leffler(z, alpha, beta=1.0):
    """Mittag-Leffler function $E_{\\alpha,\\beta}(z)=\\sum_k z^k/\\Gamma(\\alpha k+\\beta)$
    (via `pymittagleffler`). Real input gives real output; overflow for large positive real `z` gives `inf`."""
    from pymittagleffler import mittag_leffler as _ml
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be finite and positive, got {alpha!r}")
    if not np.isfinite(beta):
        raise ValueError(f"beta must be finite, got {beta!r}")
    z = np.asarray(z)
    if not np.all(np.isfinite(z)):
        raise ValueError("z contains NaN or inf")
    out = np.asarray(_ml(z.astype(complex), float(alpha), float(beta)))
    if not np.iscomplexobj(z):
        out = out.real.copy()
        out[np.isnan(out) & (z > 0)] = np.inf
    return out.item() if out.ndim == 0 else out

def fractional_relaxation(t, alpha, rate=1.0):
    "Solution $E_\\alpha(-k t^\\alpha)$ of $\\mathcal{D}^\\alpha_t y = -k y$, $y(0)=1$, with $k=$`rate`."
    t = _finite('t', t)
    if np.any(t < 0):
        raise ValueError("t must be non-negative")
    return mittag_leffler(-float(_positive('rate', rate)) * t**_check_alpha(alpha), alpha)


# %%
x = np.linspace(0, 20, 401)
assert np.allclose(mittag_leffler(-x, 1.0), np.exp(-x), rtol=1e-13, atol=1e-15)
assert np.allclose(mittag_leffler(-x, 0.5), erfcx(x), rtol=1e-12, atol=0)
assert np.allclose(mittag_leffler(-x**2, 2.0), np.cos(x), atol=1e-12)
assert mittag_leffler(0.0, 0.7) == 1.0 and isinstance(mittag_leffler(0.3, 0.7), float)
assert mittag_leffler(1e4, 0.5) == np.inf


# %% [markdown]
# An independent check that ties the two halves together: solve $\mathcal{D}^\alpha y=-y$ with the L1 scheme
# (implicitly, $a_{n,n}(y_n-y_{n-1}) + \sum_{k<n}a_{n,k}(y_k-y_{k-1}) = -y_n$) and compare with
# $E_\alpha(-t^\alpha)$.

# %%
def relax_l1(t, alpha, rate=1.0):
    W = l1_weights(t, alpha)
    y = np.ones(len(t))
    dy = np.zeros(len(t) - 1)
    for n in range(1, len(t)):
        dy[n - 1] = (-rate * y[n - 1] - W[n - 1, :n - 1] @ dy[:n - 1]) / (W[n - 1, n - 1] + rate)
        y[n] = y[n - 1] + dy[n - 1]
    return y

for alpha in (0.4, 0.7):
    t = graded_mesh(10.0, 800, (2 - alpha) / alpha)
    err = np.abs(relax_l1(t, alpha) - fractional_relaxation(t, alpha)).max()
    assert err < 2e-3, (alpha, err)
    print(f"alpha={alpha}: max |L1 solution - E_alpha(-t^alpha)| = {err:.1e}")

# %%
t = np.logspace(-2, 3, 300)
fig, ax = plt.subplots(figsize=(5, 3.5))
for alpha in (0.3, 0.5, 0.7, 0.9, 1.0):
    ax.loglog(t, fractional_relaxation(t, alpha), label=f"$\\alpha$ = {alpha}")
ax.set(xlabel='time $t$ (units of $k^{-1/\\alpha}$)', ylabel='$E_\\alpha(-t^\\alpha)$', ylim=(1e-4, 1.5),
       title='Fractional relaxation: tails $\\propto t^{-\\alpha}$')
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()


# %% [markdown]
# ## A 1-D solver for the fractional Fokker–Planck equation
#
# To see eq. 4 at work we solve it in one dimension on an interval with reflecting (zero-flux) walls,
# $\mathcal{D}^\alpha_t p = \partial_x\big(D\partial_x p + \gamma p\, V'(x)\big)$, with $V$ the loss.
#
# *Space.* Finite volumes on a uniform grid of cell centres $x_i$ (spacing $h$). The flux through the face
# between cells $i$ and $i+1$ is the Scharfetter–Gummel flux
#
# $$J_{i+\frac12} = \frac{D}{h}\Big(B(u_i)\,p_i - B(-u_i)\,p_{i+1}\Big),\qquad
# u_i=\frac{\gamma\,(V_{i+1}-V_i)}{D},\qquad B(u)=\frac{u}{e^u-1}.$$
#
# It reduces to the centred difference without a potential, and it vanishes *exactly* for the discrete
# Boltzmann density $p_i\propto e^{-\gamma V_i/D}$ (because $B(u)=e^{-u}B(-u)$): the scheme has the paper's
# steady state as its exact fixed point, at any resolution.
#
# *Mass.* Rather than the density we advance the cumulative mass at the cell faces,
# $F_{i+\frac12}=h\sum_{j\le i}p_j$, which obeys $\mathcal{D}^\alpha_t F_{i+\frac12} = -J_{i+\frac12}$ with
# $F$ pinned to $0$ and to the initial mass at the two walls. This is the same discretisation, but total mass
# is conserved by construction, to rounding, rather than only up to the accumulated round-off of many linear
# solves.
#
# *Time.* The L1 scheme above, fully implicit: at step $n$ the increment $\delta=F_n-F_{n-1}$ solves the
# tridiagonal system $(a_{n,n}I+K)\,\delta = -J(F_{n-1}) - \sum_{k<n}a_{n,k}(F_k-F_{k-1})$, where
# $J=KF+\text{const}$. The history sum costs $O(nM)$ per step. Use a graded mesh (`graded_mesh`) so that the
# $t^\alpha$ behaviour at the start is resolved; for $\alpha=1$ this is backward Euler.

# %%
#| export
def _bernoulli(u):
    "$B(u) = u/(e^u-1)$ with $B(0)=1$, accurate near 0."
    small = np.abs(u) < 1e-8
    us = np.where(small, 1.0, u)
    return np.where(small, 1 - u / 2, us / np.expm1(us))

@dataclass
class FFPESolution:
    "Density `p[n, i]` at times `t[n]` on the uniform cell-centre grid `x[i]`."
    x: np.ndarray
    t: np.ndarray
    p: np.ndarray
    @property
    def dx(self) -> float: return float(self.x[1] - self.x[0])
    @property
    def mass(self) -> np.ndarray: return self.p.sum(1) * self.dx
    @property
    def mean(self) -> np.ndarray: return (self.p * self.x).sum(1) * self.dx / self.mass
    @property
    def msd(self) -> np.ndarray:
        "Mean squared displacement from the initial mean, $\\langle (x-\\langle x\\rangle_0)^2\\rangle(t)$."
        return (self.p * (self.x - self.mean[0])**2).sum(1) * self.dx / self.mass


# %%
#| export
def _ffpe_inputs(x, p0, alpha, D, potential, gamma):
    x, p0 = _finite('x', x), _finite('p0', p0)
    if x.ndim != 1 or x.size < 3:
        raise ValueError("x must be a 1-D grid of at least 3 cell centres")
    h = x[1] - x[0]
    if h <= 0 or not np.allclose(np.diff(x), h, rtol=1e-9, atol=0):
        raise ValueError("x must be uniform and increasing")
    if p0.shape != x.shape:
        raise ValueError(f"p0 has shape {p0.shape} but x has shape {x.shape}")
    if np.any(p0 < 0) or p0.sum() <= 0:
        raise ValueError("p0 must be non-negative with positive mass")
    V = np.zeros_like(x) if potential is None else (potential(x) if callable(potential) else potential)
    V = _finite('potential', np.broadcast_to(np.asarray(V, dtype=float), x.shape))
    D, gamma = float(_positive('D', D)), float(_positive('gamma', gamma))
    u = gamma * np.diff(V) / D
    return x, p0, h, D, _bernoulli(u), _bernoulli(-u), _check_alpha(alpha)

def solve_ffpe(x, p0, t, alpha, D=1.0, potential=None, gamma=1.0) -> FFPESolution:
    """Solve $\\mathcal{D}^\\alpha_t p = \\partial_x(D\\partial_x p + \\gamma p V')$ with zero-flux walls
    (paper eq. 4 in 1-D). `x`: uniform cell centres; `p0`: initial density at `x`; `t`: time grid from 0 (see
    `graded_mesh`); `potential`: values of $V$ at `x` or a callable (None: free diffusion). Finite volumes with
    Scharfetter–Gummel fluxes, implicit L1 in time; the discrete Boltzmann density is exactly stationary and
    mass is conserved."""
    x, p0, h, D, bp, bm, alpha = _ffpe_inputs(x, p0, alpha, D, potential, gamma)
    t = _check_time_grid(t)
    c, mass0 = D / h**2, h * p0.sum()
    flux = lambda p: (D / h) * (bp * p[:-1] - bm * p[1:])           # J at the M-1 interior faces
    to_p = lambda F: np.diff(np.concatenate([[0.0], F, [mass0]])) / h
    K = np.zeros((3, len(x) - 1))                                    # banded K: J = K F + const
    K[0, 1:], K[1], K[2, :-1] = -c * bm[:-1], c * (bp + bm), -c * bp[1:]
    F = np.cumsum(h * p0)[:-1]
    dF = np.zeros((len(t) - 1, len(x) - 1))                          # [steps, interior faces]
    P = np.empty((len(t), len(x)))                                   # [times, cells]
    P[0] = p0
    for n in range(1, len(t)):
        a = _l1_row(t, n, alpha)
        A = K.copy()
        A[1] += a[-1]
        dF[n - 1] = solve_banded((1, 1), A, -flux(P[n - 1]) - a[:-1] @ dF[:n - 1])
        F = F + dF[n - 1]
        P[n] = to_p(F)
    return FFPESolution(x, t, P)


# %% [markdown]
# **Checks.** The discrete Boltzmann density of a double well does not move; free diffusion from a point
# follows $\text{MSD}=2Dt^\alpha/\Gamma(1+\alpha)$; the mean in a harmonic well $V=kx^2/2$ follows
# $x_0E_\alpha(-\gamma k t^\alpha)$ (the first moment of eq. 4 obeys
# $\mathcal{D}^\alpha\langle x\rangle = -\gamma k\langle x\rangle$); mass is conserved. Longer and tighter
# versions of these checks are in `tests/test_theory.py`.

# %%
x = np.linspace(-2.5, 2.5, 201)
h = x[1] - x[0]
double_well = lambda x: (x**2 - 1)**2
boltz = steady_state(double_well(x), D=0.5, dx=h)
sol = solve_ffpe(x, boltz, graded_mesh(100.0, 50, 2.0), alpha=0.6, D=0.5, potential=double_well)
assert np.abs(sol.p - boltz).max() < 1e-12 * boltz.max() and np.abs(sol.mass - 1).max() < 1e-13

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
x = np.linspace(-15, 15, 301)
h = x[1] - x[0]
delta = np.where(np.arange(len(x)) == len(x) // 2, 1 / h, 0.0)     # all mass in the centre cell
for alpha in (0.4, 0.6, 0.8, 1.0):
    t = graded_mesh(1.0, 300, (2 - alpha) / alpha)
    sol = solve_ffpe(x, delta, t, alpha)
    exact = 2 * t**alpha / gamma_fn(1 + alpha)
    late = t >= 0.05
    assert np.abs(sol.msd[late] / exact[late] - 1).max() < 5e-3 and np.abs(sol.mass - 1).max() < 1e-12
    shown = t >= 1e-3
    ax.loglog(t[shown], exact[shown], 'k-', lw=0.8)
    ax.loglog(t[shown][::8], sol.msd[shown][::8], 'o', ms=3, label=f"$\\alpha$ = {alpha}")
ax.set(xlabel='time $t$', ylabel='MSD (length²)',
       title='Free diffusion: solver (dots), $2Dt^\\alpha/\\Gamma(1+\\alpha)$ (lines)')
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %%
x = np.linspace(-6, 6, 241)
h = x[1] - x[0]
p0 = steady_state((x - 1.0)**2 / (2 * 0.05**2), 1.0, dx=h)      # narrow Gaussian at x0 = 1
alpha, k = 0.7, 1.0
t = graded_mesh(5.0, 300, (2 - alpha) / alpha)
sol = solve_ffpe(x, p0, t, alpha, D=0.5, potential=k * x**2 / 2)
err = np.abs(sol.mean - sol.mean[0] * fractional_relaxation(t, alpha, k)).max()
assert err < 2e-2, err
print(f"harmonic well, alpha={alpha}: max |<x>(t) - x0 E_alpha(-k t^alpha)| = {err:.1e}")

# %% [markdown]
# **A double well.** Start all the mass in the left well of $V(x)=(x^2-1)^2$ at $D=0.5$. The density first
# equilibrates inside the left well, then leaks over the barrier; the fractional dynamics makes the last stage
# slow (the power-law tail of $E_\alpha$), but it ends exactly at the Boltzmann density $e^{-V/D}/Z$ of
# Lemma 3.3.

# %%
x = np.linspace(-2.5, 2.5, 201)
h = x[1] - x[0]
alpha, D = 0.8, 0.5
p0 = steady_state((x + 1)**2 / (2 * 0.1**2), 1.0, dx=h)
t = graded_mesh(1e4, 600, (2 - alpha) / alpha)
sol = solve_ffpe(x, p0, t, alpha, D=D, potential=double_well)
boltz = steady_state(double_well(x), D, dx=h)
l1_dist = np.abs(sol.p - boltz).sum(1) * h
assert l1_dist[-1] < 5e-3 and np.abs(sol.mass - 1).max() < 1e-12, (l1_dist[-1], sol.mass)
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
for tt in (0, 1, 10, 100, 1e3, 1e4):
    n = np.argmin(np.abs(t - tt))
    ax[0].plot(x, sol.p[n], label=f"t = {t[n]:.3g}")
ax[0].plot(x, boltz, 'k--', label='Boltzmann $e^{-V/D}/Z$')
ax[0].set(xlabel='weight $x$', ylabel='density $p(x, t)$', title=f'FFPE in a double well, $\\alpha$ = {alpha}')
ax[0].legend(fontsize=7)
ax[1].loglog(t[1:], l1_dist[1:], label='solver')
ax[1].loglog(t[t > 100], 2 * t[t > 100]**-alpha, 'k:', label='$\\propto t^{-\\alpha}$')
ax[1].set(xlabel='time $t$', ylabel='$\\|p(t) - p_s\\|_1$', title='distance to the Boltzmann density')
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
