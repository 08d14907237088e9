"""How an HTTP request becomes a user_id (the default ``USER_ID_RESOLVER``)."""


def user_id_from_request(request) -> str:
    """The authenticated user's primary key, as a string."""
    return str(request.user.pk)
