"""Drive `coral mcp --project auto` with the official Python MCP client sending MCP roots.

Usage: python python_mcp_roots.py PATH_TO_CORAL_BINARY

Over stdio and over Streamable HTTP, a client whose `list_roots_callback` names a git work tree
(a subdirectory of it, in fact) inserts a memory without a project: the memory carries the
project of the work tree's root, `<base name>-<first 8 hex digits of the SHA-256 of its real
path>`, computed here independently. The client then changes its roots and says so
(`notifications/roots/list_changed`): the next memory carries the new workspace's project. A
client without roots gets the project of the directory the server was launched in. Prints one
summary line, exits non-zero on the first failed check.
"""

import asyncio
import warnings
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

# The SDK warns that roots will be deprecated by a later protocol; they are what clients use today.
warnings.filterwarnings("ignore", message="The roots capability is deprecated")


# How many times `work` switches the roots after the first change.
SWITCHES = 12


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")


def expected(path):
    real = os.path.realpath(path)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()
    return os.path.basename(real).replace(" ", "-") + "-" + digest[:8]


def uri(path):
    return "file://" + urllib.parse.quote(os.path.realpath(path))


def workspaces(tmp):
    shop = os.path.join(tmp, "shop")
    os.makedirs(os.path.join(shop, "src"))
    subprocess.run(["git", "init", "-q", shop], check=True)
    bakery = os.path.join(tmp, "the bakery")
    os.makedirs(bakery)
    launch = os.path.join(tmp, "launch")
    os.makedirs(launch)
    return shop, bakery, launch


async def work(session, roots, shop, bakery, label):
    """Insert under the first roots, change them, insert again; check both projects."""
    await session.initialize()
    r = await session.call_tool("memory_insert", {"content": f"The menu lists iced latte first ({label})"})
    check(not r.is_error, f"{label}: insert: {r}")
    found = await session.call_tool("memory_search", {"query": f"iced latte menu {label}"})
    hits = found.structured_content["hits"]
    check(hits and hits[0]["project"] == expected(shop),
          f"{label}: tagged with the roots' git root {expected(shop)}: {hits}")
    roots[:] = [bakery]
    await session.send_roots_list_changed()
    # The server asks for the new roots; a call made meanwhile waits for them.
    r = await session.call_tool("memory_insert", {"content": f"Croissants come from the bakery ({label})"})
    check(not r.is_error, f"{label}: second insert: {r}")
    found = await session.call_tool("memory_search", {"query": f"croissants bakery {label}"})
    hits = found.structured_content["hits"]
    check(hits and hits[0]["project"] == expected(bakery),
          f"{label}: after roots/list_changed, tagged {expected(bakery)}: {hits}")
    # Switching back and forth, each insert sent right behind its announcement: every one is
    # tagged with the roots announced before it (the server counts announcements in order).
    inserted = []
    for n in range(SWITCHES):
        place = shop if n % 2 == 0 else bakery
        roots[:] = [place]
        await session.send_roots_list_changed()
        words = hashlib.sha256(f"{label} {n}".encode()).hexdigest()
        content = f"Switch {n} {' '.join(words[i:i + 8] for i in range(0, 48, 8))}"
        r = await session.call_tool("memory_insert", {"content": content})
        check(not r.is_error, f"{label}: switch {n}: {r}")
        inserted.append((content, expected(place)))
    return inserted


def callback(roots):
    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=uri(p), name="workspace") for p in roots])
    return list_roots


async def over_stdio(coral, tmp):
    shop, bakery, launch = workspaces(os.path.join(tmp, "stdio"))
    data = os.path.join(tmp, "stdio", "data")
    roots = [os.path.join(shop, "src")]
    params = StdioServerParameters(
        command=coral, args=["--data-dir", data, "-q", "mcp", "--project", "auto"], cwd=launch
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, list_roots_callback=callback(roots)) as session:
            switched = await work(session, roots, shop, bakery, "stdio")
    # Without roots: the launch directory (not a git work tree) names the project.
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("memory_insert", {"content": "Backups run at midnight"})
    projects = exported(coral, data)
    check(projects.get("Backups run at midnight") == expected(launch),
          f"no roots: the launch directory's project {expected(launch)}: {projects}")
    check_switched(projects, switched, "stdio")


def exported(coral, data):
    out = subprocess.run([coral, "--data-dir", data, "-q", "export"],
                         capture_output=True, text=True, check=True)
    return {json.loads(l)["content"]: json.loads(l).get("project") for l in out.stdout.splitlines()}


def check_switched(projects, switched, label):
    wrong = [(c, p, projects.get(c)) for c, p in switched if projects.get(c) != p]
    check(not wrong, f"{label}: inserts right after roots/list_changed tagged with old roots: {wrong}")


async def over_http(coral, tmp):
    shop, bakery, launch = workspaces(os.path.join(tmp, "http"))
    data = os.path.join(tmp, "http", "data")
    proc = subprocess.Popen(
        [coral, "--data-dir", data, "-q", "mcp", "--http", "--port", "0", "--project", "auto"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=launch,
    )
    try:
        info = json.loads(proc.stdout.readline())
        url = f"http://{info['listening']}/mcp"
        roots = [shop]
        async with streamable_http_client(url) as (read, write, *_):
            async with ClientSession(read, write, list_roots_callback=callback(roots)) as session:
                switched = await work(session, roots, shop, bakery, "http")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    check_switched(exported(coral, data), switched, "http")


async def main(coral):
    with tempfile.TemporaryDirectory() as tmp:
        await over_stdio(coral, tmp)
        await over_http(coral, tmp)
    print("python MCP client roots: OK (stdio and Streamable HTTP; roots, list_changed, launch directory)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1]))
