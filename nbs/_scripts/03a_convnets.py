# %% [markdown]
# # Convolutional and residual nets
#
# > The nine CIFAR-10 architectures of the paper's appendix I.3 (tables 5 and 6), with Xavier initialisation, zero biases and ReLU, and their parameter counts beside the paper's.

# %%
#| default_exp convnets

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from collections import OrderedDict
from typing import Sequence

import pandas as pd
import torch
from torch import nn

# %%
torch.set_num_threads(1)   # two cores shared with other work


# %% [markdown]
# Appendix I.3 of the ICLR version trains four convolutional nets (table 5) and five residual nets (table 6) on a
# 10,000-image subset of CIFAR-10, "Xavier initialization, with 0 bias and ReLU activations". Each row gives only
# the channel widths and a `Num Params` column. Kernel size, strides, pooling, normalisation and the head are not
# printed. We chose the simplest reading that reproduces **every** `Num Params` entry exactly, and check it below:
#
# * **conv nets** (table 5): 3×3 convolutions without bias, 3 → $c_1$ → $c_2$ …, each followed by ReLU; a 2×2 max
#   pool between convolutions; global average pooling; a bias-free linear head to 10 classes. Parameters:
#   $9\cdot3c_1 + \sum_i 9c_ic_{i+1} + 10c_{last}$.
# * **residual nets** (table 6): a 3×3 stem convolution 3 → $c_0$ *with* a bias (the only bias: table 6's counts
#   need exactly one extra vector of length $c_0$, and a bias is the reading that needs nothing else; a batch-norm
#   layer would add two such vectors), then for each further width $c$ one 3×3 transition convolution (stride 2)
#   and two residual blocks of two 3×3 convolutions with identity skips; global average pooling; a bias-free head.
#   Parameters: $27c_0 + c_0 + \sum (9c_{prev}c + 4\cdot9c^2) + 10c_{last}$.
#
# Pooling and strides change no parameter count, so the counts cannot pin them down; they are arguments
# (`pool`, `stride`) and our defaults keep the largest nets affordable on a CPU. The first row of table 6 has a
# single width, so it has no residual block at all: it is table 5's smallest net plus a stem bias, and the paper
# reports the same $d_s$ and LLC (0.085, 2.585 ± 0.779) for both rows, which we note but cannot explain.

# %%
#| export
def xavier_init_(net: nn.Module) -> nn.Module:
    "Xavier-uniform weights for every convolution and linear layer of `net`, zero biases (appendix I.3); in place."
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return net

def _check_channels(channels) -> tuple[int, ...]:
    ch = tuple(int(c) for c in channels)
    if not ch or any(c < 1 for c in ch):
        raise ValueError(f"channels must list ≥ 1 positive widths, got {channels!r}")
    return ch

class _Head(nn.Module):
    "Global average pooling and a bias-free linear layer."
    def __init__(self, width: int, n_classes: int):
        super().__init__()
        self.fc = nn.Linear(width, n_classes, bias=False)
    def forward(self, x):
        return self.fc(x.mean((-2, -1)))


# %%
#| export
def conv_net(channels: Sequence[int], n_classes: int = 10, in_channels: int = 3, pool: bool = True,
             seed: int | None = None) -> nn.Sequential:
    "Table 5's conv net: bias-free 3×3 convs `in_channels`→`channels`…, ReLU, 2×2 max pool between them (`pool`), GAP, bias-free head."
    ch = _check_channels(channels)
    if seed is not None:
        torch.manual_seed(seed)
    layers, prev = [], int(in_channels)
    for i, c in enumerate(ch, 1):
        block = ([('pool', nn.MaxPool2d(2))] if pool and i > 1 else []) + [
            ('conv', nn.Conv2d(prev, c, 3, padding=1, bias=False)), ('relu', nn.ReLU())]
        layers.append((f'conv{i}', nn.Sequential(OrderedDict(block))))
        prev = c
    layers.append(('head', _Head(prev, n_classes)))
    return xavier_init_(nn.Sequential(OrderedDict(layers)))


# %%
#| export
class ResidualBlock(nn.Module):
    "Two bias-free 3×3 convolutions with ReLU and an identity skip: relu(x + conv2(relu(conv1(x))))."
    def __init__(self, width: int):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))

def residual_net(channels: Sequence[int], n_classes: int = 10, in_channels: int = 3, stride: int = 2,
                 blocks: int = 2, seed: int | None = None) -> nn.Sequential:
    "Table 6's residual net: a biased stem conv to `channels[0]`, then per further width a transition conv (`stride`) and `blocks` residual blocks; GAP, bias-free head."
    ch = _check_channels(channels)
    if seed is not None:
        torch.manual_seed(seed)
    stem = [('conv', nn.Conv2d(in_channels, ch[0], 3, padding=1, bias=True)), ('relu', nn.ReLU())]
    layers = [('stem', nn.Sequential(OrderedDict(stem)))]
    for i, (a, b) in enumerate(zip(ch[:-1], ch[1:]), 1):
        stage = [('transition', nn.Conv2d(a, b, 3, stride=stride, padding=1, bias=False)), ('relu', nn.ReLU())]
        stage += [(f'block{k}', ResidualBlock(b)) for k in range(1, blocks + 1)]
        layers.append((f'stage{i}', nn.Sequential(OrderedDict(stage))))
    layers.append(('head', _Head(ch[-1], n_classes)))
    return xavier_init_(nn.Sequential(OrderedDict(layers)))


# %%
net = residual_net((32, 64), seed=0)
assert net(torch.randn(2, 3, 32, 32)).shape == (2, 10)
assert all((m.bias == 0).all() for m in net.modules() if isinstance(m, nn.Conv2d) and m.bias is not None)
w = net.stage1.block1.conv1.weight
bound = (6 / (w.shape[1] * 9 + w.shape[0] * 9)) ** 0.5          # Xavier-uniform: U(-b, b), b = sqrt(6 / (fan_in + fan_out))
assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound
assert conv_net((32, 64, 128))(torch.randn(2, 3, 32, 32)).shape == (2, 10)
assert [n for n, _ in conv_net((8, 8)).named_parameters()] == ['conv1.conv.weight', 'conv2.conv.weight', 'head.fc.weight']
[n for n, _ in net.named_parameters()]

# %% [markdown]
# ## The nine architectures and their parameter counts
#
# `ARCHITECTURES` lists the rows of tables 5 and 6 in the paper's order, each with the paper's `Num Params`.
# `parameter_table` builds each net and sets our count beside the paper's.

# %%
#| export
ARCHITECTURES = pd.DataFrame(
    [('conv', (32,), 1184), ('conv', (32, 64), 19936), ('conv', (32, 64, 128), 94304),
     ('conv', (64, 128, 256), 372928),
     ('residual', (32,), 1216), ('residual', (16, 32, 64), 208448), ('residual', (32, 64), 167424),
     ('residual', (32, 64, 128), 831616), ('residual', (16, 32, 64, 128), 872640)],
    columns=['family', 'channels', 'paper_params'])
ARCHITECTURES.insert(0, 'table', ARCHITECTURES.family.map({'conv': 5, 'residual': 6}))

def arch_name(family: str, channels) -> str:
    "A short name, e.g. 'conv-32-64' or 'residual-16-32-64'."
    return f"{family}-{'-'.join(str(int(c)) for c in channels)}"

def make_net(family: str, channels, n_classes: int = 10, seed: int | None = None, **kw) -> nn.Module:
    "The `family` ('conv' or 'residual') net with `channels`, built by `conv_net` or `residual_net`."
    makers = {'conv': conv_net, 'residual': residual_net}
    if family not in makers:
        raise ValueError(f"family must be 'conv' or 'residual', got {family!r}")
    return makers[family](channels, n_classes=n_classes, seed=seed, **kw)

def n_params(net: nn.Module) -> int:
    "Number of trainable parameters."
    return sum(p.numel() for p in net.parameters() if p.requires_grad)

def parameter_table() -> pd.DataFrame:
    "Tables 5 and 6's architectures with the paper's `Num Params` and ours."
    t = ARCHITECTURES.copy()
    t['ours'] = [n_params(make_net(f, c)) for f, c in zip(t.family, t.channels)]
    t['match'] = t.ours == t.paper_params
    t.insert(1, 'name', [arch_name(f, c) for f, c in zip(t.family, t.channels)])
    return t


# %%
counts = parameter_table()
assert counts.match.all(), counts
assert n_params(residual_net((32, 64))) == 864 + 32 + 18_432 + 4 * 36_864 + 640
assert n_params(residual_net((32,))) - n_params(conv_net((32,))) == 32     # the stem bias
counts

# %% [markdown]
# Every count matches. The channel lists alone would not have fixed them: a biased conv in every layer, batch
# norm, or a biased head would each break all nine rows. Bad input is refused:

# %%
for bad in [(), (0, 4)]:
    try:
        conv_net(bad)
        raise AssertionError('accepted')
    except ValueError as e:
        print(e)

# %%
#| hide
import nbdev
nbdev.nbdev_export()
