"""The friendly errors of live sessions: each one's text is fit to show a student or teacher
as it is (``str(err)``), never a traceback."""
from __future__ import annotations


class LiveError(Exception):
    """A friendly reason, fit to show a student or teacher as it is (``str(err)``)."""

    def status(self) -> str:
        """The reason as a view that only reads the class shows it (a poll, a dashboard): no
        advice about an action the reader did not take."""
        return str(self)


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

    STATUS = "The class is reconnecting…"

    def __init__(self, message: str = f"{STATUS} Your last action was not saved; try it again "
                                      "in a moment."):
        super().__init__(message)

    def status(self) -> str:
        """>>> StoreDown().status()
        'The class is reconnecting…'"""
        return self.STATUS


class BadStoreURL(ValueError):
    """A store URL that cannot be opened; raised when a server starts, naming the URL."""
