/** The base pickers: run, session and host over `/runs`, only hosts with a trace. Picking a run
 * picks its first session and the host named like the run's own (else the first); the choice goes
 * to `onPick`, which keeps it in the deep link. */

import { clear, h } from "../../dom.ts";
import { type BaseChoice, type BaseRun, completeBase } from "./api.ts";

const NONE = "";

export class BasePicker {
  readonly runSelect = h("select", { "aria-label": "Base run", "data-testid": "cmp-base-run" });
  readonly sessionSelect = h("select", { "aria-label": "Base session", "data-testid": "cmp-base-session" });
  readonly hostSelect = h("select", { "aria-label": "Base host", "data-testid": "cmp-base-host" });
  readonly el = h("div", { class: "cmp-picker" }, h("label", {}, "Base run ", this.runSelect), h("label", {}, "session ", this.sessionSelect), h("label", {}, "host ", this.hostSelect));
  private candidates: BaseRun[] = [];
  private choice: BaseChoice | null = null;

  constructor(
    private readonly preferredHost: string,
    private readonly onPick: (choice: BaseChoice) => void,
  ) {
    this.runSelect.addEventListener("change", () => this.picked(completeBase(this.candidates, this.runSelect.value, null, this.preferredHost)));
    this.sessionSelect.addEventListener("change", () => this.picked(completeBase(this.candidates, this.runSelect.value, this.sessionSelect.value, this.preferredHost)));
    this.hostSelect.addEventListener("change", () => {
      if (this.choice) this.picked({ ...this.choice, host: this.hostSelect.value });
    });
    this.render();
  }

  setCandidates(candidates: BaseRun[]): void {
    this.candidates = candidates;
    this.render();
  }

  /** Shows `choice` (from the deep link) without reporting it. */
  show(choice: BaseChoice | null): void {
    this.choice = choice;
    this.render();
  }

  private picked(choice: BaseChoice | null): void {
    if (!choice) return;
    this.choice = choice;
    this.render();
    this.onPick(choice);
  }

  private render(): void {
    const fill = (select: HTMLSelectElement, items: { value: string; text: string }[], value: string, placeholder: string | null) => {
      clear(select);
      if (placeholder !== null) select.append(h("option", { value: NONE, disabled: true }, placeholder));
      for (const it of items) select.append(h("option", { value: it.value }, it.text));
      select.value = value;
      select.disabled = items.length === 0;
    };
    const choice = this.choice;
    const run = this.candidates.find((r) => r.name === choice?.run);
    const session = run?.sessions.find((s) => s.name === choice?.session);
    fill(
      this.runSelect,
      this.candidates.map((r) => ({ value: r.name, text: r.name })),
      run ? run.name : NONE,
      run ? null : "— pick the base run —",
    );
    fill(this.sessionSelect, (run?.sessions ?? []).map((s) => ({ value: s.name, text: s.label })), session?.name ?? NONE, null);
    fill(this.hostSelect, (session?.hosts ?? []).map((x) => ({ value: x.name, text: x.name })), choice?.host ?? NONE, null);
  }
}
