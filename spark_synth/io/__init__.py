"""I/O layer: the only code that knows storage formats (Delta, Parquet, CSV, catalog tables)."""

from .locations import Location, output_location, parse_table_name, quote_table_name
from .provenance import Provenance, SourceModel
from .readers import read_input
from .writers import check_output, write_output

__all__ = ["Location", "output_location", "parse_table_name", "quote_table_name", "Provenance", "SourceModel",
           "read_input",
           "check_output", "write_output"]
