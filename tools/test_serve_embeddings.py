#!/usr/bin/env python3
"""POST /v1/embeddings of `nvfp4 serve` against the official OpenAI Python client (PyPI `openai`).

    python tools/test_serve_embeddings.py build/nvfp4 MODEL.gguf [--quantize]

MODEL is the bundled SmolLM2-135M-Instruct (hidden size 576). Checks: the client's default
(base64) and encoding_format "float" give the same vectors, of the model's width and unit norm; a
text's embedding is the same alone, in a batch, by its token ids, and while generations run
(4 slots); "pooling": "last" differs from the mean; "pooling": "none" gives every token's row,
whose mean and last row are the pooled ones to the bit; texts that differ get different vectors and
a paraphrase is nearer than an unrelated text; bad input is a 400 naming the field.
Exit 0 when every check passes.
"""
import concurrent.futures
import json
import math
import os
import struct
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import bad_request, client, stop  # noqa: E402
from test_serve_openai import start  # noqa: E402

TEXTS = ["The cat sat on the mat.", "A cat was sitting on the mat.", "Quarterly revenue rose by 4 percent.",
         "def f(x): return x + 1"]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [f32(x / n) for x in v]


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    checks = 0
    p, port = start(binary, model, extra, parallel=4)
    try:
        c = client(port)
        r = c.embeddings.create(model="m", input=TEXTS)  # the client asks for base64
        vecs = [d.embedding for d in r.data]
        assert [d.index for d in r.data] == list(range(len(TEXTS)))
        assert all(len(v) == 576 for v in vecs), [len(v) for v in vecs]
        assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vecs)
        assert r.usage.prompt_tokens > len(TEXTS), r.usage
        checks += 3
        f = c.embeddings.create(model="m", input=TEXTS, encoding_format="float")
        assert [d.embedding for d in f.data] == vecs
        checks += 1
        alone = [c.embeddings.create(model="m", input=t).data[0].embedding for t in TEXTS]
        assert alone == vecs, "a text's embedding differs alone and in a batch"
        checks += 1
        req = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", data=json.dumps({"content": TEXTS[0]}).encode(),
                                     headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
        ids = json.loads(urllib.request.urlopen(req).read())["tokens"]
        assert c.embeddings.create(model="m", input=ids).data[0].embedding == vecs[0]
        checks += 1
        # Beside generations: the same bits.
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            gens = [ex.submit(c.chat.completions.create, model="m", max_tokens=32, temperature=0,
                              messages=[{"role": "user", "content": f"Count to {k}."}]) for k in range(4)]
            embs = [ex.submit(c.embeddings.create, model="m", input=t) for t in TEXTS]
            got = [e.result().data[0].embedding for e in embs]
            for g in gens:
                assert g.result().choices[0].message.content
        assert got == vecs, "an embedding changed under load"
        checks += 1
        last = c.embeddings.create(model="m", input=TEXTS[0], extra_body={"pooling": "last"}).data[0].embedding
        assert last != vecs[0] and len(last) == 576
        checks += 1
        # "pooling": "none": every token's row, unscaled; their mean and the last row, scaled as the
        # server scales, are the pooled embeddings to the bit (sums in double, in token order).
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                     data=json.dumps({"input": ids, "pooling": "none"}).encode(),
                                     headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
        rows = json.loads(urllib.request.urlopen(req).read())["data"][0]["embedding"]
        assert len(rows) == len(ids) and all(len(r) == 576 for r in rows), (len(rows), len(ids))
        assert max(abs(math.sqrt(sum(x * x for x in r)) - 1) for r in rows) > 0.1, "rows are not unscaled"
        mean = [f32(sum(r[i] for r in rows) / len(rows)) for i in range(576)]
        assert unit(mean) == vecs[0], "the rows' mean differs from pooling mean"
        assert unit(rows[-1]) == last, "the last row differs from pooling last"
        flat = c.embeddings.create(model="m", input=ids, extra_body={"pooling": "none"}).data[0].embedding
        assert flat == [x for r in rows for x in r], "base64 rows differ from float rows"
        checks += 4
        assert len({tuple(v) for v in vecs}) == len(vecs)
        assert cos(vecs[0], vecs[1]) > cos(vecs[0], vecs[2]), (cos(vecs[0], vecs[1]), cos(vecs[0], vecs[2]))
        checks += 2
        for kw, param in ((dict(input=""), "input"), (dict(input=[]), "input"), (dict(input=["a", 3]), "input[1]"),
                          (dict(input=[[1, -2]]), "input[0]"), (dict(input="a", dimensions=8), "dimensions"),
                          (dict(input="a", encoding_format="int8"), "encoding_format"),
                          (dict(input="a " * 2000), "input"), (dict(input="a", extra_body={"pooling": "cls"}), "pooling")):
            checks += bad_request(lambda: c.embeddings.create(model="m", **kw), param)
    finally:
        stop(p)
    print(f"test_serve_embeddings: {checks} checks passed")


if __name__ == "__main__":
    main()
