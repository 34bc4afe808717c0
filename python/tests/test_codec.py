"""The module's object model, limits and errors, case by case."""
import array
import dataclasses
import datetime
import mmap
import threading

import pytest

import amfgate

UTC = datetime.timezone.utc


@pytest.mark.parametrize("amf3", [True, False])
@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 268435455, -268435456, 2**31, 2**53, 2.5, float("inf"), "", "héllo",
    "x" * 70000, [], [1, [2, [3]]], {}, {"a": 1, "b": [None, "c"]}, amfgate.undefined,
])
def test_round_trip(value, amf3):
    assert amfgate.loads(amfgate.dumps(value, amf3=amf3), amf3=amf3) == value


def test_integers_by_range():
    assert amfgate.dumps(268435455) == b"\x04\xbf\xff\xff\xff"
    assert amfgate.dumps(268435456)[0] == 0x05  # past 29 bits: a double
    assert amfgate.loads(amfgate.dumps(2**53)) == 2**53
    # Past 2**53 a double would change the number: refused, not rounded.
    for big in (2**53 + 1, -(2**53) - 1, 10**400):
        with pytest.raises(OverflowError, match="at the top"):
            amfgate.dumps(big)
    assert amfgate.dumps(7, amf3=False) == b"\x00@\x1c\x00\x00\x00\x00\x00\x00"


def test_types_that_python_has_no_plain_form_for():
    value = {
        "xml": amfgate.XML("<a b='1'/>"),
        "doc": amfgate.XMLDocument("<r/>"),
        "typed": amfgate.TypedObject("com.example.Thing", {"n": 1}),
        "mixed": amfgate.MixedArray({0: "a", 1: "b", "k": "v"}),
        "collection": amfgate.ArrayCollection([1, 2]),
        "list": amfgate.ArrayList(["x"]),
        "proxy": amfgate.ObjectProxy({"p": True}),
        "pairs": amfgate.Dictionary([([1], "list key"), ("s", 2)]),
        "ints": array.array("i", [-1, 2]),
        "uints": array.array("I", [4000000000]),
        "doubles": array.array("d", [0.5]),
    }
    back = amfgate.loads(amfgate.dumps(value))
    assert back == value
    for key in value:
        assert type(back[key]) is type(value[key]), key
    assert back["typed"].alias == "com.example.Thing"


def test_amf0_forms():
    value = {"m": amfgate.MixedArray({0: "a", "k": 1}), "x": amfgate.XMLDocument("<r/>"),
             "b": b"\x00\x01", "when": datetime.datetime(2001, 2, 3, tzinfo=UTC)}
    data = amfgate.dumps(value, amf3=False)
    assert data[0] == 0x03  # an anonymous object
    assert amfgate.loads(data, amf3=False) == value
    # What only AMF3 has goes behind the switch (0x11), its contents in AMF3.
    for value in ({1: 2}, amfgate.Dictionary([([1], 2)]),
                  amfgate.ArrayCollection([amfgate.MixedArray({0: "a", "k": 1})])):
        data = amfgate.dumps(value, amf3=False)
        assert data[0] == 0x11
        assert amfgate.loads(data, amf3=False) == value


def test_a_member_amf3_cannot_hold_is_refused_not_dropped():
    with pytest.raises(ValueError, match=r'named "".* at \[0\]'):
        amfgate.dumps([{"": 1}])
    with pytest.raises(ValueError, match='named ""'):
        amfgate.dumps(amfgate.ArrayCollection([{"": 1}]), amf3=False)
    assert amfgate.loads(amfgate.dumps({"": 1}, amf3=False), amf3=False) == {"": 1}


def test_dicts_with_other_keys_are_dictionaries_in_amf3():
    data = amfgate.dumps({1: "one", "two": 2})
    assert data[0] == 0x11
    assert amfgate.loads(data) == {1: "one", "two": 2}


def test_dates():
    aware = datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert amfgate.dumps(aware) == b"\x08\x01" + (1700000000123.0).hex().encode() * 0 + \
        __import__("struct").pack(">d", 1700000000123.0)
    back = amfgate.loads(amfgate.dumps(aware))
    assert back == aware and back.tzinfo is UTC
    # Naive datetimes are UTC; aware ones are moved to UTC; a date is its midnight in UTC.
    assert amfgate.loads(amfgate.dumps(aware.replace(tzinfo=None))) == aware
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    assert amfgate.loads(amfgate.dumps(aware.astimezone(plus2))) == aware
    assert amfgate.loads(amfgate.dumps(datetime.date(1969, 12, 31))) == \
        datetime.datetime(1969, 12, 31, tzinfo=UTC)
    assert amfgate.loads(amfgate.dumps(datetime.datetime(1, 1, 1))) == \
        datetime.datetime(1, 1, 1, tzinfo=UTC)


def test_dates_python_cannot_hold_are_decode_errors():
    import struct
    for ms in (1e300, float("nan"), -1e17):
        with pytest.raises(amfgate.DecodeError) as e:
            amfgate.loads(b"\x08\x01" + struct.pack(">d", ms))
        assert e.value.reason == "date_out_of_range"


def test_sharing_and_cycles_survive():
    shared = {"n": 1}
    value = {"a": shared, "b": shared, "l": []}
    value["l"].append(value["l"])
    value["self"] = value
    for amf3 in (True, False):
        back = amfgate.loads(amfgate.dumps(value, amf3=amf3), amf3=amf3)
        assert back["a"] is back["b"]
        assert back["self"] is back
        assert back["l"][0] is back["l"]
    assert amfgate.dumps(value).count(b"\x03n") == 1  # the shared object went once


def test_shared_tuples_do_not_come_back_as_one_list():
    empty, pair = (), (1, 2)
    back = amfgate.loads(amfgate.dumps([empty, empty, pair, pair]))
    assert back == [[], [], [1, 2], [1, 2]]
    assert back[0] is not back[1] and back[2] is not back[3]
    looped = [1]
    looped.append((looped,))  # a tuple in a cycle, through a list
    back = amfgate.loads(amfgate.dumps(looped))
    assert back[1][0] is back


def test_errors_name_the_reason_and_offset():
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x09\x05\x01\x04\x01\x04")
    assert e.value.reason == "truncated" and e.value.offset == 6
    assert "at byte 6" in str(e.value)
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x14")
    assert e.value.reason == "unknown_marker" and e.value.offset == 0
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x01\x01")
    assert e.value.reason == "trailing_bytes" and e.value.offset == 1
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x06\x05\xff\xfe")
    assert e.value.reason == "bad_utf8"
    assert isinstance(e.value, ValueError)


def test_limits_are_parameters():
    deep = b"\x09\x03\x01" * 200 + b"\x01"
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(deep)
    assert e.value.reason == "depth_exceeded"
    assert amfgate.loads(deep, max_depth=300) is not None
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x06\x0bhello", max_string_bytes=4)
    assert e.value.reason == "limit_exceeded"
    nested = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(ValueError, match="max_depth"):
        amfgate.dumps(nested)
    assert amfgate.loads(amfgate.dumps(nested, max_depth=300), max_depth=300) == nested


def test_a_huge_count_in_a_short_input_is_refused_without_allocating():
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.loads(b"\x09\xff\xff\xff\xff\x01")
    assert e.value.reason in ("length_exceeds_input", "limit_exceeded")


def test_what_cannot_be_encoded_names_its_path():
    class Thing:
        pass
    with pytest.raises(TypeError) as e:
        amfgate.dumps([0, 1, 2, {"owner": {"created": Thing()}}])
    assert str(e.value).endswith("at [3].owner.created")
    assert "Thing" in str(e.value)
    with pytest.raises(ValueError, match="surrogate"):
        amfgate.dumps({"k": "\ud800"})
    with pytest.raises(TypeError, match="typecode"):
        amfgate.dumps(array.array("u", "ab"))
    with pytest.raises(OverflowError, match=r"at \[0\]"):
        amfgate.dumps(array.array("q", [2**40]))


def test_any_buffer_decodes_without_a_copy(tmp_path):
    data = amfgate.dumps({"k": ["v"] * 3})
    assert amfgate.loads(bytearray(data)) == amfgate.loads(memoryview(data))
    assert amfgate.loads(memoryview(b"xx" + data)[2:]) == {"k": ["v"] * 3}
    path = tmp_path / "v.amf"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert amfgate.loads(m) == {"k": ["v"] * 3}
    with pytest.raises(TypeError):
        amfgate.loads("text is not bytes")


def test_dumps_into_appends_to_a_callers_buffer():
    buf = bytearray(b"head")
    n = amfgate.dumps_into(buf, [1, 2])
    assert buf == b"head" + amfgate.dumps([1, 2]) and n == len(buf) - 4
    amfgate.dumps_into(buf, "x", amf3=False)
    assert buf.endswith(b"\x02\x00\x01x")


@dataclasses.dataclass
class Product:
    id: int
    name: str
    tags: list


class Point:
    __slots__ = ("x", "y")


class Loose:
    def __init__(self):
        self.a = 1
        self._private = 2


def test_registered_classes_both_ways():
    amfgate.register_class(Product, "com.example.Product")
    amfgate.register_class(Point, "com.example.Point")
    amfgate.register_class(Loose, "com.example.Loose")
    try:
        p = Point()
        p.x, p.y = 1, 2.5
        value = [Product(7, "n", ["t"]), p, Loose()]
        data = amfgate.dumps(value)
        # Sealed members in order, not dynamic (0x03 | 2 << 4 = 0x23 for two members).
        assert b"\x0a\x33'com.example.Product\x05id\x09name\x09tags" in data
        back = amfgate.loads(data)
        assert back[0] == Product(7, "n", ["t"])
        assert (back[1].x, back[1].y) == (1, 2.5)
        assert type(back[2]) is Loose and back[2].a == 1
        assert not hasattr(back[2], "_private")
        # Unregistered, the same bytes give typed dicts.
        amfgate.unregister_class("com.example.Point")
        assert amfgate.loads(data)[1] == amfgate.TypedObject("com.example.Point", x=1, y=2.5)
    finally:
        for alias in ("com.example.Product", "com.example.Loose"):
            amfgate.unregister_class(alias)
    with pytest.raises(KeyError):
        amfgate.unregister_class("com.example.Product")


def test_a_member_a_slotted_class_lacks_is_a_decode_error():
    amfgate.register_class(Point, "com.example.Point")
    try:
        data = amfgate.dumps(amfgate.TypedObject("com.example.Point", z=1))
        with pytest.raises(amfgate.DecodeError, match="no member z"):
            amfgate.loads(data)
    finally:
        amfgate.unregister_class("com.example.Point")


def test_packets(shared):
    data = (shared / "corpus/rocketamf/request/remotingMessage.bin").read_bytes()
    packet = amfgate.decode_packet(data)
    assert packet.version == 3
    [body] = packet.bodies
    assert body.target == "null"
    [message] = body.value
    assert message.alias == "flex.messaging.messages.RemotingMessage"
    assert message["operation"] == "save"  # as the corpus MANIFEST renders it
    again = amfgate.decode_packet(amfgate.encode_packet(packet))
    assert again == packet
    call = amfgate.Packet([amfgate.Header("Credentials", {"userid": "u"}, True)],
                          [amfgate.Body("echo", "/1", ["hi", 2])], version=0)
    assert amfgate.decode_packet(amfgate.encode_packet(call)) == call
    with pytest.raises(amfgate.DecodeError) as e:
        amfgate.decode_packet(data[:40])
    assert e.value.reason in ("truncated", "length_exceeds_input") and e.value.offset <= 40


def test_small_flex_messages_read_as_their_full_class(shared):
    data = (shared / "corpus/rocketamf/request/acknowledge-response.bin").read_bytes()
    [body] = amfgate.decode_packet(data).bodies
    assert body.value.alias == "flex.messaging.messages.AcknowledgeMessage"
    assert len(body.value["messageId"]) == 36


def test_large_inputs_decode_on_threads_at_once():
    data = amfgate.dumps(list(range(100000)))
    out = []
    threads = [threading.Thread(target=lambda: out.append(amfgate.loads(data))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [list(range(100000))] * 4


def test_typed_objects_keep_their_traits():
    data = amfgate.dumps(amfgate.TypedObject("com.example.Product", id=7, name="n"))
    back = amfgate.loads(data)
    assert back.sealed == () and back.dynamic
    sealed = amfgate.TypedObject("com.example.Point", x=1, y=2)
    sealed.sealed, sealed.dynamic = ("x", "y"), False
    data = amfgate.dumps(sealed)
    # 2 sealed members, not dynamic (0x23), then the alias (17 characters: 0x23).
    assert data.startswith(b"\x0a\x23\x23com.example.Point\x03x\x03y")
    back = amfgate.loads(data)
    assert (back.sealed, back.dynamic) == (("x", "y"), False)
    assert amfgate.dumps(back) == data
    sealed["z"] = 3
    with pytest.raises(TypeError, match="not dynamic at z"):
        amfgate.dumps(sealed)


def test_default_encodes_what_has_no_amf_form():
    class Money:
        def __init__(self, cents):
            self.cents = cents

    def default(obj):
        if isinstance(obj, Money):
            return amfgate.TypedObject("com.example.Money", cents=obj.cents)
        if isinstance(obj, set):
            return sorted(obj)
        raise TypeError(f"no AMF form for {type(obj).__name__}")

    price = Money(250)
    data = amfgate.dumps({"a": price, "b": price, "tags": {"y", "x"}}, default=default)
    back = amfgate.loads(data)
    assert back["a"] == amfgate.TypedObject("com.example.Money", cents=250)
    assert back["a"] is back["b"]  # one object, one stand-in
    assert back["tags"] == ["x", "y"]
    with pytest.raises(TypeError, match="no AMF form for complex"):
        amfgate.dumps([1j], default=default)
    with pytest.raises(TypeError, match="that default.. returned at"):
        amfgate.dumps(object(), default=lambda o: o)


def test_default_handles_cycles_through_the_stand_in():
    class Node:
        def __init__(self):
            self.next = self

    data = amfgate.dumps(Node(), default=lambda n: amfgate.TypedObject("Node", next=n.next))
    back = amfgate.loads(data)
    assert back["next"] is back


def test_encoders_by_exact_type_and_a_timezone_offset():
    class Point(dict):
        pass

    encoders = {Point: lambda p: amfgate.TypedObject("Point", p), set: sorted}
    data = amfgate.dumps([Point(x=1), {2, 1}, {"plain": Point()}], encoders=encoders)
    assert amfgate.loads(data) == [amfgate.TypedObject("Point", x=1), [1, 2],
                                   {"plain": amfgate.TypedObject("Point")}]
    assert amfgate.loads(amfgate.dumps(Point(x=1))) == {"x": 1}  # without them, a dict
    local = datetime.datetime(2020, 1, 1, 12)
    shifted = amfgate.dumps(local, timezone_offset=datetime.timedelta(hours=2))
    assert amfgate.loads(shifted) == datetime.datetime(2020, 1, 1, 10, tzinfo=UTC)
    with pytest.raises(TypeError, match="encoders is a dict"):
        amfgate.dumps(1, encoders=[])


def test_an_external_writes_its_calls_in_order_with_shared_tables():
    e = amfgate.External("com.example.Point")
    e.writeInt(3)
    e.writeDouble(1.5)
    e.writeUTF("hé")
    e.writeObject({"a": [1, 2]})
    e.writeObject("x")
    e.writeObject("x")  # a string reference
    e.writeBytes(b"\x00\xff")
    e.writeMultiByte("é", "latin1")
    e.writeUnsignedByte(255)
    e.writeBoolean(True)
    assert amfgate.dumps([e, e]) == bytes.fromhex(
        "090501"  # a dense array of two
        "0a07" "23" + "com.example.Point".encode().hex() +  # externalizable traits, inline
        "00000003" "3ff8000000000000" "000368c3a9"  # writeInt, writeDouble, writeUTF
        "0a0b01036109050104010402" "01"  # writeObject({"a": [1, 2]})
        "060378" "0604"  # "x", then string reference 2 ("com.example.Point", "a", "x")
        "00ff" "e9" "ff" "01"  # writeBytes, writeMultiByte (Latin-1), writeUnsignedByte, bool
        "0a02")  # the second is a reference to the first object
    assert amfgate.dumps(e, amf3=False)[:1] == b"\x11"  # AMF0 switches to AMF3 for it
    # Without a codec for its class nothing can read it back: no length on the wire.
    with pytest.raises(amfgate.DecodeError) as err:
        amfgate.loads(amfgate.dumps(e))
    assert err.value.reason == "unknown_externalizable"


def test_an_external_refuses_what_it_cannot_write():
    e = amfgate.External("X")
    e.writeObject(object())
    with pytest.raises(TypeError, match=r"at k\[0\]\[0\]"):
        amfgate.dumps({"k": [e]})
    with pytest.raises(ValueError, match="charset"):
        amfgate.External("X").writeMultiByte("a", "koi8-r")
    with pytest.raises(ValueError, match="65535"):
        amfgate.External("X").writeUTF("a" * 70000)
    with pytest.raises(OverflowError):
        amfgate.External("X").writeFloat(1e300)
    with pytest.raises(TypeError):
        amfgate.External("")



class Spot:
    """An IExternalizable class of the application's: x, y, a label, and another object."""

    def __init__(self, x=0, y=0.0, label="", other=None):
        self.x, self.y, self.label, self.other = x, y, label, other

    def __writeamf__(self, output):
        output.writeInt(self.x)
        output.writeDouble(self.y)
        output.writeUTF(self.label)
        output.writeObject(self.other)

    def __readamf__(self, input):
        self.x, self.y = input.readInt(), input.readDouble()
        self.label, self.other = input.readUTF(), input.readObject()


@pytest.fixture
def point():
    amfgate.register_class(Spot, "com.example.Spot", externalizable=["int", "double", "utf", "object"])
    yield Spot
    amfgate.unregister_class("com.example.Spot")


def test_an_externalizable_class_both_ways(point):
    a = point(1, 2.5, "a")
    b = point(2, 3.5, "b", a)
    a.other = b  # a cycle through both payloads
    by_hand = amfgate.External("com.example.Spot")
    by_hand.writeInt(7)
    by_hand.writeDouble(0.5)
    by_hand.writeUTF("z")
    by_hand.writeObject([1])
    assert amfgate.dumps(point(7, 0.5, "z", [1])) == amfgate.dumps(by_hand)
    for amf3 in (True, False):
        back = amfgate.loads(amfgate.dumps([a, b, {"p": a}], amf3=amf3), amf3=amf3)
        assert isinstance(back[0], point) and (back[0].x, back[0].y, back[0].label) == (1, 2.5, "a")
        assert back[0].other is back[1] and back[1].other is back[0] and back[2]["p"] is back[0]
    # Large enough to decode with the GIL released: the codec reads the layout there too.
    many = [point(i, i / 2, str(i)) for i in range(2000)]
    assert [p.label for p in amfgate.loads(amfgate.dumps(many))] == [str(i) for i in range(2000)]


def test_an_externalizable_class_that_reads_against_its_layout_is_a_decode_error(point):
    data = amfgate.dumps(point(1, 2.5, "a"))

    class Wrong(Spot):
        def __readamf__(self, input):
            input.readUTF()

    amfgate.register_class(Wrong, "com.example.Spot", externalizable=["int", "double", "utf", "object"])
    with pytest.raises(amfgate.DecodeError, match="read utf where its layout has int") as err:
        amfgate.loads(data)
    assert err.value.reason == "bad_external"
    amfgate.register_class(Spot, "com.example.Spot", externalizable=["int", "utf"])
    with pytest.raises(amfgate.DecodeError):  # the bytes of a double read as a string
        amfgate.loads(data)
    amfgate.unregister_class("com.example.Spot")
    with pytest.raises(amfgate.DecodeError) as err:
        amfgate.loads(data)
    assert err.value.reason == "unknown_externalizable"
    amfgate.register_class(Spot, "com.example.Spot", externalizable=[])  # (for the fixture)
    with pytest.raises(ValueError, match="no IDataInput call 'long'"):
        amfgate.register_class(Spot, "x.Y", externalizable=["long"])
    for bad in (5, ("utf_bytes", "three"), ("multi_byte", 3)):
        with pytest.raises(ValueError, match="no IDataInput call"):
            amfgate.register_class(Spot, "x.Y", externalizable=[bad])
    with pytest.raises(TypeError, match="__readamf__"):
        amfgate.register_class(type("W", (), {"__writeamf__": lambda s, o: None}), "x.W",
                               externalizable=[])
