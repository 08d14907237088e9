"""``ilab-memory-mcp``: the stdio server's console script, started the way MCP clients start
servers, from the agent's own folder (not this repository), with no PYTHONPATH; and each stdio
configuration and the Python example of docs/mcp.md, read from the page, started so."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters

from tests.mcp import page
from tests.mcp.test_stdio import call, run

pytestmark = pytest.mark.engine_independent

SCRIPT = Path(sys.executable).parent / "ilab-memory-mcp"


def agent_environment() -> dict[str, str]:
    """An agent's environment: nothing that points Python at this repository."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}


def test_the_console_script_serves_the_memory_from_any_folder(tmp_path):
    agent_folder = tmp_path / "agent"
    agent_folder.mkdir()
    parameters = StdioServerParameters(command=str(SCRIPT), args=["--db", "mem.db", "--user", "alice"],
                                       cwd=str(agent_folder), env=agent_environment())

    async def script(session):
        await call(session, "mem_save", title="Editor", content="Uses helix.")
        return await call(session, "mem_search", query="helix")

    (found, junk), stderr = run(parameters, script, tmp_path)
    assert junk == [] and "Traceback" not in stderr
    assert [r["title"] for r in found.structured_content["results"]] == ["Editor"]
    assert (agent_folder / "mem.db").exists()  # relative to where the agent started it


def test_usage_names_the_command_as_it_was_invoked(tmp_path):
    for argv, name in [([str(SCRIPT)], "ilab-memory-mcp"),
                       ([sys.executable, "-m", "ilab_memory.mcp"], "python -m ilab_memory.mcp")]:
        done = subprocess.run([*argv, "--help"], cwd=tmp_path, env=agent_environment(), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: {name} [-h] --db DB"), done.stdout
        done = subprocess.run([*argv, "--db", "mem.db"], cwd=tmp_path, env=agent_environment(),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        assert f"{name}: error: the following arguments are required: --user" in done.stderr, done.stderr


def test_each_stdio_configuration_on_the_page_starts_the_server_from_the_agents_folder(tmp_path):
    memory_folder = tmp_path / "memory"
    memory_folder.mkdir()
    configurations = page.stdio_configurations(SCRIPT.parent, memory_folder)
    assert set(configurations) == {"Claude Code", "Codex", "Cursor"}
    for client, argv in configurations.items():
        assert Path(argv[0]) == SCRIPT, (client, argv)  # the console script, by its absolute path
        agent_folder = tmp_path / client.replace(" ", "-")
        agent_folder.mkdir()
        parameters = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(agent_folder),
                                           env=agent_environment())

        async def script(session, client=client):
            await call(session, "mem_save", title=f"Configured in {client}", content="From the page.")
            found = await call(session, "mem_search", query=client)
            refused = await call(session, "mem_stats", user_id="bob")
            return found, refused

        ((found, refused), junk), stderr = run(parameters, script, agent_folder)
        assert junk == [] and "Traceback" not in stderr, (client, stderr)
        assert found.structured_content["results"][0]["title"] == f"Configured in {client}"
        assert refused.structured_content["code"] == "act_for_any_user_required"
    assert (memory_folder / "mem.db").exists()


def test_the_pages_python_stdio_example_runs_from_a_folder_of_its_own(tmp_path):
    example = tmp_path / "example.py"
    example.write_text(page.python_example(page.STDIO))
    env = {**agent_environment(), "PATH": f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, str(example)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("Saved a new memory: [manual] Editor — id ")
    assert done.stdout.splitlines()[-1] == "Editor"
    assert (tmp_path / "mem.db").exists()


def test_without_the_mcp_extra_the_server_names_the_extra(tmp_path):
    from tests.test_extras import run_without

    done = run_without(["mcp", "anyio"], "import sys\nfrom ilab_memory.mcp.__main__ import main\n"
                       f"sys.argv = ['ilab-memory-mcp']\nsys.exit(main(['--db', {str(tmp_path / 'mem.db')!r}, "
                       "'--user', 'alice']))")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == ("ilab-memory-mcp: this needs the 'mcp' extra (mcp, anyio not installed): "
                           "pip install 'ilab-memory[mcp]'\n")
