# %% [markdown]
# # Deep linear networks: the LLC against exact values
#
# > Aoyagi's exact learning coefficient of deep linear networks, checked against reduced-rank regression and regular models, and the LLC estimator's error on a suite of networks under the automatic setting and the paper's preset.

# %%
#| default_exp llc.dln

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import time, warnings
from fractions import Fraction
from typing import Sequence

import pandas as pd

from fracsgd.nets.models import dln_data, make_dln
from fracsgd.llc.sgld import SGLDSettings
from fracsgd.llc.settings import PAPER_PRESET
from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc

# %%
import torch
import matplotlib.pyplot as plt
from fracsgd.nets.stack import ModelStack, batched_loss, full_data_loss, gaussian_nll
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids contention on small CPUs


# %% [markdown]
# ## Aoyagi's formula
#
# A deep linear network (DLN) $f(x)=W_M\cdots W_1x$ with widths $H_0$ (input), $H_1,\dots,H_M$ (output) and
# Gaussian noise has an exactly known learning coefficient (Aoyagi 2024, stated as Theorem 1 in Lau et al. 2024,
# appendix I). With $r$ the rank of the true product map and $\Delta_j = H_j - r$, one finds the index set
# $\Sigma$ of size $\ell+1$ made of the smallest $\Delta$'s that satisfies the three inequalities of the
# theorem; with $S=\sum_{\sigma\in\Sigma}\Delta_\sigma$ and
# $a = S-\ell(\lceil S/\ell\rceil-1)\in\{1,\dots,\ell\}$,
#
# $$\lambda = \frac{-r^2+r(H_0+H_M)}{2} + \frac{a(\ell-a)}{4\ell} - \frac{\ell(\ell-1)}{4}\Big(\frac{S}{\ell}\Big)^2
#   + \frac12\sum_{i<j\in\Sigma}\Delta_i\Delta_j .$$
#
# (The appendix leaves $a$ implicit; the definition above is Aoyagi's, and it reproduces the parity term of the
# two-layer case below.) We return exact fractions.

# %%
#| export
def _aoyagi_subset(deltas: list[int]) -> list[int]:
    """The Delta values of Aoyagi's index set.
    The shortest ascending prefix (>= 2 entries) that meets the 3 conditions."""
    order = sorted(deltas)
    for k in range(2, len(order) + 1):
        sub, rest = order[:k], order[k:]
        ell, S = k - 1, sum(sub)
        if rest and not max(sub) < min(rest):                            # condition 1 (no prefix splits ties)
            continue
        if S >= ell * max(sub) and (not rest or S < ell * min(rest)):   # conditions 2 and 3
            return sub
    raise ValueError(f"no index set satisfies Aoyagi's conditions for Delta={deltas}")

def aoyagi_dln_lambda(layer_sizes: Sequence[int], rank: int) -> Fraction:
    """Aoyagi's learning coefficient of a DLN with widths `[H_0 (input), ..., H_M (output)]`
    at a true map of rank `rank`."""
    H = [int(width) for width in layer_sizes]
    if len(H) < 2 or min(H) < 1:
        raise ValueError("layer_sizes needs >= 2 positive widths (input, ..., output), "
                         f"got {list(layer_sizes)}")
    if not 0 <= rank <= min(H):
        raise ValueError(f"rank must be in [0, min(layer_sizes)={min(H)}], got {rank}")
    r = int(rank)
    sub = _aoyagi_subset([width - r for width in H])
    ell, S = len(sub) - 1, sum(sub)
    a = S - ell * (-(-S // ell) - 1)                                   # -(-S // ell) is ceil(S / ell)
    pairs = sum(sub[i] * sub[j] for i in range(len(sub)) for j in range(i + 1, len(sub)))
    return (rank_maps_half_dimension(H, r) + Fraction(a * (ell - a), 4 * ell)
            - Fraction(ell * (ell - 1), 4) * Fraction(S, ell) ** 2 + Fraction(pairs, 2))

def rank_maps_half_dimension(layer_sizes: Sequence[int], rank: int) -> Fraction:
    """Half the dimension of the rank-`rank` maps R^{H_0} -> R^{H_M}, r(H_0 + H_M - r)/2: the first term of
    Aoyagi's lambda, and the LLC a regular model of those maps would have (the rank of the Hessian at w*, halved)."""
    H, r = [int(width) for width in layer_sizes], int(rank)
    if not 0 <= r <= min(H):
        raise ValueError(f"rank must be in [0, min(layer_sizes)={min(H)}], got {rank}")
    return Fraction(r * (H[0] + H[-1] - r), 2)


# %%
# by hand: Delta = (6, 4, 6), l = 2, S = 16, a = 2: 32 - 32 + 42
assert aoyagi_dln_lambda([10, 8, 10], 4) == 42
for sizes, r in [([12, 10, 8, 12], 3), ([24, 16, 16, 16, 24], 8), ([7, 3, 9, 4, 6], 2)]:
    d = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    assert rank_maps_half_dimension(sizes, r) <= aoyagi_dln_lambda(sizes, r) <= Fraction(d, 2)
for bad_sizes, bad_rank, word in [([3, 4], 5, 'rank'), ([3], 1, 'layer_sizes')]:
    try:
        aoyagi_dln_lambda(bad_sizes, bad_rank)
        raise AssertionError
    except ValueError as e:
        assert word in str(e)


# %% [markdown]
# Two independent checks. A one-layer network is linear regression, a regular model: $\lambda = H_0H_1/2 = d/2$
# at every rank. A two-layer network is reduced-rank regression, whose coefficient Aoyagi & Watanabe (2005,
# *Stochastic complexities of reduced rank regression in Bayesian estimation*, Neural Networks 18, Main Theorem)
# derived separately, with four cases in input dimension $M$, hidden width $H$, output dimension $N$ and rank
# $r$:

# %%
#| export
def reduced_rank_regression_lambda(M: int, H: int, N: int, r: int) -> Fraction:
    """Aoyagi & Watanabe (2005): the learning coefficient of reduced-rank regression R^M -> R^H -> R^N
    at true rank r."""
    if not 0 <= r <= min(M, H, N):
        raise ValueError(f"rank r={r} must lie in [0, min(M, H, N)]")
    if N + r <= M + H and M + r <= N + H and H + r <= M + N:
        v = Fraction(2 * (H + r) * (M + N) - (M - N) ** 2 - (H + r) ** 2, 8)
        return v + (Fraction(1, 8) if (M + H + N + r) % 2 else 0)
    if M + H < N + r:
        return Fraction(H * M - H * r + N * r, 2)
    if N + H < M + r:
        return Fraction(H * N - H * r + M * r, 2)
    return Fraction(M * N, 2)


# %%
for H0 in range(1, 7):
    for H1 in range(1, 7):
        assert all(aoyagi_dln_lambda([H0, H1], r) == Fraction(H0 * H1, 2) for r in range(min(H0, H1) + 1))
checked = 0
for M in range(1, 8):
    for Hh in range(1, 8):
        for N in range(1, 8):
            for r in range(min(M, Hh, N) + 1):
                expected = reduced_rank_regression_lambda(M, Hh, N, r)
                assert aoyagi_dln_lambda([M, Hh, N], r) == expected, (M, Hh, N, r)
                checked += 1
print(checked, 'two-layer cases agree;', 'e.g. lambda([10, 8, 10], r=4) =', aoyagi_dln_lambda([10, 8, 10], 4))

# %% [markdown]
# ## Networks at minimal-rank true parameters
#
# Aoyagi's $\lambda$ is the *global* coefficient: the smallest LLC over all true parameters. A true parameter
# whose layers have random, unequal ranks can have a larger LLC, so we compare at **minimal-rank** true
# parameters where every layer has rank $r$, built by `make_dln` of the [models chapter](models.html), whose
# `dln_data` sets $y=f(x,w^*)$ exactly (the noiseless limit used by Lau et al., app. J), so $L_n(w^*)=0$:

# %%
dln = make_dln([10, 8, 10], 4, seed=0)
Xd, yd = dln_data(dln, 1000)
stack = ModelStack([dln], 'cpu')
at_truth = full_data_loss(batched_loss(dln, gaussian_nll()), stack.params(stack.flat), {}, Xd, yd)
assert Xd.shape == (1000, 10) and yd.shape == (1000, 10) and float(at_truth) == 0.0

# %% [markdown]
# ## Estimate against truth
#
# `dln_table` estimates the LLC of a list of DLNs at minimal-rank true parameters with one setting for all and
# reports the relative error against Aoyagi's $\lambda$. The setting is `'auto'` (the `calibrate_at_curvature` rules of the
# [LLC chapter](llc.html), measured on each network), `'paper'` (the paper's preset with batch size 500), or any
# `SGLDSettings`; keyword `changes` go to `calibrate_at_curvature` for `'auto'` and to the settings otherwise.
# `regression_settings` turns such a setting into the `SGLDSettings` of one network; the
# [validation set](llc_validation.html) uses it too.

# %%
#| export
DLN_SUITE = [([10, 8, 10], 4), ([12, 10, 8, 12], 3), ([15, 10, 15], 5), ([16, 12, 12, 16], 6),
             ([20, 15, 20], 5), ([24, 16, 16, 16, 24], 8), ([25, 20, 25], 8)]

def regression_settings(setting, model, data, device=None, **changes) -> SGLDSettings:
    """The SGLD settings of a regression `model` on `data` for `setting`: 'auto' (`calibrate_at_curvature`, with `changes`
    to its rules), 'paper' (the preset with batch size 500) or an `SGLDSettings` (with `changes`)."""
    if isinstance(setting, SGLDSettings):
        return setting.replace(**changes)
    if setting == 'auto':
        return calibrate_at_curvature(model, data, 'regression', device=device, **changes)
    if setting == 'paper':
        return PAPER_PRESET.replace(batch_size=500, **changes)
    raise ValueError(f"setting must be 'auto', 'paper' or an SGLDSettings, got {setting!r}")

def dln_table(suite=DLN_SUITE, setting='auto', n: int = 10_000, seed: int = 0, device=None, only=None,
              **changes) -> pd.DataFrame:
    """Estimated against exact LLC of the DLNs `suite` = [(layer_sizes, rank), ...].
    `only` picks entries by index."""
    rows = []
    for i, (sizes, r) in enumerate(suite):
        if only is not None and i not in only:
            continue
        model = make_dln(sizes, r, seed=seed + i)
        data = dln_data(model, n, seed=seed + 1000 + i)
        settings = regression_settings(setting, model, data, device, **changes).replace(seed=seed)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            res = estimate_llc(model, data, 'regression', settings, device=device)
        lam, d = float(aoyagi_dln_lambda(sizes, r)), res.diagnostics.iloc[0]
        rows.append(dict(index=i, layers='-'.join(map(str, sizes)), rank=r,
                         d=sum(a * b for a, b in zip(sizes[:-1], sizes[1:])), true_llc=lam, estimate=res.llc,
                         se=res.llc_se, rel_error=res.llc / lam - 1, mala=d.mala_acceptance,
                         drift_z=d.drift_z, rhat=d.rhat, ess=d.ess, reach_used=d.reach_used, flagged=d.flagged,
                         problems=d.problems,
                         seconds=time.perf_counter() - t0))
    return pd.DataFrame(rows)


# %%
assert regression_settings('paper', dln, (Xd, yd)) == PAPER_PRESET.replace(batch_size=500)
assert regression_settings(PAPER_PRESET, dln, (Xd, yd), n_draws=7).n_draws == 7
try:
    regression_settings('fast', dln, (Xd, yd))
    raise AssertionError
except ValueError as e:
    assert "'fast'" in str(e)

# %% [markdown]
# How singular are the networks of `DLN_SUITE`? A regular model would have $\lambda = d/2$; Aoyagi's $\lambda$
# sits far below it, and the deeper the network, the further:

# %%
suite = DLN_SUITE
half_d = [sum(a * b for a, b in zip(sizes[:-1], sizes[1:])) / 2 for sizes, _ in suite]
exact_lambda = [float(aoyagi_dln_lambda(sizes, r)) for sizes, r in suite]
assert all(lam < hd for lam, hd in zip(exact_lambda, half_d))
fig, ax = plt.subplots(figsize=(5, 3.2))
for (sizes, r), hd, lam in zip(suite, half_d, exact_lambda):
    ax.plot(hd, lam, 'o', color=f'C{len(sizes) - 3}')
    ax.annotate('-'.join(map(str, sizes)), (hd, lam), fontsize=7, xytext=(4, -3), textcoords='offset points')
ax.plot([0, max(half_d)], [0, max(half_d)], 'k--', lw=1, label=r'regular: $\lambda = d/2$')
ax.set(xlabel='$d/2$', ylabel=r'Aoyagi $\lambda$', title='learning coefficient of the DLN suite')
ax.legend(fontsize=8)
plt.tight_layout()

# %% [markdown]
# A quick check that runs in CI: the smallest singular DLN of interest, with the automatic rules but less than a
# third of the steps. Such a short run must be flagged (it covers under 1 of the 2.5 relaxation times the
# diagnostics ask for), and it must still land within the 15% limit for a single network (measured:
# −11%; the full setting gives −8% here, see the table below).

# %%
t0 = time.time()
quick = dln_table([([8, 6, 8], 3)], setting='auto', n_burnin=1500, n_draws=1500)
print(f"{time.time() - t0:.0f} s")
assert abs(quick.rel_error[0]) < 0.15 and quick.flagged[0], quick
quick

# %% [markdown]
# The full table (computed with the `#| heavy` cell below, 4 chains, $n = 10^4$ noiseless samples, seeds 0..6).
# `auto` is the one automatic setting of the LLC chapter ($q = 3\cdot10^{-3}$, stiffness 0.1, 5000 + 5000
# steps), chosen on the tuning part of the [validation set](llc_validation.html); `paper` is `preset('paper')`
# ($\epsilon=10^{-5}$, $\gamma=100$, 1 chain, 400 draws, no burn-in) with batch size 500 and the same
# $n\beta = n/\log n$.
#
# Measured 2026-11-23 on the shared 2-core development CPU (torch 2.14.1, one thread, load 6–8 from other
# jobs), with `dln_table(setting='auto')` (11.6 minutes) and `dln_table(setting='paper')` (8 s):
#
# | DLN widths | rank | d | Aoyagi λ | auto: estimate ± SE | auto: rel. error | auto: MALA | auto: reach used | paper preset: estimate ± SE | paper: rel. error |
# |---|---|---|---|---|---|---|---|---|---|
# | 10-8-10 | 4 | 160 | 42 | 39.8 ± 0.3 | −5.1% | 0.98 | 0.35 | 25.2 ± 1.6 | −39.9% |
# | 12-10-8-12 | 3 | 296 | 47.5 | 32.8 ± 0.3 | −30.9% | 0.99 | 0.55 | 10.9 ± 0.8 | −77.0% |
# | 15-10-15 | 5 | 300 | 84.5 | 78.9 ± 0.4 | −6.6% | 0.98 | 0.35 | 47.2 ± 3.1 | −44.2% |
# | 16-12-12-16 | 6 | 528 | 95.5 | 78.9 ± 0.4 | −17.4% | 0.97 | 0.55 | 42.2 ± 3.1 | −55.8% |
# | 20-15-20 | 5 | 600 | 150 | 135.7 ± 0.5 | −9.5% | 0.96 | 0.31 | 80.1 ± 5.4 | −46.6% |
# | 24-16-16-16-24 | 8 | 1280 | 184 | 122.9 ± 0.4 | −33.2% | 0.97 | 0.61 | 47.0 ± 3.7 | −74.5% |
# | 25-20-25 | 8 | 1000 | 252 | 229.0 ± 0.6 | −9.1% | 0.96 | 0.32 | 115.5 ± 7.7 | −54.2% |
# | **mean \|relative error\|** | | | | | **16.0%** | | | | **56.0%** |
#
# How to read it, honestly:
#
# * The automatic setting **does not meet the 5% goal** here: it sits 5–33% below Aoyagi's λ, least on the
#   two-layer networks and most on the deep ones. The previous rule ($q=10^{-4}$, stiffness 0.3, burn-in
#   stiffness 2, 6000 + 6000 steps) came to 3.3% on this suite, but it had been tuned on two of these seven
#   networks, every one of its rows failed its own diagnostics (MALA acceptance 0.52–0.82, estimate still
#   rising), and on random networks it was not tuned for it was off by +21% to +182% (six networks tried when
#   the issue was filed) or diverged (both deep networks of the tuning part). Its good
#   numbers here were a cancellation of two errors, not a measurement; the [validation page](llc_validation.html)
#   has the comparison on networks nobody tuned for.
# * The new rule's chains are well discretized (MALA acceptance 0.96–0.99) and mostly stationary, and every row
#   is **flagged**: the reach used is 0.31–0.61, so the localization, not the likelihood, holds the chains in
#   most directions and the estimate depends on $\gamma$ (the deeper the network, the more flat directions, the
#   larger the reach used and the error). The five-layer row is also not yet stationary ($\hat R = 1.08$).
# * On a network of the validation set, the exact full-batch sampler on the same localized target (same
#   $\gamma$) was off by as much as SGLD: much of the gap is the target's (finite $n$, $\gamma>0$), not SGLD's.
# * The paper's preset (Hennick & De Baerdemacker, table 3) underestimates every network by 40–77%: 400 steps of
#   size $10^{-5}$ from $w^*$ are far too few to equilibrate here, and $\gamma=100$ is large next to these
#   networks' softer curvatures. Its LLCs are useful for *comparisons* under one fixed protocol, which is how
#   the paper uses them, not as absolute values.

# %%
#| heavy
auto_table = dln_table(setting='auto')
paper_table = dln_table(setting='paper')
both = auto_table[['layers', 'rank', 'd', 'true_llc', 'estimate', 'se', 'rel_error']].merge(
    paper_table[['layers', 'estimate', 'rel_error']], on='layers', suffixes=('_auto', '_paper'))
print('mean |relative error|: auto', auto_table.rel_error.abs().mean(),
      'paper', paper_table.rel_error.abs().mean())
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.errorbar(both.true_llc, both.estimate_auto, 2 * both.se, fmt='o', label='automatic setting')
ax.plot(both.true_llc, both.estimate_paper, 's', label="paper preset")
lim = [0, both.true_llc.max() * 1.1]
ax.plot(lim, lim, 'k--', lw=1, label='exact (Aoyagi)')
ax.set(xlabel=r'Aoyagi $\lambda$', ylabel=r'$\hat\lambda(w^*)$', title='DLNs at minimal-rank truth')
ax.legend(fontsize=8)
both

# %%
#| hide
import nbdev
nbdev.nbdev_export()
