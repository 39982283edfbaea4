import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, describe as group, expect, it } from "vitest";
import { ReviewModal } from "../src/review";
import { diffRows } from "../src/proposal";
import { loaded, pairToken, server } from "./support";

const A = "Study/Caching/Cache lifetime.md";
const B = "Study/Systems/Cache lifetime.md";
const file = () => path.join(server().vault, A);

function click(modal: ReviewModal, text: string): void {
  const button = [...modal.contentEl.querySelectorAll("button")].reverse().find((b) => b.textContent === text && !b.disabled);
  if (!button) throw new Error(`no "${text}" button in: ${modal.contentEl.textContent}`);
  button.click();
}

async function settle(modal: ReviewModal): Promise<void> {
  for (let last = null; last !== modal.pending; ) {
    last = modal.pending;
    await last;
  }
}

group("review → consent → plan → diff → apply → undo", () => {
  afterAll(() => pairToken(true));

  it("writes exactly the diff and undo restores every byte, through the server, only when paired", async () => {
    const before = readFileSync(file());
    const unpaired = await loaded();
    const refused = new ReviewModal(unpaired.app as never, () => unpaired.plugin.client(), A, B);
    refused.open();
    await settle(refused);
    expect(refused.state, refused.contentEl.textContent ?? "").toBe("failed");
    expect(refused.contentEl.textContent).toContain("vaultlens obsidian pair"); // page_key_required: no pairing, no write

    const { app, plugin } = await loaded({ writeToken: await pairToken() });
    const modal = new ReviewModal(app as never, () => plugin.client(), A, B);
    modal.open();
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("proposed-send"); // the exact prompt first, nothing sent yet
    expect(modal.contentEl.textContent).toContain("What is sent, and where");
    click(modal, "Send");
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("proposed-write");
    const diff = modal.proposal!.preview!;
    expect(readFileSync(file())).toEqual(before); // a review writes nothing
    const added = diffRows(diff).filter((r) => r.kind === "add").map((r) => r.right);
    expect(added.join("\n")).toContain("See also: [[Systems/Cache lifetime]]");
    expect(modal.contentEl.querySelectorAll(".vaultlens-diff .vaultlens-add").length).toBe(added.length);

    click(modal, "Apply this change");
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("applied");
    const after = readFileSync(file(), "utf8");
    const kept = diffRows(diff).filter((r) => r.kind === "same").map((r) => r.left);
    expect(after.split("\n").filter((l) => !kept.includes(l) && l !== "")).toEqual(added.filter((l) => l !== ""));

    click(modal, "Undo");
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("proposed-write");
    click(modal, "Apply this change");
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("undone");
    expect(readFileSync(file())).toEqual(before);
  });

  it("a note changed after its diff was shown is not written; the modal offers to review again", async () => {
    const before = readFileSync(file());
    const { app, plugin } = await loaded({ writeToken: await pairToken() });
    const modal = new ReviewModal(app as never, () => plugin.client(), A, B);
    modal.open();
    await settle(modal);
    click(modal, "Send");
    await settle(modal);
    expect(modal.state, modal.contentEl.textContent ?? "").toBe("proposed-write");
    const typed = Buffer.concat([before, Buffer.from("What I typed meanwhile.\n")]);
    writeFileSync(file(), typed); // the editor saved what the user typed
    try {
      click(modal, "Apply this change");
      await settle(modal);
      expect(modal.state, modal.contentEl.textContent ?? "").toBe("failed");
      expect(readFileSync(file())).toEqual(typed); // nothing the user typed is lost
      expect(modal.contentEl.textContent).toContain("The note changed after this diff was planned");
      expect([...modal.contentEl.querySelectorAll("button")].map((b) => b.textContent)).toContain("Review again");
    } finally {
      writeFileSync(file(), before);
    }
  });
});
