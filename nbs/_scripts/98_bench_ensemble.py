# %% [markdown]
# # Ensemble benchmarks
#
# > How fast the ensemble trainer is, against a loop that trains one `nn.Module` at a time and against the floor of its own batched forward and backward pass, measured in one process.

# %%
#| default_exp bench.ensemble

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import warnings
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from fracsgd.core import default_device
from fracsgd.train.displacement import Recorder, log_steps
from fracsgd.train.ensemble import EnsembleSettings, EnsembleTrainer
from fracsgd.nets.models import make_mlp
from fracsgd.nets.stack import ModelStack, batched_forward, chain_minibatches, chain_seed, cross_entropy_loss, member_losses
from fracsgd.bench.timing import report, timed


# %% [markdown]
# Issue #10 (item 2) asks two questions of the [ensemble trainer](ensemble.html), each answered by a ratio of
# wall-clock times measured in the same process, with the three timings interleaved in short blocks and the
# minimum of repeated runs kept (see *One workload, interleaved*), so that a change in the machine's load
# affects all of them alike:
#
# 1. **Against a per-member loop.** The ensemble against the loop a user would otherwise write: each member an
#    `nn.Module` trained alone with `torch.optim.SGD` and the displacement `Recorder`, on the same
#    minibatches. Goal: at least 5× faster. The loop's cost per member is constant, so it is timed on a few
#    members and scaled to the whole ensemble; the table says how many.
# 2. **Against the floor.** The floor is the work no ensemble trainer can skip: the batched forward and
#    backward pass of all members (`functional_call` under `vmap`, with the same shapes: members × batch),
#    repeated for as many steps on one fixed minibatch. The ensemble adds the minibatch gather, the optimizer
#    update and the recording. Goal: an ensemble step costs at most 1.15 floor steps.
#
# Both run on two workloads from the paper: 500 moons nets 2-64-64-2 for 800 steps at batch 128 (appendix G.4:
# 200 epochs of 512 samples), and 50 MNIST MLPs 784-128-64-32-10 with batch norm at batch 256 (the
# architecture of issue #10; appendix G.1 trains 50 seeds at this batch size), for 400 steps. Both use plain
# SGD at the paper's learning rates and record on about 100 log-spaced steps, as a diffusion study would. The
# `ratio_at_floor` column of the first question is the speed-up an ensemble trainer doing *only* the floor's
# work would get: a goal above it cannot be met on this machine by any implementation built on the same
# batched kernels.

# %%
#| export
@dataclass(frozen=True)
class EnsembleBenchCase:
    "One workload: `n_members` MLPs with layer `sizes`, trained `n_steps` steps at `batch_size` with `lr`."
    dataset: str                 # 'moons' or 'mnist'
    sizes: tuple
    batch_norm: bool
    n_members: int
    n_steps: int
    batch_size: int
    lr: float
    loop_members: int            # members the per-member loop times per run (at most 16)

MOONS_CASE = EnsembleBenchCase('moons', (2, 64, 64, 2), False, 500, 800, 128, 0.01, 8)
MNIST_CASE = EnsembleBenchCase('mnist', (784, 128, 64, 32, 10), True, 50, 400, 256, 0.001, 5)

def quick_case(case: EnsembleBenchCase) -> EnsembleBenchCase:
    "A few-second version of `case` for CI: a 25th of the members, 20 steps (too short to quote)."
    return replace(case, n_members=case.n_members // 25, n_steps=20, loop_members=1)


# %% [markdown]
# The data: the paper's moons (512 samples, noise 0.2) and the training half of its MNIST subset (flattened;
# `mnist_subset` uses as many of the 10 000 images as the local source holds, and the table gives the number),
# or, when MNIST cannot be loaded, random images and labels of the same shape, labelled as such in the table.

# %%
#| export
def bench_data(dataset: str, device) -> tuple[torch.Tensor, torch.Tensor, str]:
    "Inputs, targets and a description of the benchmark data `dataset` ('moons' or 'mnist') on `device`."
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if dataset == 'moons':
            from fracsgd.datasets.moons import load_moons
            X, y = load_moons(512, 0.2, seed=0)[:2]
            return X.to(device), y.to(device), 'moons'
        if dataset != 'mnist':
            raise ValueError(f"dataset must be 'moons' or 'mnist', got {dataset!r}")
        from fracsgd.datasets.common import flatten
        from fracsgd.datasets.mnist import mnist_subset
        try:
            s = mnist_subset(n=10_000, test_fraction=0.5)
            return flatten(s.X_train).to(device), s.y_train.to(device), f'MNIST, {len(s.y_train)} images'
        except Exception:
            g = torch.Generator().manual_seed(0)
            X, y = torch.rand(5000, 784, generator=g), torch.randint(0, 10, (5000,), generator=g)
            return X.to(device), y.to(device), 'random stand-in for MNIST'


# %%
X_b, y_b, source = bench_data('moons', 'cpu')
assert X_b.shape == (512, 2) and source == 'moons'


# %% [markdown]
# ## The three timings
#
# Each timing builds its members first (`make_mlp(sizes, seed=i)` for member $i$) and times only training.
# They are cut into pieces that can be interleaved finely, because on a shared two-core machine the load
# changes within seconds:
#
# * `ensemble_trainer` builds the `EnsembleTrainer` that `train_ensemble` runs for a chunk holding every
#   member (the budget plan is a one-off arithmetic), and `ensemble_steps` advances it by some steps,
#   recording on schedule, exactly as its `run` does;
# * `floor_steps` takes batched forward+backward passes of all members on one fixed minibatch;
# * `loop_member` trains member $i$ alone with `torch.optim.SGD` and a `Recorder` on the minibatch order the
#   ensemble gives it (its own `chain_minibatches` stream, seed `chain_seed(0, i, 0, 1)`), so both sides do
#   the same arithmetic.

# %%
#| export
def _settings(case: EnsembleBenchCase) -> EnsembleSettings:
    return EnsembleSettings(lr=case.lr, batch_size=case.batch_size, n_steps=case.n_steps,
                            every=log_steps(case.n_steps, 100))

def _members(case: EnsembleBenchCase, n: int, device) -> list:
    return [make_mlp(case.sizes, batch_norm=case.batch_norm, seed=i).to(device) for i in range(n)]

def ensemble_trainer(case: EnsembleBenchCase, X: torch.Tensor, y: torch.Tensor) -> EnsembleTrainer:
    "The trainer of all members of `case` in one chunk, with step 0 recorded."
    models = _members(case, case.n_members, X.device)
    trainer = EnsembleTrainer(models, range(case.n_members), (X, y), cross_entropy_loss, _settings(case),
                              X.device)
    trainer.record(0)
    return trainer

def ensemble_steps(trainer: EnsembleTrainer, steps: range) -> None:
    "Steps `steps` of `trainer`, recorded on its schedule (the body of `EnsembleTrainer.run`)."
    for t in steps:
        trainer.record(t, *trainer.step())

def floor_steps(case: EnsembleBenchCase, X: torch.Tensor, y: torch.Tensor) -> Callable[[int], None]:
    "`run(k)`: `k` batched forward+backward passes of all members of `case` on one fixed minibatch."
    stack = ModelStack(_members(case, case.n_members, X.device), X.device)
    forward = batched_forward(stack.template.train())
    leaves = [p.detach().requires_grad_(True) for p in stack.params(stack.flat).values()]
    params = dict(zip(stack.names, leaves))
    idx = torch.randint(0, len(X), (case.n_members * case.batch_size,), generator=torch.Generator())
    xb = X[idx.to(X.device)].view(case.n_members, case.batch_size, *X.shape[1:])   # [members, batch, ...]
    yb = y[idx.to(X.device)].view(case.n_members, case.batch_size)                   # [members, batch]
    def run(k):
        for _ in range(k):
            loss = member_losses(cross_entropy_loss, forward(params, stack.buffers, xb), yb)   # [members]
            torch.autograd.grad(loss.sum(), leaves)
    return run

def loop_member(case: EnsembleBenchCase, X: torch.Tensor, y: torch.Tensor, i: int) -> Callable[[], None]:
    "`run()`: train member `i` of `case` alone, an `nn.Module` with `torch.optim.SGD` and a `Recorder`."
    s, net = _settings(case), make_mlp(case.sizes, batch_norm=case.batch_norm, seed=i).to(X.device)
    def run():
        gen = torch.Generator().manual_seed(chain_seed(s.seed, i, 0, 1))
        stream = chain_minibatches(X, y, s.batch_size, [gen], X.device)
        opt, rec = torch.optim.SGD(net.parameters(), lr=s.lr), Recorder(net, every=s.every)
        for t in range(1, s.n_steps + 1):
            xb, yb = next(stream)                                    # [1, batch, ...]
            loss = F.cross_entropy(net(xb[0]), yb[0])
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.record(t, loss.detach())
        rec.table
    return run


# %%
tiny = replace(quick_case(MOONS_CASE), n_members=3, n_steps=5, loop_members=1)
trainer = ensemble_trainer(tiny, X_b, y_b)
ensemble_steps(trainer, range(1, 6))
floor_steps(tiny, X_b, y_b)(5)
loop_member(tiny, X_b, y_b, 0)()
assert trainer.table().step.max() == 5 and len(trainer.table()) == 3 * 6


# %% [markdown]
# ## One workload, interleaved
#
# `interleaved_times` runs the whole training `repeats` times. Each run is cut into 16 blocks of steps; after
# each block of the ensemble come the same number of floor steps and, for the first `loop_members` blocks, one
# member trained alone. The ensemble's time is its set-up and finish (building the trainer, the table and the
# write-back of the weights, minimum over runs) plus, block by block, the minimum over runs; the floor's the
# same without set-up; the loop's is the fastest member's time times the number of members (the loop's cost
# per member is constant, so this scales it, in the loop's favour). `bench_case` turns the times into the two
# rows of the report: the ensemble against the loop, with the floor's speed-up beside it, and the ensemble
# against the floor.

# %%
#| export
def interleaved_times(case: EnsembleBenchCase, X: torch.Tensor, y: torch.Tensor, repeats: int = 3) -> dict:
    "Seconds of the ensemble, the floor and the (scaled) per-member loop for `case`, interleaved block-wise."
    n_blocks = min(16, case.n_steps)
    edges = np.linspace(0, case.n_steps, n_blocks + 1).round().astype(int)
    ens, floor = np.full((repeats, n_blocks), np.inf), np.full((repeats, n_blocks), np.inf)
    fixed, loop = [], []
    for r in range(repeats):
        t_setup, trainer = timed(lambda: ensemble_trainer(case, X, y))
        run_floor = floor_steps(case, X, y)
        for b in range(n_blocks):
            steps = range(edges[b] + 1, edges[b + 1] + 1)
            ens[r, b] = timed(lambda: ensemble_steps(trainer, steps))[0]
            floor[r, b] = timed(lambda: run_floor(len(steps)))[0]
            if b < case.loop_members:
                loop.append(timed(loop_member(case, X, y, r * case.loop_members + b))[0])
        t_finish = timed(lambda: (trainer.table(), trainer.write_back()))[0]
        fixed.append(t_setup + t_finish)
    return dict(ensemble=min(fixed) + ens.min(0).sum(), floor=floor.min(0).sum(),
                loop=min(loop) * case.n_members, loop_timed=len(loop))

def bench_case(case: EnsembleBenchCase, repeats: int = 3, device=None) -> list[dict]:
    "The two ratios of `case`: ensemble vs per-member loop (scaled to all members) and ensemble vs floor."
    device = torch.device(device) if device else default_device()
    X, y, source = bench_data(case.dataset, device)
    t = interleaved_times(case, X, y, repeats)
    arch = '-'.join(map(str, case.sizes)) + (' + batch norm' if case.batch_norm else '')
    name = f"{case.n_members} nets {arch}, {case.n_steps} steps, batch {case.batch_size} ({source})"
    loop_name = f"per-member loop (fastest of {t['loop_timed']} timed, x{case.n_members})"
    return [dict(benchmark=name, baseline=loop_name, baseline_s=t['loop'], ours_s=t['ensemble'],
                 ratio=t['loop'] / t['ensemble'], goal='>= 5', floor_s=t['floor'],
                 ratio_at_floor=t['loop'] / t['floor']),
            dict(benchmark=name, baseline='floor: batched forward+backward', baseline_s=t['floor'],
                 ours_s=t['ensemble'], ratio=t['ensemble'] / t['floor'], goal='<= 1.15', floor_s=t['floor'],
                 ratio_at_floor=1.0)]

def run_ensemble_benchmark(quick: bool = True, as_json: bool = False) -> str:
    """Both workloads (500 moons nets, 50 MNIST MLPs with batch norm) and the report;
    `quick` shrinks them to a few seconds."""
    cases = [MOONS_CASE, MNIST_CASE]
    if quick:
        cases = [quick_case(c) for c in cases]
    rows = [r for c in cases for r in bench_case(c, repeats=2 if quick else 3)]
    return report(pd.DataFrame(rows), as_json=as_json)


# %% [markdown]
# A smoke run that CI can afford: both workloads shrunk to 20 and 2 members and 20 steps. Its numbers are too
# short to quote, so only their sanity is checked; the table under "Measured here" is from the full command.

# %%
import json, time
t0 = time.time()
res = json.loads(run_ensemble_benchmark(quick=True, as_json=True))
assert len(res['results']) == 4 and all(r['ratio'] > 0 and r['floor_s'] > 0 for r in res['results'])
print(f'{time.time() - t0:.1f} s')
columns = ['benchmark', 'baseline', 'baseline_s', 'ours_s', 'ratio', 'goal', 'floor_s', 'ratio_at_floor']
pd.DataFrame(res['results'])[columns]

# %% [markdown]
# The full benchmark, as `fracsgd bench ensemble` runs it (about ten minutes on two cores, so not in CI):

# %%
#| heavy
t0 = time.time()
res = json.loads(run_ensemble_benchmark(quick=False, as_json=True))
assert len(res['results']) == 4 and all(r['ratio'] > 0 for r in res['results'])
print(f'{time.time() - t0:.0f} s', res['machine'])
pd.DataFrame(res['results'])[columns]

# %% [markdown]
# ### Measured here
#
# Measured 2026-11-23 on the 2-core development CPU (AMD EPYC, x86-64 with AVX2, torch 2.14.1, 2 threads, no
# GPU), two runs of `run_ensemble_benchmark(quick=False)` in separate processes ("run 1 / run 2"). During
# run 1 another job shared the two cores (load average about 3; the run took 584 s); run 2 had the machine
# nearly to itself (318 s). MNIST came from the local source, which holds 5000 images, so its training half
# has 2500.
#
# | benchmark | baseline | baseline (s) | ensemble (s) | floor (s) | ratio | ratio at the floor | goal |
# |---|---|---|---|---|---|---|---|
# | 500 nets 2-64-64-2, 800 steps, batch 128 (moons) | per-member loop (fastest of 24 timed, ×500) | 162 / 165 | 28.6 / 25.4 | 26.3 / 22.3 | **5.66 / 6.50** | 6.17 / 7.41 | ≥ 5 |
# | 500 nets 2-64-64-2, 800 steps, batch 128 (moons) | floor: batched forward+backward | 26.3 / 22.3 | 28.6 / 25.4 | – | **1.09 / 1.14** | – | ≤ 1.15 |
# | 50 nets 784-128-64-32-10 + batch norm, 400 steps, batch 256 (MNIST) | per-member loop (fastest of 15 timed, ×50) | 30.3 / 30.5 | 26.6 / 23.0 | 21.1 / 20.1 | **1.14 / 1.33** | 1.43 / 1.52 | ≥ 5 |
# | 50 nets 784-128-64-32-10 + batch norm, 400 steps, batch 256 (MNIST) | floor: batched forward+backward | 21.1 / 20.1 | 26.6 / 23.0 | – | **1.26 / 1.14** | – | ≤ 1.15 |
#
# What the numbers say:
#
# * **Moons: both goals met**, narrowly. 500 members take 32–36 ms per step together, 0.07 ms per member,
#   while one member alone costs about 0.41 ms per step, nearly all of it Python and the launch of small
#   kernels. The ensemble runs 9–14% above its floor. Timed separately in the same state (10-step blocks,
#   minimum of 5), its extra work per step is the per-member permutations and gather (1.4 ms), the SGD update
#   of 2.2 million weights (0.5 ms) and, at the ~74 recorded of 800 steps, the recording (1.0 ms each),
#   against a floor step of 35 ms.
# * **MNIST: 5× is out of reach on this CPU.** A trainer that did nothing but the batched forward and backward
#   pass would be only 1.4–1.5× faster than the loop (the `ratio_at_floor` column): each member's step is
#   about 170 million floating-point operations (256 samples × 111k weights × 6), so one member alone already
#   keeps the matrix kernels busy, and batching members saves only the per-call overhead. The ensemble gets
#   1.14–1.33×. On a GPU, where one small MLP leaves most of the device idle, batching should pay far more;
#   that is untested here (no GPU).
# * **MNIST against its floor: 1.14 in the quiet run, 1.26 in the loaded one**, so the 1.15 goal is met only
#   without competing load. The gap is the per-member minibatch, which the floor (one fixed minibatch, by
#   definition) does not build: every step copies 50 × 256 images of 784 floats (40 MB) out of the data.
#   Timed separately afterwards (10-step blocks, minimum of 5), that copy took 14 ms per step against a 53 ms
#   floor step, the update 1.7 ms, and the recording 2.6 ms at each of the ~69 recorded of 400 steps. These
#   pieces add up to more than run 2's 14% excess: timings of such short pieces vary between processes as
#   much as the ratios do. A copy of this size is memory traffic, which a second job on the machine slows.
# * An earlier version of this benchmark interleaved whole 800-step runs instead of 16 blocks per run; under
#   the same shared load it reported 1.81 for the moons ensemble against its floor and 12× against the loop,
#   from the same code. Load on a two-core machine swings within seconds, hence the block-wise interleaving.

# %%
#| hide
import nbdev
nbdev.nbdev_export()
