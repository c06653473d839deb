// Drives the profscope UI in headless Firefox (ESR, WebDriver BiDi via puppeteer-core; the browser setup
// is scripts/firefox-session.mjs) the way tests/e2e/test_firefox.py needs. The Trace tab: open it,
// check drawn pixels, zoom with W, click an event, search, open the help, measure with the Timing tool
// and M, toggle flows and follow a flow link, Ctrl+click two events, pan with A/D. Writes
// <outdir>/results.json (what it did and saw: positions, links, texts, pixel counts) and screenshots;
// the Python test computes the expectations and asserts.
//
//   node scripts/firefox-e2e.mjs <tensorboard url> <outdir> <search term> [firefox path]
//
// With "--fps" for the search term it runs the frames-per-second benchmark instead (results.steps.fps);
// with "--roofline" it opens the Roofline tab of the selected run, hovers a chart point, reads its
// tooltip, clicks it, follows its card's link into the Trace tab (the op's device executions, "1 of N")
// and goes Back to the Roofline tab (results.steps.roofline). Runs named after the Firefox path: the
// Roofline is that of the first; in the second, a search for the kernels that carry `kernel_details`
// selects one and its fields are read from the details panel (results.steps.kernelDetails).
import { join } from "node:path";
import { runInFirefox, setViewportSize, settledUrl, sleep } from "./firefox-session.mjs";

const [url, outdir, term, firefox, ...runs] = process.argv.slice(2);
const LABEL_WIDTH = 260;

await runInFirefox({ url, outdir, firefox }, async ({ page, frame, results, requests, press, rectOf }) => {
  // Drawn (with boxes, unless a zoomed-out dense view shows only density) and no tile loading.
  const idle = (timeout = 120000, boxes = true) =>
    frame.waitForFunction(
      (needBoxes) => {
        const c = document.querySelector("[data-testid=trace-canvas]");
        const s = document.querySelector("[data-testid=trace-status]");
        return c && c.dataset.level !== undefined && (!needBoxes || Number(c.dataset.boxes) > 0) && s && s.dataset.loading === "0";
      },
      { timeout },
      boxes,
    );
  if (term === "--roofline") return roofline();
  const tabOpened = Date.now();
  await press("[data-testid=tab-trace]");
  if (term === "--fps") await frameRates();
  else await interactions();

  async function interactions() {
    await idle();
    const text = (sel) => frame.$eval(sel, (e) => e.textContent);
    const href = () => page.evaluate(() => location.href);
    // CSS-px points (in the canvas) inside drawn boxes from `fromY` down: a coloured pixel whose
    // neighbours 3 px left and right have its colour.
    const eventPoints = (fromY) =>
      frame.evaluate(
        ([left, fromY]) => {
          const c = document.querySelector("[data-testid=trace-canvas]");
          const dpr = c.width / c.getBoundingClientRect().width;
          const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
          const pts = [];
          for (let y = Math.round(fromY * dpr); y < c.height; y += Math.round(3 * dpr)) {
            for (let x = Math.ceil((left + 2) * dpr); x < c.width - 4; x += 2) {
              const i = (y * c.width + x) * 4, j = i - 12, k = i + 12;
              const r = data[i], g = data[i + 1], b = data[i + 2];
              if (Math.max(r, g, b) - Math.min(r, g, b) > 60 && data[j] === r && data[k] === r && data[j + 1] === g && data[k + 1] === g) {
                pts.push({ x: x / dpr, y: y / dpr });
                x += 80;
              }
            }
          }
          return pts;
        },
        [LABEL_WIDTH, fromY],
      );
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
    results.steps.zoom = { levelBefore, levelAfter: await level(), tileLevels, ink: await ink(), url: await href() };
    await page.screenshot({ path: join(outdir, "firefox_zoomed.png") });

    // The link follows the selection a moment after it settles: wait for the selected id in it.
    const linkedSelection = async () => {
      const id = await text("[data-testid=details-id]");
      await page.waitForFunction((sel) => location.hash.includes(`sel=${sel}&`) || location.hash.endsWith(`sel=${sel}`), { timeout: 15000 }, id);
      return href();
    };
    // Enter in the search box goes to the next match of the term; the link once it selects it.
    const nextMatch = async () => {
      await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
      await page.keyboard.press("Enter");
      await frame.waitForFunction((t) => (document.querySelector("[data-testid=details-name]")?.textContent ?? "").includes(t), { timeout: 30000 }, term);
      return linkedSelection();
    };

    // Click inside a drawn box: the details panel shows its name and duration.
    const anywhere = await eventPoints(2);
    const point = anywhere[Math.floor(anywhere.length / 2)];
    if (point) {
      await page.mouse.click(canvasBox.x + point.x, canvasBox.y + point.y);
      await frame.waitForSelector("[data-testid=details-id]", { timeout: 20000 });
      results.steps.click = {
        name: await text("[data-testid=details-name]"),
        duration: await text("[data-testid=details-duration]"),
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
      count: await text("[data-testid=search-count]"),
      name: await text("[data-testid=details-name]"),
      url: await linkedSelection(),
    };
    await page.screenshot({ path: join(outdir, "firefox_search.png") });

    // "?" opens the help overlay (focus back on the timeline first: the search box keeps its keys).
    await page.mouse.click(canvasBox.x + 5, canvasBox.y + canvasBox.height - 5);
    await page.keyboard.press("?");
    await frame.waitForSelector("[data-testid=help-overlay]:not([hidden])", { timeout: 10000 });
    results.steps.help = { text: await text("[data-testid=help-overlay]") };
    await page.screenshot({ path: join(outdir, "firefox_help.png") });

    // ---- interactions: from the whole trace, nothing selected ----
    // The link follows the view 200 ms after each frame: wait until it stops changing.
    const settled = () => settledUrl(page, idle);
    const hold = async (key, ms) => {
      await page.keyboard.down(key);
      await sleep(ms);
      await page.keyboard.up(key);
    };
    const drag = async (x0, y0, x1, y1) => {
      await page.mouse.move(x0, y0);
      await page.mouse.down();
      for (let k = 1; k <= 12; k++) await page.mouse.move(x0 + ((x1 - x0) * k) / 12, y0 + ((y1 - y0) * k) / 12);
      await page.mouse.up();
    };
    const nextFrames = () => frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r)))));
    await page.keyboard.press("Escape"); // closes the help
    await page.keyboard.press("Escape"); // clears the selection
    await page.keyboard.press("0");
    const box = await rectOf("[data-testid=trace-canvas]");
    const timeline = box.width - LABEL_WIDTH;

    // Timing tool: drag across 25 % of the window; the readout says the measured duration.
    await page.keyboard.press("4");
    const before = await settled();
    const x0 = box.x + LABEL_WIDTH + 0.3 * timeline;
    const x1 = box.x + LABEL_WIDTH + 0.55 * timeline;
    await drag(x0, box.y + 120, x1, box.y + 120);
    await frame.waitForSelector("[data-testid=measure]:not([hidden])", { timeout: 10000 });
    await page.mouse.move(box.x + 5, box.y - 60);
    results.steps.measure = {
      tool: await frame.evaluate(() => document.querySelector("[data-testid=trace-canvas]").dataset.tool),
      box, x0, x1,
      before,
      after: await settled(),
      text: await frame.evaluate(() => document.querySelector("[data-testid=measure]").innerText),
      duration: await text("[data-testid=measure-duration]"),
      from: await text("[data-testid=measure-from]"),
      to: await text("[data-testid=measure-to]"),
    };
    await page.screenshot({ path: join(outdir, "firefox_measure.png") });

    // M marks the selected event: the readout then says its duration.
    await page.keyboard.press("1");
    const boxPoints = await eventPoints(44);
    const target = boxPoints[Math.floor(boxPoints.length / 2)];
    await page.mouse.click(box.x + target.x, box.y + target.y);
    await frame.waitForSelector("[data-testid=details-id]", { timeout: 20000 });
    const marked = await linkedSelection();
    const measured = await frame.evaluate(() => document.querySelector("[data-testid=measure]").innerText);
    await page.keyboard.press("m");
    await frame.waitForFunction((t) => document.querySelector("[data-testid=measure]").innerText !== t, { timeout: 10000 }, measured);
    results.steps.mark = {
      url: marked,
      duration: await text("[data-testid=measure-duration]"),
      from: await text("[data-testid=measure-from]"),
      to: await text("[data-testid=measure-to]"),
      detailsDuration: await text("[data-testid=details-duration]"),
    };
    await page.screenshot({ path: join(outdir, "firefox_mark.png") });

    // Flows: the selected kernel's search match, then nothing selected; the toggle draws arrows.
    const kernelUrl = await nextMatch();
    await page.keyboard.press("Escape"); // out of the search box
    await page.keyboard.press("Escape"); // clears the selection (and the measurements)
    await page.waitForFunction(() => !location.hash.includes("sel="), { timeout: 10000 });
    const view = await settled();
    await nextFrames();
    const flowCount = () => frame.evaluate(() => Number(document.querySelector("[data-testid=trace-canvas]").dataset.flows));
    const flowsBefore = await flowCount();
    await frame.evaluate(() => {
      const c = document.querySelector("[data-testid=trace-canvas]");
      window.__flowsOff = c.getContext("2d").getImageData(0, 0, c.width, c.height).data.slice();
    });
    await page.screenshot({ path: join(outdir, "firefox_flows_off.png") });
    await press("[data-testid=flows-toggle]");
    await nextFrames();
    const diff = await frame.evaluate(([rgb, left]) => {
      const c = document.querySelector("[data-testid=trace-canvas]");
      const dpr = c.width / c.getBoundingClientRect().width;
      const off = window.__flowsOff;
      const on = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      const x0 = Math.ceil(left * dpr);
      const dist = (d, i) => Math.hypot(d[i] - rgb[0], d[i + 1] - rgb[1], d[i + 2] - rgb[2]);
      let changed = 0, towards = 0, leftChanged = 0;
      for (let i = 0; i < on.length; i += 4) {
        if (off[i] === on[i] && off[i + 1] === on[i + 1] && off[i + 2] === on[i + 2]) continue;
        if ((i / 4) % c.width < x0) { leftChanged++; continue; }
        changed++;
        if (dist(on, i) < dist(off, i) - 8) towards++;
      }
      return { changed, towards, leftChanged };
    }, [[150, 60, 20], LABEL_WIDTH]);
    results.steps.flows = { kernelUrl, view, flowsBefore, flowsAfter: await flowCount(), viewAfter: await settled(), diff };
    await page.screenshot({ path: join(outdir, "firefox_flows_on.png") });

    // Select the next kernel, pan away with D, follow its "Flows in" link with a real click.
    const nextKernelUrl = await nextMatch();
    await page.keyboard.press("f"); // Enter gave the keys back to the timeline; the search kept the zoom: fit the kernel
    await page.mouse.move(box.x + LABEL_WIDTH + 0.5 * timeline, box.y + 100);
    await hold("d", 1200);
    const moved = await settled();
    const linkSel = "[data-testid=details-flows] a[data-flow-id]";
    const flowId = await frame.$eval(linkSel, (a) => {
      a.scrollIntoView({ block: "center" });
      return a.dataset.flowId;
    });
    const flowText = await text(linkSel);
    const a = await rectOf(linkSel);
    await page.mouse.click(a.x + Math.min(40, a.width / 2), a.y + Math.min(8, a.height / 2));
    await page.waitForFunction((id) => new URLSearchParams(location.hash.slice(1)).get("sel") === id, { timeout: 15000 }, flowId).catch(async () => {
      throw new Error(`the flow link did not select event ${flowId}: ${await href()}`);
    });
    results.steps.followFlow = { kernelUrl: nextKernelUrl, moved, flowId, flowText, followed: await settled(), name: await text("[data-testid=details-name]") };
    await page.screenshot({ path: join(outdir, "firefox_flow_followed.png") });

    // Ctrl+click two events in different rows of the whole trace: the summary table.
    await page.keyboard.press("Escape");
    await press("[data-testid=flows-toggle]");
    await page.keyboard.press("0");
    await settled();
    const pts = await eventPoints(44);
    const first = pts[0];
    const second = pts.find((p) => Math.abs(p.y - first.y) >= 18);
    await page.mouse.click(box.x + first.x, box.y + first.y);
    await frame.waitForSelector("[data-testid=details-id]", { timeout: 20000 });
    await page.keyboard.down("Control");
    await page.mouse.click(box.x + second.x, box.y + second.y);
    await page.keyboard.up("Control");
    await frame.waitForSelector("[data-testid=summary-table]", { timeout: 20000 });
    await page.waitForFunction(() => /sel=\d+(%2C|,)\d+/.test(location.hash), { timeout: 15000 });
    results.steps.ctrlClick = {
      url: await settled(),
      rows: await frame.evaluate(() =>
        Array.from(document.querySelectorAll("[data-testid=summary-table] tbody tr")).map((tr) => [tr.cells[0].title || tr.cells[0].textContent, Number(tr.cells[1].textContent.replace(/,/g, ""))]),
      ),
      title: await text("[data-testid=details-panel] h3"),
    };
    await page.screenshot({ path: join(outdir, "firefox_ctrl_click.png") });
    // A summary row clicked: its events are picked, "1 / n" walks them.
    await press("[data-testid=summary-table] tbody tr:first-child");
    await frame.waitForFunction(() => /1 \//.test(document.querySelector("[data-testid=picked]")?.textContent ?? ""), { timeout: 15000 });
    results.steps.ctrlClick.picked = {
      name: await frame.$eval("[data-testid=summary-table] tr.picked", (tr) => tr.dataset.name),
      text: await text("[data-testid=picked]"),
    };

    // A / D pan: zoom in with W first so the window has room to move.
    await page.keyboard.press("Escape");
    await page.mouse.move(box.x + LABEL_WIDTH + 0.5 * timeline, box.y + 150);
    await hold("w", 500);
    const zoomed = await settled();
    await hold("d", 400);
    const right = await settled();
    await hold("a", 400);
    const left = await settled();
    results.steps.pan = { zoomed, right, left };
    await page.screenshot({ path: join(outdir, "firefox_pan.png") });
  }

  // Frames per second (requestAnimationFrame timestamps in the plugin's frame) while `key` is held,
  // and the boxes drawn per frame meanwhile: the measurement of test_zoom_fps_1m_events in Chromium.
  async function motion(key, ms = 3000) {
    await frame.evaluate(() => {
      const gen = (window.__gen = (window.__gen || 0) + 1);
      window.__frames = [];
      const tick = (t) => {
        if (window.__gen !== gen) return;
        window.__frames.push(t);
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const boxes = [];
    await page.keyboard.down(key);
    const end = Date.now() + ms;
    while (Date.now() < end) {
      boxes.push(await frame.evaluate(() => Number(document.querySelector("[data-testid=trace-canvas]").dataset.boxes)));
      await sleep(200);
    }
    await page.keyboard.up(key);
    const stamps = await frame.evaluate(() => {
      window.__gen += 1;
      return window.__frames;
    });
    const gaps = stamps
      .slice(1)
      .map((t, i) => t - stamps[i])
      .sort((a, b) => a - b);
    boxes.sort((a, b) => a - b);
    const total = gaps.reduce((a, b) => a + b, 0);
    const round1 = (x) => Math.round(x * 10) / 10;
    return {
      fps: gaps.length ? round1((1000 * gaps.length) / total) : 0,
      median_frame_ms: gaps.length ? round1(gaps[gaps.length >> 1]) : null,
      worst_frame_ms: gaps.length ? round1(gaps[gaps.length - 1]) : null,
      boxes_median: boxes[boxes.length >> 1],
      boxes_max: boxes[boxes.length - 1],
    };
  }

  // The benchmark (term "--fps"): zoom with W/S from the whole trace in a 1400x900 window, then pan
  // with D/A across a 12 ms window of an 1800x4200 one, as the Chromium benchmark does.
  async function frameRates() {
    await idle(900000, false);
    const report = { first_draw_s: Math.round((Date.now() - tabOpened) / 100) / 10 };
    let box = await rectOf("[data-testid=trace-canvas]");
    await page.mouse.move(box.x + LABEL_WIDTH + (box.width - LABEL_WIDTH) * 0.5, box.y + 80);
    report["1400x900 zoom in (W)"] = await motion("w");
    await idle(120000, false);
    await page.screenshot({ path: join(outdir, "firefox_big_trace_zoomed.png") });
    report["1400x900 zoom out (S)"] = await motion("s");
    await idle(120000, false);
    await setViewportSize(page, 1800, 4200);
    await page.evaluate(() => {
      const q = new URLSearchParams(location.hash.slice(1));
      const keep = ["run", "session", "host"].map((k) => `${k}=${encodeURIComponent(q.get(k) ?? "")}`).join("&");
      location.hash = `profscope&${keep}&tool=trace&start=20000000&end=32000000`;
    });
    await page.waitForFunction(() => location.hash.includes("start=20000000"), { timeout: 15000 });
    await idle(120000, false);
    // The 64 host threads start collapsed (the trace has a GPU): expand them, one click on the header.
    box = await rectOf("[data-testid=trace-canvas]");
    await page.mouse.click(box.x + 40, box.y + 10);
    await idle(120000, false);
    await sleep(1000);
    await page.screenshot({ path: join(outdir, "firefox_big_trace_tall.png") });
    await page.mouse.move(box.x + LABEL_WIDTH + (box.width - LABEL_WIDTH) * 0.5, box.y + 80);
    report["1800x4200 pan right (D)"] = await motion("d");
    await idle(120000, false);
    report["1800x4200 pan back (A), tiles held"] = await motion("a");
    results.steps.fps = report;
  }

  // The Roofline tab: a chart point's tooltip, its highlighted row, its link into the Trace tab.
  // Opens run `name` (its first session and host) by the link, as a pasted URL would.
  async function openRun(name, tool = "") {
    await page.evaluate(([n, t]) => { location.hash = `profscope&run=${encodeURIComponent(n)}${t ? `&tool=${t}` : ""}`; }, [name, tool]);
    await frame.waitForFunction((n) => document.querySelector("[data-testid=run-select]").value === n, { timeout: 30000 }, name);
  }

  async function roofline() {
    if (runs[0]) await openRun(runs[0]);
    await press("[data-testid=tab-roofline]");
    await frame.waitForSelector("[data-testid=rf-chart] canvas[data-drawn]", { timeout: 120000 });
    await page.screenshot({ path: join(outdir, "firefox_roofline_opened.png") });
    const point = "[data-testid=rf-point][data-kind=op][data-x]";
    await frame.waitForSelector(point, { timeout: 30000 });
    // The op point farthest from every other point: hovering it can only mean that op.
    const at = await frame.evaluate((sel) => {
      const all = Array.from(document.querySelectorAll("[data-testid=rf-point][data-x]")).map((li) => ({ key: li.dataset.key, x: Number(li.dataset.x), y: Number(li.dataset.y) }));
      const ops = Array.from(document.querySelectorAll(sel)).map((li) => all.find((p) => p.key === li.dataset.key));
      const room = (p) => Math.min(...all.filter((q) => q !== p).map((q) => Math.hypot(q.x - p.x, q.y - p.y)));
      document.querySelector(sel).closest("canvas").scrollIntoView({ block: "center" });
      return ops.reduce((best, p) => (room(p) > room(best) ? p : best));
    }, point);
    const canvas = await rectOf("[data-testid=rf-chart] canvas");
    await page.mouse.move(canvas.x + at.x - 30, canvas.y + at.y - 30);
    await page.mouse.move(canvas.x + at.x, canvas.y + at.y, { steps: 5 });
    await frame.waitForSelector("[data-testid=rf-tooltip]:not([hidden])", { timeout: 10000 });
    const tooltip = await frame.$eval("[data-testid=rf-tooltip]", (e) => e.innerText);
    await page.screenshot({ path: join(outdir, "firefox_roofline.png") });
    await page.mouse.click(canvas.x + at.x, canvas.y + at.y);
    await frame.waitForSelector("[data-testid=rf-op-table] tr.rf-selected", { timeout: 10000 });
    const selectedRank = await frame.$eval("[data-testid=rf-op-table] tr.rf-selected", (tr) => tr.dataset.rank);
    const pinned = await frame.$eval("[data-testid=rf-pinned]", (e) => e.innerText);
    await page.screenshot({ path: join(outdir, "firefox_roofline_selected.png") });
    await press("[data-testid=rf-pinned-trace]");
    // The op's device executions, selected one by one ("1 of N"), then Back to the Roofline tab.
    await page.waitForFunction(() => location.hash.includes("tool=trace") && location.hash.includes("lk=") && location.hash.includes("sel="), { timeout: 60000 });
    await frame.waitForSelector("[data-testid=trace-canvas]", { timeout: 60000 });
    const linked = await frame.$eval("[data-testid=linked-count]", (e) => e.textContent);
    const url = await page.evaluate(() => location.href);
    await page.evaluate(() => history.back());
    await page.waitForFunction(() => location.hash.includes("tool=roofline"), { timeout: 15000 });
    await frame.waitForSelector("[data-testid=view-roofline]:not([hidden])", { timeout: 15000 });
    results.steps.roofline = { key: at.key, tooltip, selectedRank, pinned, url, linked, backUrl: await page.evaluate(() => location.href) };
    if (runs[1]) await kernelDetails(runs[1]);
  }

  // A kernel of an XPlane whose `kernel_details` (grid, block, registers, …) the details panel shows as fields.
  async function kernelDetails(run) {
    await openRun(run, "trace");
    await idle(120000, false);
    await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
    await page.keyboard.type("kernel_details:*grid:*");
    await page.keyboard.press("Enter");
    await frame.waitForSelector("[data-testid=kernel-field]", { timeout: 30000 });
    results.steps.kernelDetails = {
      id: await frame.$eval("[data-testid=details-id]", (e) => e.textContent),
      fields: await frame.$$eval("[data-testid=kernel-field]", (rows) => rows.map((r) => r.innerText)),
      url: await page.evaluate(() => location.href),
    };
    await page.screenshot({ path: join(outdir, "firefox_kernel_details.png") });
  }
});
