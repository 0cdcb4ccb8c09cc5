"""A public, seeded generator of wide test tables whose dependency structure is known.

The shared tables have at most 48 columns and nobody knows their true dependence graph. This
script draws a random sparse Bayesian network over ``--columns`` columns and samples ``--rows``
rows from it, so a benchmark can say which 2-way marginals a model *should* reproduce (the network's
edges) and which it must not invent (pairs that are independent by construction).

The network (all of it fixed by ``--seed``; the rows do not change it):

* column kinds mixed like the shared tables: binary and small categoricals (2–10 levels), a few wide
  categoricals (50–900 codes with a Zipf-like spread, like diabetes_readmission's ICD-9 codes),
  ordinals (3–12 levels, numbers or range labels), integers with realistic ranges (ages 17–90,
  skewed counts, zero-inflated amounts 0–100000, durations 0–5000) and a few continuous columns
  (rates, shares); a few columns (about 8 %) hold 1–20 % nulls, missing completely at random;
* a random topological order cut into components of about 15 columns; each column has 0, 1 or 2
  parents drawn from earlier columns of its component (some have none), so most pairs are
  independent by construction and the dependent ones are sparse;
* categorical children: a random Dirichlet CPT given their (grouped) parents — categorical parents
  by their codes (wide ones mapped to 6 groups), numeric and ordinal parents by quartile on the
  public grid (16 equal-width bins over ``[min, max]``, as the shared harness bins numbers), a null
  parent value as a group of its own;
* ordinal and numeric children: a parent-driven shift (and, for the first parent, scale) of a
  latent normal, mapped to the profile's base distribution (cut at thresholds for ordinals),
  clipped to the public ``[min, max]`` and rounded for integers;
* ``target`` (binary, the last column): a logistic model of 4 parents, the one column with more
  than 2 parents, so TSTR has something to learn;
* every edge clearly measurable: a column whose mutual information with a parent (both on the
  public grid) is below 0.02 nats on the calibration sample is redrawn sharper, up to 6 times;
  the truth file keeps each edge's measured strength (at 30 k rows the weakest edges are near
  0.01–0.02 nats, the pairs independent by construction below 0.01).

Sampling is vectorised per column and streamed in blocks of rows; the constants that depend on a
parent's distribution (standardisation, quartiles, ordinal thresholds) are fitted once on a
separate calibration sample, so every block follows the same network.

Writes ``OUT_DIR/NAME.csv`` (empty cell = null), ``OUT_DIR/NAME.schema.json`` (public bounds and
categories only: a spark-synth schema that the shared harness also takes) and
``OUT_DIR/NAME.truth.json`` (the network: each column's kind, parents and mechanism; see
:func:`truth_dict`):

    python benchmarks/wide_network.py /tmp/wide --columns 100 --rows 30000 --seed 0
    python ../shared/bench/harness.py run --dataset /tmp/wide/network100 --epsilon 1 --delta 1e-9 --cmd ...

Other benchmarks split 2-way marginals with :func:`edge_pairs` (or :func:`pair_classes`)::

    sys.path.insert(0, "benchmarks"); from wide_network import edge_pairs, load_truth
    dependent, independent = edge_pairs(load_truth("/tmp/wide/network100.truth.json"))
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.compute as pa_compute

VERSION = 1
#: Share of the non-target columns of each kind (small categoricals take the rest).
KIND_SHARES = {"binary": 0.20, "wide": 0.04, "ordinal": 0.12, "integer": 0.22, "continuous": 0.05}
INTEGER_PROFILES = ("age", "count", "amount", "duration", "count")
CONTINUOUS_PROFILES = ("rate", "share")
#: Probabilities of 0, 1 and 2 parents (fewer where the component has fewer earlier columns).
PARENT_COUNTS = (0.2, 0.45, 0.35)
TARGET_PARENTS = 4
COMPONENT_SIZE = 15
NULLABLE_SHARE = 0.08
NULL_SHARES = (0.01, 0.20)
#: A categorical parent with more codes than this is mapped to this many groups in a child's CPT.
MAX_PARENT_GROUPS = 6
#: Numeric and ordinal parents enter a child's CPT by quartile (numbers on the public grid).
QUANTILE_GROUPS = 4
#: Numbers are binned on this many equal-width bins over their public bounds (as the shared harness does).
GRID_BINS = 16
#: Least mutual information (nats) of an edge on the calibration sample, both ends on the public grid;
#: a weaker column is redrawn sharper, at most SHARPEN_TRIES times.
MIN_EDGE_MI = 0.02
SHARPEN_TRIES = 6
MAX_WEIGHT = 3.0
MIN_COLUMNS = 12
CALIBRATION_ROWS = 20_000
BLOCK_ROWS = 50_000
#: Random streams of one seed: the network, the calibration sample, then block i uses BLOCKS + i.
PLAN, CALIBRATION, BLOCKS = 0, 1, 2
#: Numeric profiles whose values enter their children on a log scale.
SKEWED = ("count", "amount", "duration")


@dataclass
class Node:
    """One column of the network: its public domain, its parents and how it is drawn from them."""

    name: str
    kind: str            # binary | categorical | wide | ordinal | integer | continuous | target
    profile: str         # label style (discrete kinds) or value profile (numeric kinds)
    categories: list | None = None
    low: float | None = None
    high: float | None = None
    parents: list[str] = field(default_factory=list)
    null_share: float = 0.0
    mechanism: str = ""  # dirichlet_cpt | latent_shift | latent_threshold | logistic
    params: dict = field(default_factory=dict)

    @property
    def discrete(self) -> bool:
        return self.categories is not None

    @property
    def levels(self) -> int:
        return len(self.categories) if self.discrete else 0

    @property
    def nullable(self) -> bool:
        return self.null_share > 0


@dataclass
class Network:
    """The whole generating network: nodes in CSV order, their generation order, fitted constants."""

    nodes: list[Node]
    order: list[str]
    seed: int
    fitted: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {node.name: node for node in self.nodes}

    @property
    def target(self) -> str:
        return next(node.name for node in self.nodes if node.kind == "target")


# ---- the network ------------------------------------------------------------------------------------
def plan(columns: int, seed: int) -> Network:
    """Draw the network for ``columns`` columns from ``seed`` and fit its constants (module docstring)."""
    if columns < MIN_COLUMNS:
        raise ValueError(f"--columns must be at least {MIN_COLUMNS}; got {columns}")
    if seed < 0:
        raise ValueError(f"--seed must be non-negative; got {seed}")
    rng = np.random.default_rng([seed, PLAN])
    n = columns - 1
    kinds = _kinds(n, rng)
    width = len(str(n - 1))
    nodes = [_node(f"c{i:0{width}d}", kind, rng) for i, kind in enumerate(kinds)]
    nodes.append(Node("target", "target", "yesno", categories=["no", "yes"]))
    for index in rng.choice(n, max(1, round(NULLABLE_SHARE * n)), replace=False):
        nodes[index].null_share = round(float(rng.uniform(*NULL_SHARES)), 3)

    order = [int(i) for i in rng.permutation(n)]
    components = max(1, round(n / COMPONENT_SIZE))
    component = rng.choice(components, size=n, p=rng.dirichlet(np.full(components, 3.0)))
    members: dict[int, list[int]] = {}
    for index in order:
        earlier = members.setdefault(int(component[index]), [])
        count = min(int(rng.choice(3, p=PARENT_COUNTS)), len(earlier))
        nodes[index].parents = [nodes[int(p)].name for p in rng.choice(earlier, count, replace=False)]
        earlier.append(index)
    largest = max(members.values(), key=len)
    if len(largest) < TARGET_PARENTS:
        raise ValueError("no component is large enough for the target's parents; use more columns")
    nodes[-1].parents = [nodes[int(p)].name for p in rng.choice(largest, TARGET_PARENTS, replace=False)]
    network = Network(nodes, [nodes[i].name for i in order] + ["target"], seed)
    for name in network.order:
        _mechanism(network, network.by_name[name], rng)
    _sample(network, CALIBRATION_ROWS, np.random.default_rng([seed, CALIBRATION]), fit_rng=rng)
    return network


def _kinds(n: int, rng: np.random.Generator) -> list[str]:
    """The non-target columns' kinds in CSV order: the quotas of :data:`KIND_SHARES`, shuffled."""
    counts = {kind: max(1, round(share * n)) for kind, share in KIND_SHARES.items()}
    counts["categorical"] = n - sum(counts.values())
    kinds = [kind for kind, count in counts.items() for _ in range(count)]
    return [kinds[i] for i in rng.permutation(n)]


def _node(prefix: str, kind: str, rng: np.random.Generator) -> Node:
    """A column of ``kind`` with a random public domain (categories or bounds)."""
    if kind == "binary":
        style = ("yesno", "01", "12")[rng.integers(3)]
        categories = {"yesno": ["no", "yes"], "01": [0, 1], "12": [1, 2]}[style]
        return Node(f"{prefix}_flag", kind, style, categories=categories)
    if kind == "categorical":
        levels = int(rng.integers(3, 11))
        style = ("letters", "letters", "codes")[rng.integers(3)]
        categories = [chr(65 + k) for k in range(levels)] if style == "letters" else list(range(1, levels + 1))
        return Node(f"{prefix}_cat", kind, style, categories=categories)
    if kind == "wide":
        codes = np.sort(rng.choice(np.arange(1, 1000), int(rng.integers(50, 901)), replace=False))
        return Node(f"{prefix}_code", kind, "codes", categories=[f"D{c:03d}" for c in codes])
    if kind == "ordinal":
        levels = int(rng.integers(3, 13))
        if rng.random() < 0.5:
            start = int(rng.integers(0, 2))
            return Node(f"{prefix}_ord", kind, "levels", categories=list(range(start, start + levels)))
        step = int(rng.choice([5, 10, 25]))
        labels = [f"[{step * k}-{step * (k + 1)})" for k in range(levels)]
        return Node(f"{prefix}_ord", kind, "ranges", categories=labels)
    profiles = INTEGER_PROFILES if kind == "integer" else CONTINUOUS_PROFILES
    profile = profiles[rng.integers(len(profiles))]
    node = Node(f"{prefix}_{profile}", kind, profile)
    node.params = _profile_params(profile, rng)
    node.low, node.high = node.params.pop("low"), node.params.pop("high")
    return node


def _profile_params(profile: str, rng: np.random.Generator) -> dict:
    """Public bounds and base-distribution constants of a numeric profile."""
    if profile == "age":
        return {"low": 17, "high": 90, "center": rng.uniform(35, 48), "spread": rng.uniform(10, 16)}
    if profile == "count":
        high = int(rng.choice([6, 14, 20, 25, 50, 100, 150]))
        return {"low": int(rng.integers(0, 2)), "high": high, "mean": high * rng.uniform(0.1, 0.25)}
    if profile == "amount":
        return {"low": 0, "high": 100_000, "zeros": rng.uniform(0.03, 0.25), "median": rng.uniform(8000, 25000),
                "sigma": rng.uniform(0.6, 1.0)}
    if profile == "duration":
        return {"low": 0, "high": 5000, "median": rng.uniform(300, 900), "sigma": rng.uniform(0.6, 0.9)}
    if profile == "rate":
        return {"low": -4.0, "high": 2.0, "center": rng.uniform(-1.5, 0.5), "spread": rng.uniform(0.8, 1.4)}
    return {"low": 0.0, "high": 1.0, "center": rng.uniform(-1.0, 1.0), "spread": rng.uniform(1.0, 2.0)}


def _mechanism(network: Network, node: Node, rng: np.random.Generator) -> None:
    """Draw how ``node`` depends on its parents: a CPT (categoricals), a latent shift (ordinals and
    numbers) or a logistic model (the target)."""
    parents = [network.by_name[p] for p in node.parents]
    if node.kind in ("binary", "categorical", "wide"):
        node.mechanism = "dirichlet_cpt"
        base = _base_distribution(node, rng)
        groups = [_group_count(p) for p in parents]
        node.params["group_maps"] = {p.name: rng.permutation(p.levels) % MAX_PARENT_GROUPS
                                     for p in parents if _categorical(p) and p.levels > MAX_PARENT_GROUPS}
        node.params["concentration"] = concentration = float(node.levels * rng.uniform(0.5, 1.5))
        configs = int(np.prod(groups)) if parents else 0
        node.params["groups"] = groups
        node.params["base"] = base
        node.params["cpt"] = _floor(rng.dirichlet(concentration * base, size=configs)) if configs else base[None, :]
        return
    node.mechanism = {"target": "logistic", "ordinal": "latent_threshold"}.get(node.kind, "latent_shift")
    node.params["weights"] = {p.name: float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.0)) for p in parents}
    if node.kind == "target":
        node.params["weights"] = {p: 1.3 * w for p, w in node.params["weights"].items()}
        rate = rng.uniform(0.2, 0.4)  # share of "yes" at an average row
        node.params["intercept"] = float(np.log(rate / (1.0 - rate)))
    node.params["effects"] = {p.name: rng.normal(size=p.levels + 1) for p in parents if _categorical(p)}
    node.params["null_effects"] = {p.name: float(rng.normal()) for p in parents}
    node.params["scale"] = float(rng.uniform(-0.3, 0.3)) if parents else 0.0
    if node.kind == "ordinal":
        node.params["base"] = rng.dirichlet(np.full(node.levels, 2.0))


def _base_distribution(node: Node, rng: np.random.Generator) -> np.ndarray:
    """A categorical column's marginal shape: Zipf-like for wide codes, Dirichlet otherwise."""
    if node.kind == "wide":
        weights = 1.0 / np.arange(1, node.levels + 1) ** rng.uniform(0.9, 1.2)
        return rng.permutation(weights / weights.sum())
    return 0.8 * rng.dirichlet(np.full(node.levels, 1.5)) + 0.2 / node.levels  # every level >= 1/5 of a uniform share


def _categorical(node: Node) -> bool:
    """Unordered categories (ordinals enter their children by rank, like numbers)."""
    return node.kind in ("binary", "categorical", "wide", "target")


def _floor(p: np.ndarray) -> np.ndarray:
    """Rows of probabilities with no exact zero (tiny Dirichlet parameters underflow)."""
    p = np.maximum(p, 1e-12)
    return p / p.sum(axis=-1, keepdims=True)


def _group_count(parent: Node) -> int:
    """How many groups ``parent`` splits a child's CPT into (its null included)."""
    groups = min(parent.levels, MAX_PARENT_GROUPS) if _categorical(parent) else QUANTILE_GROUPS
    return groups + (1 if parent.nullable else 0)


# ---- sampling -------------------------------------------------------------------------------------
def _sample(network: Network, rows: int, rng: np.random.Generator, fit_rng: np.random.Generator | None = None) -> dict:
    """``rows`` rows of every column, in generation order: discrete columns as int64 codes (-1 =
    null), numeric ones as float64 (NaN = null).

    With ``fit_rng`` these rows are the calibration sample: the network's constants are fitted on
    them (:func:`_calibrate`)."""
    data: dict[str, np.ndarray] = {}
    for name in network.order:
        node = network.by_name[name]
        if fit_rng is None:
            values = _draw(network, node, data, rows, rng, fit=False)
        else:
            values = _calibrate(network, node, data, rows, rng, fit_rng)
        if node.nullable:
            missing = rng.random(rows) < node.null_share
            values[missing] = -1 if node.discrete else np.nan
        data[name] = values
    return data


def _draw(network: Network, node: Node, data: dict, rows: int, rng: np.random.Generator, fit: bool) -> np.ndarray:
    """One column given its parents' values (``fit``: fit its constants on these rows)."""
    if node.mechanism == "dirichlet_cpt":
        return _sample_cpt(network, node, data, rows, rng, fit)
    latent = _latent(network, node, data, rows, rng, fit)
    if node.mechanism == "logistic":
        return (rng.random(rows) < 1.0 / (1.0 + np.exp(-node.params["intercept"] - latent))).astype(np.int64)
    if node.mechanism == "latent_threshold":
        key = (node.name, "thresholds")
        if fit:
            network.fitted[key] = np.quantile(latent, np.cumsum(node.params["base"])[:-1])
        return np.searchsorted(network.fitted[key], latent, side="right").astype(np.int64)
    return _numeric(node, latent, rng)


def _calibrate(network: Network, node: Node, data: dict, rows: int, rng: np.random.Generator,
               fit_rng: np.random.Generator) -> np.ndarray:
    """Draw a column of the calibration sample and fit its constants. Where its dependence on a
    parent is below :data:`MIN_EDGE_MI`, redraw it sharper (:func:`_sharpen`, at most
    :data:`SHARPEN_TRIES` times) and keep the strongest draw; its edges' strengths are kept in
    ``params["edge_mi"]``."""
    best = None
    for attempt in range(SHARPEN_TRIES + 1):
        values = _draw(network, node, data, rows, rng, fit=True)
        strengths = _edge_strengths(network, node, data, values, rng)
        weakest = min(strengths.values(), default=np.inf)
        if best is None or weakest > best[0]:
            fitted = {key: value for key, value in network.fitted.items() if key[0] == node.name}
            best = (weakest, values, copy.deepcopy(node.params), fitted, strengths)
        if weakest >= MIN_EDGE_MI or attempt == SHARPEN_TRIES:
            break
        _sharpen(node, strengths, fit_rng)
    _, values, node.params, fitted, strengths = best
    network.fitted.update(fitted)
    node.params["edge_mi"] = strengths
    return values


def _edge_strengths(network: Network, node: Node, data: dict, values: np.ndarray,
                    rng: np.random.Generator) -> dict[str, float]:
    """Mutual information (nats, less that of a shuffled copy) between the column and each parent,
    both coded on the public grid (:func:`public_codes`)."""
    child = public_codes(node, values)
    strengths = {}
    for parent in node.parents:
        codes = public_codes(network.by_name[parent], data[parent])
        strengths[parent] = mutual_information(codes, child) - mutual_information(codes, rng.permutation(child))
    return strengths


def _sharpen(node: Node, strengths: dict[str, float], rng: np.random.Generator) -> None:
    """Strengthen a column's dependence on its parents: redrawn, sharper CPT rows, or larger weights
    of its weak parents."""
    if node.mechanism == "dirichlet_cpt":
        node.params["concentration"] *= 0.7
        node.params["cpt"] = _floor(rng.dirichlet(node.params["concentration"] * node.params["base"],
                                                  size=len(node.params["cpt"])))
    else:
        weights = node.params["weights"]
        node.params["weights"] = {p: float(np.clip(1.4 * w, -MAX_WEIGHT, MAX_WEIGHT)) if strengths[p] < MIN_EDGE_MI
                                  else w for p, w in weights.items()}


def public_codes(node: Node, values: np.ndarray) -> np.ndarray:
    """Codes on the public grid, as the shared harness codes a column: the category, or one of
    :data:`GRID_BINS` equal-width bins over ``[min, max]``; null is the last code."""
    if node.discrete:
        return np.where(values < 0, node.levels, values)
    grid = np.clip(np.floor((values - node.low) / (node.high - node.low) * GRID_BINS), 0, GRID_BINS - 1)
    return np.where(np.isnan(values), GRID_BINS, np.nan_to_num(grid)).astype(np.int64)


def mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    """Plug-in mutual information (nats) of two code arrays."""
    rows, cols = int(a.max()) + 1, int(b.max()) + 1
    joint = np.bincount(a * cols + b, minlength=rows * cols).reshape(rows, cols) / len(a)
    outer = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    present = joint > 0
    return float((joint[present] * np.log(joint[present] / outer[present])).sum())


def _sample_cpt(network: Network, node: Node, data: dict, rows: int, rng: np.random.Generator, fit: bool) -> np.ndarray:
    """A categorical child: each row's code drawn from the CPT row of its parents' groups (one
    vectorised inverse-CDF draw over all CPT rows at once)."""
    config = np.zeros(rows, dtype=np.int64)
    for parent, groups in zip(node.parents, node.params["groups"]):
        config = config * groups + _groups(network, node, network.by_name[parent], data[parent], fit)
    cpt = node.params["cpt"]
    configs, levels = cpt.shape
    cumulative = np.cumsum(cpt, axis=1)
    cumulative[:, -1] = 1.0
    flat = (cumulative + np.arange(configs)[:, None]).ravel()
    drawn = np.searchsorted(flat, config + rng.random(rows), side="right") - config * levels
    return np.clip(drawn, 0, levels - 1)


def _groups(network: Network, child: Node, parent: Node, values: np.ndarray, fit: bool) -> np.ndarray:
    """The parent's group in ``child``'s CPT: its code (wide codes mapped to groups) or its quartile
    on the public grid (so the dependence shows wherever numbers are binned on it); null is the last
    group."""
    if _categorical(parent):
        mapping = child.params["group_maps"].get(parent.name)
        groups = values if mapping is None else mapping[np.maximum(values, 0)]
        count = min(parent.levels, MAX_PARENT_GROUPS)
    else:
        grid = public_codes(parent, values).astype(np.float64)
        key = (child.name, parent.name, "quartiles")
        if fit:
            quartiles = np.quantile(grid[~_is_null(parent, values)], [0.25, 0.5, 0.75], method="lower")
            network.fitted[key] = np.unique(quartiles)  # a code holding most rows is one group, the rest split
        groups = np.searchsorted(network.fitted[key], grid, side="left")
        count = QUANTILE_GROUPS
    return np.where(_is_null(parent, values), count, groups).astype(np.int64)


def _latent(network: Network, node: Node, data: dict, rows: int, rng: np.random.Generator, fit: bool) -> np.ndarray:
    """Weighted sum of the parents' standardised signals plus noise; unit variance for the latent
    mechanisms (the target's logit keeps its scale and has no noise)."""
    weights = node.params["weights"]
    shift = np.zeros(rows)
    signals = []
    for parent in node.parents:
        signal = _signal(network, node, network.by_name[parent], data[parent], fit)
        signals.append(signal)
        shift += weights[parent] * signal
    if node.mechanism == "logistic":
        return shift
    scale = np.exp(node.params["scale"] * signals[0]) if signals else 1.0
    return (shift + scale * rng.standard_normal(rows)) / np.sqrt(1.0 + sum(w * w for w in weights.values()))


def _signal(network: Network, child: Node, parent: Node, values: np.ndarray, fit: bool) -> np.ndarray:
    """The parent as a standardised number: a random effect per category, or its (log) value; a null
    parent value gets an effect of its own."""
    if _categorical(parent):
        effects = child.params["effects"][parent.name]
        raw = effects[np.where(values < 0, parent.levels, values)]
    else:
        raw = _raw(parent, values)
    key = (child.name, parent.name, "moments")
    if fit:
        present = raw[~np.isnan(raw)]
        network.fitted[key] = (float(present.mean()), float(present.std()) or 1.0)
    mean, std = network.fitted[key]
    return np.where(_is_null(parent, values), child.params["null_effects"][parent.name], (raw - mean) / std)


def _raw(parent: Node, values: np.ndarray) -> np.ndarray:
    """An ordinal's rank or a number (log scale for skewed profiles) as float64, NaN for null."""
    if parent.discrete:
        return np.where(values < 0, np.nan, values.astype(np.float64))
    return np.log1p(np.maximum(values, 0)) if parent.profile in SKEWED else values


def _is_null(node: Node, values: np.ndarray) -> np.ndarray:
    return values < 0 if node.discrete else np.isnan(values)


def _numeric(node: Node, latent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Map a unit-variance latent to the profile's values, clipped to the bounds (rounded for integers)."""
    p = node.params
    if node.profile in ("age", "rate"):
        values = p["center"] + p["spread"] * latent
    elif node.profile == "share":
        values = 1.0 / (1.0 + np.exp(-(p["center"] + p["spread"] * latent)))
    elif node.profile == "count":
        values = rng.poisson(p["mean"] * np.exp(0.6 * latent) * rng.gamma(5.0, 0.2, latent.size))
    elif node.profile == "amount":
        values = np.where(rng.random(latent.size) < p["zeros"], 0.0, p["median"] * np.exp(p["sigma"] * latent))
    else:  # duration
        values = p["median"] * np.exp(p["sigma"] * latent)
    values = np.clip(values, node.low, node.high)
    return np.rint(values) if node.kind == "integer" else np.round(values, 4)


# ---- output ---------------------------------------------------------------------------------------
def write(out_dir: str | Path, columns: int = 100, rows: int = 30_000, seed: int = 0, name: str | None = None) -> dict:
    """Write NAME.csv, NAME.schema.json and NAME.truth.json; returns their paths and the network."""
    if rows < 1:
        raise ValueError(f"--rows must be positive; got {rows}")
    network = plan(columns, seed)
    name = name or f"network{columns}"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {kind: out / f"{name}.{kind}" for kind in ("csv", "schema.json", "truth.json")}
    arrow_schema = pa.schema([(node.name, _arrow_type(node)) for node in network.nodes])
    options = pa_csv.WriteOptions(include_header=False, quoting_style="none")  # no label needs quotes
    with open(paths["csv"], "wb") as sink, pa_csv.CSVWriter(sink, arrow_schema, write_options=options) as writer:
        sink.write((",".join(arrow_schema.names) + "\n").encode("utf-8"))
        for block, start in enumerate(range(0, rows, BLOCK_ROWS)):
            size = min(BLOCK_ROWS, rows - start)
            data = _sample(network, size, np.random.default_rng([seed, BLOCKS + block]))
            writer.write_table(pa.table([_arrow(node, data[node.name]) for node in network.nodes], schema=arrow_schema))
    paths["schema.json"].write_text(json.dumps(schema_dict(network, name, rows), indent=1) + "\n", encoding="utf-8")
    paths["truth.json"].write_text(json.dumps(truth_dict(network, name, rows), indent=1) + "\n", encoding="utf-8")
    return {"network": network, **paths}


def _arrow_type(node: Node) -> pa.DataType:
    if node.discrete:
        return pa.int64() if isinstance(node.categories[0], int) else pa.string()
    return pa.int64() if node.kind == "integer" else pa.float64()


def _arrow(node: Node, values: np.ndarray) -> pa.Array:
    """One column's values as an Arrow array (category labels; nulls as nulls)."""
    if node.discrete:
        return pa_compute.take(pa.array(node.categories, _arrow_type(node)), pa.array(values, mask=values < 0))
    missing = np.isnan(values)
    filled = np.where(missing, 0.0, values)
    return pa.array(filled.astype(np.int64) if node.kind == "integer" else filled, mask=missing)


def schema_dict(network: Network, name: str, rows: int) -> dict:
    """The public schema: spark-synth's format, which the shared harness also reads."""
    columns = []
    for node in network.nodes:
        column: dict = {"name": node.name, "type": "categorical" if node.kind == "target" else _schema_type(node)}
        if node.discrete:
            column["categories"] = list(node.categories)
        else:
            column["min"], column["max"] = node.low, node.high
        column["nullable"] = node.nullable
        columns.append(column)
    return {"name": name, "source": f"benchmarks/wide_network.py --columns {len(network.nodes)} --rows {rows} "
                                    f"--seed {network.seed} (seeded synthetic generator, public)",
            "rows": rows, "target": network.target, "task": "classification",
            "notes": f"Sampled from a known random Bayesian network; its edges are in {name}.truth.json.",
            "columns": columns}


def _schema_type(node: Node) -> str:
    return {"binary": "categorical", "wide": "categorical"}.get(node.kind, node.kind)


def truth_dict(network: Network, name: str, rows: int) -> dict:
    """The generating network as JSON.

    ``columns`` maps each column (CSV order) to ``kind`` (binary, categorical, wide, ordinal,
    integer, continuous, target), ``profile``, ``parents``, ``mechanism``, ``null_share`` and,
    by mechanism, ``weights`` (parent → latent weight) or ``concentration`` (of the CPT rows);
    ``order`` is the generation (topological) order; ``edges`` lists every ``parent`` → ``child``
    edge with ``mi``, its strength on the calibration sample (mutual information in nats, both
    columns on the public grid of :func:`public_codes`, less that of a shuffled copy).
    """
    columns = {}
    for node in network.nodes:
        entry = {"kind": node.kind, "profile": node.profile, "parents": list(node.parents),
                 "mechanism": node.mechanism, "null_share": node.null_share}
        if node.discrete:
            entry["levels"] = node.levels
        if "weights" in node.params:
            entry["weights"] = {p: round(w, 4) for p, w in node.params["weights"].items()}
        if "concentration" in node.params:
            entry["concentration"] = round(node.params["concentration"], 4)
        columns[node.name] = entry
    return {"name": name, "generator": "benchmarks/wide_network.py", "version": VERSION, "seed": network.seed,
            "rows": rows, "target": network.target, "order": list(network.order), "columns": columns,
            "edges": [{"parent": p, "child": node.name, "mi": round(node.params["edge_mi"][p], 4)}
                      for node in network.nodes for p in node.parents]}


# ---- reading the truth ------------------------------------------------------------------------------
def load_truth(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def pair_classes(truth: dict) -> dict[str, list[tuple[str, str]]]:
    """Every pair of columns (in CSV order) as ``edge`` (a parent and its child), ``indirect``
    (dependent through a path or a common ancestor, not an edge) or ``independent`` (no common
    ancestor, neither an ancestor of the other: independent by construction)."""
    names = list(truth["columns"])
    index = {name: i for i, name in enumerate(names)}
    ancestors = np.eye(len(names), dtype=bool)  # ancestors[i, j]: j is i or one of i's ancestors
    for name in truth["order"]:
        for parent in truth["columns"][name]["parents"]:
            ancestors[index[name]] |= ancestors[index[parent]]
    linked = (ancestors.astype(np.int32) @ ancestors.T.astype(np.int32)) > 0
    edges = {frozenset((edge["parent"], edge["child"])) for edge in truth["edges"]}
    classes: dict[str, list[tuple[str, str]]] = {"edge": [], "indirect": [], "independent": []}
    for i, j in zip(*np.triu_indices(len(names), k=1)):
        pair = (names[i], names[j])
        kind = "edge" if frozenset(pair) in edges else ("indirect" if linked[i, j] else "independent")
        classes[kind].append(pair)
    return classes


def edge_pairs(truth: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(dependent, independent)`` 2-way marginals: the network's edges and the pairs independent by
    construction (:func:`pair_classes`; pairs linked only indirectly are in neither list)."""
    classes = pair_classes(truth)
    return classes["edge"], classes["independent"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", help="folder for NAME.csv, NAME.schema.json and NAME.truth.json")
    parser.add_argument("--columns", type=int, default=100,
                        help=f"number of columns, target included (at least {MIN_COLUMNS})")
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="file name stem (default network{columns})")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        written = write(args.out_dir, args.columns, args.rows, args.seed, args.name)
    except ValueError as exc:
        parser.error(str(exc))
    truth = load_truth(written["truth.json"])
    print(f"{written['csv']}: {args.rows} rows x {args.columns} columns, {len(truth['edges'])} edges, "
          f"seed {args.seed}, {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
