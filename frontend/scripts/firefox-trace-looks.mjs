// The Trace tab's track panel, details and looks in headless Firefox (browser setup:
// scripts/firefox-session.mjs), for tests/e2e/test_firefox.py: at 1280×800, the "Device first"
// and "Hide Python stacks" presets of the Tracks panel, a search match's launch → kernel latency, the axis' tooltip (its labels
// are offsets from the view's start), the height the timeline keeps
// with an event selected and the bars on one line; Enter and Esc in the search box handing the keys
// back to the timeline (W zooms); a Roofline row's link to exactly its kernels and Back through the
// Roofline tab to the Trace window left; then TensorBoard's dark-mode toggle: the timeline,
// the details panel and the Overview tab dark. Writes <outdir>/results.json (orders, links, sizes,
// colours); the Python test asks the server and asserts.
//
//   node scripts/firefox-trace-looks.mjs <tensorboard url> <outdir> <search term> [firefox path]
import { join } from "node:path";
import { runInFirefox, setViewportSize, settledUrl, sleep } from "./firefox-session.mjs";

const [url, outdir, term, firefox] = process.argv.slice(2);
const LABEL_WIDTH = 260;

await runInFirefox({ url, outdir, firefox }, async ({ page, frame, results, press, rectOf }) => {
  await setViewportSize(page, 1280, 800);
  const idle = () =>
    frame.waitForFunction(
      () => {
        const c = document.querySelector("[data-testid=trace-canvas]");
        const s = document.querySelector("[data-testid=trace-status]");
        return c && Number(c.dataset.boxes) > 0 && s && s.dataset.loading === "0";
      },
      { timeout: 120000 },
    );
  const href = () => page.evaluate(() => location.href);
  const order = () => frame.$eval("[data-testid=trace-canvas]", (c) => c.dataset.trackOrder);
  await press("[data-testid=tab-trace]");
  await idle();

  // Tracks: "Device first" pins the GPU streams on top; the link keeps the choice.
  const orderBefore = await order();
  await press("[data-testid=tracks-button]");
  await press("[data-testid=tracks-preset-device-first]");
  await press("[data-testid=tracks-button]");
  await idle();
  await page.waitForFunction(() => location.href.includes("tp="), { timeout: 15000 });
  results.steps.tracks = { before: orderBefore, after: await order(), url: await href() };

  // "Hide Python stacks": the tracks of the Kineto threads' Python frames leave the timeline and the
  // link keeps the choice (tk=python); shown again for the steps below.
  await press("[data-testid=tracks-button]");
  await press("[data-testid=tracks-preset-hide-python]");
  await press("[data-testid=tracks-button]");
  await idle();
  await page.waitForFunction(() => location.href.includes("tk=python"), { timeout: 15000 });
  results.steps.hidePython = { after: await order(), url: await href() };
  await press("[data-testid=tracks-button]");
  await press("[data-testid=tracks-kind-python]");
  await press("[data-testid=tracks-button]");
  await idle();

  // A search match selected: its launch → kernel latency in the details.
  await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
  await page.keyboard.type(term);
  await page.keyboard.press("Enter");
  await frame.waitForSelector("[data-testid=flow-latency]", { timeout: 30000 });
  await idle();
  await sleep(300);
  const sizes = () =>
    frame.evaluate(() => {
      const size = (sel) => {
        const e = document.querySelector(sel);
        return { height: e.getBoundingClientRect().height, scroll: e.scrollWidth, width: e.clientWidth };
      };
      return { bar: size(".ps-bar"), toolbar: size(".tv-toolbar"), timeline: size(".tv-body") };
    });
  results.steps.details = {
    id: await frame.$eval("[data-testid=details-id]", (e) => e.textContent),
    latency: await frame.$eval("[data-testid=flow-latency]", (e) => e.innerText),
    sizes: await sizes(),
    viewport: await page.evaluate(() => window.innerHeight),
  };
  // The axis labels are offsets from the view's start; its tooltip gives the time from the trace's.
  const axis = await rectOf("[data-testid=trace-axis]");
  await page.mouse.move(axis.x + LABEL_WIDTH + 200, axis.y + 10);
  results.steps.details.axisLabel = await frame.$eval("[data-testid=trace-axis]", (e) => e.title);
  await page.screenshot({ path: join(outdir, "firefox_light.png") });

  // Enter and Esc in the search box give the keys back to the timeline: the next W zooms (the box
  // keeps the term, no "w" typed into it).
  const settled = () => settledUrl(page, idle);
  const focused = () => frame.evaluate(() => document.activeElement?.dataset.testid ?? document.activeElement?.tagName);
  const searchBox = () => frame.$eval("[data-testid=search-input]", (e) => e.value);
  const canvas = await rectOf("[data-testid=trace-canvas]");
  const keys = {};
  for (const key of ["Enter", "Escape"]) {
    await page.mouse.move(canvas.x + LABEL_WIDTH + 0.5 * (canvas.width - LABEL_WIDTH), canvas.y + 60);
    const before = await settled();
    await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
    await page.keyboard.press(key);
    const focus = await focused();
    // Enter walks to the next match: W once the jump has landed (a pan, the width kept).
    const sel = (u) => new URLSearchParams(new URL(u).hash.slice(1)).get("sel");
    if (key === "Enter") await page.waitForFunction((was) => new URLSearchParams(location.hash.slice(1)).get("sel") !== was, { timeout: 30000 }, sel(before));
    await settled();
    await page.keyboard.press("w");
    keys[key] = { before, focus, after: await settled(), box: await searchBox() };
  }
  results.steps.keys = keys;

  // A Roofline row's link: exactly its kernels ("1 of N"); Back returns to the Roofline tab, then
  // to the Trace window left by the tab switch.
  const left = await settled();
  await press("[data-testid=tab-roofline]");
  await frame.waitForSelector("[data-testid=rf-op-row] [data-testid=rf-open-trace]", { timeout: 120000 });
  const roofline = { left, tabUrl: await href() };
  // An op row whose name carries its shapes: its base name is shared by rows of other shapes.
  roofline.rank = await frame.evaluate(() => {
    const row = Array.from(document.querySelectorAll("[data-testid=rf-op-row]")).find(
      (tr) => tr.querySelector("[data-testid=rf-open-trace]") && tr.querySelector(".rf-name").textContent.includes("("),
    );
    row.querySelector("[data-testid=rf-open-trace]").click();
    return row.dataset.rank;
  });
  await page.waitForFunction(() => location.hash.includes("tool=trace") && location.hash.includes("lk=") && location.hash.includes("sel="), { timeout: 60000 });
  await frame.waitForSelector("[data-testid=linked-count]", { timeout: 60000 });
  roofline.linked = await frame.$eval("[data-testid=linked-count]", (e) => e.textContent);
  roofline.url = await href();
  await page.evaluate(() => history.back());
  await page.waitForFunction(() => location.hash.includes("tool=roofline"), { timeout: 15000 });
  await frame.waitForSelector("[data-testid=view-roofline]:not([hidden])", { timeout: 15000 });
  roofline.backUrl = await href();
  await page.evaluate(() => history.back());
  await page.waitForFunction(() => location.hash.includes("tool=trace"), { timeout: 15000 });
  await frame.waitForSelector("[data-testid=view-trace]:not([hidden])", { timeout: 15000 });
  roofline.backAgain = await settled();
  results.steps.roofline = roofline;

  // TensorBoard's own dark-mode menu: the plugin follows, canvas and panels included.
  await page.click("app-header-dark-mode-toggle-component button");
  await page.waitForFunction(() => document.querySelector("[role=menuitem]"), { timeout: 10000 });
  await page.evaluate(() => Array.from(document.querySelectorAll("[role=menuitem]")).find((b) => b.textContent.trim() === "Dark").click());
  await frame.waitForFunction(() => document.documentElement.dataset.theme === "dark", { timeout: 10000 });
  await idle();
  await sleep(300);
  const pixel = await frame.evaluate(([x, y]) => {
    const c = document.querySelector("[data-testid=trace-canvas]");
    const dpr = c.width / c.getBoundingClientRect().width;
    return Array.from(c.getContext("2d").getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3));
  }, [LABEL_WIDTH + 5, 5]);
  const colour = (sel, prop) => frame.$eval(sel, (e, p) => getComputedStyle(e)[p], prop);
  results.steps.dark = {
    theme: await frame.evaluate(() => document.documentElement.dataset.theme),
    canvas: pixel,
    detailsText: await colour("[data-testid=details-panel]", "color"),
    bar: await colour(".ps-bar", "backgroundColor"),
  };
  await page.screenshot({ path: join(outdir, "firefox_dark.png") });
  await press("[data-testid=tab-overview]");
  await frame.waitForSelector("[data-testid=view-overview] canvas[data-drawn]", { timeout: 120000 });
  results.steps.dark.overviewCard = await colour(".ov-card", "backgroundColor");
  results.steps.dark.overviewText = await colour(".ov-card-value", "color");
  await page.screenshot({ path: join(outdir, "firefox_overview_dark.png") });
});
