"""fracsgd.core: save_figures writes PNG files whole and closes the figures."""
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

from fracsgd.core import save_figures


def test_save_figures_writes_pngs_and_closes_them(tmp_path):
    figs = save_figures({'a': plt.figure(), 'b': plt.figure()}, tmp_path / 'out')
    assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == ['a.png', 'b.png']   # no temporary files left
    assert all((tmp_path / 'out' / f'{n}.png').read_bytes()[:4] == b'\x89PNG' for n in figs)
    assert not plt.get_fignums()
