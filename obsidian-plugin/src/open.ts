// Opening a note at a line: the one way search results, related notes and citations jump.
import { App, MarkdownView, TFile } from "obsidian";

export async function openAt(app: App, path: string, line: number, newLeaf = false): Promise<boolean> {
  const file = app.vault.getAbstractFileByPath(path);
  if (!(file instanceof TFile)) return false;
  const leaf = app.workspace.getLeaf(newLeaf);
  const zero = Math.max(0, line - 1);
  await leaf.openFile(file, { eState: { line: zero } });
  const view = leaf.view;
  if (view instanceof MarkdownView) {
    view.editor.setCursor({ line: zero, ch: 0 });
    view.editor.scrollIntoView({ from: { line: zero, ch: 0 }, to: { line: zero, ch: 0 } }, true);
  }
  return true;
}

/** The text of a section's place: "Heading › Sub, lines 3-9". */
export function place(headingPath: string[], start: number, end: number): string {
  return `${headingPath.join(" › ") || "(top)"}, lines ${start}-${end}`;
}
