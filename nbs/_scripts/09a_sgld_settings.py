# %% [markdown]
# # SGLD settings
#
# > One frozen object that decides an SGLD run, the paper's preset, the default inverse temperature, and the settings that may differ between the models of one run.

# %%
#| default_exp llc.settings

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass, fields

from fracsgd.core import analysis_field, added_field, check_range, check_whole, replace_checked


# %% [markdown]
# The [sampler](sgld.html) draws from the localized tempered posterior
# $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac{\gamma}{2}\|w-w^*\|^2\}$ (Lau et al. 2024, eq. 11). Everything that
# decides its chains lives here. The inverse temperature defaults to $n\beta = n/\log n$ with $n$ the number of
# training samples (their Algorithm 1; devinterp's `default_nbeta` uses the *batch* size instead: pass `n_beta=`
# to reproduce it).

# %%
#| export
def default_n_beta(n: int) -> float:
    "The inverse temperature n*beta = n / log n (Lau et al. 2024, Algorithm 1) for n training samples."
    if n < 2:
        raise ValueError(f"n_beta = n/log n needs at least 2 training samples, got n={n}")
    return n / math.log(n)


# %%
assert abs(default_n_beta(10_000) - 10_000 / math.log(10_000)) < 1e-9


# %% [markdown]
# ## Settings
#
# One frozen object holds everything that decides a chain: step size $\epsilon$, localization $\gamma$, chains,
# draws, burn-in, steps between draws, batch size, $n\beta$, the baseline, the seed, how often to compute
# diagnostics, an optional larger step for the discarded burn-in, and what to do when a chain diverges. It
# checks itself when it is made, knows how many steps its chains take and which step size applies at step $t$,
# and `replace` gives a changed copy (refusing names it does not know). `baseline='paired'` makes each draw the
# difference $L_B(w_t)-L_B(w^*)$ on the same minibatch, which removes the minibatch noise of the baseline;
# `'full'` subtracts $L_n(w^*)$ afterwards.

# %%
#| export
@dataclass(frozen=True)
class SGLDSettings:
    """Everything that decides an SGLD run.
    Unset `n_beta` means n/log n; unset `burnin_step_size` means `step_size`."""
    step_size: float = 1e-4
    localization: float = 1.0
    n_chains: int = 4
    n_draws: int = 200
    n_burnin: int = 100
    steps_between_draws: int = 1
    batch_size: int | None = 256            # None: the full data at every step
    n_beta: float | None = None
    baseline: str = 'full'                  # 'full': subtract L_n(w*); 'paired': L_B(w_t) - L_B(w*) per draw
    seed: int = 0
    diag_every: int = analysis_field(20)                    # 0: no per-step diagnostics
    burnin_step_size: float | None = None
    on_divergence: str = 'raise'            # or 'backoff': halve the step sizes to blame; 3 retries
    preconditioner: str = added_field('none')   # or 'rmsprop': RMSprop-SGLD (devinterp's `SGMCMC.rmsprop_sgld`)
    rmsprop_alpha: float = added_field(0.99)   # decay of the running mean of squared gradients (devinterp's alpha)
    rmsprop_eps: float = added_field(0.1)      # added to its square root (devinterp's eps)
    systematic: bool = added_field(False)      # also estimate at 3x the localization: extrapolate, and an interval
    metropolis: bool = added_field(False)      # accept or reject each step (MALA): exact, needs the full batch

    def __post_init__(self):
        for name in ('n_chains', 'n_draws', 'steps_between_draws'):
            check_whole(name, getattr(self, name))
        check_whole('n_burnin', self.n_burnin, 0)
        check_whole('diag_every', self.diag_every, 0)
        check_range('step_size', self.step_size, 0, low_ok=False)
        if self.burnin_step_size is not None:
            check_range('burnin_step_size', self.burnin_step_size, 0, low_ok=False)
        check_range('localization', self.localization, 0)
        if self.n_beta is not None:
            check_range('n_beta', self.n_beta, 0, low_ok=False)
        if self.batch_size is not None:
            check_whole('batch_size', self.batch_size)
        if self.baseline not in ('full', 'paired'):
            raise ValueError(f"baseline must be 'full' or 'paired', got {self.baseline!r}")
        if self.on_divergence not in ('raise', 'backoff'):
            raise ValueError(f"on_divergence must be 'raise' or 'backoff', got {self.on_divergence!r}")
        if self.preconditioner not in ('none', 'rmsprop'):
            raise ValueError(f"preconditioner must be 'none' or 'rmsprop', got {self.preconditioner!r}")
        check_range('rmsprop_alpha', self.rmsprop_alpha, 0, 1)
        check_range('rmsprop_eps', self.rmsprop_eps, 0, low_ok=False)
        if not isinstance(self.systematic, bool):
            raise ValueError(f"systematic must be True or False, got {self.systematic!r}")
        if not isinstance(self.metropolis, bool):
            raise ValueError(f"metropolis must be True or False, got {self.metropolis!r}")
        if self.metropolis and self.preconditioner != 'none':
            raise ValueError("metropolis=True needs preconditioner='none': RMSprop's preconditioner changes with "
                             "every step, so the proposal it makes has no reverse to weigh it against")

    @property
    def n_steps(self) -> int:
        "SGLD steps per chain: the burn-in, then `n_draws` draws `steps_between_draws` apart."
        return self.n_burnin + self.n_draws * self.steps_between_draws

    def phase(self, t: int) -> str:
        "'burn-in' or 'sampling': the phase step `t` belongs to."
        return 'burn-in' if t < self.n_burnin else 'sampling'

    def step_size_at(self, t: int) -> float:
        "The step size of step `t`: `burnin_step_size` during burn-in when it is set, else `step_size`."
        return self.burnin_step_size if t < self.n_burnin and self.burnin_step_size else self.step_size

    @property
    def flat_step_size(self) -> float:
        """The sampling step of a coordinate with a vanishing gradient: `step_size`, over `rmsprop_eps` with
        RMSprop (there G = 1/rmsprop_eps). The steps of the flat directions, which set their relaxation time."""
        return self.step_size / self.rmsprop_eps if self.preconditioner == 'rmsprop' else self.step_size

    def is_draw(self, t: int) -> bool:
        "Whether step `t` is a draw: after the burn-in, every `steps_between_draws` steps."
        return t >= self.n_burnin and (t - self.n_burnin) % self.steps_between_draws == 0

    def replace(self, **changes) -> SGLDSettings:
        "A copy with `changes`, checked; an unknown name is refused with the list of known ones."
        return replace_checked(self, **changes)

    def halved(self, phase: str) -> SGLDSettings:
        "A copy whose step size of `phase` ('burn-in' or 'sampling') is half as large."
        if phase == 'burn-in':
            return self.replace(burnin_step_size=(self.burnin_step_size or self.step_size) / 2)
        return self.replace(step_size=self.step_size / 2)


# %%
s = SGLDSettings(n_burnin=10, n_draws=5, steps_between_draws=3, burnin_step_size=1e-3)
assert s.n_steps == 10 + 5 * 3
assert s.step_size_at(9) == 1e-3 and s.step_size_at(10) == 1e-4 and s.phase(9) == 'burn-in'
assert [t for t in range(s.n_steps) if s.is_draw(t)] == [10, 13, 16, 19, 22]
assert s.halved('burn-in').burnin_step_size == 5e-4 and s.halved('sampling').step_size == 5e-5
assert s.flat_step_size == 1e-4 and s.replace(preconditioner='rmsprop', rmsprop_eps=0.1).flat_step_size == 1e-3
assert SGLDSettings().halved('burn-in').burnin_step_size == 5e-5        # unset: half of step_size
for bad, word in [(dict(n_chains=0), 'n_chains'), (dict(step_size=-1), 'step_size'),
                  (dict(baseline='some'), 'baseline'), (dict(n_burnin=1.5), 'n_burnin'),
                  (dict(localization=float('nan')), 'localization'), (dict(stepsize=1), 'unknown')]:
    try:
        s.replace(**bad)
        raise AssertionError(bad)
    except ValueError as e:
        assert word in str(e), e
import dataclasses
try:
    s.step_size = 1.0
    raise AssertionError
except dataclasses.FrozenInstanceError:
    pass

# %% [markdown]
# ## The paper's preset
#
# Hennick & De Baerdemacker estimate every LLC with one SGLD setting (appendix G, table 3): step size $10^{-5}$,
# localization 100, one chain of 400 draws, no burn-in, one step between draws. `preset('paper')` is that
# setting. The paper gives neither the batch size nor $n\beta$, so those keep the defaults above unless you
# replace them.

# %%
#| export
PAPER_PRESET = SGLDSettings(step_size=1e-5, localization=100.0, n_chains=1, n_draws=400, n_burnin=0,
                            steps_between_draws=1)

def preset(name: str) -> SGLDSettings:
    "Named SGLD settings: 'paper' is Hennick & De Baerdemacker's appendix G, table 3."
    presets = {'paper': PAPER_PRESET}
    if name not in presets:
        raise ValueError(f"unknown LLC preset {name!r}; known: {sorted(presets)}")
    return presets[name]


# %%
assert preset('paper').n_steps == 400 and preset('paper').localization == 100.0
assert preset('paper').replace(batch_size=500).step_size == 1e-5
preset('paper')

# %% [markdown]
# ## Settings per model
#
# `calibrate` (the [LLC chapter](llc.html)) gives each net its own step size and localization. One sampler pass
# can still run many such nets at once, each chain with its own $\epsilon$ and $\gamma$, as long as everything
# else (the schedule, the batch size, $n\beta$, the seed) is shared. `shared_settings` splits a list of settings
# into what the models share and what is their own, and refuses a list that differs anywhere else.

# %%
#| export
PER_MODEL_FIELDS = ('step_size', 'burnin_step_size', 'localization')

def shared_settings(per_model: list) -> tuple[SGLDSettings, list | None]:
    """The settings every model shares, and the list itself when the models' `PER_MODEL_FIELDS` differ (else
    None). Any other field that differs is refused: one run has one schedule, batch size, n_beta and seed."""
    if not per_model or not all(isinstance(s, SGLDSettings) for s in per_model):
        raise ValueError("settings per model must be a non-empty list of SGLDSettings")
    first = per_model[0]
    differ = sorted({f.name for s in per_model for f in fields(SGLDSettings)
                     if getattr(s, f.name) != getattr(first, f.name)})
    other = [f for f in differ if f not in PER_MODEL_FIELDS]
    if other:
        raise ValueError(f"settings per model may differ only in {PER_MODEL_FIELDS}; they also differ in {other}")
    if differ and first.preconditioner != 'none':
        raise ValueError("settings per model need preconditioner='none' (RMSprop-SGLD takes one step size)")
    return first, (list(per_model) if differ else None)


# %%
own = [SGLDSettings(step_size=1e-4 / 2 ** i, localization=10.0 * 2 ** i) for i in range(3)]
shared_all, each = shared_settings(own)
assert shared_all == own[0] and each == own
assert shared_settings([own[0]] * 3) == (own[0], None)                  # nothing differs: no list to carry
for bad, word in [([own[0], own[1].replace(seed=3)], 'seed'), ([], 'non-empty'),
                  ([own[0], own[1].replace(preconditioner='rmsprop')], 'preconditioner')]:
    try:
        shared_settings(bad)
        raise AssertionError(bad)
    except ValueError as e:
        assert word in str(e), e
try:
    shared_settings([own[0].replace(preconditioner='rmsprop'), own[1].replace(preconditioner='rmsprop')])
    raise AssertionError
except ValueError as e:
    assert 'RMSprop' in str(e)

# %%
#| hide
import nbdev
nbdev.nbdev_export()
