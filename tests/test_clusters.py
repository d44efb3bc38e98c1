"""Tests of the clusters chapter: planted, absent and overlapping cluster structure, function space against
weight space, the local-posterior draws from the SGLD sampler's `record` hook, and clear errors for bad input."""
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from sklearn.metrics import adjusted_rand_score

from fracsgd.posterior.clusters import (POSTERIOR_PAPER, assign_to_clusters, check_predictions, cluster_centroids,
                              cluster_masses, cluster_solutions, clustering_report, draw_labels, function_features,
                              posterior_masses, predict_on_probe, predictions_from_table, probe_grid,
                              sample_posterior, seed_solutions, weight_features)

torch.set_num_threads(1)


def planted(n_per=(30, 20, 10), n_probe=50, noise=0.05, seed=0, spread=(0.05, 0.95)):
    "Two-class predictions scattered around len(n_per) random decision patterns; and the planted labels."
    rng = np.random.default_rng(seed)
    centres = rng.uniform(*spread, (len(n_per), n_probe))
    p1 = np.concatenate([np.clip(c + noise * rng.standard_normal((n, n_probe)), 0, 1)
                         for c, n in zip(centres, n_per)])
    return np.stack([p1, 1 - p1], -1), np.repeat(np.arange(len(n_per)), n_per)


def tiny_net(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))


# ---------------------------------------------------------------- clusters: planted, absent, weak

@pytest.mark.parametrize('seed', [0, 1, 2])
def test_planted_clusters_are_recovered_and_reported_strong(seed):
    P, truth = planted(seed=seed)
    F = function_features(P)
    assert adjusted_rand_score(truth, cluster_solutions(F, 3)) == 1
    assert adjusted_rand_score(truth, cluster_solutions(F, 3, 'agglomerative')) == 1
    labels = cluster_solutions(F, 3)
    assert np.array_equal(np.bincount(labels), [30, 20, 10])                  # cluster 0 is the largest
    assert clustering_report(F, 3, n_boot=20, seed=seed)['verdict'] == 'strong'


@pytest.mark.parametrize('k', [2, 3, 5])
def test_no_structure_is_reported_as_none(k):
    rng = np.random.default_rng(k)
    blob = rng.uniform(0.3, 0.7, (80, 40))
    rep = clustering_report(function_features(np.stack([blob, 1 - blob], -1)), k, n_boot=20)
    assert rep['verdict'] == 'none' and rep['silhouette'] < 0.25


def test_overlapping_clusters_are_not_reported_strong():
    # Two patterns 0.1 apart per probe point, with noise 0.15 per point: overlapping clouds.
    rng = np.random.default_rng(3)
    base = rng.uniform(0.3, 0.7, 40)
    centres = np.concatenate([np.tile(base + 0.05, (40, 1)), np.tile(base - 0.05, (40, 1))])
    p1 = np.clip(centres + 0.15 * rng.standard_normal((80, 40)), 0, 1)
    rep = clustering_report(function_features(np.stack([p1, 1 - p1], -1)), 2, n_boot=20)
    assert rep['verdict'] != 'strong'


def test_function_space_ignores_permutations_weight_space_does_not():
    a = tiny_net(0)
    b = tiny_net(1)
    perm = torch.randperm(8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        b[0].weight.copy_(a[0].weight[perm]); b[0].bias.copy_(a[0].bias[perm])
        b[2].weight.copy_(a[2].weight[:, perm]); b[2].bias.copy_(a[2].bias)
    grid = probe_grid(np.random.default_rng(0).normal(size=(50, 2)), n=8)
    assert np.allclose(predict_on_probe([a], grid), predict_on_probe([b], grid), atol=1e-6)
    assert np.abs(weight_features([a]) - weight_features([b])).max() > 0.1



# ---------------------------------------------------------------- masses and the local posterior

def test_posterior_masses_and_chains_leaving_their_start():
    labels = np.array([[[0, 0, 1, 1]], [[2, 2, 2, 2]]])                      # [models, chains, draws]
    masses, chains = posterior_masses(labels, 3, [0, 2])
    assert np.allclose(masses, [2 / 8, 2 / 8, 4 / 8])
    assert chains.left_start.tolist() == [0.5, 0.0]


def test_sample_posterior_shapes_and_a_chain_that_cannot_move():
    X = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
    y = (X[:, 0] > 0).long()
    nets, probe = [tiny_net(0), tiny_net(1)], probe_grid(X, n=5)
    s = POSTERIOR_PAPER.replace(n_draws=7, n_burnin=20, steps_between_draws=5, n_chains=2)
    draws = sample_posterior(nets, (X, y), probe, s)
    assert draws.shape == (2, 2, 7, 25, 2) and np.allclose(draws.sum(-1), 1)
    assert np.allclose(draws, sample_posterior(nets, (X, y), probe, s))      # seeded: reproducible
    frozen = sample_posterior(nets, (X, y), probe, s.replace(step_size=1e-14))
    start = predict_on_probe(nets, probe)                                     # step ~0: draws = the seeds
    assert np.allclose(frozen, start[:, None, None], atol=1e-5)
    C = cluster_centroids(function_features(start), [0, 1], 2)
    assert np.array_equal(draw_labels(frozen, C), np.broadcast_to(np.array([0, 1])[:, None, None], (2, 2, 7)))


def test_a_draw_is_the_weights_at_its_draw_step():
    # Without burn-in the first draw is at w* itself (the sampler's `record` sees w_t before the update): its
    # probabilities are the nets' own; later draws have moved. 2 nets, 3 chains, seed 0 of the settings.
    X = torch.randn(32, 2, generator=torch.Generator().manual_seed(2))
    nets, probe = [tiny_net(3), tiny_net(4)], probe_grid(X, n=4)
    draws = sample_posterior(nets, (X, (X[:, 1] > 0).long()), probe,
                             POSTERIOR_PAPER.replace(n_draws=4, n_burnin=0, steps_between_draws=3, n_chains=3))
    assert np.allclose(draws[:, :, 0], predict_on_probe(nets, probe)[:, None], atol=1e-6)
    assert np.abs(draws[:, :, 3] - draws[:, :, 0]).max() > 1e-6


def test_paper_posterior_settings():
    s = POSTERIOR_PAPER
    assert (s.step_size, s.n_draws, s.n_burnin, s.steps_between_draws) == (1e-5, 1000, 200, 10)


def test_seeds_are_lowest_loss_and_lowest_llc():
    t = pd.DataFrame({'loss': [0.3, 0.1, 0.2], 'llc': [1.0, 3.0, 0.5]}, index=[10, 11, 12])
    assert seed_solutions(t) == {'lowest loss': 11, 'lowest LLC': 12}


def test_models_keep_their_mode():
    nets = [tiny_net(0).train(), tiny_net(1).eval()]
    X = torch.randn(16, 2, generator=torch.Generator().manual_seed(1))
    predict_on_probe(nets, X)
    sample_posterior(nets, (X, (X[:, 0] > 0).long()), X, POSTERIOR_PAPER.replace(n_draws=2, n_burnin=0))
    assert [n.training for n in nets] == [True, False]



# ---------------------------------------------------------------- bad input: clear errors naming the problem

def test_probe_sets_of_the_wrong_shape():
    net = tiny_net(0)
    with pytest.raises(ValueError, match=r'probe set must have shape \[points, 2\]'):
        predict_on_probe([net], torch.zeros(10, 3))
    with pytest.raises(ValueError, match=r'probe set must have shape'):
        predict_on_probe([net], torch.zeros(10))
    with pytest.raises(ValueError, match=r'\[solutions, probe points, classes\]'):
        check_predictions(np.full((4, 10), 0.5))
    with pytest.raises(ValueError, match='expected 12'):
        check_predictions(np.full((4, 10, 2), 0.5), n_probe=12)
    with pytest.raises(ValueError, match='the probe sets differ'):
        assign_to_clusters(np.zeros((3, 20)), np.zeros((2, 18)))
    with pytest.raises(ValueError, match='probe_grid needs 2-D inputs'):
        probe_grid(np.zeros((5, 3)))
    X, y = torch.zeros(8, 2), torch.zeros(8, dtype=torch.long)
    with pytest.raises(ValueError, match=r'probe set must have shape \[points, 2\]'):
        sample_posterior([net], (X, y), torch.zeros(4, 3), POSTERIOR_PAPER.replace(n_draws=1, n_burnin=0))
    with pytest.raises(ValueError, match='softmax'):
        check_predictions(np.full((4, 10, 2), 3.0))


def test_empty_cluster_is_named():
    F = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(ValueError, match=r'cluster\(s\) \[1\] are empty'):
        cluster_centroids(F, [0, 0, 2, 2, 0, 2], 3)
    with pytest.raises(ValueError, match='k must be a whole number'):
        cluster_solutions(F, 6)


def test_bad_seed_tables_and_labels():
    with pytest.raises(ValueError, match='LLC must be positive; rows \\[1\\]'):
        seed_solutions(pd.DataFrame({'loss': [0.1, 0.2], 'llc': [1.0, -0.3]}))
    with pytest.raises(ValueError, match="no column 'llc'"):
        seed_solutions(pd.DataFrame({'loss': [0.1, 0.2]}))
    with pytest.raises(ValueError, match='labels must lie in 0..1'):
        cluster_masses([0, 2], 2)
    with pytest.raises(ValueError, match=r'labels must be \[models, chains, draws\]'):
        posterior_masses(np.zeros((2, 3), int), 2, [0, 1])


def test_predictions_from_a_long_table():
    P, _ = planted(n_per=(3, 2), n_probe=6)
    long = pd.DataFrame({'solution': np.repeat(np.arange(5), 6), 'probe': np.tile(np.arange(6), 5),
                         'p0': P[..., 0].ravel(), 'p1': P[..., 1].ravel()})
    assert np.array_equal(predictions_from_table(long.sample(frac=1, random_state=1), ['p0', 'p1']), P)
    with pytest.raises(ValueError, match='one row per probe point'):
        predictions_from_table(long.iloc[1:], ['p0', 'p1'])
    with pytest.raises(ValueError, match=r"no column\(s\) \['p2'\]"):
        predictions_from_table(long, ['p0', 'p2'])
