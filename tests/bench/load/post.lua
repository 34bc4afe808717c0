-- wrk script: POSTs the recorded AMF request body in AMF_BODY (or another body of the type in
-- AMF_CONTENT_TYPE) and reports latency percentiles in one machine-readable line.
local f = assert(io.open(os.getenv("AMF_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = os.getenv("AMF_CONTENT_TYPE") or "application/x-amf"
local cookie = os.getenv("AMF_COOKIE")
if cookie and cookie ~= "" then wrk.headers["Cookie"] = cookie end

function done(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.status + summary.errors.timeout, summary.requests))
end
