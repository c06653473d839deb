/** The `?` overlay: every key and mouse gesture of the trace viewer, from one table so the help
 * cannot drift from what the code binds. */

import { h } from "../../dom.ts";

export const KEY_HELP: [string, string][] = [
  ["W / S", "Zoom in / out around the mouse (hold to keep zooming)"],
  ["A / D", "Pan left / right (hold to keep panning); ← / → too"],
  ["Ctrl / ⌘ / Alt + wheel, pinch", "Zoom around the mouse"],
  ["Wheel, trackpad", "Scroll tracks up / down; sideways or Shift+wheel pans"],
  ["1 or !", "Select tool: click an event, drag to summarize a range"],
  ["2 or @", "Pan tool: drag to move"],
  ["3 or #", "Zoom tool: drag across a time range to zoom to it"],
  ["4 or $", "Timing tool: drag to measure a range and show its duration"],
  ["Click", "Select an event and show its details"],
  ["Ctrl / ⌘ + click", "Add or remove an event from the selection"],
  ["F", "Zoom to the selection"],
  ["M", "Mark the selection's time range and show its duration"],
  ["0", "Zoom out to the whole trace"],
  ["/", "Find events…"],
  ["Enter / Shift+Enter", "Next / previous search match, panned to at the current zoom (in the search box or on the timeline)"],
  ["Z", "Zoom to where the device (or the selected event's section) is busy"],
  ["T", "Tracks: filter, hide, pin to the top, limit depth, fold; presets"],
  ["Esc", "Clear selection, marks and measurements; close this help"],
  ["?", "Show or hide this help"],
];

export function helpOverlay(onClose: () => void): HTMLElement {
  const table = h("table", { class: "tv-help-keys" });
  for (const [k, v] of KEY_HELP) table.append(h("tr", {}, h("th", {}, k), h("td", {}, v)));
  const close = h("button", { class: "ps-button", type: "button" }, "Close");
  close.addEventListener("click", onClose);
  const box = h(
    "div",
    { class: "tv-help", "data-testid": "help-overlay", role: "dialog", "aria-label": "Trace viewer keys", hidden: true },
    h(
      "div",
      { class: "tv-help-box" },
      h("h2", {}, "Trace viewer: keys and mouse"),
      table,
      h("p", { class: "tv-hint" }, "Times are relative to the start of the session timeline. Click a section header to collapse or expand it."),
      close,
    ),
  );
  box.addEventListener("click", (e) => {
    if (e.target === box) onClose();
  });
  return box;
}
