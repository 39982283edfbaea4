// Search by meaning: a command-palette modal over GET /ui/api/search, one row per section,
// grouped under its note; Enter opens the note at the section's first line.
import { App, Notice, SuggestModal } from "obsidian";
import { Client, NoteHit, Section } from "./api";
import { openAt, place } from "./open";
import { describe } from "./errors";

export interface SearchRow {
  hit: NoteHit;
  section: Section | null;
  first: boolean; // the note's first row: shows the note's title
}

export function rows(hits: NoteHit[]): SearchRow[] {
  return hits.flatMap((hit): SearchRow[] =>
    hit.sections.length
      ? hit.sections.map((section, i) => ({ hit, section, first: i === 0 }))
      : [{ hit, section: null, first: true }],
  );
}

export class SearchModal extends SuggestModal<SearchRow> {
  problem: string | null = null;
  private last: Promise<SearchRow[]> | null = null;

  constructor(
    app: App,
    private readonly client: () => Client,
    private readonly debounceMs = 250,
  ) {
    super(app);
    this.setPlaceholder("Search the vault by meaning (any language)…");
    this.emptyStateText = "Type to search by meaning.";
  }

  async getSuggestions(query: string): Promise<SearchRow[]> {
    const q = query.trim();
    if (!q) return [];
    await new Promise((r) => window.setTimeout(r, this.debounceMs));
    if (this.inputEl.value.trim() !== q) return this.last ?? [];
    this.last = this.client()
      .search(q)
      .then((hits) => {
        this.problem = null;
        this.emptyStateText = "Nothing matches.";
        return rows(hits);
      })
      .catch((err: unknown) => {
        this.problem = describe(err);
        this.emptyStateText = this.problem;
        return [];
      });
    return this.last;
  }

  renderSuggestion(row: SearchRow, el: HTMLElement): void {
    el.addClass("vaultlens-result");
    if (row.first) {
      const head = el.createDiv({ cls: "vaultlens-note" });
      head.createSpan({ text: row.hit.title || row.hit.path });
      head.createSpan({ cls: "vaultlens-path", text: ` ${row.hit.path}` });
    }
    if (row.section) {
      const s = row.section;
      el.createDiv({ cls: "vaultlens-heading", text: place(s.heading_path, s.start_line, s.end_line) });
      el.createDiv({ cls: "vaultlens-snippet", text: s.snippet });
    }
  }

  opening: Promise<void> = Promise.resolve();

  onChooseSuggestion(row: SearchRow): void {
    this.opening = this.open_(row);
  }

  private async open_(row: SearchRow): Promise<void> {
    const line = row.section?.start_line ?? 1;
    if (!(await openAt(this.app, row.hit.path, line))) new Notice(`${row.hit.path} is not in this vault.`);
  }
}
