"""Ground-truth tests for `fracsgd.diffusion.return_probability`: the spectral dimension from the return probability of a
trajectory, P(|w_{s+τ} − w_s| < ε) ~ τ^{−d_s/2}.

Known values (none chosen here): Brownian motion in R^d has d_s = d (and P_ε(τ) = F_{χ²_d}(ε²/τ) exactly for unit
Gaussian steps); Sierpinski gasket d_s = 2 ln3/ln5 (exact); 2-D critical percolation d_s = 2·(91/48)/2.878 ≈ 1.317
(Grassberger 1999; Alexander–Orbach 4/3 is 1% higher); square lattice d_s = 2, and the lazy walk's return
probability there has the closed form of `lattice_return_probability`.
"""
import math

import numpy as np
import pytest

import fracsgd.diffusion.return_probability as rp

from fracsgd.diffusion.return_probability import (ReturnCurves, gaussian_return_probability, gaussian_walks,
                                        graph_walk_positions, lattice_return_probability, pairs_needed,
                                        return_curves, spectral_dimension_from_returns, distinct_cells)
from fracsgd.diffusion.spectral import spectral_dimension_from_volume
from fracsgd.diffusion.walks import (GASKET_DS, PERCOLATION_2D_DS, ALEXANDER_ORBACH_DS, interior_nodes, percolation_cluster,
                           propagate_walk, sierpinski_gasket, square_lattice)


@pytest.mark.parametrize('d, steps', [(1, 4000), (2, 4000), (3, 10000)])
def test_brownian_motion_in_rd_has_ds_d(d, steps):
    x = gaussian_walks(200, steps, d, seed=d)
    c = return_curves(x, [0.5, 2.0], n_tau=30)
    for e in c.eps:
        f = spectral_dimension_from_returns(c, e, n_boot=200)
        assert f.ci_low <= d <= f.ci_high, (d, e, f)
        assert f.ci_high - f.ci_low < 0.4 * d, f


def test_counted_curve_matches_the_exact_gaussian_return_probability():
    x = gaussian_walks(200, 3000, 2, seed=11)
    c = return_curves(x, [1.0], n_tau=20)
    exact = gaussian_return_probability(c.tau, 1.0, 2)
    big = exact > 1e-3
    np.testing.assert_allclose(c.probability[0][big], exact[big], rtol=0.15)
    np.testing.assert_allclose(c.msd, 2 * c.tau, rtol=0.05)               # MSD of the increments: dτ


def test_transient_walk_returns_give_d_where_the_explored_volume_saturates():
    # the point: for d >= 3 the count of distinct cells grows like t whatever d is, returns do not
    x = gaussian_walks(200, 10000, 4, seed=4)
    f = spectral_dimension_from_returns(return_curves(x, [2.0], n_tau=30), n_boot=200)
    assert f.ci_low <= 4 <= f.ci_high, f
    ts = np.unique(np.geomspace(10, 10000, 12).astype(int))
    vol = spectral_dimension_from_volume(ts, distinct_cells(x[:40], 1.0, ts), n_boot=0)['d_s']
    assert vol < 2.1, vol


def test_one_trajectory_uses_blocks_of_start_times():
    x = gaussian_walks(1, 100_000, 2, seed=5)[0]                          # [steps, params]
    c = return_curves(x, 1.0)
    assert c.unit == 'blocks' and c.hits.shape[0] == 16 and c.tau.max() <= 100_001 // 17
    f = spectral_dimension_from_returns(c, n_boot=200)
    assert f.ci_low <= 2 <= f.ci_high and f.n_units == 16, f


@pytest.mark.parametrize('seed', [1, 3])
def test_sierpinski_gasket(seed):
    # The gasket's return probability is log-periodic in τ (period a factor 5): a window that is not a whole number
    # of periods tilts the slope by a few per cent, so the test allows 5% around the exact value (four seeds of
    # this set-up gave 1.324, 1.355, 1.360, 1.377 against 1.365) and asks for an interval narrower than 0.1.
    g = sierpinski_gasket(9)
    starts = np.random.default_rng(seed).choice(interior_nodes(g, 128), 150)
    x = graph_walk_positions(g, starts, 5**6, seed=seed)
    f = spectral_dimension_from_returns(return_curves(x, [0.5], n_tau=30), n_boot=200)
    assert abs(f.d_s / GASKET_DS - 1) < 0.05 and f.ci_high - f.ci_low < 0.1, f


def test_square_lattice_against_its_exact_heat_kernel():
    lat = square_lattice(41)
    exact = propagate_walk(lat, interior_nodes(lat, 20)[0], 15, lazy=True).return_probability[1:]
    np.testing.assert_allclose(lattice_return_probability(np.arange(1, 16)), exact, rtol=1e-12)
    big = square_lattice(301)
    x = graph_walk_positions(big, np.full(200, interior_nodes(big, 150)[0]), 5000, seed=0, lazy=True)
    c = return_curves(x, [0.5], n_tau=30)
    ref = lattice_return_probability(c.tau)
    np.testing.assert_allclose(c.probability[0][ref > 0.01], ref[ref > 0.01], rtol=0.1)
    f = spectral_dimension_from_returns(c, n_boot=200)
    assert f.ci_low <= 2 <= f.ci_high, f


def test_critical_percolation_on_a_late_window():
    # on critical clusters the effective exponent creeps up with time: the automatic window (from τ ≈ 30) reads
    # ~8% low, a window from τ = 300 covers the known value
    x = []
    for seed in range(4):
        cl = percolation_cluster(512, seed=seed)
        starts = np.random.default_rng(seed).choice(interior_nodes(cl, 128), 100)
        x.append(graph_walk_positions(cl, starts, 10**4, seed=seed, lazy=True))
    c = return_curves(np.concatenate(x), [0.5], n_tau=40)
    late = spectral_dimension_from_returns(c, tau_min=300, n_boot=200)
    assert late.ci_low <= PERCOLATION_2D_DS <= late.ci_high, late
    assert late.ci_low <= ALEXANDER_ORBACH_DS <= late.ci_high, late
    early = spectral_dimension_from_returns(c, n_boot=0)
    assert 0.85 < early.d_s / PERCOLATION_2D_DS < 1.0, early


def test_it_declines_where_the_data_cannot_support_a_fit():
    few = return_curves(gaussian_walks(20, 2000, 8, seed=0), [1.0], n_tau=20)
    f = spectral_dimension_from_returns(few)
    assert math.isnan(f.d_s) and 'fewer than 100 returns' in f.reason
    short = return_curves(gaussian_walks(20, 200, 1, seed=0), [20.0], n_tau=20)
    f = spectral_dimension_from_returns(short)
    assert math.isnan(f.d_s) and ('too large' in f.reason or 'too short' in f.reason), f
    # the requirement grows like a power of d: 8 dimensions need ~10^9 pairs per lag, 20 dimensions ~10^18
    needed = [pairs_needed(d) for d in range(1, 21)]
    assert np.all(np.diff(needed) > 0) and needed[7] > 1e8 and needed[19] > 1e17


def test_an_exact_power_law_comes_back_exactly():
    tau = np.arange(1, 101)
    hits = (1e6 * tau[None, None] ** -0.6).repeat(4, 0)
    c = ReturnCurves(tau, np.array([1.0]), hits, np.full((4, 100), 1e6), np.full(100, 1e9), 'walkers')
    assert abs(spectral_dimension_from_returns(c, n_boot=10).d_s - 1.2) < 1e-12


@pytest.mark.parametrize('bad, message', [(np.full((5, 2), np.nan), 'NaN'), (np.zeros(4), 'shape'),
                                          (np.zeros((2, 2, 2, 2)), 'shape'), (np.zeros((2, 2)), 'at least 3')])
def test_bad_input_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        return_curves(bad, 1.0)
    with pytest.raises(ValueError, match='eps'):
        return_curves(np.zeros((10, 2)), -1.0)


def test_projection_keeps_the_spectral_dimension_of_a_walk_in_a_plane():
    """A 2-D Gaussian walk turned into R^500 and read through a 48-dimensional ProjectedPath still reads d_s = 2,
    and PerChunk gives each chunk its own recorder and puts the members back in ensemble order."""
    import torch
    from fracsgd.train.ensemble import PerChunk
    from fracsgd.diffusion.return_probability import ProjectedPath, projected_paths
    flat = rp.gaussian_walks(60, 2000, 2, seed=4)
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((500, 2)))[0]
    obs = PerChunk(lambda: ProjectedPath(dim=48, seed=1))
    class Chunk:                                               # what PerChunk reads of a trainer
        def __init__(self, members): self.members = members
    for members in (range(0, 30), range(30, 60)):
        trainer = Chunk(list(members))
        for t in range(flat.shape[1]):
            trainer.w = torch.as_tensor(flat[list(members), t] @ Q.T)
            obs.observe(trainer, t)
    steps, paths = projected_paths(obs)
    assert paths.shape == (60, 2001, 48) and steps[-1] == 2000
    assert set(obs.table().member) == set(range(60))
    fit = rp.spectral_dimension_from_returns(rp.return_curves(paths, 1.0, n_tau=15), n_boot=100)
    assert fit.ci_low <= 2 <= fit.ci_high, fit


def test_gaussian_equivalent_dimension_reads_d_and_bounds_it_from_below():
    for d in (3, 8):
        c = rp.return_curves(rp.gaussian_walks(40, 3000, d, seed=d), [1.5 * np.sqrt(d)], n_tau=15)
        ged = rp.gaussian_equivalent_dimension(c)
        counted = (c.hits[:, 0].sum(0) >= 200) & np.isfinite(ged)
        assert counted.sum() >= 2 and np.all(np.abs(ged[counted] / d - 1) < 0.15), (d, ged)
    high = rp.returns_summary(rp.path_returns(rp.gaussian_walks(30, 2000, 40, seed=2)), n_boot=0)
    bound = high.gaussian_equivalent_d.dropna()                       # NaN where no lag has MSD ≥ ε²/0.03
    assert (high.returns_far == 0).all() and len(bound) >= 3 and (bound > 4).all() and (bound <= 40).all()
