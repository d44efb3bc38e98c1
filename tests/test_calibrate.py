"Automatic LLC settings at degenerate points (issue 41, item 1): defined at every point, refusing non-finite models by name, acting on their own diagnostics, and right against exact quadrature targets."
import math, warnings

import pandas as pd
import pytest
import torch
from torch import nn

from fracsgd.llc.calibrate import (BURNIN_RELAXATIONS, MALA_ACCEPTANCE, MAX_DRAWS, NormalCrossing, calibrate,
                                   choose_sampler, crossing_data, crossing_lambda, crossing_target, estimate_llc_auto,
                                   lengthened, unsettled, weight_scale_localization)
from fracsgd.llc.result import MIN_RELAXATIONS
from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc, nan_source
from fracsgd.llc.settings import SGLDSettings, default_n_beta

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
        res, done = estimate_llc_auto(NormalCrossing(1, 2), DATA, 'regression', precision=0.05)
    exact = crossing_target(1, 2, DATA, NB, done['localization'])
    assert done['sampler'] == 'mala' and done['localization'] == 1.0 and done['pilot_acceptance'] >= MALA_ACCEPTANCE
    assert res.llc_se >= res.per_chain.std(ddof=1) / math.sqrt(res.per_chain.size)   # the chains' spread is in it
    from scipy import stats                       # t with chains - 1 d.o.f. at the coverage of +-2 normal s.e.
    assert res.llc_high - res.llc == pytest.approx(stats.t.interval(0.9545, res.per_chain.size - 1)[1] * res.llc_se,
                                                   rel=1e-3)
    assert abs(res.llc - exact) <= 3 * res.llc_se, (res.llc, res.llc_se, exact)


def _closed_form_10(gamma=1.0):
    "The exact target of x*w1 (a Gaussian posterior) on DATA."
    x, y = (t.double().squeeze(-1) for t in DATA)
    sxx, sxy = float((x * x).mean()), float((x * y).mean())
    P = NB * sxx + gamma
    mu = NB * sxy / P
    return NB * (sxx * (1 / P + mu ** 2) / 2 - sxy * mu)


def test_metropolis_adjusted_chains_are_exact_where_sgld_is_not():
    # step 0.005 against a posterior precision ~146: SGLD's stationary variance is ~1.6x too wide
    s = SGLDSettings(step_size=0.005, localization=1.0, n_chains=8, n_burnin=1000, n_draws=6000, batch_size=None,
                     n_beta=NB, diag_every=50)
    closed = _closed_form_10()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        mala = estimate_llc(NormalCrossing(1, 0), DATA, 'regression', s.replace(metropolis=True))
        sgld = estimate_llc(NormalCrossing(1, 0), DATA, 'regression', s)
    se = max(mala.llc_se, mala.per_chain.std(ddof=1) / math.sqrt(8))
    assert abs(mala.llc - closed) <= 3 * se, (mala.llc, se, closed)
    assert sgld.llc > 1.2 * closed                                  # the bias the adjustment removes


def test_metropolis_needs_the_full_batch_and_no_preconditioner():
    with pytest.raises(ValueError, match='full batch'):
        estimate_llc(NormalCrossing(1, 0), DATA, 'regression', SGLDSettings(metropolis=True, batch_size=100))
    with pytest.raises(ValueError, match="preconditioner='none'"):
        SGLDSettings(metropolis=True, batch_size=None, preconditioner='rmsprop')
    assert choose_sampler(1000, 2) == 'mala' and choose_sampler(60_000, 100_000) == 'sgld'


@pytest.mark.parametrize('sampler, start', [('mala', 0.05), ('sgld', 0.05)])
def test_a_step_that_fails_the_acceptance_check_is_halved_before_reporting(sampler, start):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res, done = estimate_llc_auto(NormalCrossing(1, 1), DATA, 'regression', step_size=start, n_chains=4,
                                      sampler=sampler, precision=1.0)
    assert done['sampler'] == sampler and done['retries'] >= 1 and done['final_step_size'] <= start / 2
    assert res.diagnostics.iloc[0].step_size == done['final_step_size']
    assert res.settings.metropolis == (sampler == 'mala')


def _diagnostics(**changes):
    "A diagnostics row of a settled run: near w*, long, stationary, chains agreeing, many effective draws."
    return pd.Series({**dict(reach_used=0.01, relaxations=10.0, drift_z=0.0, rhat=1.0, ess=1000.0), **changes})

def test_a_run_is_lengthened_until_its_own_diagnostics_find_it_settled():
    s = SGLDSettings(n_burnin=10_000, n_draws=10_000, metropolis=True, batch_size=None)
    assert unsettled(_diagnostics()) == (False, False)
    assert unsettled(_diagnostics(rhat=float('nan'), ess=float('nan'), drift_z=float('nan'))) == (False, False)
    assert lengthened(s, _diagnostics(), se_ratio=0.5) is None                     # settled and precise: done
    more = lengthened(s, _diagnostics(), se_ratio=2.0)                             # imprecise: 1.2 * 2^2 > 4, so 4x
    assert (more.n_draws, more.n_burnin, more.seed) == (40_000, 10_000, s.seed + 1)
    few = lengthened(s, _diagnostics(ess=50.0), se_ratio=0.5)                      # unsettled, not relaxing
    assert (few.n_draws, few.n_burnin) == (20_000, 10_000)
    # the two networks the second fresh part missed: drift along flat directions after 1.2 relaxation times
    drift = _diagnostics(reach_used=0.37, relaxations=1.2)
    assert unsettled(drift) == (True, True)
    per_relaxation = s.n_steps / 1.2
    longer = lengthened(s, drift, se_ratio=0.5)
    assert longer.n_burnin == math.ceil(BURNIN_RELAXATIONS * per_relaxation)
    assert longer.n_draws == math.ceil(MIN_RELAXATIONS * per_relaxation)
    assert longer.n_steps * 1.2 / s.n_steps >= MIN_RELAXATIONS + BURNIN_RELAXATIONS   # enough relaxation times now
    assert unsettled(_diagnostics(drift_z=-5.2)) == (True, True)                   # a falling running estimate
    capped = s.replace(n_draws=MAX_DRAWS)
    assert lengthened(capped, _diagnostics(), se_ratio=3.0) is None                # the cap stops it
    assert lengthened(capped, drift, se_ratio=0.5).n_draws == MAX_DRAWS            # ... but not a longer burn-in
