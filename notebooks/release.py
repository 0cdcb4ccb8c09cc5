# Databricks notebook source
# MAGIC %md
# MAGIC # Release a DP synthesizer through MLflow
# MAGIC
# MAGIC 1. **Fit** on the source table (spends ε, δ) inside an MLflow run, charged to the table's
# MAGIC    **budget ledger** as it is made (ρ-zCDP: the ρ of every fit of the table add up; refused past the
# MAGIC    table's cap before a row is read), logging the fitted synthesizer as a pyfunc model with its
# MAGIC    privacy metadata.
# MAGIC 2. **Release**: register it as a model version (Unity Catalog: `catalog.schema.model`), tagged with
# MAGIC    ε, δ, ρ, the neighbouring relation, the table's cumulative spend and any `eval_*` metrics of the
# MAGIC    run. The fit is already in the ledger, so the release adds nothing to it (a fit counts once).
# MAGIC 3. **Use** the registered model: `mlflow.pyfunc.load_model("models:/…").predict({"rows": n})` for a
# MAGIC    few rows, `sample_model` for a Spark DataFrame of any size, `write_model_sample` to write a table
# MAGIC    all or nothing, with its provenance (ε, δ, fit id, model URI and version in the `spark_synth.*` table
# MAGIC    properties, the table comment and the commit's `userMetadata`). Sampling spends no budget.
# MAGIC
# MAGIC Prerequisite: spark-synth installed on the cluster.

# COMMAND ----------

from spark_synth.engines import ENGINES

dbutils.widgets.text("table", "", "Source table (catalog.schema.table) or Delta path")  # noqa: F821
dbutils.widgets.text("schema", "", "Schema file (.json / .yaml)")  # noqa: F821
dbutils.widgets.dropdown("engine", "independent", sorted(ENGINES), "Engine")  # noqa: F821
dbutils.widgets.text("epsilon", "1.0", "ε (epsilon) of this fit")  # noqa: F821
dbutils.widgets.text("delta", "1e-9", "δ (delta) of this fit")  # noqa: F821
dbutils.widgets.text("rows", "100000", "Rows to sample from the released model")  # noqa: F821
dbutils.widgets.text("model_name", "", "Registered model (catalog.schema.model in Unity Catalog)")  # noqa: F821
dbutils.widgets.text("budget_cap", "", "Cumulative ε cap of the table (blank: keep the current cap)")  # noqa: F821
dbutils.widgets.text("output_table", "", "Write the sample to this table / Delta path (blank: don't)")  # noqa: F821

# COMMAND ----------

# MAGIC %md
# MAGIC ## 1. Fit and log the synthesizer (spends ε, δ, charged to the table's ledger)

# COMMAND ----------

from spark_synth import Synthesizer, get_spark, load_schema
from spark_synth.track import budget, log_synthesizer, mlflow_run, release, sample_model, write_model_sample

spark = get_spark()
table = dbutils.widgets.get("table")  # noqa: F821


def read_table(name: str):
    """A table name (catalog.schema.table) or a Delta path (anything with a '/')."""
    return spark.read.format("delta").load(name) if "/" in name else spark.table(name)


cap = dbutils.widgets.get("budget_cap").strip()  # noqa: F821
if cap:  # the table's cap, set before spending (kept for later fits and releases)
    budget(table, budget_cap=float(cap), cap_delta=float(dbutils.widgets.get("delta")))  # noqa: F821

with mlflow_run("release") as run:
    synth = Synthesizer(
        dbutils.widgets.get("engine"),  # noqa: F821
        epsilon=float(dbutils.widgets.get("epsilon")),  # noqa: F821
        delta=float(dbutils.widgets.get("delta")),  # noqa: F821
    ).fit(read_table(table), load_schema(dbutils.widgets.get("schema")), dataset_id=table)  # noqa: F821  charged as it is made
    model_info = log_synthesizer(synth, source=table)
print(f"run {run.info.run_id}: ε={synth.privacy_report_.epsilon_spent:.4f}, model {model_info.model_uri}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## 2. Release: register the model version
# MAGIC A fit that is not in the table's ledger yet (e.g. fitted without `dataset_id`) is charged here,
# MAGIC and refused past the table's cap: then nothing is registered.

# COMMAND ----------

summary = release(run.info.run_id, dbutils.widgets.get("model_name"), source=table)  # noqa: F821
total = summary["cumulative"]
print(f"registered {summary['model_uri']}")
print(f"table {summary['source_table']}: cumulative ε={total['epsilon']:.4f} at δ={total['delta']:g} "
      f"(ρ={total['rho']:.4g}) over {total['releases']} release(s); cap ε={total['cap_epsilon']}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The table's ledger (every fit, release and schema pre-pass, in the ledger's MLflow experiment)

# COMMAND ----------

import pandas as pd

ledger = budget(table)
display(pd.DataFrame(ledger["releases"]))  # noqa: F821

# COMMAND ----------

# MAGIC %md
# MAGIC ## 3. Use the released model (no budget spent)

# COMMAND ----------

import mlflow

model = mlflow.pyfunc.load_model(summary["model_uri"])
print(model.metadata.metadata["spark_synth"]["privacy"]["sampling_note"])
display(model.predict({"rows": 10, "seed": 0}))  # noqa: F821

n_rows = int(dbutils.widgets.get("rows"))  # noqa: F821
rows = sample_model(summary["model_uri"], n_rows, seed=0)  # a Spark DataFrame, generated on the executors
target = dbutils.widgets.get("output_table").strip()  # noqa: F821
if target:  # refused if it exists; one Delta commit with the rows and their provenance
    written = write_model_sample(summary["model_uri"], n_rows, target, seed=0)
    print(f"wrote {read_table(target).count():,} rows to {written}")
    detail = spark.sql(f"DESCRIBE DETAIL {f'delta.`{target}`' if '/' in target else target}").first()
    print(detail["description"])
    display(pd.DataFrame(sorted((k, v) for k, v in detail["properties"].items() if k.startswith("spark_synth.")),  # noqa: F821
                         columns=["property", "value"]))
