"""The localization's systematic error in `estimate_llc`, the depth-covering validation set, and devinterp on the
same model. Answers come from closed forms (d/2 of a regular model, a chi-square offset), Aoyagi's lambda, and
devinterp; seeds are fixed and every tolerance says why."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc
from fracsgd.llc.result import (LOCALIZATION_EXTRAPOLATION, LOCALIZATION_SPREAD, SENSITIVITY_FACTOR,
    localization_interval, stronger_localization)
from fracsgd.llc.depth import (apply_rule, depth_problem, depth_set, devinterp_llc, end_to_end_singular_values,
                               noise_offset, resolution)
from fracsgd.llc.validation import validation_problem, validation_set
from fracsgd.nets.models import dln_data, make_balanced_dln, make_dln
from fracsgd.llc.sgld import SGLDSettings

torch.set_num_threads(1)


def test_interval_is_the_closed_form():
    # two estimates 40 +- 0.5 at gamma and 30 +- 0.5 at 3 gamma; k = 0.5, w = 1.5 by hand
    out = localization_interval(40.0, 0.5, 30.0, 0.5, extrapolation=0.5, spread=1.5)
    se = math.hypot(1.5 * 0.5, 0.5 * 0.5)
    assert out['llc'] == 45.0 and np.isclose(out['llc_se'], se) and out['systematic'] == 15.0
    assert np.isclose(out['llc_low'], 45 - 15 - 2 * se) and np.isclose(out['llc_high'], 45 + 15 + 2 * se)


def test_the_repeat_runs_at_three_times_the_localization_for_a_third_of_the_steps():
    s = stronger_localization(SGLDSettings(localization=4.0, n_burnin=5000, n_draws=5000, seed=3, systematic=True))
    assert s.localization == 4.0 * SENSITIVITY_FACTOR and (s.n_burnin, s.n_draws) == (1667, 1667)
    assert s.seed == 4 and not s.systematic


def test_systematic_estimate_of_a_regular_model_covers_half_the_dimension():
    # linear regression R^10 -> R^3 at its true weights with noiseless targets: lambda = d/2 = 15 exactly, and
    # the localization moves the estimate by only ~gamma/(n beta h) ~ 0.3%: the interval must hold 15 and the
    # systematic part must be small (a shift of a few percent at most)
    model = make_dln([10, 3], 3, seed=0)
    data = dln_data(model, 4000, seed=1)
    s = calibrate_at_curvature(model, data, 'regression', n_burnin=1000, n_draws=2000)
    assert s.systematic
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        r = estimate_llc(model, data, 'regression', s)
    d = r.diagnostics.iloc[0]
    assert r.llc_low <= 15 <= r.llc_high, (r.llc_low, r.llc, r.llc_high)
    assert abs(d.llc_shift) < 0.05 and d.llc_stronger < d.llc_raw + 3 * math.hypot(d.llc_raw_se, d.llc_stronger_se)
    assert np.isclose(r.llc, d.llc_raw + LOCALIZATION_EXTRAPOLATION * (d.llc_raw - d.llc_stronger))
    assert np.isclose(d.systematic, LOCALIZATION_SPREAD * abs(d.llc_raw - d.llc_stronger))


def test_without_systematic_the_interval_is_monte_carlo_only():
    model = make_dln([4, 2], 2, seed=0)
    data = dln_data(model, 1000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        r = estimate_llc(model, data, 'regression', step_size=1e-4, localization=1.0, n_chains=2, n_draws=100,
                         n_burnin=20, batch_size=200)
    assert np.isclose(r.llc_high - r.llc_low, 4 * r.llc_se) and 'systematic' not in r.diagnostics


def test_the_depth_set_is_split_in_advance_and_every_truth_is_resolved():
    specs = depth_set()
    assert specs.equals(depth_set()) and list(specs.groupby('depth').size()) == [4] * 6
    assert list(specs.groupby('depth').part.first()) == ['tune'] * 6            # the first of each depth
    held = specs[specs.part == 'held-out']
    assert (held.groupby('depth').noise.sum() == 1).all()                       # 2 noiseless + 1 noisy per depth
    for _, row in specs.iterrows():
        model, (X, y) = depth_problem(row)
        sv = end_to_end_singular_values(model)
        assert (sv[:row['rank']] >= 0.5 - 1e-6).all() and (sv[:row['rank']] <= 1.5 + 1e-6).all()
        assert resolution(model, int(row['rank']), int(row.n)) > 10
        assert all(torch.linalg.matrix_rank(layer.weight) == row['rank'] for layer in model)


def test_the_first_sets_deep_truths_are_not_resolved():
    # the reason the first set's depth errors measure the set: no network of depth >= 3 has its smallest
    # end-to-end singular value worth 10 posterior loss scales
    specs = validation_set()
    deep = specs[specs.layers.str.count('-') >= 3]
    res = [resolution(validation_problem(r)[0], int(r['rank']), int(r.n)) for _, r in deep.iterrows()]
    assert max(res) < 10


def test_noise_offset_is_half_a_chi_square_on_a_regular_model():
    # n (L(w*) - L(w_hat)) ~ chi2_d / 2 for linear regression; times beta = 1/log n. Mean beta*d/2, sd beta*sqrt(2d)/2
    model = make_balanced_dln([8, 3], 3, seed=0)
    X = torch.randn(20_000, 8, generator=torch.Generator().manual_seed(0))
    y = model(X).detach() + torch.randn(20_000, 3, generator=torch.Generator().manual_seed(1))
    beta, d = 1 / math.log(20_000), 24
    assert abs(noise_offset(model, (X, y)) - beta * d / 2) < 3 * beta * math.sqrt(2 * d) / 2


def test_apply_rule_matches_the_library():
    rows = pd.DataFrame(dict(net=[0], depth=[2], true_llc=[20.0], llc_raw=[18.0], llc_raw_se=[0.2],
                             llc_stronger=[16.0], llc_stronger_se=[0.3], problems=['']))
    t = apply_rule(rows, 0.5, 1.5).iloc[0]
    out = localization_interval(18.0, 0.2, 16.0, 0.3, 0.5, 1.5)
    assert np.isclose(t.estimate, out['llc']) and np.isclose(t.low, out['llc_low']) and t.covered


def test_devinterp_samples_the_same_posterior():
    # devinterp 2.0.1's llc() and ours at one setting on linear regression (lambda = d/2 = 4, noiseless): both
    # within 5 Monte-Carlo errors of each other (devinterp's error: its chain spread over sqrt(chains))
    pytest.importorskip('devinterp')
    model = make_dln([4, 2], 2, seed=0)
    data = dln_data(model, 2000, seed=1)
    s = calibrate_at_curvature(model, data, 'regression', n_burnin=300, n_draws=600, systematic=False)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        ours = estimate_llc(model, data, 'regression', s)
    theirs = devinterp_llc(model, data, s)
    se = math.hypot(ours.llc_se, theirs['llc_chain_sd'] / math.sqrt(s.n_chains))
    assert abs(ours.llc - theirs['llc']) < 5 * se + 0.05 * 4, (ours.llc, theirs)
    assert abs(ours.llc - 4) < 0.15 * 4


def test_run_depth_writes_its_table_whole_and_readable(tmp_path):
    from fracsgd.core import read_table
    from fracsgd.llc.depth import run_depth
    specs = depth_set()
    out = tmp_path / 'rows.csv'
    rows = run_depth(specs[specs.part == 'held-out'].head(1), out=out, setting='paper')
    assert read_table(out).net.tolist() == rows.net.tolist() and (out.stat().st_mode & 0o044) == 0o044
    assert not list(tmp_path.glob('*.tmp*'))                    # no partial file left beside it
