// A loaded plugin on the stand-in app, over the vault and server the global setup started.
import { inject } from "vitest";
import { App, Notice } from "obsidian";
import VaultlensPlugin from "../src/main";

export const server = () => inject("server");

export async function loaded(settings: Record<string, unknown> = {}): Promise<{ app: App; plugin: VaultlensPlugin }> {
  const app = new App(server().vault);
  const plugin = new VaultlensPlugin(app as never, { id: "vaultlens", version: "0.1.0" } as never);
  (plugin as unknown as { data: unknown }).data = { url: server().url, ...settings };
  await plugin.onload();
  Notice.shown.length = 0;
  return { app, plugin };
}

/** A URL where nothing listens (a port the OS just handed out and took back is free). */
export async function deadUrl(): Promise<string> {
  const net = await import("net");
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  return `http://127.0.0.1:${port}`;
}

/** `vaultlens obsidian pair` for the test vault: the token the plugin's settings take. */
export async function pairToken(revoke = false): Promise<string> {
  const { execFileSync } = await import("child_process");
  const s = server();
  const args = ["-m", "vaultlens", "obsidian", "pair", "--vault", s.vault, ...(revoke ? ["--revoke"] : [])];
  const env = { ...process.env, VAULTLENS_HOME: s.home, PYTHONPATH: `${s.repo}/src` };
  return execFileSync(s.python, args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}
