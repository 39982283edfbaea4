// One real `vaultlens serve` for the whole run: tests/harness.py (Python from $VAULTLENS_PYTHON,
// default ../.venv/bin/python) writes a vault, starts the scripted model and the server.
import { spawn } from "child_process";
import * as path from "path";
import * as readline from "readline";
import type { TestProject } from "vitest/node";

export interface Ready { url: string; vault: string; home: string; python: string; model: string; repo: string }

declare module "vitest" {
  export interface ProvidedContext { server: Ready }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const python = process.env.VAULTLENS_PYTHON ?? path.resolve(here, "../../.venv/bin/python");
  const child = spawn(python, [path.join(here, "harness.py")], { stdio: ["pipe", "pipe", "inherit"] });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.on("error", (e) => reject(new Error(`cannot start ${python} (set VAULTLENS_PYTHON): ${e.message}`)));
    child.on("exit", (code) => reject(new Error(`tests/harness.py exited with ${code} before the server was up`)));
    readline.createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line) as Ready));
  });
  project.provide("server", ready);
  return () => {
    child.stdin!.end();
  };
}
