// Review a pair → consent → the planned change → its exact diff → Apply → Undo, all through the
// server's verbs (/ui/api/review, /apply, /undo): the plugin never writes a note itself. A note
// changed since the diff was planned is refused by the server's compare-and-swap; this says so
// and offers to review again.
import { App, Modal } from "obsidian";
import { Client, Proposal, ServerError } from "./api";
import { describe } from "./errors";
import { showDiff, showSend } from "./proposal";

export interface ReviewResult {
  review_id: string;
  relation: string | null;
  recommendation: { action: string; reason: string } | null;
  plan: { op_id: string } | null;
  plan_refused: string | null;
  [key: string]: unknown;
}

export interface Applied {
  op_id: string;
  path: string;
  [key: string]: unknown;
}

export class ReviewModal extends Modal {
  /** What the modal is waiting for or did last: tests and the user read it. */
  state: "proposed-send" | "reviewed" | "proposed-write" | "applied" | "undone" | "failed" = "failed";
  pending: Promise<void> = Promise.resolve();
  proposal: Proposal | null = null;
  applied: Applied | null = null;

  constructor(
    app: App,
    private readonly client: () => Client,
    readonly a: string,
    readonly b: string,
  ) {
    super(app);
  }

  onOpen(): void {
    this.setTitle(`Review: ${this.a} ↔ ${this.b}`);
    this.pending = this.send(null);
  }

  private problem(err: unknown, offerAgain = false): void {
    this.state = "failed";
    const box = this.contentEl.createDiv({ cls: "vaultlens-problem", text: describe(err) });
    if (offerAgain) {
      box.createEl("p", { text: "The note changed after this diff was planned; nothing was written." });
      const again = box.createEl("button", { text: "Review again" });
      again.addEventListener("click", () => {
      this.pending = this.restart();
    });
    }
  }

  async restart(): Promise<void> {
    this.contentEl.empty();
    await this.send(null);
  }

  async send(token: string | null): Promise<void> {
    try {
      const result = await this.client().post<ReviewResult>("/ui/api/review", { a: this.a, b: this.b, token });
      this.reviewed(result);
    } catch (err) {
      if (err instanceof ServerError && err.code === "consent_required" && err.error.proposal) {
        const proposal = err.error.proposal;
        this.state = "proposed-send";
        this.proposal = proposal;
        showSend(this.contentEl, proposal, () => {
      this.pending = this.send(proposal.token);
    });
      } else this.problem(err);
    }
  }

  private reviewed(result: ReviewResult): void {
    this.state = "reviewed";
    this.contentEl.empty();
    const rec = result.recommendation;
    this.contentEl.createEl("p", {
      text: `${result.relation ? `Relation: ${result.relation}. ` : ""}${rec ? `Recommendation: ${rec.action} — ${rec.reason}` : "No valid recommendation."}`,
    });
    if (result.plan) this.pending = this.propose(result.plan.op_id);
    else this.contentEl.createEl("p", { text: result.plan_refused ?? "Nothing to change for this pair." });
  }

  /** Ask apply without a token: the server answers the exact diff (409 write_unconfirmed). */
  async propose(opId: string): Promise<void> {
    try {
      await this.client().post("/ui/api/apply", { op_id: opId });
      this.problem(new Error("The server applied a change without a confirmed diff."));
    } catch (err) {
      if (err instanceof ServerError && err.error.proposal) this.showWrite(err.error.proposal);
      else this.problem(err);
    }
  }

  private showWrite(proposal: Proposal): void {
    this.state = "proposed-write";
    this.proposal = proposal;
    const box = this.contentEl.createDiv();
    box.createEl("h4", { text: "The exact change" });
    showDiff(box, proposal);
    const button = box.createEl("button", { text: "Apply this change", cls: "mod-cta" });
    button.addEventListener("click", () => {
      button.disabled = true;
      this.pending = this.apply(proposal);
    });
  }

  async apply(proposal: Proposal): Promise<void> {
    try {
      const wasUndo = this.applied !== null;
      const done = await this.client().post<Applied>("/ui/api/apply", { op_id: proposal.op_id, token: proposal.token });
      this.state = wasUndo ? "undone" : "applied";
      this.applied = wasUndo ? null : done;
      const p = this.contentEl.createEl("p", { text: `Written: ${done.path}.` });
      if (!wasUndo) {
        const undo = p.createEl("button", { text: "Undo" });
        undo.addEventListener("click", () => {
      this.pending = this.undo(done.op_id);
    });
      }
    } catch (err) {
      this.problem(err, err instanceof ServerError && err.code === "write_conflict");
    }
  }

  /** Undo plans the reverse change; its exact diff is shown and applied on confirmation. */
  async undo(opId: string): Promise<void> {
    try {
      const planned = await this.client().post<{ op_id: string }>("/ui/api/undo", { op_id: opId });
      await this.propose(planned.op_id);
    } catch (err) {
      this.problem(err);
    }
  }
}
