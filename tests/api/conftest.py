"""Accounts and clients for the API tests: two plain users and an agent backend that may act for anyone."""

import json

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

API = "/api/memory/"


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice")


@pytest.fixture
def bob(db):
    return User.objects.create_user("bob")


@pytest.fixture
def agent(db):
    user = User.objects.create_user("agent-backend")
    user.user_permissions.add(Permission.objects.get(codename="act_for_any_user",
                                                     content_type__app_label="ilab_memory"))
    return User.objects.get(pk=user.pk)  # fresh instance: no stale permission cache


@pytest.fixture
def as_alice(alice):
    return client_for(alice)


@pytest.fixture
def as_bob(bob):
    return client_for(bob)


@pytest.fixture
def as_agent(agent):
    return client_for(agent)


def uid(user) -> str:
    """The user_id the default resolver gives ``user``."""
    return str(user.pk)


def read_json(response):
    """The JSON body of a response, streamed (export/) or not."""
    if response.streaming:
        return json.loads(b"".join(response.streaming_content))
    return response.json()
