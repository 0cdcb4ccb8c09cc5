# Databricks notebook source
# MAGIC %md
# MAGIC # Engine `independent`: the baseline
# MAGIC
# MAGIC **What it measures:** one DP histogram per column over the column's public codes (categories,
# MAGIC or public bins for numbers; nulls are a code of their own), each with an equal share of ρ,
# MAGIC noised once with the discrete Gaussian. **What it fits:** each column's distribution, from
# MAGIC the noisy counts only. **What it keeps:** every column's marginal — and *none* of the
# MAGIC dependence between columns; every other engine must beat it.
# MAGIC
# MAGIC **Guarantee:** (ε, δ)-DP (ρ-zCDP inside) under add/remove-one-row neighbours for the model and
# MAGIC all rows sampled from it. Prerequisite: spark-synth installed on the cluster.

# COMMAND ----------

ENGINE = "independent"

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
# MAGIC ## The computation report: one noisy histogram per column
# MAGIC Every column gets the same ρ; σ is the discrete-Gaussian noise scale on each count.

# COMMAND ----------

import pandas as pd

report = synth.privacy_report_
print(f"ε spent {report.epsilon_spent:.4f} at δ={report.delta:g}; ρ={report.rho_spent:.4g} "
      f"over {len(report.measurements)} measurements")
display(pd.DataFrame([m.to_dict() for m in report.measurements])[["query", "mechanism", "l2_sensitivity", "sigma", "rho"]])  # noqa: F821

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
# MAGIC ## What this engine keeps: per-column distributions
# MAGIC The synthetic column shares below follow the DP histograms; pairs of columns are independent
# MAGIC by construction (compare a cross-tab of two related columns with your own data if you own it).

# COMMAND ----------

first = schema.names[0]
display(written.groupBy(first).count().orderBy("count", ascending=False).limit(20))  # noqa: F821
