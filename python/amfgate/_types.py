"""The Python forms of AMF values that have no plain Python type."""

import struct

__all__ = ["Undefined", "undefined", "XML", "XMLDocument", "TypedObject", "MixedArray",
           "Dictionary", "ArrayCollection", "ArrayList", "ObjectProxy", "External", "DecodeError"]


class Undefined:
    """ActionScript's ``undefined``; its one instance is ``amfgate.undefined``."""

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "amfgate.undefined"

    def __bool__(self):
        return False

    def __reduce__(self):
        return (Undefined, ())


undefined = Undefined()


class XML(str):
    """E4X XML (AMF3 0x0B), kept as text and never parsed: no entity is ever expanded."""

    __slots__ = ()


class XMLDocument(str):
    """A legacy flash.xml.XMLDocument (AMF0 0x0F, AMF3 0x07), kept as text."""

    __slots__ = ()


class TypedObject(dict):
    """An object of a class alias that no Python class is registered for: its members as a
    dict, its alias in ``alias``.

    ``sealed`` names the members written as the class's sealed members, in order, and
    ``dynamic`` says whether the others may go as dynamic members. By default every member is
    dynamic; a decoded object keeps the traits it came with, so it is written back the same.
    """

    sealed = ()
    dynamic = True

    def __init__(self, alias, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.alias = alias

    def __repr__(self):
        return f"TypedObject({self.alias!r}, {dict.__repr__(self)})"

    def __eq__(self, other):
        if isinstance(other, TypedObject):
            return self.alias == other.alias and dict.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None


class MixedArray(dict):
    """An array with named members (AMF3) or an ECMA array (AMF0): the list part under int
    keys 0..n-1, the rest under their names."""

    def __repr__(self):
        return f"MixedArray({dict.__repr__(self)})"


class Dictionary(list):
    """An AS3 Dictionary with a key that Python cannot hash (an object, an array): its
    (key, value) pairs in wire order. A Dictionary whose keys all hash decodes as a dict."""

    def __repr__(self):
        return f"Dictionary({list.__repr__(self)})"


class ArrayCollection(list):
    """flex.messaging.io.ArrayCollection: a list that Flex binds to."""

    alias = "flex.messaging.io.ArrayCollection"


class ArrayList(list):
    """flex.messaging.io.ArrayList."""

    alias = "flex.messaging.io.ArrayList"


class ObjectProxy(dict):
    """flex.messaging.io.ObjectProxy: an object Flex watches for changes."""

    alias = "flex.messaging.io.ObjectProxy"


class External:
    """An IExternalizable object to encode: its class alias, and its payload as ActionScript's
    ``writeExternal`` writes it, through IDataOutput's calls (and Py3AMF's
    ``writeUnsignedByte`` and ``writeUnsignedShort``). The calls are recorded here, then
    written in order when the object is encoded (always in AMF3); the values of
    ``writeObject`` share the reference tables of the rest of the encoding. Whoever reads it
    must know the class: an externalizable payload has no length on the wire."""

    __slots__ = ("alias", "ops")
    charsets = ("utf-8", "utf8", "iso-8859-1", "latin1", "us-ascii", "ascii")

    def __init__(self, alias):
        if not isinstance(alias, str) or not alias:
            raise TypeError("External takes the class alias, a non-empty str")
        self.alias = alias
        self.ops = []  # (kind, value) or ("multi_byte", value, charset), in call order

    def __repr__(self):
        return f"External({self.alias!r}, {len(self.ops)} calls)"

    def _records(kind, convert):  # noqa: N805 (a method maker, used in this body only)
        def write(self, value):
            self.ops.append((kind, convert(value)))
        return write

    writeBoolean = _records("boolean", bool)
    writeByte = _records("byte", int)
    writeUnsignedByte = _records("unsigned_byte", int)
    writeShort = _records("short", int)
    writeUnsignedShort = _records("unsigned_short", int)
    writeInt = _records("int", int)
    writeUnsignedInt = _records("unsigned_int", int)
    writeDouble = _records("double", float)
    writeUTFBytes = _records("utf_bytes", str)
    writeBytes = _records("bytes", bytes)
    writeObject = _records("object", lambda value: value)
    del _records

    def writeFloat(self, value):
        value = float(value)
        struct.pack(">f", value)  # OverflowError beyond a float's range, as Python's own
        self.ops.append(("float", value))

    def writeUTF(self, value):
        """A string with its UTF-8 length first, as 16 bits."""
        if len(value.encode("utf-8")) > 0xFFFF:
            raise ValueError("writeUTF takes at most 65535 bytes of UTF-8")
        self.ops.append(("utf", str(value)))

    def writeMultiByte(self, value, charset):
        if charset.lower() not in self.charsets:
            raise ValueError(f"writeMultiByte: charset {charset!r} is none of {self.charsets}")
        self.ops.append(("multi_byte", str(value), charset))


class _Input:
    """IDataInput over what the codec read of an object of a class registered with its
    layout (``register_class(..., externalizable=[...])``): its ``__readamf__`` reads the
    calls in the order of the layout, with the same kinds."""

    __slots__ = ("_alias", "_calls", "_at")

    def __init__(self, alias, calls):
        self._alias, self._calls, self._at = alias, calls, 0

    def _next(self, kind):
        if self._at >= len(self._calls) or self._calls[self._at][0] != kind:
            had = self._calls[self._at][0] if self._at < len(self._calls) else "nothing more"
            raise DecodeError(f"{self._alias}.__readamf__ read {kind} where its layout has {had}",
                              "bad_external")
        self._at += 1
        return self._calls[self._at - 1][1]

    def _reads(kind):  # noqa: N805 (a method maker, used in this body only)
        return lambda self: self._next(kind)

    readBoolean = _reads("boolean")
    readByte = _reads("byte")
    readUnsignedByte = _reads("unsigned_byte")
    readShort = _reads("short")
    readUnsignedShort = _reads("unsigned_short")
    readInt = _reads("int")
    readUnsignedInt = _reads("unsigned_int")
    readFloat = _reads("float")
    readDouble = _reads("double")
    readUTF = _reads("utf")
    readObject = _reads("object")
    del _reads

    def readUTFBytes(self, length):  # noqa: ARG002 (the layout gave the length)
        return self._next("utf_bytes")

    def readMultiByte(self, length, charset):  # noqa: ARG002
        return self._next("multi_byte")


class DecodeError(ValueError):
    """Bytes that are not valid AMF. ``reason`` names the fault (``truncated``,
    ``unknown_marker``, ``bad_reference``, ``depth_exceeded``, ``limit_exceeded``, ...) and
    ``offset`` is the byte where the bad token starts (None for faults found after the bytes
    were read, such as a date that Python cannot hold)."""

    def __init__(self, message, reason=None, offset=None):
        super().__init__(message)
        self.reason = reason
        self.offset = offset
