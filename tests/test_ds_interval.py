"""Tests for `fracsgd.diffusion.ds_interval`: a d_s interval that is the union over every admissible fit window and ε.

Known values (none chosen here): the lazy walk on Z^d has d_s = d (local central limit theorem), and on Z^2 its return
probability has the closed form `lattice_return_probability`; the Vicsek fractal is a tree of 5^n nodes, the T-fractal a
tree of 3^n edges, the Sierpinski tetrahedron has 2·4^n + 2 nodes of degree 6 but its 4 corners (degree 3), the Hanoi
graph of n discs has 3^n states and 3(3^n − 1)/2 moves.
"""
import math

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from fracsgd.diffusion.ds_interval import (HANOI_DS, TETRAHEDRON_DS, T_FRACTAL_DS, VICSEK_DS, admissible_windows,
                                           ds_interval, hanoi_graph, interval_curves, lattice_return_exact,
                                           lattice_walks, sierpinski_tetrahedron, t_fractal,
                                           trace_return_probability, vicsek_fractal)
from fracsgd.diffusion.return_probability import (ReturnCurves, lattice_return_probability,
                                                  spectral_dimension_from_returns)
from fracsgd.diffusion.walks import is_bipartite, propagate_walk


@pytest.mark.parametrize('dim, seed', [(1, 3), (2, 4)])
def test_interval_covers_the_lattice_dimension(dim, seed):
    r = ds_interval(interval_curves(lattice_walks(dim, 100, 6000, seed=seed), n_tau=30), n_boot=100)
    assert r.covers(dim), r
    assert r.width < 0.5 * dim, r                      # wide, but not so wide that it says nothing
    assert abs(r.d_s - dim) < 0.1 * dim, r


def test_union_is_at_least_as_wide_as_any_single_fit():
    curves = interval_curves(lattice_walks(2, 60, 4000, seed=1), n_tau=30)
    r = ds_interval(curves, n_boot=100)
    assert r.n_fits == len(r.fits) > 10
    assert r.low <= r.reference.ci_low and r.reference.ci_high <= r.high     # the reference fit's own interval
    assert (r.fits.ci_low >= r.low - 1e-12).all() and (r.fits.ci_high <= r.high + 1e-12).all()
    assert r.low <= r.fits.d_s.min() and r.fits.d_s.max() <= r.high
    assert r.width >= (r.fits.ci_high - r.fits.ci_low).max() - 1e-12
    # every admissible fit's estimate, recomputed by the old fit on its window, is the one in the table
    row = r.fits.iloc[len(r.fits) // 2]
    old = spectral_dimension_from_returns(curves, row.eps, tau_min=row.tau_min, tau_max=row.tau_max, min_decades=0,
                                          n_boot=0)
    assert math.isclose(old.d_s, row.d_s, rel_tol=1e-9), (old, row)


def test_admissible_windows_obey_their_definition():
    curves = interval_curves(lattice_walks(1, 50, 3000, seed=2), n_tau=30)
    w = admissible_windows(curves, min_decades=1.0)
    tau = curves.tau.astype(float)
    step2 = curves.msd[0]
    for j, a, b in w:
        assert math.log10(tau[b] / tau[a]) >= 1 - 1e-12 and b - a >= 2
        lags = slice(a, b + 1)
        assert np.all(curves.msd[lags] >= max(curves.eps[j] ** 2, step2) / 0.03)
        assert np.all(curves.hits[:, j, lags].sum(0) >= 100)
    assert len(w) > len(admissible_windows(curves, min_decades=1.2)) > 0 == len(admissible_windows(curves, min_decades=3))


def test_no_admissible_window_gives_nan_with_a_reason():
    c = ReturnCurves(np.arange(1, 30), np.array([1.0]), np.zeros((4, 1, 29)), np.full((4, 29), 1e3),
                     np.arange(1, 30.0), 'walkers')
    r = ds_interval(c, n_boot=50)
    assert math.isnan(r.d_s) and math.isnan(r.low) and 'no admissible window' in r.reason and not r.covers(1.0)


def test_bad_input_raises_naming_the_problem():
    curves = interval_curves(lattice_walks(1, 10, 500, seed=0), n_tau=10)
    with pytest.raises(TypeError, match='ReturnCurves'):
        ds_interval(np.zeros((3, 10)))
    with pytest.raises(ValueError, match='n_boot'):
        ds_interval(curves, n_boot=5)
    with pytest.raises(ValueError, match='level'):
        ds_interval(curves, level=1.5)
    with pytest.raises(ValueError, match='max_bias'):
        admissible_windows(curves, max_bias=0)
    with pytest.raises(ValueError, match='min_lags'):
        admissible_windows(curves, min_lags=2)
    with pytest.raises(ValueError, match='level'):
        vicsek_fractal(-1)
    with pytest.raises(ValueError, match='level'):
        hanoi_graph(0)
    with pytest.raises(ValueError, match='dim'):
        lattice_walks(0, 5, 10)
    with pytest.raises(ValueError, match='do not move'):
        interval_curves(np.zeros((3, 20, 2)))


def test_graphs_have_their_known_structure():
    n = 4
    v, t, s, h = vicsek_fractal(n), t_fractal(n), sierpinski_tetrahedron(n), hanoi_graph(n)
    assert v.n_nodes == 5 ** n and v.n_edges == 5 ** n - 1                           # a tree
    assert t.n_edges == 3 ** n and t.n_nodes == 3 ** n + 1                           # a tree
    assert s.n_nodes == 2 * 4 ** n + 2 and s.n_edges == 6 * 4 ** n
    assert sorted(np.bincount(s.degree)[[3, 6]]) == [4, 2 * 4 ** n - 2]
    assert h.n_nodes == 3 ** n and h.n_edges == 3 * (3 ** n - 1) // 2 and np.all(h.degree[h.corners] == 2)
    for g in (v, t, s, h):
        assert connected_components(g.adjacency)[0] == 1
        d = np.linalg.norm(g.coords[:, None] - g.coords[None], axis=-1) + np.eye(g.n_nodes) * 1e9
        assert d.min() >= 1 - 1e-9, g                      # no two nodes closer than one edge: ε < 1 counts the node
    assert is_bipartite(v) and is_bipartite(t) and not is_bipartite(h)


def test_exact_return_probabilities_match_closed_forms():
    tau = np.arange(1, 40)
    np.testing.assert_allclose(lattice_return_exact(2, tau, n=128), lattice_return_probability(tau), rtol=1e-10)
    g = hanoi_graph(3)
    every = propagate_walk(g, np.arange(g.n_nodes), 30, lazy=True).return_probability[1:]
    np.testing.assert_allclose(trace_return_probability(g, np.arange(1, 31)) + 1 / g.n_nodes, every, rtol=1e-10)


def test_known_values():
    assert math.isclose(VICSEK_DS, 2 * math.log(5) / math.log(15)) and math.isclose(HANOI_DS, 2 * math.log(3) / math.log(5))
    assert math.isclose(T_FRACTAL_DS, 2 * math.log(3) / math.log(6))
    assert math.isclose(TETRAHEDRON_DS, 2 * 2 / (math.log(6) / math.log(2)))       # 2 d_f / d_w, d_f = 2
