"""Runs the original Python Coral (three_dog_coral) for Coral's interoperability tests.

Coral's own code, not the original's: it imports the original from PYTHONPATH and calls its
public API, so the tests in ../interop.rs can have the original write, read and search a
memory_data/ directory and advance threads next to Coral. Run it in the directory that holds
coral_config.json (the original resolves memory_data/ paths from the working directory).

    python3 driver.py write            stdin: one JSON memory per line; prints a summary
    python3 driver.py search           stdin: one JSON {"query", "top_k"} per line; one line out each
    python3 driver.py contents         prints every memory the original sees, and its stats
    python3 driver.py advance ID N TAG MS
                                       advances thread ID N times, MS milliseconds apart;
                                       one acknowledgement per step
    python3 driver.py thread ID        prints the original's view of thread ID

Every answer is one JSON object per line on stdout; failures go to stderr with exit code 1,
and a missing numpy or original exits with code 3 and says what to install.
"""

import asyncio
import json
import os
import sys
import time

CONFIG = os.path.abspath("coral_config.json")


def fail(code, message):
    sys.stderr.write("driver.py: " + message + "\n")
    sys.exit(code)


try:
    import numpy  # noqa: F401  (the original needs it; say so before its import fails)
except ImportError:
    fail(3, "numpy is not installed for " + sys.executable + ": run `python3 -m pip install numpy`")
try:
    import three_dog_coral as original
except ImportError as exc:
    fail(3, "cannot import the original three_dog_coral (" + str(exc) + "): set PYTHONPATH to "
         "../shared/upstream/coral-memory-py")


def emit(value):
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def open_coral():
    if not os.path.exists(CONFIG):
        fail(1, "no coral_config.json in " + os.getcwd())
    # The module's tool functions use this singleton: open it on our config first.
    return original.get_coral(CONFIG)


def tier_counts(coral):
    return {"hot": len(coral.hot_memory), "warm": len(coral.warm_memory), "cold": coral._count_cold()}


async def write(lines):
    """Insert each memory; then backdate it (timestamp, last access, access count), so that
    the original's own tier checks at the next inserts move it to warm or cold as they would
    over weeks of use. Ends with the original's memory_flush tool, as a user would."""
    coral = open_coral()
    now = time.time()
    inserted, merged = [], 0
    for line in lines:
        m = json.loads(line)
        item = await coral.insert(m["content"], importance=float(m.get("importance", 0.0)))
        if item is None:
            merged += 1
            continue
        item.timestamp = now - float(m.get("age_seconds", 0.0))
        item.last_access = now - float(m.get("idle_seconds", m.get("age_seconds", 0.0)))
        item.access_count = int(m.get("access_count", 1))
        inserted.append(item.item_id)
    before = tier_counts(coral)
    flushed = await original.memory_flush()
    emit({"inserted": len(inserted), "merged": merged, "ids": inserted, "before_flush": before,
          "after_flush": tier_counts(coral), "hot_persisted": flushed["hot_persisted"],
          "vectors": len(coral.vector_store)})


async def search(lines):
    """The original's own ranking (ThreeDogCoral.search), unrounded, with the clock it used."""
    coral = open_coral()
    for line in lines:
        q = json.loads(line)
        at = time.time()
        hits = await coral.search(q["query"], top_k=int(q.get("top_k", 10)))
        emit({"query": q["query"], "now": at,
              "hits": [{"id": h.item_id, "score": h.score, "scores": h.scores} for h in hits]})


async def contents():
    """Every memory the original holds after opening the directory: its tiers and vectors."""
    coral = open_coral()
    cold = await coral._read_all_cold()
    emit({"hot": [m.item_id for m in coral.hot_memory],
          "warm": [m.item_id for m in coral.warm_memory],
          "cold": [m.item_id for m in cold],
          "vectors": len(coral.vector_store),
          "stats": coral.stats()})


async def advance(thread_id, count, tag, pause_ms):
    """Advance one thread `count` times through the original's thread API. A step is
    acknowledged only once the original says it is on disk (flush() leaves the threads clean:
    the original skips a write silently when its lock file times out, so retry until then)."""
    coral = open_coral()
    for i in range(count):
        text = tag + " step " + str(i)
        t = await coral.thread_advance(thread_id, text, by=tag)
        step = t.steps[-1]
        for _ in range(100):
            await coral.flush()
            if not coral._threads_dirty:
                break
        else:
            fail(1, "the original could not write its threads file")
        emit({"step_id": step["step_id"], "text": step["text"]})
        await asyncio.sleep(pause_ms / 1000.0)


async def thread(thread_id):
    coral = open_coral()
    found = await coral.thread_status(thread_id=thread_id)
    if not found:
        fail(1, "the original has no thread " + thread_id)
    emit(coral._thread_view(found[0]))


def main():
    if len(sys.argv) < 2:
        fail(2, "usage: driver.py write|search|contents|advance|thread ...")
    command = sys.argv[1]
    if command == "write":
        asyncio.run(write(sys.stdin.read().splitlines()))
    elif command == "search":
        asyncio.run(search(sys.stdin.read().splitlines()))
    elif command == "contents":
        asyncio.run(contents())
    elif command == "advance" and len(sys.argv) == 6:
        asyncio.run(advance(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
    elif command == "thread" and len(sys.argv) == 3:
        asyncio.run(thread(sys.argv[2]))
    else:
        fail(2, "unknown command or wrong arguments: " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
