#!/usr/bin/env python3
"""Two `nvfp4 serve` replicas behind nginx (docs/SCALING.md's configuration), through the
official OpenAI Python client.

    python tools/test_serve_nginx.py build/nvfp4 MODEL.gguf [serve flags...]

Starts two servers on free loopback ports and nginx (Debian's package, as a foreground process
with its own prefix in a temporary directory) in front of them, then checks: /health through
nginx; chat and completions, whole and streamed, give the same text through nginx as from each
replica directly; a stream arrives in pieces while it is generated (SSE not buffered); 16
concurrent seeded requests through nginx equal each one alone, and both replicas served some.
Skips (exit 0, saying so) only when nginx is not installed. Bounded (everything is killed after
300 s).
"""
import concurrent.futures as cf
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import openai

from test_serve_openai import start

CONF = """
# The configuration of docs/SCALING.md, with the paths of a private prefix.
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;

  upstream nvfp4 {{
    least_conn;
    server 127.0.0.1:{p1} max_fails=3 fail_timeout=10s;
    server 127.0.0.1:{p2} max_fails=3 fail_timeout=10s;
    keepalive 32;
    keepalive_timeout 1s;
  }}
  server {{
    listen 127.0.0.1:{port};
    client_max_body_size 8m;
    location / {{
      proxy_pass http://nvfp4;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_buffering off;
      proxy_cache off;
      proxy_request_buffering off;
      proxy_connect_timeout 5s;
      proxy_send_timeout 600s;
      proxy_read_timeout 600s;
      proxy_next_upstream error timeout http_503;
    }}
  }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(port, name):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer k"})
    text = urllib.request.urlopen(req).read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else -1


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        return -9


def main():
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not nginx:
        print("test_serve_nginx: SKIPPED: nginx is not installed (Debian package nginx; scripts/setup.sh installs it)")
        return
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    tmp = tempfile.mkdtemp(prefix="nvfp4-nginx-")
    os.chmod(tmp, 0o777)  # the worker runs as nobody when the master is root
    procs, rcs = [], []
    killer = threading.Timer(300, lambda: [p.kill() for p in procs])
    killer.start()
    checks = 0
    try:
        s1, p1 = start(binary, model, extra)
        procs.append(s1)
        s2, p2 = start(binary, model, extra)
        procs.append(s2)
        port = free_port()
        with open(f"{tmp}/nginx.conf", "w") as f:
            f.write(CONF.format(tmp=tmp, p1=p1, p2=p2, port=port))
        ng = subprocess.Popen([nginx, "-p", tmp, "-c", f"{tmp}/nginx.conf"], stderr=subprocess.PIPE, text=True)
        procs.append(ng)
        for _ in range(100):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health").status == 200:
                    break
            except Exception:
                time.sleep(0.1)
        else:
            raise SystemExit("nginx did not come up: " + open(f"{tmp}/error.log").read())
        checks += 1

        def client(p):
            return openai.OpenAI(base_url=f"http://127.0.0.1:{p}/v1", api_key="k", max_retries=0, timeout=120)
        via, one, two = client(port), client(p1), client(p2)
        name = via.models.list().data[0].id
        msgs = [{"role": "user", "content": "Name a large city."}]

        def chat(c, **kw):
            return c.chat.completions.create(model=name, messages=msgs, max_tokens=12, temperature=0, **kw)
        texts = [chat(c).choices[0].message.content for c in (via, one, two)]
        assert texts[0] == texts[1] == texts[2], texts
        comp = [c.completions.create(model=name, prompt="The sea is", max_tokens=10, temperature=0).choices[0].text
                for c in (via, one, two)]
        assert comp[0] == comp[1] == comp[2], comp
        checks += 2

        # Streamed through nginx: the same text, in pieces that arrive while it is generated.
        t0, times, parts = time.time(), [], []
        for ch in chat(via, stream=True):
            if ch.choices and ch.choices[0].delta.content:
                times.append(time.time() - t0)
                parts.append(ch.choices[0].delta.content)
        assert "".join(parts) == texts[0], (parts, texts[0])
        assert len(parts) > 1 and times[0] < times[-1] - 0.02, f"stream arrived at once: {times}"
        checks += 1

        def seeded(c, i):
            return c.completions.create(model=name, prompt=f"Story {i}:", max_tokens=4 + i % 6, temperature=0.9,
                                        seed=i, top_p=0.9).choices[0].text
        alone = [seeded(one, i) for i in range(16)]
        before = [metric(p, "nvfp4_generations_total") for p in (p1, p2)]
        with cf.ThreadPoolExecutor(8) as ex:
            together = list(ex.map(lambda i: seeded(via, i), range(16)))
        assert together == alone, (together, alone)
        after = [metric(p, "nvfp4_generations_total") for p in (p1, p2)]
        served = [a - b for a, b in zip(after, before)]
        assert all(s > 0 for s in served) and sum(served) == 16, f"requests per replica: {served}"
        checks += 2
        print(f"test_serve_nginx: requests per replica {served[0]:.0f}/{served[1]:.0f}")
    finally:
        killer.cancel()
        rcs = [stop(p) for p in reversed(procs)]
        shutil.rmtree(tmp, ignore_errors=True)
    assert all(rc == 0 for rc in rcs[1:]), f"server exit status {rcs}"
    print(f"test_serve_nginx: {checks} checks passed (nginx in front of 2 replicas, openai {openai.__version__})")


if __name__ == "__main__":
    main()
