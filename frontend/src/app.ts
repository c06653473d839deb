/** The profscope app: shell plus lazily loaded views, rendered into the plugin iframe's document. */

import { ProfscopeClient, pluginBaseFrom } from "./api/client.ts";
import { fragmentStore } from "./shell/link.ts";
import { Shell } from "./shell/shell.ts";
import css from "./styles.css";
import { watchTheme } from "./theme.ts";

export interface RenderOptions {
  /** URL of /data/plugin/profscope/ (default: derived from this module's own URL). */
  base?: string;
  /** Element to render into (default: document.body). */
  root?: HTMLElement;
}

export function render(options: RenderOptions = {}): Shell {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  const root = options.root ?? document.body;
  root.classList.add("ps-root");
  watchTheme(window);
  const client = new ProfscopeClient(options.base ?? pluginBaseFrom(import.meta.url));
  const shell = new Shell(client, fragmentStore());
  root.append(shell.el);
  void shell.loadRuns();
  return shell;
}
