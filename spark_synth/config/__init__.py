"""Settings of a run, checked before anything runs (no Spark, no torch), one concept per module:

* :mod:`.values` — single values as a user writes them: whole numbers (``1e6``, ``1,000,000``),
  rows, seeds, the out-of-domain policy, an output kept apart from its source, ``KEY=VALUE`` pairs;
* :mod:`.run` — :class:`RunConfig`, everything one ``spark-synth run`` needs;
* :mod:`.jobs` — YAML job configs (``conf/runs/*.yaml`` over the engine defaults) for ``jobs/*.py``.

Engine options become the engine's typed config in one place,
:func:`spark_synth.engines.options.typed_config`; these modules pass it along.
"""

from .jobs import ENGINE_DEFAULT_KEYS, JOB_KEYS, load_engine_defaults, load_job_config, read_yaml_config
from .run import RunConfig
from .values import (
    MAX_ROWS,
    MAX_SEED,
    WHOLE_NUMBER_FORMS,
    check_output_apart,
    check_policy,
    check_rows,
    check_seed,
    parse_option_pairs,
    parse_whole_number,
)

__all__ = ["ENGINE_DEFAULT_KEYS", "JOB_KEYS", "MAX_ROWS", "MAX_SEED", "WHOLE_NUMBER_FORMS", "RunConfig",
           "check_output_apart", "check_policy", "check_rows", "check_seed", "load_engine_defaults", "load_job_config",
           "parse_option_pairs", "parse_whole_number", "read_yaml_config"]
