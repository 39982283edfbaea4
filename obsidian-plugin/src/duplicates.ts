// Duplicates of the vault by kind (GET /ui/api/duplicates): each pair dismisses (POST /ui/api/dismiss,
// paired) or opens its review.
import { App, Modal } from "obsidian";
import { Client } from "./api";
import { describe } from "./errors";
import { ReviewModal } from "./review";

export interface DuplicatePair {
  a: string;
  b: string;
  kind: string;
  score?: number;
}

interface Report {
  exact: { paths: string[] }[] | string[][];
  pairs: DuplicatePair[];
  same_name: string[][];
  shared_passages?: DuplicatePair[];
  [key: string]: unknown;
}

/** Every pair the report lists, with its kind (near_duplicate, contained, translation…, same_name). */
export function pairsOf(report: Report): DuplicatePair[] {
  const same = report.same_name.map(([a, b]) => ({ a, b, kind: "same_name" }));
  const pairs = [...report.pairs, ...(report.shared_passages ?? [])];
  return [...pairs.map((p) => ({ ...p, kind: p.kind ?? "pair" })), ...same];
}

export class DuplicatesModal extends Modal {
  pairs: DuplicatePair[] = [];
  pending: Promise<void> = Promise.resolve();

  constructor(
    app: App,
    private readonly client: () => Client,
  ) {
    super(app);
  }

  onOpen(): void {
    this.setTitle("Duplicates");
    this.pending = this.load();
  }

  async load(): Promise<void> {
    this.contentEl.empty();
    try {
      this.pairs = pairsOf(await this.client().get<Report>("/ui/api/duplicates"));
    } catch (err) {
      this.contentEl.createDiv({ cls: "vaultlens-problem", text: describe(err) });
      return;
    }
    if (!this.pairs.length) this.contentEl.createEl("p", { text: "No duplicates." });
    for (const pair of this.pairs) {
      const row = this.contentEl.createDiv({ cls: "vaultlens-pair" });
      row.createSpan({ text: `${pair.kind}: ${pair.a} ↔ ${pair.b} ` });
      row.createEl("button", { text: "Review" }).addEventListener("click", () => this.review(pair));
      if (pair.kind !== "same_name")
        row.createEl("button", { text: "Dismiss" }).addEventListener("click", () => void this.dismiss(pair));
    }
  }

  review(pair: DuplicatePair): ReviewModal {
    const modal = new ReviewModal(this.app, this.client, pair.a, pair.b);
    modal.open();
    return modal;
  }

  async dismiss(pair: DuplicatePair): Promise<void> {
    try {
      await this.client().post("/ui/api/dismiss", { a: pair.a, b: pair.b });
      await this.load();
    } catch (err) {
      this.contentEl.createDiv({ cls: "vaultlens-problem", text: describe(err) });
    }
  }
}
