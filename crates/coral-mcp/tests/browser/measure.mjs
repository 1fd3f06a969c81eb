// Times the dashboard in headless Chromium (docs/dashboard.md, "Timing"): how long after
// navigation the first view is drawn and usable (`performance.mark('coral-first-view')`, set
// once the overview's data is on the page), and how long the memory browser takes to draw a
// page and to step to the next one. Not a test: it prints medians and ranges as JSON.
//
//   CHROMIUM=/usr/bin/chromium CORAL_URL=http://127.0.0.1:PORT/ node measure.mjs [runs]

import puppeteer from 'puppeteer-core';

const url = process.env.CORAL_URL;
const runs = Number(process.argv[2] || 21);
if (!url || !process.env.CHROMIUM) {
  console.error('set CHROMIUM and CORAL_URL (a running coral http)');
  process.exit(2);
}

const stats = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median_ms: +mid.toFixed(1), min_ms: +s[0].toFixed(1), max_ms: +s[s.length - 1].toFixed(1), runs: s.length };
};

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
const first = [];
// The phases of the first view: the app script starts, its first requests leave, their
// answers are in; then the view is drawn ("first").
const script = [];
const request = [];
const answer = [];
const memoriesView = [];
const nextPage = [];
let memories = null;
for (let i = 0; i < runs; i++) {
  // A fresh context each time: no cache, no storage.
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  const phases = await page.evaluate(() => {
    const rpc = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/rpc')).slice(0, 2);
    return {
      first: performance.getEntriesByName('coral-first-view')[0].startTime,
      script: performance.getEntriesByName('coral-script')[0].startTime,
      request: Math.min(...rpc.map((e) => e.startTime)),
      answer: Math.max(...rpc.map((e) => e.responseEnd)),
    };
  });
  first.push(phases.first);
  script.push(phases.script);
  request.push(phases.request);
  answer.push(phases.answer);
  memories = await page.evaluate(() => document.querySelector('[data-field="stats.total"]').textContent);
  const t0 = await page.evaluate(() => {
    const t = performance.now();
    location.hash = '#/memories';
    return t;
  });
  await page.waitForFunction(() => document.body.dataset.view === 'memories'
    && document.getElementById('main').getAttribute('aria-busy') === 'false');
  memoriesView.push(await page.evaluate((t) => performance.now() - t, t0));
  const before = await page.$eval('[data-field="range"]', (e) => e.textContent);
  const t1 = await page.evaluate(() => performance.now());
  await page.click('button[data-action="next"]');
  await page.waitForFunction((b) => document.querySelector('[data-field="range"]')?.textContent !== b, {}, before);
  nextPage.push(await page.evaluate((t) => performance.now() - t, t1));
  await context.close();
}
await browser.close();
console.log(JSON.stringify({
  memories,
  first_view_interactive: stats(first),
  phases: { script_started: stats(script), requests_sent: stats(request), answers_in: stats(answer) },
  memories_view: stats(memoriesView),
  next_page: stats(nextPage),
}, null, 2));
