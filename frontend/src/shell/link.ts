/** Deep links: the whole view state (run, session, host, tab, the view's own keys such as visible
 * range and selection) lives in a URL fragment, so a copied address reopens the same view.
 *
 * Inside TensorBoard the plugin runs in a same-origin iframe; TensorBoard keeps its active plugin in
 * the top window's fragment as `#profscope`, and tolerates extra `&key=value` parts after it, so we
 * keep ours there (`#profscope&run=…&start=…`): the address bar then is the link. Outside
 * TensorBoard (or if the top window is not reachable) the iframe's own fragment is used. */

export interface FragmentStore {
  /** Where the state is kept, for the UI ("address bar" vs "this frame"). */
  readonly where: "top" | "self";
  read(): URLSearchParams;
  /** `push`: a new browser history entry (a tab switch, a link between tabs, another run), so Back
   * returns to the view before; else the current entry is updated (moving around one view). */
  write(params: URLSearchParams, push?: boolean): void;
  /** The shareable address holding `params`. */
  href(params: URLSearchParams): string;
  /** Calls back when the user edits the fragment or navigates history. */
  listen(cb: () => void): () => void;
}

const KEY_ORDER = ["run", "session", "host", "tool"];

/** Parameters in a stable order (shell keys first), `+`-free so links survive copy/paste. */
export function encodeParams(params: URLSearchParams): string {
  const keys = [...new Set(params.keys())].sort((a, b) => {
    const ia = KEY_ORDER.indexOf(a);
    const ib = KEY_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  return keys
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(params.get(k) ?? "")}`)
    .join("&");
}

/** The params after `#<prefix>&` (or after `#` when there is no prefix). */
export function parseFragment(hash: string, prefix: string): URLSearchParams {
  let h = hash.startsWith("#") ? hash.slice(1) : hash;
  if (prefix) {
    if (h !== prefix && !h.startsWith(`${prefix}&`)) return new URLSearchParams();
    h = h.slice(prefix.length + 1);
  }
  return new URLSearchParams(h);
}

export function buildFragment(prefix: string, params: URLSearchParams): string {
  const body = encodeParams(params);
  if (!prefix) return `#${body}`;
  return body ? `#${prefix}&${body}` : `#${prefix}`;
}

class WindowFragmentStore implements FragmentStore {
  constructor(
    readonly where: "top" | "self",
    private readonly win: Window,
    private readonly prefix: string,
  ) {}

  read(): URLSearchParams {
    return parseFragment(this.win.location.hash, this.prefix);
  }

  write(params: URLSearchParams, push = false): void {
    const hash = buildFragment(this.prefix, params);
    const current = this.win.location.hash;
    if (hash === current) return;
    // TensorBoard shows another plugin now: its fragment is not ours to rewrite.
    if (this.prefix && current !== `#${this.prefix}` && !current.startsWith(`#${this.prefix}&`)) return;
    // Moving around a trace must not flood the browser history: only whole new views push.
    if (push) this.win.history.pushState(this.win.history.state, "", hash);
    else this.win.history.replaceState(this.win.history.state, "", hash);
  }

  href(params: URLSearchParams): string {
    const u = new URL(this.win.location.href);
    u.hash = buildFragment(this.prefix, params);
    return u.href;
  }

  listen(cb: () => void): () => void {
    this.win.addEventListener("hashchange", cb);
    return () => this.win.removeEventListener("hashchange", cb);
  }
}

/** The top window when it is TensorBoard showing this plugin and reachable (same origin). */
function tensorBoardTop(self: Window, plugin: string): Window | null {
  try {
    const top = self.top;
    if (!top || top === self) return null;
    const hash = top.location.hash;
    return hash === `#${plugin}` || hash.startsWith(`#${plugin}&`) ? top : null;
  } catch {
    return null;
  }
}

export function fragmentStore(self: Window = window, plugin = "profscope"): FragmentStore {
  const top = tensorBoardTop(self, plugin);
  return top ? new WindowFragmentStore("top", top, plugin) : new WindowFragmentStore("self", self, "");
}
