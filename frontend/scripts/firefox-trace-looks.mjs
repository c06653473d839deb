// The Trace tab's track panel, details and looks in headless Firefox (browser setup:
// scripts/firefox-session.mjs), for tests/e2e/test_firefox.py: at 1280×800, the "Device first"
// preset of the Tracks panel, a search match's launch → kernel latency, the axis' tooltip (its labels
// are offsets from the view's start), the height the timeline keeps
// with an event selected and the bars on one line, then TensorBoard's dark-mode toggle: the timeline,
// the details panel and the Overview tab dark. Writes <outdir>/results.json (orders, links, sizes,
// colours); the Python test asks the server and asserts.
//
//   node scripts/firefox-trace-looks.mjs <tensorboard url> <outdir> <search term> [firefox path]
import { join } from "node:path";
import { runInFirefox, sleep } from "./firefox-session.mjs";

const [url, outdir, term, firefox] = process.argv.slice(2);
const LABEL_WIDTH = 260;

await runInFirefox({ url, outdir, firefox }, async ({ page, frame, results, press, rectOf }) => {
  await page.setViewport({ width: 1280, height: 800 });
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
