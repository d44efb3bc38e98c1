# %% [markdown]
# # Convolutional and residual nets
#
# > The nine CIFAR-10 architectures of the paper's appendix I.3 (tables 5 and 6), with Xavier initialisation, zero biases and ReLU, and their parameter counts beside the paper's.

# %%
#| default_exp nets.convnets

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
import torch.nn.functional as F
from torch import nn

from fracsgd.core import require

# %%
import math
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

# %% [markdown]
# ## ImageNet-pretrained nets from torchvision
#
# The [Tiny ImageNet study](tiny_imagenet_study.html) (table 1's vision rows, appendix G.2) fine-tunes torchvision's
# ImageNet-pretrained ResNet18, ResNet34, VGG11 and VGG16 with a new output layer. `ImageNetInput` turns stored
# `uint8` images into what an ImageNet net expects: scaled to [0, 1], resized to `size`×`size` (bilinear) and
# normalised per channel. Keeping it inside the model means that the data stay small (64×64 bytes) in memory,
# also for the LLC's sampler. It computes in the dtype of its own buffers, and a new head takes the device and
# dtype of the one it replaces, so the net follows wherever it is placed.

# %%
#| export
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
ARCHS = ('resnet18', 'resnet34', 'vgg11', 'vgg16')

def arch_weights(arch: str, n_classes: int = 1000) -> int:
    "Weights of torchvision's `arch` with an `n_classes` head, counted on the meta device (nothing is allocated)."
    with torch.device('meta'):
        return sum(p.numel() for p in require('torchvision.models').get_model(arch, weights=None,
                                                                              num_classes=n_classes).parameters())

class ImageNetInput(nn.Module):
    "uint8 (or [0, 1] float) images [B, 3, h, w] → resized to `size`×`size`, ImageNet-normalised floats."
    def __init__(self, size: int = 224):
        super().__init__()
        self.size = int(size)
        self.register_buffer('mean', torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer('std', torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, x):
        x = x.to(self.mean.dtype).div(255) if x.dtype == torch.uint8 else x
        if tuple(x.shape[-2:]) != (self.size, self.size):
            x = F.interpolate(x, size=(self.size, self.size), mode='bilinear', align_corners=False)
        return (x - self.mean) / self.std

class FineTuneNet(nn.Module):
    "A torchvision classifier `net` behind an `ImageNetInput`."
    def __init__(self, net: nn.Module, size: int = 224):
        super().__init__()
        self.input, self.net = ImageNetInput(size), net

    def forward(self, x):
        return self.net(self.input(x))

    @property
    def head_name(self) -> str:
        "The prefix of the output layer's parameters: 'net.fc.' or 'net.classifier.6.'."
        return 'net.fc.' if hasattr(self.net, 'fc') else f'net.classifier.{len(self.net.classifier) - 1}.'

    @property
    def head(self) -> nn.Linear:
        "The output layer: `fc` of a ResNet, the last layer of a VGG's `classifier`."
        return self.net.fc if hasattr(self.net, 'fc') else self.net.classifier[-1]

    def new_head(self, n_classes: int, seed: int = 0):
        "A fresh output layer of `n_classes` units in place of the old one (on its device, in its dtype)."
        torch.manual_seed(seed)
        old = self.head
        new = nn.Linear(old.in_features, n_classes).to(old.weight.device, old.weight.dtype)
        if hasattr(self.net, 'fc'):
            self.net.fc = new
        else:
            self.net.classifier[-1] = new


# %% [markdown]
# `build_net` asks torchvision for the pretrained weights (`weights="IMAGENET1K_V1"`, cached in
# `~/.cache/torch/hub/checkpoints` after the first download). When they cannot be had, the error says what to do;
# `weights='scratch'` builds the same architecture from a random initialisation, for the stand-in.

# %%
#| export
class PretrainedWeightsMissing(OSError):
    "torchvision could not provide the pretrained weights."

def build_net(arch: str, weights: str = 'IMAGENET1K_V1', size: int = 224, seed: int = 0) -> FineTuneNet:
    "torchvision's `arch` with `weights` ('IMAGENET1K_V1', or 'scratch': random init) behind an `ImageNetInput`."
    models = require('torchvision.models')
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    torch.manual_seed(seed)
    if weights == 'scratch':
        return FineTuneNet(models.get_model(arch, weights=None), size)
    try:
        net = models.get_model(arch, weights=weights)
    except Exception as e:
        raise PretrainedWeightsMissing(
            f"torchvision could not provide the {weights} weights of {arch} ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:200]}): connect once to download them (they are cached under "
            "~/.cache/torch/hub/checkpoints), or pass --stand-in (`run_study(..., stand_in=True)` in Python) to "
            "use the same architecture trained briefly here from scratch, labelled as a stand-in") from e
    return FineTuneNet(net, size)


# %%
net = build_net('resnet18', 'scratch', size=32)
assert net(torch.zeros(2, 3, 16, 16, dtype=torch.uint8)).shape == (2, 1000)
net.new_head(10)
assert net.head.out_features == 10 and net(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)).shape == (2, 10)
net.to(torch.float64).new_head(10)                           # a new head follows the net's dtype
assert net(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)).dtype == torch.float64
vgg = build_net('vgg11', 'scratch', size=32)
vgg.new_head(200)
assert vgg.head is vgg.net.classifier[6] and vgg.head.out_features == 200
assert {n for n, _ in vgg.named_parameters() if n.startswith(vgg.head_name)} == {'net.classifier.6.weight', 'net.classifier.6.bias'}
del vgg, net


# %% [markdown]
# Helpers for fine-tuning such a net: `head_features` computes what its head sees for each image (in eval
# mode, so batch norm's statistics are frozen and dropout is off), `evaluate` gives a classifier's mean loss and
# accuracy on a set of images, `activation_bytes` counts a net's layer outputs per image (what a training step
# holds for its backward pass, about; on the meta device, without allocating them) and `fine_tune_bytes` adds up
# what fine-tuning holds beside the weights (a pass's layer outputs, the stored images, the head's features), and
# `pretrain_from_scratch` makes the stand-in for pretrained weights when
# torchvision's cannot be had: `steps` Adam steps (PyTorch's fused implementation) on all weights, from scratch,
# on images that the fine-tuning never sees. Data are anything with images `X` and labels `y` (a
# `fracsgd.datasets.tiny_imagenet.ImageSet`); everything follows the net's and the data's device.

# %%
#| export
def _batches(n: int, batch: int, gen: torch.Generator):
    "An endless stream of index batches, reshuffled every epoch (the last partial batch is kept)."
    while True:
        perm = torch.randperm(n, generator=gen)
        yield from perm.split(batch)

def pretrain_from_scratch(model: FineTuneNet, data, steps: int, batch: int, seed: int = 0,
                          lr: float = 1e-4) -> float:
    "The stand-in for pretrained weights: `steps` Adam steps (`lr`) on all weights; returns the last loss."
    model.train()
    opt, gen, loss = torch.optim.Adam(model.parameters(), lr=lr, fused=True), torch.Generator().manual_seed(seed), None
    for _, idx in zip(range(steps), _batches(len(data.y), batch, gen)):
        loss = F.cross_entropy(model(data.X[idx]), data.y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return float('nan') if loss is None else loss.item()

@torch.no_grad()
def head_features(model: FineTuneNet, X: torch.Tensor, batch: int = 256) -> torch.Tensor:
    "What the head sees for each image (eval mode: frozen batch norm, no dropout): [n, in_features]."
    got = []
    hook = model.head.register_forward_pre_hook(lambda m, args: got.append(args[0].detach()))
    model.eval()
    try:
        for s in range(0, len(X), batch):
            model(X[s:s + batch])
    finally:
        hook.remove()
    return torch.cat(got)

@torch.no_grad()
def evaluate(model: nn.Module, data, batch: int = 256) -> tuple[float, float]:
    "Mean loss and accuracy of `model` in eval mode on `data`."
    model.eval()
    out = torch.cat([model(data.X[s:s + batch]) for s in range(0, len(data.y), batch)])
    return float(F.cross_entropy(out, data.y)), float((out.argmax(1) == data.y).double().mean())


def activation_bytes(model: nn.Module, sample: torch.Tensor) -> int:
    """Bytes of the outputs of `model`'s leaf modules per sample of the batch `sample` (eval mode): about what a
    training step keeps for its backward pass, per sample. On the meta device (`model` and `sample` there) it
    allocates nothing; an in-place layer returns its input, which counts once."""
    seen = {}
    def keep(module, args, out):
        seen.update({id(o): o for o in (out if isinstance(out, (tuple, list)) else [out]) if torch.is_tensor(o)})
    hooks = [m.register_forward_hook(keep) for m in model.modules() if not list(m.children())]
    was = model.training
    try:
        with torch.no_grad():
            model.eval()(sample)
    finally:
        model.train(was)
        for h in hooks:
            h.remove()
    return sum(o.numel() * o.element_size() for o in seen.values()) // len(sample)

def fine_tune_bytes(run) -> dict[str, int]:
    """What fine-tuning `run` holds beside its weights' copies, counted on the meta device: the layer outputs of its
    largest pass with gradients (a batch, or eval_batch / 4 images; twice, forward and backward), its images (uint8)
    and the head's input features (float32). `run`: anything with arch, image_size, store_size, batch_size,
    eval_batch, n_classes, per_class and test_per_class (None: Tiny ImageNet's 500 and 50), as a TinyRun has."""
    train, test = run.n_classes * (run.per_class or 500), run.n_classes * (run.test_per_class or 50)
    with torch.device('meta'):
        net = build_net(run.arch, 'scratch', run.image_size)
        per_image = activation_bytes(net, torch.zeros(2, 3, run.store_size, run.store_size, dtype=torch.uint8))
    return dict(activations=2 * per_image * max(run.batch_size, run.eval_batch // 4),
                images=(train + test) * 3 * run.store_size ** 2, features=train * net.head.in_features * 4)


# %%
from types import SimpleNamespace
net = build_net('resnet18', 'scratch', size=32)
net.new_head(3)
toy = SimpleNamespace(X=torch.randint(0, 256, (6, 3, 32, 32), dtype=torch.uint8), y=torch.tensor([0, 1, 2] * 2))
assert head_features(net, toy.X, batch=4).shape == (6, net.head.in_features)
assert math.isfinite(pretrain_from_scratch(net, toy, steps=2, batch=4)) and 0 <= evaluate(net, toy)[1] <= 1
del net
with torch.device('meta'):                          # nothing allocated: a conv (8 x 8 x 8 floats), its ReLU, the head
    assert activation_bytes(conv_net((8,)), torch.zeros(2, 3, 8, 8)) == 4 * (512 + 512 + 10)
    vgg = build_net('vgg16', 'scratch', size=224)      # in-place ReLUs count once
    print(f"VGG-16 at 224 pixels: {activation_bytes(vgg, torch.zeros(2, 3, 64, 64, dtype=torch.uint8)) / 2 ** 20:.0f} MB "
          "of layer outputs per image")
run = SimpleNamespace(arch='resnet18', image_size=32, store_size=32, batch_size=16, eval_batch=64, n_classes=10,
                      per_class=5, test_per_class=2)
small = fine_tune_bytes(run)
assert small['images'] == 70 * 3 * 32 * 32 and small['features'] == 50 * 512 * 4 and small['activations'] > 0

# %%
#| hide
import nbdev
nbdev.nbdev_export()
