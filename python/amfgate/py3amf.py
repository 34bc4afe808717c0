"""Py3AMF applications on amfgate's codec.

One line, before the application handles a request::

    import amfgate.py3amf; amfgate.py3amf.install()

From then on ``pyamf.encode``, ``pyamf.decode``, ``pyamf.remoting.encode`` and
``pyamf.remoting.decode`` (and so Py3AMF's gateways: ``WSGIGateway`` and the others that call
them) read and write bytes with amfgate's C++ codec. What the application sees is Py3AMF's own
object model: ``pyamf.ASObject``, its registered classes (``pyamf.register_class`` and its
class aliases, static and dynamic attributes), ``pyamf.TypedObject`` for unknown aliases,
``pyamf.MixedArray``, ``pyamf.amf3.ByteArray``, ``pyamf.Undefined``, XML as Py3AMF's
ElementTree elements, naive UTC datetimes (moved by ``timezone_offset``), and
``pyamf.flex.ArrayCollection`` and ``ObjectProxy``. ``uninstall()`` puts Py3AMF's codec back.
``timezone_offset`` moves decoded dates; encoding takes datetimes as UTC, as amfgate does.

A class that writes itself (``__writeamf__``, ``external = True``) is written by running its
``__writeamf__`` against an ``amfgate.External``, which records the calls. Reading one back
needs a codec for its class: amfgate's reads the Flex collections and small messages.

What the drop-in leaves to Py3AMF: its ``Encoder`` and ``Decoder`` classes (``get_encoder``,
``get_decoder``), which tests and tools drive element by element, and ``__readamf__``.
docs/python.md lists what differs.
"""
import array
import datetime

import pyamf
import pyamf.amf0
import pyamf.amf3
import pyamf.flex
import pyamf.remoting
import pyamf.util
import pyamf.xml

import amfgate

__all__ = ["install", "uninstall", "installed", "Truncated"]

_saved = {}


def installed():
    """Whether Py3AMF runs on amfgate's codec now."""
    return bool(_saved)


def install():
    """Makes Py3AMF's encode and decode entry points use amfgate's codec (idempotent)."""
    if _saved:
        return
    _saved.update(encode=pyamf.encode, decode=pyamf.decode,
                  remoting_encode=pyamf.remoting.encode, remoting_decode=pyamf.remoting.decode)
    pyamf.encode = encode
    pyamf.decode = decode
    pyamf.remoting.encode = remoting_encode
    pyamf.remoting.decode = remoting_decode


def uninstall():
    """Puts Py3AMF's own codec back."""
    if not _saved:
        return
    pyamf.encode = _saved["encode"]
    pyamf.decode = _saved["decode"]
    pyamf.remoting.encode = _saved["remoting_encode"]
    pyamf.remoting.decode = _saved["remoting_decode"]
    _saved.clear()


# ---------------------------------------------------------------------------------- decoding

def _bytes_of(stream):
    """The unread bytes of what Py3AMF's decode functions take: bytes, str, a stream."""
    if isinstance(stream, pyamf.util.BufferedByteStream):
        return stream.read()
    if isinstance(stream, str):
        return stream.encode("latin-1")
    return stream


class Truncated(pyamf.EOStream, IOError):
    """Bytes that end inside a value: Py3AMF's stream raises IOError there, and its gateways
    answer 400 for it."""


def _decode_error(error):
    if error.reason in ("truncated", "length_exceeds_input"):
        return Truncated(str(error))
    return pyamf.DecodeError(str(error))


class _Reader:
    """Py3AMF's objects from amfgate's, one graph at a time (shared and cyclic graphs keep
    their shape)."""

    def __init__(self, amf0, timezone_offset=None):
        self.amf0 = amf0
        self.offset = timezone_offset
        self.seen = {}

    def read(self, x):
        kind = type(x)
        if kind is str or kind is bool or kind is int or x is None:
            return x
        if kind is float:
            # Py3AMF's AMF0 reader gives whole numbers as int.
            return int(x) if self.amf0 and x.is_integer() else x
        found = self.seen.get(id(x))
        if found is not None:
            return found
        return self._node(x)

    def _keep(self, x, made):
        self.seen[id(x)] = made
        return made

    def _node(self, x):
        if x is amfgate.undefined:
            return pyamf.Undefined
        if isinstance(x, (amfgate.XML, amfgate.XMLDocument)):
            return self._keep(x, pyamf.xml.fromstring(str(x)))
        if isinstance(x, datetime.datetime):
            d = x.replace(tzinfo=None)
            return d + self.offset if self.offset else d
        if isinstance(x, bytes):
            return self._keep(x, pyamf.amf3.ByteArray(x))
        if isinstance(x, amfgate.TypedObject):
            return self._typed(x)
        if isinstance(x, amfgate.MixedArray):
            made = self._keep(x, pyamf.MixedArray())
            made.update((k, self.read(v)) for k, v in x.items())
            return made
        if isinstance(x, amfgate.ObjectProxy):
            made = self._keep(x, pyamf.flex.ObjectProxy())
            made._amf_object = pyamf.ASObject((k, self.read(v)) for k, v in x.items())
            return made
        if isinstance(x, amfgate.ArrayCollection):
            made = self._keep(x, pyamf.flex.ArrayCollection())
            made.extend(self.read(v) for v in x)
            return made
        if isinstance(x, dict):
            made = self._keep(x, pyamf.ASObject())
            made.update((k, self.read(v)) for k, v in x.items())
            return made
        if isinstance(x, (list, array.array)):
            made = self._keep(x, [])
            made.extend(self.read(v) for v in x)
            return made
        return x

    def _typed(self, x):
        try:
            alias = pyamf.load_class(x.alias)
        except pyamf.UnknownClassAlias:
            alias = pyamf.TypedObjectClassAlias(x.alias)
        made = self._keep(x, alias.createInstance())
        attrs = {k: self.read(v) for k, v in x.items()}
        alias.applyAttributes(made, attrs)
        return made


class _Values:
    """What pyamf.decode returns: the values of the stream, as an iterator with Py3AMF's
    readElement()."""

    def __init__(self, values):
        self._values = iter(values)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._values)

    def readElement(self):
        try:
            return next(self._values)
        except StopIteration:
            raise pyamf.EOStream("no more values in the stream") from None


def decode(stream, *args, **kwargs):
    """pyamf.decode on amfgate's codec: the values of ``stream`` (AMF3 by default)."""
    encoding = kwargs.pop("encoding", pyamf.DEFAULT_ENCODING)
    amf0 = encoding == pyamf.AMF0
    try:
        values = amfgate.loads_all(_bytes_of(stream), amf3=not amf0)
    except amfgate.DecodeError as e:
        raise _decode_error(e) from e
    reader = _Reader(amf0, kwargs.get("timezone_offset"))
    return _Values([reader.read(v) for v in values])


def remoting_decode(stream, strict=False, logger=None, timezone_offset=None, **kwargs):
    """pyamf.remoting.decode on amfgate's codec: an Envelope of Py3AMF's Requests and
    Responses."""
    remoting = pyamf.remoting
    try:
        packet = amfgate.decode_packet(_bytes_of(stream))
    except amfgate.DecodeError as e:
        raise _decode_error(e) from e
    envelope = remoting.Envelope(packet.version)
    reader = _Reader(packet.version != pyamf.AMF3, timezone_offset)
    for header in packet.headers:
        envelope.headers[header.name] = reader.read(header.value)
        if header.must_understand:
            envelope.headers.set_required(header.name)
    for body in packet.bodies:
        reader.seen.clear()  # each body has reference tables of its own
        target, status = body.target, None
        for code, suffix in remoting.STATUS_CODES.items():
            if target.endswith(suffix):
                target, status = target[:-len(suffix)], code
        value = reader.read(body.value)
        if status is None:
            if not isinstance(value, list):
                raise pyamf.DecodeError("Array type required for request body")
            envelope[body.response] = remoting.Request(target, body=value)
            continue
        if status == remoting.STATUS_ERROR and isinstance(value, pyamf.ASObject):
            value = remoting.get_fault(value)
        envelope[target] = remoting.Response(value, status)
    return envelope


# ---------------------------------------------------------------------------------- encoding

def _alias_of(obj):
    """Py3AMF's class alias for ``obj``'s class, registered or made as Py3AMF makes it."""
    klass = type(obj)
    try:
        alias = pyamf.get_class_alias(klass)
    except pyamf.UnknownClassAlias:
        alias = (pyamf.util.get_class_alias(klass) or pyamf.ClassAlias)(
            klass, defer=True, **pyamf.util.get_class_meta(klass))
    alias.compile()
    return alias


def _typed(obj):
    """A Py3AMF object as amfgate's TypedObject: its alias's encodable attributes, the static
    ones sealed."""
    alias = _alias_of(obj)
    if alias.external:  # it writes itself: its IDataOutput calls are recorded, then written
        out = amfgate.External(alias.alias)
        obj.__writeamf__(out)
        return out
    attrs = alias.getEncodableAttributes(obj)
    made = amfgate.TypedObject("" if alias.anonymous else alias.alias,
                               {str(k) if isinstance(k, int) else k: v for k, v in attrs.items()})
    if alias.static_attrs:
        made.sealed = tuple(alias.static_attrs)
    made.dynamic = bool(alias.dynamic) or alias.dynamic is None and not alias.static_attrs
    return made


class _Codec:
    """What Py3AMF's custom type functions (pyamf.add_type) are given as their encoder."""

    def __init__(self, amf3, strict, timezone_offset):
        self.use_amf3 = amf3
        self.strict = strict
        self.timezone_offset = timezone_offset


def _default_for(amf3, strict=False, timezone_offset=None):
    """The default= of one encode: what amfgate writes for an object of Py3AMF's model or an
    application class, as Py3AMF's encoder would have (custom types first)."""
    codec = _Codec(amf3, strict, timezone_offset)

    def default(obj):
        for kind, convert in list(pyamf.TYPE_MAP.items()):  # pyamf.add_type
            try:
                match = isinstance(obj, kind)
            except TypeError:
                match = callable(kind) and kind(obj)
            if match:
                return convert(obj, encoder=codec)
        if pyamf.xml.is_xml(obj):  # E4X in AMF3, an XMLDocument in AMF0, as Py3AMF writes
            text = pyamf.xml.tostring(obj).decode("utf-8")
            return amfgate.XML(text) if amf3 else amfgate.XMLDocument(text)
        if isinstance(obj, pyamf.util.BufferedByteStream):  # a ByteArray goes as one: as a
            return bytearray(obj.getvalue())                 # bytearray (bytes go as strings)
        if isinstance(obj, (set, frozenset)):  # subclasses; _ENCODERS has the types
            return list(obj)
        if isinstance(obj, bytes):  # a bytes subclass
            return _text(obj)
        if isinstance(obj, datetime.time):
            raise pyamf.EncodeError("A datetime.time instance was found but AMF has no time type")
        return _typed(obj)
    return default


def _text(b):
    """Py3AMF writes bytes as a string."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as e:
        raise pyamf.EncodeError(f"bytes that are not UTF-8 text: {e}") from None


_ENCODERS = {
    bytes: _text,
    set: list,
    frozenset: list,
    pyamf.TypedObject: lambda o: amfgate.TypedObject(o.alias, o),
    pyamf.MixedArray: lambda o: amfgate.MixedArray(o),
    pyamf.UndefinedType: lambda o: amfgate.undefined,
    pyamf.flex.ArrayCollection: lambda o: amfgate.ArrayCollection(o),
    pyamf.flex.ObjectProxy: lambda o: amfgate.ObjectProxy(o._amf_object),
}


def encode(*args, **kwargs):
    """pyamf.encode on amfgate's codec: the values one after another, in a
    BufferedByteStream."""
    encoding = kwargs.pop("encoding", pyamf.DEFAULT_ENCODING)
    try:
        amf3 = encoding != pyamf.AMF0
        offset = kwargs.get("timezone_offset")
        data = amfgate.dumps_all(args, amf3=amf3, encoders=_ENCODERS, timezone_offset=offset,
                                 default=_default_for(amf3, kwargs.get("strict", False), offset))
    except (TypeError, ValueError) as e:
        raise pyamf.EncodeError(str(e)) from e
    stream = pyamf.util.BufferedByteStream(data)
    stream.seek(0)
    return stream


def remoting_encode(msg, strict=False, logger=None, timezone_offset=None, **kwargs):
    """pyamf.remoting.encode on amfgate's codec: an Envelope as bytes, in a
    BufferedByteStream."""
    remoting = pyamf.remoting
    headers = [amfgate.Header(name, value, bool(msg.headers.is_required(name)))
               for name, value in msg.headers.items()]
    bodies = []
    for name, message in msg.items():
        if isinstance(message, remoting.Request):
            bodies.append(amfgate.Body(str(message.target), name, message.body))
        elif isinstance(message, remoting.Response):
            bodies.append(amfgate.Body(name + remoting._get_status(message.status), "null",
                                       message.body))
        else:
            raise TypeError("Unknown message type")
    packet = amfgate.Packet(headers, bodies, msg.amfVersion)
    try:
        amf3 = msg.amfVersion == pyamf.AMF3
        data = amfgate.encode_packet(packet, default=_default_for(amf3, strict, timezone_offset),
                                     encoders=_ENCODERS, timezone_offset=timezone_offset,
                                     lengths="computed" if strict else "zero")
    except (TypeError, ValueError) as e:
        raise pyamf.EncodeError(str(e)) from e
    stream = pyamf.util.BufferedByteStream(data)
    stream.seek(0)
    return stream
