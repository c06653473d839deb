// The Trace tab's search in headless Firefox (browser setup: scripts/firefox-session.mjs), for
// tests/e2e/test_trace_search_list.py: type a term at speed, read the match count, open the list of
// matches, click its third row. Writes <outdir>/results.json (the count, the queries the page sent,
// the listed ids, the selected id, the link); the Python test asks the server and asserts.
//
//   node scripts/firefox-search-list.mjs <tensorboard url> <outdir> <search term> [firefox path]
import { join } from "node:path";
import { runInFirefox } from "./firefox-session.mjs";

const [url, outdir, term, firefox] = process.argv.slice(2);

await runInFirefox({ url, outdir, firefox }, async ({ page, frame, results, requests, press }) => {
  await press("[data-testid=tab-trace]");
  await frame.waitForFunction(
    () => {
      const c = document.querySelector("[data-testid=trace-canvas]");
      const s = document.querySelector("[data-testid=trace-status]");
      return c && c.dataset.level !== undefined && s && s.dataset.loading === "0";
    },
    { timeout: 120000 },
  );
  const seen = requests.length;
  await frame.evaluate(() => document.querySelector("[data-testid=search-input]").focus());
  await page.keyboard.type(term, { delay: 40 });
  await frame.waitForFunction(() => /match/.test(document.querySelector("[data-testid=search-count]").textContent), { timeout: 30000 });
  const count = await frame.$eval("[data-testid=search-count]", (e) => e.textContent);
  const searches = requests
    .slice(seen)
    .filter((u) => u.includes("/trace/search?"))
    .map((u) => new URL(u).searchParams.get("q"));
  await press("[data-testid=search-list-toggle]");
  const listed = await frame.evaluate(() => Array.from(document.querySelectorAll("[data-testid=search-results] tbody tr")).map((tr) => Number(tr.dataset.id)));
  await press("[data-testid=search-results] tbody tr:nth-child(3)");
  await frame.waitForFunction(() => document.querySelector("[data-testid=details-id]"), { timeout: 30000 });
  const picked = await frame.$eval("[data-testid=details-id]", (e) => e.textContent);
  await page.screenshot({ path: join(outdir, "firefox_search_list.png") });
  results.steps = { count, searches, listed, picked, url: await page.evaluate(() => location.href) };
});
