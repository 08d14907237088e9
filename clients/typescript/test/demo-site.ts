/**
 * The running demo site the tests talk to: a fresh temporary SQLite database, migrated, with the
 * demo's accounts and their tokens, served by uvicorn on a free port.
 *
 * `npm test` starts one site for every test file:
 *   node --import tsx test/demo-site.ts -- node --import tsx --test test/*.test.ts
 * and passes it to them in ILAB_MEMORY_DEMO_SITE; a test file run on its own starts its own.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { PACKAGE_DIR, projectPython, REPO_ROOT } from "../scripts/project.js";

const SITE_DIR = join(PACKAGE_DIR, "test", "site");
const SHARED = "ILAB_MEMORY_DEMO_SITE";
const START_SECONDS = 60;
const STOP_SECONDS = 10;

export interface Account {
  token: string;
  /** The memory's user_id of the account (its primary key, the default resolver's answer). */
  user_id: string;
}

export interface DemoSite {
  /** The site's origin, e.g. `http://127.0.0.1:43817`. */
  url: string;
  /** Where the memory API is mounted (`${url}/api/memory/`). */
  apiUrl: string;
  /** The demo's `agent`: its own memory only. */
  agent: Account;
  /** The demo's `agent-backend`: may act for any user_id (each test file names its own). */
  backend: Account;
  /** `support-bot`: its own memory, bound to the scope `support`. */
  supportBot: Account;
  /** Stops the site if this process started it. */
  stop(): Promise<void>;
}

interface SiteInfo {
  url: string;
  agent: Account;
  backend: Account;
  supportBot: Account;
}

/** The shared site of `npm test`, or a new one for this process. */
export async function demoSite(): Promise<DemoSite> {
  const shared = process.env[SHARED];
  if (shared) return withStop(JSON.parse(shared) as SiteInfo, async () => {});
  return startDemoSite();
}

/** A new demo site on a free port; `stop()` ends the server and deletes its database. */
export async function startDemoSite(): Promise<DemoSite> {
  const python = projectPython();
  const dir = mkdtempSync(join(tmpdir(), "ilab-memory-ts-"));
  const env = {
    ...process.env,
    DJANGO_SETTINGS_MODULE: "client_test_settings",
    PYTHONPATH: [SITE_DIR, REPO_ROOT].join(delimiter),
    ILAB_MEMORY_DEMO_DB: join(dir, "db.sqlite3"),
    DJANGO_DEBUG: "0",
  };
  let server: ChildProcess | undefined;
  const stop = async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server!.once("exit", resolve));
      server.kill("SIGTERM");
      // uvicorn finishes the requests in flight first; one that never ends must not hang the run.
      const killer = setTimeout(() => server!.kill("SIGKILL"), STOP_SECONDS * 1000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const prepared = await promisify(execFile)(python, [join(SITE_DIR, "prepare_site.py")], { cwd: REPO_ROOT, env });
    const accounts = JSON.parse(prepared.stdout.trim().split("\n").at(-1)!) as Omit<SiteInfo, "url">;
    const port = await freePort();
    server = spawn(
      python,
      ["-m", "uvicorn", "project.asgi:application", "--host", "127.0.0.1", "--port", String(port), "--log-level", "warning"],
      { cwd: REPO_ROOT, env, stdio: ["ignore", "inherit", "pipe"] },
    );
    const url = `http://127.0.0.1:${port}`;
    await ready(server, `${url}/api/memory/schema/?format=json`);
    return withStop({ url, ...accounts }, stop);
  } catch (error) {
    await stop();
    throw error;
  }
}

function withStop(info: SiteInfo, stop: () => Promise<void>): DemoSite {
  return { ...info, apiUrl: `${info.url}/api/memory/`, stop };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Waits until `url` answers 200; fails with the server's stderr if it exits first. */
async function ready(server: ChildProcess, url: string): Promise<void> {
  let stderr = "";
  server.stderr!.on("data", (chunk) => {
    stderr += chunk;
    process.stderr.write(chunk);
  });
  const deadline = Date.now() + START_SECONDS * 1000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`uvicorn exited with ${server.exitCode}:\n${stderr}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the demo site did not answer ${url} within ${START_SECONDS} s:\n${stderr}`);
}

/** `node --import tsx test/demo-site.ts -- command …`: run the command with one site for all its tests. */
async function main(argv: string[]): Promise<number> {
  const command = argv[0] === "--" ? argv.slice(1) : argv;
  if (command.length === 0) {
    console.error("usage: node --import tsx test/demo-site.ts -- command [arguments]");
    return 2;
  }
  const site = await startDemoSite();
  try {
    const { stop: _, apiUrl: __, ...info } = site;
    const child = spawn(command[0]!, command.slice(1), {
      stdio: "inherit",
      env: { ...process.env, [SHARED]: JSON.stringify(info) },
    });
    return await new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
  } finally {
    await site.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
