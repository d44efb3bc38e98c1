# %% [markdown]
# # Training
#
# > The smallest training loop the studies need: minibatch SGD or Adam, a recorder hook, loud divergence.

# %%
#| default_exp train.loop

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math
from typing import Callable

import numpy as np
import pandas as pd
import torch
from torch import nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from fracsgd.datasets.common import batches
from fracsgd.nets.stack import check_fits


# %% [markdown]
# ## The loop
#
# `train` runs minibatch training for a number of epochs (or of steps), reshuffling each epoch with its own
# seeded generator (through `batches` of the [data chapter](data.html)), and calls
# `recorder.record(step, loss)` after every optimizer step; step 0 is the initialisation. A loss that becomes
# NaN or infinite stops the run at once with an error naming the step and the learning rate rather than
# letting a diverged run pollute a sweep. Inputs that do not fit the model, and class labels that are floats or
# lie outside its outputs, are refused before the first step by `check_fits` of the
# [model stack chapter](stack.html), naming what the model expects.

# %%
#| export
def _check_data(model, X, y, loss_fn):
    if len(X) == 0:
        raise ValueError("empty dataset: X has no rows")
    if len(X) != len(y):
        raise ValueError(f"shape mismatch: X has {len(X)} rows but y has {len(y)}")
    check_fits(model, X, y, loss_fn)

def make_optimizer(params, optimizer: str = 'sgd', lr: float = 1e-2, momentum: float = 0.,
                   weight_decay: float = 0.):
    "The optimizer by name: 'sgd' (with optional momentum), 'adam' (L2 weight decay) or 'adamw' (decoupled)."
    if optimizer == 'sgd':
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    if optimizer in ('adam', 'adamw'):
        return (torch.optim.Adam if optimizer == 'adam' else torch.optim.AdamW)(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {optimizer!r}: use 'sgd', 'adam' or 'adamw'")

def train(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, lr: float, batch_size: int,
          epochs: int | None = None, steps: int | None = None, optimizer: str = 'sgd', momentum: float = 0.,
          weight_decay: float = 0., loss_fn: Callable = F.cross_entropy, recorder=None, seed: int = 0,
          progress: bool = False, device=None) -> pd.DataFrame:
    "Train `model` on (X, y) by minibatches, `recorder.record(step, loss)` after each step; a step/loss table."
    _check_data(model, X, y, loss_fn)
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of `epochs` or `steps`")
    device = device or next(model.parameters()).device
    X, y = X.to(device), y.to(device)
    per_epoch = math.ceil(len(X) / batch_size)
    total = steps if steps is not None else epochs * per_epoch
    opt = make_optimizer(model.parameters(), optimizer, lr, momentum, weight_decay)
    gen, losses, step = torch.Generator().manual_seed(seed), np.empty(total), 0
    model.train()
    with tqdm(total=total, disable=not progress, desc='training', unit='step') as bar:
        while step < total:
            for xb, yb in batches(X, y, batch_size, generator=gen):
                loss = loss_fn(model(xb), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                lv = loss.item()
                losses[step - 1] = lv
                if not math.isfinite(lv):
                    setting = f"lr={lr}, optimizer={optimizer}"
                    raise FloatingPointError(f"loss became {lv} at step {step} ({setting}): "
                                             "the run diverged; lower the learning rate")
                if recorder is not None:
                    recorder.record(step, lv)
                bar.update()
                if step == total:
                    break
    return pd.DataFrame(dict(step=np.arange(1, total + 1), loss=losses))


# %% [markdown]
# Two hundred steps on the moons data must lower the loss; a learning rate of $10^{6}$ must fail loudly, naming
# itself; mismatched inputs must be refused.

# %%
import warnings
from fracsgd.datasets.moons import load_moons
from fracsgd.nets.models import make_mlp
with warnings.catch_warnings():
    warnings.simplefilter('ignore')                  # the loader says which source it used; not needed here
    Xm, ym, _ = load_moons(512, 0.2, seed=0, device='cpu')
hist = train(make_mlp([2, 64, 64, 2], seed=0), Xm, ym, lr=0.1, batch_size=128, epochs=50)
assert len(hist) == 50 * 4 and hist.loss.iloc[-20:].mean() < 0.5 * hist.loss.iloc[:4].mean()
try:
    train(make_mlp([2, 64, 64, 2], seed=0), Xm, ym, lr=1e6, batch_size=128, epochs=5)
    raise AssertionError
except FloatingPointError as e:
    assert 'lr=1000000.0' in str(e) and 'diverged' in str(e)
try:
    train(make_mlp([2, 8, 2]), Xm, ym[:10], lr=0.1, batch_size=8, steps=1)
    raise AssertionError
except ValueError as e:
    assert 'shape mismatch' in str(e)
for X_bad, y_bad, words in [(Xm, ym.float(), 'integer class indices'), (Xm, ym + 1, 'labels in [0, 1]'),
                            (Xm.double(), ym, 'dtype torch.float64')]:
    try:
        train(make_mlp([2, 8, 2]), X_bad, y_bad, lr=0.1, batch_size=8, steps=1)
        raise AssertionError(words)
    except ValueError as e:
        assert words in str(e), e
hist.loss.iloc[::40]

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(hist.step, hist.loss)
ax.set_xlabel('SGD step')
ax.set_ylabel('minibatch cross-entropy (nats)')
plt.show()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
