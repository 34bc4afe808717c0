"""A JSON backend behind amfgate: the services a Flex app calls over AMF, written as any
Flask app is. amfgate's bridge POSTs each call to /amf/<Service>/<method> with
{"args": [...], "user": {...} | null, "session": "..." | null, "client": "..."}; the answer
is {"result": ...} or {"fault": {"code", "message", "detail"}}.

Run it as production does: gunicorn -c gunicorn.conf.py app:app
"""
import json
import os
import threading
import urllib.request

from flask import Flask, jsonify, request

app = Flask(__name__)

# The app's data: users, and what Flex Producers said in the chat (forwarded by amfgate).
users = {
    1: {"id": 1, "name": "Ann Lee", "email": "ann@example.com", "joined": "2019-03-04T09:00:00Z"},
    2: {"id": 2, "name": "Bob Roy", "email": "bob@example.com", "joined": "2021-11-30T17:45:00Z"},
}
chat_log = []
lock = threading.Lock()

AMFGATE = os.environ.get("AMFGATE_URL", "http://127.0.0.1:8080")
PUBLISH_TOKEN = os.environ.get("AMFGATE_PUBLISH_TOKEN", "")


def user_object(u):
    # "_explicitType" makes it a com.example.User on the Flex side ([RemoteClass]); a date
    # goes back as {"_date": ...}.
    return {"_explicitType": "com.example.User", "id": u["id"], "name": u["name"],
            "email": u["email"], "joined": {"_date": u["joined"]}}


def fault(code, message, detail="", status=200):
    return jsonify({"fault": {"code": code, "message": message, "detail": detail}}), status


def publish(destination, body, subtopic=None, headers=None):
    """Push to Flex Consumers through amfgate's publish endpoint."""
    data = json.dumps({"body": body, "subtopic": subtopic, "headers": headers or {}}).encode()
    req = urllib.request.Request(f"{AMFGATE}/publish/{destination}", data=data, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {PUBLISH_TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


@app.post("/amf/UserService/getUser")
def get_user():
    (user_id,) = request.json["args"]
    u = users.get(int(user_id))
    if u is None:
        return fault("App.UserNotFound", f"no user {user_id}", "UserService.getUser")
    return jsonify({"result": user_object(u)})


@app.post("/amf/UserService/listUsers")
def list_users():
    return jsonify({"result": [user_object(u) for u in users.values()]})


@app.post("/amf/UserService/saveUser")
def save_user():
    call = request.json
    if call["user"] is None or "editor" not in call["user"]["roles"]:
        return fault("App.NotAllowed", "only editors save users")
    (u,) = call["args"]  # {"_explicitType": "com.example.User", "id": ..., "joined": "..."}
    users[int(u["id"])] = {"id": int(u["id"]), "name": u["name"], "email": u["email"],
                           "joined": u["joined"]}
    publish("chat", f"{u['name']} was saved by {call['user']['name']}", "system")
    return jsonify({"result": user_object(users[int(u["id"])])})


@app.post("/amf/Chat/announce")
def announce():
    (text,) = request.json["args"]
    status = publish("chat", text, "announcements", {"from": "backend"})
    return jsonify({"result": status == 202})


@app.post("/amf/Chat/history")
def history():
    with lock:
        return jsonify({"result": list(chat_log)})


@app.post("/amf/_messages/chat")
def chat_message():
    # What Flex Producers sent to "chat", forwarded once by amfgate after it was published.
    m = request.json
    with lock:
        chat_log.append({"from": (m["user"] or {}).get("name"), "body": m["body"],
                         "subtopic": m["subtopic"]})
        del chat_log[:-100]
    return jsonify({"ok": True})
