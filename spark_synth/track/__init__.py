"""Tracking layer: MLflow runs for fits and releases."""

from .mlflow_tracking import default_tracking_uri, log_fit, log_output, tracked_run

__all__ = ["default_tracking_uri", "log_fit", "log_output", "tracked_run"]
