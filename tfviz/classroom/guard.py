"""The friendly errors of live sessions: each one's text is fit to show a student or teacher
as it is (``str(err)``), never a traceback."""
from __future__ import annotations


class LiveError(Exception):
    """A friendly reason, fit to show a student or teacher as it is (``str(err)``)."""


class UnknownCode(LiveError):
    pass


class SessionGone(LiveError):
    """The code was live, and has expired or been ended."""


class WrongKey(LiveError):
    pass


class TooManyTries(LiveError):
    pass


class ServerFull(LiveError):
    pass


class SessionFull(LiveError):
    pass


class BadValue(LiveError):
    pass


class TimeUp(LiveError):
    """An answer to a question whose countdown had reached zero."""


class StoreDown(LiveError):
    """The store did not answer (down, unreachable, or locked for too long). Nothing the
    call would have written was written: a student is never told an answer was saved when it
    was not."""

    def __init__(self, message: str = "The class is reconnecting… Your last action was not "
                                      "saved; try it again in a moment."):
        super().__init__(message)


class BadStoreURL(ValueError):
    """A store URL that cannot be opened; raised when a server starts, naming the URL."""
