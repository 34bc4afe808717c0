#!/usr/bin/env python3
"""A JSON backend for the bridge's tests, well-behaved and not: the services amfgate bridges
to (POST /amf/<Service>/<method>), the forwards it sends (POST /amf/_messages/<dest>), and
the questions of a destination's rights hook (POST /amf/_authorize/<dest>): a user may use
the subtopic "rooms.<their name>" only; "rooms.broken" answers HTTP 500.

  backend.py --port N [--tls CERT KEY]  |  backend.py --unix PATH

Svc.echo(x) answers x; Svc.whoami() what the bridge said of the caller; Svc.user(id) a typed
object; Svc.fail() a fault; Svc.status() HTTP 500; Svc.garbage() what is not JSON; Svc.hang()
nothing for 60 s; Svc.half() half an answer, then a close; Svc.huge() 10 GB, streamed;
Svc.forwarded() the messages forwarded so far; Svc.asked() the rights questions so far;
Svc.connections() how many it accepted;
Svc.announce(text) publishes text to the destination "news" through amfgate's publish
endpoint (--publish URL TOKEN).
Only the standard library: it stands for any backend, in any language.
"""
import argparse
import base64
import json
import socketserver
import ssl
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

forwarded = []
asked = []
connections = 0
publish_to = None  # (amfgate's base URL, token)
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def setup(self):
        global connections
        with lock:
            connections += 1
        super().setup()

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        call = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.removeprefix("/amf/")
        if path.startswith("_messages/"):
            with lock:
                forwarded.append(call)
            return self.reply(200, {"ok": True})
        if path.startswith("_authorize/"):
            with lock:
                asked.append(call)
            subtopic = call.get("subtopic") or ""
            if subtopic == "rooms.broken":
                return self.reply(500, b"Internal Server Error", "text/plain")
            user = (call.get("user") or {}).get("name")
            return self.reply(200, {"result": user is not None and subtopic == f"rooms.{user}"})
        args = call.get("args", [])
        method = path.split("/")[-1]
        if method == "echo":
            return self.reply(200, {"result": args[0] if args else None})
        if method == "whoami":
            return self.reply(200, {"result": {k: call.get(k) for k in
                                               ("user", "session", "client", "headers")}})
        if method == "user":
            return self.reply(200, {"result": {
                "_explicitType": "com.example.User", "id": args[0], "name": "Ann",
                "born": {"_date": "1990-05-01T12:30:00.250Z"},
                "avatar": {"_bytes": base64.b64encode(b"\x00\x01\xfe").decode()}}})
        if method == "fail":
            return self.reply(404, {"fault": {"code": "App.NotFound", "message": "no user 7",
                                              "detail": "looked in the users table"}})
        if method == "status":
            return self.reply(500, b"Internal Server Error: boom", "text/plain")
        if method == "garbage":
            return self.reply(200, b"<html>not json</html>", "text/html")
        if method == "hang":
            time.sleep(60)
            return self.reply(200, {"result": "late"})
        if method == "half":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"result": "cut')
            self.wfile.flush()
            self.close_connection = True
            return
        if method == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(10 << 30))
            self.end_headers()
            try:
                chunk = b" " * 65536
                for _ in range((10 << 30) // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass  # amfgate hung up: what the test wants
            self.close_connection = True
            return
        if method == "forwarded":
            with lock:
                return self.reply(200, {"result": list(forwarded)})
        if method == "asked":
            with lock:
                return self.reply(200, {"result": list(asked)})
        if method == "announce":
            base, token = publish_to
            req = urllib.request.Request(
                f"{base}/publish/news", method="POST",
                data=json.dumps({"body": args[0], "headers": {"from": "backend"}}).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=5) as r:
                return self.reply(200, {"result": r.status})
        if method == "connections":
            with lock:
                return self.reply(200, {"result": connections})
        return self.reply(404, {"fault": {"code": "App.NoMethod", "message": path}})


class TCPServer(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        sock, _ = super().get_request()
        return sock, ("unix", 0)  # BaseHTTPRequestHandler wants an address pair


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int)
    p.add_argument("--unix")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    p.add_argument("--publish", nargs=2, metavar=("URL", "TOKEN"))
    a = p.parse_args()
    global publish_to
    publish_to = a.publish
    if a.unix:
        server = UnixServer(a.unix, Handler)
    else:
        server = TCPServer(("127.0.0.1", a.port), Handler)
        if a.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*a.tls)
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
