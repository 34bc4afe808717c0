"""amfgate's module against Py3AMF (../shared/peers/py3amf, pure Python): the corpus decoded by
both, and random objects encoded by each and decoded by the other."""
import array
import datetime
import json
import math
import uuid
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amfgate

pyamf = pytest.importorskip("pyamf")
import pyamf.amf3  # noqa: E402
import pyamf.flex  # noqa: E402
import pyamf.remoting  # noqa: E402

UTC = datetime.timezone.utc


def normal(x, stack=()):
    """Both libraries' objects in one model: containers as tuples, numbers as floats, dates
    as naive UTC, typed objects with their alias."""
    if id(x) in stack:
        return "<cycle>"
    stack = stack + (id(x),)
    if x is None or isinstance(x, bool):
        return x
    if x is amfgate.undefined or x is pyamf.Undefined:
        return "<undefined>"
    if isinstance(x, (int, float)):
        return "NaN" if math.isnan(x) else float(x)
    if isinstance(x, (amfgate.XML, amfgate.XMLDocument)):
        return ("xml", ET.tostring(ET.fromstring(x)))
    if isinstance(x, ET.Element):
        return ("xml", ET.tostring(x))
    if isinstance(x, str):
        return x
    if isinstance(x, uuid.UUID):  # Py3AMF's form of a small message's ids
        return str(x).upper()
    if isinstance(x, datetime.datetime):
        return x.astimezone(UTC).replace(tzinfo=None) if x.tzinfo else x
    if isinstance(x, (bytes, pyamf.amf3.ByteArray)):
        return bytes(x.getvalue() if hasattr(x, "getvalue") else x)
    if isinstance(x, array.array):
        return ("list", tuple(float(i) for i in x))
    if isinstance(x, (list, tuple)):
        return ("list", tuple(normal(i, stack) for i in x))
    if isinstance(x, dict):
        alias = getattr(x, "alias", "") or ""
        if isinstance(x, (amfgate.ArrayCollection, amfgate.ObjectProxy)):
            alias = ""
        return ("object", alias, tuple(sorted((str(k), normal(v, stack)) for k, v in x.items())))
    alias = pyamf.get_class_alias(type(x)).alias
    alias = SMALL.get(alias, alias)
    members = {k: v for k, v in vars(x).items() if not k.startswith("_")}
    if alias.startswith("flex.messaging.messages."):
        # Py3AMF gives a message's timestamp as a datetime, and no timeToLive as None.
        if isinstance(members.get("timestamp"), datetime.datetime):
            stamp = members["timestamp"].replace(tzinfo=UTC)
            members["timestamp"] = stamp.timestamp() * 1000
        if members.get("timeToLive") is None and "timeToLive" in members:
            members["timeToLive"] = 0
    return ("object", alias, tuple(sorted((k, normal(v, stack)) for k, v in members.items())))


# The small forms of Flex messages; amfgate reads them as the full classes.
SMALL = {"DSK": "flex.messaging.messages.AcknowledgeMessage",
         "DSA": "flex.messaging.messages.AsyncMessage",
         "DSC": "flex.messaging.messages.CommandMessage"}


def fixtures(shared):
    return json.loads((shared / "corpus/MANIFEST.json").read_text())["fixtures"]


def py3amf_value(data, amf3):
    return next(iter(pyamf.decode(data, encoding=pyamf.AMF3 if amf3 else pyamf.AMF0)))


def test_the_corpus_decodes_the_same_in_both(shared):
    compared, amfgate_only = [], []
    for f in fixtures(shared):
        data = (shared / "corpus" / f["file"]).read_bytes()
        if f["kind"] == "value":
            amf3 = f["amf_version"] == 3
            if f["file"].endswith("amf3-externalizable.bin"):
                # An externalizable class with no codec: its payload has no length (the daemon
                # refuses it too).
                with pytest.raises(amfgate.DecodeError) as e:
                    amfgate.loads(data)
                assert e.value.reason == "unknown_externalizable"
                continue
            ours = amfgate.loads(data, amf3=amf3)
            try:
                theirs = py3amf_value(data, amf3)
            except Exception:  # Py3AMF has no vectors, AMF0 typed objects, XMLDocument ...
                amfgate_only.append(f["file"])
                continue
            if isinstance(f["expected"], dict) and "$dictionary" in f["expected"]:
                theirs = theirs[0]  # Py3AMF reads a Dictionary as (dict, weak_keys)
            assert normal(ours) == normal(theirs), f["file"]
        else:
            ours = amfgate.decode_packet(data)
            try:
                theirs = pyamf.remoting.decode(data)
            except Exception:
                amfgate_only.append(f["file"])
                continue
            # Py3AMF keeps a reply's target as its response name and status ("/1", onResult).
            assert [b.target.rsplit("/on", 1)[0] for b in ours.bodies] == [
                getattr(b, "target", name) for name, b in theirs.bodies], f["file"]
            # ... and turns an onStatus reply into its own ErrorFault class.
            for mine, (_, their) in zip(ours.bodies, theirs.bodies):
                if getattr(their, "status", pyamf.remoting.STATUS_OK) == pyamf.remoting.STATUS_OK:
                    assert normal(mine.value) == normal(their.body), f["file"]
            assert [normal(h.value) for h in ours.headers] == [
                normal(v) for v in theirs.headers.values()], f["file"]
        compared.append(f["file"])
    # Every fixture either matched Py3AMF or is one Py3AMF cannot read.
    assert len(compared) + len(amfgate_only) == len(fixtures(shared)) - 1
    assert len(compared) >= 30, compared


def dates(since):
    return st.datetimes(min_value=since, max_value=datetime.datetime(2200, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC))


def values(amf3, since=datetime.datetime(1900, 1, 1)):
    """Py3AMF writes a date before 1970 with a fraction of a second one millisecond early in
    each direction of the fraction (util.get_timestamp: 1969-01-01T00:00:00.001 goes as
    -31536000001 ms), so what it writes is drawn from 1970 on."""
    scalars = (st.none() | st.booleans() | st.integers(-(2**53), 2**53) |
               st.floats(allow_nan=False) | st.text(max_size=20) | dates(since))
    leaves = scalars | st.binary(max_size=20) if amf3 else scalars
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
            st.text(alphabet="abcdefgh", min_size=1, max_size=5), inner, max_size=5),
        max_leaves=25)


def as_py3amf(x):
    """Py3AMF writes bytes as a string; its ByteArray is what it writes as one."""
    if isinstance(x, bytes):
        return pyamf.amf3.ByteArray(x)
    if isinstance(x, list):
        return [as_py3amf(i) for i in x]
    if isinstance(x, dict):
        return {k: as_py3amf(v) for k, v in x.items()}
    return x


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(values(True))
def test_py3amf_reads_what_amfgate_writes_amf3(x):
    assert normal(py3amf_value(amfgate.dumps(x), True)) == normal(x)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(values(True, since=datetime.datetime(1970, 1, 1)))
def test_amfgate_reads_what_py3amf_writes_amf3(x):
    data = pyamf.encode(as_py3amf(x), encoding=pyamf.AMF3).getvalue()
    assert normal(amfgate.loads(data)) == normal(x)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(values(False))
def test_py3amf_reads_what_amfgate_writes_amf0(x):
    assert normal(py3amf_value(amfgate.dumps(x, amf3=False), False)) == normal(x)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(values(False, since=datetime.datetime(1970, 1, 1)))
def test_amfgate_reads_what_py3amf_writes_amf0(x):
    data = pyamf.encode(x, encoding=pyamf.AMF0).getvalue()
    assert normal(amfgate.loads(data, amf3=False)) == normal(x)
