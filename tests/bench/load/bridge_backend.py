"""The load script's backend for the bridge case: one Flask route that answers the bridged
AMF echo, POSTed by amfgate or straight by wrk with the same JSON. Run by Debian's gunicorn."""
from flask import Flask, jsonify, request

app = Flask(__name__)


@app.post("/amf/Bench/echo")
def echo():
    return jsonify({"result": request.json["args"][0]})
