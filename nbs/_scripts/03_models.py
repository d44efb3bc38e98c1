# %% [markdown]
# # Models
#
# > The architectures of the studies, built from a few numbers: fully connected ReLU nets (with optional batch norm) and bias-free deep linear networks of a chosen rank.

# %%
#| default_exp nets.models

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import re
from collections import OrderedDict
from typing import Sequence

import torch
from torch import nn

from fracsgd.core import require


# %% [markdown]
# Every study builds its nets here, so a reader finds each architecture of the paper in one place, next to a
# check of its shape and parameter count. The convolutional and residual nets of the CIFAR-10 study, the
# modular-arithmetic nets of the grokking study and small transformers will join this chapter with those
# studies.
#
# ## Fully connected ReLU nets
#
# The paper's MNIST networks are fully connected ReLU nets with batch normalisation (appendix G.1); its moons
# networks have two hidden layers of 64 ReLU units (appendix G.4). `make_mlp` builds both from a list of layer
# sizes. Hidden layers are named `layer1`, `layer2`, … and the output layer `out`, so per-layer columns of the
# trajectory table read naturally.

# %%
#| export
def make_mlp(sizes: Sequence[int], batch_norm: bool = False, seed: int | None = None) -> nn.Sequential:
    "A fully connected ReLU net with layer `sizes` (input first), batch norm after hidden layers if asked."
    if len(sizes) < 2 or any(int(s) < 1 for s in sizes):
        raise ValueError(f"sizes must list ≥ 2 positive widths, got {sizes}")
    if seed is not None:
        torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-2], sizes[1:-1]), 1):
        block = [nn.Linear(a, b)] + ([nn.BatchNorm1d(b)] if batch_norm else []) + [nn.ReLU()]
        layers.append((f'layer{i}', nn.Sequential(*block)))
    layers.append(('out', nn.Linear(sizes[-2], sizes[-1])))
    return nn.Sequential(OrderedDict(layers))


# %%
net = make_mlp([2, 64, 64, 2], seed=0)
assert [n for n, _ in net.named_children()] == ['layer1', 'layer2', 'out']
assert sum(p.numel() for p in net.parameters()) == 2*64 + 64 + 64*64 + 64 + 64*2 + 2
assert net(torch.randn(5, 2)).shape == (5, 2)
assert any(isinstance(m, nn.BatchNorm1d) for m in make_mlp([784, 128, 64, 32, 10], batch_norm=True).modules())
net


# %% [markdown]
# ## Deep linear networks
#
# A deep linear network $f(x) = W_M\cdots W_1 x$ is the one family of deep nets whose learning coefficient is
# known exactly (Aoyagi 2024; Lau et al. 2024, appendix I), so it is the ground truth of the LLC estimator (see
# the [DLN chapter](dln.html)). `make_dln` builds one without biases at a *minimal-rank* parameter: every layer
# has rank $r$, with singular values drawn from $[0.5, 1.5]$, so the product map has rank $r$ as well.

# %%
#| export
def make_dln(layer_sizes: Sequence[int], rank: int, seed: int = 0) -> nn.Sequential:
    "A bias-free deep linear network with widths `layer_sizes` whose every layer has rank `rank`."
    if rank < 1 or rank > min(layer_sizes):
        raise ValueError(f"rank must be in [1, min(layer_sizes)={min(layer_sizes)}], got {rank}")
    g = torch.Generator().manual_seed(seed)
    layers = []
    for a, b in zip(layer_sizes[:-1], layer_sizes[1:]):
        U, _ = torch.linalg.qr(torch.randn(b, rank, generator=g))        # [b, rank], orthonormal columns
        V, _ = torch.linalg.qr(torch.randn(a, rank, generator=g))        # [a, rank]
        lin = nn.Linear(a, b, bias=False)
        lin.weight.data = (U * (0.5 + torch.rand(rank, generator=g))) @ V.T   # [b, a], rank `rank`
        layers.append(lin)
    return nn.Sequential(*layers)


# %% [markdown]
# `make_dln` draws each layer's row and column spaces independently, so the rank-$r$ subspaces of neighbouring
# layers meet at random angles, and the end-to-end map $W_L\cdots W_1$ has singular values that shrink with every
# layer: at depth 5 its smallest is often $10^{-3}$ or less. Such a truth has rank $r$ only for data sets large
# enough to see its smallest singular value (see the [LLC-at-depth chapter](llc_depth.html)).
# `make_balanced_dln` builds a minimal-rank network whose end-to-end map has its $r$ singular values drawn in
# `[low, high]`: the layers share their rank-$r$ subspaces, and each carries the $L$-th root of every singular
# value (a balanced factorization), so every layer still has rank $r$ and the product has the chosen spectrum.

# %%
#| export
def make_balanced_dln(layer_sizes: Sequence[int], rank: int, seed: int = 0, low: float = 0.5,
                      high: float = 1.5) -> nn.Sequential:
    """A bias-free DLN whose every layer has rank `rank` and whose end-to-end map has its `rank` singular
    values drawn uniformly in [`low`, `high`] (balanced: layer i is U_{i+1} diag(s^(1/L)) U_i^T)."""
    if rank < 1 or rank > min(layer_sizes):
        raise ValueError(f"rank must be in [1, min(layer_sizes)={min(layer_sizes)}], got {rank}")
    if not 0 < low <= high:
        raise ValueError(f"need 0 < low <= high for the singular values, got low={low}, high={high}")
    g = torch.Generator().manual_seed(seed)
    s = low + (high - low) * torch.rand(rank, generator=g)                       # end-to-end singular values
    bases = [torch.linalg.qr(torch.randn(h, rank, generator=g))[0] for h in layer_sizes]   # [h, rank] each
    depth, layers = len(layer_sizes) - 1, []
    for i, (a, b) in enumerate(zip(layer_sizes[:-1], layer_sizes[1:])):
        lin = nn.Linear(a, b, bias=False)
        lin.weight.data = (bases[i + 1] * s ** (1 / depth)) @ bases[i].T               # [b, a], rank `rank`
        layers.append(lin)
    return nn.Sequential(*layers)


# %%
deep = make_balanced_dln([9, 12, 7, 14, 10, 8], 3, seed=0)
end_to_end = deep[4].weight @ deep[3].weight @ deep[2].weight @ deep[1].weight @ deep[0].weight
assert all(torch.linalg.matrix_rank(layer.weight) == 3 for layer in deep)
sv_e2e = torch.linalg.svdvals(end_to_end)
assert (sv_e2e[:3] > 0.5 - 1e-4).all() and (sv_e2e[:3] < 1.5 + 1e-4).all() and sv_e2e[3] < 1e-5
random_angles = make_dln([9, 12, 7, 14, 10, 8], 3, seed=0)                 # the same shape, random subspaces
prod = random_angles[0].weight
for layer in list(random_angles)[1:]:
    prod = layer.weight @ prod
print('end-to-end singular values, balanced:', sv_e2e[:3].detach().numpy().round(3),
      ' random subspaces:', torch.linalg.svdvals(prod)[:3].detach().numpy().round(4))


# %% [markdown]
# `dln_data` draws inputs $x\sim\mathcal N(0,I)$ and labels them with the network itself, without noise, so the
# network's weights are a true parameter of the data. A one-layer DLN with its data is linear regression at its
# true weights: a regular model, whose learning coefficient is half its number of parameters (Lau et al. 2024,
# sec. 3).

# %%
#| export
def dln_data(model: nn.Sequential, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    "`n` noiseless samples `(x, f(x, w*))` with x ~ N(0, I) for a DLN built by `make_dln`."
    X = torch.randn(n, model[0].in_features, generator=torch.Generator().manual_seed(seed))   # [n, H_0]
    with torch.no_grad():
        return X, model(X)


# %%
dln = make_dln([10, 8, 10], 4, seed=0)
assert all(torch.linalg.matrix_rank(layer.weight) == 4 for layer in dln)
assert torch.linalg.matrix_rank(dln[1].weight @ dln[0].weight) == 4
assert [layer.weight.shape for layer in dln] == [(8, 10), (10, 8)]
sv = torch.linalg.svdvals(dln[0].weight)[:4]
assert (sv > 0.5 - 1e-5).all() and (sv < 1.5 + 1e-5).all()
try:
    make_dln([10, 8, 10], 9)
    raise AssertionError
except ValueError as e:
    assert 'rank' in str(e)
X_dln, y_dln = dln_data(dln, 500, seed=1)
assert X_dln.shape == (500, 10) and torch.equal(y_dln, dln(X_dln).detach())

# %% [markdown]
# ## A small language model: TinyStories-1M's configuration
#
# The [TinyStories study](tinystories_study.html) continues the training of small pretrained language models.
# Offline, its stand-in is a GPT-Neo model of Hugging Face's `transformers` with TinyStories-1M's configuration,
# read from the model's `config.json` on the hub, and the vocabulary of the stand-in tokenizer (the study's
# chapter builds it and counts its parameters). `block_groups` names the displacement group of a parameter of a
# GPT-Neo or Llama model: the embeddings, each transformer block, or the final norm.

# %%
#| export
# TinyStories-1M's config.json on the Hugging Face hub (roneneldan/TinyStories-1M), GPT-Neo architecture
TINYSTORIES_1M_CONFIG = dict(
    model_type='gpt_neo', vocab_size=50257, max_position_embeddings=2048, hidden_size=64, num_layers=8,
    attention_types=[[['global', 'local'], 4]], num_heads=16, intermediate_size=None, window_size=256,
    activation_function='gelu_new', resid_dropout=0.0, embed_dropout=0.0, attention_dropout=0.0,
    layer_norm_epsilon=1e-5, initializer_range=0.02, bos_token_id=50256, eos_token_id=50256,
    tie_word_embeddings=True)

def stand_in_config(vocab_size: int, eos_token_id: int):
    "TinyStories-1M's GPT-Neo configuration with the stand-in tokenizer's vocabulary and end-of-text id."
    GPTNeoConfig = require('transformers').GPTNeoConfig
    cfg = {k: v for k, v in TINYSTORIES_1M_CONFIG.items() if k != 'model_type'}
    return GPTNeoConfig(**{**cfg, 'vocab_size': vocab_size, 'bos_token_id': eos_token_id,
                           'eos_token_id': eos_token_id})

def block_groups(name: str) -> str:
    "Displacement group of a parameter of a GPT-Neo or Llama model: 'embeddings', 'block <i>' or 'final'."
    m = re.search(r'\.(?:h|layers)\.(\d+)\.', name)
    if m:
        return f'block {int(m.group(1))}'
    return 'embeddings' if re.search(r'wte|wpe|embed', name) else 'final'


# %%
names = ['lm.transformer.wte.weight', 'lm.transformer.h.3.attn.attention.q_proj.weight', 'lm.transformer.ln_f.bias',
         'lm.model.layers.12.mlp.up_proj.weight', 'lm.model.embed_tokens.weight']
assert [block_groups(n) for n in names] == ['embeddings', 'block 3', 'final', 'block 12', 'embeddings']

# %%
#| hide
import nbdev
nbdev.nbdev_export()
