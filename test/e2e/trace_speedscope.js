// trace_speedscope.js: /debug/pprof/trace opened by speedscope (npm), offline, in headless
// Chromium driven by playwright-core (test/e2e/e2e_trace.sh; owned by the trace work).
//   node trace_speedscope.js CHROMIUM SPEEDSCOPE_INDEX PROFILE_JS NAMES_FILE SHOT.png
// PROFILE_JS is what speedscope's own CLI writes (speedscope.loadFileFromBase64(...)),
// loaded by index.html#localProfilePath= from file://, so no server and no network.
// Checks: speedscope imports it as a trace-event profile without a nesting warning, its
// profile list (the toolbar's selector) names every thread of NAMES_FILE, and the
// time-order view of trace-A is drawn; the screenshot is kept for people to look at.
'use strict';
const fs = require('fs');
const { chromium } = require('playwright-core');

const [exe, index, profJs, namesFile, shot] = process.argv.slice(2);
let fails = 0;
const ok = (m) => console.log('ok   ' + m);
const bad = (m) => { fails++; console.log('FAIL ' + m); };

(async () => {
  const browser = await chromium.launch({
    executablePath: exe,
    args: ['--no-sandbox', '--disable-gpu', '--allow-file-access-from-files'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
  const log = [];
  page.on('console', (m) => log.push(m.text()));
  page.on('pageerror', (e) => log.push('pageerror: ' + e.message));
  await page.goto('file://' + index + '#localProfilePath=' + profJs);
  const title = page.getByText(/\(1\/\d+\)/).first();
  try {
    await title.waitFor({ timeout: 60000 });
  } catch (e) {
    bad('speedscope shows no profile: ' + log.slice(-5).join(' | '));
    await browser.close();
    process.exit(1);
  }
  if (log.some((l) => /Importing as Trace Event Format/.test(l)))
    ok('speedscope imports it as a Trace Event Format profile');
  else
    bad('speedscope did not say it imported trace events: ' + log.join(' | ').slice(0, 400));
  const warn = log.filter((l) => /Tried to end|pageerror|Unexpected|Failed/.test(l));
  if (warn.length === 0) ok('no import warnings (B/E matched as speedscope matches them)');
  else bad('import warnings: ' + warn.slice(0, 3).join(' | '));
  const want = fs.readFileSync(namesFile, 'utf8').split('\n').filter((s) => s);
  await title.click();
  await page.waitForTimeout(500);
  const text = await page.evaluate(() => document.body.innerText);
  const missing = want.filter((n) => !text.includes('), ' + n + ' (tid '));
  if (missing.length === 0)
    ok('the profile list in the DOM names every thread: ' + want.join(', '));
  else
    bad('threads missing from speedscope\'s list: ' + missing.join(', ') + '\n' + text.slice(0, 600));
  // show trace-A's flame chart over time
  const a = page.getByText(/, trace-A \(tid \d+\)$/).first();
  try {
    await a.click({ timeout: 5000 });
    await page.waitForTimeout(1000);
    const t2 = await page.evaluate(() => document.body.innerText);
    if (/trace-A \(tid \d+\) \(\d+\/\d+\)/.test(t2)) ok('trace-A selected in speedscope');
    else bad('trace-A not selected: ' + t2.slice(0, 200));
  } catch (e) {
    bad('cannot select trace-A: ' + e.message.split('\n')[0]);
  }
  // speedscope's imported frames, as its Sandwich view lists them (a DOM table): each is a
  // function's name alone, as the flame graph names it (no args, versions or addresses)
  try {
    await page.getByText(/Sandwich$/).first().click({ timeout: 5000 });
    await page.waitForTimeout(1000);
    const rows = (await page.evaluate(() => document.body.innerText)).split('\n');
    const odd = rows.filter((r) => /\{"|@@|^0x[0-9a-f]+$/.test(r.trim()));
    if (rows.some((r) => r.trim() === 'a_run') && odd.length === 0)
      ok('speedscope\'s frame list (Sandwich) names functions alone: a_run, no {, @@ or 0x');
    else
      bad('speedscope\'s frame list: ' + (odd.length ? odd.slice(0, 4).join(' | ') : 'no a_run row'));
    await page.getByText(/Time Order$/).first().click({ timeout: 5000 });
    await page.waitForTimeout(500);
  } catch (e) {
    bad('cannot read speedscope\'s Sandwich view: ' + e.message.split('\n')[0]);
  }
  await page.screenshot({ path: shot });
  ok('screenshot ' + shot);
  await browser.close();
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL ' + e.message); process.exit(1); });
