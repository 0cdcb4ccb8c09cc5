"""I/O layer: the only code that knows storage formats (Delta, Parquet, CSV, catalog tables)."""

from .locations import Location, output_location
from .readers import read_input
from .writers import check_output, write_output

__all__ = ["Location", "output_location", "read_input", "check_output", "write_output"]
