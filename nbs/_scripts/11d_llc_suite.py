# %% [markdown]
# # A validation suite with exact targets
#
# > Thirty-nine small singular models — scalar and matrix chains, deep linear networks, normal crossings and reduced-rank regressions — each with the exact finite-n value an LLC estimator should return at the weight-scale localization, computed by quadrature or by an exact sampler, and split now, before any tuning, into a tuning part and a held-out part; and 26 more, a fresh part for a second look after the interval rule changed.

# %%
#| default_exp llc.suite

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import ast, math, time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from fracsgd.core import committed_dir, write_table
from fracsgd.llc.calibrate import (NormalCrossing, crossing_data, crossing_lambda, crossing_target,
                                   weight_scale_localization)
from fracsgd.llc.dln import _aoyagi_subset, aoyagi_dln_lambda, reduced_rank_regression_lambda
from fracsgd.llc.exact_chain import chain_llc, matrix_chain_llc, product_chain
from fracsgd.llc.settings import default_n_beta
from fracsgd.llc.validation import validation_problem
from fracsgd.nets.models import make_dln

# %% [markdown]
# **What this chapter found** (details below):
#
# * The suite has 39 cases: 6 scalar chains, 3 matrix chains, 15 deep linear networks (depth 2 to 7, at most 100
#   weights, multiplicities 1 to 7 by Aoyagi's theorem), 9 normal crossings and 6 reduced-rank regressions, each
#   at $n$ = 3,000, 10,000 and 30,000 within its kind. 18 are held out, chosen by a seeded permutation within each
#   kind before any target or estimate existed.
# * At these $n$ every exact target lies below λ: from 26% of it (the scalar chain of depth 7, and a network of
#   depth 5) to 98% (a network of depth 2 that is nearly regular). Along the scalar chains, the deeper (the higher
#   the multiplicity), the further below: 73% of λ at depth 2, 26% at depth 7.
# * For the 24 linear networks without a quadrature the targets come from an exact sampler on sufficient statistics:
#   Gibbs sweeps of whole layers, each drawn from its Gaussian conditional, alternating with MALA steps. Its standard
#   errors are at most 0.21% of the target; on the six scalar chains it agrees with quadrature, and on the three
#   matrix chains with importance sampling, within 2.5 standard errors.
# * **MALA alone is not good enough for a target.** At 60–80% acceptance and a burn-in of five relaxation times
#   it reads the scalar chain of depth 3 11% low (5.8 standard errors): it does not enter the necks of the
#   posterior's funnels. This is the failure that a Langevin-based estimator risks on the same models.
# * Most of the deep networks made by `make_dln` have a true map far smaller than their layers: rank 1 in every layer,
#   but the layers' directions are independent, so the end-to-end map's singular value is a product of random
#   cosines, below 0.01 in 7 of the 15. At these $n$ such a network sits between the λ of rank 0 and that of its rank.
#   The targets are exact either way; only the comparison with λ needs this in mind.

# %% [markdown]
# An LLC estimator at finite $n$ should be judged against what an exact sampler of its own posterior would return,
# not against λ: the [exact chains](exact_chain.html) showed that the two differ by up to a factor four at the
# sample sizes we use. This chapter fixes that target,
#
# $$T = n\beta\,\mathbb E\big[L_n(w) - L_n(w^*)\big] \quad\text{under}\quad p(w) \propto
# \exp\!\big(-n\beta L_n(w) - \tfrac\gamma2 |w-w^*|^2\big),$$
#
# with $L_n$ the mean Gaussian loss $|y - f_w(x)|^2/2$ (summed over outputs), $n\beta = n/\log n$ and γ the
# localization `weight_scale_localization` chooses from the weights at $w^*$. It does so for a table of small
# models whose λ is known, and it splits the table into a part for tuning estimators and a part held out, by a rule
# that looks at nothing but the table's order.

# %% [markdown]
# ## The cases
#
# Five kinds, each with its own exact method:
#
# * **chain**: $f = w_L\cdots w_1 x$ at $w^* = 0$, depth 2 to 7, noiseless; λ = ½ with multiplicity $L$ (the
#   loss is $(w_1\cdots w_L)^2$ times a constant, a normal crossing with $L$ equal ratios);
# * **matrix-chain**: the same with 2×2 matrices, depth 2 to 4;
# * **dln**: fifteen deep linear networks of depth 2 to 7 with at most 100 weights, at a true map of rank $r$
#   (1, and 2 for one network) made by `make_dln` (every layer of rank $r$), data as in the
#   [validation set](llc_validation.html), noise 0 or 1;
# * **crossing**: $f = x\,w_1^p w_2^q$ at 0, $p \ge q$ (the mirror image has the same target), λ = 1/(2 max(p, q));
# * **rrr**: reduced-rank regression $y = BAx$ at 0 with $y$ pure noise.
#
# Sample sizes cycle through 3,000, 10,000 and 30,000 within each kind. The multiplicity `mult` is the order θ of
# the largest pole of the zeta function. For chains and crossings it is read off the normal crossing. For deep
# linear networks (and so for matrix chains and RRR, which are special cases) we take Aoyagi's theorem (Neural
# Networks 172, 2024) as stated there, θ = a(ℓ − a) + 1, with ℓ and a the same quantities that give λ. We did not
# re-derive it; below it is checked against the two cases known independently (the scalar chain, θ = L, and
# Aoyagi and Watanabe's reduced-rank regression, θ = 2 exactly when M + H + N + r is odd in the first case).

# %%
#| export
SUITE_N = (3_000, 10_000, 30_000)
SPLIT_SEED = 41                                    # issue 41: the seed of the tuning / held-out split
KINDS = ('chain', 'matrix-chain', 'dln', 'crossing', 'rrr')
SUITE_DLNS = [((5, 3, 4), 2), ((5, 4, 5), 1), ((3, 2, 5, 3), 1), ((4, 3, 4, 3), 1), ((2, 2, 4, 4, 5), 1),
              ((3, 3, 4, 4, 4), 1), ((3, 4, 4, 4, 4), 1), ((5, 2, 3, 2, 2, 3), 1), ((3, 4, 3, 3, 3, 3), 1),
              ((4, 4, 4, 3, 4, 4), 1), ((4, 2, 2, 3, 5, 2, 2), 1), ((3, 2, 3, 3, 3, 3, 3), 1),
              ((4, 3, 3, 4, 4, 3, 2, 3), 1), ((3, 2, 3, 3, 4, 3, 3, 3), 1), ((2,) * 8, 1)]
SUITE_CROSSINGS = [(p, q) for p in (1, 2, 3) for q in range(p + 1)]
SUITE_RRRS = [(2, 3, 2), (3, 1, 3), (5, 2, 2), (3, 2, 3), (4, 3, 2), (2, 2, 4)]
SUITE_TARGETS = committed_dir('llc_validation', 'suite_targets.csv')

def aoyagi_order(layer_sizes, rank: int) -> int:
    """The order θ = a(ℓ − a) + 1 of Aoyagi's theorem for a deep linear network with widths `layer_sizes` at a
    true map of rank `rank`: ℓ + 1 widths in her index set, S the sum of their excess over r,
    a = S − ℓ(⌈S/ℓ⌉ − 1)."""
    sub = _aoyagi_subset([int(h) - int(rank) for h in layer_sizes])
    ell, S = len(sub) - 1, sum(sub)
    a = S - ell * (-(-S // ell) - 1)
    return a * (ell - a) + 1

class RRR(nn.Sequential):
    "Reduced-rank regression R^M -> R^H -> R^N, y = B A x, no bias, both weights at 0 (the true parameter)."
    def __init__(self, M, H, N):
        super().__init__(nn.Linear(M, H, bias=False), nn.Linear(H, N, bias=False))
        for layer in self:
            nn.init.zeros_(layer.weight)

def rrr_data(n, M, N, seed):
    "x ~ N(0, I_M), y ~ N(0, I_N) independent of x: the truth is B A = 0."
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, M, generator=g), torch.randn(n, N, generator=g)

def _split(kinds: pd.Series, seed: int = SPLIT_SEED) -> list:
    "Within each kind, in table order, a seeded random half (rounded down) held out."
    part = ['tune'] * len(kinds)
    rng = np.random.default_rng(seed)
    for kind in KINDS:
        rows = np.flatnonzero(kinds.to_numpy() == kind)
        for i in rng.permutation(len(rows))[:len(rows) // 2]:
            part[rows[i]] = 'held-out'
    return part


# %% [markdown]
# The table is built from those lists alone; the split is a seeded permutation within each kind, so it is the same
# on every machine and was fixed before any estimate was made.

# %%
#| export
def _add_case(rows, kind, name, shape, depth, rank, n, noise, seed, lam, mult, d, map_sv=0.0, prefix=''):
    rows.append(dict(case=f'{prefix}{kind}-{name}', kind=kind, shape=shape, depth=depth, rank=rank, n=n,
                     noise=float(noise), seed=seed, lam=float(lam), mult=mult, d=d, map_sv=map_sv))

def _cases(dlns, crossings, rrrs, seed0: int, n_shift: int, noise_flip: int, prefix: str = '', chains: bool = True) -> list:
    "The rows of one suite: chains of depth 2-7 and 2x2 chains of depth 2-4 (with `chains`), then `dlns`, `crossings` and `rrrs`."
    rows, n = [], lambda i: SUITE_N[(i + n_shift) % 3]
    add = lambda *a, **k: _add_case(rows, *a, prefix=prefix, **k)
    for i, L in enumerate(range(2, 8) if chains else ()):
        add('chain', f'd{L}', str(L), L, 0, n(i), 0, seed0 + L, 0.5, L, L)
    for i, L in enumerate(range(2, 5) if chains else ()):
        sizes = [2] * (L + 1)
        add('matrix-chain', f'd{L}', '-'.join(map(str, sizes)), L, 0, n(i), 0, seed0 + L,
            aoyagi_dln_lambda(sizes, 0), aoyagi_order(sizes, 0), 4 * L)
    for i, (sizes, r) in enumerate(dlns):
        layers = '-'.join(map(str, sizes))
        P = torch.linalg.multi_dot([m.weight.double() for m in make_dln(sizes, r, seed=seed0 + 100 + i)][::-1])
        add('dln', f'{layers}-r{r}', layers, len(sizes) - 1, r, n(i), (i + noise_flip) % 2, seed0 + 100 + i,
            aoyagi_dln_lambda(sizes, r), aoyagi_order(sizes, r), sum(a * b for a, b in zip(sizes[:-1], sizes[1:])),
            float(torch.linalg.svdvals(P.detach())[0]))
    for i, (p, q) in enumerate(crossings):
        add('crossing', f'{p}{q}', str((p, q)), 2, 0, n(i), (1 - i + noise_flip) % 2, seed0 + 200 + i,
            crossing_lambda(p, q), 2 if p == q else 1, 2)
    for i, (M, H, N) in enumerate(rrrs):
        add('rrr', f'{M}{H}{N}', str((M, H, N)), 2, 0, n(i), 1, seed0 + 300 + i,
            reduced_rank_regression_lambda(M, H, N, 0), aoyagi_order([M, H, N], 0), H * (M + N))
    return rows

def suite_cases() -> pd.DataFrame:
    """One row per case of the validation suite: `case` (a stable id), `kind`, `shape`, `depth`, `rank`, `n`,
    `noise` (σ of y's noise), `seed`, `lam` (λ), `mult` (its multiplicity), `d` (weights), `map_sv` (the largest
    singular value of the true map x -> f(x, w*), 0 where w* = 0) and `part`."""
    df = pd.DataFrame(_cases(SUITE_DLNS, SUITE_CROSSINGS, SUITE_RRRS, seed0=0, n_shift=0, noise_flip=0))
    df['part'] = _split(df.kind)
    return df


# %%
cases = suite_cases()
assert cases.case.is_unique and len(cases) == 39
assert cases.equals(suite_cases())                                          # fixed: no hidden randomness
summary = cases.pivot_table(index='kind', columns='part', values='case', aggfunc='count').loc[list(KINDS)]
assert 0.4 <= (cases.part == 'held-out').mean() <= 0.5
assert (summary.min(axis=1) >= 1).all()                                     # every kind in both parts
dln = cases[cases.kind == 'dln']
assert dln.d.max() <= 100 and dln.depth.between(2, 7).all() and set(dln.mult) >= set(range(1, 8))
assert (dln.lam < dln.d / 2).all()                                          # all singular
assert all(set(g.n) == set(SUITE_N) for _, g in cases.groupby('kind'))      # each n in each kind
summary

# %%
cases

# %% [markdown]
# ### A fresh part, for a second held-out look
#
# The held-out part can only be looked at once per rule. After its first look (the LLC chapter's coverage of 15 of
# 18) the interval rule was changed, so the rule is judged again on cases nobody has seen: the same five kinds, new
# seeds (1000 on), the sample sizes rotated by one place, the noise flipped for networks and crossings, and new
# shapes for the networks (multiplicities 1 to 7) and the reduced-rank regressions. Their targets are computed the
# same way and kept in their own table.

# %%
#| export
FRESH_DLNS = [((3, 4, 3), 1), ((2, 3, 3, 2), 1), ((2, 2, 2, 2, 2), 1), ((2, 3, 2, 3, 2, 3), 1), ((3,) * 6, 1)]
FRESH_RRRS = [(3, 2, 2), (2, 1, 3), (4, 2, 3)]
FRESH_TARGETS = committed_dir('llc_validation', 'suite_targets_fresh.csv')

def fresh_cases() -> pd.DataFrame:
    "The fresh part (`part` = 'fresh'): `suite_cases`' columns, case ids that start with 'fresh-'."
    df = pd.DataFrame(_cases(FRESH_DLNS, SUITE_CROSSINGS, FRESH_RRRS, seed0=1000, n_shift=1, noise_flip=1,
                             prefix='fresh-'))
    df['part'] = 'fresh'
    return df


# %%
fresh = fresh_cases()
assert len(fresh) == 26 and fresh.case.is_unique and not set(fresh.seed) & set(cases.seed)
assert not set(map(tuple, fresh[['kind', 'shape', 'n', 'noise']].values)) & set(map(tuple, cases[['kind', 'shape', 'n', 'noise']].values))
assert set(fresh[fresh.kind == 'dln'].mult) == {1, 2, 4, 7} and fresh.d.max() <= 100
fresh.groupby('kind').agg(cases=('case', 'size'), n=('n', lambda v: sorted(set(v))), mult=('mult', lambda m: sorted(set(m))))

# %% [markdown]
# ### A second fresh part, for the acceptance rule
#
# The first fresh part has been looked at: its two worst rows ran at a Metropolis acceptance of 0.871 and 0.891,
# below the 0.9 at which the estimator flags a step as too large, yet above the 0.85 at which it used to repeat a
# run at half the step. The rule now repeats every run its own check flags, and it is judged on 17 cases defined
# here before any of them ran: the scalar and matrix chains once more (new seeds from 2000, the sample sizes rotated
# by a second place), five new networks (multiplicities 1 to 6) and three new reduced-rank regressions. The normal
# crossings are left out to save CPU time. Their fresh errors were all within 3.5%, so this part is the harder one.

# %%
#| export
FRESH2_DLNS = [((4, 3, 4), 1), ((2, 4, 2, 4), 1), ((3, 3, 2, 3, 3), 1), ((2,) * 6, 1), ((2,) * 7, 1)]
FRESH2_RRRS = [(3, 1, 4), (4, 2, 2), (2, 1, 2)]
FRESH2_TARGETS = committed_dir('llc_validation', 'suite_targets_fresh2.csv')

def fresh2_cases() -> pd.DataFrame:
    "The second fresh part (`part` = 'fresh2', ids 'fresh2-'): chains, matrix chains, networks and RRRs, no crossings."
    df = pd.DataFrame(_cases(FRESH2_DLNS, (), FRESH2_RRRS, seed0=2000, n_shift=2, noise_flip=0, prefix='fresh2-'))
    df['part'] = 'fresh2'
    return df


# %%
fresh2 = fresh2_cases()
seen = pd.concat([cases, fresh])
assert len(fresh2) == 17 and fresh2.case.is_unique and not set(fresh2.seed) & set(seen.seed)
assert not set(map(tuple, fresh2[['kind', 'shape', 'n', 'noise']].values)) & set(map(tuple, seen[['kind', 'shape', 'n', 'noise']].values))
assert set(fresh2[fresh2.kind == 'dln'].mult) == {1, 4, 5, 6} and fresh2.d.max() <= 100
fresh2.groupby('kind').agg(cases=('case', 'size'), n=('n', lambda v: sorted(set(v))), mult=('mult', lambda m: sorted(set(m))))

# %% [markdown]
# ### A third fresh part, for the settling rule
#
# The second fresh part has been looked at: two of its three misses, and the worst row of the first fresh part,
# were networks whose own diagnostics said the chains had not settled (still drifting along flat directions after
# fewer than 2.5 relaxation times, or a running estimate still falling), yet the rule only lengthened runs to reach
# a precision. It now also lengthens a run that has not settled, and a halving keeps the lengths already reached
# (the [calibrate chapter](calibrate.html)). The change is judged on 13 cases defined here before any of them ran:
# five new networks (depths 2 to 6), four normal crossings at sample sizes and noise not yet paired with them, and
# four new reduced-rank regressions. Every depth and sample size of the scalar and 2×2 chains has been used by one of
# the three earlier parts, so this part has none; new seeds alone would give nearly the same cases.

# %%
#| export
FRESH3_DLNS = [((3, 2, 3), 1), ((4, 2, 3, 2), 1), ((2, 3, 3, 3, 2), 1), ((3, 2, 2, 2, 2, 3), 1), ((2, 2, 3, 2, 2, 3, 2), 1)]
FRESH3_CROSSINGS = [(2, 1), (2, 2), (3, 0), (3, 1)]
FRESH3_RRRS = [(2, 2, 3), (4, 1, 3), (3, 3, 2), (5, 1, 2)]
FRESH3_TARGETS = committed_dir('llc_validation', 'suite_targets_fresh3.csv')

def fresh3_cases() -> pd.DataFrame:
    "The third fresh part (`part` = 'fresh3', ids 'fresh3-'): networks, crossings and RRRs, no chains."
    df = pd.DataFrame(_cases(FRESH3_DLNS, FRESH3_CROSSINGS, FRESH3_RRRS, seed0=3000, n_shift=2, noise_flip=1,
                             prefix='fresh3-', chains=False))
    df['part'] = 'fresh3'
    return df


# %%
fresh3 = fresh3_cases()
seen = pd.concat([cases, fresh, fresh2])
assert len(fresh3) == 13 and fresh3.case.is_unique and not set(fresh3.seed) & set(seen.seed)
assert not set(map(tuple, fresh3[['kind', 'shape', 'n', 'noise']].values)) & set(map(tuple, seen[['kind', 'shape', 'n', 'noise']].values))
assert not set(fresh3['shape'][fresh3.kind != 'crossing']) & set(seen['shape'][seen.kind != 'crossing']) and fresh3.d.max() <= 100
fresh3.groupby('kind').agg(cases=('case', 'size'), n=('n', lambda v: sorted(set(v))), mult=('mult', lambda m: sorted(set(m))))

# %% [markdown]
# `make_dln` gives every layer rank $r$ with its own random directions, so the rank-$r$ end-to-end map is the
# product of the layers' gains and of the cosines between consecutive layers' directions. Deep networks therefore
# have a true map close to 0 (`map_sv`, its largest singular value): below 0.01 in 7 of the 15. The energy that
# map carries, $n\beta\,\sigma^2$ for singular value σ, is then of order one or less, and the target behaves more like
# that of rank 0 than like Aoyagi's λ at rank $r$ (which it reaches only at far larger $n$). We kept `make_dln`, the
# recipe of the validation set; `make_balanced_dln` would give maps of singular values in [0.5, 1.5] instead.

# %%
assert (dln.map_sv < 0.01).sum() == 7 and dln.map_sv.max() > 1

# %% [markdown]
# The multiplicities agree with what is known independently: Aoyagi's order gives $L$ for the scalar chain of
# depth $L$, and for reduced-rank regression at rank 0 it gives 2 exactly in Aoyagi and Watanabe's first case with
# $M + H + N$ odd (the case with the extra 1/8 in λ).

# %%
for L in range(2, 8):
    assert aoyagi_order([1] * (L + 1), 0) == L and aoyagi_dln_lambda([1] * (L + 1), 0) == 0.5
for M in range(1, 6):
    for H in range(1, 6):
        for N in range(1, 6):
            first_case = N <= M + H and M <= N + H and H <= M + N
            assert aoyagi_order([M, H, N], 0) == (2 if first_case and (M + H + N) % 2 else 1), (M, H, N)
            assert aoyagi_dln_lambda([M, H, N], 0) == reduced_rank_regression_lambda(M, H, N, 0)


# %% [markdown]
# `suite_problem` builds a case's model at $w^*$ and its data, as float32 tensors as the package uses them.
# `RRR` and `rrr_data` moved here from `tools/calibrate_heldout.py`, which now imports them.

# %%
#| export
def _shape(row) -> tuple:
    s = str(row['shape'])
    return tuple(ast.literal_eval(s)) if s.startswith('(') else tuple(int(h) for h in s.split('-'))

def suite_problem(row) -> tuple:
    "The model of a `suite_cases` row at its true weights w* and its data `(X, y)`."
    kind, n, seed = row['kind'], int(row['n']), int(row['seed'])
    if kind == 'chain':
        return product_chain(int(row['depth']), n, seed)
    if kind == 'matrix-chain':
        return product_chain(int(row['depth']), n, seed, width=_shape(row)[0])
    if kind == 'dln':
        return validation_problem(dict(layers=row['shape'], rank=int(row['rank']), net=seed, n=n,
                                       noise=float(row['noise'])))
    if kind == 'crossing':
        return NormalCrossing(*_shape(row)), crossing_data(n, float(row['noise']), seed)
    if kind == 'rrr':
        M, H, N = _shape(row)
        return RRR(M, H, N), rrr_data(n, M, N, seed)
    raise ValueError(f"unknown kind {kind!r}: expected one of {KINDS}")


# %%
for _, row in cases.groupby('kind').head(1).iterrows():
    model, (X, y) = suite_problem(row)
    assert X.dtype == y.dtype == torch.float32 and len(X) == row.n
    assert sum(p.numel() for p in model.parameters()) == row.d
    if row.noise == 0:                                              # noiseless: the model at w* fits exactly
        with torch.no_grad():
            assert torch.allclose(model(X), y, atol=1e-5)


# %% [markdown]
# ## The same loss on a few rows
#
# Every model in the suite is linear in its input and has no bias, and the loss is squared error, so (as the
# samplers below use) $L_n$ depends on the data only through the second moments of $z = (x, y)$. Any $m$ rows
# $z'_1,\dots,z'_m$ with $\frac1m\sum z'z'^\top = \frac1n\sum zz^\top$ therefore give the same $L_n(w)$ at every $w$,
# and with it the same tempered posterior, provided $n\beta$ is still the original $n$'s. `equivalent_data` builds
# such rows from the eigen-decomposition of that moment matrix: $m$ = inputs + outputs rows, at most 10 here
# instead of up to 30,000. The automatic estimator then sees the same posterior and makes the same choices
# (the sampler, the step, the localization: none of them reads the rows), but a step costs the model on $m$ rows.
# This is a property of the suite, not a shortcut the estimator takes: on a user's network every step pays for its
# $n$ rows. The held-out rows measured both ways agree (see the [calibrate](calibrate.html) page).

# %%
#| export
def equivalent_data(data) -> tuple:
    """`(X', y')` with m = inputs + outputs rows whose second moments of (x, y) equal `data`'s: the same mean
    squared-error loss at every weight for a bias-free model linear in x (float32, shapes as `data`'s after
    the first). Pass the original n's `n_beta` to an estimator: its default reads the number of rows."""
    X, y = data
    Z = torch.cat([X.double().reshape(len(X), -1), y.double().reshape(len(y), -1)], 1)
    m, k = Z.shape[1], X[0].numel()
    e, V = torch.linalg.eigh(Z.T @ Z / len(Z))
    Zm = (math.sqrt(m) * e.clamp(min=0).sqrt()[:, None] * V.T).float()
    return Zm[:, :k].reshape(m, *X.shape[1:]), Zm[:, k:].reshape(m, *y.shape[1:])


# %%
for _, row in cases.groupby('kind').head(2).iterrows():
    model, data = suite_problem(row)
    small = equivalent_data(data)
    assert len(small[0]) <= 10 and small[0].shape[1:] == data[0].shape[1:] and small[1].shape[1:] == data[1].shape[1:]
    g = torch.Generator().manual_seed(0)
    for _ in range(3):                                    # at w* and at two random weights far from it
        with torch.no_grad():
            loss = [((model(X) - y) ** 2).flatten(1).sum(1).double().mean() for X, y in (data, small)]
            assert torch.isclose(*loss, rtol=1e-4, atol=1e-6), (row.case, loss)
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=g))


# %% [markdown]
# ## The exact samplers
#
# For the chain and the crossing the target is a one- or two-dimensional integral: `chain_llc` and
# `crossing_target` do it by quadrature. The matrix chains, the deep linear networks and the RRRs need a sampler.
# Their loss depends on the data only through $S_{xx} = X^\top X/n$ and $S_{xy} = X^\top y/n$: with
# $P = W_L\cdots W_1$ and $D = P - P^*$,
#
# $$L_n(w) - L_n(w^*) = \tfrac12 \operatorname{tr}(D S_{xx} D^\top) + \operatorname{tr}\big(D\,(P^* S_{xx} - S_{xy}^\top)^\top\big),$$
#
# so a step costs products of the layer sizes, not of $n$. The sampler is written here in float64, independent of
# the package's SGLD.
#
# Metropolis-adjusted Langevin alone is exact only in the limit of long runs, and on these models the limit is far
# away. Around $w^* = 0$ the posterior is a funnel: where the other weights are large, one weight must be very small,
# and the curvature there is far above what a step tuned for 60–80% acceptance can enter. The chain then misses the
# neck of the funnel, whose energy is about ½ per stiff direction, and reads the target low: on the scalar chain of
# depth 3 at $n$ = 3,000, 11% low at that acceptance after five relaxation times of burn-in, by 5.8 standard errors (the cell below).
#
# The cure is exact: given all other layers, the posterior of one layer $W_i$ is Gaussian, because $P = A W_i B$
# is linear in it ($A = W_L\cdots W_{i+1}$, $B = W_{i-1}\cdots W_1$). Its precision is
# $n\beta\,(A^\top A) \otimes (B S_{xx} B^\top) + \gamma I$ and its linear term
# $n\beta\,A^\top S_{xy}^\top B^\top + \gamma W_i^*$, of dimension at most 36 here. Each iteration of
# `linear_posterior` draws every layer in turn from that conditional (a Gibbs sweep, which enters a funnel's neck in
# one draw) and then takes one MALA step of all weights together (which moves along the directions that trade
# scale between layers). Both leave the posterior invariant, so the pair does too.

# %%
#| export
def sufficient_stats(data) -> tuple:
    "S_xx = XᵀX/n and S_xy = Xᵀy/n in float64 (`y` flattened to [n, outputs])."
    X, y = (t.double().reshape(len(t), -1) for t in data)
    return X.T @ X / len(X), X.T @ y / len(X)

def linear_posterior(weights, stats, n_beta: float, gamma: float, step: float, n_chains: int = 128,
                     n_burnin: int = 500, n_draws: int = 1000, seed: int = 0, gibbs: bool = True) -> dict:
    """Exact sampling of exp(-n_beta (L_n(w) - L_n(w*)) - gamma/2 |w - w*|^2) for the bias-free linear network
    with layers `weights` (w*, each [out, in]) and sufficient statistics `stats`, in float64: `n_chains` chains from
    w*, each iteration a Gibbs sweep over the layers (unless `gibbs` is False; first to last layer and back, in turn)
    and one MALA step of size `step`.
    Returns each chain's mean of n_beta (L_n - L_n(w*)) over `n_draws` iterations after `n_burnin` (`per_chain`),
    the same over the first and the second half of the draws, and the MALA acceptance over the draws."""
    Sxx, Sxy = (s.double() for s in stats)
    W0 = [torch.as_tensor(w).double() for w in weights]
    shapes, C, L = [tuple(w.shape) for w in W0], int(n_chains), len(W0)
    offs = np.cumsum([0] + [a * b for a, b in shapes])
    x0 = torch.cat([w.reshape(-1) for w in W0])
    Pstar = W0[0]
    for w in W0[1:]:
        Pstar = w @ Pstar
    Rt = Pstar @ Sxx - Sxy.T                                       # [H_L, H_0]: the gradient of L_n at w*, in P
    g = torch.Generator().manual_seed(seed)
    layers = lambda x: [x[:, offs[i]:offs[i + 1]].reshape(C, *shapes[i]) for i in range(L)]

    def energy(x):                                                 # n_beta (L - L*), U with the localization, dU/dx
        W = layers(x)
        pre = [W[0]]
        for w in W[1:]:
            pre.append(w @ pre[-1])
        D = pre[-1] - Pstar
        DS = D @ Sxx
        e = n_beta * ((DS * D).sum((1, 2)) / 2 + (D * Rt).sum((1, 2)))
        back, grads = n_beta * (DS + Rt), [None] * L               # back: (W_L...W_{i+1})^T dE/dP
        for i in range(L - 1, 0, -1):
            grads[i] = (back @ pre[i - 1].transpose(1, 2)).reshape(C, -1)
            back = W[i].transpose(1, 2) @ back
        grads[0] = back.reshape(C, -1)
        dx = x - x0
        return e, e + gamma / 2 * (dx * dx).sum(1), torch.cat(grads, 1) + gamma * dx

    def sweep(x, down):                                            # each layer from its Gaussian conditional,
        W = layers(x)                                              # first to last layer, or last to first (down)
        above, below, run = [None] * L, [None] * L, None           # products of the layers above / below (None: I)
        for i in range(1, L) if down else range(L - 2, -1, -1):
            if down: below[i] = W[i - 1] if below[i - 1] is None else W[i - 1] @ below[i - 1]
            else: above[i] = W[i + 1] if above[i + 1] is None else above[i + 1] @ W[i + 1]
        for i in range(L - 1, -1, -1) if down else range(L):
            (out, inn), A, B = shapes[i], (run if down else above[i]), (below[i] if down else run)
            AA = torch.eye(out, dtype=torch.float64).expand(C, out, out) if A is None else A.transpose(1, 2) @ A
            BB = Sxx.expand(C, inn, inn) if B is None else B @ Sxx @ B.transpose(1, 2)
            lin = Sxy.T.expand(C, *Sxy.T.shape) if B is None else Sxy.T @ B.transpose(1, 2)
            lin = lin if A is None else A.transpose(1, 2) @ lin
            prec = n_beta * (AA[:, :, None, :, None] * BB[:, None, :, None, :]).reshape(C, out * inn, out * inn)
            chol = torch.linalg.cholesky(prec + gamma * torch.eye(out * inn, dtype=torch.float64))
            mean = torch.cholesky_solve((n_beta * lin.reshape(C, -1) + gamma * W0[i].reshape(-1))[:, :, None], chol)
            z = torch.randn(C, out * inn, 1, generator=g, dtype=torch.float64)
            W[i] = (mean + torch.linalg.solve_triangular(chol.transpose(1, 2), z, upper=True)).reshape(C, out, inn)
            run = W[i] if run is None else (run @ W[i] if down else W[i] @ run)
        return torch.cat([w.reshape(C, -1) for w in W], 1)

    x = x0.expand(C, -1).clone()
    e, U, grad = energy(x)
    total, first, accepted = torch.zeros(C, dtype=torch.float64), None, 0.0
    for t in range(n_burnin + n_draws):
        if gibbs:
            x = sweep(x, down=t % 2 == 1)
            e, U, grad = energy(x)
        z = torch.randn(x.shape, generator=g, dtype=torch.float64)
        x1 = x - step / 2 * grad + math.sqrt(step) * z
        e1, U1, grad1 = energy(x1)
        back = x - x1 + step / 2 * grad1
        log_ratio = U - U1 + (z * z).sum(1) / 2 - (back * back).sum(1) / (2 * step)   # Metropolis-Hastings
        ok = torch.rand(C, generator=g, dtype=torch.float64).log() < log_ratio
        x, grad = torch.where(ok[:, None], x1, x), torch.where(ok[:, None], grad1, grad)
        e, U = torch.where(ok, e1, e), torch.where(ok, U1, U)
        if t >= n_burnin:
            total += e
            accepted += float(ok.double().mean())
            if t - n_burnin + 1 == n_draws // 2:
                first = total.clone()
    half = n_draws // 2
    return dict(per_chain=(total / n_draws).numpy(), first=(first / half).numpy(),
                second=((total - first) / (n_draws - half)).numpy(), acceptance=accepted / n_draws)


# %% [markdown]
# On the scalar chain of depth 3 (λ = ½, exact value 0.274 by quadrature) MALA alone at about 75% acceptance
# reads 11% low; the same step with the Gibbs sweeps reads the quadrature's value:

# %%
model, data = suite_problem(dict(kind='chain', depth=3, n=3_000, seed=0))
stats, nb, gamma = sufficient_stats(data), default_n_beta(3_000), weight_scale_localization(model)
exact = chain_llc(3, nb, gamma, float(data[0].double().pow(2).mean()) / 2)
ws = [m.weight.detach() for m in model]
runs = {'MALA alone': linear_posterior(ws, stats, nb, gamma, 0.03, 256, 170, 170, gibbs=False),
        'Gibbs sweep + MALA': linear_posterior(ws, stats, nb, gamma, 0.03, 256, 170, 170)}
rows = {name: dict(acceptance=r['acceptance'], llc=r['per_chain'].mean(), se=r['per_chain'].std(ddof=1) / 16)
        for name, r in runs.items()}
demo = pd.DataFrame(rows).T.assign(exact=exact)
demo['z'] = (demo.llc - demo.exact) / demo.se
assert demo.z['MALA alone'] < -4 and abs(demo.z['Gibbs sweep + MALA']) < 3
demo.round(4)

# %% [markdown]
# `mala_target` runs the sampler to a target: the MALA step is halved from 0.5/γ until short pilot runs accept at
# least 60%; the burn-in is five relaxation times $1/(\epsilon\gamma)$ of that step (at least 2,000 iterations, at
# most 20,000) and the draws per chain 2.5 of them (2,000 to 10,000); then batches of fresh chains, each chain's mean
# an independent replicate, are pooled until the standard error between chains is at most 0.5% of the target.
#
# Even with the Gibbs sweeps one slow mode remains where $w^* = 0$ and the layers differ in size: started at $w^*$,
# the first sweep makes the first layer wide and the next one narrow, and moving weight from one to the other
# across the funnel's neck takes longer than five relaxation times. A run that is still relaxing shows it in its
# draws: their second half reads higher than their first. `mala_target` compares the two halves chain by chain and,
# while they differ by more than three standard errors, doubles the burn-in (and the draws) and starts again. In
# development runs, reduced-rank regressions at the shortest burn-in read 0.3–0.5% low without this test.

# %%
#| export
REL_SE = 0.005                    # the samplers' targets: standard error at most this fraction of the value
BURNIN = (5.0, 2_000, 20_000)     # burn-in: relaxation times 1/(step gamma), and its bounds in iterations
DRAWS = (2.5, 2_000, 10_000)      # draws per chain, the same way
DRIFT_Z = 3.0                     # a run whose second half differs from its first by more s.e. is burnt in again

def tune_step(weights, stats, n_beta: float, gamma: float, low: float = 0.6, n_chains: int = 32,
              n_steps: int = 200, seed: int = 0, gibbs: bool = True) -> tuple:
    "The MALA step: halved from 0.5/gamma until a pilot of `n_steps` accepts at least `low`; (step, acceptance)."
    step = 0.5 / gamma
    for _ in range(40):
        acc = linear_posterior(weights, stats, n_beta, gamma, step, n_chains, n_steps // 2, n_steps // 2, seed,
                               gibbs)['acceptance']
        if acc >= low:
            return step, acc
        step /= 2
    raise RuntimeError(f"no MALA step down to {step:.3g} accepts {low:.0%} of proposals")

def mala_target(model, data, n_beta: float, gamma: float, rel_se: float = REL_SE, n_chains: int = 128,
                max_batches: int = 8, seed: int = 0, max_restarts: int = 3, burnin=BURNIN, draws=DRAWS) -> dict:
    """The exact target of a bias-free linear network (`model` at w*, a sequence of `nn.Linear`) by
    `linear_posterior`, pooled over batches of `n_chains` fresh chains until its s.e. is at most `rel_se` of it;
    all again with twice the burn-in while the draws' two halves differ by more than `DRIFT_Z` standard errors.
    `burnin` and `draws`: (relaxation times, least, most iterations)."""
    layers = list(model)
    if not all(isinstance(m, nn.Linear) and m.bias is None for m in layers):
        raise ValueError("mala_target needs a sequence of bias-free nn.Linear layers")
    weights, stats = [m.weight.detach() for m in layers], sufficient_stats(data)
    step, pilot = tune_step(weights, stats, n_beta, gamma, seed=seed)
    relax = 1 / (step * gamma)
    burn, n_draws = (int(np.clip(math.ceil(r * relax), lo, hi)) for r, lo, hi in (burnin, draws))
    for restart in range(max_restarts + 1):
        runs = []
        for b in range(max_batches):
            runs.append(linear_posterior(weights, stats, n_beta, gamma, step, n_chains, burn, n_draws,
                                         seed + 1 + b + 100 * restart))
            x = np.concatenate([r['per_chain'] for r in runs])
            m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))
            if se <= rel_se * abs(m):
                break
        d = np.concatenate([r['second'] - r['first'] for r in runs])
        drift_z = float(d.mean() / (d.std(ddof=1) / math.sqrt(len(d))))
        if abs(drift_z) <= DRIFT_Z or burn >= burnin[2]:
            break
        burn, n_draws = min(2 * burn, burnin[2]), min(2 * n_draws, draws[2])
    return dict(target=m, target_se=se, method='gibbs+mala', step=step, pilot_acceptance=pilot,
                acceptance=float(np.mean([r['acceptance'] for r in runs])), burnin=burn, draws=n_draws,
                burnin_relaxations=burn / relax, chains=len(x), drift_z=drift_z, restarts=restart)


# %% [markdown]
# `suite_target` computes one case's target at its own localization. For the scalar and matrix chains,
# `suite_check` computes it a second, independent way: the sampler for the scalar chain, and for the matrix chain
# the importance sampling of the [exact chains](exact_chain.html) chapter (`matrix_chain_llc`).

# %%
#| export
def suite_target(row, rel_se: float = REL_SE, seed: int = 0, **sampler) -> dict:
    """The exact target of a `suite_cases` row at gamma = `weight_scale_localization` of its model at w*:
    `target`, `target_se`, `method`, `gamma`, `n_beta`, `seconds` and the sampler's diagnostics, where it ran
    (`sampler`: more arguments of `mala_target`)."""
    model, data = suite_problem(row)
    gamma, nb, t0 = weight_scale_localization(model), default_n_beta(int(row['n'])), time.perf_counter()
    if row['kind'] == 'crossing':
        out = dict(target=crossing_target(*_shape(row), data, nb, gamma), target_se=0.0, method='quadrature')
    elif row['kind'] == 'chain':
        scale = float(data[0].double().pow(2).mean()) / 2
        out = dict(target=chain_llc(int(row['depth']), nb, gamma, scale), target_se=0.0, method='quadrature')
    else:
        out = mala_target(model, data, nb, gamma, rel_se, seed=seed, **sampler)
    return dict(case=row['case'], **out, gamma=gamma, n_beta=nb, seconds=time.perf_counter() - t0)

def suite_check(row, rel_se: float = REL_SE, seed: int = 100, n_samples: int = 2_000_000, **sampler) -> dict:
    """A second, independent computation of a chain's target (`check`, `check_se`, `check_method`): the sampler
    for a scalar chain, importance sampling with `n_samples` draws for a matrix chain; {} for other kinds."""
    if row['kind'] not in ('chain', 'matrix-chain'):
        return {}
    model, data = suite_problem(row)
    gamma, nb = weight_scale_localization(model), default_n_beta(int(row['n']))
    if row['kind'] == 'chain':
        r = mala_target(model, data, nb, gamma, rel_se, seed=seed, **sampler)
        return dict(check=r['target'], check_se=r['target_se'], check_method=r['method'])
    r = matrix_chain_llc(int(row['depth']), _shape(row)[0], nb, gamma, cov=sufficient_stats(data)[0].numpy(),
                         n_samples=n_samples, seed=seed)
    return dict(check=r['llc'], check_se=r['se'], check_method='importance')

def suite_targets(out=None, cases=None, verbose: bool = True) -> pd.DataFrame:
    """The targets (and checks) of every case of `cases` (default `suite_cases()`), resumable: the table at `out`
    (default nbs/llc_validation/suite_targets.csv) is written whole after each case, and cases in it are skipped."""
    out = SUITE_TARGETS if out is None else Path(out)
    cases = suite_cases() if cases is None else cases
    done = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=['case'])
    rows = done.to_dict('records')
    for _, row in cases[~cases.case.isin(done.case)].iterrows():
        r = {**row.to_dict(), **suite_target(row), **suite_check(row)}
        rows.append(r)
        write_table(pd.DataFrame(rows), out)
        if verbose:
            print(f"{r['case']:28s} n={r['n']:6d} gamma={r['gamma']:.3f} target={r['target']:.4f}±{r['target_se']:.4f}"
                  f" ({r['method']}, {r['seconds']:.0f}s)" + (f" check={r['check']:.4f}±{r['check_se']:.4f}"
                                                               if 'check' in r else ''), flush=True)
    return pd.DataFrame(rows)


# %% [markdown]
# Two targets computed two ways, here at a sample size and a precision (2%) cheap enough to run on every build: the
# scalar chain of depth 3 (quadrature against the sampler) and the 2×2 chain of depth 2 (the sampler against
# importance sampling). The full table below repeats this at 0.5% for all nine chains.

# %%
quick = cases.set_index('case').loc[['chain-d3', 'matrix-chain-d2']].reset_index().assign(n=3_000)
quick_sampler = dict(rel_se=0.02, n_chains=64, burnin=(5.0, 500, 20_000), draws=(2.5, 1000, 10_000))
checked = pd.DataFrame([{**suite_target(row, **quick_sampler), **suite_check(row, n_samples=500_000, **quick_sampler)}
                        for _, row in quick.iterrows()])
checked['z'] = (checked.target - checked.check) / np.hypot(checked.target_se, checked.check_se)
assert (checked.z.abs() < 3).all()
checked[['case', 'target', 'target_se', 'method', 'check', 'check_se', 'check_method', 'z', 'seconds']].round(4)

# %% [markdown]
# ## The targets
#
# The full table was computed by `tools/suite_targets.py` (the cell below, single-threaded, resumable) and is read
# from the committed CSV.

# %%
#| heavy
suite_targets()

# %%
targets = pd.read_csv(SUITE_TARGETS) if SUITE_TARGETS.exists() else None     # None: not computed yet
if targets is not None:
    same = targets.set_index('case')[cases.columns.drop('case')].loc[cases.case].reset_index()
    pd.testing.assert_frame_equal(same, cases, check_dtype=False, rtol=1e-12)   # the targets are for this table
    now = [weight_scale_localization(suite_problem(row)[0]) for _, row in targets.iterrows()]
    assert np.allclose(targets.gamma, now), 'weight_scale_localization has changed since: recompute the targets'
    sampled = targets[targets.method != 'quadrature']
    assert (sampled.target_se <= REL_SE * sampled.target.abs()).all() and (sampled.drift_z.abs() <= DRIFT_Z).all()
    checks = targets.dropna(subset=['check'])
    z = (checks.target - checks.check) / np.hypot(checks.target_se, checks.check_se)
    assert len(checks) == 9 and (z.abs() <= 3).all()
    targets['ratio'] = targets.target / targets.lam
    shown = targets[['case', 'part', 'n', 'noise', 'lam', 'mult', 'd', 'map_sv', 'gamma', 'target', 'target_se',
                     'ratio', 'check', 'check_se', 'method', 'seconds']].round(4)
else:
    shown = 'no committed targets yet: run `python tools/suite_targets.py`'
shown

# %% [markdown]
# Every sampled target has a standard error of at most 0.21% of its value (one batch of 128 chains was always
# enough), no run needed a longer burn-in, and the nine second computations agree. The 15 networks took 16 of the
# 18 minutes of sampling, on one core of a shared machine.
#
# By kind and part: how far the finite-$n$ target lies below λ (`ratio` = target/λ), the multiplicities, and the
# cost in seconds. The two parts cover the same ground except for the scalar chains, where the seeded split
# happened to hold out the three shallow ones (depth 2 to 4) and leave the deep ones for tuning.

# %%
if targets is not None:
    by_kind = targets.groupby(['kind', 'part']).agg(cases=('case', 'size'), mult=('mult', lambda m: sorted(set(m))),
                                                    ratio_min=('ratio', 'min'), ratio_max=('ratio', 'max'),
                                                    seconds=('seconds', 'sum')).loc[list(KINDS)].round(3)
    assert (targets.ratio < 1).all()                      # every target lies below lambda at these n
    assert (sampled.target_se <= 0.0025 * sampled.target).all() and (sampled.restarts == 0).all()
by_kind if targets is not None else None

# %%
import matplotlib.pyplot as plt
if targets is not None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for kind, marker in zip(KINDS, 'osD^v'):
        for part, fill in (('tune', True), ('held-out', False)):
            t = targets[(targets.kind == kind) & (targets.part == part)]
            colour = f'C{KINDS.index(kind)}'
            ax.scatter(t.mult + (0.1 if fill else -0.1), t.ratio, marker=marker, s=30, label=f'{kind}, {part}',
                       facecolors=colour if fill else 'none', edgecolors=colour)
    ax.set(xlabel='multiplicity m', ylabel='exact target / λ', ylim=(0, 1.05),
           title='The finite-n target against λ (filled: tuning part; open: held out)')
    ax.legend(fontsize=7, ncol=2)
    plt.tight_layout()


# %% [markdown]
# The fresh part's targets, computed the same way by `tools/suite_targets.py --fresh` (the scalar and matrix chains
# again two ways):

# %%
def checked_targets(path, part: pd.DataFrame, flag: str, n_checks: int = 9):
    "A fresh part's committed targets, checked: for these cases, s.e. within REL_SE, `n_checks` chains agreeing two ways, below λ."
    if not path.exists():
        return f'not computed yet: run `python tools/suite_targets.py {flag}`'
    t = pd.read_csv(path)
    same = t.set_index('case')[part.columns.drop('case')].loc[part.case].reset_index()
    pd.testing.assert_frame_equal(same, part, check_dtype=False, rtol=1e-12)   # the targets are for this table
    sampled = t[t.method != 'quadrature']
    assert (sampled.target_se <= REL_SE * sampled.target.abs()).all()
    t = t.reindex(columns=[*t.columns, *{'check', 'check_se'} - set(t.columns)])   # a part without chains has no checks
    checks = t.dropna(subset=['check'])
    z = (checks.target - checks.check) / np.hypot(checks.target_se, checks.check_se)
    assert len(checks) == n_checks and (z.abs() <= 3).all(), z
    t['ratio'] = t.target / t.lam
    assert (t.ratio < 1).all()
    return t[['case', 'n', 'noise', 'lam', 'mult', 'd', 'gamma', 'target', 'target_se', 'ratio', 'check', 'check_se',
              'method', 'seconds']].round(4)

checked_targets(FRESH_TARGETS, fresh, '--fresh')

# %% [markdown]
# And the second fresh part's, by `tools/suite_targets.py --fresh2` (2026-12-02, 11 minutes of one core):

# %%
checked_targets(FRESH2_TARGETS, fresh2, '--fresh2')

# %% [markdown]
# And the third fresh part's, by `tools/suite_targets.py --fresh3` (2026-12-02; it has no chains, so no second method):

# %%
checked_targets(FRESH3_TARGETS, fresh3, '--fresh3', n_checks=0)
