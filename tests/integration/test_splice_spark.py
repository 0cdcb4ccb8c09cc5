"""SPLICE on Spark: the distributed moment pass equals numpy; a full fit is accounted exactly."""

import numpy as np
import pandas as pd
import pytest
from numpy.polynomial import chebyshev

from spark_synth import Synthesizer
from spark_synth.engines import SpliceEngine
from spark_synth.engines.splice.directions import make_directions
from spark_synth.engines.splice.engine import encoding_knots
from spark_synth.io import read_input
from spark_synth.measure import chebyshev_fixed_point_sums, measure_moment_sums
from spark_synth.measure.moments import projection_grid
from spark_synth.queries import MomentQuery
from spark_synth.schema import OutOfDomainPolicy, load_schema
from spark_synth.schema.embedding import Embedding

pytestmark = pytest.mark.spark


def _check_spark_equals_numpy(spark, csv, schema_path, degree=10, knots=False):
    schema = load_schema(schema_path)
    directions, _ = make_directions(schema, n_dense=16, n_sparse=48, seed=3)
    value_knots = None
    if knots:  # the adaptive encoding's piecewise-linear maps, from arbitrary histograms
        rng = np.random.default_rng(4)
        value_knots = encoding_knots(schema, [rng.dirichlet(np.ones(c.size)) for c in schema], 0.8)
    query = MomentQuery(name="m", directions=directions, degree=degree, value_knots=value_knots)
    df = read_input(spark, csv).repartition(3)
    distributed = measure_moment_sums(df, schema, query, OutOfDomainPolicy.CLIP)
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False, na_values=[""])
    x, _ = Embedding(schema, value_knots).embed(frame, OutOfDomainPolicy.CLIP)
    assert np.array_equal(distributed, chebyshev_fixed_point_sums(x, query))  # exact integer aggregation
    # and a plain float64 numpy computation of Σ T_j(z)/√j agrees to 1e-9 relative
    z = np.clip(x @ directions.T, -1, 1)
    values = np.stack([chebyshev.chebval(z, np.eye(degree + 1)[j]) / np.sqrt(j) for j in range(1, degree + 1)], axis=2)
    plain = values.sum(axis=0)
    mass = np.abs(values).sum(axis=0)
    got = distributed / 2.0**query.fraction_bits
    rounding = len(x) * 2.0 ** -(query.fraction_bits + 1)  # at most half a unit per row and entry
    _, row_bits = projection_grid(query)  # the exact projection's public grid moves z by at most dz
    dz = 2.0 ** -(row_bits + 1) * np.abs(directions).sum(axis=1).max() + 2.0**-31 * x.shape[1]
    grid = len(x) * dz * np.arange(1, degree + 1) ** 2 / np.sqrt(np.arange(1, degree + 1))  # |T_j'| ≤ j²
    assert np.all(np.abs(got - plain) <= 1e-9 * mass + rounding + grid)


@pytest.mark.parametrize("knots", [False, True])
def test_moment_pass_equals_numpy_on_bundled_sample(spark, adult_sample_paths, knots):
    _check_spark_equals_numpy(spark, *adult_sample_paths, knots=knots)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["adult", "california_housing", "mushroom", "german_credit"])
def test_moment_pass_equals_numpy_on_shared_data(spark, shared_data, name):
    _check_spark_equals_numpy(spark, str(shared_data / f"{name}.csv"), str(shared_data / f"{name}.schema.json"), knots=True)


def test_splice_fit_report_lists_moment_release(spark, adult_sample_paths):
    data, schema = adult_sample_paths
    synth = Synthesizer("splice", epsilon=1.0, delta=1e-9, engine_options={"steps": 20}).fit(read_input(spark, data), schema)
    report = synth.privacy_report_
    assert report.epsilon_spent <= 1.0 and report.epsilon_spent == pytest.approx(1.0, rel=1e-9)
    (moments,) = [r for r in report.entries if r.name == "sliced-chebyshev-moments"]
    cfg = synth._engine.options
    L, k = cfg.n_dense + cfg.n_sparse, cfg.degree
    harmonic = sum(1 / j for j in range(1, k + 1))
    assert moments.l2_sensitivity == pytest.approx(np.sqrt(L * harmonic), rel=1e-5)  # plus half a fixed-point unit per entry
    assert moments.sigma == pytest.approx(moments.l2_sensitivity / np.sqrt(2 * moments.rho), rel=1e-9)
    rounds = 5 * (15 - 1)  # pair anchors (the default count): one selection and one 2-way release each
    names = [e.name for e in report.entries]
    assert len(report.entries) == 2 * 15 + 1 + 2 * rounds  # the anchors (two stages each) + the moments + the pairs
    assert names.index("sliced-chebyshev-moments") == 2 * 15  # adaptive: measured after the anchors, before the pairs
    assert sum(e.kind == "selection" for e in report.entries) == rounds
    assert sum(name.startswith("marginal[") for name in names) == rounds
    assert synth.measure_passes_ == 2  # the anchors' scan, then the moments encoded from them with every pair candidate
    rows = synth.sample(2000, seed=1, spark=spark).toPandas()
    assert len(rows) == 2000 and list(rows.columns) == list(load_schema(schema).names)
