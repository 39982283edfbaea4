// The server's confirmation protocol, shown the plugin's way: a send proposal (what goes where,
// the exact text) with a Send button, or a write proposal (the exact diff, side by side) with Apply.
import { Proposal } from "./api";

export function showSend(target: HTMLElement, proposal: Proposal, onSend: () => void): HTMLButtonElement {
  const box = target.createDiv({ cls: "vaultlens-consent" });
  box.createEl("h4", { text: "What is sent, and where" });
  box.createEl("p", { text: `${proposal.what ?? ""} → ${proposal.destination ?? ""}` });
  for (const r of proposal.remarks ?? []) box.createEl("p", { text: r });
  if (proposal.question) box.createEl("p", { cls: "vaultlens-question", text: `Asked as: ${proposal.question}` });
  const passages = proposal.passages ?? [];
  if (passages.length) {
    const list = box.createEl("ul", { cls: "vaultlens-passages" });
    for (const p of passages) {
      const where = p.heading_path.join(" › ") || "(top)";
      list.createEl("li", { text: `${p.id} ${p.path} › ${where}, lines ${p.start_line}-${p.end_line} (${p.chars.toLocaleString("en")} characters)` });
    }
  }
  if (proposal.preview) box.createEl("pre", { cls: "vaultlens-preview", text: proposal.preview });
  box.createEl("p", { text: "Sent for this request only; nothing is remembered." });
  const button = box.createEl("button", { text: "Send", cls: "mod-cta" });
  button.addEventListener("click", () => {
    button.disabled = true;
    onSend();
  });
  return button;
}

export interface DiffRow {
  left: string | null;
  right: string | null;
  kind: "same" | "del" | "add" | "change";
}

/** A unified diff as side-by-side rows (deletions beside the additions that replace them). */
export function diffRows(diff: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const left = dels[i] ?? null;
      const right = adds[i] ?? null;
      rows.push({ left, right, kind: left === null ? "add" : right === null ? "del" : "change" });
    }
    dels = [];
    adds = [];
  };
  for (const line of diff.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++") || line.startsWith("\\")) continue;
    if (line.startsWith("@@")) {
      flush();
      continue;
    }
    if (line.startsWith("-")) dels.push(line.slice(1));
    else if (line.startsWith("+")) adds.push(line.slice(1));
    else if (line.length) {
      flush();
      rows.push({ left: line.slice(1), right: line.slice(1), kind: "same" });
    }
  }
  flush();
  return rows;
}

export function showDiff(target: HTMLElement, proposal: Proposal): void {
  target.createEl("p", { text: `${proposal.what ?? ""} — ${proposal.destination ?? ""}` });
  const grid = target.createDiv({ cls: "vaultlens-diff" });
  for (const row of diffRows(proposal.preview ?? "")) {
    grid.createEl("pre", { cls: row.left === null ? "" : row.kind === "same" ? "" : "vaultlens-del", text: row.left ?? "" });
    grid.createEl("pre", { cls: row.right === null ? "" : row.kind === "same" ? "" : "vaultlens-add", text: row.right ?? "" });
  }
}
