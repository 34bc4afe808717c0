# gunicorn, as Debian ships it, running the backend. Keep-alive longer than amfgate's
# upstreams.<name>.idle_timeout_ms (30 s), so that amfgate closes idle connections first.
import os

bind = os.environ.get("BACKEND_BIND", "127.0.0.1:5000")
workers = 2
threads = 8
worker_class = "gthread"  # keep-alive needs a threaded worker: sync workers close each time
keepalive = 75
accesslog = "-"
