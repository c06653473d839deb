/** The "Capture…" button of the shell and its dialog: capture a profile from running jobs' profiler
 * servers into the logdir (`POST capture`), show the time passing while the server records, and
 * hand the new session to the shell to select. When capturing is off it says how to turn it on; for
 * PyTorch, which has no profiler server, it gives the lines that write a trace into the logdir. */

import type { FetchLike } from "../api/client.ts";
import { clear, h, isAbort, messageOf } from "../dom.ts";
import { ensureStyle } from "../shared/style.ts";
import css from "./capture.css";
import {
  CaptureApi,
  type CaptureForm,
  type CaptureStatus,
  type Captured,
  DEFAULT_FORM,
  expectedMs,
  formProblems,
  progressText,
  pytorchSnippet,
  recallAddresses,
  rememberAddresses,
} from "./capture.ts";

export interface CaptureHost {
  /** The runs `/runs` lists now, and the one shown. */
  runs(): string[];
  currentRun(): string | null;
  /** A capture landed: show its session. */
  landed(captured: Captured): void;
}

const HOST_LEVELS = ["0 — off", "1 — user annotations", "2 — default", "3 — verbose"];
const ON_OFF = ["0 — off", "1 — on"];

function levelSelect(testId: string, labels: string[], value: number): HTMLSelectElement {
  const select = h("select", { "data-testid": testId });
  labels.forEach((label, i) => select.append(h("option", { value: String(i) }, label)));
  select.value = String(value);
  return select;
}

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export class CaptureDialog {
  readonly button = h(
    "button",
    { class: "ps-button", type: "button", "data-testid": "capture-button", title: "Capture a profile from running jobs into the logdir" },
    "Capture…",
  );
  readonly el: HTMLElement;
  private readonly api: CaptureApi;
  private readonly off = h("div", { class: "ps-capture-off", "data-testid": "capture-off", hidden: true });
  private readonly form = h("form", { class: "ps-capture-form", "data-testid": "capture-form" });
  private readonly addresses = h("input", {
    type: "text",
    "data-testid": "capture-addresses",
    placeholder: "localhost:9012, worker-1:9012",
    spellcheck: "false",
  });
  private readonly duration = h("input", { type: "number", min: 1, max: 600000, step: 100, "data-testid": "capture-duration" });
  private readonly delay = h("input", { type: "number", min: 0, max: 600000, step: 100, "data-testid": "capture-delay" });
  private readonly hostLevel = levelSelect("capture-host-level", HOST_LEVELS, DEFAULT_FORM.hostTracerLevel);
  private readonly pythonLevel = levelSelect("capture-python-level", ON_OFF, DEFAULT_FORM.pythonTracerLevel);
  private readonly deviceLevel = levelSelect("capture-device-level", ON_OFF, DEFAULT_FORM.deviceTracerLevel);
  private readonly newRun = h("input", { type: "radio", name: "ps-capture-run", value: "new", checked: true, "data-testid": "capture-run-new" });
  private readonly existingRun = h("input", { type: "radio", name: "ps-capture-run", value: "existing", "data-testid": "capture-run-existing" });
  private readonly runName = h("input", { type: "text", "data-testid": "capture-run-name", spellcheck: "false" });
  private readonly runSelect = h("select", { "data-testid": "capture-run-select" });
  private readonly start = h("button", { type: "button", class: "ps-button ps-capture-start", "data-testid": "capture-start" }, "Capture");
  private readonly progress = h("div", { class: "ps-capture-progress", "data-testid": "capture-progress", "aria-live": "polite", hidden: true });
  private readonly bar = h("progress", { max: 1, value: 0 });
  private readonly progressLine = h("span", {});
  private readonly problem = h("div", { class: "ps-error", role: "alert", "data-testid": "capture-error", hidden: true });
  private readonly snippet = h("pre", { class: "ps-capture-snippet", "data-testid": "capture-snippet" });
  private status: CaptureStatus | null = null;
  private running: AbortController | null = null;
  private ticker: ReturnType<typeof setInterval> | null = null;

  constructor(
    base: string,
    private readonly host: CaptureHost,
    fetchImpl?: FetchLike,
  ) {
    ensureStyle("ps-capture-style", css);
    this.api = new CaptureApi(base, fetchImpl);
    this.button.addEventListener("click", () => void this.open());
    this.duration.value = String(DEFAULT_FORM.durationMs);
    this.delay.value = String(DEFAULT_FORM.delayMs);
    this.runName.value = DEFAULT_FORM.run;
    this.runName.addEventListener("input", () => {
      this.newRun.checked = true;
      this.renderSnippet();
    });
    this.runSelect.addEventListener("change", () => {
      this.existingRun.checked = true;
      this.renderSnippet();
    });
    for (const radio of [this.newRun, this.existingRun]) radio.addEventListener("change", () => this.renderSnippet());
    this.progress.append(this.bar, " ", this.progressLine);
    const field = (label: string, input: HTMLElement, hint = "") =>
      h("label", { class: "ps-capture-field" }, h("span", {}, label), input, hint ? h("small", {}, hint) : null);
    this.form.append(
      field("Profiler servers", this.addresses, "host:port of each job's profiler server, comma-separated"),
      h(
        "div",
        { class: "ps-capture-row" },
        field("Duration (ms)", this.duration),
        field("Delay (ms)", this.delay),
      ),
      h(
        "div",
        { class: "ps-capture-row" },
        field("Host tracer", this.hostLevel),
        field("Python tracer", this.pythonLevel),
        field("Device tracer", this.deviceLevel),
      ),
      h(
        "fieldset",
        { class: "ps-capture-run" },
        h("legend", {}, "Into run"),
        h("label", {}, this.newRun, " New run ", this.runName),
        h("label", {}, this.existingRun, " Existing run ", this.runSelect),
      ),
      this.progress,
      this.problem,
    );
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.capture();
    });
    const close = h("button", { type: "button", class: "ps-button", "data-testid": "capture-close" }, "Close");
    close.addEventListener("click", () => this.close());
    const copy = h("button", { type: "button", class: "ps-button", "data-testid": "capture-copy" }, "Copy");
    copy.addEventListener("click", () => void this.copySnippet(copy));
    const box = h(
      "div",
      { class: "ps-capture-box" },
      h("h2", {}, "Capture a profile"),
      h(
        "p",
        { class: "ps-capture-hint" },
        "Records the running jobs for a while through their profiler servers (JAX, TensorFlow, PyTorch/XLA); each job writes its profile into the logdir, as a new session.",
      ),
      this.off,
      this.form,
      h("p", { class: "ps-capture-actions" }, this.start, " ", close),
      h(
        "details",
        { class: "ps-capture-pytorch", "data-testid": "capture-pytorch" },
        h("summary", {}, "PyTorch (no profiler server): write a trace into the logdir"),
        h("p", {}, "Profile the training loop with torch.profiler; the trace lands where this tab reads it:"),
        this.snippet,
        copy,
      ),
    );
    this.start.addEventListener("click", () => void this.capture());
    this.el = h("div", { class: "ps-capture", role: "dialog", "aria-label": "Capture a profile", "data-testid": "capture-dialog", hidden: true }, box);
    this.el.addEventListener("click", (e) => {
      if (e.target === this.el) this.close();
    });
    this.el.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.close();
      e.stopPropagation();
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** Shows the dialog with the runs of now and asks whether capturing is on. */
  async open(): Promise<void> {
    const runs = this.host.runs();
    clear(this.runSelect);
    for (const run of runs) this.runSelect.append(h("option", { value: run }, run));
    const current = this.host.currentRun();
    if (current && runs.includes(current)) this.runSelect.value = current;
    this.existingRun.disabled = this.runSelect.disabled = !runs.length;
    if (!this.running) this.addresses.value = recallAddresses(storage());
    this.el.hidden = false;
    this.addresses.focus();
    this.renderSnippet();
    try {
      this.status = await this.api.status();
    } catch (e) {
      this.status = null;
      this.showOff(`Cannot ask the server whether capturing is on: ${messageOf(e)}`);
      return;
    }
    this.renderSnippet();
    if (!this.status.enabled) this.showOff(this.status.message);
    else if (!this.status.grpc_installed)
      this.showOff("Capturing needs gRPC on the TensorBoard machine: pip install 'profscope[capture]', then restart TensorBoard.");
    else {
      this.off.hidden = true;
      this.form.hidden = false;
      this.start.hidden = false;
    }
  }

  close(): void {
    this.el.hidden = true;
  }

  /** The form's values as the route takes them. */
  values(): CaptureForm {
    return {
      addresses: this.addresses.value,
      durationMs: Number(this.duration.value),
      delayMs: Number(this.delay.value || 0),
      hostTracerLevel: Number(this.hostLevel.value),
      pythonTracerLevel: Number(this.pythonLevel.value),
      deviceTracerLevel: Number(this.deviceLevel.value),
      run: this.existingRun.checked ? this.runSelect.value : this.runName.value.trim(),
    };
  }

  /** Sends the capture, counting the expected time meanwhile; selects the session when it lands. */
  async capture(): Promise<void> {
    if (this.running) return;
    const form = this.values();
    const problems = formProblems(form);
    if (problems.length) return this.showProblem(problems.join(" "));
    this.problem.hidden = true;
    rememberAddresses(storage(), form.addresses);
    const abort = (this.running = new AbortController());
    this.start.disabled = true;
    this.progress.hidden = false;
    const started = Date.now();
    const tick = () => {
      const elapsed = Date.now() - started;
      this.bar.value = Math.min(0.99, elapsed / expectedMs(form));
      this.progressLine.textContent = progressText(form, elapsed);
    };
    tick();
    this.ticker = setInterval(tick, 200);
    try {
      const captured = await this.api.capture(form, abort.signal);
      this.progressLine.textContent = `Captured session ${captured.session} (${captured.hosts.join(", ")}).`;
      this.bar.value = 1;
      this.close();
      this.host.landed(captured);
    } catch (e) {
      if (!isAbort(e)) {
        this.progress.hidden = true;
        this.showProblem(`Capture failed: ${messageOf(e)}`);
      }
    } finally {
      if (this.ticker) clearInterval(this.ticker);
      this.ticker = null;
      this.running = null;
      this.start.disabled = false;
    }
  }

  private showOff(message: string): void {
    clear(this.off);
    const logdir = this.status?.logdir || "LOGDIR";
    this.off.append(
      h("p", {}, message),
      h("p", {}, "To capture from jobs on this machine, restart TensorBoard with:"),
      h("pre", { class: "ps-capture-snippet" }, `tensorboard --logdir ${logdir} --profscope_capture`),
      h("p", {}, "Or capture from a terminal: profscope capture localhost:9012 --logdir ", logdir, " --run NAME"),
    );
    this.off.hidden = false;
    this.form.hidden = true;
    this.start.hidden = true;
  }

  private showProblem(message: string): void {
    this.problem.textContent = message;
    this.problem.hidden = false;
  }

  private renderSnippet(): void {
    const run = this.existingRun.checked ? this.runSelect.value : this.runName.value.trim() || DEFAULT_FORM.run;
    this.snippet.textContent = pytorchSnippet(this.status?.logdir || "LOGDIR", run);
  }

  private async copySnippet(button: HTMLButtonElement): Promise<void> {
    try {
      await navigator.clipboard.writeText(this.snippet.textContent ?? "");
      button.textContent = "Copied";
    } catch {
      // Clipboard access can be refused inside an iframe: select the text so it can be copied by hand.
      const range = document.createRange();
      range.selectNodeContents(this.snippet);
      window.getSelection()?.removeAllRanges();
      window.getSelection()?.addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => {
      button.textContent = "Copy";
    }, 1500);
  }
}
