"""SPLICE's Match: the PyTorch fit of a mixture to the noisy moments and anchors (post-processing only).

:func:`match_terms` builds what every fit shares (the moment operator over the public directions, the
pair anchors' misfit, the component-spread prior); :func:`match` runs Adam from one seeded start and
returns the best mixture seen. ``SpliceEngine.fit_measurements`` runs ``fits`` of them and pools them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...logs import layer
from ...schema import Schema
from ...schema.embedding import Embedding
from ..groupings import coarse_groupings
from ..torch_threads import fit_device
from .pairs import ComponentSpread, PairMisfit

_log = layer("engines")


def null_share(anchor: np.ndarray, column) -> float:
    """The DP 1-way distribution's share of nulls (0 for a column that cannot hold them)."""
    return float(anchor[column.null_code] / anchor.sum()) if column.nullable else 0.0


def moment_operator(schema: Schema, directions: np.ndarray, supports, degree: int, device,
                    gaussian: tuple[int, ...] = (), embedding: Embedding | None = None):
    """The closed-form moment operator for these directions (PyTorch, on ``device``) over
    ``embedding`` (default: the affine one); the columns in ``gaussian`` are left to the Gaussian
    block (their value coordinates' direction weights)."""
    from .closed_form import SlicedMomentOperator

    embedding = embedding or Embedding(schema)
    projections, column_dirs = [], []
    for j in range(len(schema)):
        if j in gaussian:
            continue
        dirs = np.array([l for l, s in enumerate(supports) if j in s], dtype=np.int64)
        block = directions[dirs][:, embedding.block(j)]  # (L_c, width_j)
        projections.append(block @ embedding.code_vectors(j).T)  # (L_c, size_j)
        column_dirs.append(dirs)
    gaussian_directions = directions[:, [embedding.offsets[j] for j in gaussian]] if gaussian else None
    return SlicedMomentOperator(projections, column_dirs, len(directions), degree, device, gaussian_directions)


def _gaussian_start(embedding: Embedding, numeric: tuple[int, ...], anchors) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and variance of the value coordinate: from the DP 1-way marginals when
    present (bin centres), else those of a uniform law on [-1, 1]."""
    if anchors is None:
        return np.zeros(len(numeric)), np.full(len(numeric), 1.0 / 3.0)
    means, variances = [], []
    for j in numeric:
        n_values = embedding.schema.columns[j].n_values
        centres, p = embedding.code_vectors(j)[:n_values, 0], anchors[j][:n_values] / max(anchors[j][:n_values].sum(), 1e-12)
        mean = float(p @ centres)
        means.append(mean)
        variances.append(max(float(p @ (centres - mean) ** 2), 1e-4))
    return np.array(means), np.array(variances)


def adam_step(theta, grad, state: dict, lr: float, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
    """One Adam update of ``theta`` in place (the update rule of ``torch.optim.Adam`` with its defaults, no
    weight decay). Written out because constructing any ``torch.optim`` optimiser imports torch._dynamo,
    ~2 s of a cold process's Match; on one flat parameter vector it is five tensor operations."""
    import torch

    if not state:
        state.update(step=0, exp_avg=torch.zeros_like(theta), exp_avg_sq=torch.zeros_like(theta))
    state["step"] += 1
    beta1, beta2 = betas
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    with torch.no_grad():
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1, bias_correction2 = 1 - beta1 ** state["step"], 1 - beta2 ** state["step"]
        denom = (exp_avg_sq.sqrt() / bias_correction2**0.5).add_(eps)
        theta.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)


def cosine_rate(step: int, steps: int, rate: float, floor: float) -> float:
    """Learning rate at 0-based ``step`` of a cosine schedule from ``rate`` down to ``floor`` over ``steps``."""
    return floor + (rate - floor) * (1 + math.cos(math.pi * step / steps)) / 2


class MatchTerms(NamedTuple):
    """The final Match's loss terms, built once from the releases and public inputs and shared,
    read-only, by every pooled fit: the moment operator, the pair anchors' misfit and the
    component-spread prior (None when off)."""

    device: object
    operator: object
    misfit: PairMisfit | None
    spread: ComponentSpread | None


def match_terms(schema, embedding, directions, supports, anchors, numeric: tuple[int, ...], shared: frozenset[int],
                o, pairs=(), moment_sigma: float = 1.0) -> MatchTerms:
    """:class:`MatchTerms` for these releases: the pair anchors weighted as a Gaussian likelihood on
    the moments' scale (``moment_sigma`` their noise per unit row), the spread prior on the pair
    anchors' scale (σ̄ their mean noise σ)."""
    device = fit_device(o.device)
    operator = moment_operator(schema, directions, supports, o.degree, device, numeric, embedding)
    misfit = PairMisfit(schema, embedding, numeric, {j: null_share(anchors[j], schema.columns[j]) if anchors is not None else 0.0
                                                     for j in numeric}, pairs, o.pair_weight * moment_sigma ** 2 / len(directions),
                        device) if pairs else None
    spread = None
    if pairs and o.spread_weight > 0:  # a shared column has one distribution for every component: no spread
        spread = ComponentSpread(misfit, schema, embedding, [j for j in range(len(schema)) if j not in shared],
                                 coarse_groupings(schema, o.pair_groups),
                                 o.spread_weight * o.pair_weight * moment_sigma ** 2 / len(directions)
                                 / float(np.mean([p.sigma ** 2 for p in pairs])), device)
    return MatchTerms(device, operator, misfit, spread)


def match(schema, embedding, target, anchors, numeric: tuple[int, ...], shared: frozenset[int], o,
           terms: MatchTerms, *, seed: int, label: str = "splice Match"):
    """Adam on the SPLICE loss (``terms``) from an initialisation drawn with ``seed``; returns mixture
    weights, per code-modelled column (K, size) probabilities, the Gaussian block's (mean, factor,
    diag) or None, and the loss history. Progress is logged under ``label``."""
    import torch

    from .closed_form import GaussianParameters

    device, operator, misfit, spread = terms
    generator = torch.Generator(device="cpu").manual_seed(seed)
    start = anchors or [np.full(c.size, 1.0 / c.size) for c in schema]
    logits = [  # a shared column: one row of logits for every component
        torch.log(torch.as_tensor(p, dtype=torch.float64) + 1e-3)[None, :] if j in shared else
        torch.log(torch.as_tensor(p, dtype=torch.float64) + 1e-3).expand(o.components, -1)
        + 0.5 * torch.randn(o.components, len(p), generator=generator, dtype=torch.float64)
        for j, p in enumerate(start) if j not in numeric
    ]
    gaussian_raw: list = []
    if numeric:
        mean0, var0 = (torch.as_tensor(v, dtype=torch.float64) for v in _gaussian_start(embedding, numeric, anchors))
        k, g = o.components, len(numeric)
        gaussian_raw = [
            (mean0 + 0.5 * var0.sqrt() * torch.randn(k, g, generator=generator, dtype=torch.float64)),
            (0.3 * var0.sqrt()[:, None] * torch.randn(k, g, o.rank, generator=generator, dtype=torch.float64)),
            torch.log(0.5 * var0).expand(k, g).clone(),
        ]
    # every parameter is a view of one flat vector: one Adam update, one snapshot of the best state
    blocks = [torch.zeros(o.components, dtype=torch.float64), *logits, *gaussian_raw]
    shapes, sizes = [b.shape for b in blocks], [b.numel() for b in blocks]
    theta = torch.cat([b.reshape(-1) for b in blocks]).to(device).requires_grad_()
    n_logits = len(logits)

    def unpack(flat):
        return [part.view(shape) for part, shape in zip(torch.split(flat, sizes), shapes)]

    target_t = torch.as_tensor(target, dtype=torch.float64, device=device)
    j_weights = 1.0 / torch.arange(1, o.degree + 1, dtype=torch.float64, device=device) ** 2
    code_anchors = [a for j, a in enumerate(anchors) if j not in numeric] if anchors else None
    anchor_t = [torch.as_tensor(a, dtype=torch.float64, device=device) for a in code_anchors] if code_anchors else None

    def gaussian_parameters(raw):
        return GaussianParameters(raw[0], raw[1], torch.exp(raw[2]) + 1e-8) if raw else None

    def loss_fn(flat):
        weight_logits, *rest = unpack(flat)
        weights = torch.softmax(weight_logits, 0)
        probs = [torch.softmax(l, 1).expand(o.components, -1) for l in rest[:n_logits]]
        moments = operator.mixture_moments(weights, probs, gaussian_parameters(rest[n_logits:]))
        loss = (((moments - target_t) ** 2) * j_weights).sum(1).mean()
        if anchor_t is not None and o.anchor_weight > 0:
            loss = loss + o.anchor_weight * sum(((weights @ p - a) ** 2).sum() for p, a in zip(probs, anchor_t))
        if misfit is not None:
            loss = loss + misfit(weights, probs, gaussian_parameters(rest[n_logits:]))
        if spread is not None:
            loss = loss + spread(weights, probs, gaussian_parameters(rest[n_logits:]))
        return loss

    best, best_state, stale = math.inf, None, 0
    history: list[float] = []  # the loss at every step (of a fit to noisy moments: post-processing)
    report_every = max(1, o.steps // 10)
    adam: dict = {}
    for step in range(o.steps):
        loss = loss_fn(theta)
        (grad,) = torch.autograd.grad(loss, theta)
        adam_step(theta, grad, adam, cosine_rate(step, o.steps, o.learning_rate, o.learning_rate * 0.05))
        value = float(loss.detach())
        history.append(value)
        if (step + 1) % report_every == 0:
            _log.info("%s: step %d/%d, loss %.6g", label, step + 1, o.steps, value)
        if value < best * (1 - 1e-4):
            best, stale = value, 0
            best_state = theta.detach().clone()  # as before: the parameters just after this step's update
        else:
            stale += 1
            if stale >= o.patience:
                _log.info("%s: stopped at step %d/%d (no improvement for %d steps), best loss %.6g",
                          label, step + 1, o.steps, o.patience, best)
                break
    weight_logits, *rest = unpack(best_state)
    weights = torch.softmax(weight_logits, 0).cpu().numpy()
    probabilities = [torch.softmax(l, 1).expand(o.components, -1).cpu().numpy() for l in rest[:n_logits]]
    gaussian = gaussian_parameters(rest[n_logits:])
    if gaussian is not None:
        gaussian = tuple(t.cpu().numpy() for t in gaussian)
    return weights, probabilities, gaussian, history
