"""amfgate.py3amf: a Py3AMF application on amfgate's codec, through Py3AMF's entry points."""
import datetime

import pytest

pyamf = pytest.importorskip("pyamf")
import pyamf.flex.messaging  # noqa: E402
import pyamf.remoting  # noqa: E402
from pyamf.remoting.gateway.wsgi import WSGIGateway  # noqa: E402

import amfgate  # noqa: E402
import amfgate.py3amf  # noqa: E402


@pytest.fixture
def drop_in():
    amfgate.py3amf.install()
    yield
    amfgate.py3amf.uninstall()


class Spam:
    class __amf__:
        static = ("name",)

    def __init__(self, name="", eggs=0):
        self.name, self.eggs = name, eggs


@pytest.fixture
def spam():
    pyamf.register_class(Spam, "com.example.Spam")
    yield Spam
    pyamf.unregister_class(Spam)


def test_install_swaps_the_entry_points_and_uninstall_puts_them_back():
    real = pyamf.encode, pyamf.decode, pyamf.remoting.encode, pyamf.remoting.decode
    amfgate.py3amf.install()
    amfgate.py3amf.install()  # twice is once
    assert amfgate.py3amf.installed()
    assert pyamf.encode is amfgate.py3amf.encode
    assert pyamf.remoting.decode is amfgate.py3amf.remoting_decode
    amfgate.py3amf.uninstall()
    assert (pyamf.encode, pyamf.decode, pyamf.remoting.encode, pyamf.remoting.decode) == real


def plain(x):
    if isinstance(x, list):
        return [plain(i) for i in x]
    if isinstance(x, dict):
        return (type(x).__name__, getattr(x, "alias", None), {k: plain(v) for k, v in x.items()})
    if hasattr(x, "__dict__"):
        return (type(x).__name__, plain(vars(x)))
    return x


def test_what_py3amf_reads_from_it_is_what_it_wrote(drop_in, spam):
    value = [spam("a", 2), pyamf.ASObject(x=1), pyamf.MixedArray({0: "a", "k": 1}),
             pyamf.TypedObject("t.T"), pyamf.Undefined, datetime.datetime(2020, 1, 1)]
    value[3]["q"] = [1.5]
    for encoding in (pyamf.AMF0, pyamf.AMF3):
        ours = pyamf.encode(value, encoding=encoding).getvalue()
        theirs = amfgate.py3amf._saved["encode"](value, encoding=encoding).getvalue()
        # Py3AMF's own decoder reads the same objects from amfgate's bytes as from its own,
        # but for the TypedObject, whose alias Py3AMF's encoder drops (it writes it anonymous).
        read_ours = plain(next(iter(amfgate.py3amf._saved["decode"](ours, encoding=encoding))))
        read_theirs = plain(next(iter(amfgate.py3amf._saved["decode"](theirs, encoding=encoding))))
        assert read_ours[:3] + read_ours[4:] == read_theirs[:3] + read_theirs[4:]
        assert read_ours[3] == ("TypedObject", "t.T", {"q": [1.5]})
        assert read_theirs[3] == ("ASObject", None, {"q": [1.5]})
        back = next(pyamf.decode(ours, encoding=encoding))
        assert type(back[0]) is spam and (back[0].name, back[0].eggs) == ("a", 2)
        assert type(back[1]) is pyamf.ASObject and type(back[2]) is pyamf.MixedArray
        assert type(back[3]) is pyamf.TypedObject and back[3].alias == "t.T"
        assert back[4] is pyamf.Undefined and back[5] == datetime.datetime(2020, 1, 1)


def test_a_wsgi_gateway_answers_a_flex_client(drop_in, shared):
    def echo(x):
        return x

    gateway = WSGIGateway({"echo": echo, "Red5Echo": echo})
    request = pyamf.remoting.Envelope(pyamf.AMF3)
    request["/1"] = pyamf.remoting.Request("echo", [{"a": [1, "two"]}])
    data = pyamf.remoting.encode(request).getvalue()
    status = []
    body = b"".join(gateway({
        "REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/x-amf",
        "CONTENT_LENGTH": str(len(data)), "wsgi.input": _Input(data),
    }, lambda s, h: status.append(s)))
    assert status == ["200 OK"]
    # The reply as amfgate reads it: the argument came back, behind the AMF3 switch.
    reply = amfgate.decode_packet(body)
    assert reply.bodies[0].target == "/1/onResult"
    assert reply.bodies[0].value == {"a": [1, "two"]}


def test_truncated_bytes_are_an_ioerror_as_py3amf_raises(drop_in):
    with pytest.raises(IOError):
        pyamf.remoting.decode(b"\x00\x03\x00\x00\x00\x01\x00\x04echo")
    with pytest.raises(pyamf.DecodeError):
        next(pyamf.decode(b"\x14", encoding=pyamf.AMF3))


def test_what_writes_itself_is_written_as_py3amf_writes_it():
    # Py3AMF's small messages write themselves (__writeamf__): flag bytes, then objects that
    # share the reference tables of the rest. The same bytes with the drop-in as without it.
    import uuid
    ack = pyamf.flex.messaging.AcknowledgeMessageExt(
        headers={"DSId": "EE0D161D-C11D-25CB-8DBE-3B77B54B55D9"}, body=[1, "two"],
        clientId=uuid.UUID("ee0d161d-c128-265b-c980-524b9b45c6c4"),
        messageId=uuid.UUID("ee0d161d-c13d-8ea3-e010-efad3be5c56a"),
        correlationId="not-a-uuid", timestamp=datetime.datetime(2009, 8, 19, 11, 24, 43))
    command = pyamf.flex.messaging.CommandMessageExt(operation=5, destination="chat")
    values = [ack, command, ack]  # the second ack is a reference to the first
    expected = pyamf.encode(*values, encoding=pyamf.AMF3).getvalue()
    amfgate.py3amf.install()
    try:
        written = pyamf.encode(*values, encoding=pyamf.AMF3).getvalue()
    finally:
        amfgate.py3amf.uninstall()
    assert written == expected
    back = list(pyamf.decode(written, encoding=pyamf.AMF3))
    assert back[0].correlationId == "not-a-uuid" and back[1].operation == 5
    assert back[2] is back[0]


class _Input:
    def __init__(self, data):
        self.data = data

    def read(self, n=-1):
        data, self.data = self.data, b""
        return data
