"""A Py3AMF WSGI gateway with one echo service, for gateway.sh: with AMFGATE_DROP_IN=1 it
runs on amfgate's codec (amfgate.py3amf.install()), otherwise on Py3AMF's (with cpyamf if it
is importable, as a Py3AMF deployment would)."""
import os

from pyamf.remoting.gateway.wsgi import WSGIGateway

if os.environ.get("AMFGATE_DROP_IN") == "1":
    import amfgate.py3amf
    amfgate.py3amf.install()


def echo(value):
    return value


application = WSGIGateway({"echo": echo}, expose_request=False)
