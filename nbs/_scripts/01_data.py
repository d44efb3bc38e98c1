# %% [markdown]
# # Data
#
# > What every dataset loader shares: the returned tuple, the source warning, minibatches and flattening.

# %%
#| default_exp datasets.common

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import os
from pathlib import Path
from typing import Iterator, NamedTuple

import torch


# %% [markdown]
# Every dataset loader of `fracsgd` has the same shape: it returns tensors on the device it is given (by
# default the CPU: a study's data are placed by the [runner](runner.html), in one place), inputs as `float32` and class labels as `int64`, together with a
# short `source` string that records where the examples came from. The source matters because several datasets
# of the paper cannot be reached on every machine, and a figure made from a stand-in must be labelled as such.
# This chapter holds what the loaders share; each dataset family has a chapter of its own, exporting to a
# module of `fracsgd.datasets`:
#
# | dataset | chapter | module | what it holds |
# |---|---|---|---|
# | moons | [Moons](moons.html) | `fracsgd.datasets.moons` | `load_moons`, scikit-learn's two half circles |
# | MNIST | [MNIST](mnist.html) | `fracsgd.datasets.mnist` | the IDX format, `load_mnist`, the paper's subset |
#
# CIFAR-10, Tiny ImageNet and the text corpora (TinyStories) will each get a chapter of the same kind,
# `01c_cifar10`, `01d_tiny_imagenet` and `01e_text`, exporting to `fracsgd/datasets/<name>.py`, when the
# studies that use them arrive.

# %%
#| export
class Loaded(NamedTuple):
    "Inputs `X`, labels `y`, and a human-readable `source` naming where they came from."
    X: torch.Tensor
    y: torch.Tensor
    source: str

class DataSourceWarning(UserWarning):
    "Names the data source a loader used (silence it: `warnings.simplefilter('ignore', DataSourceWarning)`)."


# %% [markdown]
# ## Where downloads go
#
# A dataset in its original format is looked for first under `FRACSGD_DATA` (`fracsgd.core.data_dir`). When a
# loader has to download it instead, it downloads into `cache_dir()`: `fracsgd` under `$XDG_CACHE_HOME`, by
# default `~/.cache/fracsgd`. Nothing is ever downloaded into the repository.

# %%
#| export
def cache_dir() -> Path:
    "Where loaders download datasets that `FRACSGD_DATA` does not hold: `$XDG_CACHE_HOME/fracsgd`."
    return Path(os.environ.get('XDG_CACHE_HOME', '~/.cache')).expanduser()/'fracsgd'


# %%
saved = os.environ.pop('XDG_CACHE_HOME', None)
assert cache_dir() == Path.home()/'.cache'/'fracsgd'
os.environ['XDG_CACHE_HOME'] = '/tmp/somewhere'
assert cache_dir() == Path('/tmp/somewhere/fracsgd')
os.environ.pop('XDG_CACHE_HOME')
if saved is not None:
    os.environ['XDG_CACHE_HOME'] = saved


# %% [markdown]
# ## Minibatches and flattening
#
# The studies train with plain SGD on tensors that already sit on the device, so a `DataLoader` with workers
# would only add overhead. `batches` yields one epoch of shuffled minibatches (the last one may be smaller, as
# with a `DataLoader` without `drop_last`), drawing the permutation from the `torch.Generator` it is given, so
# a run is repeatable. `flatten` turns images into the vectors a fully connected network takes (784 features
# for MNIST).

# %%
#| export
def batches(X: torch.Tensor, y: torch.Tensor, batch_size: int, generator: torch.Generator | None = None,
            shuffle: bool = True, drop_last: bool = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    "One epoch of `(X_batch, y_batch)` minibatches, shuffled with `generator` (a CPU `torch.Generator`)."
    if len(X) != len(y):
        raise ValueError(f"X and y differ in length: {len(X)} vs {len(y)}")
    if len(X) == 0:
        raise ValueError("cannot draw batches from empty data")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = torch.randperm(len(X), generator=generator) if shuffle else torch.arange(len(X))   # [n]
    order = order.to(X.device)
    stop = len(X) - len(X) % batch_size if drop_last else len(X)
    for start in range(0, stop, batch_size):
        idx = order[start:start + batch_size]
        yield X[idx], y[idx]

def flatten(X: torch.Tensor) -> torch.Tensor:
    "Images (n, ...) as vectors (n, features), e.g. MNIST (n, 1, 28, 28) -> (n, 784)."
    return X.reshape(len(X), -1)


# %% [markdown]
# The checks use 1,000 random "images" of MNIST's shape with labels 0..9, so that they hold for any dataset:
# every example comes once per epoch, the shuffle is seeded and repeatable, and flattening keeps the examples
# apart.

# %%
X = torch.rand(1000, 1, 28, 28, generator=torch.Generator().manual_seed(0))    # [n, channels, height, width]
y = torch.arange(1000) % 10
sizes = [len(xb) for xb, yb in batches(X, y, 256, torch.Generator().manual_seed(0))]
assert sum(sizes) == len(X) and max(sizes) == 256                 # every example once per epoch
seen = torch.cat([yb for _, yb in batches(X, y, 256, torch.Generator().manual_seed(0))])
assert torch.equal(seen.sort().values, y.sort().values)
first = lambda s: next(batches(X, y, 256, torch.Generator().manual_seed(s)))[1]
assert torch.equal(first(1), first(1)) and not torch.equal(first(1), first(2))   # seeded and repeatable
assert flatten(X).shape == (1000, 784) and torch.equal(flatten(X)[7], X[7].ravel())
sizes

# %%
#| hide
import nbdev
nbdev.nbdev_export()
