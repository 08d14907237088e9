"""Over MCP as over the API: a superuser's token acts for another user only when the account
was granted ``ilab_memory.act_for_any_user`` on purpose (holding every permission implicitly is
not the grant), so an agent given an operator's token by mistake cannot read every memory."""

from django.contrib.auth.models import Permission, User

from tests.mcp.conftest import mcp_client


def superuser_token(username: str, *, granted: bool) -> str:
    from rest_framework.authtoken.models import Token

    user = User.objects.create_superuser(username, password="x")
    if granted:
        user.user_permissions.add(
            Permission.objects.get(codename="act_for_any_user", content_type__app_label="ilab_memory")
        )
    return Token.objects.create(user=user).key


def test_a_superusers_token_needs_the_grant_to_act_for_another_user(mcp_url, alice, as_alice):
    as_alice.ok("mem_save", title="Alice's note", content="Only hers.")
    try:
        with mcp_client(mcp_url, superuser_token("mcp-root", granted=False)) as root:
            body = root.error("mem_search", query="note", user_id=alice.user_id)
            assert body["code"] == "act_for_any_user_required"
        with mcp_client(mcp_url, superuser_token("mcp-root-service", granted=True)) as service:
            found = service.ok("mem_search", query="note", user_id=alice.user_id)
            assert [r["title"] for r in found["results"]] == ["Alice's note"]
    finally:
        User.objects.filter(username__in=["mcp-root", "mcp-root-service"]).delete()
