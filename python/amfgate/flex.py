"""Flex messages as Python classes, both ways (docs/python.md, "Flex messages").

    >>> import amfgate, amfgate.flex
    >>> m = amfgate.flex.AsyncMessage(body={"text": "hi"}, destination="chat")
    >>> amfgate.loads(amfgate.dumps(m)) == m
    True

Importing this module registers its classes for BlazeDS's aliases
(``flex.messaging.messages.AsyncMessage`` and the rest): the messages of a Flex channel then
decode as them, small ones (DSK, DSA, DSC) included, and they encode in full form.
``unregister()`` forgets them, and the messages decode as ``TypedObject`` again. Members a
message did not carry read as their defaults.
"""

import dataclasses
import time
import uuid

from . import register_class, unregister_class

__all__ = ["AbstractMessage", "AsyncMessage", "AcknowledgeMessage", "CommandMessage",
           "ErrorMessage", "RemotingMessage", "new_id", "now_ms", "register", "unregister"]


def new_id():
    """A message or client id as the Flex SDK makes them: an upper-case UUID."""
    return str(uuid.uuid4()).upper()


def now_ms():
    """A message's timestamp: milliseconds since the epoch."""
    return float(time.time_ns() // 1_000_000)


@dataclasses.dataclass
class AbstractMessage:
    body: object = None
    clientId: object = None
    destination: str = ""
    headers: dict = dataclasses.field(default_factory=dict)
    messageId: str = dataclasses.field(default_factory=new_id)
    timestamp: float = 0.0
    timeToLive: float = 0.0

    def __getattr__(self, name):
        # Only for what normal lookup did not find: a member the decoded message lacked.
        field = type(self).__dataclass_fields__.get(name)
        if field is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                 else field.default)
        setattr(self, name, value)
        return value


@dataclasses.dataclass
class AsyncMessage(AbstractMessage):
    correlationId: str = ""


@dataclasses.dataclass
class AcknowledgeMessage(AsyncMessage):
    pass


@dataclasses.dataclass
class CommandMessage(AsyncMessage):
    """``operation`` is one of the constants below (docs/wire.md, "Commands")."""
    operation: int = 1000

    SUBSCRIBE_OPERATION = 0
    UNSUBSCRIBE_OPERATION = 1
    POLL_OPERATION = 2
    CLIENT_SYNC_OPERATION = 4
    CLIENT_PING_OPERATION = 5
    CLUSTER_REQUEST_OPERATION = 7
    LOGIN_OPERATION = 8
    LOGOUT_OPERATION = 9
    SUBSCRIPTION_INVALIDATE_OPERATION = 10
    MULTI_SUBSCRIBE_OPERATION = 11
    DISCONNECT_OPERATION = 12
    TRIGGER_CONNECT_OPERATION = 13
    UNKNOWN_OPERATION = 1000


@dataclasses.dataclass
class ErrorMessage(AcknowledgeMessage):
    faultCode: str = ""
    faultString: str = ""
    faultDetail: str = ""
    rootCause: object = None
    extendedData: object = None


@dataclasses.dataclass
class RemotingMessage(AbstractMessage):
    """A RemoteObject call: ``operation`` is the method, ``body`` its arguments."""
    operation: str = ""
    source: object = None


_CLASSES = (AsyncMessage, AcknowledgeMessage, CommandMessage, ErrorMessage, RemotingMessage)


def register():
    """Registers the classes (done on import; again after ``unregister``)."""
    for cls in _CLASSES:
        register_class(cls, "flex.messaging.messages." + cls.__name__)


def unregister():
    """Forgets the classes: Flex messages decode as ``TypedObject`` again."""
    for cls in _CLASSES:
        unregister_class("flex.messaging.messages." + cls.__name__)


register()
