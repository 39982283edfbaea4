// The status bar item: indexed notes, watching or not, the quality tier, problems (GET /ui/api/status);
// a click opens the server's Status page.
import { Client } from "./api";

export interface ServerStatus {
  notes: number;
  problems: unknown[];
  tier: { state?: string; filled?: number; total?: number } | null;
  watcher: { state: string } | null;
}

export function statusText(s: ServerStatus): string {
  const parts = [`vaultlens: ${s.notes} notes`];
  parts.push(s.watcher?.state === "watching" ? "watching" : `not watching${s.watcher ? ` (${s.watcher.state})` : ""}`);
  if (s.tier?.state && s.tier.state !== "ready") parts.push(`tier ${s.tier.state}`);
  if (s.problems.length) parts.push(`${s.problems.length} problem${s.problems.length === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

export async function refreshStatus(el: HTMLElement, client: Client): Promise<string> {
  let text: string;
  try {
    text = statusText(await client.get<ServerStatus>("/ui/api/status"));
  } catch {
    text = "vaultlens: no server";
  }
  el.setText(text);
  return text;
}
