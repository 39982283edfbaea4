// Ask in a side view: POST /v1/ask streamed (server-sent events); [S#] citations open the cited
// note at its lines, citations the server found invalid are flagged; Stop cuts the stream; the
// extractive switch answers with passages and calls no model; a remote model's consent is the
// server's proposal, shown as it is, for that one question.
import { ItemView, WorkspaceLeaf } from "obsidian";
import { AskResult, Client, ServerError } from "./api";
import { describe } from "./errors";
import { openAt } from "./open";
import { showSend } from "./proposal";

export const ASK_VIEW = "vaultlens-ask";

export class AskView extends ItemView {
  input!: HTMLTextAreaElement;
  extractive!: HTMLInputElement;
  answerEl!: HTMLElement;
  result: AskResult | null = null;
  streamed = "";
  tokens = 0; // token events of the last answer
  pending: Promise<void> = Promise.resolve();
  private abort: AbortController | null = null;

  constructor(
    leaf: WorkspaceLeaf,
    private readonly client: () => Client,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return ASK_VIEW;
  }

  getDisplayText(): string {
    return "Ask the vault";
  }

  getIcon(): string {
    return "message-circle-question";
  }

  async onOpen(): Promise<void> {
    const root = this.contentEl;
    root.empty();
    this.input = root.createEl("textarea", { attr: { placeholder: "Ask your notes…", rows: "3" } });
    const row = root.createDiv();
    const label = row.createEl("label", { text: " Passages only (no model)" });
    this.extractive = label.createEl("input", { attr: { type: "checkbox" } });
    label.prepend(this.extractive);
    row.createEl("button", { text: "Ask", cls: "mod-cta" }).addEventListener("click", () => void this.ask());
    row.createEl("button", { text: "Stop" }).addEventListener("click", () => this.stop());
    this.answerEl = root.createDiv({ cls: "vaultlens-answer" });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) void this.ask();
    });
  }

  ask(question = this.input.value, consent = false): Promise<void> {
    this.stop();
    this.pending = this.run(question.trim(), consent);
    return this.pending;
  }

  stop(): void {
    this.abort?.abort();
    this.abort = null;
  }

  private async run(question: string, consent: boolean): Promise<void> {
    if (!question) return;
    this.result = null;
    this.streamed = "";
    this.tokens = 0;
    this.answerEl.empty();
    const live = this.answerEl.createEl("p");
    const abort = (this.abort = new AbortController());
    try {
      await this.client().stream(
        "/v1/ask",
        { question, extractive: this.extractive.checked, consent },
        (kind, data) => {
          if (kind === "token") {
            this.tokens++;
            live.setText((this.streamed += String(data)));
          }
          else if (kind === "done") this.render(data as AskResult);
          else if (kind === "error") this.answerEl.createDiv({ cls: "vaultlens-problem", text: describe(new ServerError(200, data as never)) });
        },
        abort.signal,
      );
    } catch (err) {
      if (err instanceof ServerError && err.code === "consent_required" && err.error.proposal) {
        showSend(this.answerEl, err.error.proposal, () => void this.ask(question, true));
      } else this.answerEl.createDiv({ cls: "vaultlens-problem", text: describe(err) });
    }
  }

  /** The final answer: its text with each [S#] a link to the source's lines, then the sources. */
  render(result: AskResult): void {
    this.result = result;
    this.answerEl.empty();
    const byId = new Map(result.sources.map((s) => [s.id, s]));
    const p = this.answerEl.createEl("p");
    for (const part of result.answer.split(/(\[S\d+\])/)) {
      const id = /^\[(S\d+)\]$/.exec(part)?.[1];
      const source = id ? byId.get(id) : undefined;
      if (id && source && !result.invalid_citations.includes(id)) {
        const a = p.createEl("a", { cls: "vaultlens-cite", text: part, attr: { "data-id": id } });
        a.addEventListener("click", () => void openAt(this.app, source.path, source.start_line));
      } else if (id) {
        p.createSpan({ cls: "vaultlens-invalid", text: part, attr: { title: "Not one of the sources sent" } });
      } else p.appendText(part);
    }
    if (result.invalid_citations.length)
      this.answerEl.createEl("p", { cls: "vaultlens-problem", text: `Invalid citations: ${result.invalid_citations.join(", ")}` });
    const list = this.answerEl.createEl("ol");
    for (const s of result.sources) {
      const a = list.createEl("li").createEl("a", { text: `${s.id} ${s.path}, lines ${s.start_line}-${s.end_line}` });
      a.addEventListener("click", () => void openAt(this.app, s.path, s.start_line));
    }
  }

  /** Open the note a citation points at (what a click on [S#] does). */
  cite(id: string): Promise<boolean> {
    const source = this.result?.sources.find((s) => s.id === id);
    if (!source || this.result?.invalid_citations.includes(id)) return Promise.resolve(false);
    return openAt(this.app, source.path, source.start_line);
  }
}
