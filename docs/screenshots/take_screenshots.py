"""Take the README's five screenshots (one per profscope tab) from a running TensorBoard on the demo logdir.

Start TensorBoard on the demo logdir first, on the loopback address:

    tensorboard --logdir demo/logdir --host 127.0.0.1 --port 6123

then run, from the repository root, with Playwright installed (`pip install -e ".[test]"`) and a
Chromium (Debian's `chromium` package, or `--chromium PATH`):

    python docs/screenshots/take_screenshots.py http://127.0.0.1:6123 [--out docs/screenshots]

It writes overview.png (the slow-input CPU run: phases and a finding), trace.png (the H100 GPU run's
timeline with its GPU stream),
roofline.png (the TPU v6e run), xla.png (pytorch_xla_cpu_recompile), compare.png (the slow-input
CPU run against its prefetching twin) and memory.png (the CPU run recorded with its memory events).
Each view is waited for until it has drawn (no spinner, no "ingesting" text) before the shot.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
import urllib.parse
import urllib.request

WIDTH, HEIGHT = 1440, 900
IFRAME = "iframe[src*='plugin_entry.html?name=profscope']"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
LOAD_TIMEOUT_MS = 180_000

GPU_RUN = "pytorch_h100_bert"
TPU_RUN = "jax_tpu_v6e_inference"
XLA_RUN = "pytorch_xla_cpu_recompile"
SLOW_RUN, FIXED_RUN = "pytorch_cpu_slow_input", "pytorch_cpu_prefetch_input"
MEMORY_RUN = "pytorch_cpu_memory"

# No loading indicator or "ingesting" message left anywhere in the plugin's frame.
_SETTLED_JS = """() => {
  const text = document.body ? document.body.innerText : '';
  if (/ingesting|loading…|loading\\.\\.\\./i.test(text)) return false;
  const busy = [...document.querySelectorAll('[aria-busy=true], .spinner, [data-loading=\"1\"]')];
  return busy.every(e => e.offsetParent === null);
}"""


def runs(base: str) -> list[dict]:
    with urllib.request.urlopen(f"{base}/data/plugin/profscope/runs", timeout=120) as response:
        return json.load(response)["runs"]


def subject(
    all_runs: list[dict], run: str, prefix: str = "", all_hosts: bool = True, session_name: str | None = None
) -> dict[str, str]:
    """run / session / host keys of the run's first session, or the one named (every host, or the first)."""
    sessions = next(r for r in all_runs if r["name"] == run)["sessions"]
    session = next(s for s in sessions if session_name in (None, s["name"]))
    hosts = [h["name"] for h in session["hosts"]]
    return {
        f"{prefix}run": run,
        f"{prefix}session": session["name"],
        f"{prefix}host": ",".join(hosts) if all_hosts else hosts[0],
    }


def open_tool(page, base: str, keys: dict[str, str], tool: str):  # type: ignore[no-untyped-def]
    """Open `#profscope&…&tool=TOOL` and return the plugin's frame."""
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(f"{base}/#profscope&{urllib.parse.urlencode(keys)}&tool={tool}")
    frame = page.wait_for_selector(IFRAME, state="attached", timeout=60_000).content_frame()
    frame.wait_for_load_state("load", timeout=60_000)
    return frame


def settle(page, frame) -> None:  # type: ignore[no-untyped-def]
    frame.wait_for_function(_SETTLED_JS, timeout=LOAD_TIMEOUT_MS)
    page.wait_for_timeout(800)  # let the last canvas frame and the deep link catch up


def fail_on_error(frame, selector: str) -> None:  # type: ignore[no-untyped-def]
    error = frame.query_selector(selector)
    if error is not None:
        raise SystemExit(f"the view shows an error: {error.inner_text()}")


def shoot(page, path: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    page.screenshot(path=str(path))
    print(f"{path}  {path.stat().st_size} bytes")


def overview(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    # The slow-input CPU run: its labelled phases and the costed finding they raise.
    frame = open_tool(page, base, subject(all_runs, SLOW_RUN), "overview")
    frame.wait_for_selector("[data-testid=ov-tables], [data-testid=ov-error]", timeout=LOAD_TIMEOUT_MS)
    fail_on_error(frame, "[data-testid=ov-error]")
    frame.wait_for_function(
        "() => [...document.querySelectorAll('.ov-chart canvas')].every(c => c.dataset.drawn === '1')",
        timeout=60_000,
    )
    settle(page, frame)
    shoot(page, out / "overview.png")


def trace(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    frame = open_tool(page, base, subject(all_runs, GPU_RUN), "trace")
    frame.wait_for_function(
        """() => {
          const c = document.querySelector('[data-testid=trace-canvas]');
          const s = document.querySelector('[data-testid=trace-status]');
          return c && c.dataset.level !== undefined && s && s.dataset.loading === '0';
        }""",
        timeout=LOAD_TIMEOUT_MS,
    )
    settle(page, frame)
    # The host's ops and their Python frames (a track of their own) fill the view: collapse the first (CPU)
    # section with a click on its header, so the GPU stream's kernels come up under it.
    box = frame.locator("[data-testid=trace-canvas]").bounding_box()
    page.mouse.click(box["x"] + 40, box["y"] + 10)
    settle(page, frame)
    # Find a kernel: the view zooms to the first match and selects it, filling the details panel.
    frame.fill("[data-testid=search-input]", "flash_fwd_kernel")
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_selector("[data-testid=details-name]", timeout=60_000)
    settle(page, frame)
    # ...then zoom out (hold S) until the kernels before and after it are in view too.
    frame.evaluate("document.activeElement.blur()")  # keys go to the timeline, not the search box
    page.keyboard.down("s")
    page.wait_for_timeout(1600)
    page.keyboard.up("s")
    settle(page, frame)
    shoot(page, out / "trace.png")


def roofline(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    frame = open_tool(page, base, subject(all_runs, TPU_RUN), "roofline")
    frame.wait_for_selector(
        "[data-testid=rf-ops], [data-testid=rf-not-observed], [data-testid=rf-error]", timeout=LOAD_TIMEOUT_MS
    )
    fail_on_error(frame, "[data-testid=rf-error]")
    if frame.query_selector("[data-testid=rf-not-observed]") is not None:
        raise SystemExit(f"{TPU_RUN}: the Roofline says not observed")
    frame.wait_for_selector("[data-testid=rf-chart] canvas[data-drawn]", timeout=60_000)
    frame.wait_for_selector("[data-testid=rf-point][data-x]", state="attached", timeout=60_000)
    settle(page, frame)
    shoot(page, out / "roofline.png")


def xla(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    frame = open_tool(page, base, subject(all_runs, XLA_RUN, all_hosts=False, session_name="xla"), "xla")
    frame.wait_for_selector("[data-testid=xla-view]", timeout=LOAD_TIMEOUT_MS)
    frame.wait_for_selector("[data-testid=finding-recompilation]", timeout=LOAD_TIMEOUT_MS)
    frame.wait_for_selector("[data-testid=step-charts] canvas[data-drawn]", timeout=60_000)
    settle(page, frame)
    shoot(page, out / "xla.png")


def compare(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    keys = {
        **subject(all_runs, SLOW_RUN, all_hosts=False),
        **subject(all_runs, FIXED_RUN, prefix="base_", all_hosts=False),
    }
    frame = open_tool(page, base, keys, "compare")
    frame.wait_for_selector("[data-testid=cmp-ops], [data-testid=cmp-error]", timeout=LOAD_TIMEOUT_MS)
    fail_on_error(frame, "[data-testid=cmp-error]")
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=cmp-strip-canvas]')?.dataset.drawn === '1'",
        timeout=60_000,
    )
    settle(page, frame)
    shoot(page, out / "compare.png")


def memory(page, base: str, all_runs: list[dict], out: pathlib.Path) -> None:  # type: ignore[no-untyped-def]
    frame = open_tool(page, base, subject(all_runs, MEMORY_RUN, all_hosts=False), "memory")
    frame.wait_for_selector(
        "[data-testid=mem-chart-canvas][data-drawn], [data-testid=mem-error]", timeout=LOAD_TIMEOUT_MS
    )
    fail_on_error(frame, "[data-testid=mem-error]")
    settle(page, frame)
    shoot(page, out / "memory.png")


SHOTS = {
    "overview": overview,
    "trace": trace,
    "roofline": roofline,
    "xla": xla,
    "compare": compare,
    "memory": memory,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base_url", help="TensorBoard's address, e.g. http://127.0.0.1:6123")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--only", nargs="*", choices=sorted(SHOTS), help="take only these shots")
    args = parser.parse_args(argv)
    base = args.base_url.rstrip("/")
    host = urllib.parse.urlsplit(base).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        parser.error(f"{base}: use a loopback address (TensorBoard started with --host 127.0.0.1)")

    from playwright.sync_api import sync_playwright

    all_runs = runs(base)
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        for name in args.only or SHOTS:
            SHOTS[name](page, base, all_runs, args.out)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
