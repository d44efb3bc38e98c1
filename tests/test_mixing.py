"""Whether posterior chains mix (split R-hat, transitions), where reference chains start, and how k is chosen
(fracsgd.posterior.clusters), on cases whose answers follow from the definitions."""
import math

import numpy as np
import pandas as pd
import pytest

from fracsgd.posterior.clusters import (chain_transitions, choose_k, clustering_reports, mixing_report, reference_starts,
                              split_rhat)


def test_split_rhat_against_hand_computation_and_limits():
    # halves 0 1 | 2 3 | 4 5 | 6 7: means 0.5 2.5 4.5 6.5 (variance 20/3, B = 2 · 20/3), variances 1/2 (W = 1/2)
    assert math.isclose(split_rhat([[0, 1, 2, 3], [4, 5, 6, 7]]), math.sqrt((0.5 * 0.5 + 20 / 3) / 0.5))
    rng = np.random.default_rng(0)
    assert abs(split_rhat(rng.normal(size=(10, 4000))) - 1) < 0.005          # one distribution: R-hat → 1
    # chains whose means differ by δ: R-hat² → 1 + var(means)/σ² for long chains (B/n → var of the means)
    x = rng.normal(size=(2, 20000)) + np.array([[0.], [1.]])
    assert abs(split_rhat(x) ** 2 - (1 + 1 / 3)) < 0.02                        # 4 halves with means 0 0 1 1: var 1/3
    assert split_rhat([[0] * 6, [1] * 6]) == math.inf and math.isnan(split_rhat([[2] * 6, [2] * 6]))
    with pytest.raises(ValueError, match='at least 4 draws'):
        split_rhat([[0, 1, 2]])


def test_transitions_and_mixing_report():
    assert chain_transitions([0, 0, 1, 1, 0]) == 2 and chain_transitions([[3, 3, 3], [0, 1, 0]]).tolist() == [0, 2]
    labels = np.array([[[0] * 20 + [1] * 20], [[1] * 40]])                   # [models, chains, draws]
    table, mix = mixing_report(labels, 2, start_labels=[0, 1])
    assert table.transitions.tolist() == [1, 0] and table.left_start.tolist() == [0.5, 0.0]
    assert mix['chains'] == 2 and mix['never_left'] == 1 and mix['rhat_max'] > 1.1


def test_reference_starts_pick_the_nearest_of_every_cluster():
    F = np.array([[0.], [0.1], [0.3], [5.], [5.2], [4.1], [9.]])
    starts = reference_starts(F, [0, 0, 0, 1, 1, 1, 2], [[0.1], [4.8], [9.]], list('abcdefg'), 2)
    assert starts == {'C1 #1': 'b', 'C1 #2': 'a', 'C2 #1': 'd', 'C2 #2': 'e', 'C3 #1': 'g'}


def test_choose_k_rules():
    r = pd.DataFrame(dict(k=[2, 3, 4, 5], silhouette=[0.38, 0.34, 0.27, 0.25], stability=[0.80, 0.85, 0.56, 0.58],
                          smallest=[49, 18, 14, 12]))
    assert choose_k(r) == 2 and choose_k(r, 'stable', n=100) == 2
    assert choose_k(r.assign(stability=[0.7, 0.9, 0.9, 0.9]), 'stable', n=100) == 3     # k = 2 is not stable
    stable_3_4 = r.assign(stability=[0.7, 0.9, 0.9, 0.9], silhouette=[0.38, 0.2, 0.3, 0.1])
    assert choose_k(stable_3_4, 'stable', n=100) == 4 and choose_k(stable_3_4, 'stable', n=300) == 3  # 14 < 5% of 300
    assert choose_k(r.assign(stability=[0.5, 0.7, 0.6, 0.4]), 'stable', n=100) == 3     # none passes: most stable
    with pytest.raises(ValueError, match='rule'):
        choose_k(r, 'gap')
    # three well separated blobs: k = 4 is as stable as 3 (k-means splits a blob reproducibly); the rule finds 3
    rng = np.random.default_rng(0)
    blobs = np.concatenate([rng.normal(c, 0.05, (40, 2)) for c in ([0, 0], [3, 0], [0, 3])])
    assert choose_k(clustering_reports(blobs, ks=(2, 3, 4, 5), n_boot=10), 'stable', n=len(blobs)) == 3
