"""spark-submit entry point for `evaluate`: arguments as the `spark-synth evaluate` command line.

NOT private: evaluation reads real rows (see spark_synth.evaluate).

    spark-submit --packages io.delta:delta-spark_2.13:4.0.1 \
      --driver-java-options "-Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties" \
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
      jobs/evaluate.py --real REAL --synthetic SYNTH --schema SCHEMA [--target COL] --out DIR
"""

import sys

from spark_synth.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
