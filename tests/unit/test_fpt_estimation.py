"""FPT's fitter: the batched loss and gradient equal the per-observation definitions, its per-bag θ
and the per-scope θ it hands on describe the same model, and fitting noiseless answers recovers them."""

import math

import torch

from spark_synth.engines.fpt.estimation import MirrorDescent, Observation, _Layout
from spark_synth.engines.fpt.graphical import GibbsModel, JunctionTree

SIZES = [3, 4, 2, 5]
TOTAL = 1000.0


def _observations(generator):
    """Grouped, repeated and per-cell-σ observations over a cycle's scopes (so some bag holds two)."""
    def noisy(shape):
        return 50.0 + 20.0 * torch.rand(shape, generator=generator, dtype=torch.float64)

    pairs = torch.tensor([0, 0, 1, 1])  # variable 1's codes → two groups
    return [
        Observation((0, 1), noisy((3, 4)), 3.0),
        Observation((0, 1), noisy((3, 2)), 2.0 + torch.rand((3, 2), generator=generator, dtype=torch.float64),
                    (None, pairs)),
        Observation((1, 2), noisy((4, 2)), 5.0),
        Observation((2, 3), noisy((2, 5)), 1.5),
        Observation((0, 3), noisy((3, 5)), 4.0),
        Observation((3,), noisy((2,)), 2.5, (torch.tensor([0, 0, 1, 1, 1]),)),
    ]


def _reference(model, observations):
    """Σ ‖A·N·p − y‖²/σ² and its gradient per scope, one observation at a time."""
    loss, gradient = 0.0, {}
    for o in observations:
        residual = o.project(TOTAL * model.marginal(o.scope)) - o.values
        weight = 1.0 / torch.as_tensor(o.sigma, dtype=torch.float64) ** 2
        loss += float((weight * residual * residual).sum())
        g = o.adjoint(2.0 * weight * residual)
        gradient[o.scope] = gradient.get(o.scope, 0) + g
    return loss, gradient


def test_the_batched_loss_and_gradient_equal_the_per_observation_definitions():
    generator = torch.Generator().manual_seed(3)
    observations = _observations(generator)
    tree = JunctionTree(SIZES, [o.scope for o in observations])
    theta = {o.scope: torch.randn(tree.shape(o.scope), generator=generator, dtype=torch.float64) for o in observations}
    model = GibbsModel(tree, theta).calibrate()
    layout = _Layout(tree, observations, "cpu")
    loss, gradient = layout.loss(TOTAL * layout.marginals(model))
    expected_loss, expected_gradient = _reference(model, observations)
    assert abs(float(loss) - expected_loss) <= 1e-9 * expected_loss
    for k, scope in enumerate(layout.scopes):
        torch.testing.assert_close(layout.segment(gradient, k), expected_gradient[scope], rtol=1e-10, atol=1e-10)


def test_the_fitted_scope_potentials_give_the_model_the_fit_returns():
    generator = torch.Generator().manual_seed(5)
    observations = _observations(generator)
    tree = JunctionTree(SIZES, [o.scope for o in observations])
    fitter = MirrorDescent(tree, TOTAL, "cpu")
    model = fitter.fit(observations, 25)
    assert fitter.history[-1] < fitter.history[0]
    rebuilt = GibbsModel(tree, fitter.potentials()).calibrate()
    for scope in {o.scope for o in observations}:
        torch.testing.assert_close(rebuilt.marginal(scope), model.marginal(scope), rtol=1e-9, atol=1e-12)
    # warm-started on another tree over more scopes, it continues from the same model
    wider = JunctionTree(SIZES, [o.scope for o in observations] + [(1, 3)])
    again = MirrorDescent(wider, TOTAL, "cpu", fitter.potentials())
    again.step = fitter.step
    again.fit(observations, 0)
    assert abs(again.history[0] - fitter.history[-1]) <= 1e-9 * fitter.history[-1]


def test_noiseless_answers_of_a_model_in_the_family_are_recovered():
    generator = torch.Generator().manual_seed(7)
    scopes = [(0, 1), (1, 2), (2, 3), (0, 3)]
    tree = JunctionTree(SIZES, scopes)
    truth = GibbsModel(tree, {s: torch.randn(tree.shape(s), generator=generator, dtype=torch.float64) for s in scopes})
    observations = [Observation(s, TOTAL * truth.marginal(s), 1.0) for s in scopes]
    fitter = MirrorDescent(tree, TOTAL, "cpu")
    model = fitter.fit(observations, 400)
    assert fitter.loss < 1e-3 * fitter.history[0]
    for s in scopes:
        assert float((TOTAL * (model.marginal(s) - truth.marginal(s))).abs().max()) < 1.0


def test_a_float32_calibration_fits_as_well_as_float64():
    """``fit_precision`` float32 changes only the calibration's dtype: θ, the loss and the handed-on
    potentials stay float64, and the fit reaches the float64 fit's loss (within 1 %)."""
    observations = _observations(torch.Generator().manual_seed(5))
    tree = JunctionTree(SIZES, [o.scope for o in observations])
    losses = {}
    for dtype in (torch.float64, torch.float32):
        fitter = MirrorDescent(tree, TOTAL, "cpu", dtype=dtype)
        model = fitter.fit(observations, 60)
        losses[dtype] = fitter.loss
        assert model.log_beliefs[0].dtype == dtype
        assert all(t.dtype == torch.float64 for t in fitter.potentials().values())
    assert losses[torch.float32] <= 1.01 * losses[torch.float64]
    assert losses[torch.float64] <= 1.01 * losses[torch.float32]


def test_the_reported_error_is_the_rms_error_per_measured_cell_in_sigmas():
    """What the progress lines print: √(loss / measured cells), about 1 when the model fits the
    measurements as well as their noise allows (each scope measured twice, so it cannot fit the noise)."""
    generator = torch.Generator().manual_seed(11)
    scopes = [(0, 1), (1, 2), (2, 3), (0, 3)]
    tree = JunctionTree(SIZES, scopes)
    truth = GibbsModel(tree, {s: torch.randn(tree.shape(s), generator=generator, dtype=torch.float64) for s in scopes})
    sigma = 3.0
    observations = [Observation(s, TOTAL * truth.marginal(s) + sigma * torch.randn(tree.shape(s), generator=generator,
                                                                                   dtype=torch.float64), sigma)
                    for s in scopes for _ in range(2)]
    fitter = MirrorDescent(tree, TOTAL, "cpu")
    fitter.fit(observations, 300)
    cells = sum(o.values.numel() for o in observations)
    assert fitter.error_in_sigmas() == math.sqrt(fitter.loss / cells)
    assert 0.5 < fitter.error_in_sigmas() < 1.2
    assert math.sqrt(fitter.history[0] / cells) > 3.0  # the uniform start is many σ off
