import { describe as group, expect, it } from "vitest";
import { browserOpened, MarkdownView, TFile } from "obsidian";
import { AskView, ASK_VIEW } from "../src/ask";
import { DuplicatesModal } from "../src/duplicates";
import { RelatedView, RELATED_VIEW } from "../src/related";
import { deadUrl, loaded, server } from "./support";

const REWRITTEN = "How warm should the sourdough starter be kept?"; // tests/harness.py's rewrite

group("related notes", () => {
  it("follows the open note, lists its related notes section to section, opens and links them", async () => {
    const { app, plugin } = await loaded();
    await app.workspace.getLeaf(false).openFile(new TFile("Study/Caching/Cache lifetime.md"));
    const leaf = await plugin.reveal(RELATED_VIEW);
    const view = leaf!.view as unknown as RelatedView;
    await view.pending;
    expect(view.path).toBe("Study/Caching/Cache lifetime.md");
    expect(view.results[0].path).toBe("Study/Systems/Cache lifetime.md");
    expect(view.contentEl.textContent).toContain("Cache lifetime, lines 1-3 ↔ Cache lifetime, lines 1-3");

    expect(view.insertLink(view.results[0])).toBe(true);
    const editor = (app.workspace.activeLeaf!.view as MarkdownView).editor;
    expect(editor.inserted).toEqual(["[[Study/Systems/Cache lifetime]]"]);

    await view.open(view.results[0]); // opening a related note makes it the open note: the pane follows
    await view.pending;
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Study/Systems/Cache lifetime.md", line: 0 });
    expect(view.path).toBe("Study/Systems/Cache lifetime.md");
    expect(view.results.map((r) => r.path)).toContain("Study/Caching/Cache lifetime.md");
  });

  it("says how to start the server when none answers", async () => {
    const { app, plugin } = await loaded({ url: await deadUrl() });
    await app.workspace.getLeaf(false).openFile(new TFile("Bread/Starter.md"));
    const view = (await plugin.reveal(RELATED_VIEW))!.view as unknown as RelatedView;
    await view.pending;
    expect(view.contentEl.textContent).toContain("vaultlens serve --vault");
  });
});

group("ask", () => {
  it("asks consent for the remote model as the server proposes it, then streams the answer, links each valid citation to its lines and flags the invalid one", async () => {
    const { app, plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    await view.ask("how do I feed my sourdough starter?");
    expect(view.result).toBeNull();
    expect(view.answerEl.textContent).toContain("What is sent, and where");
    expect(view.answerEl.textContent).toContain("openai-compatible model chat-test at http://0.0.0.0:");
    const send = [...view.answerEl.querySelectorAll("button")].find((b) => b.textContent === "Send")!;
    send.click();
    await view.pending;
    expect(view.tokens).toBeGreaterThan(2); // the answer arrived piece by piece, then the final object
    expect(view.streamed).toBe(view.result!.answer);
    expect(view.result!.answer).toBe("Feed the starter rye flour every day [S1]; see also [S9].");
    expect(view.result!.invalid_citations).toEqual(["S9"]);
    const cites = [...view.contentEl.querySelectorAll(".vaultlens-cite")].map((a) => a.textContent);
    expect(cites).toEqual(["[S1]"]);
    expect(view.contentEl.querySelector(".vaultlens-invalid")!.textContent).toBe("[S9]");
    expect(await view.cite("S1")).toBe(true);
    const s1 = view.result!.sources.find((s) => s.id === "S1")!;
    expect(s1.path).toBe("Bread/Starter.md");
    expect(app.workspace.opened.at(-1)).toEqual({ path: "Bread/Starter.md", line: s1.start_line - 1 });
    expect(await view.cite("S9")).toBe(false);
  });

  it("takes a follow-up: the server rewrites it with the conversation, lists the passages to send, answers under the first exchange", async () => {
    const { plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    const send = () => [...view.answerEl.querySelectorAll("button")].find((b) => b.textContent === "Send")!;
    await view.ask("how do I feed my sourdough starter?");
    const passages = [...view.answerEl.querySelectorAll(".vaultlens-passages li")].map((li) => li.textContent);
    expect(passages[0]).toMatch(/^S1 Bread\/Starter\.md › .*, lines \d+-\d+ \([\d,]+ characters\)$/);
    send().click();
    await view.pending;
    expect(view.history).toEqual([{ question: "how do I feed my sourdough starter?", answer: view.result!.answer }]);

    await view.ask("and how warm?"); // the rewrite sends the conversation: its own consent first
    expect(view.answerEl.textContent).toContain("the conversation so far (1 earlier question and answer");
    expect(view.answerEl.querySelector(".vaultlens-preview")!.textContent).toContain("Follow-up: and how warm?");
    send().click();
    await view.pending; // rewritten; the answer's consent names the question as it will be asked
    expect(view.answerEl.querySelector(".vaultlens-question")!.textContent).toBe(`Asked as: ${REWRITTEN}`);
    expect(view.answerEl.querySelectorAll(".vaultlens-passages li").length).toBeGreaterThan(0);
    send().click();
    await view.pending;
    expect(view.standalone).toBe(REWRITTEN);
    expect(view.result!.question).toBe(REWRITTEN);
    expect(view.history.map((e) => e.question)).toEqual(["how do I feed my sourdough starter?", REWRITTEN]);
    const turns = [...view.conversationEl.querySelectorAll(".vaultlens-turn")];
    expect(turns.map((t) => t.querySelector(".vaultlens-asked")!.textContent)).toEqual(["how do I feed my sourdough starter?", "and how warm?"]);
    expect(turns[1].textContent).toContain(`Searched as: ${REWRITTEN}`);

    view.clear();
    expect(view.history).toEqual([]);
    expect(view.conversationEl.children.length).toBe(0);
  });

  it("Stop ends a streaming answer, which stays out of the conversation; asking while it streams sends nothing", async () => {
    const { plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    await view.ask("how do I feed my sourdough starter? SLOW-ANSWER");
    [...view.answerEl.querySelectorAll("button")].find((b) => b.textContent === "Send")!.click();
    const streaming = view.pending;
    await expect.poll(() => view.tokens, { timeout: 20_000 }).toBeGreaterThan(3);
    expect(view.running).toBe(true);
    const asked = view.ask("a second question while the first streams");
    expect(asked).toBe(streaming); // nothing new started
    view.stop();
    await streaming;
    expect(view.running).toBe(false);
    expect(view.answerEl.textContent).toContain("Stopped");
    expect(view.tokens).toBeLessThan(400);
    expect(view.history).toEqual([]);
  });

  it("says how to start the server when none answers, and its button starts one that answers", async () => {
    const url = await deadUrl();
    const s = server();
    const { plugin } = await loaded({ url, serverCommand: `${s.python} -m vaultlens` });
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    await view.ask("anything");
    expect(view.answerEl.textContent).toContain("vaultlens serve --vault");
    const start = [...view.answerEl.querySelectorAll("button")].find((b) => b.textContent === "Start the server")!;
    const env = { VAULTLENS_HOME: process.env.VAULTLENS_HOME, PYTHONPATH: process.env.PYTHONPATH };
    Object.assign(process.env, { VAULTLENS_HOME: s.home, PYTHONPATH: `${s.repo}/src` }); // what the spawned server reads
    try {
      const started = await plugin.starter().start();
      try {
        expect(await plugin.client().health()).toBe(true);
        expect(start.disabled).toBe(false);
        expect(plugin.starter().commandLine()).toBe(`${s.python} -m vaultlens serve --vault ${s.vault} --port ${new URL(url).port}`);
      } finally {
        started.kill();
      }
    } finally {
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  });

  it("a command that does not exist gives the exact command to run instead", async () => {
    const { plugin } = await loaded({ url: await deadUrl(), serverCommand: "/nonexistent/vaultlens" });
    await expect(plugin.starter().start()).rejects.toThrow(/Start the server in a terminal:\n\/nonexistent\/vaultlens serve --vault /);
  });

  it("answers with passages and no model when extractive is on", async () => {
    const { plugin } = await loaded();
    const view = (await plugin.reveal(ASK_VIEW))!.view as unknown as AskView;
    view.extractive.checked = true;
    await view.ask("how do I feed my sourdough starter?");
    expect(view.result!.sources[0].path).toBe("Bread/Starter.md");
    expect(view.result!.answer).not.toContain("[S9]");
  });
});

group("duplicates and the status bar", () => {
  it("lists the same-named pair and the status bar counts the notes", async () => {
    const { app, plugin } = await loaded();
    const modal = new DuplicatesModal(app as never, () => plugin.client());
    modal.open();
    await modal.pending;
    expect(modal.pairs).toContainEqual({ a: "Study/Caching/Cache lifetime.md", b: "Study/Systems/Cache lifetime.md", kind: "same_name" });
    const { refreshStatus } = await import("../src/status");
    expect(await refreshStatus(plugin.statusEl!, plugin.client())).toMatch(/^vaultlens: 5 notes · watching/);
    plugin.statusEl!.click();
    expect(browserOpened.at(-1)).toBe(`${server().url}/status`);
  });
});

