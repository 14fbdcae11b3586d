#!/usr/bin/env python3
"""`nvfp4 serve` against the official OpenAI Python client (PyPI `openai`).

    python tools/test_serve_openai.py build/nvfp4 MODEL.gguf [--quantize]

Starts the server on 127.0.0.1 (a free port), then: chat and completions, whole and streamed
(the streamed text equals the whole one), concurrent requests with seeds give what each gives
alone, logprobs/top_logprobs in the client's types (whole and streamed alike, greedy = the best),
the prompt cache's cached_tokens, the errors the client raises (400 naming the parameter, 401,
404), SIGTERM exits 0.
Exit 0 when every check passes; bounded in time (the server is killed after 300 s).
"""
import concurrent.futures as cf
import re
import signal
import subprocess
import sys
import time
import urllib.request

import openai


def start(binary, model, extra, parallel=4, port=0, threads=2, ctx=512):
    cmd = [binary, "serve", "-m", model, "--port", str(port), "--ctx", str(ctx), "--parallel", str(parallel),
           "--api-key", "k", "-t", str(threads)] + extra
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port = None
    t0 = time.time()
    while port is None and time.time() - t0 < 120:
        line = p.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
    assert port, "server did not start"
    while time.time() - t0 < 300:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/health").status == 200:
                return p, port
        except Exception:
            time.sleep(0.2)
    raise SystemExit("server not ready")


def main():
    binary, model = sys.argv[1], sys.argv[2]
    p, port = start(binary, model, sys.argv[3:])
    checks = 0
    try:
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=120)
        name = c.models.list().data[0].id
        msgs = [{"role": "user", "content": "What is the capital of France?"}]
        whole = c.chat.completions.create(model=name, messages=msgs, max_tokens=16, temperature=0)
        text = whole.choices[0].message.content
        assert whole.usage.completion_tokens > 0 and text, whole
        parts, usage = [], None
        for ch in c.chat.completions.create(model=name, messages=msgs, max_tokens=16, temperature=0, stream=True,
                                            stream_options={"include_usage": True}):
            if ch.usage:
                usage = ch.usage
            if ch.choices and ch.choices[0].delta.content:
                parts.append(ch.choices[0].delta.content)
        assert "".join(parts) == text, (parts, text)
        assert usage and usage.completion_tokens == whole.usage.completion_tokens
        checks += 2
        comp = c.completions.create(model=name, prompt="Once upon a time", max_tokens=12, temperature=0)
        streamed = "".join(x.choices[0].text for x in c.completions.create(
            model=name, prompt="Once upon a time", max_tokens=12, temperature=0, stream=True))
        assert streamed == comp.choices[0].text, (streamed, comp.choices[0].text)
        checks += 1

        def one(i):
            return c.completions.create(model=name, prompt=f"Story number {i}:", max_tokens=8 + i % 5,
                                        temperature=0.8, seed=i, top_p=0.9).choices[0].text
        alone = [one(i) for i in range(8)]
        with cf.ThreadPoolExecutor(8) as ex:
            together = list(ex.map(one, range(8)))
        assert alone == together, (alone, together)
        checks += 1

        # logprobs: one entry per token, the greedy token is the most likely, streamed == whole.
        lp = c.chat.completions.create(model=name, messages=msgs, max_tokens=8, temperature=0, logprobs=True,
                                       top_logprobs=3)
        content = lp.choices[0].logprobs.content
        assert len(content) == lp.usage.completion_tokens, (len(content), lp.usage)
        for t in content:
            assert len(t.top_logprobs) == 3 and t.logprob <= 0, t
            assert t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == t.logprob, t
            assert [x.logprob for x in t.top_logprobs] == sorted((x.logprob for x in t.top_logprobs), reverse=True)
            assert t.bytes and all(0 <= b < 256 for b in t.bytes), t
        streamed_lp = []
        for ch in c.chat.completions.create(model=name, messages=msgs, max_tokens=8, temperature=0, logprobs=True,
                                            top_logprobs=3, stream=True):
            if ch.choices and ch.choices[0].logprobs:
                streamed_lp += ch.choices[0].logprobs.content
        assert [(t.token, t.logprob) for t in streamed_lp] == [(t.token, t.logprob) for t in content]
        legacy = c.completions.create(model=name, prompt="Once upon a time", max_tokens=6, temperature=0, logprobs=2)
        lpl = legacy.choices[0].logprobs
        assert len(lpl.tokens) == len(lpl.token_logprobs) == len(lpl.top_logprobs) == legacy.usage.completion_tokens
        assert all(max(d.values()) == v for d, v in zip(lpl.top_logprobs, lpl.token_logprobs)), lpl
        checks += 2

        # The prompt cache: a second request with the same system prompt reuses its tokens.
        system = {"role": "system", "content": "You answer questions about geography in one sentence, plainly."}
        first = c.chat.completions.create(model=name, messages=[system, msgs[0]], max_tokens=4, temperature=0)
        again = c.chat.completions.create(model=name, messages=[system, {"role": "user", "content": "And Spain?"}],
                                          max_tokens=4, temperature=0)
        cached = again.usage.prompt_tokens_details.cached_tokens
        assert 10 < cached < again.usage.prompt_tokens, (first.usage, again.usage)
        checks += 1

        for kwargs, param in [({"max_tokens": -1}, "max_tokens"), ({"temperature": -0.5}, "temperature"),
                              ({"top_p": 0}, "top_p"), ({"n": 2}, "n")]:
            try:
                c.completions.create(model=name, prompt="x", **kwargs)
                raise AssertionError(f"{kwargs} accepted")
            except openai.BadRequestError as e:
                assert e.body["param"] == param, e.body
                checks += 1
        try:
            openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0).models.list()
            raise AssertionError("wrong key accepted")
        except openai.AuthenticationError:
            checks += 1
        try:
            c.post("/nothing", cast_to=object, body={})
            raise AssertionError("unknown route answered")
        except openai.NotFoundError:
            checks += 1
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = -9
    assert rc == 0, f"exit status {rc}"
    print(f"test_serve_openai: {checks + 1} checks passed (openai {openai.__version__})")


if __name__ == "__main__":
    main()
