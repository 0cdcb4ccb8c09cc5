# Databricks notebook source
# MAGIC %md
# MAGIC # spark-synth quickstart: a Delta table in, a DP synthetic Delta table out
# MAGIC
# MAGIC Fits a differentially private synthesizer on a table, then writes any number of synthetic rows
# MAGIC to a Delta table. **Guarantee:** everything derived from the fit is (ε, δ)-DP under the
# MAGIC *add/remove-one-row* neighbouring relation (ρ-zCDP inside); sampling is post-processing and
# MAGIC spends nothing more. The schema (categories, bounds) is public input you supply.
# MAGIC
# MAGIC **Before you start:** install spark-synth on the cluster (its wheel as a cluster library, or
# MAGIC `%pip install` it), and upload the table's schema file (JSON/YAML) to a volume or workspace path.
# MAGIC Fill in the widgets above, then *Run all*. To register the result in MLflow with a budget
# MAGIC ledger, use the `release` notebook.

# COMMAND ----------

from spark_synth.engines import ENGINES

dbutils.widgets.text("table", "", "Source table (catalog.schema.table) or Delta path")  # noqa: F821
dbutils.widgets.text("schema", "", "Schema file (.json / .yaml)")  # noqa: F821
dbutils.widgets.text("output_table", "", "Synthetic table or Delta path (must not exist)")  # noqa: F821
dbutils.widgets.dropdown("engine", "independent", sorted(ENGINES), "Engine")  # noqa: F821
dbutils.widgets.text("epsilon", "1.0", "ε (epsilon)")  # noqa: F821
dbutils.widgets.text("delta", "1e-9", "δ (delta)")  # noqa: F821
dbutils.widgets.text("rows", "10000", "Synthetic rows")  # noqa: F821
dbutils.widgets.text("seed", "0", "Sampling seed")  # noqa: F821
dbutils.widgets.text("report_dir", "/tmp/spark-synth-quickstart-report", "Evaluation report folder")  # noqa: F821

# COMMAND ----------

# MAGIC %md
# MAGIC ## 1. Read the table and its public schema
# MAGIC Only the fit below reads the rows (once, with calibrated noise).

# COMMAND ----------

from spark_synth import Synthesizer, get_spark, load_schema
from spark_synth.evaluate import evaluate, train_holdout_split

spark = get_spark()  # the notebook's own session


def read_table(name: str):
    """A table name (catalog.schema.table) or a Delta path (anything with a '/')."""
    return spark.read.format("delta").load(name) if "/" in name else spark.table(name)


source = read_table(dbutils.widgets.get("table"))  # noqa: F821
schema = load_schema(dbutils.widgets.get("schema"))  # noqa: F821
print(f"{len(schema)} columns: {', '.join(schema.names)}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## 2. Fit on the train part: spends (ε, δ) once, charged to the table's budget ledger
# MAGIC A deterministic 80/20 split keeps a hold-out part the synthesizer never sees, so the evaluation
# MAGIC below can score models trained on synthetic rows on real rows fairly. `dataset_id` charges the
# MAGIC spend to the table's ledger in MLflow (the workspace's on Databricks) before a row is read —
# MAGIC refused past the table's cap; `spark-synth budget --source-table TABLE` shows the total.

# COMMAND ----------

train, holdout = train_holdout_split(source, holdout_fraction=0.2, seed=0)
synth = Synthesizer(
    dbutils.widgets.get("engine"),  # noqa: F821
    epsilon=float(dbutils.widgets.get("epsilon")),  # noqa: F821
    delta=float(dbutils.widgets.get("delta")),  # noqa: F821
).fit(train, schema, dataset_id=dbutils.widgets.get("table"))  # noqa: F821

report = synth.privacy_report_
print(f"ε spent {report.epsilon_spent:.4f} of {report.epsilon_requested} at δ={report.delta:g} "
      f"(ρ={report.rho_spent:.4g}, {report.neighbouring_relation})")
print(f"charged to {synth.ledger_['ledger_experiment']}: the table's cumulative ε={synth.ledger_['cumulative_epsilon']:.4f}")
for measurement in report.entries:
    print(f"  {measurement.query}: σ={measurement.sigma:.3g}, ρ={measurement.rho:.3g}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## 3. Sample and write a Delta table (spends nothing)

# COMMAND ----------

target = dbutils.widgets.get("output_table")  # noqa: F821
# all or nothing; a Delta output records this fit's epsilon, delta, rho, engine and fit id as table properties
synth.write(int(dbutils.widgets.get("rows")), target, seed=int(dbutils.widgets.get("seed")))  # noqa: F821
written = read_table(target)
print(f"wrote {written.count():,} synthetic rows to {target}")
display(written.limit(20))  # noqa: F821

# COMMAND ----------

# MAGIC %md
# MAGIC ## 4. Evaluation report — NOT private (it reads the real rows)
# MAGIC Fidelity against the train part, utility (TSTR vs TRTR) on the hold-out part, privacy proxies,
# MAGIC and where the budget went. Writes `metrics.json` and a self-contained `report.html`.

# COMMAND ----------

evaluation = evaluate(train, written, schema, holdout=holdout, privacy_report=synth.privacy_report_)
paths = evaluation.write(dbutils.widgets.get("report_dir"), overwrite=True)  # noqa: F821
print(f"metrics: {paths['metrics']}\nreport:  {paths['report']}")
displayHTML(open(paths["report"], encoding="utf-8").read())  # noqa: F821
