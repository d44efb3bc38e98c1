"Automatic LLC settings at degenerate points (issue 41, item 1): defined at every point, refusing non-finite models by name, acting on their own diagnostics, and right against exact quadrature targets."
import math, warnings

import pytest
import torch
from torch import nn

from fracsgd.llc.calibrate import (NormalCrossing, calibrate, crossing_data, crossing_lambda, crossing_target,
                                   estimate_llc_auto, weight_scale_localization)
from fracsgd.llc.estimate import calibrate_at_curvature, nan_source
from fracsgd.llc.settings import default_n_beta

DATA = crossing_data(1000)
NB = default_n_beta(1000)


class Scaled(nn.Module):
    "f_w(x) = g(w) x."
    def __init__(self, g):
        super().__init__()
        self.g, self.w = g, nn.Parameter(torch.zeros(()))
    def forward(self, x): return self.g(self.w) * x


@pytest.mark.parametrize('pq', [(3, 0), (2, 1), (2, 2), (1, 2), (1, 3), (3, 3)])
def test_the_curvature_rule_refuses_a_zero_hessian_by_name(pq):
    with pytest.raises(ValueError, match='Hessian at w\\* is zero'):
        calibrate_at_curvature(NormalCrossing(*pq), DATA, 'regression')


def test_non_finite_models_are_named_where_they_fail():
    log_loss = lambda out, y: torch.log(out).squeeze(-1)
    assert 'output' in nan_source(Scaled(lambda w: w / w), DATA, 'regression')
    assert 'loss' in nan_source(Scaled(lambda w: w - 1), DATA, log_loss)
    assert 'gradient' in nan_source(Scaled(torch.sqrt), DATA, 'regression')
    for model, loss, where in [(Scaled(lambda w: w / w), 'regression', 'output'), (Scaled(lambda w: w - 1), log_loss, 'loss'),
                               (Scaled(torch.sqrt), 'regression', 'gradient')]:
        with pytest.raises(ValueError, match=where):
            calibrate(model, DATA, loss)
    with pytest.raises(ValueError, match='gradient'):
        calibrate_at_curvature(Scaled(torch.sqrt), DATA, 'regression')      # not "step_size must lie in (0, inf)"


def test_quadrature_target_against_closed_form_and_symmetry():
    x, y = (t.double().squeeze(-1) for t in DATA)
    sxx, sxy = float((x * x).mean()), float((x * y).mean())
    for gamma in (0.3, 1.0, 10.0):
        P = NB * sxx + gamma
        mu = NB * sxy / P
        closed = NB * (sxx * (1 / P + mu ** 2) / 2 - sxy * mu)              # Gaussian posterior of w1
        assert crossing_target(1, 0, DATA, NB, gamma) == pytest.approx(closed, rel=1e-6)
    assert crossing_target(1, 3, DATA, NB, 1.0) == pytest.approx(crossing_target(3, 1, DATA, NB, 1.0), rel=1e-9)
    assert crossing_lambda(2, 3) == pytest.approx(1 / 6) and crossing_lambda(2, 0) == 0.25   # the largest exponent wins


def test_the_localization_is_the_weights_scale():
    assert weight_scale_localization(NormalCrossing(2, 2)) == 1.0             # scalars at 0: r0 = 1
    lin = nn.Linear(100, 1, bias=False)
    nn.init.zeros_(lin.weight)
    assert weight_scale_localization(lin) == pytest.approx(100.0)             # r0 = 1/sqrt(fan-in)
    with torch.no_grad():
        lin.weight.fill_(0.3)
    assert weight_scale_localization(lin) == pytest.approx(1 / (0.09 + 0.01))


def test_estimate_at_a_zero_hessian_lands_on_its_exact_target():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res, done = estimate_llc_auto(NormalCrossing(1, 2), DATA, 'regression')
    exact = crossing_target(1, 2, DATA, NB, done['localization'])
    se = max(res.llc_se, res.per_chain.std(ddof=1) / math.sqrt(res.per_chain.size))
    assert done['localization'] == 1.0 and done['pilot_acceptance'] >= 0.998
    assert abs(res.llc - exact) <= max(3 * se, 0.1 * exact), (res.llc, se, exact)


def test_a_step_that_fails_the_acceptance_check_is_halved_before_reporting():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res, done = estimate_llc_auto(NormalCrossing(1, 1), DATA, 'regression', step_size=0.05, n_chains=4)
    assert done['retries'] >= 1 and done['final_step_size'] <= 0.025
    assert res.diagnostics.iloc[0].step_size == done['final_step_size']
