"""A real browser on a demo site whose user has two agents' scopes: the console's scope column,
filter, the user's scopes, search read as one agent, and the erasure of one scope.

A site of its own (the demo data, then Alice's support bot and coding assistant), so the other
browser tests keep the demo as it is.
"""

import pytest

from tests.admin.test_browser import OBSERVATIONS, assert_no_overflow, browser, laptop, phone, serve_demo  # noqa: F401  (fixtures, on this module's site)

AGENTS = """
from ilab_memory import ILabMemory
mem = ILabMemory(embedding_runner=None)
mem.mem_save("alice", "Refund for order 881 sent", "The refund went out on Monday.", scope="support")
mem.mem_save("alice", "Refund export on branch refund-fix", "Ali fixes the refund export there.", scope="coding")
mem.mem_save("alice", "Refund policy is 30 days", "Every agent should know it.")
mem.mem_save("alice", "Dentist on Friday at 10", "Booked by the scheduling agent.", scope="scheduling")
"""
USER_PAGE = "/admin/ilab_memory/session/user/alice/"


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    """This module's site: the demo, then Alice's agents (the imported fixtures serve it)."""
    with serve_demo(tmp_path_factory.mktemp("scoped"), shell=AGENTS) as base:
        yield base


def test_the_scope_column_and_filter(laptop):  # noqa: F811 -- the imported fixture
    page = laptop
    page.goto(OBSERVATIONS + "?q=refund")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 3
    assert sorted(page.locator("#result_list tbody .ilab-scope").all_inner_texts()) == ["(shared)", "coding", "support"]
    # Any slug is a scope, so the filter takes one in its box (choices are only those it can know).
    box = page.locator("#changelist-filter").get_by_label("Exact scope")
    box.fill("support")
    box.press("Enter")
    page.wait_for_url("**scope=support**")
    assert page.locator("#result_list tbody tr").count() == 1
    assert page.locator("#result_list tbody .ilab-scope").all_inner_texts() == ["support"]
    assert_no_overflow(page, "laptop, filtered by scope")


def test_the_lists_with_scopes_fit_a_phone(phone):  # noqa: F811 -- the imported fixture
    for path in (OBSERVATIONS + "?q=refund", USER_PAGE):
        phone.goto(path)
        assert_no_overflow(phone, ("phone", path))


def test_the_user_page_lists_the_scopes_and_searches_as_one_agent(laptop):  # noqa: F811 -- the imported fixture
    page = laptop
    page.goto(USER_PAGE)
    scopes = page.locator("#ilab-user-scopes tbody tr")
    listed = [s.strip() for s in scopes.locator("td:first-child").all_inner_texts()]
    assert {"(shared)", "coding", "support"} <= set(listed) and listed[0] == "(shared)"
    page.fill("#ilab-q", "refund")
    page.select_option("#ilab-read-as", "support")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**scope=support**")
    found = page.locator("#ilab-user-search tbody tr").all_inner_texts()
    assert any("Refund for order 881 sent" in row for row in found)
    assert any("Refund policy is 30 days" in row for row in found)  # the shared space, read by every agent
    assert not any("branch refund-fix" in row for row in found)  # the coding assistant's


def test_an_operator_erases_one_scope_and_keeps_the_others(laptop):  # noqa: F811 -- the imported fixture
    page = laptop
    page.goto(USER_PAGE)
    scheduling = page.locator("#ilab-user-scopes tbody tr", has_text="scheduling")
    scheduling.get_by_role("link", name="Erase this scope…").click()
    page.get_by_role("button", name="Yes, erase these scopes").click()
    page.wait_for_selector(".messagelist")
    page.goto(USER_PAGE)
    listed = [s.strip() for s in page.locator("#ilab-user-scopes tbody td:first-child").all_inner_texts()]
    assert "scheduling" not in listed and {"(shared)", "coding", "support"} <= set(listed)
    page.goto(OBSERVATIONS + "?q=dentist")
    assert page.locator("#result_list tbody tr").count() == 0
