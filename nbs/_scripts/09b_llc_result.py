# %% [markdown]
# # The LLC's result
#
# > What `estimate_llc` returns and how its numbers are made from the draws: the Monte-Carlo error, the chains' statistics and diagnostics, the problems in words, and the localization's systematic error folded into the interval.

# %%
#| default_exp llc.result

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses, math, re, warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from fracsgd.llc.settings import SGLDSettings
from fracsgd.llc.sgld import SGLDRun
from fracsgd.llc.criticality import criticality_problem, gradient_pull_bound


# %% [markdown]
# The [LLC chapter](llc.html) samples the localized tempered posterior and hands the draws to this chapter, which
# turns them into an `LLCResult`. Nothing here samples: each function takes numbers (draws, baselines,
# two estimates at two localizations) and is checked on numbers whose answer is known.
#

# %% [markdown]
# ## Monte-Carlo error
#
# Successive SGLD draws are correlated, so the naive standard error $s/\sqrt{N}$ is too small. `batch_means_se`
# splits each chain into $\lfloor\sqrt N\rfloor$ consecutive batches; the variance of the batch means estimates
# the variance of the chain mean, and the chains are independent. The effective sample size is the pooled
# variance over the squared error. Below it is checked on an AR(1) process, whose long-run variance
# $\sigma^2/(1-\phi)^2$ is known exactly.

# %%
#| export
def batch_means_se(x: np.ndarray) -> tuple[float, float]:
    """Monte-Carlo standard error of the mean of correlated chains `x` [chains, draws] by batch means,
    and the effective sample size (ESS)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    C, N = x.shape
    n_batches = max(int(math.isqrt(N)), 1)
    size = N // n_batches
    if size < 1 or n_batches < 2:
        return float('nan'), float('nan')
    means = x[:, :n_batches * size].reshape(C, n_batches, size).mean(-1)      # [chains, batches]
    var_of_mean = means.var(axis=1, ddof=1) / n_batches                      # [chains]
    se = math.sqrt(var_of_mean.sum()) / C
    s2 = x.var(ddof=1) if x.size > 1 else float('nan')
    return se, (s2 / se**2 if se > 0 else float('inf'))


# %%
rng = np.random.default_rng(0)
phi, C, N = 0.9, 8, 20_000
ar = np.zeros((C, N))
e = rng.normal(size=(C, N))
for t in range(1, N):
    ar[:, t] = phi * ar[:, t - 1] + e[:, t]
se, ess = batch_means_se(ar)
exact = math.sqrt(1 / (1 - phi)**2 / (C * N))        # long-run variance sigma^2/(1-phi)^2, sigma = 1
# batch means with 141 batches/chain: ~10% relative precision
assert abs(se / exact - 1) < 0.15, (se, exact)
assert abs(ess / (C * N * (1 - phi) / (1 + phi)) - 1) < 0.3
se, exact, ess


# %% [markdown]
# ## From draws to an estimate
#
# For each model, the draws of its chains become per-draw LLC values $n\beta\,(L_B(w_t) - L_n(w^*))$ (or
# $n\beta\,(L_B(w_t) - L_B(w^*))$ with the paired baseline); `chain_statistics` reduces them to the estimate,
# its standard error, the spread between chains, a drift test (the mean of the second half of the draws against
# the first, in standard errors), and ArviZ's rank-normalized $\hat R$ and bulk effective sample size across
# chains (`arviz.rhat`, `arviz.ess` on the `[chain, draw]` array; Vehtari et al. 2021).

# %%
#| export
def _arviz():
    "ArviZ, imported on first use with its import-time FutureWarning silenced."
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', FutureWarning)
        import arviz
    return arviz

def chain_statistics(values: np.ndarray) -> dict:
    """Estimate, standard error, between-chain sd, half-to-half drift, R-hat and ESS (ArviZ)
    of per-draw LLCs [chains, draws]."""
    per_chain = values.mean(-1)                                              # [chains]
    se, _ = batch_means_se(values)
    half = values.shape[-1] // 2
    first, second = values[:, :half].mean(), values[:, half:].mean()
    drift_z = (second - first) / (2 * se) if half and se > 0 else float('nan')
    spread = per_chain.std(ddof=1) if len(per_chain) > 1 else float('nan')
    az, ok = _arviz(), values.shape[0] > 1 and values.shape[1] >= 4 and np.isfinite(values).all()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                                   # constant chains: R-hat is nan
        rhat = float(az.rhat(values)) if ok else float('nan')
        ess = float(az.ess(values)) if values.shape[1] >= 4 and np.isfinite(values).all() else float('nan')
    return dict(llc=per_chain.mean(), llc_se=se, ess=ess, rhat=rhat, between_chain_sd=spread,
                llc_first_half=first, llc_second_half=second, drift_z=drift_z)


# %% [markdown]
# ### What the numbers say, in words
#
# `llc_problems` turns the numbers into plain warnings, each naming its cure:
#
# * a **negative** LLC means $w^*$ is not a local minimum or the chain found lower loss (Lau et al. app. H.3); a
#   **non-finite** one means divergence;
# * a mean MALA acceptance **below 0.9** means the step is too large;
# * **drift along the singular set.** Around a singular $w^*$ the loss is flat, to second order, along whole
#   directions; there only the localization holds the chains, and its reach is $1/\sqrt\gamma$ per direction.
#   Chains that wander that far reach less singular points, whose local $\lambda$ is larger, and the estimate
#   rises with them. The **reach used**, $u=\gamma\,\overline{\|w_t-w^*\|^2}/d$, is 1 for chains held by the
#   localization alone and near 0 for chains held by the likelihood. Directions held by $\gamma$ alone relax in
#   $1/(\epsilon\gamma)$ steps, so a run of $T$ steps covers $\epsilon\gamma T$ **relaxation times**; with
#   fewer than `MIN_RELAXATIONS` and a reach used above `REACH_LIMIT`, the chains are still drifting outwards
#   along the flat directions, and the cure is a larger localization (or more steps). Relaxed chains with a reach
#   used above `REACH_HIGH` are held by the localization in most directions: the estimate then depends on
#   $\gamma$, in a direction the chains cannot tell, and `localization_sweep` (in the
#   [localization chapter](localization.html)) shows by how much; the `systematic` setting (same chapter)
#   measures it with every estimate, and then this warning is left out;
# * a running estimate whose halves differ by more than 3 standard errors is **not stationary**: rising with a
#   large reach used is the drift above (increase localization), otherwise the chains are still relaxing
#   (longer burn-in);
# * $\hat R$ above 1.05 (the chains disagree) or a bulk ESS below 100 (too few effective draws) mean the chains
#   have not mixed: longer burn-in and more draws.
#
# The two limits were set on the tuning part of the [validation set](llc_validation.html), where every estimate
# off by more than 15% was caught by one of these checks, and kept fixed for the held-out part.
#
# A study that estimates many LLCs keeps each `problems` text; `problem_counts` says how many estimates have each
# kind of problem (the clause's words without its numbers), so a page can say why its estimates were flagged,
# not only how many.

# %%
#| export
REACH_LIMIT = 0.05          # reach used gamma*|w - w*|^2/d above which chains drift along the singular set
RHAT_LIMIT, ESS_MIN = 1.05, 100
DRIFT_LIMIT = 3.0           # |z| of the half-to-half drift above which a running estimate is not stationary
ACCEPTANCE_FLAG = 0.9       # MALA acceptance below which a step is flagged as too large (and the automatic rule repeats it)
MIN_RELAXATIONS = 2.5       # epsilon*gamma*steps below which directions held only by gamma have not relaxed
REACH_HIGH = 0.3            # reach used above which relaxed chains are held mostly by the localization

def reach_used(sq_distance: float, localization: float, n_params: int) -> float:
    "gamma * mean |w - w*|^2 / d: 1 for chains held by the localization alone, ~0 when the likelihood holds them."
    return localization * sq_distance / n_params if n_params else float('nan')

def llc_problems(llc: float, se: float, acceptance: float, drift_z: float, rhat: float = float('nan'),
                 ess: float = float('nan'), reach: float = float('nan'),
                 relaxations: float = float('inf'), localization_measured: bool = False) -> str:
    """What is wrong with an estimate and what to do about it, in words ('' when nothing is).
    `reach`: gamma*|w - w*|^2/d; `relaxations`: step_size * localization * steps; `localization_measured`: the
    estimate was repeated at a stronger localization (`systematic`), which measures what the reach warns of."""
    out = []
    far = np.isfinite(reach) and reach > REACH_LIMIT and relaxations < MIN_RELAXATIONS
    if not np.isfinite(llc):
        out.append('non-finite LLC: the chain or the baseline is not finite (diverging SGLD?)')
    elif llc < 0:
        out.append('negative LLC: w* is not a local minimum of the loss, or the chain found lower loss '
                   '(train longer; smaller step_size or larger localization)')
    if np.isfinite(acceptance) and acceptance < ACCEPTANCE_FLAG:
        out.append(f'MALA acceptance {acceptance:.3f} < {ACCEPTANCE_FLAG:g}: step_size too large (discretization error)')
    if far:
        out.append(f'chains drift along flat directions held only by the localization (reach used '
                   f'{reach:.2f} > {REACH_LIMIT} after {relaxations:.2g} < {MIN_RELAXATIONS:g} relaxation times '
                   f'1/(step_size*localization)): increase localization, or run >= {MIN_RELAXATIONS:g} relaxation times')
    elif np.isfinite(reach) and reach > REACH_HIGH and not localization_measured:
        out.append(f'the localization, not the likelihood, holds the chains in most directions (reach used '
                   f'{reach:.2f} > {REACH_HIGH}): the estimate may depend on the localization; check with '
                   f'localization_sensitivity, or compare several with localization_sweep')
    if np.isfinite(drift_z) and abs(drift_z) > DRIFT_LIMIT:
        way = 'rising' if drift_z > 0 else 'falling'
        cure = ('increase localization (the chains drift away from w*)' if far and drift_z > 0
                else 'longer burn-in (the chains are still relaxing)')
        out.append(f'running estimate still {way} (z = {drift_z:.1f}): not stationary; {cure}')
    if np.isfinite(rhat) and rhat > RHAT_LIMIT:
        out.append(f'R-hat {rhat:.3f} > {RHAT_LIMIT}: the chains disagree; longer burn-in and more draws'
                   + (', or increase localization' if far else ''))
    if np.isfinite(ess) and ess < ESS_MIN:
        out.append(f'ESS {ess:.0f} < {ESS_MIN}: too few effective draws; more draws')
    return '; '.join(out)

# how each problem in a `problems` text begins (its advice may itself hold '; ', so '; ' alone does not split them)
_PROBLEM_START = re.compile(r'; (?=non-finite LLC|negative LLC|MALA acceptance|chains drift|the localization, not|'
                            r'running estimate still|R-hat|ESS|not near a minimum|at \S+ x the localization|'
                            r'the estimate depends on the localization)')

def problem_clauses(problems: str) -> list[str]:
    "The problems of a diagnostics `problems` text one by one (the inverse of its '; ' join)."
    return [p for p in _PROBLEM_START.split(problems) if p]

def problem_kind(clause: str) -> str:
    "The name of one problem clause, without its numbers: 'ESS 5 < 100: ...' is 'ESS'."
    head = re.split(r' \(|:', clause, maxsplit=1)[0]
    return re.sub(r'\s+[-+\d.]+\s*[<>=].*$', '', head).strip()

def problem_counts(problems) -> str:
    "How many of the estimates whose `problems` texts are given have each kind of problem, most frequent first."
    counts = pd.Series([problem_kind(c) for p in problems for c in problem_clauses(str(p or ''))], dtype=object)
    return ', '.join(f'{k} {n}' for k, n in counts.value_counts().items())


# %%
flat_chains = np.full((2, 100), 5.0) + np.random.default_rng(1).normal(0, 1, (2, 100))
stats = chain_statistics(flat_chains)
assert abs(stats['llc'] - 5) < 0.5 and abs(stats['drift_z']) < 3 and stats['rhat'] < 1.05 and stats['ess'] > 100
rising = chain_statistics(np.tile(np.linspace(0, 10, 100), (2, 1)))
assert rising['drift_z'] > 3
assert 'longer burn-in' in llc_problems(rising['llc'], rising['llc_se'], 1.0, rising['drift_z'])
# the same rise with chains far out along the flat directions: the cure is the localization
assert 'increase localization' in llc_problems(5.0, 0.1, 1.0, rising['drift_z'], reach=0.5, relaxations=0.3)
# far out but relaxed: the localization holds them where it should, no drift
assert 'drift' not in llc_problems(5.0, 0.1, 1.0, 0.0, reach=0.2, relaxations=10)
assert llc_problems(5.0, 0.1, 1.0, 0.0, 1.0, 1000.0, reach=0.2, relaxations=10) == ''
assert 'localization_sweep' in llc_problems(5.0, 0.1, 1.0, 0.0, reach=0.5, relaxations=10)
apart = chain_statistics(np.random.default_rng(2).normal(0, 1, (4, 500)) + np.arange(4)[:, None])
assert apart['rhat'] > 1.05 and 'R-hat' in llc_problems(apart['llc'], apart['llc_se'], 1.0, 0.0, apart['rhat'])
assert llc_problems(5.0, 0.1, 0.95, 0.0, 1.0, 1000.0, 0.01) == ''
assert 'negative' in llc_problems(-1.0, 0.1, 0.95, 0.0) and 'MALA' in llc_problems(5.0, 0.1, 0.5, 0.0)
assert reach_used(sq_distance=4.0, localization=0.5, n_params=2) == 1.0   # held by the localization alone
several = llc_problems(5.0, 0.1, 0.5, rising['drift_z'], apart['rhat'], 10.0, reach=0.5, relaxations=0.3)
assert [c.split()[0] for c in problem_clauses(several)] == ['MALA', 'chains', 'running', 'R-hat', 'ESS']
assert '; '.join(problem_clauses(several)) == several and problem_clauses('') == []
assert [problem_kind(c) for c in problem_clauses(several)] == [
    'MALA acceptance', 'chains drift along flat directions held only by the localization',
    'running estimate still rising', 'R-hat', 'ESS']
assert problem_counts([several, llc_problems(5.0, 0.1, 1.0, 0.0, ess=10.0), '']) == (
    'ESS 2, MALA acceptance 1, chains drift along flat directions held only by the localization 1, '
    'running estimate still rising 1, R-hat 1')


# %%
#| export
@dataclass
class LLCResult:
    "LLC estimates: floats and per-chain arrays for one model; a leading model axis for an ensemble."
    llc: float | np.ndarray
    llc_se: float | np.ndarray
    per_chain: np.ndarray
    loss_trace: np.ndarray
    baseline: float | np.ndarray
    n_beta: float
    diagnostics: pd.DataFrame                          # one row per model
    diagnostic_trace: pd.DataFrame = field(repr=False, default=None)   # one row per chain and diagnostic step
    settings: SGLDSettings = None                      # as asked for, with n_beta resolved
    llc_low: float | np.ndarray = None                 # the interval: Monte-Carlo only, or with the localization's
    llc_high: float | np.ndarray = None                # systematic error when settings.systematic (see below)

    def __float__(self):
        if np.ndim(self.llc):
            raise TypeError("float() needs a single-model LLCResult; this one holds an ensemble")
        return float(self.llc)


# %% [markdown]
# The private assembly step turns the runs of all chunks into one `LLCResult`: per-draw LLC values, their
# statistics, and one row of diagnostics per model with the step sizes each model's chains actually used. Two
# made-up runs of two models with two chains each show the bookkeeping: draws 1 and 3 above a baseline of 0.5
# give $n\beta\cdot 1.5$.

# %%
#| export
def _assemble(runs: list[SGLDRun], baselines: np.ndarray, settings: SGLDSettings, single: bool,
              n_params: int = 0, warn: bool = True, gradient_sq: np.ndarray | None = None,
              drops: np.ndarray | None = None) -> LLCResult:
    """One `LLCResult` from the runs of all chunks.
    Per-draw LLCs, their statistics and one diagnostics row per model (`n_params`: d, for the reach used;
    `gradient_sq`: |grad L_n(w*)|^2 and `drops`: the chains' drop along it, per model, for the test of a minimum)."""
    M, C, n_beta = len(baselines), settings.n_chains, settings.n_beta
    trace = torch.cat([r.trace for r in runs]).double().numpy().reshape(M, C, -1)  # [models, chains, steps]
    draws = torch.cat([r.draws for r in runs]).double().numpy().reshape(M, C, -1)  # [models, chains, draws]
    values = n_beta * (draws if settings.baseline == 'paired' else draws - baselines[:, None, None])
    used = [u for r in runs for u in (r.per_model or [r.settings] * (len(r.trace) // C))]  # per model, after back-off
    steps = pd.concat([r.diagnostics for r in runs], ignore_index=True)
    rows = []
    for m in range(M):
        st = chain_statistics(values[m])
        # sampling only
        d = steps[(steps.model == m) & (steps.step >= settings.n_burnin)] if len(steps) else steps
        acc = float(d.mala_acceptance.mean()) if len(d) else float('nan')
        reach = reach_used(float(d.distance.pow(2).mean()), used[m].localization, n_params) if len(d) else np.nan
        relax = used[m].flat_step_size * used[m].localization * used[m].n_steps
        problems = llc_problems(st['llc'], st['llc_se'], acc, st['drift_z'], st['rhat'], st['ess'], reach, relax,
                                localization_measured=settings.systematic)
        pull = float(drops[m]) if drops is not None else float('nan')
        bound = (float(gradient_pull_bound(gradient_sq[m], n_beta, used[m].localization))
                 if gradient_sq is not None else float('nan'))
        problems = '; '.join(p for p in (problems, criticality_problem(st['llc'], pull)) if p)
        rows.append(dict(model=m, step_size=used[m].step_size, burnin_step_size=used[m].burnin_step_size,
                         localization=used[m].localization,
                         **st, baseline=baselines[m], mala_acceptance=acc,
                         grad_to_noise=float(d.grad_to_noise.mean()) if len(d) else float('nan'),
                         distance=float(d.distance.iloc[-C:].mean()) if len(d) else float('nan'),
                         reach_used=reach, relaxations=relax, gradient_pull=pull, gradient_pull_bound=bound,
                         near_minimum=bool(np.isfinite(pull) and not criticality_problem(st['llc'], pull)),
                         flagged=bool(problems), problems=problems))
    table = pd.DataFrame(rows)
    table['llc_low'], table['llc_high'] = table.llc - Z_INTERVAL * table.llc_se, table.llc + Z_INTERVAL * table.llc_se
    if warn:
        _warn_problems(table)
    pick = (lambda a: a[0]) if single else (lambda a: a)                  # one model: drop the model axis
    number = (lambda a: float(a[0])) if single else (lambda a: a)
    return LLCResult(llc=number(table.llc.to_numpy()), llc_se=number(table.llc_se.to_numpy()),
                     per_chain=pick(values.mean(-1)), loss_trace=pick(trace), baseline=number(baselines),
                     n_beta=n_beta, diagnostics=table, diagnostic_trace=steps, settings=settings,
                     llc_low=number(table.llc_low.to_numpy()), llc_high=number(table.llc_high.to_numpy()))

Z_INTERVAL = 2.0                # Monte-Carlo standard errors on each side of an interval

def _warn_problems(table: pd.DataFrame):
    for r in table.itertuples():
        if r.problems:
            warnings.warn(f"LLC of model {r.model}: {r.problems}", stacklevel=4)


# %%
made_up = SGLDSettings(n_chains=2, n_draws=4, n_burnin=0, diag_every=0, n_beta=10.0)
draws_a = torch.tensor([[1.0, 3.0, 1.0, 3.0], [3.0, 1.0, 3.0, 1.0]])        # [chains, draws] of model 0
fake_runs = [SGLDRun(draws_a, draws_a, pd.DataFrame(), made_up),
             SGLDRun(draws_a + 1, draws_a + 1, pd.DataFrame(), made_up.replace(step_size=5e-5))]
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    fake = _assemble(fake_runs, np.array([0.5, 0.5]), made_up, single=False)
assert np.allclose(fake.llc, [10 * 1.5, 10 * 2.5]) and fake.per_chain.shape == (2, 2)
assert list(fake.diagnostics.step_size) == [1e-4, 5e-5]                    # as each chunk used them

# %% [markdown]
# ### The localization's systematic error, measured with every estimate
#
# The Monte-Carlo standard error says how far another run at the same $\gamma$ would land. It says nothing of
# the largest error we know of: the localization holds the chains in every direction whose curvature is below
# $\gamma/(n\beta)$ and cuts off the slowly growing directions of a singular minimum, so the estimate moves
# with $\gamma$ (app. H.3 of the paper reports 40–70% for its $\gamma=100$; the
# [LLC-at-depth chapter](llc_depth.html) measures it on deep linear networks). With `systematic=True` in the
# settings (the automatic setting of the [LLC chapter](llc.html) has it), `estimate_llc` measures this error on
# every model it estimates:
#
# * it repeats the estimate at `SENSITIVITY_FACTOR` $=3$ times the localization, with the same step sizes and a
#   third of the steps (the same number of relaxation times $1/(\epsilon\gamma)$, since the flat directions
#   relax three times faster), at a third more cost (`stronger_localization`);
# * the shift $\Delta = \hat\lambda(\gamma) - \hat\lambda(3\gamma)$ says how steeply the estimate falls with
#   $\gamma$. `with_localization_interval` reports $\hat\lambda = \hat\lambda(\gamma) + k\Delta$, the estimate
#   carried a step of $k$ shifts towards weaker localization, and the interval
#   $\hat\lambda \pm (w|\Delta| + 2\,\mathrm{se})$, with se the Monte-Carlo error of the extrapolated value;
# * $k$ = `LOCALIZATION_EXTRAPOLATION` and $w$ = `LOCALIZATION_SPREAD` were set on the tuning part of the
#   depth-covering validation set and are reported on its held-out part (see the LLC-at-depth chapter). The
#   estimate without the step, its error and the one at $3\gamma$ stay in the diagnostics (`llc_raw`,
#   `llc_raw_se`, `llc_stronger`, `llc_stronger_se`, `llc_shift`, `systematic`);
# * an estimate whose interval is wider than `INTERVAL_LIMIT` of its value on either side is flagged: it depends
#   on the localization more than any extrapolation can be trusted to remove. The reach-used warning, which only
#   guessed at this dependence, is left out when it has been measured.
#
# Without `systematic` (the paper's preset, and any settings built by hand), `llc_low` and `llc_high` are the
# Monte-Carlo interval $\hat\lambda\pm2\,\mathrm{se}$ and say so: the `systematic` column is empty.

# %%
#| export
SENSITIVITY_FACTOR = 3.0            # the stronger localization of the repeated estimate, as a multiple of gamma
LOCALIZATION_EXTRAPOLATION = 0.5    # k: shifts added towards weaker localization (set on the tuning part)
LOCALIZATION_SPREAD = 1.5           # w: the systematic half-width, in shifts (set on the tuning part)
INTERVAL_LIMIT = 0.15               # relative half-width above which an estimate is flagged

def stronger_localization(settings: SGLDSettings, factor: float = SENSITIVITY_FACTOR) -> SGLDSettings:
    "The settings of the repeated estimate: `factor` times the localization, 1/`factor` of the steps, another seed."
    return settings.replace(localization=settings.localization * factor, systematic=False, seed=settings.seed + 1,
                            n_burnin=math.ceil(settings.n_burnin / factor),
                            n_draws=max(2, math.ceil(settings.n_draws / factor)))

def localization_interval(llc, se, llc_stronger, se_stronger, extrapolation: float = LOCALIZATION_EXTRAPOLATION,
                          spread: float = LOCALIZATION_SPREAD) -> dict:
    """The extrapolated estimate and its interval from estimates at gamma and `SENSITIVITY_FACTOR` * gamma (floats
    or arrays): `llc` = llc + k*shift, `llc_se` its Monte-Carlo error, `systematic` = w*|shift|, `llc_low`,
    `llc_high` = llc -/+ (systematic + 2 se), and the relative `llc_shift` = shift / llc at gamma."""
    a, b = np.asarray(llc, float), np.asarray(llc_stronger, float)
    shift = a - b
    point = a + extrapolation * shift
    point_se = np.hypot((1 + extrapolation) * np.asarray(se, float), extrapolation * np.asarray(se_stronger, float))
    half = spread * np.abs(shift) + Z_INTERVAL * point_se
    with np.errstate(divide='ignore', invalid='ignore'):
        rel = shift / a
    return dict(llc=point, llc_se=point_se, systematic=spread * np.abs(shift), llc_low=point - half,
                llc_high=point + half, llc_shift=rel)

def with_localization_interval(res: LLCResult, stronger: LLCResult) -> LLCResult:
    """`res` (an estimate at gamma) with `stronger` (the same models at `SENSITIVITY_FACTOR` * gamma) folded in:
    the extrapolated estimate, its interval, both raw estimates in the diagnostics, the stronger run's problems
    and a flag when the interval is wider than `INTERVAL_LIMIT` of the estimate on either side."""
    d, e = res.diagnostics.copy(), stronger.diagnostics
    out = localization_interval(d.llc.to_numpy(), d.llc_se.to_numpy(), e.llc.to_numpy(), e.llc_se.to_numpy())
    d['llc_raw'], d['llc_raw_se'] = d.llc, d.llc_se
    d['llc_stronger'], d['llc_stronger_se'] = e.llc.to_numpy(), e.llc_se.to_numpy()
    for k, v in out.items():
        d[k] = v
    problems = []
    for r, s in zip(d.itertuples(), e.itertuples()):
        p = [r.problems] if r.problems else []
        p_strong = llc_problems(s.llc, s.llc_se, s.mala_acceptance, s.drift_z, s.rhat, s.ess, s.reach_used,
                                s.relaxations, localization_measured=True)
        p += [f'at {SENSITIVITY_FACTOR:g} x the localization: {c}' for c in problem_clauses(p_strong)]
        width = (r.llc_high - r.llc_low) / 2 / abs(r.llc) if r.llc else math.inf
        if not np.isfinite(width) or width > INTERVAL_LIMIT:
            p.append(f'the estimate depends on the localization: it moves by {-r.llc_shift:+.0%} at '
                     f'{SENSITIVITY_FACTOR:g} x gamma, and its interval is +-{width:.0%} (> {INTERVAL_LIMIT:.0%}); '
                     f'weaker localization with longer chains, or a localization_sweep, may settle it')
        problems.append('; '.join(p))
    d['problems'], d['flagged'] = problems, [bool(p) for p in problems]
    _warn_problems(d)
    single = np.ndim(res.llc) == 0
    number = (lambda c: float(d[c].iloc[0])) if single else (lambda c: d[c].to_numpy())
    return dataclasses.replace(res, llc=number('llc'), llc_se=number('llc_se'), llc_low=number('llc_low'),
                               llc_high=number('llc_high'), diagnostics=d)


# %%
toy_interval = localization_interval(40.0, 0.5, 30.0, 0.5, extrapolation=1.0, spread=0.5)
assert toy_interval['llc'] == 50.0 and toy_interval['systematic'] == 5.0 and toy_interval['llc_shift'] == 0.25
assert np.isclose(toy_interval['llc_se'], math.hypot(2 * 0.5, 0.5))
assert np.isclose(toy_interval['llc_high'] - toy_interval['llc_low'], 2 * (5.0 + 2 * math.hypot(1.0, 0.5)))
flat = localization_interval(np.array([15.0, 15.0]), 0.1, np.array([15.0, 14.0]), 0.1)   # arrays: one per model
assert flat['llc'][0] == 15.0 and flat['systematic'][0] == 0 and flat['llc'][1] > 15.0
s3 = stronger_localization(SGLDSettings(localization=2.0, n_burnin=5000, n_draws=5000, systematic=True))
assert (s3.localization, s3.n_burnin, s3.n_draws, s3.systematic) == (6.0, 1667, 1667, False)

# %%
#| hide
import nbdev; nbdev.nbdev_export()
