/** The `roofline` route (docs/ROOFLINE.md) through the shared client, and the view's deep-link keys:
 * `infeed=0` leaves infeed / outfeed out (absent: included, the route's default), `step=N` lists the
 * ops of step N only. */

import type { RooflineAnswer } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { Subject } from "../../api/types.ts";

export type {
  RooflineAnswer,
  RooflineDevice,
  RooflineFigures,
  RooflineOpRow,
  RooflinePeak,
  RooflineProgramRow,
} from "../../api/answers.gen.ts";

export interface RooflineOptions {
  includeInfeed: boolean;
  /** The step whose ops are listed; null: every step. */
  step: number | null;
}

/** The options a deep link names; malformed values fall back to the defaults. */
export function readOptions(params: URLSearchParams): RooflineOptions {
  const step = params.get("step");
  return {
    includeInfeed: params.get("infeed") !== "0",
    step: step !== null && /^\d+$/.test(step) ? Number(step) : null,
  };
}

/** The deep-link keys of `options` (undefined removes a key, so defaults leave the link short). */
export function optionParams(options: RooflineOptions): Record<string, string | undefined> {
  return {
    infeed: options.includeInfeed ? undefined : "0",
    step: options.step === null ? undefined : String(options.step),
  };
}

export function sameOptions(a: RooflineOptions, b: RooflineOptions): boolean {
  return a.includeInfeed === b.includeInfeed && a.step === b.step;
}

export class RooflineApi {
  constructor(private readonly client: ProfscopeClient) {}

  answer(subject: Subject, options: RooflineOptions, signal?: AbortSignal): Promise<RooflineAnswer> {
    const params: Record<string, number> = { infeed: options.includeInfeed ? 1 : 0 };
    if (options.step !== null) params.step = options.step;
    return this.client.getJson<RooflineAnswer>("roofline", subject, params, signal);
  }
}
