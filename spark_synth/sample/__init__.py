"""Sample layer: distributed generation and decoding on the executors."""

from .generate import generate_rows

__all__ = ["generate_rows"]
