// `npm run screenshots`: the dashboard's pages in headless Chromium over the operations test mesh
// (test/support/ops-mesh.ts), with an edit pushed and one broken file to show, into docs/ui/*.png.
// Also prints the dashboard's page weight (every asset under /ui/, raw and gzipped each) and the
// bytes of admin API data each page reads per refresh.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { launchChromium } from './support/chromium.js';
import { startOpsMesh } from './support/ops-mesh.js';

const OUT = 'docs/ui';
const PAGES = [
  ['overview', '#/overview'],
  ['services', '#/services'],
  ['proxies', '#/proxies'],
  ['proxy', '#/proxies/echo-client-1'],
  ['config', '#/config'],
  ['history', '#/history'],
  ['ca', '#/ca'],
] as const;

const BROKEN = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: cart-split, namespace: default }
spec:
  hosts: [cart.mock.internal]
  http:
    - route:
        - { destination: { host: cart.mock.internal, subset: v3 }, weight: 70 }
        - { destination: { host: cart.mock.internal, subset: v4 }, weight: 20 }
`;

const mesh = await startOpsMesh();
const browser = await launchChromium();
try {
  mkdirSync(OUT, { recursive: true });
  // Some history: endpoint churn for the chart, edits pushed to the clients, a file that does not load.
  for (let i = 0; i < 12; i++) {
    const health = i % 2 === 0 ? 'HEALTHY' : 'UNHEALTHY';
    await fetch(`${mesh.portolan.httpBase}/mock/services/cart.mock.internal/endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        address: '127.0.0.8',
        locality: 'us-west/us-west-2a',
        labels: { version: 'v3' },
        health,
      }),
    });
    await sleep(1000 + (i % 3) * 1500);
  }
  const rules = join(mesh.dir, 'traffic', 'echo-rules.yaml');
  for (const [a, b] of [
    [70, 30],
    [50, 50],
  ] as const) {
    writeFileSync(
      rules,
      readFileSync(rules, 'utf8').replace(
        /weight: \d+ }\n(.*)weight: \d+ }/s,
        `weight: ${a} }\n$1weight: ${b} }`,
      ),
    );
    await sleep(1500);
  }
  writeFileSync(join(mesh.dir, 'traffic', 'cart-split.yaml'), BROKEN);
  await sleep(2500);
  const page = await browser.context.newPage();
  // What each refresh costs: the bytes of the admin API's answers per refresh (the header's
  // /debug/overviewz is fetched once per refresh), over a few refreshes of each page.
  const data = { bytes: 0, refreshes: 0 };
  page.on('response', (r) => {
    const path = new URL(r.url()).pathname;
    if (!path.startsWith('/debug/')) return;
    if (path === '/debug/overviewz') data.refreshes += 1;
    r.body().then(
      (b) => (data.bytes += b.length),
      () => undefined,
    );
  });
  const perRefresh: string[] = [];
  for (const [name, hash] of PAGES) {
    await page.goto(`${mesh.portolan.httpBase}/ui/${hash}`);
    await page.waitForSelector('main table, main .services details', { timeout: 10_000 });
    await sleep(500);
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
    process.stdout.write(`${OUT}/${name}.png\n`);
    Object.assign(data, { bytes: 0, refreshes: 0 });
    await sleep(6100);
    perRefresh.push(`${name} ${Math.round(data.bytes / Math.max(1, data.refreshes))}`);
  }
  await page.goto(`${mesh.portolan.httpBase}/ui/#/services`);
  await page.click('details.service summary');
  await sleep(300);
  await page.screenshot({ path: join(OUT, 'services.png'), fullPage: true });
  // Page weight: every asset the admin server serves under /ui/.
  const html = await (await fetch(`${mesh.portolan.httpBase}/ui/`)).text();
  let total = Buffer.byteLength(html);
  let gzipped = gzipSync(html).length;
  const seen = new Set<string>();
  const queue = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1] ?? '');
  while (queue.length) {
    const name = queue.shift() ?? '';
    if (seen.has(name)) continue;
    seen.add(name);
    const body = await (await fetch(new URL(name, `${mesh.portolan.httpBase}/ui/`))).text();
    total += Buffer.byteLength(body);
    gzipped += gzipSync(body).length;
    for (const m of body.matchAll(/from '(\.[^']+)'/g))
      queue.push(new URL(m[1] ?? '', new URL(name, 'http://x/ui/')).pathname.replace('/ui/', ''));
  }
  process.stdout.write(
    `page weight: ${total} bytes in ${seen.size + 1} files (uncompressed), ${gzipped} bytes gzipped\n`,
  );
  process.stdout.write(`admin API bytes per refresh (every 2 s) on each page: ${perRefresh.join(', ')}\n`);
} finally {
  await browser.close();
  await mesh.stop();
}
