"""Drive `coral mcp --http` with the official Python MCP client's Streamable HTTP transport.

Usage: python python_mcp_http_client.py PATH_TO_CORAL_BINARY

Starts the server on a free loopback port, then: three client sessions at once insert and search
memories and see each other's writes; resources and prompts are listed and read; a thread
created over MCP shows up in `coral://threads`; requests with a foreign Host or Origin are
refused; a non-loopback bind without a token is refused; with a token, a client without it is
refused and one with it works. Prints one summary line, exits non-zero on the first failed check.
"""

import asyncio
import json
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOKEN = "coral-test-token-0123456789abcdef"


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")


def structured(result):
    check(result.structured_content is not None, "a structuredContent object is returned")
    return result.structured_content


def start(coral, data, *extra):
    proc = subprocess.Popen(
        [coral, "--data-dir", data, "-q", "mcp", "--http", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    check(line, f"the server printed its address (stderr: {proc.stderr.read() if not line else ''})")
    info = json.loads(line)
    check(info["endpoint"] == "/mcp", f"endpoint is /mcp: {info}")
    return proc, f"http://{info['listening']}/mcp"


def raw_post(url, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for k, v in headers.items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def session_work(url, n):
    """One client: insert a memory of its own, then find the others' too."""
    # Distinct texts: near-duplicates would merge into one memory.
    facts = ["用户喜欢喝冰镇拿铁咖啡", "the staging server restarts at 04:00 UTC",
             "周五下午三点开产品周会"]
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "coral-memory", "server name is coral-memory")
            tools = await session.list_tools()
            check(any(t.name == "memory_search" for t in tools.tools), "tools listed")
            r = await session.call_tool(
                "memory_insert", {"content": f"{facts[n]} (fact{n})"}
            )
            check(not r.is_error and structured(r)["inserted"] is True,
                  f"client {n} inserts: {structured(r)}")
            return structured(r)["item_id"]


async def main(coral):
    checks = 0
    with tempfile.TemporaryDirectory() as data:
        proc, url = start(coral, data)
        try:
            ids = await asyncio.gather(*(session_work(url, n) for n in range(3)))
            check(len(set(ids)) == 3, f"three distinct memories: {ids}")
            checks += 1

            async with streamable_http_client(url) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for n in range(3):
                        r = await session.call_tool(
                            "memory_search", {"query": f"fact{n}", "top_k": 1}
                        )
                        hits = structured(r)["hits"]
                        check(hits and hits[0]["id"] == ids[n], f"client {n}'s memory is found")
                    checks += 1

                    listed = await session.list_resources()
                    uris = {str(r.uri) for r in listed.resources}
                    check(
                        {"coral://stats", "coral://report", "coral://threads",
                         "coral://memories/recent"} <= uris,
                        f"resources listed: {uris}",
                    )
                    templates = await session.list_resource_templates()
                    names = {t.name for t in templates.resource_templates}
                    check({"thread", "timeline"} <= names, f"templates: {names}")
                    stats = json.loads((await session.read_resource("coral://stats")).contents[0].text)
                    check(stats["stats"]["total"] == 3, f"coral://stats counts 3: {stats}")
                    recent = json.loads(
                        (await session.read_resource("coral://memories/recent")).contents[0].text
                    )
                    check(recent["count"] == 3, f"recent memories: {recent}")
                    checks += 1

                    r = await session.call_tool(
                        "thread_create", {"title": "发布 v2 / ship v2", "summary": "plan"}
                    )
                    thread = structured(r)
                    check(not r.is_error, f"thread created: {thread}")
                    thread_id = thread["thread"]["thread_id"] if "thread" in thread else thread["thread_id"]
                    board = json.loads((await session.read_resource("coral://threads")).contents[0].text)
                    check("ship v2" in json.dumps(board, ensure_ascii=False), f"board: {board}")
                    one = json.loads(
                        (await session.read_resource(f"coral://thread/{thread_id}")).contents[0].text
                    )
                    check(thread_id in json.dumps(one), f"one thread: {one}")
                    try:
                        await session.read_resource("coral://thread/no-such-thread")
                        check(False, "an unknown thread is an error")
                    except Exception as e:  # the SDK raises McpError
                        check("no thread" in str(e), f"unknown thread error: {e}")
                    checks += 1

                    prompts = await session.list_prompts()
                    check({p.name for p in prompts.prompts} >= {"recall", "thread_board"},
                          "prompts listed")
                    recall = await session.get_prompt("recall", {"question": "staging server restart"})
                    text = recall.messages[0].content.text
                    check("04:00" in text and "Question:" in text, f"recall prompt: {text}")
                    board = await session.get_prompt("thread_board", {})
                    check("ship v2" in board.messages[0].content.text, "thread_board prompt")
                    checks += 1

            check(raw_post(url, {"Host": "evil.example"}) == 403, "a foreign Host is refused")
            check(raw_post(url, {"Origin": "https://evil.example"}) == 403,
                  "a foreign Origin is refused")
            checks += 1
        finally:
            proc.terminate()
            proc.wait(timeout=20)

    with tempfile.TemporaryDirectory() as data:
        refused = subprocess.run(
            [coral, "--data-dir", data, "-q", "mcp", "--http", "--host", "0.0.0.0", "--port", "0"],
            capture_output=True, text=True, timeout=30,
        )
        check(refused.returncode == 2 and "without a token" in refused.stderr,
              f"no non-loopback bind without a token: {refused.returncode} {refused.stderr}")
        checks += 1

        proc, url = start(coral, data, "--token", TOKEN)
        try:
            check(raw_post(url, {}) == 401, "a request without the token is refused")
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
                async with streamable_http_client(url, http_client=client) as (read, write, *_):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        r = await session.call_tool("coral_stats", {})
                        check(not r.is_error, "a client with the token is served")
            checks += 1
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(f"python mcp streamable http client: {checks} passed, 0 failed")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1]))
