"""``me/``: who the caller is to the memory API, so a client need not know its user id.

A plain account's token reads its own memory only, under the user id ``USER_ID_RESOLVER``
gives it (the account's primary key by default), which nothing else tells the caller.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ..access import NOT_NAMED, acting_scope, acting_user_id
from ..adapter import get_adapter
from .schema import error_responses
from .views import MemoryAPIMixin


class IdentitySerializer(serializers.Serializer):
    user_id = serializers.CharField(help_text="The user id this token reads and writes when a call names none.")
    scope = serializers.CharField(
        allow_null=True,
        help_text="The scope the account is bound to (it acts there only), or null: it may name any scope.",
    )
    may_act_for_any_user = serializers.BooleanField(
        help_text="Whether the account may name another user_id (`ilab_memory.act_for_any_user`).",
    )


class MeView(MemoryAPIMixin, APIView):
    """The caller's user id, its bound scope and whether it may act for any user."""

    @extend_schema(
        summary=_("Who the caller is: its user id, its scope and whether it may act for any user"),
        responses={200: IdentitySerializer, **error_responses(401, 429)},
    )
    def get(self, request):
        return Response({
            "user_id": acting_user_id(request, NOT_NAMED),
            "scope": acting_scope(request, NOT_NAMED, default=None),
            "may_act_for_any_user": get_adapter().may_act_for_any_user(request.user),
        })
