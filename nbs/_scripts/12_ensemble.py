# %% [markdown]
# # Ensembles
#
# > Many nets of one architecture trained at once: each member with its own initialization and minibatch order, SGD with momentum, Adam or AdamW on stacked tensors, batch norm kept per member, one trajectory table with a `member` column, and chunks that fit a memory budget.

# %%
#| default_exp ensemble

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, dataclasses, math, os, re, warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.func import functional_call
from tqdm.auto import tqdm

from fastcore.basics import patch

from fracsgd.core import PhaseClock, check_range, check_whole, replace_checked, report_progress
from fracsgd.displacement import parameter_groups
from fracsgd.llc import estimate_llc, problem_clauses
from fracsgd.sgld import PAPER_PRESET, SGLDSettings
from fracsgd.stack import (ModelStack, batched_forward, chain_minibatches, chain_seed, data_device, member_losses,
                           placement, resolve_device, resolve_loss)

# %%
import torch.nn.functional as F
from fracsgd.models import make_mlp
from fracsgd.displacement import Recorder, log_steps
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
OPTIMIZERS = ('sgd', 'adam', 'adamw')      # torch.optim's update rules, on stacked tensors

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
# ## Optimizers on stacked tensors
#
# The optimizer sees each parameter tensor of the ensemble as one tensor with a leading member axis
# (`[members, *shape]`). SGD and Adam act elementwise, so applying `torch.optim`'s update rules to the stacked
# tensors applies them to every member at once, with no coupling between members. `StackedOptimizer` does
# exactly that with PyTorch's multi-tensor (`torch._foreach_*`) kernels, following `torch.optim`'s conventions
# to the letter:
#
# * **SGD**: weight decay is added to the gradient, $g \leftarrow g + \lambda w$; the momentum buffer starts
#   as the first step's $g$ (no dampening on that step), then $b \leftarrow \mu b + (1-\tau) g$; Nesterov
#   steps along $g + \mu b$; the update is $w \leftarrow w - \eta\, b$.
# * **Adam** (Kingma & Ba's, with L2 weight decay added to the gradient as `torch.optim.Adam` does, not
#   AdamW): $m \leftarrow \beta_1 m + (1-\beta_1) g$, $v \leftarrow \beta_2 v + (1-\beta_2) g^2$, and
#   $w \leftarrow w - \frac{\eta}{1-\beta_1^t}\, m \big/ \big(\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon\big)$,
#   with $\epsilon$ added *after* the bias-corrected square root.
# * **AdamW** (Loshchilov & Hutter's decoupled weight decay, as `torch.optim.AdamW`): the same update on the bare
#   gradient, after the weights shrink by $w \leftarrow (1 - \eta\lambda)\, w$. The two versions of the paper
#   name different optimizers for their MNIST ablations (Adam in the ICLR version, AdamW with a weight-decay axis
#   in the arXiv version), so both are here.
#
# The parameters are updated in place, so they may be views of a larger tensor (the ensemble's flat weights).
# The gradients are consumed: weight decay is added to them in place (SGD, Adam).

# %%
#| export
class StackedOptimizer:
    "`torch.optim`'s SGD, Adam or AdamW under `settings`, applied in place to the tensors `params` (any shapes)."
    def __init__(self, params: Sequence[torch.Tensor], settings: EnsembleSettings):
        self.params, self.s, self.t = list(params), settings, 0
        zeros = lambda: [torch.zeros_like(p) for p in self.params]
        if settings.optimizer in ('adam', 'adamw'):
            self.exp_avg, self.exp_avg_sq = zeros(), zeros()
        elif settings.momentum:
            self.momentum_buffer = zeros()

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor]) -> None:
        "One update of every parameter with the gradients `grads` (same shapes; changed in place)."
        self.t += 1
        grads = list(grads)
        if self.s.weight_decay and self.s.optimizer == 'adamw':              # decoupled: the weights shrink
            torch._foreach_mul_(self.params, 1 - self.s.lr * self.s.weight_decay)
        elif self.s.weight_decay:                                              # L2: added to the gradient
            torch._foreach_add_(grads, self.params, alpha=self.s.weight_decay)
        if self.s.optimizer in ('adam', 'adamw'):
            self._adam(grads)
        else:
            self._sgd(grads)

    def _sgd(self, grads):
        s = self.s
        if not s.momentum:
            torch._foreach_add_(self.params, grads, alpha=-s.lr)
            return
        buf = self.momentum_buffer
        if self.t == 1:
            torch._foreach_copy_(buf, grads)                    # as torch.optim: the first buffer is g
        else:
            torch._foreach_mul_(buf, s.momentum)
            torch._foreach_add_(buf, grads, alpha=1 - s.dampening)
        if s.nesterov:
            torch._foreach_add_(grads, buf, alpha=s.momentum)
            buf = grads
        torch._foreach_add_(self.params, buf, alpha=-s.lr)

    def _adam(self, grads):
        (b1, b2), t = self.s.betas, self.t
        torch._foreach_lerp_(self.exp_avg, grads, 1 - b1)
        torch._foreach_mul_(self.exp_avg_sq, b2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, value=1 - b2)
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, math.sqrt(1 - b2**t))
        torch._foreach_add_(denom, self.s.eps)
        torch._foreach_addcdiv_(self.params, self.exp_avg, denom, value=-self.s.lr / (1 - b1**t))


# %% [markdown]
# On one tensor with a fixed sequence of random gradients, the stacked optimizer and `torch.optim` must take
# the same steps (float64; they differ only in the order of floating-point operations):

# %%
def against_torch_optim(settings, torch_opt, n=50):
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(4, 7, generator=g, dtype=torch.float64)         # [members, params]
    grads = [torch.randn(4, 7, generator=g, dtype=torch.float64) for _ in range(n)]
    ours, ref = w0.clone(), w0.clone().requires_grad_(True)
    opt, ref_opt = StackedOptimizer([ours], settings), torch_opt([ref])
    for gr in grads:
        opt.step([gr.clone()])
        ref.grad = gr.clone()
        ref_opt.step()
    return float((ours - ref.detach()).abs().max())

cases = [(EnsembleSettings(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
         (EnsembleSettings(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01),
          lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
         (EnsembleSettings(lr=0.1, momentum=0.9, nesterov=True),
          lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
         (EnsembleSettings(optimizer='adam', lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
          lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
         (EnsembleSettings(optimizer='adamw', lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
          lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1))]
errors = [against_torch_optim(s, make) for s, make in cases]
assert max(errors) < 1e-13, errors
errors


# %% [markdown]
# ## Memory: members per chunk
#
# An ensemble too large for the device is trained in chunks of members, one chunk after another; since every
# member has its own initialization, its own minibatch stream (seeded by its index in the whole ensemble) and
# no coupling to the others, chunking changes no number except through floating-point rounding of batched
# kernels. `member_bytes` estimates what one member costs during a step:
#
# * per parameter, the weights, their initial copy (for $R(t)$), the gradient and the optimizer state (one
#   momentum buffer for SGD with momentum, two moments for Adam);
# * per minibatch, the activations: one forward pass of a copy of the model on a zero batch counts the outputs
#   of its leaf modules, which the backward pass keeps and then matches with gradients of the same size (a
#   factor of 2), plus the gathered input batch.
#
# `plan_chunks` cuts the members into consecutive chunks of equal size (the last may be smaller) that fit the
# budget; a budget smaller than one member still gives chunks of one. The default budget is half the free
# memory of a GPU, or a quarter of the available RAM.

# %%
#| export
def _available_ram() -> int:
    "Bytes of RAM available: psutil's estimate when it is installed, else the free pages (POSIX), else 8 GiB."
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30

def default_memory_budget(device) -> int:
    "Bytes a chunk may use: half the free memory of a CUDA device, else a quarter of the available RAM."
    device = torch.device(device)
    if device.type == 'cuda':
        return int(torch.cuda.mem_get_info(device)[0] // 2)
    return _available_ram() // 4

def member_bytes(template: nn.Module, sample_input: torch.Tensor, settings: EnsembleSettings) -> int:
    """Estimated bytes one member needs during a step on a minibatch shaped like `sample_input`
    [batch, ...]: parameters with their state, plus activations and their gradients."""
    params = list(template.parameters())
    per_param = 3 + (2 if settings.optimizer in ('adam', 'adamw') else int(settings.momentum > 0))  # w, w0, grad, state
    param_bytes = per_param * sum(p.numel() * p.element_size() for p in params)
    counted = []
    def count(module, inputs, output):
        if torch.is_tensor(output):
            counted.append(output.numel() * output.element_size())
    probe = copy.deepcopy(template).to(sample_input.device)
    leaves = [m for m in probe.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(count) for m in leaves]
    try:
        with torch.no_grad():
            probe(torch.zeros_like(sample_input))
    finally:
        for h in hooks:
            h.remove()
    input_bytes = sample_input.numel() * sample_input.element_size()
    return int(param_bytes + 2 * sum(counted) + input_bytes)

def plan_chunks(n_members: int, per_member: int, budget: int) -> list[range]:
    "Consecutive ranges of member indices, of equal size (the last may be smaller), each within `budget`."
    if n_members < 1:
        raise ValueError(f"an ensemble needs at least one member, got {n_members}")
    size = int(max(1, min(n_members, budget // max(per_member, 1))))
    n_chunks = math.ceil(n_members / size)
    size = math.ceil(n_members / n_chunks)                   # balance: chunks of equal size
    return [range(a, min(a + size, n_members)) for a in range(0, n_members, size)]


# %%
net = make_mlp([784, 128, 64, 10], batch_norm=True, seed=0)
n_p = sum(p.numel() for p in net.parameters())
b = member_bytes(net, torch.zeros(256, 784), EnsembleSettings(optimizer='adam'))
# 5 float32 copies of the weights; activations: 256 x (128 + 128 + 128 + 64 + 64 + 64 + 10) floats, twice
assert b == 5 * 4 * n_p + 2 * 4 * 256 * (3 * 128 + 3 * 64 + 10) + 4 * 256 * 784
assert [len(c) for c in plan_chunks(10, 100, 350)] == [3, 3, 3, 1]
assert [len(c) for c in plan_chunks(10, 100, 10**9)] == [10]
assert [len(c) for c in plan_chunks(5, 100, 1)] == [1] * 5
assert [list(c) for c in plan_chunks(7, 1, 3)] == [[0, 1, 2], [3, 4, 5], [6]]
assert default_memory_budget('cpu') > 0
print(f"one MNIST member with Adam at batch 256: {b / 2**20:.1f} MiB")

# %% [markdown]
# ## One vectorized forward pass
#
# The members go through `batched_forward` of the [stack chapter](stack.html): batched matrix products for a
# perceptron, `functional_call` under `vmap` otherwise. In train mode, batch norm normalizes each member's minibatch
# by its own statistics and updates the member's own running statistics in its row of the stacked buffers; that
# takes the `vmap` path, which applies the in-place update to the batched buffer. `member_losses` then evaluates
# the loss on all members' outputs flattened into one batch. Checked here on members with batch norm in train mode:

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
# the stack. Its `clock` (a [`PhaseClock`](core.html), which the chunks of one ensemble may share) collects the
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
        gens = [torch.Generator().manual_seed(chain_seed(settings.seed, m, 0, 1)) for m in self.members]
        self.batches = chain_minibatches(self.X, self.y, settings.batch_size, gens, device)
        self.groups = parameter_groups(self.template, settings.groups)
        self.rows = []                                                            # one dict per recorded step


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

LLC_COLUMNS = ('llc', 'llc_near_minimum', 'llc_gradient_pull')   # what an LLC step adds to the trajectory

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
    """The LLC [members] of every member at its current weights at training step `step` (`settings.llc`, a fresh
    seed per call), with whether each point is near a minimum and the gradient's pull there (`LLC_COLUMNS`, see the
    [criticality chapter](criticality.html)); the estimator's warnings are passed on, each kind once per member."""
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
    return dict(llc=np.atleast_1d(res.llc), llc_near_minimum=d.near_minimum.to_numpy(float),
                llc_gradient_pull=d.gradient_pull.to_numpy(float))


# %% [markdown]
# `run` trains the chunk for `n_steps` steps, recording as it goes, and `write_back` copies the final weights
# and running statistics into the members' own modules, so that an ensemble is trained in place, as
# `fracsgd.train.train` trains one model:

# %%
#| export
@patch
def _observe(self: EnsembleTrainer, observers: Sequence, step: int) -> None:
    for ob in observers:
        with self.clock(getattr(ob, 'phase', 'observe')):
            ob.observe(self, step)

@patch
def run(self: EnsembleTrainer, bar=None, observers: Sequence = ()) -> pd.DataFrame:
    """Train for `settings.n_steps` steps; the trajectory table. `clock` holds the seconds of steps, record and llc.
    Each observer's `observe(trainer, step)` is called after step 0 and after every step (its clock phase: its
    `phase`, else `observe`)."""
    clock = self.clock
    with clock('record'):
        self.record(0)
    self._observe(observers, 0)
    for t in range(1, self.s.n_steps + 1):
        with clock('steps'):
            loss, out, y = self.step()
        with clock('record'):
            self.record(t, loss, out, y)
        self._observe(observers, t)
        if bar is not None:
            bar.update(len(self.members))
        report_progress(t, self.s.n_steps, 'training step')
    with clock('record'):
        return self.table()

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
    device, X, y = placement(models, data, device, loss)             # nothing is moved
    s = (settings or EnsembleSettings()).replace(**changes)
    loss_fn = resolve_loss(loss)
    budget = s.memory_budget or default_memory_budget(device)
    sample = X[:min(s.batch_size, len(X))]
    chunks = plan_chunks(len(models), member_bytes(models[0], sample, s), budget)
    tables = []
    with tqdm(total=len(models) * s.n_steps, disable=not progress, unit='member-step',
              desc=f'{len(models)} members in {len(chunks)} chunk(s)') as bar:
        for chunk in chunks:
            trainer = EnsembleTrainer([models[i] for i in chunk], chunk, (X, y), loss_fn, s, device, clock)
            tables.append(trainer.run(bar, observers))
            trainer.write_back()
            del trainer
    for m in models:
        m.train()
    return pd.concat(tables, ignore_index=True)


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
# once, with `llc_near_minimum` (1 where the [criticality chapter](criticality.html)'s test finds the point near a
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
assert llc_warning('LLC of model 1: MALA acceptance 0.80 < 0.9; ESS 12 < 100: too few effective draws; more draws',
                   [4, 7], 30) == (7, ['MALA acceptance 0.80 < 0.9', 'ESS 12 < 100: too few effective draws; more draws'],
                                   'LLC of ensemble member 7 at step 30: ')

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
