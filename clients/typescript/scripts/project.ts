// Where this package sits in the repository, and the Python that serves the API from it.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
export const REPO_ROOT = join(PACKAGE_DIR, "..", "..");
// The virtualenv `python3 -m project` makes at the repository root.
export const PYTHON = join(REPO_ROOT, ".venv", process.platform === "win32" ? "Scripts/python.exe" : "bin/python");

/** The project's Python, or an error that says how to make it. */
export function projectPython(): string {
  if (!existsSync(PYTHON)) {
    throw new Error(`No Python virtualenv at ${PYTHON}: run \`python3 -m project test --co -q\` at the repository root.`);
  }
  return PYTHON;
}
