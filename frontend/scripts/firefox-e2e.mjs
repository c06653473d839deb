// Drives the profscope Trace tab in headless Firefox (ESR, WebDriver BiDi via puppeteer-core) the way
// tests/e2e/test_firefox.py needs: open the tab, check drawn pixels, zoom with W, click an event,
// search, open the help. Writes <outdir>/results.json and screenshots; the Python test asserts.
//
//   node scripts/firefox-e2e.mjs <tensorboard url> <outdir> <search term> [firefox path]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const [url, outdir, term, firefox = "/usr/bin/firefox-esr"] = process.argv.slice(2);
const LABEL_WIDTH = 260;
mkdirSync(outdir, { recursive: true });
const results = { errors: [], steps: {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath: firefox,
  headless: true,
  defaultViewport: null,
  args: ["--width=1400", "--height=900"],
});
try {
  const page = await browser.newPage();
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => results.errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") results.errors.push(`console.error: ${m.text()}`);
  });
  await page.goto(`${url}/#profscope`);
  const iframe = await page.waitForSelector("iframe[src*='plugin_entry.html?name=profscope']", { timeout: 60000 });
  const frame = await iframe.contentFrame();
  await frame.waitForSelector("[data-testid=run-select] option", { timeout: 60000 });
  // Firefox ESR's BiDi cannot locate elements inside frames for puppeteer's click(): positions come
  // from the page (iframe) plus the frame (element), and buttons are clicked from inside the frame.
  const press = (sel) => frame.evaluate((s) => document.querySelector(s).click(), sel);
  const rectOf = async (sel) => {
    const outer = await page.evaluate(() => {
      const r = document.querySelector("iframe[src*='plugin_entry.html?name=profscope']").getBoundingClientRect();
      return { x: r.x, y: r.y };
    });
    const inner = await frame.evaluate((s) => {
      const r = document.querySelector(s).getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height };
    }, sel);
    return { x: outer.x + inner.x, y: outer.y + inner.y, width: inner.width, height: inner.height };
  };
  await press("[data-testid=tab-trace]");
  const idle = () =>
    frame.waitForFunction(
      () => {
        const c = document.querySelector("[data-testid=trace-canvas]");
        const s = document.querySelector("[data-testid=trace-status]");
        return c && Number(c.dataset.boxes) > 0 && s && s.dataset.loading === "0";
      },
      { timeout: 120000 },
    );
  await idle();
  const ink = () =>
    frame.evaluate((left) => {
      const c = document.querySelector("[data-testid=trace-canvas]");
      const dpr = c.width / c.getBoundingClientRect().width;
      const x0 = Math.ceil(left * dpr);
      const data = c.getContext("2d").getImageData(x0, 0, c.width - x0, c.height).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) {
        const r = data[i], g = data[i + 1], b = data[i + 2];
        if (Math.max(r, g, b) - Math.min(r, g, b) > 60) n++;
      }
      return n;
    }, LABEL_WIDTH);
  results.steps.opened = { ink: await ink() };
  await page.screenshot({ path: join(outdir, "firefox_opened.png") });

  // W zooms in around the mouse; finer tiles are requested.
  const level = () => frame.evaluate(() => Number(document.querySelector("[data-testid=trace-canvas]").dataset.level));
  const canvasBox = await rectOf("[data-testid=trace-canvas]");
  const levelBefore = await level();
  const seen = requests.length;
  await page.mouse.move(canvasBox.x + LABEL_WIDTH + (canvasBox.width - LABEL_WIDTH) * 0.4, canvasBox.y + 60);
  await page.keyboard.down("w");
  await sleep(800);
  await page.keyboard.up("w");
  await idle();
  await sleep(400);
  const tileLevels = requests
    .slice(seen)
    .filter((u) => u.includes("/trace/tile?"))
    .map((u) => Number(new URL(u).searchParams.get("level")));
  results.steps.zoom = { levelBefore, levelAfter: await level(), tileLevels, ink: await ink(), url: await page.evaluate(() => location.href) };
  await page.screenshot({ path: join(outdir, "firefox_zoomed.png") });

  // The link follows the selection a moment after it settles: wait for the selected id in it.
  const linkedSelection = async () => {
    const id = await frame.$eval("[data-testid=details-id]", (e) => e.textContent);
    await page.waitForFunction((sel) => location.hash.includes(`sel=${sel}&`) || location.hash.endsWith(`sel=${sel}`), { timeout: 15000 }, id);
    return page.evaluate(() => location.href);
  };

  // Click inside a drawn box: the details panel shows its name and duration.
  const point = await frame.evaluate((left) => {
    const c = document.querySelector("[data-testid=trace-canvas]");
    const dpr = c.width / c.getBoundingClientRect().width;
    const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const pts = [];
    for (let y = 2; y < c.height; y += Math.round(3 * dpr)) {
      for (let x = Math.ceil((left + 2) * dpr); x < c.width - 4; x += 2) {
        const i = (y * c.width + x) * 4, j = i - 12, k = i + 12;
        const r = data[i], g = data[i + 1], b = data[i + 2];
        if (Math.max(r, g, b) - Math.min(r, g, b) > 60 && data[j] === r && data[k] === r && data[j + 1] === g && data[k + 1] === g) {
          pts.push({ x: x / dpr, y: y / dpr });
          x += 80;
        }
      }
    }
    return pts[Math.floor(pts.length / 2)] ?? null;
  }, LABEL_WIDTH);
  if (point) {
    await page.mouse.click(canvasBox.x + point.x, canvasBox.y + point.y);
    await frame.waitForSelector("[data-testid=details-id]", { timeout: 20000 });
    results.steps.click = {
      name: await frame.$eval("[data-testid=details-name]", (e) => e.textContent),
      duration: await frame.$eval("[data-testid=details-duration]", (e) => e.textContent),
      url: await linkedSelection(),
    };
    await page.screenshot({ path: join(outdir, "firefox_details.png") });
  }

  // Search jumps to the first match and selects it.
  await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
  await page.keyboard.type(term);
  await page.keyboard.press("Enter");
  await frame.waitForFunction(() => /^1 \//.test(document.querySelector("[data-testid=search-count]").textContent), { timeout: 30000 });
  await frame.waitForFunction(
    (t) => (document.querySelector("[data-testid=details-name]")?.textContent ?? "").includes(t),
    { timeout: 30000 },
    term,
  );
  await idle();
  results.steps.search = {
    count: await frame.$eval("[data-testid=search-count]", (e) => e.textContent),
    name: await frame.$eval("[data-testid=details-name]", (e) => e.textContent),
    url: await linkedSelection(),
  };
  await page.screenshot({ path: join(outdir, "firefox_search.png") });

  // "?" opens the help overlay (focus back on the timeline first: the search box keeps its keys).
  await page.mouse.click(canvasBox.x + 5, canvasBox.y + canvasBox.height - 5);
  await page.keyboard.press("?");
  await frame.waitForSelector("[data-testid=help-overlay]:not([hidden])", { timeout: 10000 });
  results.steps.help = { text: await frame.$eval("[data-testid=help-overlay]", (e) => e.textContent) };
  await page.screenshot({ path: join(outdir, "firefox_help.png") });
} catch (e) {
  results.failure = String(e && e.stack ? e.stack : e);
} finally {
  writeFileSync(join(outdir, "results.json"), JSON.stringify(results, null, 2));
  await browser.close();
}
