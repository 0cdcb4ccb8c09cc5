# Databricks notebook source
# MAGIC %md
# MAGIC # Engine `splice`: sliced Chebyshev moment matching
# MAGIC
# MAGIC **What it measures:** DP 1-way histograms of every column (a share of ρ) and, in one Spark pass,
# MAGIC the sums Σ T_j(wᵀx)/√j of Chebyshev polynomials of the rows' projections on random dense and
# MAGIC column-pair directions (the rest of ρ), noised once with the discrete Gaussian
# MAGIC (ℓ2 sensitivity √(L·H_k)). **What it fits:** a mixture (categorical columns as code distributions,
# MAGIC numeric columns as one low-rank Gaussian per component) matching the noisy moments, in PyTorch
# MAGIC (on the driver's GPU when there is one), calibrated to the DP 1-way marginals.
# MAGIC **What it keeps:** the marginals and part of the dependence between columns. Details: docs/splice.md.
# MAGIC
# MAGIC **Guarantee:** (ε, δ)-DP (ρ-zCDP inside) under add/remove-one-row neighbours for the model and
# MAGIC all rows sampled from it. Prerequisite: spark-synth installed on the cluster.

# COMMAND ----------

ENGINE = "splice"

dbutils.widgets.text("table", "", "Source table (catalog.schema.table) or Delta path")  # noqa: F821
dbutils.widgets.text("schema", "", "Schema file (.json / .yaml)")  # noqa: F821
dbutils.widgets.text("output_table", "", "Synthetic table or Delta path (must not exist)")  # noqa: F821
dbutils.widgets.dropdown("engine", ENGINE, [ENGINE], "Engine")  # noqa: F821
dbutils.widgets.text("epsilon", "1.0", "ε (epsilon)")  # noqa: F821
dbutils.widgets.text("delta", "1e-9", "δ (delta)")  # noqa: F821
dbutils.widgets.text("rows", "10000", "Synthetic rows")  # noqa: F821
dbutils.widgets.text("seed", "0", "Sampling seed")  # noqa: F821

# COMMAND ----------

from spark_synth import Synthesizer, get_spark, load_schema

spark = get_spark()


def read_table(name: str):
    """A table name (catalog.schema.table) or a Delta path (anything with a '/')."""
    return spark.read.format("delta").load(name) if "/" in name else spark.table(name)


source = read_table(dbutils.widgets.get("table"))  # noqa: F821
schema = load_schema(dbutils.widgets.get("schema"))  # noqa: F821
synth = Synthesizer(
    dbutils.widgets.get("engine"),  # noqa: F821
    epsilon=float(dbutils.widgets.get("epsilon")),  # noqa: F821
    delta=float(dbutils.widgets.get("delta")),  # noqa: F821
).fit(source, schema)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The computation report: the 1-way anchors, the moment release and the pair anchors
# MAGIC Each anchor histogram and pair table has sensitivity 1; the moment vector's sensitivity and σ are in real units.
# MAGIC Each pair table was chosen by the exponential mechanism (the second table: its selections).

# COMMAND ----------

import pandas as pd

report = synth.privacy_report_
print(f"ε spent {report.epsilon_spent:.4f} at δ={report.delta:g}; ρ={report.rho_spent:.4g} "
      f"over {len(report.measurements)} measurements and {len(report.selections)} selections")
display(pd.DataFrame([m.to_dict() for m in report.measurements])[["query", "mechanism", "l2_sensitivity", "sigma", "rho"]])  # noqa: F821
if report.selections:
    display(pd.DataFrame([s.to_dict() for s in report.selections])[["query", "mechanism", "score_sensitivity", "scale", "rho"]])  # noqa: F821

# COMMAND ----------

# MAGIC %md
# MAGIC ## Sample and write (spends nothing)

# COMMAND ----------

target = dbutils.widgets.get("output_table")  # noqa: F821
# all or nothing; a Delta output records this fit's epsilon, delta, rho, engine and fit id as table properties
synth.write(int(dbutils.widgets.get("rows")), target, seed=int(dbutils.widgets.get("seed")))  # noqa: F821
written = read_table(target)
print(f"wrote {written.count():,} synthetic rows to {target}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## What this engine keeps: dependence between columns
# MAGIC A cross-tab of the first two columns of the synthetic table (compare with your own data if you own it).

# COMMAND ----------

first, second = schema.names[0], schema.names[1]
display(written.groupBy(first, second).count().orderBy("count", ascending=False).limit(20))  # noqa: F821
