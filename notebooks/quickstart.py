# Databricks notebook source
# MAGIC %md
# MAGIC # spark-synth quickstart
# MAGIC A Delta table in, a differentially private synthetic Delta table out.
# MAGIC Guarantee: (ε, δ)-DP under add/remove-one-row neighbours; sampling spends no extra budget.

# COMMAND ----------

dbutils.widgets.text("input_table", "", "Input table or Delta path")  # noqa: F821
dbutils.widgets.text("schema", "", "Schema file (.json / .yaml)")  # noqa: F821
dbutils.widgets.text("output", "", "Output table or Delta path")  # noqa: F821
dbutils.widgets.dropdown("engine", "independent", ["independent"], "Engine")  # noqa: F821
dbutils.widgets.text("epsilon", "1.0", "ε")  # noqa: F821
dbutils.widgets.text("delta", "1e-9", "δ")  # noqa: F821
dbutils.widgets.text("rows", "10000", "Rows")  # noqa: F821

# COMMAND ----------

from spark_synth import Synthesizer, get_spark, load_schema
from spark_synth.io import read_input

spark = get_spark()  # the notebook's session
source = dbutils.widgets.get("input_table")  # noqa: F821
schema = load_schema(dbutils.widgets.get("schema"))  # noqa: F821
synth = Synthesizer(
    dbutils.widgets.get("engine"),  # noqa: F821
    epsilon=float(dbutils.widgets.get("epsilon")),  # noqa: F821
    delta=float(dbutils.widgets.get("delta")),  # noqa: F821
).fit(read_input(spark, source), schema)

# COMMAND ----------

# MAGIC %md
# MAGIC ## What was spent

# COMMAND ----------

report = synth.privacy_report_
print(f"ε spent {report['epsilon_spent']:.4f} of {report['epsilon_requested']} at δ={report['delta']}")
for release in report["releases"]:
    print(f"  {release['query']}: σ={release['sigma']:.2f}, ρ={release['rho']:.3g}")

# COMMAND ----------

synthetic = synth.sample(int(dbutils.widgets.get("rows")), seed=0)  # noqa: F821
target = dbutils.widgets.get("output")  # noqa: F821
if "/" in target:
    synthetic.write.format("delta").mode("errorifexists").save(target)
else:
    synthetic.write.format("delta").mode("errorifexists").saveAsTable(target)
display(synthetic.limit(20))  # noqa: F821
