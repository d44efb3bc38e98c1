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


def pytest_collection_modifyitems(config, items):
    """Under `pytest -n N --dist loadgroup` (as `make test` runs it), keep the tests that start a Ray cluster on one
    worker, one after the other (two local clusters at once would compete for ports and cores), and the site
    tests together, so that one worker opens one headless browser on one built site."""
    for item in items:
        path = item.nodeid.split('::')[0]
        if 'ray' in item.nodeid.split('::', 1)[-1].lower():
            item.add_marker(pytest.mark.xdist_group('ray'))
        elif path.endswith('test_site.py'):
            item.add_marker(pytest.mark.xdist_group('site'))
