"""``ilab-memory-mcp``: the stdio server's console script, started the way MCP clients start
servers, from the agent's own folder (not this repository), with no PYTHONPATH."""

import os
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from tests.mcp.test_stdio import call, run

SCRIPT = Path(sys.executable).parent / "ilab-memory-mcp"


def test_the_console_script_serves_the_memory_from_any_folder(tmp_path):
    agent_folder = tmp_path / "agent"
    agent_folder.mkdir()
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    parameters = StdioServerParameters(command=str(SCRIPT), args=["--db", "mem.db", "--user", "alice"],
                                       cwd=str(agent_folder), env=env)

    async def script(session):
        await call(session, "mem_save", title="Editor", content="Uses helix.")
        return await call(session, "mem_search", query="helix")

    (found, junk), stderr = run(parameters, script, tmp_path)
    assert junk == [] and "Traceback" not in stderr
    assert [r["title"] for r in found.structured_content["results"]] == ["Editor"]
    assert (agent_folder / "mem.db").exists()  # relative to where the agent started it
