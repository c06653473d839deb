/** Light or dark, as TensorBoard shows itself: inside TensorBoard the page follows its dark-mode
 * toggle (TensorBoard puts the class `dark-mode` on its `<body>`, the plugin's iframe's parent; its
 * "browser default" setting sets it from `prefers-color-scheme`); on its own (the parent out of reach)
 * the page follows `prefers-color-scheme`. The theme is `data-theme` on the document element, which
 * the CSS variables of styles.css and the canvas colours (views/trace/colors.ts) read. */

export type Theme = "light" | "dark";

/** The class TensorBoard's `<body>` has in dark mode. */
export const TENSORBOARD_DARK_CLASS = "dark-mode";

/** TensorBoard's body, when this page is its plugin iframe (same origin); null on its own. */
function tensorBoardBody(win: Window): HTMLElement | null {
  try {
    if (win.parent === win) return null;
    const body = win.parent.document.body;
    // TensorBoard's app element: another page framing ours is not followed.
    return body?.querySelector("tb-webapp, tf-tensorboard") ? body : null;
  } catch {
    return null;
  }
}

export function themeOf(win: Window): Theme {
  const body = tensorBoardBody(win);
  if (body) return body.classList.contains(TENSORBOARD_DARK_CLASS) ? "dark" : "light";
  return win.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Keeps `data-theme` of `win`'s document element up to date, calling `changed` after each change;
 * returns the function that stops watching. */
export function watchTheme(win: Window, changed: (theme: Theme) => void = () => {}): () => void {
  const root = win.document.documentElement;
  const apply = () => {
    const theme = themeOf(win);
    if (root.dataset.theme === theme) return;
    root.dataset.theme = theme;
    changed(theme);
  };
  apply();
  const media = win.matchMedia?.("(prefers-color-scheme: dark)");
  media?.addEventListener?.("change", apply);
  const body = tensorBoardBody(win);
  const observer = body ? new MutationObserver(apply) : null;
  if (body) observer?.observe(body, { attributes: true, attributeFilter: ["class"] });
  return () => {
    media?.removeEventListener?.("change", apply);
    observer?.disconnect();
  };
}
