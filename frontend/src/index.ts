/** The module TensorBoard imports (es_module_path) inside the plugin iframe: it loads the app that
 * sits in static/ next to its chunks and hands it the plugin's data base URL. */

function baseUrl(): URL {
  const here = new URL(".", import.meta.url);
  return here.pathname.endsWith("/static/") ? new URL("../", here) : here;
}

export async function render(): Promise<void> {
  const base = baseUrl();
  try {
    const app = await import(new URL("static/app.js", base).href);
    app.render({ base: base.href });
  } catch (e) {
    const box = document.createElement("pre");
    box.setAttribute("role", "alert");
    box.textContent = `profscope could not start: ${e instanceof Error ? e.message : String(e)}`;
    document.body.append(box);
  }
}
