"""Fields of the commands' one-line JSON summaries taken from the privacy report and the
synthesizer: the neighbouring relation, uses not covered by DP, a DP-drafted schema's delta, column
null shares and warnings, and the model's sampling report.
"""

from __future__ import annotations

from .pipeline import Synthesizer


def _relation(report) -> dict:
    """The summary's statement of what the guarantee protects: one row, or one unit of K rows."""
    unit = report.privacy_unit
    return {"neighbouring_relation": report.neighbouring_relation,
            **({} if unit.is_row else {"privacy_unit": unit.column, "max_rows_per_unit": unit.max_rows})}


def _not_covered(report) -> dict:
    """The summary's note of uses of real rows outside the DP guarantee (opt-ins), when there are any."""
    return {"not_covered_by_dp": [entry.name for entry in report.not_covered]} if report.not_covered else {}


def _schema_delta(report) -> dict:
    """The summary's note of a DP-drafted schema: its δ_approx is added to the fit's δ."""
    if not report.delta_approx:
        return {}
    return {"delta_approx": report.delta_approx, "delta_total": report.delta + report.delta_approx,
            "schema_prepass_id": report.schema_prepass.id if report.schema_prepass is not None else None}


def _columns(synth: Synthesizer, warnings: list[str]) -> dict:
    """The summary's ``null_share`` (each nullable column's share of nulls in what the model writes;
    DP) and its ``warnings`` when there are any (:meth:`Synthesizer.check_columns`)."""
    return {"null_share": synth.column_shares_.null, **({"warnings": warnings} if warnings else {})}


def _sampling(synth: Synthesizer) -> dict:
    """The model's sampling report under its name (dgm: ``{"join": {acceptance, filled_rows}}``), when it made one."""
    report = synth.last_sampling_
    return {synth.model_.sampling_report_name: report} if report is not None else {}
