"""The evaluation report in a real browser (issue 46): headless Chromium, driven by Playwright.

One ``run --evaluate`` of the bundled sample writes the report; Chromium opens it at 1,280 px wide.
The browser is Debian's ``chromium`` (``scripts/install_browser.sh`` installs it; ``.ci/run`` calls
that script), or the executable ``SPARK_SYNTH_BROWSER`` names. Without one the test FAILS — it is
not optional — unless ``SPARK_SYNTH_SKIP_BROWSER=1`` says to skip it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil

import pandas as pd
import pytest

from spark_synth.cli import main

pytestmark = pytest.mark.spark

WIDTH = 1280
TABLE = "adult_sample"
#: Debian's /usr/bin/chromium is a shell wrapper; the browser itself is here.
DEBIAN_CHROMIUM = "/usr/lib/chromium/chromium"
HOW = ("run scripts/install_browser.sh (as root: it installs Debian's chromium), or set SPARK_SYNTH_BROWSER to a "
       "Chromium/Chrome executable; SPARK_SYNTH_SKIP_BROWSER=1 skips this test")


def browser_path() -> str | None:
    explicit = os.environ.get("SPARK_SYNTH_BROWSER")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    for name in ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("SPARK_SYNTH_SKIP_BROWSER") == "1":
        pytest.skip("SPARK_SYNTH_SKIP_BROWSER=1: the report's headless-browser test is skipped")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: it is in the 'dev' extra (scripts/bootstrap.sh installs it)")
    path = browser_path()
    if path is None:
        pytest.fail(f"no Chromium found for the report's browser test: {HOW}")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=path, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def evaluated(browser, spark, spark_home, adult_sample_paths, tmp_path_factory):
    """One fit and one evaluation of the bundled sample: the report, its metrics, the real and synthetic rows."""
    data, schema = adult_sample_paths
    output = tmp_path_factory.mktemp("report-browser") / "syn.parquet"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["run", "--input", data, "--schema", schema, "--engine", "independent", "--epsilon", "1",
                     "--delta", "1e-9", "--rows", "2000", "--output", str(output), "--seed", "1", "--evaluate",
                     "--no-mlflow"])
    assert code == 0, out.getvalue()
    evaluation = json.loads(out.getvalue().strip().splitlines()[-1])["evaluation"]
    metrics = json.loads(open(evaluation["metrics"], encoding="utf-8").read())
    return evaluation["report"], metrics, pd.read_csv(data), pd.read_parquet(output)


@pytest.fixture(scope="module")
def page(browser, evaluated):
    report = evaluated[0]
    opened = browser.new_page(viewport={"width": WIDTH, "height": 900})
    opened.goto(f"file://{report}")
    yield opened
    opened.close()


def test_title_names_the_table(page, evaluated):
    _, metrics, _, _ = evaluated
    assert metrics["table"] == TABLE
    assert TABLE in page.title()
    assert TABLE in page.inner_text("h1")


def test_no_horizontal_overflow(page):
    for width, unfold in ((WIDTH, False), (1000, False), (WIDTH, True)):
        if unfold:  # every folded part too: the folded categories, all measurements, every release
            page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        page.set_viewport_size({"width": width, "height": 900})
        sizes = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1], f"the page is {sizes[0]} px wide in a {sizes[1]} px window"
        too_wide = page.evaluate("""() => [...document.querySelectorAll('img, table, .card, .hist')]
            .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
            .map(e => e.tagName + ' ' + (e.id || e.className || e.alt || ''))""")
        assert too_wide == [], too_wide


def test_labels_are_not_cut(page, adult_sample_paths):
    from spark_synth.schema import load_schema

    schema = load_schema(adult_sample_paths[1])
    cut = page.evaluate("""() => [...document.querySelectorAll('.label, h1, h2, h3, th, td, .meta, summary')]
        .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
        .map(e => e.textContent.trim().slice(0, 60))""")
    assert cut == [], f"text cut by its box: {cut}"
    # every category of a column is in its card, in full (shown or folded under "more categories")
    for column in ("workclass", "marital-status", "native-country"):
        labels = page.eval_on_selector_all(f"#col-{column} .row .label", "els => els.map(e => e.textContent)")
        categories = {str(c) for c in schema[column].categories}
        assert categories <= set(labels), sorted(categories - set(labels))
    # the longest label shown in a card is laid out whole inside its card (wrapped, not clipped)
    fits = page.evaluate("""() => [...document.querySelectorAll('.card .row .label')]
        .filter(e => e.offsetParent !== null)
        .every(e => { const r = e.getBoundingClientRect(), c = e.closest('.card').getBoundingClientRect();
                      return r.left >= c.left && r.right <= c.right + 0.5 && e.scrollWidth <= e.clientWidth + 1; })""")
    assert fits


def test_null_rows_only_where_a_table_has_nulls(page, evaluated):
    _, _, real, synthetic = evaluated
    for column in real.columns:
        has_null_row = page.eval_on_selector_all(f"#col-{column} .row.null", "els => els.length") > 0
        synthetic_nulls = bool(synthetic[column].isna().any())
        if not real[column].isna().any() and not synthetic_nulls:
            assert not has_null_row, f"{column}: a null row although neither table has nulls"
        if synthetic_nulls:
            assert has_null_row, f"{column}: the synthetic table has nulls but the card shows none"


def test_verdict_leads_columns_follow_budget_is_last(page, evaluated):
    _, metrics, _, _ = evaluated
    order = page.eval_on_selector_all("main > section", "els => els.map(e => e.id)")
    assert order[:2] == ["verdict", "columns"] and order[-1] == "budget", order
    tops = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('main > section')]
        .map(e => [e.id, e.getBoundingClientRect().top]))""")
    assert tops["verdict"] < tops["columns"] < tops["budget"]
    verdict = page.inner_text("#verdict")
    for word in ("Fidelity", "Utility", "Privacy risk", "real rows", "independent reference", "hold-out"):
        assert word in verdict, word
    # the identification risk comes with its scale and the hold-out's own value
    assert "0 = no train row" in verdict and "1 = every one" in verdict
    assert f"{metrics['privacy_proxies']['identification_risk_holdout']:.3g}" in verdict
    # the budget is a compact grouped table, not one bar per release
    groups = page.eval_on_selector_all("#budget table.budget tbody tr", "els => els.length")
    assert 1 <= groups <= 12
    assert page.evaluate("() => document.querySelector('#budget table.budget').getBoundingClientRect().width") <= 1200
