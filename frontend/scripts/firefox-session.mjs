// The browser setup every Firefox run of the profscope UI shares (scripts/firefox-e2e.mjs): headless
// Firefox ESR over WebDriver BiDi (puppeteer-core), the profscope tab of a TensorBoard opened and its
// plugin frame found, page errors collected, and <outdir>/results.json written whatever happens (with
// `failure` and a screenshot when the run throws). The Python tests read results.json and assert.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The page's URL once the view's link stops changing: it follows the view 200 ms after each frame,
 * so after `idle()` it is read every 450 ms until two reads agree (at most 30 times). */
export async function settledUrl(page, idle) {
  await idle();
  let last = await page.evaluate(() => location.href);
  for (let i = 0; i < 30; i++) {
    await sleep(450);
    const now = await page.evaluate(() => location.href);
    if (now === last) return now;
    last = now;
  }
  return last;
}

/** page.setViewport for Firefox ESR 140: puppeteer's BiDi setViewport sends the viewport and an
 * emulation.setScreenOrientationOverride together, and this Firefox answers the second "unknown
 * command" after applying the first; that one error is tolerated (as puppeteer tolerates it for
 * setTouchOverride), any other is thrown. */
export async function setViewportSize(page, width, height) {
  try {
    await page.setViewport({ width, height });
  } catch (error) {
    if (!String(error?.message).includes("unknown command emulation.setScreenOrientationOverride")) throw error;
  }
}

const PLUGIN_FRAME = "iframe[src*='plugin_entry.html?name=profscope']";

/** Opens `${url}/#profscope` in a fresh headless Firefox (1400×900) and runs `body(session)`, where
 * session = { page, frame, results, requests, press, rectOf, outdir }:
 * - results: { errors: [...], steps: {} }, written to <outdir>/results.json at the end;
 * - requests: every URL the page requested;
 * - press(selector): clicks an element from inside the plugin frame;
 * - rectOf(selector): the element's box in page coordinates (what page.mouse takes). */
export async function runInFirefox({ url, outdir, firefox = "/usr/bin/firefox-esr" }, body) {
  mkdirSync(outdir, { recursive: true });
  const results = { errors: [], steps: {} };
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
    const iframe = await page.waitForSelector(PLUGIN_FRAME, { timeout: 60000 });
    const frame = await iframe.contentFrame();
    await frame.waitForSelector("[data-testid=run-select] option", { timeout: 60000 });
    // Firefox ESR's BiDi cannot locate elements inside frames for puppeteer's click(): positions come
    // from the page (iframe) plus the frame (element), and buttons are clicked from inside the frame.
    const press = (sel) => frame.evaluate((s) => document.querySelector(s).click(), sel);
    const rectOf = async (sel) => {
      const outer = await page.evaluate((f) => {
        const r = document.querySelector(f).getBoundingClientRect();
        return { x: r.x, y: r.y };
      }, PLUGIN_FRAME);
      const inner = await frame.evaluate((s) => {
        const r = document.querySelector(s).getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height };
      }, sel);
      return { x: outer.x + inner.x, y: outer.y + inner.y, width: inner.width, height: inner.height };
    };
    await body({ page, frame, results, requests, press, rectOf, outdir });
  } catch (e) {
    results.failure = String(e && e.stack ? e.stack : e);
    for (const p of await browser.pages()) await p.screenshot({ path: join(outdir, "firefox_failure.png") }).catch(() => {});
  } finally {
    writeFileSync(join(outdir, "results.json"), JSON.stringify(results, null, 2));
    await browser.close();
  }
}
