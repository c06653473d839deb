/** The four mouse tools of chrome://tracing and the keys that pick them. */

export type Tool = "select" | "pan" | "zoom" | "timing";

export const TOOLS: { id: Tool; key: string; shifted: string; title: string; help: string }[] = [
  { id: "select", key: "1", shifted: "!", title: "Select", help: "Click an event; drag to summarize a range" },
  { id: "pan", key: "2", shifted: "@", title: "Pan", help: "Drag to move the timeline" },
  { id: "zoom", key: "3", shifted: "#", title: "Zoom", help: "Drag across a time range to zoom to it" },
  { id: "timing", key: "4", shifted: "$", title: "Timing", help: "Drag to measure a time range" },
];

/** The tool a key picks: its digit, the digit's shifted sign on a US layout, or the digit key
 * whatever sign another layout prints on it; "?" never (it opens the help, on any layout). */
export function toolForKey(key: string, code: string): Tool | null {
  if (key === "?") return null;
  return TOOLS.find((t) => key === t.key || key === t.shifted || code === `Digit${t.key}`)?.id ?? null;
}
