"""amfgate's AMF0/AMF3 codec for Python.

    >>> import amfgate
    >>> amfgate.loads(amfgate.dumps({"a": [1, 2.5, "three"]}))
    {'a': [1, 2.5, 'three']}

See docs/python.md for the object model, limits and the Py3AMF drop-in.
"""

import dataclasses
from typing import NamedTuple

from . import _amfgate
from ._types import (ArrayCollection, ArrayList, DecodeError, Dictionary, External, MixedArray,
                     ObjectProxy, TypedObject, Undefined, XML, XMLDocument, undefined)

__all__ = ["loads", "dumps", "dumps_into", "loads_all", "dumps_all", "decode_packet", "encode_packet", "Packet", "Header",
           "Body", "register_class", "unregister_class", "DecodeError", "undefined",
           "Undefined", "XML", "XMLDocument", "TypedObject", "MixedArray", "Dictionary", "ArrayCollection",
           "ArrayList", "ObjectProxy", "External"]

loads = _amfgate.loads
dumps = _amfgate.dumps
dumps_into = _amfgate.dumps_into
loads_all = _amfgate.loads_all
dumps_all = _amfgate.dumps_all


class Header(NamedTuple):
    """A packet header: ``Credentials``, ``DescribeService``, ..."""
    name: str
    value: object
    must_understand: bool = False


class Body(NamedTuple):
    """A packet body: a call (``target`` "Service.method", ``response`` "/1") or its reply
    (``target`` "/1/onResult", ``response`` "null")."""
    target: str
    response: str
    value: object


class Packet(NamedTuple):
    """A remoting envelope: version 0 (AMF0) or 3 (AMF3 values behind the switch)."""
    headers: list
    bodies: list
    version: int = 3


def decode_packet(data, **limits):
    """Reads a remoting packet from any buffer (bytes, bytearray, memoryview, mmap)."""
    version, headers, bodies = _amfgate.decode_packet(data, **limits)
    return Packet([Header(n, v, m) for n, m, v in headers],
                  [Body(t, r, v) for t, r, v in bodies], version)


def encode_packet(packet, **options):
    """Writes a Packet (or anything with its headers, bodies and version) as bytes.

    ``lengths="zero"`` writes 0 in each header's and body's length field, as Py3AMF does
    when not strict (readers ignore them); the default writes the real lengths. ``default``
    and ``max_depth`` are as for dumps()."""
    return _amfgate.encode_packet(
        packet.version, [(h.name, h.must_understand, h.value) for h in packet.headers],
        [(b.target, b.response, b.value) for b in packet.bodies], **options)


def _slots(cls):
    names = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        for name in ([slots] if isinstance(slots, str) else slots):
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def register_class(cls, alias, *, members=None, dynamic=None, externalizable=None):
    """Maps the ActionScript or Java class ``alias`` to ``cls``, both ways.

    ``members`` are the sealed members, in order. By default they are a dataclass's fields,
    or the ``__slots__`` of a class that has no ``__dict__``, or none. ``dynamic`` says
    whether an instance's other public attributes (from its ``__dict__``, not starting with
    ``_``) go too; by default, when ``members`` are not given and instances have a
    ``__dict__``. Decoding makes instances with ``cls.__new__`` and sets the members as
    attributes, without calling ``__init__``.

    ``externalizable``: the class writes and reads itself, as an ActionScript
    IExternalizable does, with ``__writeamf__(self, output)`` (an ``External``) and
    ``__readamf__(self, input)``. Its payload has no length on the wire, so the codec reads it
    by this layout: the IDataInput calls in order, each a kind (``"boolean"``, ``"byte"``,
    ``"unsigned_byte"``, ``"short"``, ``"unsigned_short"``, ``"int"``, ``"unsigned_int"``,
    ``"float"``, ``"double"``, ``"utf"``, ``"object"``) or ``("utf_bytes", length)``,
    ``("multi_byte", length, charset)``.
    """
    if not isinstance(cls, type):
        raise TypeError("register_class takes a class")
    if externalizable is not None:
        for method in ("__readamf__", "__writeamf__"):
            if not callable(getattr(cls, method, None)):
                raise TypeError(f"an externalizable class has {method}")
        _amfgate.register_class(cls, alias, [], False, list(externalizable))
        return cls
    has_dict = "__dict__" in dir(cls) or not any("__slots__" in k.__dict__ for k in cls.__mro__[:-1])
    if members is None:
        if dataclasses.is_dataclass(cls):
            sealed = [f.name for f in dataclasses.fields(cls)]
        elif not has_dict:
            sealed = _slots(cls)
        else:
            sealed = []
        if dynamic is None:
            dynamic = has_dict and not dataclasses.is_dataclass(cls)
    else:
        sealed = list(members)
        if dynamic is None:
            dynamic = False
    _amfgate.register_class(cls, alias, sealed, bool(dynamic))
    return cls


def unregister_class(alias):
    """Forgets the class registered for ``alias`` (KeyError if none is)."""
    _amfgate.unregister_class(alias)

