// Ask in a side view, as a conversation: POST /v1/ask streamed (server-sent events), the view's
// history sent with each question (kept here while the view lives, nowhere else), a follow-up shown
// with the question the server searched with. [S#] citations open the cited note at its lines,
// citations the server found invalid are flagged; Stop aborts the request (the server then cuts the
// model's); the extractive switch answers with passages and calls no model; a remote model's
// consent is the server's proposal (what, where, each passage), and Send brings back its token.
import { ItemView, WorkspaceLeaf } from "obsidian";
import { AskResult, Client, Exchange, Proposal, ServerDown, ServerError } from "./api";
import { describe } from "./errors";
import { openAt } from "./open";
import { showSend } from "./proposal";
import { showServerDown, Starter } from "./server";

export const ASK_VIEW = "vaultlens-ask";
export const HISTORY_SENT = 50; // the server reads the last llm.history_turns of what it gets
export const ANSWER_SENT = 20_000; // characters of an earlier answer a request may carry (the rewrite reads 1,500)

export class AskView extends ItemView {
  input!: HTMLTextAreaElement;
  extractive!: HTMLInputElement;
  conversationEl!: HTMLElement;
  answerEl!: HTMLElement;
  history: Exchange[] = [];
  result: AskResult | null = null;
  standalone: string | null = null; // what the server searched with, when it rewrote a follow-up
  streamed = "";
  tokens = 0; // token events of the last answer
  pending: Promise<void> = Promise.resolve();
  private abort: AbortController | null = null;

  constructor(
    leaf: WorkspaceLeaf,
    private readonly client: () => Client,
    private readonly starter?: Starter,
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

  get running(): boolean {
    return this.abort !== null;
  }

  async onOpen(): Promise<void> {
    const root = this.contentEl;
    root.empty();
    this.conversationEl = root.createDiv({ cls: "vaultlens-conversation" });
    this.answerEl = root.createDiv({ cls: "vaultlens-answer" });
    this.input = root.createEl("textarea", { attr: { placeholder: "Ask your notes… (Ctrl/Cmd+Enter)", rows: "3" } });
    const row = root.createDiv();
    const label = row.createEl("label", { text: " Passages only (no model)" });
    this.extractive = label.createEl("input", { attr: { type: "checkbox" } });
    label.prepend(this.extractive);
    row.createEl("button", { text: "Ask", cls: "mod-cta" }).addEventListener("click", () => void this.ask());
    row.createEl("button", { text: "Stop" }).addEventListener("click", () => this.stop());
    row.createEl("button", { text: "New conversation" }).addEventListener("click", () => this.clear());
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) void this.ask();
    });
  }

  /** Ask ``question`` (a follow-up once the view holds an exchange); ignored while an answer streams. */
  ask(question = this.input.value): Promise<void> {
    if (this.running || !question.trim()) return this.pending;
    this.input.value = "";
    this.pending = this.run(question.trim(), {});
    return this.pending;
  }

  stop(): void {
    this.abort?.abort();
  }

  /** A new conversation: the history is forgotten. */
  clear(): void {
    this.stop();
    this.history = [];
    this.conversationEl.empty();
    this.answerEl.empty();
  }

  /** One request of a turn; ``extra`` is the accepted proposal's token and question. */
  private async run(question: string, extra: { token?: string; standalone?: string }): Promise<void> {
    this.result = null;
    this.standalone = null;
    this.streamed = "";
    this.tokens = 0;
    this.answerEl.empty();
    this.answerEl.createEl("p", { cls: "vaultlens-asked", text: question });
    const asked = this.answerEl.createEl("p", { cls: "vaultlens-path" });
    const live = this.answerEl.createEl("p");
    const abort = (this.abort = new AbortController());
    const body = {
      question,
      extractive: this.extractive.checked,
      history: this.history.slice(-HISTORY_SENT),
      ...extra,
    };
    try {
      await this.client().stream(
        "/v1/ask",
        body,
        (kind, data) => {
          if (kind === "question") {
            this.standalone = (data as { standalone_question: string }).standalone_question;
            asked.setText(`Searched as: ${this.standalone}`);
          } else if (kind === "token") {
            this.tokens++;
            live.setText((this.streamed += String(data)));
          } else if (kind === "done") this.render(question, data as AskResult);
          else if (kind === "error") this.problem(new ServerError(200, data as never));
        },
        abort.signal,
      );
      if (abort.signal.aborted) this.answerEl.createEl("p", { cls: "vaultlens-path", text: "Stopped: not part of the conversation." });
    } catch (err) {
      if (err instanceof ServerError && err.code === "consent_required" && err.error.proposal) {
        const proposal: Proposal = err.error.proposal;
        showSend(this.answerEl, proposal, () => {
          this.pending = this.run(question, { token: proposal.token, standalone: proposal.question });
        });
      } else this.problem(err);
    } finally {
      if (this.abort === abort) this.abort = null;
    }
  }

  private problem(err: unknown): void {
    if (err instanceof ServerDown && this.starter) showServerDown(this.answerEl, err, this.starter);
    else this.answerEl.createDiv({ cls: "vaultlens-problem", text: describe(err) });
  }

  /** The final answer: its text with each [S#] a link to the source's lines, then the sources; the
   * exchange joins the history, and the one before it moves up into the conversation. */
  render(asked: string, result: AskResult): void {
    this.result = result;
    this.history.push({ question: result.question, answer: result.answer.slice(0, ANSWER_SENT) });
    this.answerEl.empty();
    const turn = this.conversationEl.createDiv({ cls: "vaultlens-turn" });
    turn.createEl("p", { cls: "vaultlens-asked", text: asked });
    if (this.standalone) turn.createEl("p", { cls: "vaultlens-path", text: `Searched as: ${this.standalone}` });
    const byId = new Map(result.sources.map((s) => [s.id, s]));
    const p = turn.createEl("p");
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
      turn.createEl("p", { cls: "vaultlens-problem", text: `Invalid citations: ${result.invalid_citations.join(", ")}` });
    const list = turn.createEl("ol");
    for (const s of result.sources) {
      const a = list.createEl("li").createEl("a", { text: `${s.id} ${s.path}, lines ${s.start_line}-${s.end_line}` });
      a.addEventListener("click", () => void openAt(this.app, s.path, s.start_line));
    }
  }

  /** Open the note a citation of the last answer points at (what a click on [S#] does). */
  cite(id: string): Promise<boolean> {
    const source = this.result?.sources.find((s) => s.id === id);
    if (!source || this.result?.invalid_citations.includes(id)) return Promise.resolve(false);
    return openAt(this.app, source.path, source.start_line);
  }
}
