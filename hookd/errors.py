"""hookd's errors: :class:`HookdError` and one subclass per API error ``code``, each with its
HTTP status and the CLI's exit status.

Plain Python (no msgspec): the CLI's client and its commands raise and match these without
loading the record shapes of :mod:`hookd.models`, which re-exports every name here.
"""

from __future__ import annotations


class HookdError(Exception):
    """Base error. ``code`` is machine-readable, ``status`` the HTTP status, ``exit_code``
    the CLI exit status."""

    code = "error"
    status = 500
    exit_code = 1
    #: the hook event id its raw bytes were stored under, when a hook was refused after
    #: they were committed (:class:`hookd.models.ErrorBody` ``stored``)
    stored: int | None = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class PayloadInvalid(HookdError):
    """A hook payload that is not one JSON object of the expected shape. ``session_id``:
    the payload's session id when it could still be read."""

    code = "payload_invalid"
    status = 422
    session_id: str | None = None


class PayloadTooLarge(HookdError):
    code = "payload_too_large"
    status = 413
    exit_code = 2


class NotFound(HookdError):
    code = "not_found"
    status = 404


class Conflict(HookdError):
    code = "conflict"
    status = 409
    exit_code = 2


class Unauthorized(HookdError):
    code = "unauthorized"
    status = 401


class BadRequest(HookdError):
    code = "bad_request"
    status = 400
    exit_code = 2


class ConfigError(HookdError):
    """Bad local configuration: a settings file that is not strict JSON, a bad builder id."""

    code = "config_error"
    status = 400
    exit_code = 2


class StorageUnavailable(HookdError):
    """The database cannot commit (disk full, locked past the wait, corrupt, I/O error,
    read-only, or its file deleted or replaced while the daemon runs): nothing was stored."""

    code = "storage_unavailable"
    status = 503


class HubUnavailable(HookdError):
    """The hub (hookd.hub: PostgreSQL) could not be reached, or refused the request (a wrong
    password, a role without the right): the CLI's ``hookd hub`` commands and ``--hub`` reads."""

    code = "hub_unavailable"
    status = 503


class DaemonNotRunning(HookdError):
    code = "daemon_not_running"
    status = 503
    exit_code = 3


class AlreadyServing(HookdError):
    code = "already_serving"
    status = 409
    exit_code = 4
