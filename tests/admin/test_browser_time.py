"""A real browser on a demo site with memories that expire soon: the overview's expiry panel
links to the list filtered to them, which shows when each happened and expires.

A site of its own (the demo data, then two short-lived notes), so the other browser tests keep
the demo as it is.
"""

import pytest

from tests.admin.test_browser import (  # noqa: F401  (fixtures, on this module's site)
    OVERVIEW,
    assert_no_overflow,
    browser,
    laptop,
    phone,
    serve_demo,
)

SHORT_LIVED = """
from ilab_memory import ILabMemory
mem = ILabMemory(embedding_runner=None)
mem.mem_save("alice", "Trip reminder", "Water the plants during the trip.", type="config", ttl=3 * 86400)
mem.mem_save("alice", "Moved to Berlin", "In March.", type="config", happened_at="2025-03-10T09:30:00+01:00")
"""


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    with serve_demo(tmp_path_factory.mktemp("expiring"), shell=SHORT_LIVED) as base:
        yield base


def test_the_expiry_panel_links_to_what_expires_soon(laptop):  # noqa: F811 -- the imported fixture
    page = laptop
    page.goto(OVERVIEW)
    panel = page.locator("#ilab-expiring")
    assert panel.locator(".ilab-big").inner_text() == "1"
    assert "No RETENTION setting" in page.locator("#ilab-retention").inner_text()
    panel.locator("a", has_text="config").click()
    page.wait_for_url("**expires=soon**")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1 and "Trip reminder" in rows.first.inner_text()
    assert rows.first.locator("td.field-state .ilab-expires time").count() == 1
    assert_no_overflow(page, "laptop, what expires soon")
    page.goto("/admin/ilab_memory/observation/?q=Berlin")
    assert page.locator("#result_list td.field-happened time").first.get_attribute("datetime").startswith(
        "2025-03-10T08:30")


def test_the_overview_and_list_with_times_fit_a_phone(phone):  # noqa: F811 -- the imported fixture
    for path in (OVERVIEW, "/admin/ilab_memory/observation/"):
        phone.goto(path)
        assert_no_overflow(phone, ("phone", path))
