# %% [markdown]
# # Clusters of solutions
#
# > Solutions described by their predictions on a probe set, clustered with a stability report (silhouette, agreement of two methods, bootstrap stability), weight space as a comparison only, cluster masses, and the local posterior's cluster masses from SGLD chains started at chosen solutions (paper §4.2, app. G.4).

# %%
#| default_exp posterior.clusters

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math

import numpy as np
import pandas as pd
import torch
from torch import nn
from sklearn.cluster import AgglomerativeClustering, KMeans
from sklearn.metrics import adjusted_rand_score, silhouette_score

from fracsgd.llc.sgld import SGLDSampler, SGLDSettings
from fracsgd.nets.stack import ModelStack, batched_forward, where_to_compute, resolve_loss
from fracsgd.placement import model_dtype

# %%
torch.set_num_threads(1)   # small nets and small tables: one thread avoids contention on small CPUs


# %% [markdown]
# The moons experiment of §4.2 (Hennick & De Baerdemacker, ICLR 2026) compares two distributions over the
# same few *clusters* of solutions: where many independent SGD runs end, and where the local Bayesian posterior
# puts its mass. Both need the clusters first, and both can mislead: a clustering method finds clusters in any
# cloud of points, and SGLD chains that never leave the solution they start from report the choice of starting
# points as a posterior. This chapter builds the clusters and the posterior's cluster masses, each with the
# numbers that say how far to trust them; the [tempering chapter](tempering.html) compares the masses.

# %% [markdown]
# ## Predictions on a probe set
#
# Two nets that differ by a permutation of hidden units are the same function, and their weight vectors can
# be far apart. Describing a solution by its predictions on a fixed set of inputs, the *probe set*, removes
# that symmetry. The probe set is always an explicit input: a grid over the data (`probe_grid`) or the data
# points themselves. Predictions are class probabilities in an array `[solutions, probe points, classes]`;
# `predictions_from_table` reads them from a long table with one row per solution and probe point.

# %%
#| export
def probe_grid(X, n: int = 20, margin: float = 0.5) -> torch.Tensor:
    "An `n`×`n` grid [n², 2] over the bounding box of the 2-D inputs `X`, widened by `margin` on each side."
    X = torch.as_tensor(X, dtype=torch.float32)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"probe_grid needs 2-D inputs of shape [points, 2], got shape {tuple(X.shape)}")
    lo, hi = X.min(0).values - margin, X.max(0).values + margin
    gx, gy = (torch.linspace(float(lo[i]), float(hi[i]), n) for i in range(2))
    return torch.cartesian_prod(gx, gy)

def predict_on_probe(models, probe) -> np.ndarray:
    "Softmax probabilities [models, probe points, classes] of each model on `probe` [points, inputs]."
    models = list(models)
    probe = torch.as_tensor(probe, dtype=model_dtype(models) or torch.float32)      # the models' dtype
    first = next(m for m in models[0].modules() if isinstance(m, nn.Linear))
    if probe.ndim != 2 or probe.shape[1] != first.in_features:
        raise ValueError(f"the probe set must have shape [points, {first.in_features}] for these models, "
                         f"got {tuple(probe.shape)}")
    modes = [m.training for m in models]
    try:
        with torch.no_grad():
            out = [m.eval()(probe.to(next(m.parameters()).device)).softmax(-1).cpu() for m in models]
    finally:
        for m, mode in zip(models, modes):
            m.train(mode)
    return torch.stack(out).double().numpy()

def check_predictions(predictions, n_probe: int | None = None) -> np.ndarray:
    "`predictions` as a float array [solutions, probe points, classes] of probabilities, or a ValueError."
    P = np.asarray(predictions, dtype=float)
    if P.ndim != 3:
        raise ValueError("predictions must have shape [solutions, probe points, classes], "
                         f"got an array with shape {P.shape}")
    if n_probe is not None and P.shape[1] != n_probe:
        raise ValueError(f"predictions are on {P.shape[1]} probe points, expected {n_probe}: "
                         "a different probe set?")
    if P.shape[0] < 1 or P.shape[1] < 1 or P.shape[2] < 2:
        raise ValueError(f"predictions need ≥1 solution, ≥1 probe point and ≥2 classes, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or P.min() < 0 or not np.allclose(P.sum(-1), 1, atol=1e-4):
        raise ValueError("predictions must be class probabilities (finite, ≥ 0, summing to 1 over classes); "
                         "apply a softmax to logits first")
    return P

def predictions_from_table(table: pd.DataFrame, columns, solution: str = 'solution',
                           probe: str = 'probe') -> np.ndarray:
    "A long table (one row per solution and probe point, class probabilities in `columns`) as an array."
    missing = [c for c in [solution, probe, *columns] if c not in table]
    if missing:
        raise ValueError(f"the table has no column(s) {missing}; columns: {list(table.columns)}")
    t = table.sort_values([solution, probe])
    n_sol, n_probe = t[solution].nunique(), t[probe].nunique()
    if len(t) != n_sol * n_probe or t.groupby(solution)[probe].nunique().min() != n_probe:
        raise ValueError(f"every solution needs one row per probe point: {len(t)} rows for {n_sol} solutions "
                         f"and {n_probe} probe points")
    return check_predictions(t[list(columns)].to_numpy(float).reshape(n_sol, n_probe, len(columns)))

def function_features(predictions) -> np.ndarray:
    "One row per solution [solutions, probe points × classes]: its predicted probabilities, flattened."
    P = check_predictions(predictions)
    return P.reshape(len(P), -1)


# %%
from sklearn.datasets import make_moons
Xm, ym = make_moons(200, noise=0.2, random_state=0)
grid = probe_grid(Xm, n=10)
assert grid.shape == (100, 2) and float(grid[:, 0].min()) < Xm[:, 0].min()
net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
P = predict_on_probe([net, net], grid)
assert P.shape == (2, 100, 2) and np.allclose(P.sum(-1), 1)
assert function_features(P).shape == (2, 200)
long = pd.DataFrame({'solution': np.repeat([0, 1], 100), 'probe': np.tile(np.arange(100), 2),
                     'p0': P[..., 0].ravel(), 'p1': P[..., 1].ravel()})
assert np.allclose(predictions_from_table(long.sample(frac=1, random_state=0), ['p0', 'p1']), P)

# %% [markdown]
# ## Clusters and how much to trust them
#
# Solutions are clustered by k-means on their features (`cluster_solutions`); clusters are renamed by size,
# so cluster 0 (C1 on the plots) is the largest. Whether the clusters mean anything is answered by
# `clustering_report`, three numbers that a weak clustering cannot all pass:
#
# * the **silhouette** (mean over solutions of $(b-a)/\max(a,b)$ with $a$ the mean distance to its own
#   cluster and $b$ to the nearest other): Kaufman & Rousseeuw's reading is > 0.5 a reasonable structure,
#   < 0.25 none to speak of;
# * the **agreement of two methods**, k-means and Ward's agglomerative clustering, as the adjusted Rand index
#   (ARI: 1 for the same partition, ≈ 0 for chance);
# * **bootstrap stability**: k-means is refitted on a resample of the solutions, every solution is assigned to
#   the nearest refitted centre, and the ARI with the original labels is averaged over resamples.
#
# The verdict is *strong* when silhouette ≥ 0.5 and both ARIs ≥ 0.8, *none* when the silhouette is below
# 0.25, and *weak* otherwise. The thresholds are conventions, not theorems; the three numbers are printed
# beside the verdict, with the size of the smallest cluster. Stability alone is not evidence: k-means cuts
# an elongated cloud the same way on every resample, as the overlapping example below shows.

# %%
#| export
SILHOUETTE_STRONG, SILHOUETTE_NONE, ARI_STRONG = 0.5, 0.25, 0.8

def _check_features(features, k: int) -> np.ndarray:
    F = np.asarray(features, dtype=float)
    if F.ndim != 2 or not np.all(np.isfinite(F)):
        raise ValueError(f"features must be a finite array [solutions, features], got shape {F.shape}")
    if not (isinstance(k, (int, np.integer)) and 2 <= k < len(F)):
        raise ValueError(f"k must be a whole number with 2 ≤ k < number of solutions ({len(F)}), got {k!r}")
    return F

def _by_size(labels: np.ndarray, k: int) -> np.ndarray:
    "Labels renamed so that cluster 0 is the largest (ties: the smaller old label first)."
    order = np.argsort(-np.bincount(labels, minlength=k), kind='stable')
    return np.argsort(order)[labels]

def cluster_solutions(features, k: int, method: str = 'kmeans', seed: int = 0) -> np.ndarray:
    "Cluster labels [solutions] in 0..k-1 (0 the largest) by 'kmeans' or 'agglomerative' (Ward)."
    F = _check_features(features, k)
    if method == 'kmeans':
        labels = KMeans(k, n_init=10, random_state=seed).fit_predict(F)
    elif method == 'agglomerative':
        labels = AgglomerativeClustering(k, linkage='ward').fit_predict(F)
    else:
        raise ValueError(f"method must be 'kmeans' or 'agglomerative', got {method!r}")
    return _by_size(labels, k)

def cluster_centroids(features, labels, k: int) -> np.ndarray:
    "The mean feature vector [k, features] of each cluster; an empty cluster is an error naming it."
    F, labels = np.asarray(features, dtype=float), np.asarray(labels)
    if labels.shape != F.shape[:1] or (labels.size and labels.min() < 0):
        raise ValueError(f"labels must be {len(F)} non-negative cluster numbers, one per row of features")
    counts = np.bincount(labels, minlength=k)
    if len(counts) > k:
        raise ValueError(f"labels go up to {labels.max()}, but k={k}")
    if (counts == 0).any():
        raise ValueError(f"cluster(s) {np.flatnonzero(counts == 0).tolist()} are empty: no solution has "
                         "that label (choose a smaller k, or relabel)")
    return np.stack([F[labels == c].mean(0) for c in range(k)])

def assign_to_clusters(features, centroids) -> np.ndarray:
    "The label of the nearest centroid (Euclidean) for each row of `features` [rows, features]."
    F, C = np.atleast_2d(np.asarray(features, float)), np.asarray(centroids, float)
    if F.shape[-1] != C.shape[-1]:
        raise ValueError(f"features have {F.shape[-1]} columns but centroids {C.shape[-1]}: "
                         "the probe sets differ")
    return ((F[:, None, :] - C[None]) ** 2).sum(-1).argmin(1)


# %%
#| export
def clustering_report(features, k: int, n_boot: int = 30, seed: int = 0) -> dict:
    "Silhouette, ARI of k-means vs Ward, bootstrap stability (mean ARI) and a verdict for `k` clusters."
    F = _check_features(features, k)
    km = cluster_solutions(F, k, 'kmeans', seed)
    ward = cluster_solutions(F, k, 'agglomerative')
    rng, aris = np.random.default_rng(seed), []
    for b in range(n_boot):
        idx = rng.integers(0, len(F), len(F))
        fit = KMeans(k, n_init=3, random_state=seed + b + 1).fit(F[idx])
        aris.append(adjusted_rand_score(km, assign_to_clusters(F, fit.cluster_centers_)))
    sil = float(silhouette_score(F, km)) if len(set(km)) > 1 else float('nan')
    out = dict(k=k, silhouette=sil, ari_methods=float(adjusted_rand_score(km, ward)),
               stability=float(np.mean(aris)) if aris else float('nan'),
               smallest=int(np.bincount(km, minlength=k).min()))
    strong = (sil >= SILHOUETTE_STRONG and out['ari_methods'] >= ARI_STRONG
              and out['stability'] >= ARI_STRONG)
    out['verdict'] = 'strong' if strong else ('none' if not sil >= SILHOUETTE_NONE else 'weak')
    return out

def clustering_reports(features, ks=(2, 3, 4, 5), n_boot: int = 30, seed: int = 0) -> pd.DataFrame:
    "One `clustering_report` row per number of clusters in `ks`."
    return pd.DataFrame([clustering_report(features, k, n_boot, seed) for k in ks])


# %% [markdown]
# **Checks against planted structure.** Three planted clusters of prediction vectors (each solution a noisy
# copy of one of three decision patterns on 50 probe points) must be recovered exactly and reported strong;
# one blob of solutions with no structure must be reported as having none, whatever $k$ is asked for; two
# planted patterns that overlap must not be called strong, however stable their split.

# %%
def planted(n_per=(30, 20, 10), n_probe=50, noise=0.05, seed=0):
    "Prediction arrays around three random decision patterns, and the planted labels."
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.05, 0.95, (len(n_per), n_probe))
    p1 = np.concatenate([np.clip(c + noise * rng.standard_normal((n, n_probe)), 0, 1)
                         for c, n in zip(centres, n_per)])
    return np.stack([p1, 1 - p1], -1), np.repeat(np.arange(len(n_per)), n_per)

P3, truth = planted()
rep = clustering_report(function_features(P3), 3)
assert adjusted_rand_score(truth, cluster_solutions(function_features(P3), 3)) == 1.0
assert rep['verdict'] == 'strong', rep
blob = np.random.default_rng(1).uniform(0.4, 0.6, (60, 50))
reports_blob = clustering_reports(function_features(np.stack([blob, 1 - blob], -1)))
assert (reports_blob.verdict == 'none').all(), reports_blob
pd.DataFrame([rep]).assign(data='planted, 3 clusters').round(3)

# %%
rng = np.random.default_rng(3)
base = rng.uniform(0.3, 0.7, 40)                        # two patterns 0.1 apart per point, noise 0.15 per point
p1 = np.clip(np.repeat([base + 0.05, base - 0.05], 40, 0) + 0.15 * rng.standard_normal((80, 40)), 0, 1)
rep_overlap = clustering_report(function_features(np.stack([p1, 1 - p1], -1)), 2)
assert rep_overlap['verdict'] != 'strong' and rep_overlap['stability'] > 0.8
pd.concat([reports_blob.assign(data='one uniform blob'),
           pd.DataFrame([rep_overlap]).assign(data='two overlapping patterns')]).round(3)


# %% [markdown]
# Weight space is offered only as a comparison: flatten each net's parameters into a row and hand them to the
# same functions. Nets that are permutations of one another land in different weight-space clusters while
# computing the same function, so a low ARI between weight-space and function-space clusters is expected and
# says nothing about the posterior.

# %%
#| export
def weight_features(models) -> np.ndarray:
    "One row per model [models, params]: its flattened parameters (for the weight-space comparison only)."
    return torch.stack([torch.cat([p.detach().reshape(-1).cpu() for p in m.parameters()])
                        for m in models]).double().numpy()


# %%
a = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))
b = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))
perm = torch.tensor([2, 0, 3, 1])
with torch.no_grad():                                   # b = a with its hidden units permuted
    b[0].weight.copy_(a[0].weight[perm]); b[0].bias.copy_(a[0].bias[perm]); b[2].weight.copy_(a[2].weight[:, perm])
    b[2].bias.copy_(a[2].bias)
assert np.allclose(predict_on_probe([a], grid), predict_on_probe([b], grid), atol=1e-6)
assert not np.allclose(weight_features([a]), weight_features([b]))


# %% [markdown]
# ## Cluster masses
#
# The mass of a cluster is the fraction of solutions (or of posterior draws) carrying its label; a label
# outside the clusters is refused.

# %%
#| export
def cluster_masses(labels, k: int) -> np.ndarray:
    "The fraction [k] of `labels` (any shape, values in 0..k-1) in each cluster."
    labels = np.asarray(labels).ravel()
    if labels.size == 0:
        raise ValueError("cluster_masses needs at least one label")
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"labels must lie in 0..{k - 1}, got values from {labels.min()} to {labels.max()}")
    return np.bincount(labels, minlength=k) / labels.size



# %%
assert np.allclose(cluster_masses([0, 0, 1, 2], 4), [.5, .25, .25, 0])
assert np.allclose(cluster_masses(np.array([[0, 1], [1, 1]]), 2), [.25, .75])   # any shape: all labels pooled
try:
    cluster_masses([0, 3], 3); raise AssertionError
except ValueError as e:
    assert '0..2' in str(e)

# %% [markdown]
# ## The local posterior
#
# The paper approximates the local Bayesian posterior by SGLD chains started from two SGD solutions, the one
# with the lowest loss and the one with the lowest LLC (appendix G.4), each drawing 1000 samples after 200
# burn-in steps, 10 steps apart, at step size $10^{-5}$. Those settings are `POSTERIOR_PAPER`; the paper gives
# neither the inverse temperature nor a localization, so the chains here sample at $n\beta=n$ (the posterior
# itself, temperature 1) unless `n_beta` is set, with the SGLD chapter's default localization $\gamma=1$ and
# full-batch gradients (the paper states no SGLD batch size).
#
# The chains are the [SGLD chapter](sgld.html)'s `SGLDSampler`, unchanged. `sample_posterior` hands it a
# `record` function that computes each chain's class probabilities on the probe set at every draw, so a draw
# is the chain's weights at its draw step, the same weights whose loss the sampler records as that draw.
#
# At step size $10^{-5}$ a chain moves by about $\sqrt{10^{-5}\cdot 10^4}\approx 0.3$ per weight from noise
# alone, and is pulled back by the loss, so it may well stay in the cluster it starts in; then the "posterior
# masses" are mostly the choice of starting points. `posterior_masses` therefore also reports, per chain, the
# fraction of draws that left the starting solution's cluster.
#
# `sample_posterior` follows the models as the LLC estimator does (`placement` of the
# [model stack](stack.html)): with no `device` named, the chains run on the models' device and in their dtype;
# a named `device` gets a copy of the weights, and the models never move. The data must already be on that
# device (data elsewhere are refused, naming both devices, not copied); the probe points, a small grid the
# function makes its own tensor of, are converted to the data's dtype and device.

# %%
#| export
POSTERIOR_PAPER = SGLDSettings(step_size=1e-5, n_chains=1, n_draws=1000, n_burnin=200,
                               steps_between_draws=10, batch_size=None)

def seed_solutions(table: pd.DataFrame, loss: str = 'loss', llc: str = 'llc') -> dict:
    "The paper's SGLD seeds: row labels of the lowest `loss` and the lowest `llc` of a one-row-per-solution table."
    for col in (loss, llc):
        if col not in table:
            raise ValueError(f"the table has no column {col!r}; columns: {list(table.columns)}")
    bad = table.index[~(table[llc] > 0)].tolist()
    if bad:
        raise ValueError(f"LLC must be positive; rows {bad[:10]} have {llc} ≤ 0 or NaN (a failed estimate)")
    pick = lambda i: i.item() if hasattr(i, 'item') else i
    return {'lowest loss': pick(table[loss].idxmin()), 'lowest LLC': pick(table[llc].idxmin())}

def sample_posterior(models, data, probe, settings: SGLDSettings = POSTERIOR_PAPER,
                     loss='classification', device=None) -> np.ndarray:
    """Local-posterior draws' probabilities on `probe`: [models, chains, draws, probe points, classes].
    On `device` if named, else where the models are; the data must be there (nothing is moved)."""
    models = list(models)
    device, X, y = where_to_compute(models, data, device, loss)
    probe = torch.as_tensor(probe, dtype=X.dtype, device=device)
    if probe.ndim != 2 or probe.shape[1:] != X.shape[1:]:
        raise ValueError(f"the probe set must have shape [points, {X.shape[1]}], got {tuple(probe.shape)}")
    s = settings.replace(n_beta=settings.n_beta or float(len(X)))
    modes = [m.training for m in models]
    try:
        for m in models:
            m.eval()                                     # as for the LLC: batch norm uses running statistics
        stack = ModelStack(models, device)               # a copy of the weights on `device`; the models stay
        forward = batched_forward(stack.template)
        def on_probe(params, buffers):                   # at each draw: [chains, probe points, classes]
            x = probe.expand(len(next(iter(params.values()))), *probe.shape)
            return forward(params, buffers, x).softmax(-1).double().cpu()
        sampler = SGLDSampler(stack, resolve_loss(loss), (X, y), s, record=on_probe)
        run = sampler.sample(list(range(len(models))))   # all chains at once, model-major
    finally:
        for m, mode in zip(models, modes):
            m.train(mode)
    out = torch.stack(run.recorded, 1)                   # [models × chains, draws, probe, classes]
    return out.reshape(len(models), s.n_chains, *out.shape[1:]).numpy()

def draw_labels(draws, centroids) -> np.ndarray:
    "The nearest cluster [models, chains, draws] of each posterior draw [models, chains, draws, probe, classes]."
    D = np.asarray(draws, dtype=float)
    if D.ndim != 5:
        raise ValueError(f"draws must have shape [models, chains, draws, probe points, classes], got {D.shape}")
    F = function_features(D.reshape(-1, *D.shape[3:]))
    return assign_to_clusters(F, centroids).reshape(D.shape[:3])

def posterior_masses(labels, k: int, start_labels) -> tuple[np.ndarray, pd.DataFrame]:
    """Pooled cluster masses [k] of posterior draw `labels` [models, chains, draws], and one row per chain
    with the fraction of its draws outside the cluster of its starting solution (`start_labels` [models])."""
    labels, start = np.asarray(labels), np.asarray(start_labels)
    if labels.ndim != 3 or start.shape != labels.shape[:1]:
        raise ValueError(f"labels must be [models, chains, draws] and start_labels [models], got shapes "
                         f"{labels.shape} and {start.shape}")
    rows = [dict(model=m, chain=c, start_cluster=int(start[m]), left_start=float((labels[m, c] != start[m]).mean()))
            for m in range(labels.shape[0]) for c in range(labels.shape[1])]
    return cluster_masses(labels, k), pd.DataFrame(rows)


# %% [markdown]
# **Checks.** Two small nets on 64 points, two chains each. Without burn-in the first draw is the starting
# weights themselves, so its probabilities are the nets' own, to float rounding; at a step size of $10^{-14}$
# the chains cannot move, every draw is its starting net, and every draw is labelled with its starting net's
# cluster (nothing left the start); at the paper's step size the draws move away from the start, by little.
# The seeds are the lowest loss and the lowest LLC, and a failed LLC estimate is refused.

# %%
X_toy = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
y_toy = (X_toy[:, 0] > 0).long()
torch.manual_seed(0)
toy_nets = [nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2)) for _ in range(2)]
toy_probe = probe_grid(X_toy, n=5)
start = predict_on_probe(toy_nets, toy_probe)                                 # [2 nets, 25, 2]
s_toy = POSTERIOR_PAPER.replace(n_chains=2, n_draws=6, n_burnin=0, steps_between_draws=5)
moving = sample_posterior(toy_nets, (X_toy, y_toy), toy_probe, s_toy)
assert moving.shape == (2, 2, 6, 25, 2) and np.allclose(moving.sum(-1), 1)
assert np.allclose(moving[:, :, 0], start[:, None], atol=1e-6)                # draw 0 is w* itself
assert np.abs(moving[:, :, -1] - start[:, None]).max() > 1e-6                 # later draws have moved
frozen = sample_posterior(toy_nets, (X_toy, y_toy), toy_probe, s_toy.replace(step_size=1e-14))
assert np.allclose(frozen, start[:, None, None], atol=1e-6)
toy_centroids = cluster_centroids(function_features(start), [0, 1], 2)
masses_toy, chains_toy = posterior_masses(draw_labels(frozen, toy_centroids), 2, [0, 1])
assert np.allclose(masses_toy, [0.5, 0.5]) and (chains_toy.left_start == 0).all()
table_toy = pd.DataFrame({'loss': [0.3, 0.1, 0.2], 'llc': [1.0, 3.0, 0.5]}, index=[10, 11, 12])
assert seed_solutions(table_toy) == {'lowest loss': 11, 'lowest LLC': 12}
try:
    seed_solutions(table_toy.assign(llc=[1.0, -0.2, 0.5])); raise AssertionError
except ValueError as e:
    assert 'rows [11]' in str(e)
chains_toy

# %% [markdown]
# ## Choosing k by a stated rule
#
# The moons study chose $k$ by the best silhouette, which on every run here picked $k = 2$: with two clusters,
# a tempered family with one free parameter ($\xi$) fits the one degree of freedom of the masses whatever the
# theory says (issue 25). `choose_k` names two rules; both look at every $k$ in `ks`, so $k \ge 3$ is always tried
# and reported:
#
# * `'silhouette'`: the best silhouette (the rule until now);
# * `'stable'`: among the $k$ whose clustering the data reproduce (bootstrap stability, the mean ARI of k-means
#   refitted on resamples, at least `ARI_STRONG` = 0.8) and whose smallest cluster holds at least 5% of the
#   solutions, the one with the best silhouette; if no $k$ passes, the most stable one. Stability alone does not
#   choose: k-means splits a round blob the same way on every resample, so on three separated blobs $k = 4$ is as
#   stable as $k = 3$ (check below), and "the largest stable $k$" would over-split.

# %%
#| export
K_RULES = ('silhouette', 'stable')

def choose_k(reports: pd.DataFrame, rule: str = 'silhouette', n: int | None = None, min_share: float = 0.05) -> int:
    """k from a `clustering_reports` table by `rule`: 'silhouette' (the best silhouette) or 'stable' (the best
    silhouette among the k with stability ≥ ARI_STRONG and a smallest cluster ≥ `min_share` of the `n` solutions;
    if none passes, the most stable k)."""
    if rule not in K_RULES:
        raise ValueError(f"rule must be one of {K_RULES}, got {rule!r}")
    if reports.empty:
        raise ValueError("no clustering report to choose k from")
    if rule == 'silhouette':
        return int(reports.loc[reports.silhouette.idxmax(), 'k'])
    ok = reports[(reports.stability >= ARI_STRONG) & (reports.smallest >= (min_share * n if n else 0))]
    return int(ok.loc[ok.silhouette.idxmax(), 'k']) if len(ok) else int(reports.loc[reports.stability.idxmax(), 'k'])


# %%
reports_q = pd.DataFrame(dict(k=[2, 3, 4, 5], silhouette=[0.38, 0.34, 0.27, 0.25], stability=[0.80, 0.85, 0.56, 0.58],
                              smallest=[49, 18, 14, 12]))          # the quick moons run's report (committed)
assert choose_k(reports_q, 'silhouette') == 2 and choose_k(reports_q, 'stable', n=100) == 2
assert choose_k(reports_q.assign(stability=[0.7, 0.85, 0.56, 0.58]), 'stable', n=100) == 3   # k = 2 not stable
assert choose_k(reports_q.assign(stability=[0.7, 0.85, 0.9, 0.58], smallest=[49, 18, 4, 12]), 'stable', n=100) == 3
assert choose_k(reports_q.assign(stability=[0.5, 0.7, 0.6, 0.4]), 'stable', n=100) == 3  # none passes: most stable
rng_b = np.random.default_rng(0)
blobs = np.concatenate([rng_b.normal(c, 0.05, (40, 2)) for c in ([0, 0], [3, 0], [0, 3])])
blob_reports = clustering_reports(blobs, ks=(2, 3, 4, 5), n_boot=10)
assert choose_k(blob_reports, 'stable', n=len(blobs)) == 3 and blob_reports.set_index('k').stability[4] >= ARI_STRONG
blob_reports


# %% [markdown]
# ## Do the chains mix?
#
# Posterior masses estimated from chains mean something only if the chains move between the clusters. Two
# diagnostics, both on the draws' cluster labels `[chains, draws]`:
#
# * **transitions**: how often a chain's label changes from one draw to the next. A chain with none never left
#   the cluster it started in, and then the posterior masses cannot be estimated from it: they are where it was
#   started.
# * **split R-hat** (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4): each chain cut in halves, $B$ the
#   variance between the half-chains' means (times their length $n$), $W$ the mean variance within them,
#   $\hat R = \sqrt{((n-1)W/n + B/n)/W}$. Close to 1 when the chains agree; a common reading asks for below 1.01
#   (Vehtari et al. 2021) or 1.1. Computed for the indicator of each cluster, and for any scalar of the draws. When
#   no chain varies at all but the chains disagree, $W = 0 < B$ and $\hat R = \infty$.
#
# To give every cluster its own chains, `reference_starts` picks, in each cluster, the `per_cluster` solutions
# nearest its centre in function space.

# %%
#| export
def split_rhat(x) -> float:
    "Split R-hat of draws `x` [chains, draws] (each chain cut in halves): inf when no half varies but they differ."
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] < 4:
        raise ValueError(f"draws must be [chains, draws] with at least 4 draws, got shape {x.shape}")
    n = x.shape[1] // 2
    halves = np.concatenate([x[:, :n], x[:, -n:]])                      # [2 chains, n]
    B = n * halves.mean(1).var(ddof=1)
    W = halves.var(1, ddof=1).mean()
    if W == 0:
        return math.inf if B > 0 else math.nan
    return float(np.sqrt(((n - 1) / n * W + B / n) / W))

def chain_transitions(labels) -> np.ndarray:
    "The number of label changes between consecutive draws of each chain: labels [..., draws] -> [...]."
    labels = np.asarray(labels)
    return (np.diff(labels, axis=-1) != 0).sum(-1)

def mixing_report(labels, k: int, start_labels, scalar=None) -> tuple[pd.DataFrame, dict]:
    """Per chain (labels [models, chains, draws], `start_labels` [models]): start cluster, transitions, share of
    draws outside the start cluster, clusters visited; and split R-hats over all chains: per cluster indicator
    (max), and of `scalar` [models, chains, draws] when given."""
    labels, start = np.asarray(labels), np.asarray(start_labels)
    flat = labels.reshape(-1, labels.shape[-1])                          # [chains, draws]
    trans = chain_transitions(labels)
    rows = [dict(model=m, chain=c, start_cluster=int(start[m]), transitions=int(trans[m, c]),
                 left_start=float((labels[m, c] != start[m]).mean()), visited=int(len(np.unique(labels[m, c]))))
            for m in range(labels.shape[0]) for c in range(labels.shape[1])]
    per = [split_rhat(flat == c) for c in range(k)]
    out = dict(chains=len(flat), never_left=int(sum(r['transitions'] == 0 for r in rows)),
               rhat_clusters=per, rhat_max=float(np.nanmax(per)) if not np.all(np.isnan(per)) else math.nan)
    if scalar is not None:
        out['rhat_scalar'] = split_rhat(np.asarray(scalar).reshape(flat.shape))
    return pd.DataFrame(rows), out

def reference_starts(features, labels, centroids, ids, per_cluster: int) -> dict:
    "Chain starts: in each cluster, the `per_cluster` solutions nearest its centre, as {'C<c> #<j>': id}."
    F, labels, ids = np.asarray(features, float), np.asarray(labels), np.asarray(ids)
    out = {}
    for c, centre in enumerate(np.asarray(centroids)):
        members = np.flatnonzero(labels == c)
        near = members[np.argsort(((F[members] - centre) ** 2).sum(1), kind='stable')[:per_cluster]]
        out.update({f'C{c + 1} #{j + 1}': ids[i].item() for j, i in enumerate(near)})
    return out


# %% [markdown]
# Checks with answers that follow from the definitions. Two chains of four draws, `[[0, 1, 2, 3], [4, 5, 6, 7]]`:
# the halves have means 0.5, 2.5, 4.5, 6.5 (variance 20/3, $B = 2 \cdot 20/3$) and variance ½ each ($W = ½$), so
# $\hat R = \sqrt{(½ \cdot ½ + 20/3)/½} = \sqrt{83/6}$. Independent draws from one distribution give $\hat R$
# within 0.01 of 1, chains with different means far above 1, and chains stuck in different clusters $\infty$
# for the indicators; a label sequence 0 0 1 1 0 has two transitions.

# %%
assert np.isclose(split_rhat([[0, 1, 2, 3], [4, 5, 6, 7]]), np.sqrt(83 / 6))
assert abs(split_rhat(np.random.default_rng(0).normal(size=(8, 2000))) - 1) < 0.01
assert split_rhat(np.random.default_rng(0).normal(size=(8, 2000)) + np.arange(8)[:, None]) > 2
stuck = np.array([[[0] * 50], [[1] * 50]])                              # [2 models, 1 chain, 50 draws]
table_mix, mix = mixing_report(stuck, 2, [0, 1])
assert mix['never_left'] == 2 and mix['rhat_max'] == np.inf and (table_mix.transitions == 0).all()
assert chain_transitions([0, 0, 1, 1, 0]) == 2
F_toy = np.array([[0.], [0.1], [0.3], [5.], [5.2], [4.1]])
assert reference_starts(F_toy, [0, 0, 0, 1, 1, 1], [[0.1], [4.8]], [10, 11, 12, 13, 14, 15], 2) == {
    'C1 #1': 11, 'C1 #2': 10, 'C2 #1': 13, 'C2 #2': 14}
mix
