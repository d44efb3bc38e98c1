# %% [markdown]
# # Settings that exist at every point
#
# > The SGLD step size from pilot chains' Metropolis acceptance and the localization from the weights' own scale: automatic LLC settings defined at degenerate singularities, checked against exact finite-n targets of normal crossings.

# %%
#| default_exp llc.calibrate

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, math, warnings

import numpy as np
import torch
from torch import nn

from fracsgd.llc.settings import SGLDSettings, default_n_beta
from fracsgd.llc.sgld import SGLDDivergenceError
from fracsgd.llc.result import (ACCEPTANCE_FLAG, DRIFT_LIMIT, ESS_MIN, MIN_RELAXATIONS, REACH_LIMIT, RHAT_LIMIT,
                                LLCResult, Z_INTERVAL)
from fracsgd.llc.estimate import estimate_llc, nan_source
from fracsgd.nets.stack import as_data, where_to_compute


# %% [markdown]
# The curvature rule of the [LLC chapter](llc.html) (`calibrate_at_curvature`) sizes both the step and the
# localization from $h_{max}$, the top eigenvalue of the Hessian of $L_n$ at $w^*$. At the points the LLC exists to
# measure that number can be zero: for $f_w(x) = x\,w_1^2 w_2^2$ at $w^* = 0$ every second derivative vanishes, and
# the rule divides zero by zero. Where the only curvature is the data's noise it is tiny, and the step it gives is
# huge. And a localization $\gamma \propto n\beta\,h_{max}$ grows with $n$, so that as $n$ grows the localization
# wins in every singular direction and the estimate tends to the regular part of $\lambda$
# ([An exact truth at finite n](exact_chain.html)).
#
# This chapter takes both settings from quantities that exist at every point:
#
# * **The localization** is fixed in units of the weights: $\gamma = 1/r^2$ with $r^2$ the mean of $w^{*2}$ plus
#   the mean square of PyTorch's initialisation scale $1/\sqrt{\text{fan-in}}$ (1 for scalars and biases), so that
#   the localizing Gaussian is as wide as the weights themselves, wherever $w^*$ is. Neither $n\beta$ nor the
#   Hessian enters, so estimates at different $n$ share one target family.
# * **The sampler** is chosen by cost. Where a full-batch step is cheap (samples × weights ≤ $10^8$: every small
#   model, and any model on a few thousand samples) the chains are **Metropolis-adjusted** (MALA, the
#   [sampler chapter](sgld.html)'s `metropolis=True`): each Langevin step is accepted or rejected against the exact
#   potential, so the chains sample the localized tempered posterior itself and the step only sets how fast they mix.
#   Elsewhere they are minibatch SGLD, whose bias grows with the step.
# * **The step size** is found by pilot chains: it starts at $0.5/\gamma$, the largest step the localization
#   alone tolerates, and is halved until short chains (four, one relaxation time $1/(\epsilon\gamma)$ long) are
#   accepted by the Metropolis test at least 90% of the time (MALA) or 99.8% of the time (SGLD, where the test is
#   only measured: its acceptance measures the bias where it is met, away from $w^*$ as well as at it).
# * **The estimate acts on its own diagnostics.** `estimate_llc_auto` runs the estimate at the calibrated settings.
#   A run whose own acceptance falls below 0.9 (MALA: the level at which its diagnostics flag the step; 0.85 before
#   2026-12-02, see the suite below) or 0.996 (SGLD), or that backed off from a divergence, is run again at half the
#   step (at most three times), keeping the lengths it had reached. A MALA run is then lengthened, with another
#   seed, until its standard error is at most 2.5% of the estimate and its own diagnostics find it settled (at most
#   three times, 80,000 draws): a run whose chains still drift along flat directions, or whose running estimate still
#   moves, gets twice the burn-in (at least three relaxation times) and twice the draws; one whose chains disagree
#   (R-hat) or has under 100 effective draws gets twice the draws (since 2026-12-02, judged on a
#   [third fresh part](#the-settling-rule-judged-on-a-third-fresh-part)). The standard error it
#   reports is the larger of the batch-means error and the spread of the chains' means, so chains that disagree
#   widen the interval.
#
# Why these numbers. SGLD runs accepted 92% of the time came out 25–70% above their exact targets on normal
# crossings and reduced-rank regressions, runs at 99% up to 42% above, and runs at 99.8% within −2% to +19% (the
# held-out report at the end of this chapter). No acceptance makes an unadjusted sampler exact where the curvature
# varies by orders of magnitude, as it does along a singular valley: a step the average point accepts 99.7% of the
# time still overshoots in the rare stiff places. Metropolis adjustment removes that bias, but a MALA chain whose
# step is too large for a stiff place sticks there (or never enters it), and a finite run then reads low: at a pilot
# acceptance of 60%, three crossings read 4–16% below their targets; at 90% they read within ±3.3%.
# (Measured on the crossings of the table at the end of this chapter, n = 3000, one thread; re-run by setting
# `fracsgd.llc.calibrate.MALA_ACCEPTANCE` and calling `estimate_llc_auto` on `NormalCrossing(p, q)`,
# `crossing_data(3000, 1.0, 7)`, against `crossing_target`.) Those crossings
# are now a tuning set; the default is judged on the held-out part of the [validation suite](llc_suite.html).

# %% [markdown]
# ## Where a non-finite value comes from
#
# A model whose output, loss or gradient is not finite at $w^*$ cannot be sampled, and the error should say which
# of them failed, not that a step size is NaN. `nan_source` (defined in the [LLC chapter](llc.html), whose curvature
# rule uses it too) looks in order at the weights, the output, the loss and the gradient of the mean loss.

# %% [markdown]
# Three small models that each fail in one place: an output that is NaN, a loss that is infinite (a Poisson-like
# loss of a negative rate), and a gradient that is infinite while everything else is finite ($\sqrt{w}$ at $w = 0$):

# %%
class Scaled(nn.Module):
    "f_w(x) = g(w) x for a given function g of one weight."
    def __init__(self, g, w=0.0):
        super().__init__()
        self.g, self.w = g, nn.Parameter(torch.tensor(float(w)))
    def forward(self, x): return self.g(self.w) * x

X1 = torch.randn(50, 1, generator=torch.Generator().manual_seed(0))
y1 = torch.randn(50, 1, generator=torch.Generator().manual_seed(1))
assert nan_source(Scaled(lambda w: w), (X1, y1), 'regression') is None
assert 'output' in nan_source(Scaled(lambda w: w / w), (X1, y1), 'regression')             # 0/0
assert 'loss' in nan_source(Scaled(lambda w: w - 1), (X1, y1), lambda out, y: torch.log(out).squeeze(-1))
assert "gradient" in nan_source(Scaled(torch.sqrt), (X1, y1), 'regression')               # d sqrt(w)/dw at 0
nan_source(Scaled(torch.sqrt), (X1, y1), 'regression')


# %% [markdown]
# ## The localization and the step

# %%
#| export
def weight_scale_localization(model: nn.Module) -> float:
    """γ = 1/r² with r² = mean(w*²) + mean(r0²), r0 = 1/sqrt(fan-in) for a weight of two or more dimensions and 1
    for scalars and biases: a localizing Gaussian as wide as the weights, whether w* is large or at 0."""
    sq, floor, d = 0.0, 0.0, 0
    for p in model.parameters():
        if p.requires_grad:
            fan_in = math.prod(p.shape[1:]) if p.dim() >= 2 else 1
            sq += float(p.detach().double().pow(2).sum())
            floor += p.numel() / fan_in
            d += p.numel()
    if d == 0:
        raise ValueError("the model has no trainable weights to localize")
    return d / (sq + floor)

ACCEPTANCE_TARGET = 0.998      # SGLD pilots' MALA acceptance; at 0.92 (0.99) the LLC was up to +70% (+42%) off
RUN_ACCEPTANCE_MIN = 0.996     # below it an SGLD run is repeated at half its step
MALA_ACCEPTANCE = 0.9          # Metropolis-adjusted pilots: at lower acceptance chains stick where curvature is high
MALA_RUN_MIN = ACCEPTANCE_FLAG # below it a Metropolis-adjusted run is repeated at half its step (0.85 before 2026-12-02)
START_STIFFNESS = 0.5          # first step 0.5/γ: the largest the localization alone allows with a small bias
MAX_HALVINGS = 24              # 2^-24 below the start: curvatures up to ~1e7 γ are reached
PILOT_CHAINS, PILOT_STEPS = 4, (200, 2000)    # pilot chains; pilot length (one relaxation time) clipped to this
BURNIN_RELAXATIONS = DRAW_RELAXATIONS = 3.0   # burn-in and (first) draws, in relaxation times 1/(εγ)
MAIN_STEPS = (1000, 10_000)    # bounds on the burn-in and on the first draws (a capped run is flagged, not hidden)
MAX_RETRIES = 3                # estimate_llc_auto: repeats after a run that fails its own check
PRECISION = 0.025              # MALA: runs are lengthened until the s.e. is at most this fraction of the estimate
MAX_DRAWS = 80_000             # ... but never beyond this many draws per chain
FULL_BATCH_WORK = 1e8          # samples x weights up to which a full-batch step is cheap: the sampler is MALA
PILOT_RULES = dict(n_chains=8, batch_size=500, baseline='paired', systematic=False, localization=None, step_size=None,
                   sampler=None)

def choose_sampler(n: int, n_weights: int) -> str:
    """'mala' (full batch, Metropolis-adjusted: exact at any step) when a full-batch step is cheap, n x d <=
    `FULL_BATCH_WORK`; else 'sgld' (minibatches, no adjustment: a bias that small steps keep small)."""
    return 'mala' if n * n_weights <= FULL_BATCH_WORK else 'sgld'

def with_lengths(s: SGLDSettings, step: float) -> SGLDSettings:
    "`s` at step size `step` (burn-in too), its burn-in and draws counted in relaxation times 1/(step·γ)."
    relax = 1 / (step * s.localization)
    clip = lambda r: int(np.clip(math.ceil(r * relax), *MAIN_STEPS))
    return s.replace(step_size=step, burnin_step_size=step, n_burnin=clip(BURNIN_RELAXATIONS),
                     n_draws=clip(DRAW_RELAXATIONS))

def pilot_acceptance(model: nn.Module, data, loss, settings: SGLDSettings, device=None) -> float:
    "Mean MALA acceptance over the second half of a pilot run at `settings` (0 when it diverges)."
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')              # a pilot's flags are its point, not the user's business
            r = estimate_llc(model, data, loss, settings, device=device)
    except SGLDDivergenceError:
        return 0.0
    t = r.diagnostic_trace
    return float(np.nan_to_num(t[t.step >= settings.n_draws // 2].mala_acceptance.to_numpy(), nan=0.0).mean())

def honest_se(res: LLCResult) -> float:
    "The larger of the batch-means s.e. and the spread of the chains' means over sqrt(chains): chains that disagree widen it."
    per_chain = np.ravel(res.per_chain)
    spread = per_chain.std(ddof=1) / math.sqrt(per_chain.size) if per_chain.size > 1 else float('nan')
    return float(np.nanmax([res.llc_se, spread]))

def interval_multiplier(n_chains: int) -> float:
    """Half-width of the reported interval in `honest_se` units: Student's t with n_chains − 1 degrees of freedom
    at the coverage of ±`Z_INTERVAL` normal s.e. (95.4%). The s.e. is itself estimated, from few chains: 2.43 for 8."""
    from scipy import stats
    level = stats.norm.cdf(Z_INTERVAL)
    return float(stats.t.ppf(level, n_chains - 1)) if n_chains > 1 else float('inf')


# %%
#| export
def calibrate(model: nn.Module, data, loss='classification', *, n_beta: float | None = None, device=None,
              details: bool = False, **rules):
    """Automatic settings for the LLC of `model` at its current weights w*, defined at every point: γ from the
    weights' scale (`weight_scale_localization`), the sampler from the cost of a full-batch step (`choose_sampler`),
    the step from pilot chains' MALA acceptance (`MALA_ACCEPTANCE` for Metropolis-adjusted chains,
    `ACCEPTANCE_TARGET` for SGLD). `PILOT_RULES` are changed by `rules`; a given `localization`, `step_size` or
    `sampler` skips its rule. `details=True` also returns what the pilots did. A non-finite output, loss or gradient
    at w* is refused by name (`nan_source`)."""
    unknown = set(rules) - set(PILOT_RULES)
    if unknown:
        raise ValueError(f"calibrate: unknown rule(s) {sorted(unknown)}; known: {sorted(PILOT_RULES)}")
    a = {**PILOT_RULES, **rules}
    n = len(as_data(data)[0])
    nb = default_n_beta(n) if n_beta is None else float(n_beta)
    where_to_compute([model], data, device, loss)         # a model and data on different devices are refused here
    source = nan_source(model, data, loss)
    if source:
        raise ValueError(f"calibrate: {source} at the weights to sample around, so no step size can be found")
    sampler = a['sampler'] or choose_sampler(n, sum(p.numel() for p in model.parameters() if p.requires_grad))
    if sampler not in ('mala', 'sgld'):
        raise ValueError(f"calibrate: sampler must be 'mala', 'sgld' or None (chosen by cost), got {sampler!r}")
    mala = sampler == 'mala'
    batch = dict(batch_size=None, metropolis=True, baseline='full') if mala else \
        dict(batch_size=a['batch_size'], baseline=a['baseline'])
    target = MALA_ACCEPTANCE if mala else ACCEPTANCE_TARGET
    gamma = float(a['localization'] or weight_scale_localization(model))
    pilot = SGLDSettings(localization=gamma, n_chains=PILOT_CHAINS, n_burnin=0, n_beta=nb, diag_every=2,
                         seed=12345, **{**batch, 'baseline': 'full'})
    step, acc, halvings, log = a['step_size'] or START_STIFFNESS / gamma, float('nan'), 0, []
    while a['step_size'] is None:
        steps = int(np.clip(math.ceil(1 / (step * gamma)), *PILOT_STEPS))
        acc = pilot_acceptance(model, data, loss, pilot.replace(step_size=step, n_draws=steps), device)
        log.append(dict(step_size=step, steps=steps, acceptance=acc))
        if acc >= target or halvings == MAX_HALVINGS:
            break
        step, halvings = step / 2, halvings + 1
    if a['step_size'] is None and not acc >= target:
        warnings.warn(f"calibrate: the pilots' MALA acceptance is {acc:.3f} < {target} after {halvings} "
                      f"halvings (step {step:.3g}); the loss may be non-finite or discontinuous away from w*",
                      stacklevel=2)
    s = with_lengths(SGLDSettings(localization=gamma, n_chains=a['n_chains'], n_beta=nb, on_divergence='backoff',
                                  systematic=a['systematic'], **batch), step)
    return (s, dict(sampler=sampler, localization=gamma, step_size=step, pilot_acceptance=acc, halvings=halvings,
                    pilots=log)) if details else s

def unsettled(d) -> tuple[bool, bool]:
    """(relaxing, unsettled) for a run's diagnostics row `d`. Relaxing: its chains drift along flat directions before
    `MIN_RELAXATIONS` relaxation times, or its running estimate still moves (|drift z| > `DRIFT_LIMIT`). Unsettled:
    relaxing, or its chains disagree (R-hat > `RHAT_LIMIT`), or it has fewer than `ESS_MIN` effective draws. These are
    the estimator's own flags; a NaN diagnostic raises none."""
    relaxing = bool((d.reach_used > REACH_LIMIT and d.relaxations < MIN_RELAXATIONS) or abs(d.drift_z) > DRIFT_LIMIT)
    return relaxing, bool(relaxing or d.rhat > RHAT_LIMIT or d.ess < ESS_MIN)

def lengthened(s: SGLDSettings, d, se_ratio: float) -> SGLDSettings | None:
    """The next, longer MALA run after one at `s` with diagnostics `d` and s.e. `se_ratio` times the precision asked
    for (another seed), or None when it needs none or `MAX_DRAWS` stops it. The draws grow to reach the precision (at
    most 4x). An unsettled run also gets at least twice the draws, and a relaxing one twice the burn-in and at least
    `BURNIN_RELAXATIONS` relaxation times of it (measured by the run: steps / `d.relaxations`)."""
    relaxing, unsettled_run = unsettled(d)
    draws, burnin = s.n_draws * min(4.0, 1.2 * se_ratio ** 2) if se_ratio > 1 else s.n_draws, s.n_burnin
    per_relaxation = s.n_steps / d.relaxations if d.relaxations > 0 else 0.0
    if unsettled_run:
        draws = max(draws, 2 * s.n_draws, MIN_RELAXATIONS * per_relaxation)
    if relaxing:
        burnin = max(2 * s.n_burnin, BURNIN_RELAXATIONS * per_relaxation)
    draws, burnin = int(min(MAX_DRAWS, math.ceil(draws))), int(min(MAX_DRAWS, math.ceil(burnin)))
    if (draws, burnin) == (s.n_draws, s.n_burnin):                 # nothing to add, or `MAX_DRAWS` stops it
        return None
    return s.replace(n_draws=draws, n_burnin=burnin, seed=s.seed + 1)

def estimate_llc_auto(model: nn.Module, data, loss='classification', *, n_beta: float | None = None, device=None,
                      precision: float = PRECISION, **rules) -> tuple[LLCResult, dict]:
    """`estimate_llc` of one model at `calibrate`'s settings, acting on its own diagnostics before it reports.
    Metropolis-adjusted chains sample the posterior exactly, but stick where a step is too large for the curvature:
    a run accepted less than `MALA_RUN_MIN` of the time is repeated at half the step, and one that passes is
    lengthened (`lengthened`: another seed, more draws, and a longer burn-in where it had not settled) until it has
    settled and its s.e. (`honest_se`) is at most `precision` times the estimate, or `MAX_DRAWS` is reached. A halving
    keeps the lengths already reached. An SGLD run that backed off
    from a divergence, or whose MALA acceptance is below `RUN_ACCEPTANCE_MIN`, is repeated at half the step it ended
    with. At most `MAX_RETRIES` halvings and `MAX_RETRIES` lengthenings. The reported s.e. is `honest_se`'s, the
    interval ± `interval_multiplier` of it. Returns the result and what was done."""
    s, done = calibrate(model, data, loss, n_beta=n_beta, device=device, details=True, **rules)
    halvings = longer = 0
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            res = estimate_llc(model, data, loss, s, device=device)
        d, se = res.diagnostics.iloc[0], honest_se(res)
        ended = float(np.nanmin([d.step_size, d.burnin_step_size]))   # the burn-in step is NaN when unset
        too_big = (d.mala_acceptance < MALA_RUN_MIN if s.metropolis
                   else d.mala_acceptance < RUN_ACCEPTANCE_MIN or ended < s.step_size)
        if too_big and halvings < MAX_RETRIES:
            halved = with_lengths(s, ended / 2)                 # a halved step keeps the lengths already reached
            s = halved.replace(n_burnin=max(halved.n_burnin, s.n_burnin), n_draws=max(halved.n_draws, s.n_draws))
            halvings += 1
            continue
        if not s.metropolis or too_big or longer == MAX_RETRIES:
            break
        longer_s = lengthened(s, d, se / (precision * abs(res.llc)) if res.llc else 2.0)
        if longer_s is None:
            break
        s, longer = longer_s, longer + 1
    for w in caught:                                       # the reported run's warnings reach the user
        warnings.warn(w.message, w.category, stacklevel=2)
    half = interval_multiplier(s.n_chains) * se
    res = dataclasses.replace(res, llc_se=se, llc_low=res.llc - half, llc_high=res.llc + half)
    return res, {**done, 'retries': halvings, 'lengthened': longer, 'final_step_size': s.step_size, 'run_acceptance': float(d.mala_acceptance),
                 'batch_means_se': float(d.llc_se), 'n_draws': s.n_draws, 'settings': s}


# %% [markdown]
# ## Exact targets: normal crossings
#
# At finite $n$ the estimator does not target $\lambda$; it targets the expectation, under the localized tempered
# posterior $p(w) \propto \exp(-n\beta L_n(w) - \tfrac\gamma2\lVert w - w^*\rVert^2)$, of
# $n\beta\,(L_n(w) - L_n(w^*))$. For the normal crossing $f_w(x) = x\,w_1^p w_2^q$ (with $w^* = 0$ and
# $\lambda = \min(1/2p, 1/2q)$ over the non-zero exponents) that is a two-dimensional integral, and the loss,
# $L_n(w) - L_n(0) = \tfrac12 S_{xx} u^2 - S_{xy} u$ with $u = w_1^p w_2^q$ (fracsgd's regression loss is half the
# squared error), depends on the data only through two sums. `crossing_target` computes it by quadrature on a
# grid that is fine near 0 (sinh-spaced) and ten prior widths wide.

# %%
#| export
class NormalCrossing(nn.Module):
    "f_w(x) = x · w1^p · w2^q (an exponent 0 leaves its weight unused), both weights at 0: the true parameter."
    def __init__(self, p: int, q: int):
        super().__init__()
        self.p, self.q = p, q
        self.w1, self.w2 = nn.Parameter(torch.zeros(())), nn.Parameter(torch.zeros(()))
    def forward(self, x):
        a = self.w1 ** self.p if self.p else 1 + 0 * self.w1          # 0·w keeps an unused weight in the graph
        b = self.w2 ** self.q if self.q else 1 + 0 * self.w2
        return x * a * b

def crossing_lambda(p: int, q: int) -> float:
    "The learning coefficient of x·w1^p·w2^q at 0: min over the non-zero exponents k of 1/(2k)."
    return min(1 / (2 * k) for k in (p, q) if k)

def crossing_target(p: int, q: int, data, n_beta: float, localization: float, grid: int = 3001,
                    width: float = 10.0) -> float:
    """nβ E[L_n(w) − L_n(0)] under exp(−nβ L_n(w) − γ/2 |w|²) for x·w1^p·w2^q, by quadrature on a sinh-spaced grid
    over [−R, R]², R = `width`/sqrt(γ)."""
    X, y = (t.double().reshape(len(t), -1) for t in as_data(data))
    sxx, sxy = float((X * X).mean()), float((X * y).mean())
    R, a = width / math.sqrt(localization), 6.0
    t = np.linspace(-1, 1, grid)
    w = R * np.sinh(a * t) / np.sinh(a)
    dw = R * a * np.cosh(a * t) / np.sinh(a) * (t[1] - t[0])
    dw[[0, -1]] /= 2                                                   # trapezoid ends
    u = (w[:, None] ** p if p else 1.0) * (w[None, :] ** q if q else 1.0)
    e = n_beta * (sxx * u ** 2 / 2 - sxy * u)
    logp = -e - localization / 2 * (w[:, None] ** 2 + w[None, :] ** 2)
    weight = np.exp(logp - logp.max()) * dw[:, None] * dw[None, :]
    return float((weight * e).sum() / weight.sum())

def crossing_data(n: int, sigma: float = 1.0, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    "x ~ N(0, 1) and y = σ·noise: data whose true parameter is w = 0 for every normal crossing."
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, generator=g), sigma * torch.randn(n, 1, generator=g)


# %% [markdown]
# The quadrature against a closed form: for $p = 1, q = 0$ the posterior of $w_1$ is Gaussian with precision
# $P = n\beta S_{xx} + \gamma$ and mean $\mu = n\beta S_{xy}/P$, and the target is
# $n\beta\,(\tfrac12 S_{xx}(1/P + \mu^2) - S_{xy}\mu)$:

# %%
data_c = crossing_data(1000)
nb_c = default_n_beta(1000)
sxx, sxy = float((data_c[0] ** 2).mean()), float((data_c[0] * data_c[1]).mean())
P = nb_c * sxx + 1.0
mu = nb_c * sxy / P
closed = nb_c * (sxx * (1 / P + mu ** 2) / 2 - sxy * mu)
assert abs(crossing_target(1, 0, data_c, nb_c, 1.0) - closed) < 1e-6 * closed
assert abs(crossing_target(2, 2, data_c, nb_c, 1.0) - crossing_target(2, 2, data_c, nb_c, 1.0, grid=4001, width=14)) < 1e-4
closed, crossing_lambda(1, 0)

# %% [markdown]
# ## At a degenerate point
#
# $x\,w_1^2 w_2^2$ at 0 has a zero Hessian: the curvature rule refuses it (it used to raise a bare
# `ZeroDivisionError`), while `estimate_llc_auto` finds $\gamma = 1$, a step from its pilots, and lands on the exact
# target at that $\gamma$. Two more crossings beside it, one with a zero Hessian and one whose only curvature is a
# single direction:

# %%
from fracsgd.llc.estimate import calibrate_at_curvature
import pandas as pd, time
torch.manual_seed(0)
rows = []
for p, q in [(2, 2), (1, 2), (2, 0)]:
    model = NormalCrossing(p, q)
    try:
        calibrate_at_curvature(model, data_c, 'regression')
        old = 'ran'
    except ValueError as e:
        old = 'refused: zero Hessian' if 'is zero' in str(e) else 'refused'
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')               # every row is flagged as held by the localization: see below
        res, done = estimate_llc_auto(model, data_c, 'regression', precision=0.05)   # 5%: the page runs in seconds
    exact = crossing_target(p, q, data_c, nb_c, done['localization'])
    rows.append(dict(p=p, q=q, lam=crossing_lambda(p, q), curvature_rule=old, sampler=done['sampler'],
                     gamma=done['localization'], step=done['final_step_size'], retries=done['retries'],
                     acceptance=done['run_acceptance'], draws=done['n_draws'], llc=res.llc, se=res.llc_se, exact=exact,
                     seconds=time.perf_counter() - t0))
demo = pd.DataFrame(rows).assign(rel_error=lambda d: d.llc / d.exact - 1)
assert (demo.sampler == 'mala').all() and (abs(demo.llc - demo.exact) <= 3 * demo.se).all()
assert (demo.acceptance >= MALA_RUN_MIN).all() or (demo.retries == MAX_RETRIES).any()
demo.round(4)

# %% [markdown]
# The exact targets are not $\lambda$: at $\gamma = 1$ they lie between 0.5 and 1.15 times it (this table and the
# held-out one below), part finite-$\gamma$, part the data's noise ($w^* = 0$ is the truth, not the minimum of $L_n$). An estimate that matches its target is
# a correct sampler, not yet an estimate of $\lambda$; the [exact chain chapter](exact_chain.html) follows the
# target towards $\lambda$ as $n$ grows. The estimator's reach warning ("localization holds the chains") fires on
# nearly every row here: at a fixed, weak $\gamma$ and a degenerate point that is what the chains do, and it is no
# longer a sign of a wrong setting.
#
# **Cost.** A MALA run costs what an SGLD run of the same length does on the full batch (the accept/reject test
# reuses the next step's loss and gradient), but its step is 8–60 times larger than the 99.8% SGLD step on these
# crossings, so it relaxes in fewer steps; the lengthening to a 2.5% standard error then decides the cost: 2,000–64,000
# draws per chain here, 20–60 s on one CPU thread. The full batch is what makes it dear at large $n$: on the suite
# below, one case at $n = 10{,}000$ (48 weights) took 46 min on its full data. What one estimate costs on the MNIST
# MLP and on a depth-6 network, beside the curvature rule and devinterp, is on the
# [benchmarks page](bench_llc.html).

# %% [markdown]
# ## Held out: the SGLD rule this chapter first shipped
#
# Before the Metropolis adjustment, the default was minibatch SGLD at a 99.8% pilot acceptance. That constant and
# the lengths were chosen on nine crossings and three reduced-rank regressions, all at $n = 1000$.
# `tools/calibrate_heldout.py` ran that rule on eleven cases it never saw: six crossings at $n = 3000$ (another data
# seed), two at $n = 1000$ with noise $\sigma = 0.5$, and three reduced-rank regressions $y = BAx$ fitted to noise at
# $n = 3000$, whose exact target at the chosen $\gamma$ comes from 64 full-batch Metropolis-adjusted chains
# (standard error ≤ 0.7% of the target). The standard error `se` is the larger of the estimator's and the chains'
# spread; the old curvature rule's outcome is beside each row. Measured 2026-11-28 on this 2-core machine, one
# thread, 7 min in all. It is kept as the record of why the default changed (and it is what `sampler='sgld'` still
# does on large models); the crossings in it were then used to choose MALA's acceptance, so they are no longer
# held out for the new default:

# %%
from fracsgd.core import committed_dir
held = pd.read_csv(committed_dir('llc_validation', 'calibrate_heldout.csv'))
cols = ['kind', 'shape', 'n', 'sigma', 'lam', 'gamma', 'retries', 'run_acceptance', 'exact', 'llc', 'se', 'rel_error',
        'z', 'old_outcome']
score = dict(rows=len(held), mean_abs_error=held.rel_error.abs().mean(), worst=held.rel_error.abs().max(),
             signed_mean=held.rel_error.mean(), covered_2se=int(held.covered.sum()),
             old_rule_ran=int(held.old_llc.notna().sum()))
assert score['rows'] == 11 and score['worst'] > 0.08 and score['covered_2se'] == 9     # what the prose below says
print(score)
held[cols].round(4)

# %% [markdown]
# On these cases the SGLD rule's mean |error| against the exact target is 6.0%, the worst +19% (the crossing (3,1),
# whose mirror (1,3) on the same data, with the same target, read +4%), and ±2 se covers the target on 9 of 11 rows.
# The errors lean high: 10 of 11 are above their target, the sign of a sampler wider than its target. The runs that
# only just cleared the 0.996 re-run check were the most biased (acceptance 0.9961–0.9969: +6% to +19%): a mean
# acceptance hides the rare stiff places where the bias is made. That is why the default is now Metropolis-adjusted
# wherever a full-batch step is affordable. The old curvature rule ran on 4 of these 11 cases; on the six crossings
# with a zero Hessian it is refused.

# %% [markdown]
# ## Held out: the validation suite
#
# The Metropolis-adjusted default on the [validation suite](llc_suite.html): cases split into a tuning and a
# held-out part before any tuning, exact targets by quadrature or an independent Gibbs + MALA sampler at the γ the
# default chooses. `tools/suite_estimates.py` runs `estimate_llc_auto` on each case as a user would, with one
# difference in what it is fed: `equivalent_data`, a few rows with the same loss at every weight (every suite model
# is linear in $x$ with squared error; $n\beta$ is passed from the original $n$), so the posterior and every choice
# the default makes are the same while a step costs the model on ≤ 10 rows instead of up to 30,000. Measured
# 2026-11-28 (full data) and 2026-11-29 (equivalent data) on this 2-core machine, one thread per process.

# %%
from fracsgd.llc.suite import suite_cases, fresh_cases, fresh3_cases
est = pd.read_csv(committed_dir('llc_validation', 'suite_estimates.csv'))
eq = est[est.data == 'equivalent'].copy()
# every row judged by today's interval, +- interval_multiplier(chains) x s.e. (rows written before 2026-11-29
# carry `covered` at +-2 s.e., the first rule: kept as covered_2se)
eq['covered_2se'] = (eq.llc - eq.target).abs() <= 2 * eq.se
eq['half_width'] = [interval_multiplier(int(c)) * se for c, se in zip(eq.n_chains, eq.se)]
eq['covered'] = (eq.llc - eq.target).abs() <= eq.half_width
eq['rel_width'] = 2 * eq.half_width / eq.target

def suite_score(t):
    return pd.Series(dict(rows=len(t), mean_abs_error=t.rel_error.abs().mean(), worst=t.rel_error.abs().max(),
                          covered=t.covered.mean(), covered_2se=t.covered_2se.mean(),
                          median_full_width=t.rel_width.median(), flagged=int(t.flagged.sum()),
                          cpu_minutes=t.seconds.sum() / 60))
scores = eq.groupby('part').apply(suite_score).T[['tune', 'held-out', 'fresh']]
held_eq = eq[eq.part == 'held-out']
assert set(held_eq.case) == set(suite_cases().query("part == 'held-out'").case)      # every held-out row ran
assert set(eq[eq.part == 'fresh'].case) == set(fresh_cases().case)                    # every fresh row ran
h = scores['held-out']
assert h.rows == 18 and h.mean_abs_error < 0.03 and h.worst < 0.08 and round(h.covered_2se * 18) == 15 and h.median_full_width < 0.12
scores.round(4)

# %% [markdown]
# Every row as the estimate's error against its exact target, with the reported interval:

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(10, 4.5))
order = eq.sort_values(['part', 'kind', 'n']).reset_index(drop=True)
colours = {'tune': 'C7', 'held-out': 'C0', 'fresh': 'C1'}
for i, r in order.iterrows():
    c = colours[r.part]
    ax.errorbar(i, 100 * r.rel_error, yerr=100 * r.half_width / r.target, fmt='o', color=c,
                mfc=c if r.covered else 'white', ms=4, capsize=2)
ax.axhline(0, color='k', lw=0.8)
for lim in (-8, 8):
    ax.axhline(lim, color='C3', lw=0.6, ls=':')
ax.set_xticks(range(len(order)), order.case, rotation=90, fontsize=5)
ax.set(ylabel='estimate / exact target − 1 (%)',
       title='Automatic LLC on the suite: tuning (grey), held out (blue), fresh (orange); open: interval misses')
plt.tight_layout()

# %% [markdown]
# **Fed all n rows or the equivalent few, the estimator agrees.** The 13 held-out rows first run on their full data
# (2026-11-28, before `equivalent_data` existed; the five costliest did not finish then) against the same rows on
# equivalent data, same seeds: the difference in units of the two standard errors combined.

# %%
full = est[est.data == 'full'].set_index('case')
both = full[['llc', 'se', 'seconds']].join(eq.set_index('case')[['llc', 'se', 'seconds']], rsuffix='_eq', how='inner')
both['z'] = (both.llc_eq - both.llc) / np.hypot(both.se, both.se_eq)
both['speed_up'] = both.seconds / both.seconds_eq
assert len(both) == 13 and (both.z.abs() < 3).all()
both.round(3)

# %% [markdown]
# The 13 rows run both ways agree within |z| ≤ 2.05 (all under 3). The larger differences are where the two runs'
# re-runs and lengthenings diverged, e.g. `dln-2-2-4-4-5-r1`: −3.5% on full data, +2.2% on equivalent. The two
# sets of timings were taken under different loads, so the speed-up column is indicative only. It is largest
# where n × weights is largest (15× at n = 10,000 with 48 weights).

# %% [markdown]
# **What the suite says**, part by part (the scores at the start of this section; their CPU minutes were taken under very different loads):
#
# * **First look at the held-out part, at ±2 s.e.: coverage failed.** Mean |error| 2.2% (goal ≤ 3%), worst 7.6%
#   (goal ≤ 8%, the depth-7 scalar-width network `dln-2-2-2-2-2-2-2-2-r1` at n = 30,000), median width 8.6%, but
#   the interval covered the target on 15 of 18 rows (83%, goal ≥ 90%). All three misses were low, just outside
#   ±2 s.e. (z ≈ −2.0 to −2.2). No estimate raised an exception.
# * **The rule changed: Student's t.** The s.e. is itself estimated from 8 chains (the larger of the batch-means
#   error and the chains' spread), so a ±2 s.e. interval is too narrow by the t factor. `interval_multiplier` uses
#   t with chains − 1 degrees of freedom at the same 95.4%, which is 2.43 for 8 chains. This is a textbook correction, not a fitted
#   one. On the tuning part it raises coverage from 16 to 18 of 21. On the held-out part, a second look, it covers
#   18 of 18, but that part can no longer judge it, because its three misses were seen first.
# * **Judged on a fresh part: coverage met, worst error not.** 26 new cases (new seeds, shapes and noise; targets
#   as before) were run once with the new rule. Coverage is 24 of 26 (92%) at a median width of 9.2%, and mean |error| is 2.6%.
#   The worst is −10.1% (`fresh-dln-2-3-2-3-2-3-r1`, depth 5, n = 10,000), beyond the 8% goal, and the depth-5 scalar
#   chain reads −7.3%. Both misses are low, at z = −5.1 and −4.1, and both runs are flagged.
# * **The lean is low, and it is a bias, not noise.** 18 of 26 fresh errors, 10 of 18 held out and 14 of 21 tuning
#   are below the target. A probe on the tuning case `chain-d6` (table below) shows where it comes from. At the
#   default burn-in its 8 chains read 0.126–0.153 (estimate −4.0%, s.e. 2.6%). At 10× the burn-in, one chain reads
#   0.263 and the others 0.119–0.144 (estimate +1.9%, s.e. 12%). The energy makes rare, large excursions, and
#   short runs from w* under-sample them. The typical estimate then falls below the mean, and its interval is
#   too narrow on the low side. The relaxation time the lengths are counted in, 1/(εγ), is not the slowest time
#   of these posteriors. The next step is a burn-in judged by the chains themselves, e.g. started over-dispersed
#   and run until R-hat falls. That would be tuned on the tuning part and judged on yet another fresh part.

# %%
probe = pd.read_csv(committed_dir('llc_validation', 'burnin_probe.csv'))
assert list(probe.burnin_factor) == [1, 10] and probe.rel_error.iloc[0] < -0.03 and abs(probe.rel_error.iloc[1]) < 0.03
assert probe.se.iloc[1] > 4 * probe.se.iloc[0]
fr = eq[eq.part == 'fresh']
assert len(fr) == 26 and fr.covered.sum() == 24 and fr.rel_error.abs().mean() < 0.03 and fr.rel_error.abs().max() > 0.08
assert (fr.rel_error < 0).sum() == 18 and scores.loc['covered', 'tune'] * 21 == 18 and held_eq.covered.all()
probe[['case', 'n_burnin', 'n_draws', 'llc', 'se', 'target', 'rel_error', 'chain_means', 'seconds']].round(4)

# %% [markdown]
# ## The acceptance rule, judged on a second fresh part
#
# The two worst fresh rows ran at a Metropolis acceptance of 0.871 and 0.891. Their own diagnostics flagged the step
# as too large (below 0.9), yet the rule repeated a run only below 0.85, so each was reported with its own flag. Item
# 1 of the rule asks that a flagged step be made smaller before the estimate is reported, so the threshold is now the
# flag's (`ACCEPTANCE_FLAG`, one constant for both). Nothing was fitted: the run lengths stay counted in relaxation
# times, so a halved step runs twice the steps. The change is judged twice. First, on the [suite's second fresh
# part](llc_suite.html), 17 cases defined before any ran (chains, matrix chains, five new networks, three new
# reduced-rank regressions; no crossings). Second, as a second look, on the seen held-out and fresh rows whose run
# fell between 0.85 and 0.9: the only rows whose run the change repeats. Both were run on 2026-12-02, on this 2-core
# machine, one thread per process, while an MNIST run shared it (`tools/suite_estimates.py --part fresh2` and
# `--part gap`, written to their own table).

# %%
RULE_ESTIMATES = committed_dir('llc_validation', 'suite_estimates_repeat_flagged.csv')
def judged(t):
    "The rows on equivalent data with today's interval, as in the first table of this section."
    t = t[t.data == 'equivalent'].copy()
    t['half_width'] = [interval_multiplier(int(c)) * se for c, se in zip(t.n_chains, t.se)]
    t['covered'], t['covered_2se'] = (t.llc - t.target).abs() <= t.half_width, (t.llc - t.target).abs() <= 2 * t.se
    t['rel_width'] = 2 * t.half_width / t.target
    return t
rule = judged(pd.read_csv(RULE_ESTIMATES)) if RULE_ESTIMATES.exists() else eq.iloc[:0]
f2, gap = rule[rule.part == 'fresh2'], rule[rule.part != 'fresh2']
before = eq.drop_duplicates('case', keep='last').set_index('case')
repeated = gap.set_index('case')[['part', 'n', 'acceptance', 'halvings', 'rel_error', 'covered', 'seconds']].merge(
    before[['acceptance', 'halvings', 'rel_error', 'covered', 'seconds']], left_index=True, right_index=True,
    suffixes=('', '_before'))
today = {}                                   # the seen parts under today's rule: repeated rows replaced, others as run
for part in ('held-out', 'fresh'):
    rows = eq[eq.part == part].drop_duplicates('case', keep='last')
    today[f'{part} (second look)'] = suite_score(pd.concat([rows[~rows.case.isin(gap.case)], gap[gap.part == part]]))
rule_scores = pd.DataFrame({'fresh2': suite_score(f2), **today}) if len(rule) else pd.DataFrame()
display(rule_scores.round(4))
repeated[['part', 'acceptance_before', 'acceptance', 'rel_error_before', 'rel_error', 'covered']].rename(columns=dict(
    acceptance_before='acc. old', acceptance='acc. new', rel_error_before='error old', rel_error='error new')).round(3)

# %% [markdown]
# **What the acceptance rule changed.**
#
# * **On the second fresh part, the goals on error hold and coverage does not.** Mean |error| is 2.7% (goal
#   ≤ 3%) and the worst is −7.6% (`fresh2-dln-2-2-2-2-2-2-r1`, depth 5, n = 30,000; goal ≤ 8%). The median full
#   width is 9.6% (goal ≤ 12%). The interval covers 14 of 17 rows (82%, goal ≥ 90%). All three misses are low:
#   the depth-7 chain at −3.8% with a narrow interval, a reduced-rank regression at −5.1%, and a depth-4 network at
#   −6.6%. 14 of the 17 errors are below the target: the same low lean as before, which a smaller step does not
#   remove. One run hit the limit of three halvings and is reported at acceptance 0.873, flagged.
# * **On the 13 seen rows it repeats, the step is halved once to three times** and every repeated run is accepted
#   0.92–0.98 of the time. Mean |error| falls from 3.2% to 2.6%. The worst fresh row moves from −10.1% to −5.7%,
#   still outside its interval, and the depth-5 chain from −7.3% to −2.9%. One row gets worse: `chain-d4`
#   (n = 30,000) moves from −4.7% to +14.3%, inside a wide interval: its reported run has only 1,536 draws and an
#   s.e. of 8.8% (next point). So, on a second look, the held-out part's worst row is now +14.3%, against −7.6%
#   before.
# * **A defect this exposed, fixed in the next section.** In `estimate_llc_auto` a halving reset the draws to the
#   relaxation-time count, so a halving after a lengthening throws the lengthening away, and once three
#   lengthenings are spent the short run is reported. Two rows end this way (`chain-d4`, and `fresh2-chain-d2` at
#   10,000 draws, −4.4%). Keeping the draws across a halving is the repair; it changes the rule again, so it was
#   judged on a part of the suite nobody had seen (next section).
# * **Cost.** The 13 repeated rows took 37 CPU minutes, as before (the first runs were timed under other loads).
#
# The acceptance rule was a defect: the estimator reported runs its own check had flagged. Fixing it brings the
# worst rows closer, but it does not meet the coverage goal on cases it has not seen. What remains is the bias
# of short runs started at $w^*$, described above.

# %%
if len(rule):
    f2s, seen_h = rule_scores['fresh2'], rule_scores['held-out (second look)']
    assert f2s.rows == 17 and f2s.mean_abs_error < 0.03 and 0.07 < f2s.worst < 0.08 and round(f2s.covered * 17) == 14
    assert f2s.median_full_width < 0.12 and (f2.rel_error < 0).sum() == 14 and (f2[~f2.covered].rel_error < 0).all()
    assert len(repeated) == 13 and (repeated.acceptance >= 0.9).all() and (repeated.halvings > repeated.halvings_before).all()
    assert repeated.rel_error.abs().mean() < repeated.rel_error_before.abs().mean()
    assert 0.14 < repeated.loc['chain-d4', 'rel_error'] < 0.15 and 0.14 < seen_h.worst < 0.15
    assert (f2.acceptance < 0.9).sum() == 1 and f2[f2.acceptance < 0.9].halvings.iloc[0] == 3
    reset = rule[(rule.lengthened == 3) & (rule.n_draws == rule.n_burnin) & (rule.halvings > 0)]   # the defect
    assert set(reset.case) == {'chain-d4', 'fresh2-chain-d2'} and reset.set_index('case').n_draws['chain-d4'] == 1536

# %% [markdown]
# ## The settling rule, judged on a third fresh part
#
# Two of the second fresh part's three misses (`fresh2-dln-3-3-2-3-3-r1`, −6.6%) and the first fresh part's worst
# row (`fresh-dln-2-3-2-3-2-3-r1`, −5.7% on the second look) were networks whose own diagnostics said the chains had
# not settled: they still drifted along flat directions after 1.2 and 2.4 relaxation times (fewer than the 2.5 the
# diagnostic asks for), and one's running estimate was still falling (z = −5.2). Both runs had reached the 2.5%
# precision at once, so the rule never lengthened them. `lengthened` now acts on these flags as well: a run that is
# still relaxing gets twice the burn-in (at least three relaxation times, counted by the run itself) and at least
# 2.5 relaxation times of draws, and one whose chains disagree or have under 100 effective draws gets twice the
# draws. A halving now keeps the lengths already reached, which repairs the defect above. Every threshold is the
# diagnostics' own; nothing was fitted. The rule was judged once, on the suite's [third fresh part](llc_suite.html):
# 13 cases defined before any ran (five new networks, four crossings at sample sizes and noise not paired with them
# before, four new reduced-rank regressions; no chains, whose every depth and sample size an earlier part had used).
# It ran on 2026-12-02 on this 2-core machine, two single-threaded processes beside an MNIST run
# (`tools/suite_estimates.py --part fresh3`).

# %%
SETTLED = committed_dir('llc_validation', 'suite_estimates_settled.csv')
settled = judged(pd.read_csv(SETTLED)) if SETTLED.exists() else eq.iloc[:0]
if len(settled):
    s3 = suite_score(settled)
    assert s3.rows == 13 and set(settled.case) == set(fresh3_cases().case) and settled.settling.all()
    assert s3.mean_abs_error < 0.02 and s3.worst < 0.04 and s3.covered == 1 and s3.median_full_width < 0.11
    assert (settled.rel_error < 0).sum() == 6
    display(s3.to_frame('fresh3').round(4))
settled[['case', 'n', 'halvings', 'lengthened', 'n_burnin', 'n_draws', 'rel_error', 'covered', 'rel_width']].rename(
    columns=dict(halvings='halved', lengthened='longer', rel_error='error', rel_width='width')).round(3)

# %% [markdown]
# **What the settling rule gave on cases nobody had seen.** All 13 intervals cover their exact target (goal ≥ 90%),
# at a median full width of 10.0% (goal ≤ 12%). Mean |error| is 1.7% (goal ≤ 3%) and the worst is +3.9%, a normal
# crossing (goal ≤ 8%). No estimate raised an exception. The low lean is gone on this part: 6 of 13 errors are low.
# Three of the five networks were lengthened past the old cap of 10,000 burn-in steps (to 24,576–80,000), and
# `fresh3-dln-3-2-2-2-2-3-r1` reached the 80,000-draw limit with a width of 22%, so the limit, not the rule, set
# its interval. The cost is the lengthening: 41 CPU minutes for the 13 rows, the networks 2–9 minutes each.
# Three caveats. This part is small, and 13 of 13 is consistent with a true coverage well below 100% (the 95% lower
# Clopper–Pearson bound is 75%). It has no scalar or 2×2 chains, where the halving defect showed. And the seen rows
# were not re-run under this rule, so their tables above are still the earlier rules'.

# %% [markdown]
# ## devinterp on the same rows
#
# devinterp 2.0.1's `llc()` has no automatic setting and no Metropolis test. At the step our default ends with,
# its unadjusted chains diverge: on `crossing-21` the estimate was infinite. `tools/suite_devinterp.py` therefore
# gives it the settings of our rule for unadjusted chains, `calibrate(..., sampler='sgld')`: the step from pilots
# at 99.8% acceptance, with $n\beta$, γ, chains, burn-in and draws. It runs on the same equivalent data in one full
# batch, through `fracsgd.llc.depth.devinterp_llc`. Its s.e. is the spread of its chains' means. All 18 held-out
# rows were run, single-threaded, 1–49 min each:

# %%
dev_path = committed_dir('llc_validation', 'suite_devinterp.csv')
dev = pd.read_csv(dev_path) if dev_path.exists() else pd.DataFrame()
if len(dev):
    dev_score = dict(rows=len(dev), of=len(held_eq), devinterp_mean_abs_error=dev.rel_error.abs().mean(),
                     ours_mean_abs_error=dev.ours_rel_error.abs().mean(), devinterp_covered=int(dev.covered.sum()))
    nets = dev.kind == 'dln'
    assert len(dev) == len(held_eq) == 18 and dev[~nets].covered.all() and dev[~nets].rel_error.abs().max() < 0.09
    assert nets.sum() == 7 and (dev[nets].rel_error < 0).all() and (~dev[nets].covered).sum() == 6
    assert dev.ours_rel_error.abs().max() < 0.08
    print(dev_score)
dev[['case', 'n', 'target', 'llc', 'se', 'rel_error', 'z', 'covered', 'ours', 'ours_rel_error', 'step',
     'n_draws']].round(4) if len(dev) else 'not run yet: python tools/suite_devinterp.py'

# %% [markdown]
# On the 11 held-out rows that are not networks (crossings, chains, a 2×2 matrix chain, reduced-rank regressions),
# devinterp given our unadjusted rule's settings lands between −3.9% and +8.9% of the exact target, and its
# intervals cover all 11. On the seven deep linear networks it is low every time, by 0.2% to 21.9% (mean 12.3%),
# and its interval misses the target on six of them. Our adjusted default on the same 18 rows is within 7.6% everywhere
# (mean |error| 2.2% against devinterp's 6.3%). We have not found the cause of the networks' low lean. It does not
# follow the burn-in: devinterp's step × burn-in, against ours, is 0.13–0.81 on the networks and 0.19–1.0 on the
# rows it gets right. A discretisation bias of the unadjusted chain, which no Metropolis test corrects, is one
# candidate that we did not test. The comparison costs: devinterp took 1–49 min a row here (the 49 min row is
# `crossing-10`, 20,000 steps of 8 chains), our default 0.3–11 min.

# %%
#| hide
import nbdev; nbdev.nbdev_export()
