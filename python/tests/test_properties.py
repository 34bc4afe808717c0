"""Properties over generated objects and bytes: loads(dumps(x)) == x for every type the module
maps, and a short fuzz of the conversion both ways (the C++ codec's bytes are fuzzed by
libFuzzer; this covers the Python side of it)."""
import array
import datetime
import math
import struct

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import amfgate

UTC = datetime.timezone.utc
names = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
dates = st.datetimes(min_value=datetime.datetime(1, 1, 1),
                     max_value=datetime.datetime(9999, 12, 31)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC))  # AMF has ms
common = (st.none() | st.booleans() | st.integers(-(2**53), 2**53) |
          st.floats(allow_nan=False) | st.text(max_size=30) | dates |
          st.just(amfgate.undefined) | st.text(max_size=10).map(amfgate.XMLDocument))


def containers(inner, amf3):
    typed = st.builds(lambda alias, d: amfgate.TypedObject(alias, d),
                      st.sampled_from(["a.B", "com.example.C"]), st.dictionaries(names, inner, max_size=4))
    mixed = st.builds(lambda dense, named: amfgate.MixedArray({**dict(enumerate(dense)), **named}),
                      st.lists(inner, max_size=3), st.dictionaries(names, inner, min_size=1, max_size=3))
    found = (st.lists(inner, max_size=5) | st.dictionaries(names, inner, max_size=5) | typed | mixed |
             st.lists(inner, max_size=3).map(amfgate.ArrayCollection))
    if amf3:
        found |= (st.dictionaries(st.integers(-5, 5) | names, inner, max_size=4) |
                  st.lists(st.tuples(st.lists(st.integers(-9, 9), max_size=2), inner), min_size=1, max_size=3).map(
                      amfgate.Dictionary))
    return found


def values(amf3):
    leaves = common
    if amf3:
        leaves |= (st.binary(max_size=30) | st.text(max_size=10).map(amfgate.XML) |
                   st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5).map(lambda v: array.array("i", v)) |
                   st.lists(st.integers(0, 2**32 - 1), max_size=5).map(lambda v: array.array("I", v)) |
                   st.lists(st.floats(allow_nan=False), max_size=5).map(lambda v: array.array("d", v)))
    return st.recursive(leaves, lambda inner: containers(inner, amf3), max_leaves=30)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(values(True))
def test_round_trip_amf3(x):
    back = amfgate.loads(amfgate.dumps(x))
    assert back == x
    assert type(back) is type(x) or isinstance(x, (int, float))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(values(False))
def test_round_trip_amf0(x):
    assert amfgate.loads(amfgate.dumps(x, amf3=False), amf3=False) == x


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(
    st.none() | st.integers() | st.floats() | st.text() | st.binary() | st.complex_numbers() |
    st.sets(st.integers(), max_size=3) | st.just(object()) | st.just(Ellipsis) |
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(inner.filter(
        lambda k: isinstance(k, (str, int))), inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=20), st.booleans())
def test_any_object_encodes_or_says_where_it_cannot(x, amf3):
    try:
        data = amfgate.dumps(x, amf3=amf3)
    except (TypeError, ValueError, OverflowError) as e:
        assert " at " in str(e)
        return
    back = amfgate.loads(data, amf3=amf3)
    if not _has_nan(x):
        assert back == _as_decoded(x)


def _has_nan(x):
    if isinstance(x, float):
        return math.isnan(x)
    if isinstance(x, (list, tuple)):
        return any(_has_nan(i) for i in x)
    if isinstance(x, dict):
        return any(_has_nan(i) for i in x.values())
    return False


def _as_decoded(x):
    """Tuples come back as lists."""
    if isinstance(x, (list, tuple)):
        return [_as_decoded(i) for i in x]
    if isinstance(x, dict):
        return {k: _as_decoded(v) for k, v in x.items()}
    return x


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.booleans())
def test_any_bytes_decode_or_raise_decode_error(data, amf3):
    try:
        amfgate.loads(data, amf3=amf3)
    except amfgate.DecodeError as e:
        assert e.reason and (e.offset is None or 0 <= e.offset <= len(data))
    try:
        amfgate.decode_packet(data)
    except amfgate.DecodeError as e:
        assert e.reason


# IDataOutput calls with no object among them, and the bytes ActionScript writes for each.
_calls = st.one_of(
    st.booleans().map(lambda v: ("writeBoolean", (v,), bytes([v]))),
    st.integers(-128, 127).map(lambda v: ("writeByte", (v,), struct.pack(">b", v))),
    st.integers(0, 255).map(lambda v: ("writeUnsignedByte", (v,), struct.pack(">B", v))),
    st.integers(-2**15, 2**15 - 1).map(lambda v: ("writeShort", (v,), struct.pack(">h", v))),
    st.integers(0, 2**16 - 1).map(lambda v: ("writeUnsignedShort", (v,), struct.pack(">H", v))),
    st.integers(-2**31, 2**31 - 1).map(lambda v: ("writeInt", (v,), struct.pack(">i", v))),
    st.integers(0, 2**32 - 1).map(lambda v: ("writeUnsignedInt", (v,), struct.pack(">I", v))),
    st.floats(width=32, allow_nan=False).map(lambda v: ("writeFloat", (v,), struct.pack(">f", v))),
    st.floats(allow_nan=False).map(lambda v: ("writeDouble", (v,), struct.pack(">d", v))),
    st.text(max_size=20).map(lambda v: ("writeUTF", (v,),
                                        struct.pack(">H", len(v.encode())) + v.encode())),
    st.text(max_size=20).map(lambda v: ("writeUTFBytes", (v,), v.encode())),
    st.text(alphabet=st.characters(max_codepoint=255), max_size=20).map(
        lambda v: ("writeMultiByte", (v, "iso-8859-1"), v.encode("latin-1"))),
    st.binary(max_size=20).map(lambda v: ("writeBytes", (v,), v)))


@settings(max_examples=300)
@given(st.lists(_calls, max_size=12))
def test_an_external_writes_what_actionscript_writes(calls):
    e = amfgate.External("a.B")
    for name, args, _ in calls:
        getattr(e, name)(*args)
    traits = b"\x0a\x07\x07a.B"  # an object, externalizable traits inline, its alias
    assert amfgate.dumps(e) == traits + b"".join(expected for _, _, expected in calls)


class _Layout:
    """An externalizable class that reads one call of every kind its layout has."""

    layout = ["boolean", "byte", "unsigned_short", "int", "unsigned_int", "float", "double", "utf",
              ("utf_bytes", 3), ("multi_byte", 2, "latin1"), "object"]

    def __writeamf__(self, output):
        raise AssertionError("only read here")

    def __readamf__(self, input):
        self.read = [input.readBoolean(), input.readByte(), input.readUnsignedShort(),
                     input.readInt(), input.readUnsignedInt(), input.readFloat(), input.readDouble(),
                     input.readUTF(), input.readUTFBytes(3), input.readMultiByte(2, "latin1"),
                     input.readObject()]


@settings(max_examples=500)
@given(st.binary(max_size=120))
@example(bytes.fromhex("01" "ff" "0001" "00000002" "00000003" "3f800000" "3ff0000000000000"
                       "000161" "616263" "e9e9" "01"))  # one that reads
def test_a_registered_layout_reads_any_bytes_or_says_why(payload):
    amfgate.register_class(_Layout, "a.L", externalizable=_Layout.layout)
    try:
        got = amfgate.loads(b"\x0a\x07\x07a.L" + payload)
        assert isinstance(got, _Layout) and len(got.read) == len(_Layout.layout)
        assert [type(v) for v in got.read[:10]] == [bool, int, int, int, int, float, float, str,
                                                    str, str]
    except amfgate.DecodeError as e:
        assert e.reason
    finally:
        amfgate.unregister_class("a.L")
