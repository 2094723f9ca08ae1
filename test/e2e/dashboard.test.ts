// The dashboard (/ui/ on the admin port) in Debian's headless Chromium, over `portolan serve` and
// real streams (test/support/ops-mesh.ts): every page loads with no console error and requests
// nothing from another origin; the proxy table is live; a new proxy and a broken config file show
// up within seconds, without a reload.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { launchChromium, type Browser } from '../support/chromium.js';
import { NACK_MESSAGE, startOpsMesh, type OpsMesh } from '../support/ops-mesh.js';
import { grpcNode, RawAdsClient } from '../support/raw-ads-client.js';

let mesh: OpsMesh;
let browser: Browser;

before(async () => {
  mesh = await startOpsMesh();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await mesh?.stop();
});

interface Watched {
  readonly page: Page;
  /** Console errors, page errors and requests to other origins. */
  readonly problems: string[];
}

async function open(hash: string): Promise<Watched> {
  const page = await browser.context.newPage();
  const problems: string[] = [];
  const origin = mesh.portolan.httpBase;
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(origin)) problems.push(`request to another origin: ${r.url()}`);
  });
  await page.goto(`${origin}/ui/${hash}`);
  // A marker that a reload would wipe.
  await page.evaluate(() => Object.assign(globalThis, { portolanTestMarker: true }));
  return { page, problems };
}

async function notReloaded(page: Page): Promise<void> {
  assert.equal(
    await page.evaluate(() => (globalThis as { portolanTestMarker?: boolean }).portolanTestMarker),
    true,
  );
}

const PAGES: readonly (readonly [string, readonly string[]])[] = [
  ['#/overview', ['Registries', 'Pushes and convergence', 'proxies']],
  ['#/services', ['echo.mesh.internal', 'cart.mock.internal', 'also in mock']],
  ['#/proxies', ['echo-client-1', 'SYNCED', 'NACK', 'STALE']],
  ['#/proxies/nacker', ['Sync per type', NACK_MESSAGE]],
  ['#/proxies/echo-client-1', ['Clusters (2)', 'us-east/us-east-1a', 'api listener']],
  ['#/config', ['traffic/echo-rules.yaml', 'gRPC clients do not take TCP connection-pool settings from xDS']],
  ['#/history', ['Timeline', 'connected', 'accepted']],
  ['#/ca', ['Roots', 'spiffe://cluster.local/ns/default/sa/echo', 'used up']],
];

test('every page loads and shows its content, with no console error and nothing from another origin', async () => {
  for (const [hash, texts] of PAGES) {
    const { page, problems } = await open(hash);
    try {
      for (const text of texts)
        await page.getByText(text, { exact: false }).first().waitFor({ timeout: 10_000 });
      assert.deepEqual(problems, [], `${hash}: ${problems.join('; ')}`);
    } finally {
      await page.close();
    }
  }
});

test('the proxy table is live: SYNCED, NACK and STALE rows, and a new proxy appears without a reload', async () => {
  const { page, problems } = await open('#/proxies');
  const late = new RawAdsClient(mesh.portolan.xdsAddress);
  try {
    const row = (node: string) =>
      page.locator('table.proxies tr', { has: page.locator(`a:text-is("${node}")`) });
    await row('echo-client-1').getByText('SYNCED').first().waitFor({ timeout: 10_000 });
    assert.equal(await row('echo-client-1').getByText('SYNCED').count(), 4);
    await row('nacker').getByText('NACK', { exact: true }).waitFor({ timeout: 10_000 });
    await row('silent')
      .getByText(/^STALE/)
      .waitFor({ timeout: 10_000 });
    late.send({ node: grpcNode('late-joiner'), type_url: CLUSTER });
    await row('late-joiner').waitFor({ timeout: 10_000 });
    await notReloaded(page);
    assert.deepEqual(problems, []);
  } finally {
    late.close();
    await page.close();
  }
});

test('a config file error shows with file:line and field path on the config page, without a reload', async (t) => {
  const { page, problems } = await open('#/config');
  const bad = join(mesh.dir, 'traffic', 'bad-split.yaml');
  // The mesh the other tests share keeps no broken file of this one's.
  t.after(() => rmSync(bad, { force: true }));
  try {
    await page.getByText('traffic/echo-rules.yaml').first().waitFor({ timeout: 10_000 });
    writeFileSync(
      bad,
      `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: bad-split, namespace: default }
spec:
  hosts: [cart.mock.internal]
  http:
    - route:
        - { destination: { host: cart.mock.internal }, weight: 70 }
        - { destination: { host: web.mesh.internal }, weight: 20 }
`,
    );
    await page.getByText('traffic/bad-split.yaml:7').waitFor({ timeout: 10_000 });
    await page.getByText('spec.http[0].route', { exact: true }).waitFor({ timeout: 10_000 });
    await page
      .getByText(/weights must sum to 100/)
      .first()
      .waitFor({ timeout: 10_000 });
    await notReloaded(page);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('a NACK in force shows beside the file it came from on the config page, and goes with the proxy', async () => {
  const { page, problems } = await open('#/config');
  const rejecter = new RawAdsClient(mesh.portolan.xdsAddress);
  try {
    rejecter.send({ node: grpcNode('file-rejecter'), type_url: CLUSTER });
    const sent = await rejecter.next();
    const message = `cluster outbound|${mesh.echoPort}||echo.mesh.internal: rejected (dashboard test)`;
    rejecter.send({
      type_url: CLUSTER,
      version_info: '',
      response_nonce: sent.nonce,
      error_detail: { code: 3, message },
    });
    const row = page.locator('tr', { has: page.locator('td code', { hasText: 'traffic/echo-rules.yaml' }) });
    await row
      .locator('.nack-mark', { hasText: 'file-rejecter' })
      .getByText(message)
      .waitFor({ timeout: 10_000 });
    rejecter.close();
    await row
      .locator('.nack-mark', { hasText: 'file-rejecter' })
      .waitFor({ state: 'detached', timeout: 10_000 });
    await notReloaded(page);
    assert.deepEqual(problems, []);
  } finally {
    rejecter.close();
    await page.close();
  }
});

test('the dashboard is served by Portolan alone: every asset from /ui/, with a content security policy', async () => {
  const res = await fetch(`${mesh.portolan.httpBase}/ui/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
  const html = await res.text();
  for (const [, ref] of html.matchAll(/(?:src|href)="([^"]+)"/g))
    assert.doesNotMatch(ref ?? '', /^(https?:)?\/\//);
  assert.equal((await fetch(`${mesh.portolan.httpBase}/ui/../cli/main.js`)).status, 404);
  assert.equal((await fetch(`${mesh.portolan.httpBase}/ui/%2e%2e/package.json`)).status, 404);
});
