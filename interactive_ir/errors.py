"""Specific exceptions raised by the engine. The UI and CLI turn them into messages.

Every message says what is wrong and, where possible, what to do about it.
"""


class IIRError(Exception):
    """Base class of every error the engine raises on purpose."""


class BadInputError(IIRError, ValueError):
    """The user gave something unusable: an empty query, a file that is not an image, ..."""


class BackendError(IIRError):
    """A model backend could not be built or failed while running."""


class BackendUnavailable(BackendError):
    """A backend's optional dependency or weights are missing (the message says how to get them)."""


class UnknownSpecError(BackendError, ValueError):
    """A backend spec string names no registered backend."""


class IndexLoadError(IIRError):
    """An index folder is missing, incomplete, corrupt, or was built by another embedder."""


class IndexBuildError(IIRError):
    """An index could not be built (no images, bad captions file, ...)."""


class CaptionsFormatError(IndexBuildError, BadInputError):
    """A captions file could not be parsed."""


class SessionError(IIRError, ValueError):
    """An action does not fit the session's state (marking an image never shown, ...)."""


class Cancelled(IIRError):
    """Model work stopped because nobody wants its result any more (a newer action of the same tab
    superseded it). Not a failure: it is never shown to the user and never counts against a backend."""


class HubError(IIRError):
    """The Hugging Face Hub refused a request (not found, private, gated) or could not be reached."""


class HubUnreachableError(HubError):
    """The Hub could not be reached and nothing usable is in the local cache (the app serves what it can)."""


class QueryError(BadInputError):
    """A search query that cannot be read or run as written (a bad token, an unknown field, a filter on
    facts the index does not hold); the message is one line naming the token."""
