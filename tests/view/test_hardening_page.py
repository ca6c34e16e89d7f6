"""The page's list and address: filters on values that are not text, the fragment's odd
values, a record's own ``id`` field, numbers that are not finite, the simulated / real badge
when the records do not say, and the title of a ``monitor collect`` run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.view import Section, Units, render_view
from byzllm.view._games import generic_sections
from byzllm.view._html import page, page_files

from ._support import dump_dom

RUNNER = CliRunner()


def _units_data(text: str) -> dict[str, Any]:
    raw = re.search(r"<script type='application/json' id='units-data'>(.*?)</script>", text, re.S)
    assert raw

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is no JSON")

    data: dict[str, Any] = json.loads(raw.group(1), parse_constant=refuse)
    return data


def _write(tmp_path: Path, units: Units) -> Path:
    html_text, files = page_files("p", "simulated", True, [Section("Units", units=units)], "f")
    (tmp_path / "p.html").write_text(html_text, encoding="utf-8")
    (tmp_path / "f").mkdir(exist_ok=True)
    for name, body in files.items():
        (tmp_path / "f" / name).write_text(body, encoding="utf-8")
    return tmp_path / "p.html"


def _units(n: int = 3) -> Units:
    values: list[Any] = [None, True, False, 1.5, "a&b=c"]
    rows = [
        {"id": f"u{k}", "k": k, "flag": values[k % len(values)], "name": f"n{k}"} for k in range(n)
    ]
    details = {f"u{k}": f"<p>trace {k}</p>" for k in range(n)}
    return Units(columns=["k", "flag", "name"], filters=["flag"], rows=rows, details=details)


def test_filters_on_none_and_booleans_keep_their_rows(chromium: str, tmp_path: Path) -> None:
    """The options said ``None`` and ``True``, the rows ``null`` and ``true``: choosing one
    emptied the list."""
    path = _write(tmp_path, _units(5))
    options = re.findall(r'<option value="([^"]*)"', path.read_text(encoding="utf-8"))
    assert options == ["", "-", "1.5", "False", "True", "a&amp;b=c"]
    for value in ("-", "True", "False", "1.5"):
        dom, _ = dump_dom(chromium, path.resolve().as_uri() + f"#f.flag={value}")
        assert 'data-ready="1"' in dom and "1 of 5 shown" in dom, value


def test_filters_on_values_with_cr_or_nul_keep_their_rows(chromium: str, tmp_path: Path) -> None:
    """The HTML parser reads an option's CR as LF and its NUL as U+FFFD, while the rows'
    JSON kept both: choosing such a value (an edited store's attack "a\\r\\nb") showed 0 rows."""
    rows = [
        {"id": f"u{k}", "k": k, "flag": ["a\r\nb", "c\rd", "n\0ul", "ok"][k % 4]} for k in range(8)
    ]
    units = Units(columns=["k", "flag"], filters=["flag"], rows=rows)
    path = _write(tmp_path, units)
    for value in ("a%0Ab", "c%0Ad", "n%EF%BF%BDul", "ok"):
        dom, _ = dump_dom(chromium, path.resolve().as_uri() + f"#f.flag={value}")
        assert 'data-ready="1"' in dom and "2 of 8 shown" in dom, value


def test_the_fragment_decodes_each_value_and_survives_odd_ones(
    chromium: str, tmp_path: Path
) -> None:
    """The fragment was decoded whole before it was split (an encoded '&' or '=' in a value
    broke it), a bad escape stopped the page's script, a quote in a unit id broke the
    selector, and ``page=N`` clicked "next" N times (a huge N hung the page)."""
    path = _write(tmp_path, _units(250))
    uri = path.resolve().as_uri()
    dom, _ = dump_dom(chromium, uri + "#f.flag=a%26b%3Dc")
    assert 'data-ready="1"' in dom and "50 of 250 shown" in dom
    for odd in ("#open=%E0%A4%A", '#open=x"]', "#f.fl%22ag=1", "#glossary", "#page=999999999"):
        dom, _ = dump_dom(chromium, uri + odd)
        assert 'data-ready="1"' in dom and 'id="errors"></div>' in dom, odd
    dom, _ = dump_dom(chromium, uri + "#page=2")
    assert "page 2 of 3" in dom


def test_numbers_that_are_not_finite_leave_the_data_readable() -> None:
    units = Units(columns=["x"], filters=["x"], rows=[{"id": "u0", "x": float("nan")}])
    text = page("p", "simulated", True, [Section("Units", units=units)])
    assert _units_data(text)["u0"]["rows"][0]["x"] == "nan"


def test_a_records_own_id_leaves_its_detail_reachable() -> None:
    """A record with an ``id`` field overwrote its row's key, so its detail was never found
    (and two records with the same id were one)."""
    records = [{"id": "same", "v": 1}, {"id": "same", "v": 2}]
    sections, _ = generic_sections({"thing": records}, max_details=10)
    units = sections[1].units
    assert units is not None
    assert [r["id"] for r in units.rows] == ["thing/0", "thing/1"]
    assert units.columns == ["record id", "v"]
    assert [r["record id"] for r in units.rows] == ["same", "same"]
    assert set(units.details) == {"thing/0", "thing/1"}
    data = _units_data(page("p", "x", None, sections))
    assert data["u1"]["rows"][1] == {"id": "thing/1", "record id": "same", "v": "2"}


def test_records_that_do_not_say_get_a_neutral_badge() -> None:
    text = page("p", "records that do not say whether they are simulated", None, [])
    assert "class='label unknown'" in text and "label real" not in text


def test_a_monitor_collect_run_is_not_titled_an_evaluation(tmp_path: Path) -> None:
    run = tmp_path / "collect"
    args = ["monitor", "collect", "--set", "n_train=3", "--set", "n_validation=2", "-o", str(run)]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = render_view(run)
    title = re.search(r"<h1>(.*?)</h1>", text)
    assert title and "monitor training games (5 games, 5 plays)" in title.group(1)
    assert "evaluation" not in title.group(1) and "per condition (test games" not in text
    summary = text[text.index('id="summary"') : text.index('id="health"')]
    assert ">train<" in summary and ">validation<" in summary


def test_a_page_name_that_is_not_utf8_gets_its_folder_and_opens(
    chromium: str, tmp_path: Path
) -> None:
    """``byzllm view RUN -o`` a name with a byte that is not UTF-8 (b"p\\xff.html", as a
    file from an old archive has) stopped with a UnicodeEncodeError traceback when the page
    named its folder."""
    import os

    from byzllm.runs import Store
    from byzllm.view import write_view

    run = tmp_path / "demo"
    result = RUNNER.invoke(app, ["demo", "--questions", "1", "-o", str(run)])
    assert result.exit_code == 0, result.output
    with Store.open(run) as store:
        unit = store.units("done")[-1]["id"]
    page = write_view(run, tmp_path / os.fsdecode(b"p\xff.html"))
    assert (tmp_path / os.fsdecode(b"p\xff_files")).is_dir()
    assert '"dir":"p%FF_files"' in page.read_text(encoding="utf-8")
    dom, errors = dump_dom(chromium, page.resolve().as_uri() + f"#open={unit}")
    assert 'data-ready="1"' in dom and '<table class="rounds">' in dom and not errors
