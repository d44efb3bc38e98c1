"""Fixtures shared by the test files."""
import numpy as np
import pytest

from fracsgd.datasets.mnist import write_idx


@pytest.fixture
def mnist_files(tmp_path, monkeypatch):
    "FRACSGD_DATA pointing at a folder with 200 synthetic digits in the real IDX format (seed 0)."
    rng = np.random.default_rng(0)
    raw = tmp_path / 'data' / 'MNIST' / 'raw'
    labels = (np.arange(200) % 10).astype(np.uint8)
    images = (rng.random((200, 28, 28)) * 60 + labels[:, None, None] * 19).astype(np.uint8)  # learnable
    write_idx(raw / 't10k-images-idx3-ubyte.gz', images)
    write_idx(raw / 't10k-labels-idx1-ubyte.gz', labels)
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path / 'data'))
    return raw
