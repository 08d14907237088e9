"""The ``ilab-memory://me`` resource: an agent learns whose memory its token reads, as the API's
``me/`` tells it, before its first tool call."""

import json

import pytest
from mcp.shared.exceptions import MCPError

from ilab_memory.mcp.server import ME_URI


def read_me(client) -> dict:
    result = client.portal.call(client.client.read_resource, ME_URI)
    (content,) = result.contents
    assert content.mime_type == "application/json"
    return json.loads(content.text)


def test_the_resource_is_listed(as_alice):
    listed = as_alice.portal.call(as_alice.client.list_resources)
    assert [str(resource.uri) for resource in listed.resources] == [ME_URI]


def test_a_plain_account_learns_its_user_id_and_that_it_may_not_act_for_others(as_alice, alice):
    assert read_me(as_alice) == {"user_id": alice.user_id, "scope": "", "may_act_for_any_user": False}


def test_a_service_account_may_act_for_any_user(as_agent, agent):
    assert read_me(as_agent) == {"user_id": agent.user_id, "scope": "", "may_act_for_any_user": True}


def test_the_user_id_it_tells_is_the_one_the_tools_act_for(as_alice):
    saved = as_alice.ok("mem_save", title="Mine", content="c")
    assert saved["observation"]["user_id"] == read_me(as_alice)["user_id"]


def test_an_unknown_resource_is_a_protocol_error(as_alice):
    with pytest.raises(MCPError, match="Unknown resource"):
        as_alice.portal.call(as_alice.client.read_resource, "ilab-memory://everyone")
