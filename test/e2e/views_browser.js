// views_browser.js: drive a flame graph SVG in headless Chromium with real
// mouse clicks and keys (playwright-core, Debian's chromium), for
// test/e2e/e2e_views_browser.sh.
//
//   node views_browser.js CHROMIUM FILE.svg SHOT.png ZOOM_NAME MATCH_NAME HIDDEN_NAME
//
// Opens the file, checks the script ran, that the three names' labels are on
// screen and uncovered, hovers a frame (details line), clicks
// the widest ZOOM_NAME frame (it fills the width, HIDDEN_NAME disappears),
// resets the zoom, searches MATCH_NAME through the prompt (magenta, a
// percentage), takes SHOT.png, and clears with Escape.  One "ok ..." or
// "FAIL ..." line per check; exit 1 if any failed.
'use strict';
const { chromium } = require('playwright-core');

const [exe, file, shot, zoomName, matchName, hiddenName] = process.argv.slice(2);
let failed = 0;
function check(msg, cond, detail) {
    if (cond) {
        console.log('ok   browser: ' + msg);
    } else {
        failed++;
        console.log('FAIL browser: ' + msg + (detail !== undefined ? ' (' + detail + ')' : ''));
    }
}

// Geometry of the widest frame called `name`, straight from the DOM.
function frameInfo(page, name) {
    return page.evaluate((n) => {
        let best = null;
        for (const g of document.querySelectorAll('g.f')) {
            // the box's label (data-n); tooltips add the file and more
            const t = g.getAttribute('data-n') || g.querySelector('title').textContent;
            if ((g.getAttribute('data-n') ? t : t.slice(0, t.lastIndexOf(' ('))) !== n) continue;
            const r = g.querySelector('rect');
            const w = +r.getAttribute('width');
            if (!best || w > best.w) {
                const b = r.getBoundingClientRect();
                best = { i: g.getAttribute('data-i'), w: w, x: +r.getAttribute('x'),
                         shown: getComputedStyle(g).display !== 'none',
                         fill: r.getAttribute('fill'),
                         cx: b.x + Math.min(b.width / 2, 20), cy: b.y + b.height / 2 };
            }
        }
        return best;
    }, name);
}

(async () => {
    const browser = await chromium.launch({
        executablePath: exe,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
        const page = await browser.newPage({ viewport: { width: 1200, height: 400 } });
        const requests = [];
        page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
        const errors = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        await page.goto('file://' + file);
        await page.waitForSelector('svg[data-ready]', { timeout: 10000 });
        check('script ran without errors', errors.length === 0, errors.join('; '));
        check('no network requests', requests.length === 0, requests.join(' '));

        // What a person sees, read from the page rather than by OCR: each name's
        // label is laid out on screen with a real size, and it is the topmost
        // element at its own centre (nothing covers it).
        for (const n of [zoomName, matchName, hiddenName].filter(Boolean)) {
            const seen = await page.evaluate((name) => {
                for (const t of document.querySelectorAll('text.l')) {
                    if (t.textContent !== name) continue;
                    const b = t.getBoundingClientRect();
                    if (b.width < 4 || b.height < 4 || b.right > innerWidth || b.bottom > innerHeight)
                        continue;
                    const hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
                    if (hit && (hit === t || hit.closest('g') === t.closest('g')))
                        return Math.round(b.width) + 'x' + Math.round(b.height);
                }
                return null;
            }, n);
            check('label ' + n + ' shown on screen (' + seen + ')', seen !== null);
        }

        let z = await frameInfo(page, zoomName);
        const m0 = await frameInfo(page, matchName);
        check('frames ' + zoomName + ' and ' + matchName + ' drawn', z && m0);
        if (!z || !m0) return;

        await page.mouse.move(z.cx, z.cy);
        const details = await page.textContent('#details');
        check('hover shows name, value and share', /* the tooltip may add " at FILE" */
              (details.startsWith(zoomName + ' (') || details.startsWith(zoomName + ' at ')) &&
              /%\)$/.test(details), details);

        await page.mouse.click(z.cx, z.cy);
        const zoomed = await page.getAttribute('svg', 'data-zoom');
        const z1 = await frameInfo(page, zoomName);
        const m1 = await frameInfo(page, matchName);
        const h1 = hiddenName ? await frameInfo(page, hiddenName) : null;
        check('click zooms: ' + zoomName + ' fills the width', zoomed === zoomName &&
              Math.abs(z1.w - 1180) < 0.5 && Math.abs(z1.x - 10) < 0.5, JSON.stringify(z1));
        check('zoom widens the frames above it', m1.w > m0.w * 1.05, m0.w + ' -> ' + m1.w);
        if (hiddenName)
            check('zoom hides ' + hiddenName, h1 && !h1.shown);
        check('Reset Zoom shown', await page.isVisible('#unzoom'));
        await page.click('#unzoom');
        const m2 = await frameInfo(page, matchName);
        check('Reset Zoom restores the layout', Math.abs(m2.w - m0.w) < 0.01 &&
              !(await page.getAttribute('svg', 'data-zoom')));

        page.once('dialog', (d) => d.accept(matchName));
        await page.click('#search');
        const pct = await page.getAttribute('svg', 'data-matched');
        const m3 = await frameInfo(page, matchName);
        const text = await page.textContent('#matched');
        check('search highlights ' + matchName, m3.fill === 'rgb(230,0,230)', m3.fill);
        check('search gives the matched share (' + text + ')', pct !== null && +pct > 0 &&
              +pct <= 100 && text.startsWith('Matched: '));
        await page.screenshot({ path: shot });
        await page.keyboard.press('Escape');
        const m4 = await frameInfo(page, matchName);
        check('Escape clears the search', m4.fill !== 'rgb(230,0,230)' &&
              (await page.getAttribute('svg', 'data-matched')) === null);
    } finally {
        await browser.close();
    }
})().then(() => process.exit(failed ? 1 : 0), (e) => {
    console.log('FAIL browser: ' + e);
    process.exit(1);
});
