// flame_browser.js: the flame graph as people see it, in headless Chromium
// (playwright-core, Debian's chromium), for test/e2e/e2e_flame_browser.sh.
//
//   node flame_browser.js CHROMIUM OUTDIR CXX.svg STRIPPED.svg OBJECT [URL=SHOT.png...]
//
// CXX.svg is a C++ program's CPU flame graph (test/progs/lines/work.cc), opened
// at 800x600, then resized to 1600x900: at each size the boxes fill the window's
// width; the legend names the program and libc; their frames have other colours;
// an inlined frame has a dashed outline; labels are demangled C++ names without
// glibc's symbol versions; the icicle toggle puts the root on top and back, with
// zoom and search still working there; the callers view puts the leaves next
// to the root.  STRIPPED.svg (the same program without
// symbols) has boxes named OBJECT and no two of them under one parent, and no
// bare addresses.  Screenshots go to OUTDIR (flame-cpp-800.png,
// flame-cpp-1600.png, flamegraph.png, flame-strip.png), and each URL=SHOT.png
// pair is a page to screenshot (SHOT.png named timeline.png gets its peak label
// checked to lie inside the chart).  Nothing here reads text off pixels: the
// checks use the DOM and its geometry.  One "ok ..." or "FAIL ..." line per
// check; exit 1 if any failed.
'use strict';
const { chromium } = require('playwright-core');

const [exe, outdir, cxx, stripped, object, ...pages] = process.argv.slice(2);
let failed = 0;
function check(msg, cond, detail) {
    if (cond) {
        console.log('ok   flame: ' + msg);
    } else {
        failed++;
        console.log('FAIL flame: ' + msg + (detail !== undefined ? ' (' + detail + ')' : ''));
    }
}

// The graph's state, read from the DOM after the script ran.
function state(page) {
    return page.evaluate(() => {
        const svg = document.documentElement.getBoundingClientRect();
        const root = document.querySelector('g.root rect').getBoundingClientRect();
        const shown = [...document.querySelectorAll('g.f')].filter(
            (g) => getComputedStyle(g).display !== 'none');
        const fills = {};
        let right = 0;
        for (const g of shown) {
            const r = g.querySelector('rect');
            right = Math.max(right, r.getBoundingClientRect().right);
            for (const c of g.classList)
                if (/^k/.test(c)) (fills[c] = fills[c] || []).push(r.getAttribute('fill'));
        }
        const inl = document.querySelector('g.f.inl rect');
        const main = [...shown].find((g) => g.getAttribute('data-n') === 'main');
        return {
            innerWidth: innerWidth, svgWidth: svg.width, rootLeft: root.left,
            rootRight: root.right, rootY: root.y, right: right,
            mainY: main ? main.querySelector('rect').getBoundingClientRect().y : null,
            names: shown.map((g) => g.getAttribute('data-n')),
            labels: shown.map((g) => g.querySelector('text.l').textContent).filter(Boolean),
            fills: fills,
            legend: [...document.querySelectorAll('#legend rect.sw')].map(
                (r) => r.getAttribute('class')),
            dashed: inl ? getComputedStyle(inl).strokeDasharray : null,
            view: document.documentElement.getAttribute('data-view'),
        };
    });
}

async function fills(page, size) {
    const s = await state(page);
    check(size + ': the svg is as wide as the window (' + Math.round(s.svgWidth) + ' of ' +
          s.innerWidth + ')', s.svgWidth >= s.innerWidth - 20 && s.svgWidth <= s.innerWidth);
    check(size + ': the root box fills the width (' + s.rootLeft.toFixed(1) + '..' +
          s.rootRight.toFixed(1) + ')', Math.abs(s.rootLeft - 10) < 1 &&
          Math.abs(s.rootRight - (s.svgWidth - 10)) < 1);
    check(size + ': no box beyond the root', s.right <= s.rootRight + 0.5, s.right);
    return s;
}

(async () => {
    const browser = await chromium.launch({
        executablePath: exe,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
        const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
        const errors = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        await page.goto('file://' + cxx);
        await page.waitForSelector('svg[data-ready]', { timeout: 10000 });
        check('script ran without errors', errors.length === 0, errors.join('; '));

        let s = await fills(page, '800x600');
        check('legend names the program and libc (' + s.legend.join(', ') + ')',
              s.legend.some((c) => /kmain/.test(c)) && s.legend.some((c) => /klibc/.test(c)));
        const mainFills = new Set(s.fills.kmain || []), libcFills = s.fills.klibc || [];
        check('the program\'s frames and libc\'s have other colours (' + mainFills.size + ' and ' +
              libcFills.length + ' boxes)', mainFills.size > 0 && libcFills.length > 0 &&
              !libcFills.some((f) => mainFills.has(f)));
        check('an inlined frame has a dashed outline (' + s.dashed + ')',
              s.dashed && s.dashed !== 'none');
        check('labels are demangled C++ names (shop::price_all, no _Z)',
              s.names.includes('shop::price_all') && !s.names.some((n) => /^_Z/.test(n)) &&
              !s.labels.some((n) => /^_Z/.test(n)));
        check('no symbol versions in labels', !s.names.some((n) => /@@?[A-Z]/.test(n)) &&
              !s.labels.some((n) => /@@?[A-Z]/.test(n)));
        await page.screenshot({ path: outdir + '/flame-cpp-800.png' });

        // The icicle: root on top, zoom and search still work, and back.
        const before = s;
        await page.click('#flip');
        s = await state(page);
        check('icicle toggle puts the root on top (' + s.rootY + ' < ' + s.mainY + ')',
              s.view === 'icicle' && s.rootY < s.mainY && before.rootY > before.mainY);
        const pa = await page.evaluate(() => {
            for (const g of document.querySelectorAll('g.f'))
                if (g.getAttribute('data-n') === 'shop::price_all') {
                    const b = g.querySelector('rect').getBoundingClientRect();
                    return { x: b.x + Math.min(b.width / 2, 20), y: b.y + b.height / 2, w: b.width };
                }
            return null;
        });
        if (pa) {
            await page.mouse.click(pa.x, pa.y);
            const z = await page.evaluate(() => {
                for (const g of document.querySelectorAll('g.f'))
                    if (g.getAttribute('data-n') === 'shop::price_all' &&
                        getComputedStyle(g).display !== 'none')
                        return g.querySelector('rect').getBoundingClientRect().width;
                return 0;
            });
            check('icicle: a click zooms (shop::price_all ' + pa.w.toFixed(0) + ' -> ' +
                  z.toFixed(0) + ' px)', (await page.getAttribute('svg', 'data-zoom')) ===
                  'shop::price_all' && Math.abs(z - (s.svgWidth - 20)) < 1);
            await page.keyboard.press('Escape');
        } else {
            check('icicle: shop::price_all drawn', false);
        }
        page.once('dialog', (d) => d.accept('price_all'));
        await page.click('#search');
        const pct = +(await page.getAttribute('svg', 'data-matched'));
        check('icicle: search gives a share (' + pct + '%)', pct > 0 && pct <= 100);
        await page.keyboard.press('Escape');
        await page.click('#flip');
        s = await state(page);
        check('the toggle flips back', s.view === 'flame' && Math.abs(s.rootY - before.rootY) < 0.5);

        // The callers view: the leaf functions next to the root, the same total.
        await page.click('#callers');
        const cv = await page.evaluate(() => {
            const root = document.querySelector('g.root rect').getBoundingClientRect();
            const above = [...document.querySelectorAll('g.f')].filter((g) => {
                if (getComputedStyle(g).display === 'none') return false;
                const b = g.querySelector('rect').getBoundingClientRect();
                return Math.abs(b.bottom + 1 - root.top) < 2;
            });
            return { names: above.map((g) => g.getAttribute('data-n')),
                     sum: above.reduce((t, g) => t + g.querySelector('rect')
                         .getBoundingClientRect().width, 0), root: root.width,
                     on: document.documentElement.getAttribute('data-callers') };
        });
        check('callers view: leaves next to the root (' + cv.names.slice(0, 6).join(', ') +
              '), widths adding up to the root\'s (' + cv.sum.toFixed(0) + ' of ' +
              cv.root.toFixed(0) + ')', cv.on === '1' && cv.names.includes('mix') &&
              !cv.names.includes('_start') && Math.abs(cv.sum - cv.root) < cv.root * 0.01);
        await page.click('#callers');
        s = await state(page);
        check('callers view toggles back', s.mainY === before.mainY &&
              (await page.getAttribute('svg', 'data-callers')) === '0');

        // A bigger window: laid out again at its width.
        await page.setViewportSize({ width: 1600, height: 900 });
        await page.waitForFunction(() => Math.abs(document.documentElement.getBoundingClientRect()
            .width - (+document.documentElement.getAttribute('data-width'))) < 1, null,
            { timeout: 10000 }).catch(() => {});
        await fills(page, '1600x900 after a resize');
        await page.screenshot({ path: outdir + '/flame-cpp-1600.png' });
        // The README's picture: 1200 wide, as tall as the graph.
        const h = +(await page.getAttribute('svg', 'height'));
        await page.setViewportSize({ width: 1200, height: Math.max(300, Math.min(h, 700)) });
        await page.waitForFunction(() => +document.documentElement.getAttribute('data-width') < 1300,
            null, { timeout: 10000 }).catch(() => {});
        await page.screenshot({ path: outdir + '/flamegraph.png' });

        // Without symbols: one [object] box per parent.
        const p2 = await browser.newPage({ viewport: { width: 1200, height: 600 } });
        await p2.goto('file://' + stripped);
        await p2.waitForSelector('svg[data-ready]', { timeout: 10000 });
        const st = await p2.evaluate((obj) => {
            const fr = [...document.querySelectorAll('g.f')].map((g) => {
                const r = g.querySelector('rect');
                return { n: g.getAttribute('data-n'), x: +r.getAttribute('x'),
                         w: +r.getAttribute('width'), y: +r.getAttribute('y') };
            });
            const dup = [];
            for (const a of fr)
                for (const b of fr) {
                    // siblings: same row, touching, same parent (the box under both)
                    if (a === b || a.n !== b.n || a.y !== b.y || Math.abs(a.x + a.w - b.x) > 0.02)
                        continue;
                    const pa = fr.find((p) => p.y > a.y && p.y - a.y < 20 && p.x <= a.x + 0.02 &&
                                        p.x + p.w >= a.x + a.w - 0.02);
                    if (pa && pa.x + pa.w >= b.x + b.w - 0.02) dup.push(a.n);
                }
            return { objs: fr.filter((f) => f.n === obj).length,
                     hex: fr.filter((f) => /^0x/.test(f.n)).length, dup: dup };
        }, object);
        check('stripped: ' + st.objs + ' ' + object + ' boxes, no bare address (' + st.hex + ')',
              st.objs > 0 && st.hex === 0);
        check('stripped: no two boxes of one name under one parent', st.dup.length === 0,
              st.dup.join(', '));
        await p2.screenshot({ path: outdir + '/flame-strip.png' });
        await p2.close();

        // Other pages, for people to look at (and the timeline's peak label).
        for (const pair of pages) {
            const eq = pair.lastIndexOf('=');
            const url = pair.slice(0, eq), shot = pair.slice(eq + 1);
            const p3 = await browser.newPage({ viewport: { width: 1200, height: 820 } });
            const resp = await p3.goto(url.startsWith('/') ? 'file://' + url : url);
            check(shot + ': page loads (' + (resp ? resp.status() : 'file') + ')',
                  !resp || resp.status() === 200 || resp.status() === 0);
            if (/flame/.test(shot)) { // as tall as the graph
                await p3.waitForSelector('svg[data-ready]', { timeout: 10000 });
                const h = +(await p3.getAttribute('svg', 'height'));
                await p3.setViewportSize({ width: 1200, height: Math.max(300, Math.min(h, 820)) });
            }
            if (/timeline/.test(shot)) {
                const pk = await p3.evaluate(() => {
                    const t = document.querySelector('#peak text');
                    const c = document.getElementById('chart');
                    const th = document.getElementById('threads');
                    const b = t && c ? t.getBoundingClientRect() : null;
                    const cb = c ? c.getBoundingClientRect() : null;
                    return { peak: b ? { l: b.left - cb.left, r: cb.right - b.right } : null,
                             threads: th ? th.textContent : null };
                });
                check('timeline: the peak label lies inside the chart (' +
                      JSON.stringify(pk.peak) + ')', !pk.peak || (pk.peak.l >= 0 && pk.peak.r >= 0));
                check('timeline: says which threads are the profiler\'s (' + pk.threads + ')',
                      /of them the profiler/.test(pk.threads || ''));
            }
            await p3.screenshot({ path: outdir + '/' + shot });
            await p3.close();
        }
    } finally {
        await browser.close();
    }
})().then(() => process.exit(failed ? 1 : 0), (e) => {
    console.log('FAIL flame: ' + e);
    process.exit(1);
});
