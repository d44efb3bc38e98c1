"""Fixtures shared by the test files."""
import os

import numpy as np
import pytest

# Under pytest-xdist each worker gets its share of the cores (fracsgd.core.cpu_cores reads FRACSGD_CPUS; torch and the
# processes the tests start follow OMP_NUM_THREADS): threads of two workers competing for two cores mostly wait.
_WORKERS = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))
if _WORKERS > 1:
    from fracsgd.core import share_of_cores
    os.environ.update(share_of_cores(_WORKERS))
    import torch
    torch.set_num_threads(int(os.environ['OMP_NUM_THREADS']))

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
