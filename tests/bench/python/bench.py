"""Decode and encode of the shared workloads (../shared/bench) in one run: amfgate's module,
Py3AMF in pure Python, and Py3AMF with its Cython extension (cpyamf), with the goals of issue
41 as ratios measured here.

    PYTHONPATH=<build>/python:<cpyamf tree> python3 bench.py SHARED_DIR [--quick]

--quick runs each case once and checks its result only (the test command's smoke run).
Every case checks what it decoded or encoded against the workload's rules first.
"""
import datetime
import pickle
import sys
import time

import amfgate
import pyamf
import pyamf.amf0
import pyamf.amf3

UTC = datetime.timezone.utc
TAGS = ["red", "green", "blue", "small", "large", "sale", "new"]


class Product:
    """com.example.Product of W1 and W4: sealed, in this order, not dynamic."""
    __amf__ = {"static": ("created", "id", "name", "price", "tags"), "dynamic": False}

    def __init__(self, i):
        self.created = datetime.datetime.fromtimestamp(1700000000 + i, UTC)
        self.id = i
        self.name = "product-%04d" % (i % 100)
        self.price = (i % 1000) * 1.25 + 0.99
        self.tags = [TAGS[i % 7], TAGS[(i + 1) % 7], TAGS[(i + 2) % 7]]


def check_products(items, what):
    """The workload's rules, whichever library read it (Py3AMF gives naive UTC dates)."""
    assert len(items) == 10000, what
    for i in (0, 1, 4567, 9999):
        p = items[i]
        created = p.created if p.created.tzinfo else p.created.replace(tzinfo=UTC)
        assert (p.id, p.name, p.price, list(p.tags)) == (
            i, "product-%04d" % (i % 100), (i % 1000) * 1.25 + 0.99,
            [TAGS[i % 7], TAGS[(i + 1) % 7], TAGS[(i + 2) % 7]]), what
        assert created == datetime.datetime.fromtimestamp(1700000000 + i, UTC), what


def check_w2(value, what):
    data = value.getvalue() if hasattr(value, "getvalue") else value
    assert len(data) == 1 << 20 and data[1000] == (1000 * 31 + 7) & 0xFF, what


def check_w3(value, what):
    assert len(value) == 100000, what


CHECKS = {"W1": check_products, "W2": check_w2, "W3": check_w3, "W4": check_products}
AMF3 = {"W1": True, "W2": True, "W3": True, "W4": False}


def decoders(data, amf3):
    encoding = pyamf.AMF3 if amf3 else pyamf.AMF0
    return {
        "amfgate": lambda: amfgate.loads(data, amf3=amf3),
        "amfgate from memoryview": lambda: amfgate.loads(memoryview(data), amf3=amf3),
        "py3amf+cython": lambda: next(iter(pyamf.decode(data, encoding=encoding, use_ext=True))),
        "py3amf": lambda: next(iter(pyamf.decode(data, encoding=encoding, use_ext=False))),
    }


def encoders(value, amf3):
    encoding = pyamf.AMF3 if amf3 else pyamf.AMF0
    return {
        "amfgate": lambda: amfgate.dumps(value, amf3=amf3),
        "py3amf+cython": lambda: pyamf.encode(value, encoding=encoding, use_ext=True).getvalue(),
        "py3amf": lambda: pyamf.encode(value, encoding=encoding, use_ext=False).getvalue(),
    }


def best(fn, quick):
    """Best seconds per call over rounds of at least 0.2 s each (one call when quick)."""
    if quick:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    times = []
    for _ in range(5):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= 0.2:
                break
        times.append(elapsed / n)
    return min(times)


def main():
    shared = sys.argv[1]
    quick = "--quick" in sys.argv
    assert pyamf.get_decoder(pyamf.AMF3, use_ext=True).__class__.__module__ == "cpyamf.amf3", \
        "cpyamf is not importable: build it with build_cpyamf.sh"
    amfgate.register_class(Product, "com.example.Product",
                           members=["created", "id", "name", "price", "tags"])
    pyamf.register_class(Product, "com.example.Product")
    products = [Product(i) for i in range(10000)]
    values = {"W1": products, "W4": products}
    results = {}
    for name in ("W1", "W2", "W3", "W4"):
        data = open(f"{shared}/bench/{name}.amf", "rb").read()
        amf3 = AMF3[name]
        for lib, fn in decoders(data, amf3).items():
            CHECKS[name](fn(), f"{lib} decoding {name}")
            seconds = best(fn, quick)
            results[("decode", name, lib)] = seconds
            print(f"decode {name} {lib:26} {seconds * 1e3:9.2f} ms  {len(data) / seconds / 1e6:8.1f} MB/s")
        if name in ("W1", "W4"):
            # CPython's own C deserializer on the same objects (as amfgate decoded them): what
            # building this many Python objects costs, whoever reads the bytes.
            pickled = pickle.dumps(decoders(data, amf3)["amfgate"](), protocol=5)
            seconds = best(lambda: pickle.loads(pickled), quick)
            results[("decode", name, "pickle")] = seconds
            print(f"decode {name} {'pickle.loads, same objects':26} {seconds * 1e3:9.2f} ms")
        if name not in values:
            continue
        for lib, fn in encoders(values[name], amf3).items():
            out = fn()
            CHECKS[name](list(amfgate.loads(out, amf3=amf3)), f"{lib} encoding {name}")
            seconds = best(fn, quick)
            results[("encode", name, lib)] = seconds
            print(f"encode {name} {lib:26} {seconds * 1e3:9.2f} ms  {len(out) / seconds / 1e6:8.1f} MB/s")
        # ... and its C serializer: what walking this many Python objects costs.
        seconds = best(lambda: pickle.dumps(values[name], protocol=5), quick)
        results[("encode", name, "pickle")] = seconds
        print(f"encode {name} {'pickle.dumps, same objects':26} {seconds * 1e3:9.2f} ms")
    print()
    for op in ("decode", "encode"):
        for name in ("W1", "W4"):
            ours = results[(op, name, "amfgate")]
            for peer, goal in (("py3amf+cython", 10), ("py3amf", 50)):
                ratio = results[(op, name, peer)] / ours
                ok = ratio >= goal
                print(f"{op} {name}: amfgate {ratio:6.1f}x {peer} (goal >= {goal}x): {'met' if ok else 'NOT met'}")
            anchor = results[(op, name, "pickle")] / ours
            call = "pickle.loads" if op == "decode" else "pickle.dumps"
            print(f"{op} {name}: amfgate {anchor:6.1f}x {call} of the same objects (anchor)")
    for name in ("W1", "W2", "W3", "W4"):
        ratio = results[("decode", name, "amfgate")] / results[("decode", name, "amfgate from memoryview")]
        print(f"decode {name} from a memoryview: {ratio:.2f}x the speed from bytes (goal >= 1.0x, within noise)")
    if quick:
        print("(--quick: one call per case; the figures are not measurements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
