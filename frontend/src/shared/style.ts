/** A view's own stylesheet, added to the document the first time the view opens: views are loaded on
 * first use, so their rules travel with them instead of in the shell's styles.css. */
export function ensureStyle(id: string, css: string): void {
  if (document.getElementById(id)) return;
  const style = document.createElement("style");
  style.id = id;
  style.textContent = css;
  document.head.append(style);
}
