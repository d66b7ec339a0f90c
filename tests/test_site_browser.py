"""The report in a real browser (headless Chromium; skipped where it is not installed): a
small report (tests/test_site_report.py's :func:`tiny_results`, no fitting) renders at
1400 and 800 pixels wide, its script inserts the claims' filters and sort buttons when
JavaScript runs, and the static page has none of them (progressive enhancement)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from test_site_report import tiny_results

from lkm.papers import CROSS_SPEC, PAPERS
from lkm.reproduction.site import build_site

CHROMIUM = shutil.which("chromium")
#: A ceiling for one Chromium run, not an expected duration (it takes seconds).
CEILING = 120

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: "
                                                          "`apt-get install -y chromium` to check the page in a browser")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="lkm-chromium-") as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--hide-scrollbars", *args],
            capture_output=True, text=True, timeout=CEILING)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tiny_results(tmp_path_factory.mktemp("browser") / "results")
    return build_site(root, PAPERS, CROSS_SPEC).page


@pytest.mark.parametrize("width", [1400, 800])
def test_the_page_renders_at_desktop_and_narrow_widths(page: Path, tmp_path: Path, width: int) -> None:
    from PIL import Image

    shot = tmp_path / f"report-{width}.png"
    proc = _chromium(f"--window-size={width},1000", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as im:
        assert im.size == (width, 1000)
        colors = im.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colors is None or len(colors) > 20, "a blank page"
        # the header band and the verdict colours are painted, not only white
        assert sum(n for n, c in (colors or []) if c != (255, 255, 255)) > 0.05 * width * 1000


def test_the_script_adds_filters_and_sort_buttons_to_a_page_complete_without_it(page: Path) -> None:
    static = page.read_text(encoding="utf-8")
    assert 'class="filters"' not in static and "<select" not in static and "<button" not in static
    proc = _chromium("--window-size=1400,1000", "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    dom = proc.stdout
    assert 'id="claims"' in dom, proc.stderr[-2000:]
    assert 'class="filters"' in dom and dom.count("<select") == 2
    assert 'name="paper"' in dom and 'name="verdict"' in dom and '<option value="lpl">' in dom
    assert "3 of 3 claims shown" in dom
    assert 'class="sort"' in dom  # the headers of sortable tables became buttons
