"""Drive `coral mcp` with the official Python MCP client (package `mcp`).

Usage: python python_mcp_client.py PATH_TO_CORAL_BINARY

Launches the server over stdio, initialises, lists the tools, inserts and searches Chinese and
English memories, and checks the structured results. Prints one summary line and exits non-zero
on the first failed check.
"""

import asyncio
import json
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = {
    "memory_search",
    "memory_insert",
    "memory_flush",
    "memory_delete",
    "memory_mark_important",
    "coral_stats",
    "retrieve_for_turn",
    "browse_memory",
    "open_memory",
    "read_timeline",
}


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")


def structured(result):
    """The structured result, checked against the JSON text content."""
    check(result.structured_content is not None, "a structuredContent object is returned")
    text = json.loads(result.content[0].text)
    check(text == result.structured_content, "text content and structuredContent agree")
    return result.structured_content


async def main(coral):
    checks = 0
    with tempfile.TemporaryDirectory() as data:
        params = StdioServerParameters(
            command=coral, args=["--data-dir", data, "-q", "mcp"], cwd=data
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check(init.server_info.name == "coral-memory", "server name is coral-memory")
                checks += 1

                tools = await session.list_tools()
                names = {t.name for t in tools.tools}
                check(EXPECTED_TOOLS <= names, f"tools listed: {sorted(names)}")
                checks += 1

                memories = [
                    ("用户喜欢喝冰镇拿铁咖啡，不加糖", 0.9),
                    ("Translate product manuals in a formal register", 0.6),
                    ("周五下午三点开产品周会", 0.5),
                    ("The user prefers metric units and 24-hour time", 0.7),
                ]
                ids = {}
                for content, importance in memories:
                    r = await session.call_tool(
                        "memory_insert", {"content": content, "importance": importance}
                    )
                    check(not r.is_error, f"insert {content!r} succeeds")
                    s = structured(r)
                    check(s["inserted"] is True and s["persisted"] is True, "insert result shape")
                    ids[content] = s["item_id"]
                    checks += 1

                for query, expected in [
                    ("拿铁咖啡", memories[0][0]),
                    ("周会 几点", memories[2][0]),
                    ("formal manuals translation", memories[1][0]),
                    ("metric units", memories[3][0]),
                ]:
                    r = await session.call_tool("memory_search", {"query": query, "top_k": 2})
                    s = structured(r)
                    check(s["count"] >= 1, f"search {query!r} finds something")
                    top = s["hits"][0]
                    check(top["id"] == ids[expected], f"search {query!r} ranks {expected!r} first")
                    check(set(top["scores"]) == {"vector", "jaccard", "time", "bm25"},
                          "component scores (hybrid mode reports BM25)")
                    check(top["content"] == expected and top["truncated"] is False, "hit content")
                    checks += 1

                r = await session.call_tool("memory_insert", {"content": "x", "importance": 1.5})
                check(r.is_error, "importance outside 0..1 is a tool error")
                check("0 to 1" in structured(r)["error"], "the error says the range")
                checks += 1

                # The timeline's read tools answer with a status, never an empty "success".
                r = await session.call_tool(
                    "retrieve_for_turn",
                    {"query": "昨天下午讨论的方案", "time_hint": {"date_label": "2026-04-09",
                                                          "time_of_day": "下午"}},
                )
                s = structured(r)
                check(not r.is_error and s["status"] == "empty" and s["ok"] is True,
                      f"retrieve_for_turn on an empty timeline: {s}")
                r = await session.call_tool("browse_memory", {"keyword_match": "some"})
                s = structured(r)
                check(s["status"] == "invalid_filter" and s["ok"] is False,
                      f"browse_memory with a bad keyword_match: {s}")
                checks += 1

                r = await session.call_tool("coral_stats", {})
                stats = structured(r)["stats"]
                check(stats["total"] == 4 and stats["embedder"] == "hash", f"stats {stats}")
                checks += 1
    print(f"python mcp client: {checks} passed, 0 failed")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1]))
