"""What the tests of `nvfp4 serve` share (tools/test_serve_*.py): the OpenAI client of a server
started by test_serve_openai.start, stopping it, one whole chat request, a /metrics value, and a
request that must be a 400 naming a field."""
import signal
import subprocess
import urllib.request

import openai


def client(port):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=300)


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = -9
    assert rc == 0, f"exit status {rc}"


def one(c, kw):
    """A whole chat reply: its text and finish reason."""
    r = c.chat.completions.create(model="m", **kw)
    return r.choices[0].message.content, r.choices[0].finish_reason


def metric(port, name):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer k"})
    for line in urllib.request.urlopen(req).read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def bad_request(fn, param):
    """fn() must raise the client's BadRequestError naming `param`, in OpenAI's error shape. Returns 1 (a check)."""
    try:
        fn()
    except openai.BadRequestError as e:
        assert e.body["param"] == param, (param, e.body)
        assert e.body["type"] == "invalid_request_error", e.body
        return 1
    raise AssertionError(f"accepted; expected a 400 naming {param}")
