"""Ground-truth tests for `fracsgd.diffusion.walks`: random walks on media whose exponents are known.

Known values (none chosen here): Sierpinski gasket d_w = ln5/ln2, d_s = 2 ln3/ln5 (exact);
2-D critical percolation d_w = 2.878 (Grassberger 1999); square lattice d_w = 2 (Brownian motion).
Every fit goes through `fracsgd.diffusion.spectral.fit_power_law`, the code these tests validate along the way.
"""
import math

import numpy as np
import pytest

from fracsgd.diffusion.spectral import fit_power_law, spectral_dimension_from_volume
from fracsgd.diffusion.walks import (GASKET_DS, GASKET_DW, PERCOLATION_2D_DS, PERCOLATION_2D_DW, interior_nodes,
                           percolation_cluster, propagate_walk, simulate_walkers, sierpinski_gasket,
                           square_lattice)

# The gasket's R(t)/t^{1/d_w} is log-periodic with period ln 5 in ln t, so gasket fits span whole factors of 5
# in t, with points evenly spaced in log t.
GASKET_WINDOW = dict(t_min=5**2, t_max=5**6, n_log_points=200, n_boot=0)


@pytest.fixture(scope='module')
def gasket():
    # level 9 (side 512): a walker from a corner needs ~5^9 steps to feel the other corners; up to 5^6 steps the
    # exact MSD agrees with that of a level-10 gasket to machine precision, i.e. this is the infinite gasket.
    return sierpinski_gasket(9)


@pytest.fixture(scope='module')
def exact_gasket_walk(gasket):
    return propagate_walk(gasket, gasket.corners[0], 5**6)


@pytest.fixture(scope='module')
def gasket_walkers(gasket):
    # seed 0, 2000 walkers from one corner
    return simulate_walkers(gasket, np.full(2000, gasket.corners[0]), 5**6, seed=0)


def test_gasket_exact_displacement_slope(exact_gasket_walk):
    "Exact propagation: slope of R(t) = sqrt(MSD) is 1/d_w = ln2/ln5."
    w = exact_gasket_walk
    fit = fit_power_law(w.t, w.displacement, **GASKET_WINDOW)
    # No sampling noise: the only error is the residue of the log-periodic wiggle and of short-time corrections
    # (measured ~1e-4 relative); 1% is the ground-truth tolerance asked of the fitting code.
    assert fit.slope == pytest.approx(math.log(2) / math.log(5), rel=0.01)
    assert fit.r2 > 0.999


def test_gasket_monte_carlo_walk_dimension(gasket_walkers):
    "2000 Monte Carlo walkers (seed 0): d_w = 1/slope within 5% of ln5/ln2."
    w = gasket_walkers
    fit = fit_power_law(w.t, w.displacement, **GASKET_WINDOW)
    # Seeds 0, 1, 2 gave d_w within +0.9%, -0.5%, -0.5%: the walker-to-walker scatter is ~1%, so 5% is a
    # >3-sigma bound that still rejects ordinary diffusion (d_w = 2, 14% away).
    assert 1 / fit.slope == pytest.approx(GASKET_DW, rel=0.05)


@pytest.fixture(scope='module')
def percolation_walkers():
    runs = []
    for seed in range(8):  # seeds 0..7: eight independent clusters, the disorder average
        cluster = percolation_cluster(512, seed=seed)
        # starts uniform on the largest cluster (the local picture of the incipient infinite cluster), at least
        # 128 sites from the box edge; at t = 10^4, R(t) ~ 25, so no walker feels the box.
        starts = np.random.default_rng(seed).choice(interior_nodes(cluster, 128), 400)
        runs.append(simulate_walkers(cluster, starts, 10_000, seed=seed))
    return runs


def test_percolation_walk_dimension(percolation_walkers):
    "Walkers on critical percolation clusters: d_w within 10% of 2.878."
    msd = np.mean([w.msd for w in percolation_walkers], axis=0)
    fit = fit_power_law(np.arange(msd.size), np.sqrt(msd), t_min=100, t_max=10_000, n_log_points=100, n_boot=0)
    # The effective exponent approaches 2.878 slowly from below (finite-time corrections): ~2.70-2.75 at
    # t <= 10^4, ~2.84-2.87 at t ~ 10^5 on L = 1024 (too slow here). 10% covers that bias plus cluster-to-cluster
    # scatter (~2%) and still rejects d_w = 2 (30% away) and the gasket's 2.32 (19% away).
    assert 1 / fit.slope == pytest.approx(PERCOLATION_2D_DW, rel=0.10)


def test_percolation_spectral_dimension_from_distinct_sites(percolation_walkers):
    "S(t) on critical percolation clusters: d_s within 10% of 2 d_f / d_w = 1.317 (Alexander-Orbach: 4/3)."
    S = np.mean([w.distinct_sites for w in percolation_walkers], axis=0)
    est = spectral_dimension_from_volume(np.arange(S.size), S, t_min=100, t_max=10_000, n_log_points=100, n_boot=0)
    # Same slow approach from below as d_w (~4% low at t <= 10^4 and still ~4% at 10^5 on L = 1024); 10% covers it
    # and still rejects the square lattice's d_s = 2.
    assert est['d_s'] == pytest.approx(PERCOLATION_2D_DS, rel=0.10)


def test_square_lattice_brownian_slope():
    "Square lattice: R(t) ~ t^{1/2}, slope within 2%."
    lattice = square_lattice(201)
    centre = interior_nodes(lattice, 100)[0]
    w = simulate_walkers(lattice, np.full(10_000, centre), 1000, seed=0)  # seed 0
    fit = fit_power_law(w.t, w.displacement, t_min=10, t_max=1000, n_log_points=100, n_boot=0)
    # Seeds 0..4 gave slopes within 0.8% of 1/2 (sd ~0.4% with 10^4 walkers), so 2% is a ~5-sigma bound.
    # R(1000) ~ 32 << 100 sites to the edge, so the open boundary is not felt.
    assert fit.slope == pytest.approx(0.5, rel=0.02)


def test_gasket_spectral_dimension_from_return_probability(exact_gasket_walk):
    "Exact P0(t) ~ t^{-d_s/2}: d_s within 1% of 2 ln3/ln5."
    w = exact_gasket_walk
    fit = fit_power_law(w.t, w.return_probability, **GASKET_WINDOW)
    # Exact numbers again (measured error ~0.3%): 1% tolerance.
    assert -2 * fit.slope == pytest.approx(GASKET_DS, rel=0.01)


def test_gasket_spectral_dimension_from_distinct_sites(gasket_walkers):
    "Distinct sites visited S(t) ~ t^{d_s/2} (paper eq. 8): d_s within 5% of 2 ln3/ln5."
    w = gasket_walkers
    est = spectral_dimension_from_volume(w.t, w.distinct_sites, t_min=5**3, t_max=5**6, n_log_points=200, n_boot=0)
    # S(t) reaches t^{d_s/2} from below (a constant offset in S, e.g. the start site, weighs at short times):
    # ~1-2% low on this window with seeds 0..2, plus <1% walker noise; 5% still tells d_s = 1.365 from
    # d_s = 2 (the square lattice) and from 4/3 only loosely, which is all S(t) can do at these times.
    assert est['d_s'] == pytest.approx(GASKET_DS, rel=0.05)
    assert not est['saturated']


def test_alexander_orbach_on_gasket(exact_gasket_walk, gasket_walkers):
    "d_s measured without d_f or lambda agrees with 2 d_f / d_w built from the measured d_w."
    w = exact_gasket_walk
    d_w = 1 / fit_power_law(w.t, w.displacement, **GASKET_WINDOW).slope
    d_s = -2 * fit_power_law(w.t, w.return_probability, **GASKET_WINDOW).slope
    # d_f = ln3/ln2 exactly; both measured exponents are exact to <0.5%, so 1.5% bounds the sum of their errors.
    assert d_s == pytest.approx(2 * (math.log(3) / math.log(2)) / d_w, rel=0.015)


def test_bad_input_is_named():
    g = sierpinski_gasket(2)
    with pytest.raises(ValueError, match='start'): propagate_walk(g, g.n_nodes, 3)
    with pytest.raises(ValueError, match='n_steps'): simulate_walkers(g, [0], -1)
    with pytest.raises(ValueError, match='level'): sierpinski_gasket(-1)
    with pytest.raises(ValueError, match='p must'): percolation_cluster(16, p=1.5)
