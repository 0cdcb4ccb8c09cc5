"""spark-submit entry point for `run`: arguments as the `spark-synth run` command line.

    spark-submit --packages io.delta:delta-spark_2.13:4.0.1 \
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
      jobs/run.py --input IN --schema SCHEMA --epsilon 1 --delta 1e-9 --rows N --output OUT
"""

import sys

from spark_synth.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
