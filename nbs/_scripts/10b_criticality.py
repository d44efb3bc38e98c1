# %% [markdown]
# # Near a minimum?
#
# > The LLC is defined at a minimum: how far the full-data gradient at w* can pull an estimate down, the closed form that bounds it, and the test `estimate_llc` applies to every estimate.

# %%
#| default_exp llc.criticality

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** At the final weights of the table-7 nets the criticality test passes on every net it ran on, but
# on 3 of the 17 only, so the row is not at paper scale; the ball of App. A.1 is on [its own page](radius.html). The
# rows this page puts in the [claims ledger](ledger.html), read from it; each row's configuration, rule and reasons
# are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('llc-domain')                # this study's rows of the claims ledger, read from it

# %%
#| export
from __future__ import annotations
from typing import Callable

import numpy as np
import torch

# %%
import warnings
import pandas as pd
from fracsgd.llc.sgld import SGLDSettings
from fracsgd.llc.sgld import default_n_beta
from fracsgd.nets.stack import resolve_loss
import matplotlib.pyplot as plt
from fracsgd.nets.models import make_dln, dln_data

# %% [markdown]
# The learning coefficient belongs to a minimum $w^*$ of the population loss (Lau et al. 2024, def. 1; app. A.1
# of the paper takes $w^*$ a local minimum). Along a training run the weights are rarely at one: the MNIST nets
# of the seeds study end at 88% test accuracy with their LLC still rising. The estimator does not know this. It
# samples $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac\gamma2\|w-w^*\|^2\}$ around whatever point it is given, and where
# $L_n$ still slopes down the chains slide downhill, the sampled loss falls below what a minimum would give, and
# the estimate $\hat\lambda = n\beta\,(\mathbb E[L_n(w)]-L_n(w^*))$ is pulled down.
#
# How far? Near $w^*$ write $L_n(w^*+\delta)\approx L_n(w^*)+g^\top\delta+\tfrac12\delta^\top H\delta$. In an
# eigendirection of $H$ with curvature $h\ge0$ and gradient component $g$, the localized posterior is Gaussian
# with precision $a = n\beta h+\gamma$ and mean $-n\beta g/a$, so
#
# $$\mathbb E\,n\beta\,(L_n - L_n(w^*)) = \sum_i \frac{n\beta h_i}{2a_i}
#   \;-\;\sum_i \frac{(n\beta g_i)^2\,(n\beta h_i+2\gamma)}{2a_i^2}.$$
#
# The first sum is the estimate at a minimum (each regular direction gives ½ less what the localization takes);
# the second is the gradient's pull. Two computable quantities bracket it.
#
# * **Before sampling:** each term is at most $(n\beta g_i)^2/\gamma$, reached in the flat directions
#   ($h_i=0$), so the pull is at most $P = (n\beta)^2\|\nabla L_n(w^*)\|^2/\gamma$. It needs only the
#   full-data gradient, but it treats every direction as flat and can exceed the pull a thousandfold.
# * **From the chains:** the chains' mean displacement along the gradient is $\mathbb E\,g^\top(w-w^*) =
#   -n\beta\sum_i g_i^2/a_i$, so the loss drop it explains, $D = -n\beta\,\mathbb E\,g^\top(w-w^*)$, satisfies
#   $D/2 \le \text{pull} \le D$ (since $a_i \le n\beta h_i + 2\gamma \le 2a_i$). $D$ is measured at every draw.
#
# `estimate_llc` computes both for every model it estimates and calls the point **near a minimum** when the
# estimate is positive and $D \le$ `CRITICALITY_LIMIT` $=10\%$ of it: the gradient explains at most a tenth of
# the estimate. A chain that finds a lower loss than at $w^*$ on average ($\hat\lambda\le0$) did not start at a
# minimum. Elsewhere the estimate is kept, flagged, with $D$ (`gradient_pull`) and $P$ (`gradient_pull_bound`) in
# its diagnostics. The bracket assumes no direction of negative curvature stronger than $\gamma/(n\beta)$; at a
# saddle the pull can be larger, and the drift test of the [LLC chapter](llc.html) is what sees it.

# %%
#| export
CRITICALITY_LIMIT = 0.1      # the gradient's largest pull, as a fraction of the estimate, that still counts as a minimum

def quadratic_llc(curvatures, gradients, n_beta: float, localization: float) -> float:
    """The expected estimate n*beta*(E[L_n] - L_n(w*)) under the localized tempered posterior of a quadratic loss
    with Hessian eigenvalues `curvatures` (>= 0) and gradient components `gradients` in the same eigenbasis."""
    h, g = np.asarray(curvatures, float), np.asarray(gradients, float)
    if np.any(h < 0):
        raise ValueError(f"quadratic_llc needs curvatures >= 0, got min {h.min():g}")
    a = n_beta * h + localization
    return float(np.sum(n_beta * h / (2 * a)) - np.sum((n_beta * g) ** 2 * (n_beta * h + 2 * localization) / (2 * a ** 2)))

def gradient_pull_bound(gradient_sq_norm, n_beta: float, localization: float):
    "P = (n*beta)^2 |grad L_n(w*)|^2 / gamma: the most the gradient can pull an LLC estimate down."
    g2 = np.asarray(gradient_sq_norm, float)
    if localization > 0:
        return n_beta ** 2 * g2 / localization
    return np.where(g2 > 0, np.inf, 0.0)           # no localization: any slope carries the chains away

def quadratic_drop(curvatures, gradients, n_beta: float, localization: float) -> float:
    "D = (n*beta)^2 sum g_i^2 / (n*beta*h_i + gamma): the loss drop along the gradient the chains realize (quadratic)."
    h, g = np.asarray(curvatures, float), np.asarray(gradients, float)
    return float(np.sum((n_beta * g) ** 2 / (n_beta * h + localization)))


# %% [markdown]
# A check of the algebra on random quadratics: the exact pull, the difference of `quadratic_llc` with and without
# the gradient, lies between $D/2$ and $D$, and $D$ never exceeds $P$; all three meet when every direction is flat.

# %%
rng = np.random.default_rng(0)
for _ in range(200):
    d = int(rng.integers(1, 30))
    h, g = rng.exponential(1, d) * 10.0 ** rng.uniform(-4, 2, d), rng.normal(0, 10.0 ** rng.uniform(-4, -1), d)
    nb, gam = 10.0 ** rng.uniform(1, 4), 10.0 ** rng.uniform(-1, 2)
    pull, drop = quadratic_llc(h, 0 * g, nb, gam) - quadratic_llc(h, g, nb, gam), quadratic_drop(h, g, nb, gam)
    assert drop / 2 * (1 - 1e-9) <= pull <= drop * (1 + 1e-9) <= gradient_pull_bound((g ** 2).sum(), nb, gam) * (1 + 1e-9)
flat_pull = gradient_pull_bound(3e-6, 100, 2.0)
assert np.isclose(quadratic_llc(np.zeros(3), [1e-3] * 3, 100, 2.0), -flat_pull)
assert np.isclose(quadratic_drop(np.zeros(3), [1e-3] * 3, 100, 2.0), flat_pull)
assert np.isclose(quadratic_llc([1.0] * 4, [0] * 4, 1e6, 1e-9), 2.0)      # a regular minimum: d/2


# %% [markdown]
# ### The full-data gradient
#
# `full_data_gradient` is the gradient of the mean loss over all of the data at each of a stack of models, the
# counterpart of `full_data_loss` (the baseline $L_n(w^*)$) in the [stack chapter](stack.html), one backward pass
# per `eval_batch` samples.

# %%
#| export
def full_data_gradient(f: Callable, stack, flat: torch.Tensor, buffers: dict, X: torch.Tensor, y: torch.Tensor,
                       eval_batch: int = 4096) -> torch.Tensor:
    """The gradient [K, params] (float64) of the mean loss on all of `(X, y)` at each row of `flat` [K, params],
    for a `batched_loss` `f` of the `ModelStack` `stack`."""
    K = len(flat)
    leaves = [p.detach().clone().requires_grad_(True) for p in stack.params(flat).values()]
    params = dict(zip(stack.names, leaves))
    total = torch.zeros(flat.shape, dtype=torch.float64, device=flat.device)
    for s in range(0, len(X), eval_batch):
        xb, yb = X[s:s + eval_batch], y[s:s + eval_batch]
        loss = f(params, buffers, xb.expand(K, *xb.shape), yb.expand(K, *yb.shape)).sum() * len(xb)
        grads = torch.autograd.grad(loss, leaves)
        total += torch.cat([g.reshape(K, -1) for g in grads], 1).double()
    return total / len(X)

class GradientDrop:
    """A `record` for `SGLDSampler` that measures g.(w - w*) over the draws, for the models' full-data gradients
    `gradient` [models, params] at `w_star` [models, params], `n_chains` chains each. The product is linear in w,
    so the record only sums the chains' flat weights (`takes_flat`) in float64, one in-place addition per draw;
    `mean()` gives the mean over each model's chains and draws [models]. The sampler calls `reset()` before each
    try, so a diverged try leaves nothing behind."""
    takes_flat = True                            # the sampler passes its flat weights [chains, params]
    def __init__(self, gradient: torch.Tensor, w_star: torch.Tensor, n_chains: int):
        self.gradient, self.w_star, self.n_chains = gradient.double(), w_star.double(), n_chains
        self.reset()

    def reset(self):
        self.total, self.count = 0.0, 0

    def __call__(self, w: torch.Tensor, buffers: dict) -> None:
        if self.count == 0:
            self.total = torch.zeros(w.shape, dtype=torch.float64, device=w.device)   # [chains, params]
        self.total.add_(w)
        self.count += 1

    def mean(self) -> torch.Tensor:
        "E[g.(w - w*)] over each model's chains and draws [models] (NaN before the first draw)."
        M = len(self.w_star)
        if self.count == 0:
            return torch.full((M,), float('nan'), dtype=torch.float64, device=self.w_star.device)
        mean_w = self.total.view(M, self.n_chains, -1).mean(1) / self.count              # [models, params]
        return ((mean_w - self.w_star) * self.gradient).sum(1)

def criticality_problem(llc: float, drop: float, limit: float = CRITICALITY_LIMIT) -> str:
    """Why the point of an estimate `llc` is not near a minimum ('' when it is), given `drop` = D, the loss drop
    along the gradient that the chains realized (NaN: not measured)."""
    if not np.isfinite(drop):
        return ''
    if not llc > 0:
        return (f'not near a minimum: the chains find a lower loss than at w* (estimate {llc:.3g} <= 0; the '
                f'gradient at w* explains a drop of {drop:.3g})')
    if drop > limit * llc:
        return (f'not near a minimum: the chains slide down the gradient at w*, which explains a drop of '
                f'{drop:.3g} ({drop / llc:.0%} of the estimate > {limit:.0%}); train further, or read the '
                f'estimate as a property of the path, not of a minimum')
    return ''


# %%
from fracsgd.nets.stack import ModelStack, batched_loss, resolve_loss
reg = make_dln([10, 3], 3, seed=0)                     # linear regression R^10 -> R^3 at its true weights
X_reg, y_reg = dln_data(reg, 2000)
st = ModelStack([reg, reg], 'cpu')
f = batched_loss(st.template, resolve_loss('regression'))
flat = st.flat.clone()
flat[1] += 0.01                                        # the second row moved off the minimum
grad = full_data_gradient(f, st, flat, st.buffers, X_reg, y_reg, eval_batch=512)
assert grad[0].abs().max() < 1e-5 and grad[1].abs().max() > 1e-3
w1 = flat[1].clone().requires_grad_(True)
by_hand = torch.autograd.grad(f(st.params(w1[None]), st.buffers, X_reg[None], y_reg[None]).sum(), w1)[0]
assert torch.allclose(grad[1].float(), by_hand, atol=1e-6)

# %% [markdown]
# `GradientDrop` sums weights instead of taking a product at every draw; the two orders give the same mean, here
# for two models of three chains each over five random draws:

# %%
drop_rec, draws_seen = GradientDrop(grad, flat, 3), []
for _ in range(5):
    w_draw = flat.repeat_interleave(3, 0) + 0.1 * torch.randn(6, flat.shape[1])     # [models x chains, params]
    drop_rec(w_draw, {})
    draws_seen.append(((w_draw.double() - flat.double().repeat_interleave(3, 0)) * grad.repeat_interleave(3, 0)).sum(1))
per_draw = torch.stack(draws_seen, 1).view(2, -1).mean(1)                           # [models]
assert torch.allclose(drop_rec.mean(), per_draw, rtol=1e-10, atol=1e-12)
drop_rec.reset()
assert drop_rec.mean().isnan().all()

# %% [markdown]
# ### The estimator against the closed form
#
# Linear regression is exactly quadratic, so the formulas above are exact at any point, minimum or not. We take
# the regression $\mathbb R^{10}\to\mathbb R^3$ of the stack check with half its inputs shrunk twentyfold, so
# that 15 of its 30 curvatures are 400 times weaker than the rest, and use the paper's $\gamma=100$: the weak
# directions are held by the localization ($n\beta h\ll\gamma$), as in a trained net. We move the weights off
# the minimum by growing steps along a random direction and compare `estimate_llc` (full-batch SGLD, 4 chains)
# with `quadratic_llc`, and the measured drop $D$ with `quadratic_drop`, on the Hessian's own eigenbasis. The loss
# is Gaussian with unit variance, $L_n = \tfrac1{2n}\sum\|y-Wx\|^2$, so $H = I_3\otimes\hat\Sigma_x$ with
# $\hat\Sigma_x$ the inputs' second moment.

# %%
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.sgld import SGLDSettings
X_ill = X_reg * torch.tensor([1.0] * 5 + [0.05] * 5)
with torch.no_grad():
    y_ill = reg(X_ill)
nb_reg, gamma_reg = default_n_beta(len(X_ill)), 100.0
w_min = st.flat[0].double()
Xd, yd = X_ill.double(), y_ill.double()
hess = torch.func.hessian(lambda w: f(st.params(w[None]), st.buffers, Xd[None], yd[None]).sum())(w_min)
assert torch.allclose(hess, torch.kron(torch.eye(3).double(), Xd.T @ Xd / len(Xd)))
curv, basis = torch.linalg.eigh(hess)
direction = torch.randn(len(w_min), generator=torch.Generator().manual_seed(1)).double()
direction /= direction.norm()
distances, models, rows = (0.0, 0.04, 0.1, 0.3), [], []
for dist in distances:                                  # one model per point: estimated side by side
    m = make_dln([10, 3], 3, seed=0)
    with torch.no_grad():
        m[0].weight.copy_((w_min + dist * direction).view_as(m[0].weight))
    models.append(m)
with warnings.catch_warnings():                          # the flags are in the table's near_minimum column
    warnings.simplefilter('ignore')
    res = estimate_llc(models, (X_ill, y_ill), 'regression', SGLDSettings(
        step_size=1e-4, localization=gamma_reg, n_chains=4, n_draws=1200, n_burnin=800, batch_size=None, seed=3))
for dist, d in zip(distances, res.diagnostics.itertuples()):
    gb = (basis.T @ (hess @ (dist * direction))).numpy()   # the gradient in the eigenbasis (exact: a quadratic)
    rows.append(dict(distance=dist, exact=quadratic_llc(curv, gb, nb_reg, gamma_reg), estimate=d.llc, se=d.llc_se,
                     D_exact=quadratic_drop(curv, gb, nb_reg, gamma_reg), D=d.gradient_pull,
                     bound=d.gradient_pull_bound, near_minimum=d.near_minimum))
closed = pd.DataFrame(rows)
closed

# %%
assert (abs(closed.estimate - closed.exact) < 4 * closed.se + 0.03 * closed.exact.abs().clip(lower=1)).all(), closed
assert np.allclose(closed.D, closed.D_exact, rtol=0.2, atol=0.3), closed
assert closed.near_minimum.tolist() == [True, True, False, False]
assert (closed.D <= closed.bound * 1.05).all() and closed.bound.iloc[1] > CRITICALITY_LIMIT * closed.estimate.iloc[1]

# %% [markdown]
# The estimate follows the closed form as the gradient grows, to below zero at 0.3, where the chains find a
# lower loss than their starting point. $D$ measured from the chains matches its closed form, and the test clears
# the first two points (the gradient explains at most a few percent of the estimate) and flags the other two. The
# bound $P$ alone would have flagged the second as well: it counts the 15 stiff directions as flat.

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.4))
ax.errorbar(closed.distance, closed.estimate, 2 * closed.se, fmt='o', label='estimate_llc (±2 se)')
ax.plot(closed.distance, closed.exact, 'k--', label='closed form')
ax.fill_between(closed.distance, closed.exact.iloc[0] - closed.D, closed.exact.iloc[0] - closed.D / 2,
                color='C3', alpha=0.25, label='minimum − [D, D/2] (measured)')
ax.axhline(0, color='grey', lw=0.5)
ax.set(xlabel='distance from the minimum', ylabel=r'$\hat\lambda$',
       title=r'Linear regression at $\gamma=100$: the gradient pulls the estimate down')
ax.legend(fontsize=8);
