# %% [markdown]
# # Displacement
#
# > A recorder for any training loop: R(t) = ‖w_t − w_0‖ in total and per group, measurements, one table.

# %%
#| default_exp train.displacement

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import warnings
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import torch
from torch import nn

from fracsgd.core import atomic_path, require, write_table


# %% [markdown]
# The central measurement of the paper is the distance the weights have travelled from initialisation,
# $R(t) = \lVert w_t - w_0 \rVert$ (§3.3.2, eq. 11). The recorder keeps a copy of $w_0$, and after an
# optimizer step it computes the distance, in total and for each group of parameters (by default one group per
# layer). It never touches gradients or the optimizer, so it attaches to any loop: call `record(step, loss)`
# after each step.
#
# Training produces this table; every analysis chapter reads it. One row per recorded step, with columns
# `step`, `R`, `R/<group>` for each group, `loss`, one column per extra measurement, and `run` when the
# recorder is given a run label, so that tables of many runs concatenate into one.
#
# ## When to record
#
# `every` decides: an integer $k$ records every $k$-th step; a collection of step numbers records exactly those.
# Power-law fits want points spread evenly in $\log t$, which `log_steps` provides. Step 0 (the initialisation,
# $R = 0$) is always recorded.

# %%
#| export
def log_steps(n_steps: int, num: int = 100) -> set[int]:
    "About `num` step numbers from 1 to `n_steps`, evenly spaced in log t (always includes 1 and `n_steps`)."
    if n_steps < 1:
        raise ValueError(f"n_steps must be ≥ 1, got {n_steps}")
    return set(np.unique(np.geomspace(1, n_steps, num).round().astype(int)).tolist()) | {n_steps}


# %%
s = log_steps(10_000, 50)
assert 1 in s and 10_000 in s and 40 <= len(s) <= 51
sorted(s)[:12]


# %% [markdown]
# ## Parameter groups
#
# `groups='layer'` gives one group per module that owns parameters (a linear layer's weight and bias
# together); `'top'` one per top-level child of the model (a block of `make_mlp`: linear layer and its batch
# norm together); `'param'` one per parameter tensor; `None` only the total. A dict maps group names to lists
# of parameter-name prefixes, and a callable maps a parameter name to its group name, for anything else (e.g.
# attention vs MLP blocks of a transformer).

# %%
#| export
def parameter_groups(model: nn.Module, groups='layer') -> dict[str, list[str]]:
    """Map group name → names of the trainable parameters of `model`, grouped by 'layer', 'top', 'param',
    a dict of name prefixes or a callable."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    if not names:
        raise ValueError("the model has no trainable parameters")
    if groups is None:
        return {}
    if groups == 'layer':
        key = lambda n: n.rsplit('.', 1)[0] if '.' in n else n
    elif groups == 'top':
        key = lambda n: n.split('.', 1)[0]
    elif groups == 'param':
        key = lambda n: n
    elif isinstance(groups, dict):
        def key(n):
            hits = [g for g, prefixes in groups.items() if any(n.startswith(p) for p in prefixes)]
            return hits[0] if hits else 'other'
    elif callable(groups):
        key = groups
    else:
        raise ValueError(f"groups must be 'layer', 'top', 'param', None, a dict or a callable, got {groups!r}")
    out = {}
    for n in names:
        out.setdefault(key(n), []).append(n)
    return out


# %%
from fracsgd.nets.models import make_mlp
net = make_mlp([784, 128, 64, 10], batch_norm=True, seed=0)
g = parameter_groups(net)
assert list(g) == ['layer1.0', 'layer1.1', 'layer2.0', 'layer2.1', 'out']
assert g['out'] == ['out.weight', 'out.bias']
assert list(parameter_groups(net, 'top')) == ['layer1', 'layer2', 'out']
assert list(parameter_groups(net, {'hidden': ['layer'], 'head': ['out']})) == ['hidden', 'head']
g


# %% [markdown]
# ## The recorder
#
# Cost matters because the recorder runs inside the training loop. The distance uses PyTorch's fused
# multi-tensor kernels (`torch._foreach_sub_`, `torch._foreach_norm`) over all parameter tensors at once and
# stays on the device: nothing is copied to the host until the table is asked for. The difference $w_t - w_0$ is
# written into one buffer kept for the whole run rather than a new tensor per step: for a 130-million-weight VGG
# on a CPU, allocating (and page-faulting) that half-gigabyte afresh at every record took three times as long. The overhead is measured by
# `fracsgd bench displacement` (see [the benchmarks](bench.html)).
#
# **Measurements.** `measurements` maps a column name to any callable `fn(model) -> float | dict`. If the
# callable has an attribute `every`, it is only called at steps divisible by it (the paper estimates the LLC
# every 100 steps); otherwise at every recorded step. A dict result becomes columns `name/key`. The [LLC
# chapter](llc.html) provides such a callable.
#
# **The loss.** `record` checks the loss it is given at every call, recorded or not, so a run that diverges is
# stopped at the step where its loss stopped being finite, with the same message whether the loss came as a
# Python number or as a tensor. A tensor is read once (one synchronisation with the device, as `loss.item()`
# would be).

# %%
#| export
def _loss_value(loss, step: int) -> float:
    "`loss` (None, a number or a one-element tensor) as a float; a non-finite loss stops the run, naming the step."
    if loss is None:
        return np.nan
    if torch.is_tensor(loss):
        if loss.numel() != 1:
            raise ValueError(f"loss at step {step} must be a number or a one-element tensor, "
                             f"got a tensor of shape {tuple(loss.shape)}")
        loss = loss.detach().item()
    value = float(loss)
    if not np.isfinite(value):
        raise FloatingPointError(f"loss is {value} at step {step}: the run diverged")
    return value


# %%
#| export
class Recorder:
    "Record R(t) = ‖w_t − w_0‖ (total and per group) and extra measurements of `model` during training."
    def __init__(self, model: nn.Module, every: int | Iterable[int] = 1, groups='layer',
                 measurements: dict[str, Callable] | None = None, run=None):
        self.model, self.run, self.measurements = model, run, dict(measurements or {})
        named = dict(model.named_parameters())
        self.groups = parameter_groups(model, groups)
        self.names = [n for n, p in named.items() if p.requires_grad]
        self._p = [named[n].detach() for n in self.names]           # views: follow in-place optimizer updates
        self._w0 = [p.clone() for p in self._p]
        self._diff = [torch.empty_like(p) for p in self._p]         # scratch for w_t − w_0, reused
        gid = {n: i for i, ns in enumerate(self.groups.values()) for n in ns}
        self._gidx = None                               # [parameter tensors]: the group of each, if any
        if self.groups:
            self._gidx = torch.tensor([gid[n] for n in self.names], device=self._p[0].device)
        if isinstance(every, int):
            if every < 1:
                raise ValueError(f"every must be ≥ 1, got {every}")
            self._due = lambda s: s % every == 0
        else:
            steps = set(int(s) for s in every)
            self._due = steps.__contains__
        self._steps, self._sq, self._loss, self._extra = [], [], [], []
        self.record(0)

    def _measure(self, step):
        out = {}
        for name, fn in self.measurements.items():
            k = getattr(fn, 'every', None)
            if k is None or step % k == 0:
                v = fn(self.model)
                if isinstance(v, dict):
                    out.update({f'{name}/{kk}': float(vv) for kk, vv in v.items()})
                else:
                    out[name] = float(v)
        return out

    def record(self, step: int, loss=None):
        "Record step `step` if the schedule or a measurement is due; `loss`: a number or a one-element tensor."
        loss = _loss_value(loss, step)
        extra = self._measure(step) if step > 0 else {}
        if step > 0 and not self._due(step) and not extra:
            return
        with torch.no_grad():
            torch._foreach_copy_(self._diff, self._p)
            torch._foreach_sub_(self._diff, self._w0)
            sq = torch.stack(torch._foreach_norm(self._diff)) ** 2                 # [tensors]
        self._steps.append(step)
        self._sq.append(sq)
        self._extra.append(extra)
        self._loss.append(loss)

    @property
    def table(self) -> pd.DataFrame:
        "The tidy trajectory table: step, R, R/<group>…, loss, measurements (and run)."
        sq = torch.stack(self._sq).double().cpu()                   # [recorded steps, parameter tensors]
        df = pd.DataFrame({'step': self._steps, 'R': sq.sum(1).sqrt().numpy()})
        if self._gidx is not None:
            sq_groups = torch.zeros(len(sq), len(self.groups), dtype=sq.dtype)   # [recorded steps, groups]
            per = sq_groups.index_add_(1, self._gidx.cpu(), sq).sqrt()
            for j, g in enumerate(self.groups):
                df[f'R/{g}'] = per[:, j].numpy()
        df['loss'] = self._loss
        extra = pd.DataFrame(self._extra, index=df.index)
        df = pd.concat([df, extra], axis=1) if len(extra.columns) else df
        if not np.all(np.isfinite(df.R)):
            raise FloatingPointError("R(t) is not finite: the weights diverged")
        if self.run is not None:
            df.insert(0, 'run', self.run)
        return df

    def save(self, path) -> None:
        "Write the table to `path` (parquet or CSV) atomically: a killed run leaves no partial file."
        write_table(self.table, path)

    def state_dict(self) -> dict:
        "What a checkpoint needs to continue this recorder: its w0 and the rows recorded so far, on the CPU."
        return dict(names=self.names, w0=[w.cpu() for w in self._w0], steps=list(self._steps),
                    sq=[q.cpu() for q in self._sq], loss=list(self._loss), extra=list(self._extra))

    def load_state_dict(self, state: dict) -> None:
        "Continue from a `state_dict`: the original w0 and the rows recorded before the checkpoint."
        if list(state['names']) != self.names:
            raise ValueError("the recorder state belongs to a model with other parameters: "
                             f"{len(state['names'])} saved names against {len(self.names)} here")
        device = self._p[0].device
        self._w0 = [w.to(device) for w in state['w0']]
        self._steps, self._loss, self._extra = list(state['steps']), list(state['loss']), list(state['extra'])
        self._sq = [q.to(device) for q in state['sq']]


# %%
show_doc(Recorder.record)

# %%
show_doc(Recorder.save)

# %% [markdown]
# `state_dict` and `load_state_dict` carry a recorder across a checkpoint: a run resumed from disk measures
# $R(t)$ from its original $w_0$ and keeps the rows recorded before the interruption (measurements keep their
# own state; an `ExploredVolume` starts counting cells again).

# %% [markdown]
# With plain SGD on a fixed batch, the weights move by exactly `lr × gradient` each step, so after one step
# $R$ must equal `lr` times the gradient norm, and the per-layer distances must add up in quadrature to the
# total:

# %%
import torch.nn.functional as F
torch.manual_seed(0)
net, X, y = make_mlp([20, 16, 3], seed=0), torch.randn(64, 20), torch.randint(0, 3, (64,))
rec = Recorder(net, every=1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loss = F.cross_entropy(net(X), y)
loss.backward()
gnorm = torch.sqrt(sum((p.grad**2).sum() for p in net.parameters())).item()
opt.step()
rec.record(1, loss.item())
tab = rec.table
assert tab.R.iloc[0] == 0 and np.isclose(tab.R.iloc[1], 0.1 * gnorm, rtol=1e-5)
assert np.isclose((tab.filter(like='R/')**2).sum(1).iloc[1], tab.R.iloc[1]**2)
tab

# %% [markdown]
# Measurements plug in by name. Here a measurement due every 5 steps (the squared norm of the output weights)
# adds a column, and the log schedule records only a few steps:

# %%
from fracsgd.train.loop import train
class OutNorm:
    every = 5
    def __call__(self, model): return {'sq': (model.out.weight**2).sum().item()}
net = make_mlp([20, 16, 3], seed=1)
rec = Recorder(net, every=log_steps(40, 8), measurements={'outnorm': OutNorm()}, run='demo')
train(net, X, y, lr=0.05, batch_size=16, steps=40, recorder=rec)
tab = rec.table
assert set(tab.step) == {0} | log_steps(40, 8) | set(range(5, 41, 5))
assert tab.dropna(subset=['outnorm/sq']).step.tolist() == list(range(5, 41, 5)) and (tab.run == 'demo').all()
tab.head(8)


# %% [markdown]
# ## Trajectories of many runs
#
# Tables of several runs concatenate (each carries its `run`). `runs_matrix` turns such a table into the array
# the fitting functions of the [spectral chapter](spectral.html) take: a vector of steps and a runs × steps
# matrix of one column, keeping only steps every run recorded. Which column names the curves is `by`; by default
# it is whichever of `run` (the recorder, the sweep runner) and `member` (the [ensemble
# trainer](ensemble.html)) the table has, both together when it has both. A table with neither is one curve,
# and it must then record each step once: repeated steps without a column to tell the curves apart would
# otherwise be averaged into one curve, so they are refused.

# %%
#| export
def runs_matrix(table: pd.DataFrame, column: str = 'R', by: str | list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Steps common to all runs and a runs × steps array of `column` from a concatenated trajectory table; the
    curves are told apart by the column(s) `by` (default: those of 'run' and 'member' that the table has)."""
    if table.empty:
        raise ValueError("the trajectory table is empty")
    for name in (column, 'step'):
        if name not in table:
            raise ValueError(f"no column {name!r} in the table; it has {list(table.columns)}")
    by = [c for c in ('run', 'member') if c in table] if by is None else [by] if isinstance(by, str) else list(by)
    missing = [c for c in by if c not in table]
    if missing:
        raise ValueError(f"no column {missing[0]!r} to tell the runs apart; the table has {list(table.columns)}")
    repeated = table.duplicated(by + ['step'])
    if repeated.any():
        step = table.step[repeated].iloc[0]
        who = f"within one value of {by}" if by else "and no 'run' or 'member' column tells the curves apart"
        raise ValueError(f"step {step} appears {int((table.step == step).sum())} times {who}: pass by= the "
                         "column(s) that name each curve (a net of an ensemble is named by 'member')")
    if not by:
        return table.step.to_numpy(), table[column].to_numpy()[None]
    wide = table.pivot_table(index=by, columns='step', values=column, aggfunc='first').dropna(axis=1)
    return wide.columns.to_numpy(), wide.to_numpy()


# %%
t1 = pd.DataFrame(dict(run=0, step=[0, 1, 2, 3], R=[0, 1., 2, 3]))
t2 = pd.DataFrame(dict(run=1, step=[0, 1, 3], R=[0, 2., 4]))
steps, M = runs_matrix(pd.concat([t1, t2]))
assert steps.tolist() == [0, 1, 3] and M.tolist() == [[0, 1, 3], [0, 2, 4]]

# %% [markdown]
# The ensemble trainer names its nets by `member`; its tables give one row of the matrix per net, and a table
# whose curves cannot be told apart is refused rather than merged:

# %%
ens = pd.concat([t1, t2]).rename(columns={'run': 'member'})
assert runs_matrix(ens)[1].tolist() == [[0, 1, 3], [0, 2, 4]]
sweep_of_ensembles = pd.concat([ens.assign(run='a'), ens.assign(run='b', R=ens.R * 10)])
assert runs_matrix(sweep_of_ensembles)[1].shape == (4, 3)                # (run, member) names a net
try:
    runs_matrix(pd.concat([t1, t2]).drop(columns='run'))
    raise AssertionError("repeated steps without a run column were merged into one curve")
except ValueError as e:
    assert 'appears 2 times' in str(e) and 'by=' in str(e), e

# %% [markdown]
# ## With Hugging Face `Trainer`
#
# `hf_callback` wraps a recorder in a `transformers.TrainerCallback`: it starts recording when training
# begins and records after every optimizer step (`state.global_step`). `transformers` is imported only when
# this function is called.
#
# * **The `loss` column** holds what the Trainer logs as `loss`: the mean training loss over the steps since its
#   previous log. It is filled at the steps that are both recorded and logged, and NaN at the others; the
#   Trainer's `logging_steps=1` fills it at every recorded step (the Trainer's `logging_steps` defaults to 500).
# * **Checkpoints.** Whenever the Trainer saves a checkpoint, the callback writes its recorder's state
#   (`state_dict`) next to it, as `displacement_recorder.pt`. Training resumed with
#   `trainer.train(resume_from_checkpoint=...)` loads it back, so $R(t)$ is still measured from the original
#   $w_0$ and the table continues where it stopped. A checkpoint without that file (saved without the
#   callback) resumes with a warning that $R(t)$ restarts from the resumed weights.

# %%
#| export
RECORDER_STATE = 'displacement_recorder.pt'

def hf_callback(**recorder_kwargs):
    "A `transformers.TrainerCallback` running a `Recorder(**recorder_kwargs)`; its `.recorder` holds the table."
    class DisplacementCallback(require('transformers').TrainerCallback):
        recorder = None
        def on_train_begin(self, args, state, control, model=None, **kw):
            self.recorder = Recorder(model, **recorder_kwargs)
            if state.global_step > 0:                                   # resumed from a checkpoint
                saved = Path(args.output_dir) / f'checkpoint-{state.global_step}' / RECORDER_STATE
                if saved.exists():
                    self.recorder.load_state_dict(torch.load(saved, weights_only=True))
                else:
                    warnings.warn(f"resumed at step {state.global_step} without the recorder's state ({saved} "
                                  "is missing): R(t) restarts from the resumed weights, not from the original w0")
        def on_step_end(self, args, state, control, **kw):
            self.recorder.record(state.global_step)
        def on_log(self, args, state, control, logs=None, **kw):
            r = self.recorder
            if r is not None and logs and 'loss' in logs and r._steps and r._steps[-1] == state.global_step:
                r._loss[-1] = _loss_value(logs['loss'], state.global_step)
        def on_save(self, args, state, control, **kw):
            folder = Path(args.output_dir) / f'checkpoint-{state.global_step}'
            if self.recorder is not None and args.should_save and folder.is_dir():
                with atomic_path(folder / RECORDER_STATE) as tmp:
                    torch.save(self.recorder.state_dict(), tmp)
    return DisplacementCallback()


# %% [markdown]
# The callback is exercised with a real `Trainer` in `tests/test_displacement.py`.
#
# ## Explored volume
#
# The [spectral chapter](spectral.html) estimates $d_s$ from the growth of the explored volume (paper eq. 8)
# as an estimate that does not go through the LLC. `ExploredVolume` is a measurement that supplies the volume:
# it counts the distinct cells of side `eps` of weight space (relative to $w_0$) that the run has entered so
# far. It keeps one hash per visited cell, so its memory grows with the number of distinct cells, not with the
# model.

# %%
#| export
class ExploredVolume:
    "Measurement: the number of distinct cells of side `eps` of weight space visited so far."
    def __init__(self, eps: float, every: int | None = None):
        if not eps > 0:
            raise ValueError(f"eps must be positive, got {eps}")
        self.eps, self.every, self._w0, self._seen = eps, every, None, set()
    def __call__(self, model: nn.Module) -> float:
        trainable = [p.detach().flatten() for p in model.parameters() if p.requires_grad]
        w = torch.cat(trainable).double()                                 # [weights]
        if self._w0 is None:
            self._w0 = w.clone()
        cell = torch.floor((w - self._w0) / self.eps).to(torch.int64)     # [weights]: the cell's integer index
        self._seen.add(hash(cell.cpu().numpy().tobytes()))
        return float(len(self._seen))


# %%
net = make_mlp([20, 16, 3], seed=2)
vol = ExploredVolume(eps=1e-3)
rec = Recorder(net, measurements={'volume': vol})
train(net, X, y, lr=0.05, batch_size=16, steps=30, recorder=rec)
v = rec.table.volume.dropna()
assert v.is_monotonic_increasing and 1 <= v.iloc[-1] <= 30
v.iloc[-1]

# %%
#| hide
import nbdev
nbdev.nbdev_export()
