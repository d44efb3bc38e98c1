# %% [markdown]
# # Modular arithmetic
#
# > The operation tables of the grokking experiments: division and addition modulo a prime, split into train and test pairs.

# %%
#| default_exp datasets.modular

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from typing import NamedTuple

import torch

# %% [markdown]
# The grokking experiment of the paper (arXiv 2503.22478, appendix E, fig. 11 and 13–14; ICLR version,
# appendix F, fig. 5–6) trains on one of the algorithmic tasks of Power et al. (2022): modular division
# modulo 53. The data set is the whole operation table: every pair $(a, b)$ with its answer $c = a \circ b \bmod p$;
# a network sees the two operands as tokens and must name $c$, one of $p$ classes. A random part of the
# table is the training set and the rest is the test set, so generalising means filling in the unseen cells.
#
# Division $a / b$ means $a\,b^{-1}$, where $b^{-1}$ is the inverse of $b$ in the field $\mathbb{Z}_p$. Every
# $b \ne 0$ has an inverse exactly when $p$ is prime; for a composite modulus, division is not an operation
# and the loader refuses it. Division by 0 is left out, so the division table has $p(p-1)$ rows (2,756 for
# $p = 53$), the addition table $p^2$. The inverse is computed by Fermat's little theorem, $b^{-1} = b^{p-2}
# \bmod p$.

# %%
#| export
OPERATIONS = ('division', 'addition')

def is_prime(p: int) -> bool:
    "Whether the integer `p` is a prime (trial division; moduli here are small)."
    if p < 2:
        return False
    return all(p % k for k in range(2, int(p ** 0.5) + 1))

def _check(p, operation: str):
    if isinstance(p, bool) or not isinstance(p, int) or p < 2:
        raise ValueError(f"the modulus p must be an integer ≥ 2, got {p!r}")
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; choose one of {OPERATIONS}")
    if operation == 'division' and not is_prime(p):
        raise ValueError(f"division mod {p} needs a prime modulus ({p} is not prime: some b ≠ 0 have no "
                         f"inverse); use a prime such as 53 (the paper's), or operation='addition'")

def operation_table(p: int, operation: str = 'division') -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair of operands and its answer mod `p`: `X` int64 (rows, 2) holding (a, b), `y` int64 (rows,).
    Division leaves out b = 0 and needs a prime `p`."""
    _check(p, operation)
    a = torch.arange(p).repeat_interleave(p)                 # [p²]
    b = torch.arange(p).repeat(p)                            # [p²]
    if operation == 'addition':
        return torch.stack([a, b], 1), (a + b) % p
    a, b = a[b > 0], b[b > 0]                                # [p(p-1)]
    inverse = torch.tensor([pow(k, p - 2, p) for k in range(p)])    # inverse[0] is unused
    return torch.stack([a, b], 1), (a * inverse[b]) % p


# %%
X, y = operation_table(7, 'division')
assert X.shape == (42, 2) and len(y) == 42
assert torch.all((y * X[:, 1]) % 7 == X[:, 0])              # c·b = a: c is a / b
assert operation_table(53)[0].shape == (53 * 52, 2)
Xa, ya = operation_table(5, 'addition')
assert Xa.shape == (25, 2) and torch.all(ya == (Xa[:, 0] + Xa[:, 1]) % 5)
assert [p for p in range(20) if is_prime(p)] == [2, 3, 5, 7, 11, 13, 17, 19]

# %% [markdown]
# A small table, as the network sees it: row $a$, column $b$, entry $a / b \bmod 7$.

# %%
grid = torch.full((7, 7), -1)
grid[X[:, 0], X[:, 1]] = y
grid


# %% [markdown]
# ## Train/test split
#
# The split is a seeded random permutation of the table's rows: the first `train_fraction` of it trains, the
# rest tests. Power et al. vary this fraction; the paper does not state the one it used, so it is a
# parameter. Both parts must be non-empty.

# %%
#| export
class ModularSplit(NamedTuple):
    "Train and test pairs of an operation table, and a `source` naming the task."
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    p: int
    source: str

def load_modular(p: int = 53, operation: str = 'division', train_fraction: float = 0.5, seed: int = 0,
                 device=None) -> ModularSplit:
    """The operation table mod `p` split at random (seed `seed`) into `train_fraction` training pairs and the
    rest as test pairs, on `device` (default: the CPU; the runner places a study's data)."""
    _check(p, operation)
    if isinstance(train_fraction, bool) or not isinstance(train_fraction, (int, float)) or not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be a number strictly between 0 and 1, got {train_fraction!r}")
    X, y = operation_table(p, operation)
    n_train = round(train_fraction * len(X))
    if not 0 < n_train < len(X):
        raise ValueError(f"train_fraction {train_fraction} leaves {n_train} of {len(X)} pairs for training: "
                         "both the training and the test set must be non-empty")
    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))
    tr, te = order[:n_train], order[n_train:]
    device = 'cpu' if device is None else device
    to = lambda t: t.to(device)
    source = f"{operation} mod {p}, {n_train} of {len(X)} pairs for training (split seed {seed})"
    return ModularSplit(to(X[tr]), to(y[tr]), to(X[te]), to(y[te]), p, source)


# %%
s = load_modular(53, 'division', 0.5, seed=0, device='cpu')
assert len(s.X_train) == 1378 and len(s.X_test) == 1378
pairs = lambda X: set(map(tuple, X.tolist()))
assert not pairs(s.X_train) & pairs(s.X_test)                # no pair in both
assert pairs(s.X_train) | pairs(s.X_test) == pairs(operation_table(53)[0])
assert torch.equal(load_modular(53, seed=0, device='cpu').X_train, s.X_train)      # the seed fixes the split
assert not torch.equal(load_modular(53, seed=1, device='cpu').X_train, s.X_train)
s.source

# %% [markdown]
# Bad input is named: a composite modulus for division, a fraction outside (0, 1), an unknown operation.

# %%
import pytest
for bad, words in [(dict(p=51), 'prime'), (dict(train_fraction=1.0), 'between 0 and 1'),
                   (dict(operation='product'), 'unknown operation'), (dict(p=1), 'integer ≥ 2'),
                   (dict(p=3, train_fraction=0.01), 'non-empty')]:
    with pytest.raises(ValueError, match=words):
        load_modular(**bad)
assert operation_table(51, 'addition')[0].shape == (51 ** 2, 2)      # addition needs no prime

# %%
#| hide
import nbdev
nbdev.nbdev_export()
