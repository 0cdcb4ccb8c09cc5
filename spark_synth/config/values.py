"""Single settings parsed and checked (no Spark, no torch): whole numbers as a user writes them,
rows, seeds, the out-of-domain policy, an output kept apart from its source, ``KEY=VALUE`` pairs."""

from __future__ import annotations

import os
import re

import yaml

from ..errors import ParameterError
from ..schema.encoding import OutOfDomainPolicy


#: Public maximum of synthetic rows one ``run``/``sample`` writes (``--rows``): 10^11. It keeps the
#: generated partition count (rows / 250,000) and every row index well inside Spark's limits; write
#: more as several outputs with different seeds.
MAX_ROWS = 10**11
#: Largest sampling seed (``--seed``): a signed 64-bit integer, as Spark and the MLflow params store it.
MAX_SEED = 2**63 - 1


_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+")
#: How a whole number may be written on the command line (``--rows``, ``--seed``).
WHOLE_NUMBER_FORMS = "e.g. 1000000, 1e6, 1_000_000 or 1,000,000"


def parse_whole_number(text: str) -> int:
    """``1000000``, ``1e6``, ``1_000_000``, ``1,000,000`` (and ``1.0e6``) → 1000000; ValueError,
    naming the accepted forms, for anything that is not a whole number (``1.5``, ``1e-3``, ``ten``)."""
    from decimal import Decimal, InvalidOperation

    raw = str(text).strip()
    digits = raw.replace(",", "") if _GROUPED.fullmatch(raw) else raw
    try:
        return int(digits)  # also takes Python's 1_000_000
    except ValueError:
        pass
    try:
        number = Decimal(digits)  # 1e6, 1.5e3, 1_000.0
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise ValueError(f"a whole number ({WHOLE_NUMBER_FORMS}); got {raw!r}")
    if number != number.to_integral_value():
        raise ValueError(f"a whole number ({WHOLE_NUMBER_FORMS}); got {raw!r}, which is not whole")
    if number.adjusted() > 40:  # far past every limit: no need to build the integer
        raise ValueError(f"a whole number of at most 40 digits; got {raw!r}")
    return int(number)


def check_rows(rows: object) -> None:
    if isinstance(rows, bool) or not isinstance(rows, int) or not 0 < rows <= MAX_ROWS:
        raise ParameterError("rows", f"a whole number > 0 and at most the public maximum {MAX_ROWS:,} (--rows; "
                                     f"write more as several outputs with different seeds)", rows)


def check_seed(seed: object) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise ParameterError("seed", f"a whole number from 0 to 2^63 - 1 = {MAX_SEED} (--seed; or omitted for a "
                                     f"random seed)", seed)


def check_policy(policy: object) -> OutOfDomainPolicy:
    try:
        return OutOfDomainPolicy(policy)
    except ValueError:
        raise ParameterError("out_of_domain", f"one of {[p.value for p in OutOfDomainPolicy]}", policy) from None


def check_output_apart(source: str, output: str, *, output_flag: str = "--output", source_name: str = "input") -> None:
    """Refuse an output that is the input, inside it, or holds it: writing (or ``--overwrite``) there
    would replace the table being read, or mix synthetic files into it.

    ``fit`` checks its ``--model`` directory against ``--input`` (``output_flag="--model"``) and
    ``sample`` its ``--output`` against ``--model`` (``source_name="model"``); both are paths, never
    table names. A source given as a bare name (``data``) that exists as a local path is that path,
    as :func:`~spark_synth.io.read_input` reads it.
    """
    from ..errors import OutputError
    from ..io.locations import is_table_name, quote_table_name

    def normal(target: str, is_path: bool, is_source: bool) -> str:
        target = target.strip().rstrip("/") or "/"
        if not is_path and is_table_name(target) and not (is_source and os.path.exists(target)):
            return "table:" + quote_table_name(target).lower()  # db.t and `db`.`t` are one table
        if "://" in target or target.startswith("dbfs:"):
            return target
        return os.path.realpath(os.path.expanduser(target))

    if not isinstance(source, str) or not isinstance(output, str):
        return
    what = "output" if output_flag == "--output" else output_flag
    article = "an" if output_flag.lstrip("-")[:1] in "aeiou" else "a"
    a = normal(source, is_path=source_name != "input", is_source=True)
    b = normal(output, is_path=output_flag != "--output", is_source=False)
    if a == b:
        reads = "the table it reads" if source_name == "input" else f"the {source_name} it reads"
        raise OutputError(f"{what} '{output}' is the {source_name}; choose another {output_flag} (spark-synth never "
                          f"writes over {reads})")
    if not a.startswith("table:") and not b.startswith("table:"):
        if b.startswith(a.rstrip("/") + "/"):
            why = ("its files would be read as input rows next time" if source_name == "input"
                   else f"its files would be mixed into the {source_name}")
            raise OutputError(f"{what} '{output}' is inside the {source_name} '{source}'; choose {article} "
                              f"{output_flag} outside it ({why})")
        if a.startswith(b.rstrip("/") + "/"):
            why = (f"writing there would replace the {source_name}" if output_flag == "--output"
                   else f"its files would be mixed with the {source_name}'s")
            raise OutputError(f"{what} '{output}' holds the {source_name} '{source}'; choose another {output_flag} "
                              f"({why})")


def parse_option_pairs(pairs, name: str = "--engine-option") -> dict:
    """``KEY=VALUE`` strings (CLI and jobs alike) → a dict, values parsed as YAML (numbers, lists, …)."""
    options = {}
    for pair in pairs or []:
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise ParameterError(name, "KEY=VALUE (e.g. components=64)", pair)
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ParameterError(f"{name} {key.strip()}", "a value written as YAML (number, word, list)", value) from None
    return options
