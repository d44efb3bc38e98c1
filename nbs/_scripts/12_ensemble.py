# %% [markdown]
# # Ensembles
#
# > Many nets of one architecture trained at once: each member with its own initialization and minibatch order, SGD with momentum, Adam or AdamW on stacked tensors, batch norm kept per member, one trajectory table with a `member` column, and chunks that fit a memory budget.

# %%
#| default_exp train.ensemble

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, re, warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.func import functional_call
from tqdm.auto import tqdm

from fastcore.basics import patch

from fracsgd.core import (PhaseClock, ResumableCall, check_range, check_whole, replace_checked, report_progress,
                          rng_states, set_rng_states)
from fracsgd.train.displacement import parameter_groups
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.result import problem_clauses
from fracsgd.llc.settings import PAPER_PRESET, SGLDSettings
from fracsgd.nets.stack import (ModelStack, batched_forward, chain_minibatches, chain_seed, member_losses,
    where_to_compute, resolve_loss)
from fracsgd.placement import data_device, resolve_device
from fracsgd.train.stacked_optim import OPTIMIZERS, StackedOptimizer
from fracsgd.train.chunks import default_memory_budget, member_bytes, plan_chunks

# %%
import torch.nn.functional as F
from fracsgd.nets.models import make_mlp
from fracsgd.train.displacement import Recorder, log_steps
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids contention on small CPUs


# %% [markdown]
# Most of the paper's evidence is statistics over many identical networks that differ only in their random
# initialization: 500 moons nets for the posterior-concentration experiment (Hennick & De Baerdemacker,
# appendix G.4: 2-64-64-2, SGD at learning rate 0.01, batch 128, 200 epochs) and 50 MNIST MLPs per
# architecture (appendix G.1). Trained one after another, small nets spend most of their time in Python and
# in the launch of tiny kernels. This chapter trains all members of such an ensemble in one vectorized step
# (issue #10, item 1), built on the [model stack](stack.html): the members' weights are one
# `[members, params]` tensor, their forward pass is one batched call (batched matrix products for a
# perceptron, `functional_call` under `vmap` otherwise), and their minibatches come from one gather.
#
# The result must not depend on that trick. A member of the ensemble follows, up to floating-point rounding,
# the trajectory it would follow if it were trained alone as an `nn.Module` with `torch.optim`, from the same
# initialization and with the same minibatches; `tests/test_ensemble.py` checks this to $10^{-10}$ in float64
# over 120 steps for SGD with momentum and weight decay, for Adam, and for a batch-norm MLP. How much faster
# it is than a loop over members, and how close it comes to the cost of its own batched forward and backward
# pass, is measured by `fracsgd bench ensemble` ([ensemble benchmarks](bench_ensemble.html)).
#
# ## Settings
#
# One frozen object decides a training run. The optimizer fields keep `torch.optim`'s names and meanings
# (`lr`, `momentum`, `dampening`, `nesterov`, `weight_decay`, `betas`, `eps`); `every` is the recording
# schedule of the [displacement recorder](displacement.html) (an integer $k$ for every $k$-th step, or a
# collection of steps such as `log_steps(n_steps)`); `groups` is its parameter grouping; `llc_every` $>0$
# estimates the LLC of every member every that many steps with the SGLD settings `llc`; `memory_budget` bounds
# the bytes a chunk of members may use (unset: a share of the device's free memory).

# %%
#| export
@dataclass(frozen=True)
class EnsembleSettings:
    "Everything that decides an ensemble's training; `every` and `groups` as for `Recorder`."
    optimizer: str = 'sgd'                  # 'sgd', 'adam' or 'adamw', with torch.optim's update rules
    lr: float = 0.01
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-8
    batch_size: int = 128
    n_steps: int = 1000
    seed: int = 0                           # member m's minibatch order: chain_seed(seed, m, 0, 1)
    every: int | frozenset = 1
    groups: object = 'layer'
    llc_every: int = 0                      # 0: no LLC
    llc: SGLDSettings = PAPER_PRESET
    memory_budget: int | None = None        # bytes per chunk; None: default_memory_budget(device)

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        check_range('lr', self.lr, 0, low_ok=False)
        check_range('momentum', self.momentum, 0)
        if not 0 <= self.dampening <= 1:
            raise ValueError(f"dampening must lie in [0, 1], got {self.dampening!r}")
        check_range('weight_decay', self.weight_decay, 0)
        check_range('eps', self.eps, 0)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair, got {self.betas!r}")
        for b in self.betas:
            check_range('betas', b, 0, 1)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("nesterov needs momentum > 0 and dampening = 0 (as torch.optim.SGD)")
        for name in ('batch_size', 'n_steps'):
            check_whole(name, getattr(self, name))
        check_whole('llc_every', self.llc_every, 0)
        if self.memory_budget is not None and not self.memory_budget > 0:
            raise ValueError(f"memory_budget must be a positive number of bytes, got {self.memory_budget!r}")
        if isinstance(self.every, int):
            if self.every < 1:
                raise ValueError(f"every must be ≥ 1, got {self.every}")
        else:
            object.__setattr__(self, 'every', frozenset(int(s) for s in self.every))
        object.__setattr__(self, 'betas', tuple(self.betas))

    def due(self, step: int) -> bool:
        "Whether the schedule `every` records step `step` (step 0 always)."
        if step == 0:
            return True
        return step % self.every == 0 if isinstance(self.every, int) else step in self.every

    def llc_due(self, step: int) -> bool:
        "Whether the LLC is estimated at step `step`."
        return self.llc_every > 0 and step > 0 and step % self.llc_every == 0

    def replace(self, **changes) -> EnsembleSettings:
        "A copy with `changes`, checked; an unknown name is refused with the list of known ones."
        return replace_checked(self, **changes)


# %%
s = EnsembleSettings(n_steps=100, every=log_steps(100, 10), llc_every=50)
assert s.due(0) and s.due(100) and not s.due(99) and isinstance(s.every, frozenset)
assert s.llc_due(50) and not s.llc_due(0) and not s.llc_due(49)
assert s.replace(optimizer='adam').betas == (0.9, 0.999)
for bad, word in [(dict(optimizer='rmsprop'), 'optimizer'), (dict(lr=0), 'lr'), (dict(every=0), 'every'),
                  (dict(nesterov=True), 'nesterov'), (dict(betas=(0.9, 1.0)), 'betas'),
                  (dict(batch_size=2.5), 'batch_size'), (dict(learning_rate=1), 'unknown')]:
    try:
        s.replace(**bad)
        raise AssertionError(bad)
    except ValueError as e:
        assert word in str(e), e

# %% [markdown]
# The members' parameters are updated by a `StackedOptimizer`, `torch.optim`'s update rules
# applied to the stacked tensors at once, and an ensemble too large for the device trains in
# [chunks](chunks.html) of members that fit a memory budget.

# %% [markdown]
# ## One vectorized forward pass
#
# The members go through `batched_forward` of the [stack chapter](stack.html): batched matrix products for a
# perceptron (batch norm included), `functional_call` under `vmap` otherwise. In train mode, batch norm normalizes
# each member's minibatch by its own statistics and updates the member's own running statistics in its row of the
# stacked buffers, in place. `member_losses` then evaluates the loss on all members' outputs flattened into one
# batch. Checked here on members with batch norm in train mode:

# %%
nets = [make_mlp([3, 5, 2], batch_norm=True, seed=i) for i in range(3)]
bn_stack = ModelStack(nets, 'cpu')
xb, yb = torch.randn(3, 8, 3), torch.randint(0, 2, (3, 8))                 # [members, batch, features]
out = batched_forward(bn_stack.template.train())(bn_stack.params(bn_stack.flat), bn_stack.buffers, xb)
loss = member_losses(resolve_loss('classification'), out, yb)
for m, net in enumerate(nets):
    net.train()
    assert torch.allclose(loss[m], F.cross_entropy(net(xb[m]), yb[m]), atol=1e-6)
    assert torch.allclose(bn_stack.buffers['layer1.1.running_mean'][m], net.layer1[1].running_mean)
assert bn_stack.buffers['layer1.1.num_batches_tracked'].tolist() == [1, 1, 1]
out.shape


# %% [markdown]
# ## The trainer of one chunk
#
# `EnsembleTrainer` trains the members of one chunk: it holds their `ModelStack` on the device, autograd
# leaves that share the memory of the flat weights (as the [SGLD sampler](sgld.html) does, so that the
# optimizer's in-place update of the leaves *is* the update of the flat tensor), the optimizer state, and one
# minibatch stream per member from `chain_minibatches`, seeded by `chain_seed(seed, member, 0, 1)` with the
# member's index in the whole ensemble. Every epoch of a member is a fresh random permutation of the data, cut
# into minibatches of `batch_size`; the last incomplete minibatch of an epoch is dropped (as
# `DataLoader(drop_last=True)` does), so every step of every member has the same shape.
#
# A step is one batched forward and backward pass and one optimizer update. Nothing is copied to the host
# during training except at recorded steps. The trainer computes on `device`, where the data must already be
# (data elsewhere are refused, naming both devices); the models stay where they are, their weights copied into
# the stack. Its `clock` (a `PhaseClock`, which the chunks of one ensemble may share) collects the
# seconds of the steps, of the recording and of the LLC estimates along the run.

# %%
#| export
class EnsembleTrainer:
    "Train the same-architecture `models` (indices `members` of the ensemble) together on `data` = (X, y)."
    def __init__(self, models: Sequence[nn.Module], members: Sequence[int], data: tuple, loss_fn: Callable,
                 settings: EnsembleSettings, device, clock: PhaseClock | None = None):
        self.models, self.members, self.s, self.loss_fn = list(models), list(members), settings, loss_fn
        self.clock = clock or PhaseClock()                                       # seconds per phase of its run
        self.X, self.y = data
        if data_device(self.X, self.y) != resolve_device(device):
            raise ValueError(f"the data are on {self.X.device} but the trainer computes on {device}: place them "
                             "there (nothing is moved behind your back)")
        self.stack = ModelStack(self.models, device)
        self.template = copy.deepcopy(self.models[0]).to(device).train()
        self.w = self.stack.flat                                                  # [members, params]
        self.w0 = self.w.clone()                                                  # [members, params]
        self.leaves = [p.detach().requires_grad_(True) for p in self.stack.params(self.w).values()]
        self.opt = StackedOptimizer(self.leaves, settings)
        self.forward = batched_forward(self.template)
        self.t = 0                                                                # steps taken
        self.batches = self._minibatches(0)
        self.groups = parameter_groups(self.template, settings.groups)
        self.rows = []                                                            # one dict per recorded step

    def _minibatches(self, start: int):
        "Each member's minibatch stream from its `start`-th minibatch on."
        gens = [torch.Generator().manual_seed(chain_seed(self.s.seed, m, 0, 1)) for m in self.members]
        return chain_minibatches(self.X, self.y, self.s.batch_size, gens, self.w.device, start)


# %% [markdown]
# A single member skips `vmap` and calls its copy of the model, whose parameters are then the leaves
# themselves (the same numbers, less overhead). `_outputs` gives the outputs of every member on its minibatch,
# `step` takes one step and returns the minibatch losses and outputs from before the update:

# %%
#| export
@patch
def _outputs(self: EnsembleTrainer, x: torch.Tensor) -> torch.Tensor:
    "Outputs [members, batch, ...] of every member on its minibatch `x` [members, batch, ...]."
    params = dict(zip(self.stack.names, self.leaves))
    if len(self.members) > 1:
        return self.forward(params, self.stack.buffers, x)
    one = {k: v[0] for k, v in params.items()}
    buffers = {k: v[0] for k, v in self.stack.buffers.items()}                 # views: updated in place
    return functional_call(self.template, (one, buffers), (x[0],))[None]

@patch
def step(self: EnsembleTrainer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    "One step of every member: its minibatch loss [members], outputs [members, batch, ...] and targets."
    x, y = next(self.batches)                                    # [members, batch, ...]
    out = self._outputs(x)
    loss = member_losses(self.loss_fn, out, y)                   # [members]
    grads = torch.autograd.grad(loss.sum(), self.leaves)         # member m's loss only reaches member m
    self.opt.step(grads)
    return loss.detach(), out.detach(), y


# %%
X_toy, y_toy = torch.randn(64, 3), torch.randint(0, 2, (64,))
toy = EnsembleTrainer([make_mlp([3, 8, 2], seed=i) for i in range(4)], range(4), (X_toy, y_toy),
                      resolve_loss('classification'), EnsembleSettings(batch_size=16), 'cpu')
before = toy.w.clone()
loss, out, yb = toy.step()
assert loss.shape == (4,) and out.shape == (4, 16, 2) and not torch.equal(before, toy.w)
assert toy.leaves[0].data_ptr() == toy.w.data_ptr()                      # the leaves are the flat weights


# %% [markdown]
# **Recording.** At a due step, `record` keeps, per member, the squared distance from $w_0$ of every parameter
# tensor (on the device), the minibatch loss and the minibatch accuracy (the fraction of argmax-correct
# outputs; NaN when the targets are not class labels), and the LLC when it is due. `table` sums the squared
# distances per group exactly as `Recorder` does, so the columns are `member`, `step`, `R`, `R/<group>`…,
# `loss`, `accuracy`, and `llc` when estimated. A non-finite loss at a recorded step stops training with the
# member's index.

# %%
#| export
def _accuracy(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    "The fraction [members] of argmax-correct outputs, or NaN when `y` does not hold class labels."
    if y.is_floating_point() or out.dim() != y.dim() + 1:
        return torch.full(out.shape[:1], float('nan'), dtype=torch.float64, device=out.device)
    return (out.argmax(-1) == y).double().mean(1)

@patch
def _sq_distance(self: EnsembleTrainer) -> torch.Tensor:
    "Squared distance from w0 of each member's parameter tensors [members, tensors]."
    d = (self.w - self.w0).pow_(2)                                              # [members, params]
    return torch.stack([piece.sum(1) for piece in d.split(self.stack.sizes, dim=1)], 1)

ROW_TENSORS = ('sq', 'loss', 'accuracy')      # what a recorded row holds as host tensors [members, ...]

@patch
def record(self: EnsembleTrainer, step: int, loss=None, out=None, y=None) -> None:
    "Record step `step` if it is due (loss, outputs and targets of the step's minibatch; None at step 0)."
    s = self.s
    if not (s.due(step) or s.llc_due(step)):
        return
    with torch.no_grad():
        M = len(self.members)
        nan = torch.full((M,), float('nan'), dtype=torch.float64)
        row = dict(step=step, sq=self._sq_distance().double().cpu(),
                   loss=nan if loss is None else loss.double().cpu(),
                   accuracy=nan if out is None else _accuracy(out, y).cpu())
    bad = (~torch.isfinite(row['loss'])).nonzero().flatten().tolist() if loss is not None else []
    if bad:
        members = [self.members[i] for i in bad]
        raise FloatingPointError(f"loss is not finite at step {step} for member(s) {members}: "
                                 "the run diverged; lower the learning rate")
    if s.llc_due(step):
        with self.clock('llc'):
            row.update(self.llc(step))
    self.rows.append(row)

@patch
def table(self: EnsembleTrainer) -> pd.DataFrame:
    "The tidy trajectory table of the recorded steps: member, step, R, R/<group>…, loss, accuracy (llc)."
    rows, M = self.rows, len(self.members)
    sq = torch.stack([r['sq'] for r in rows])                       # [recorded steps, members, tensors]
    cols = {'member': np.tile(self.members, len(rows)), 'step': np.repeat([r['step'] for r in rows], M),
            'R': sq.sum(2).sqrt().reshape(-1).numpy()}
    for g, names in self.groups.items():
        idx = [i for i, n in enumerate(self.stack.names) if n in names]
        cols[f'R/{g}'] = sq[:, :, idx].sum(2).sqrt().reshape(-1).numpy()
    cols['loss'] = torch.stack([r['loss'] for r in rows]).reshape(-1).numpy()
    cols['accuracy'] = torch.stack([r['accuracy'] for r in rows]).reshape(-1).numpy()
    for c in LLC_COLUMNS:
        if any(c in r for r in rows):
            cols[c] = np.concatenate([r.get(c, np.full(M, np.nan)) for r in rows])
    return pd.DataFrame(cols).sort_values(['member', 'step'], kind='stable', ignore_index=True)


# %% [markdown]
# **The LLC during training.** When it is due, the members' current weights and running statistics are loaded
# into copies of the model and handed, as one list, to `estimate_llc` of the [LLC chapter](llc.html), which
# samples every chain of every member in one vectorized loop. As `LLCMeasurement` does, each estimate gets a
# fresh seed (the settings' seed plus the number of earlier estimates). The chains are seeded by the member's
# position in its chunk, so unlike the training numbers, the LLC's Monte-Carlo noise changes with the
# chunking.
#
# The estimator's warnings (a flagged estimate, a back-off) reach the user, renamed from the model's position
# in the chunk to the ensemble member and the training step. A long run would repeat the same problem at every
# estimate, so each distinct problem (its numbers left out) is reported once per member, at the first step it
# occurs; a warning that repeats some problems and adds a new one carries only the new one.

# %%
#| export
@patch
def current_models(self: EnsembleTrainer) -> list[nn.Module]:
    "Copies of the model holding each member's current weights and buffers, on the device."
    out = []
    for i in range(len(self.members)):
        m = copy.deepcopy(self.template)
        with torch.no_grad():
            for p, v in zip(m.parameters(), self.stack.params(self.w[i:i + 1]).values()):
                p.copy_(v[0])
            for name, b in m.named_buffers():
                b.copy_(self.stack.buffers[name][i])
        out.append(m)
    return out

LLC_COLUMNS = ('llc', 'llc_se', 'llc_flagged', 'llc_near_minimum', 'llc_gradient_pull')   # an LLC step's columns

def llc_warning(message: str, members: list, step: int) -> tuple[object, list[str], str]:
    """An `estimate_llc` warning about the models `members` of a chunk, estimated at training step `step`: the
    ensemble member it is about (None: the whole chunk), its problems one by one, and a lead naming the member and
    the step."""
    own = re.match(r'LLC of model (\d+): (.*)', message, re.S)
    member, text = (members[int(own[1])], own[2]) if own else (None, message)
    where = f"member {member}" if own else f"members {members} (models 0-{len(members) - 1} below)"
    return member, problem_clauses(text), f"LLC of ensemble {where} at step {step}: "

@patch
def llc(self: EnsembleTrainer, step: int) -> dict:
    """Every member's LLC at its weights at step `step` (`settings.llc`, a fresh seed per call), its s.e., its flag,
    whether it is near a minimum and the gradient's pull there (`LLC_COLUMNS`, [criticality](criticality.html));
    the estimator's warnings are passed on, each kind once per member."""
    calls = sum('llc' in r for r in self.rows)
    settings = self.s.llc.replace(seed=self.s.llc.seed + calls)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        res = estimate_llc(self.current_models(), (self.X, self.y), self.loss_fn, settings,
                           device=self.w.device)
    seen = self.__dict__.setdefault('llc_warned', set())
    for w in caught:
        member, problems, lead = llc_warning(str(w.message), self.members, step)
        kinds = {p: (member, re.sub(r'\d[\d.e+-]*', '#', p)) for p in problems}   # a problem without its numbers
        new = [p for p in problems if kinds[p] not in seen]
        seen.update(kinds[p] for p in new)
        if new:
            warnings.warn(lead + '; '.join(new), w.category, stacklevel=2)
    d = res.diagnostics
    return dict(llc=np.atleast_1d(res.llc), llc_se=d.llc_se.to_numpy(float), llc_flagged=d.flagged.to_numpy(float),
                llc_near_minimum=d.near_minimum.to_numpy(float), llc_gradient_pull=d.gradient_pull.to_numpy(float))


# %% [markdown]
# `run` trains the chunk for `n_steps` steps, recording as it goes, and `write_back` copies the final weights
# and running statistics into the members' own modules, so that an ensemble is trained in place, as
# `fracsgd.train.loop.train` trains one model:

# %%
#| export
@patch
def _observe(self: EnsembleTrainer, observers: Sequence, step: int) -> None:
    for ob in observers:
        with self.clock(getattr(ob, 'phase', 'observe')):
            ob.observe(self, step)

@patch
def run(self: EnsembleTrainer, bar=None, observers: Sequence = (), checkpoint: Callable | None = None) -> pd.DataFrame:
    """Train until step `settings.n_steps` (from step `t`, where a resumed trainer stands); the trajectory table.
    `clock` holds the seconds of steps, record and llc. Each observer's `observe(trainer, step)` is called after
    step 0 and after every step (its clock phase: its `phase`, else `observe`); then `checkpoint(trainer)`, if
    given, may save the run's state."""
    clock = self.clock
    if self.t == 0:
        with clock('record'):
            self.record(0)
        self._observe(observers, 0)
    elif bar is not None:
        bar.update(len(self.members) * self.t)
    for t in range(self.t + 1, self.s.n_steps + 1):
        with clock('steps'):
            loss, out, y = self.step()
        self.t = t
        with clock('record'):
            self.record(t, loss, out, y)
        self._observe(observers, t)
        if checkpoint is not None:
            checkpoint(self)
        if bar is not None:
            bar.update(len(self.members))
        report_progress(t, self.s.n_steps, 'training step')
    with clock('record'):
        return self.table()

@patch
def state(self: EnsembleTrainer) -> dict:
    "Where the trainer stands: its step, weights, buffers, optimizer state, recorded rows and warnings given."
    rows = [{k: v.numpy() if k in ROW_TENSORS else v for k, v in r.items()} for r in self.rows]   # as arrays: a
    return dict(t=self.t, w=self.w.clone(), w0=self.w0.clone(), opt=self.opt.state(), rows=rows,  # tensor would be
                buffers={k: v.clone() for k, v in self.stack.buffers.items()},                   # a record of its own
                llc_warned=set(self.__dict__.get('llc_warned', ())))                              # in torch.save

@patch
def load_state(self: EnsembleTrainer, state: dict) -> None:
    "Stand where `state()` stood: the same weights, buffers and optimizer state, the minibatch streams moved on."
    with torch.no_grad():
        self.w.copy_(state['w'])                                 # the leaves are views of it
        self.w0.copy_(state['w0'])
        for k, v in self.stack.buffers.items():
            v.copy_(state['buffers'][k])
    self.opt.load_state(state['opt'])
    self.rows = [{k: torch.from_numpy(v) if k in ROW_TENSORS else v for k, v in r.items()} for r in state['rows']]
    self.t, self.llc_warned = state['t'], set(state['llc_warned'])
    self.batches = self._minibatches(self.t)

@patch
def write_back(self: EnsembleTrainer) -> None:
    "Copy each member's trained weights and buffers into its module."
    with torch.no_grad():
        for i, model in enumerate(self.models):
            for p, v in zip(model.parameters(), self.stack.params(self.w[i:i + 1]).values()):
                p.copy_(v[0])
            for name, b in model.named_buffers():
                b.copy_(self.stack.buffers[name][i])


# %%
toy_settings = EnsembleSettings(batch_size=16, n_steps=20, every=5, lr=0.1)
toy = EnsembleTrainer([make_mlp([3, 8, 2], seed=i) for i in range(4)], range(4), (X_toy, y_toy),
                      resolve_loss('classification'), toy_settings, 'cpu')
tab = toy.run()
assert set(toy.clock.wall) == {'steps', 'record'} and toy.clock.wall['steps'] > 0
assert len(tab) == 4 * 5 and tab.groupby('member').step.apply(list).iloc[0] == [0, 5, 10, 15, 20]
assert list(tab.columns) == ['member', 'step', 'R', 'R/layer1.0', 'R/out', 'loss', 'accuracy']
tab.head()


# %% [markdown]
# ## Training an ensemble
#
# `train_ensemble(models, data, loss, settings)` is the entry point: a list of same-architecture models (each
# with its own initialization, e.g. `make_mlp(sizes, seed=s)` for seeds `s`), the data `(inputs, targets)`, a
# per-sample loss (a name or a callable, as for the LLC) and an `EnsembleSettings` with keyword changes. It
# plans the chunks from the memory budget, trains them one after another, writes the trained weights back into
# the models, and returns one table for all members. Models come back in train mode, on their own device.
#
# **Where it runs.** With no `device` named, the ensemble trains on the models' device and in their floating
# dtype (`placement` in the [model stack](stack.html)): the models must share one device, and the data must be
# on it too; data elsewhere are refused with a message naming both devices, never copied across. A named
# `device` is where the training runs: the weights are copied there, trained, and written back into the models
# on *their* device, so the models never move; the data must already be on the named device. In short: nothing
# is moved behind the caller's back; a study's runner places models and data once, and everything follows.

# %%
#| export
def train_ensemble(models: Sequence[nn.Module], data, loss='classification',
                   settings: EnsembleSettings | None = None, *, device=None, progress: bool = False,
                   clock: PhaseClock | None = None, observers: Sequence = (), **changes) -> pd.DataFrame:
    """Train same-architecture `models` together under `settings` (default `EnsembleSettings()`, with keyword
    `changes`), in place; their trajectory table with a `member` column. A `clock` collects the seconds per phase;
    `observers` (e.g. `PerChunk`) see every chunk's trainer after every step."""
    models = list(models)
    if not models or not all(isinstance(m, nn.Module) for m in models):
        raise ValueError("models must be a non-empty list of nn.Module of one architecture")
    device, X, y = where_to_compute(models, data, device, loss)             # nothing is moved
    s = (settings or EnsembleSettings()).replace(**changes)
    loss_fn = resolve_loss(loss)
    call = ResumableCall(_fingerprint(models, X, device, loss, s))     # inactive outside a `checkpointing` block
    clock = clock if clock is not None else PhaseClock()
    since = dict(wall=dict(clock.wall), cpu=dict(clock.cpu))           # what this call adds to the clock is saved
    saved = call.saved or {}
    if saved:
        _restore(saved, models, observers, clock)
        chunks, tables = saved['chunks'], list(saved['tables'])
    else:
        budget = s.memory_budget or default_memory_budget(device)
        sample = X[:min(s.batch_size, len(X))]
        chunks, tables = plan_chunks(len(models), member_bytes(models[0], sample, s), budget), []
    def save(trainer=None):
        if call.path is None:                                          # outside a `checkpointing` block
            return
        done = [i for chunk in chunks[:len(tables)] for i in chunk]
        call.save(dict(chunks=chunks, tables=list(tables), models={i: models[i].state_dict() for i in done},
                       trainer=None if trainer is None else trainer.state(), rng=rng_states(),
                       observers=[_observer_state(ob) for ob in observers],
                       clock={k: {p: v - since[k].get(p, 0.0) for p, v in getattr(clock, k).items()} for k in since}))
    def checkpoint(trainer):
        if call.due():
            save(trainer)
    with tqdm(total=len(models) * s.n_steps, disable=not progress, unit='member-step',
              desc=f'{len(models)} members in {len(chunks)} chunk(s)') as bar:
        bar.update(sum(len(c) for c in chunks[:len(tables)]) * s.n_steps)
        for chunk in chunks[len(tables):]:
            trainer = EnsembleTrainer([models[i] for i in chunk], chunk, (X, y), loss_fn, s, device, clock)
            if saved.get('trainer') is not None:
                trainer.load_state(saved.pop('trainer'))
            tables.append(trainer.run(bar, observers, checkpoint))
            trainer.write_back()
            del trainer
            save()                                                     # a finished chunk is never trained again
    for m in models:
        m.train()
    return pd.concat(tables, ignore_index=True)

def _fingerprint(models, X, device, loss, s: EnsembleSettings) -> str:
    "What makes two calls of `train_ensemble` the same call, for resuming one from the other's saved state."
    loss = loss if isinstance(loss, str) else getattr(loss, '__qualname__', type(loss).__name__)
    return (f"train_ensemble: {len(models)} × {type(models[0]).__name__} "
            f"({sum(p.numel() for p in models[0].parameters())} parameters), data {tuple(X.shape)} {X.dtype} on "
            f"{device}, loss {loss}, {s!r}")

def _observer_state(ob) -> dict:
    "What an observer holds, without its methods or factories (e.g. `PerChunk.make`)."
    return {k: v for k, v in vars(ob).items() if not callable(v)}

def _restore(saved: dict, models, observers, clock: PhaseClock) -> None:
    "Put back what a stopped call had done: trained members, observers, random states and clock seconds."
    for i, state in saved['models'].items():
        models[i].load_state_dict(state)
    for ob, state in zip(observers, saved['observers']):
        vars(ob).update(state)
    set_rng_states(saved['rng'])
    for k, phases in saved['clock'].items():
        for p, v in phases.items():
            getattr(clock, k)[p] = getattr(clock, k).get(p, 0.0) + v


# %% [markdown]
# **Watching the weights.** Some measurements need more than the recorded steps: increments at chosen ages (the
# [ageing chapter](ageing.html)) or a projection of the whole path (the [returns chapter](return_probability.html)).
# They plug in as observers. A recorder has `update(step, w)`, fed the weights `w` [members, params] of one chunk
# after step 0 and after every step, and `table()` with a `member` column indexing its chunk; `PerChunk` gives
# each chunk a fresh recorder and joins their tables with `member` renumbered in the whole ensemble.

# %%
#| export
class PerChunk:
    "An observer for `train_ensemble`: a recorder `make()` per chunk, fed each step's weights; `table()` joins them."
    def __init__(self, make: Callable):
        self.make, self.recorders = make, {}
    def observe(self, trainer: EnsembleTrainer, step: int) -> None:
        key = tuple(trainer.members)
        if step == 0:
            self.recorders[key] = self.make()
        self.recorders[key].update(step, trainer.w)
    def table(self) -> pd.DataFrame:
        "The recorders' tables, `member` = index in the ensemble."
        return pd.concat([rec.table().assign(member=lambda d, k=k: np.asarray(k)[d.member.to_numpy(int)])
                          for k, rec in self.recorders.items()], ignore_index=True)


# %% [markdown]
# A recorder that keeps ‖w_t − w_0‖ of every member at every step must agree with the trajectory table's $R$ at
# the recorded steps, also when a small memory budget splits the ensemble into chunks:

# %%
class DistanceRecorder:
    def update(self, step, w):
        if step == 0:
            self.w0, self.rows = w.clone(), []
        self.rows += [dict(member=m, step=step, R_seen=float(r)) for m, r in enumerate((w - self.w0).norm(dim=1))]
    def table(self): return pd.DataFrame(self.rows)

seen = PerChunk(DistanceRecorder)
tab = train_ensemble([make_mlp([3, 8, 2], seed=i) for i in range(5)], (X_toy, y_toy), 'classification',
                     toy_settings, observers=[seen], memory_budget=1)
assert len(seen.recorders) == 5                                   # one member per chunk at a 1-byte budget
both = tab.merge(seen.table(), on=['member', 'step'])
assert len(both) == len(tab) and np.allclose(both.R, both.R_seen, rtol=1e-5)
assert len(seen.table()) == 5 * (toy_settings.n_steps + 1)         # every step, not only the recorded ones

# %% [markdown]
# Three moons-sized nets in one call, against the same three trained one at a time with `torch.optim` and the
# displacement `Recorder` on the same minibatches (each member's stream, re-created from its seed). The tables
# agree column for column, and so do the trained weights. The page runs in float32, so the tolerance is
# float32 rounding; the test file repeats this in float64 at $10^{-10}$.

# %%
from fracsgd.datasets.moons import load_moons
X_m, y_m = load_moons(512, 0.2, seed=0)[:2]
settings = EnsembleSettings(lr=0.05, momentum=0.9, weight_decay=1e-4, batch_size=128, n_steps=60,
                            every=log_steps(60, 10))
ens = [make_mlp([2, 16, 16, 2], seed=s) for s in range(3)]
solo = copy.deepcopy(ens)
tab = train_ensemble(ens, (X_m, y_m), 'classification', settings, device='cpu')
for m, net in enumerate(solo):
    rec = Recorder(net, every=settings.every)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    stream = chain_minibatches(X_m, y_m, 128, [torch.Generator().manual_seed(chain_seed(0, m, 0, 1))], 'cpu')
    for t in range(1, 61):
        xb, yb = next(stream)
        loss = F.cross_entropy(net(xb[0]), yb[0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.record(t, loss.item())
    mine = tab[tab.member == m].reset_index(drop=True)
    ref = rec.table
    assert np.allclose(mine[ref.columns].to_numpy(), ref.to_numpy(), rtol=1e-4, atol=1e-6, equal_nan=True)
    assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(ens[m].parameters(), net.parameters()))
tab[tab.step == 60]


# %% [markdown]
# **Chunks.** With a memory budget of two members, five members train in three chunks, and the table is the
# one-chunk table (float32 rounding of the batched kernels, which depend on the number of members, is the only
# difference):

# %%
def five():
    return [make_mlp([2, 16, 16, 2], batch_norm=True, seed=s) for s in range(5)]
per = member_bytes(five()[0], X_m[:128], settings)
one_chunk = train_ensemble(five(), (X_m, y_m), settings=settings, device='cpu')
chunked = train_ensemble(five(), (X_m, y_m), settings=settings, memory_budget=2 * per, device='cpu')
assert [len(c) for c in plan_chunks(5, per, 2 * per)] == [2, 2, 1]
assert np.allclose(one_chunk.to_numpy(), chunked.to_numpy(), atol=1e-5, equal_nan=True)
chunked.groupby('step')[['R', 'loss', 'accuracy']].mean().tail(3)

# %% [markdown]
# **With the LLC.** `llc_every=k` adds an `llc` column at every $k$-th step, estimated for all members at
# once, with its s.e. `llc_se`, `llc_flagged` (1 where the estimator's own diagnostics flag it), `llc_near_minimum` (1 where the [criticality chapter](criticality.html)'s test finds the point near a
# minimum, 0 where the estimate is a property of the path, not of a minimum) and `llc_gradient_pull` (its $D$); here with the paper's preset shortened to 40 draws to keep the page fast (its inverse temperature is the
# preset's, $n\beta = n/\ln n$ with $n$ the training samples; the LLC values of this toy run mean nothing else):

# %%
few = [make_mlp([2, 16, 16, 2], seed=s) for s in range(2)]
clock = PhaseClock()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    with_llc = train_ensemble(few, (X_m, y_m), settings=settings, llc_every=30,
                              llc=PAPER_PRESET.replace(n_draws=40, batch_size=128), device='cpu', clock=clock)
assert set(clock.wall) == {'steps', 'record', 'llc'}           # the two estimates took the time of their own
llc_rows = with_llc.dropna(subset=['llc'])
assert llc_rows.step.tolist() == [30, 60, 30, 60] and np.isfinite(llc_rows.llc).all()
llc_rows[['member', 'step', 'R', 'loss', *LLC_COLUMNS]]

# %% [markdown]
# 40 draws of the paper's preset are too few, so the estimates are flagged, and the warnings say so for each
# member and step, each distinct problem once per member (at the first step it occurs):

# %%
passed_on = [str(w.message) for w in caught if str(w.message).startswith('LLC of ensemble')]
for text in passed_on:
    print(text)
assert {'member 0', 'member 1'} <= {re.search(r'member \d', t)[0] for t in passed_on}
assert any(' at step 30: ' in t for t in passed_on)
kinds = [(re.search(r'member \d', t)[0], re.sub(r'\d[\d.e+-]*', '#', p))
         for t in passed_on for p in problem_clauses(t.split(': ', 1)[1])]
assert len(set(kinds)) == len(kinds)                                   # each problem once per member
assert (llc_rows.llc_flagged == 1).all() and (llc_rows.llc_se > 0).all()   # the table keeps what the warnings say
assert llc_warning('LLC of model 1: MALA acceptance 0.80 < 0.9; ESS 12 < 100: too few effective draws; more draws',
                   [4, 7], 30) == (7, ['MALA acceptance 0.80 < 0.9', 'ESS 12 < 100: too few effective draws; more draws'],
                                   'LLC of ensemble member 7 at step 30: ')


# %% [markdown]
# **Stopped and resumed.** Inside a `checkpointing` block (the [runner](runner.html) opens one for every
# run), `train_ensemble` saves where it stands every `every` seconds and after every chunk: the trained members of
# finished chunks, the current chunk's weights, batch-norm statistics, optimizer state and recorded rows, the
# observers, the global random states and the clock's seconds. Called again in the same run it continues from
# there: each member's minibatch stream is moved on to the saved step, so the result is the one an uninterrupted
# call gives, to the last bit. Here a call with Adam, batch norm, two chunks, LLC estimates and an observer is
# stopped at step 40 of 60 (in its second chunk) and then called again, against the same call run through:

# %%
class Stop(Exception): pass

class StopAt:
    "An observer that stops the run once, after step `step` of the chunk holding member `member`."
    fired = False                                                     # not the observer's state: not saved
    def __init__(self, step, member): self.step, self.member = step, member
    def observe(self, trainer, step):
        if not StopAt.fired and step == self.step and self.member in trainer.members:
            StopAt.fired = True
            raise Stop

def resumable_case(observers, folder=None):
    nets = [make_mlp([2, 16, 16, 2], batch_norm=True, seed=s) for s in range(3)]
    changes = dict(optimizer='adam', lr=3e-3, memory_budget=2 * per, llc_every=30,
                   llc=PAPER_PRESET.replace(n_draws=20, batch_size=128))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                             # 20 draws: flagged, and it does not matter here
        if folder is None:
            return train_ensemble(nets, (X_m, y_m), settings=settings, observers=observers, device='cpu', **changes), nets
        with checkpointing(folder, every=0):                      # save after every step
            return train_ensemble(nets, (X_m, y_m), settings=settings, observers=observers, device='cpu', **changes), nets

import tempfile
from pathlib import Path
from fracsgd.core import checkpointing
torch.manual_seed(0)
through, through_nets = resumable_case([seen_through := PerChunk(DistanceRecorder)])
after_through = torch.rand(3)
folder, stop = Path(tempfile.mkdtemp()) / 'run', StopAt(40, member=2)
torch.manual_seed(0)
try:
    resumable_case([seen_again := PerChunk(DistanceRecorder), stop], folder)
    raise AssertionError('not stopped')
except Stop:
    pass
torch.manual_seed(1)                                              # another random state: the saved one is put back
resumed, resumed_nets = resumable_case([seen_again, stop], folder)
assert resumed.equals(through) and seen_again.table().equals(seen_through.table())
assert all(torch.equal(p, q) for a, b in zip(through_nets, resumed_nets) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
assert torch.equal(torch.rand(3), after_through)                  # and the same global random state after it
resumed.dropna(subset=['llc'])[['member', 'step', 'R', 'loss', 'llc']]

# %% [markdown]
# **Problems are named.** Models of different architectures, data that does not fit the model (checked by
# `check_fits` of the [model stack](stack.html): input width and dtype, class labels), models on the `meta`
# device (no storage) or on another device than the data, a diverging learning rate and unknown settings are
# refused with a message:

# %%
for bad_models, word in [([make_mlp([2, 4, 2]), make_mlp([2, 5, 2])], 'architecture'), ([], 'non-empty')]:
    try:
        train_ensemble(bad_models, (X_m, y_m), n_steps=1, device='cpu')
        raise AssertionError
    except ValueError as e:
        assert word in str(e), e
for data, word in [((X_m, y_m + 1), 'labels in [0, 1]'), ((X_m[:, :1], y_m), 'in_features=2 (got 1)')]:
    try:
        train_ensemble([make_mlp([2, 4, 2])], data, n_steps=1, device='cpu')
        raise AssertionError(word)
    except ValueError as e:
        assert word in str(e), e
for models, data, words in [([make_mlp([2, 4, 2]).to('meta')], (X_m, y_m), ('on cpu', 'on meta')),
                            ([make_mlp([2, 4, 2])], (X_m.double(), y_m), ('torch.float64', 'torch.float32'))]:
    try:                          # models without storage, data of another dtype: refused before any work
        train_ensemble(models, data, n_steps=1)
        raise AssertionError(words)
    except ValueError as e:
        assert all(w in str(e) for w in words), e
try:            # least squares with a step far beyond 2 / curvature: the loss grows geometrically to inf
    train_ensemble([nn.Linear(2, 1)], (X_m, X_m[:, :1]), 'regression', lr=100.0, n_steps=100, device='cpu')
    raise AssertionError
except FloatingPointError as e:
    assert 'member(s) [0]' in str(e), e

# %%
#| hide
import nbdev
nbdev.nbdev_export()
