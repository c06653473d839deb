/** What the Capture dialog says and sends, without the DOM: the form's values checked and turned
 * into the `capture` route's body, the remembered addresses, the progress wording, the PyTorch
 * snippet, and the two calls (`capture/status`, `POST capture`). See docs/CAPTURE.md. */

import type { FetchLike } from "../api/client.ts";

/** `GET capture/status`. */
export interface CaptureStatus {
  enabled: boolean;
  /** The allow-list `--profscope_capture` gave (`loopback`, `HOST[:PORT]` patterns). */
  allowed: string[];
  /** Why capturing is off and how to turn it on; empty when on. */
  message: string;
  logdir: string;
  grpc_installed: boolean;
}

/** The `POST capture` answer: the session that landed. */
export interface Captured {
  run: string;
  session: string;
  hosts: string[];
}

export interface CaptureForm {
  addresses: string;
  durationMs: number;
  delayMs: number;
  hostTracerLevel: number;
  pythonTracerLevel: number;
  deviceTracerLevel: number;
  run: string;
}

export const DEFAULT_FORM: CaptureForm = {
  addresses: "localhost:9012",
  durationMs: 2000,
  delayMs: 0,
  hostTracerLevel: 2,
  pythonTracerLevel: 0,
  deviceTracerLevel: 1,
  run: "capture",
};

const MAX_MS = 600_000;
/** The seconds a server takes past its capture to collect and write it, as the progress bar guesses. */
const WRITE_ALLOWANCE_MS = 3000;
const ADDRESS = /^(?:[A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/;
const RUN_PART = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
export const ADDRESSES_KEY = "profscope.capture.addresses";

/** The addresses of a comma-, space- or line-separated list. */
export function parseAddresses(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((a) => a.trim())
    .filter((a) => a !== "");
}

/** What is wrong with the form, one message per problem (empty when it can be sent). */
export function formProblems(form: CaptureForm): string[] {
  const problems: string[] = [];
  const addresses = parseAddresses(form.addresses);
  if (!addresses.length) problems.push("Give at least one profiler server address (host:port).");
  for (const a of addresses) if (!ADDRESS.test(a)) problems.push(`"${a}" is not host:port (e.g. localhost:9012).`);
  if (!Number.isInteger(form.durationMs) || form.durationMs < 1 || form.durationMs > MAX_MS)
    problems.push(`Duration is 1 to ${MAX_MS} ms.`);
  if (!Number.isInteger(form.delayMs) || form.delayMs < 0 || form.delayMs > MAX_MS) problems.push(`Delay is 0 to ${MAX_MS} ms.`);
  const parts = form.run.split("/");
  if (form.run !== "." && (!form.run || !parts.every((p) => RUN_PART.test(p)) || parts.includes("plugins")))
    problems.push("Run is a folder name: letters, digits, _ - . and / between parts.");
  return problems;
}

/** The JSON body of `POST capture`. */
export function captureBody(form: CaptureForm): Record<string, unknown> {
  return {
    addresses: parseAddresses(form.addresses),
    duration_ms: form.durationMs,
    delay_ms: form.delayMs,
    host_tracer_level: form.hostTracerLevel,
    python_tracer_level: form.pythonTracerLevel,
    device_tracer_level: form.deviceTracerLevel,
    run: form.run,
  };
}

/** How long the capture should take, as the progress bar counts it. */
export function expectedMs(form: CaptureForm): number {
  return form.delayMs + form.durationMs + WRITE_ALLOWANCE_MS;
}

/** The progress line: what is happening and the time passed of the time expected. */
export function progressText(form: CaptureForm, elapsedMs: number): string {
  const servers = parseAddresses(form.addresses).length;
  const from = servers === 1 ? parseAddresses(form.addresses)[0] : `${servers} servers`;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  if (elapsedMs < form.delayMs) return `Waiting ${seconds(form.delayMs - elapsedMs)} before recording on ${from}…`;
  if (elapsedMs < form.delayMs + form.durationMs)
    return `Recording on ${from}: ${seconds(elapsedMs - form.delayMs)} of ${seconds(form.durationMs)}…`;
  return `Recorded; ${from} writing the profile into the logdir…`;
}

/** The addresses last captured from, or the default. */
export function recallAddresses(storage: Pick<Storage, "getItem"> | null): string {
  try {
    return storage?.getItem(ADDRESSES_KEY) || DEFAULT_FORM.addresses;
  } catch {
    return DEFAULT_FORM.addresses; // storage refused (a sandboxed frame): nothing remembered
  }
}

export function rememberAddresses(storage: Pick<Storage, "setItem"> | null, addresses: string): void {
  try {
    storage?.setItem(ADDRESSES_KEY, parseAddresses(addresses).join(", "));
  } catch {
    // not remembered: the dialog still works
  }
}

/** The lines that write a PyTorch profile into the logdir, where this tab finds it. */
export function pytorchSnippet(logdir: string, run: string): string {
  const folder = `${logdir.replace(/\/+$/, "")}/${run === "." ? "" : run}`.replace(/\/$/, "");
  return [
    "import torch",
    "from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler",
    "",
    "with profile(",
    "    activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],",
    "    schedule=schedule(wait=1, warmup=1, active=3, repeat=1),",
    `    on_trace_ready=tensorboard_trace_handler(${JSON.stringify(folder)}),`,
    "    record_shapes=True,",
    "    profile_memory=True,",
    "    with_stack=True,",
    ") as prof:",
    "    for batch in loader:",
    "        train_step(batch)",
    "        prof.step()  # one call per step: the schedule counts them",
  ].join("\n");
}

/** A refused or failed capture, with the server's reason and its kind (`X-Profscope-Capture-Error`). */
export class CaptureFailed extends Error {
  override name = "CaptureFailed";
  constructor(
    message: string,
    readonly status: number,
    readonly kind: string,
  ) {
    super(message);
  }
}

/** The capture routes under the plugin's base URL. */
export class CaptureApi {
  private readonly fetchImpl: FetchLike;

  constructor(
    private readonly base: string,
    fetchImpl?: FetchLike,
  ) {
    this.fetchImpl = fetchImpl ?? ((input, init) => fetch(input, init));
  }

  async status(signal?: AbortSignal): Promise<CaptureStatus> {
    const res = await this.fetchImpl(new URL("capture/status", this.base).href, { signal, credentials: "same-origin" });
    if (!res.ok) throw new CaptureFailed(await res.text(), res.status, "status");
    return (await res.json()) as CaptureStatus;
  }

  /** Captures and answers once the session has landed. `X-XSRF-Protected` is the header TensorBoard's
   * own frontend puts on its POSTs; the server refuses a capture without it. */
  async capture(form: CaptureForm, signal?: AbortSignal): Promise<Captured> {
    const res = await this.fetchImpl(new URL("capture", this.base).href, {
      method: "POST",
      signal,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-XSRF-Protected": "1" },
      body: JSON.stringify(captureBody(form)),
    });
    if (!res.ok) {
      const text = (await res.text()).trim() || `HTTP ${res.status}`;
      throw new CaptureFailed(text, res.status, res.headers.get("X-Profscope-Capture-Error") ?? "");
    }
    return (await res.json()) as Captured;
  }
}
