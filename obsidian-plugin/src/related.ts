// Related notes of the open note, in a side pane (GET /ui/api/similar, section to section):
// refreshed when another note opens; each result opens, links from the cursor, or reviews the pair.
import { ItemView, MarkdownView, TFile, WorkspaceLeaf } from "obsidian";
import { Client, SimilarNote } from "./api";
import { describe } from "./errors";
import { openAt, place } from "./open";
import { ReviewModal } from "./review";

export const RELATED_VIEW = "vaultlens-related";

export class RelatedView extends ItemView {
  path: string | null = null;
  results: SimilarNote[] = [];
  pending: Promise<void> = Promise.resolve();
  private editor: MarkdownView | null = null;

  constructor(
    leaf: WorkspaceLeaf,
    private readonly client: () => Client,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return RELATED_VIEW;
  }

  getDisplayText(): string {
    return "Related notes";
  }

  getIcon(): string {
    return "links-coming-in";
  }

  async onOpen(): Promise<void> {
    this.registerEvent(this.app.workspace.on("file-open", (file) => this.follow(file)));
    this.follow(this.app.workspace.getActiveFile());
    await this.pending;
  }

  follow(file: TFile | null): void {
    if (!file || file.extension !== "md" || file.path === this.path) return;
    this.editor = this.app.workspace.getActiveViewOfType(MarkdownView);
    this.pending = this.refresh(file.path);
  }

  async refresh(path: string): Promise<void> {
    this.path = path;
    const root = this.contentEl;
    root.empty();
    root.createEl("h4", { text: `Related to ${path}` });
    try {
      const found = await this.client().get<{ results: SimilarNote[]; notice: string | null }>("/ui/api/similar", { path });
      if (this.path !== path) return; // another note opened meanwhile
      this.results = found.results;
      if (found.notice) root.createEl("p", { text: found.notice });
      if (!found.results.length) root.createEl("p", { text: "No related notes." });
      for (const note of found.results) this.renderNote(root.createDiv({ cls: "vaultlens-related" }), note);
    } catch (err) {
      this.results = [];
      root.createDiv({ cls: "vaultlens-problem", text: describe(err) });
    }
  }

  private renderNote(el: HTMLElement, note: SimilarNote): void {
    const best = note.matches[0]?.other;
    const title = el.createEl("a", { cls: "vaultlens-note", text: `${note.title || note.path} (${note.score.toFixed(2)})` });
    title.addEventListener("click", () => void this.open(note));
    for (const m of note.matches.slice(0, 3)) {
      el.createDiv({
        cls: "vaultlens-heading",
        text: `${place(m.source.heading_path, m.source.start_line, m.source.end_line)} ↔ ${place(m.other.heading_path, m.other.start_line, m.other.end_line)}`,
      });
    }
    const buttons = el.createDiv();
    buttons.createEl("button", { text: "Insert link" }).addEventListener("click", () => this.insertLink(note));
    buttons.createEl("button", { text: "Review this pair" }).addEventListener("click", () => this.review(note));
    if (best) el.dataset.line = String(best.start_line);
  }

  open(note: SimilarNote): Promise<boolean> {
    return openAt(this.app, note.path, note.matches[0]?.other.start_line ?? 1);
  }

  /** A wikilink to the related note at the cursor of the note it is related to (Obsidian's editor). */
  insertLink(note: SimilarNote): boolean {
    const view = this.editor;
    if (!view || view.file?.path !== this.path) return false;
    view.editor.replaceSelection(`[[${note.path.replace(/\.md$/, "")}]]`);
    return true;
  }

  review(note: SimilarNote): ReviewModal {
    const modal = new ReviewModal(this.app, this.client, this.path ?? "", note.path);
    modal.open();
    return modal;
  }
}
