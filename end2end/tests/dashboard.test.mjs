// The pending-expirations dashboard and the audit log in a real browser, on
// the demo data with jobs on (so the sweep records a run and expires what is
// due): the chart has 72 bars whose hover titles carry the same counts as
// GET /api/v1/expirations/pending; the audit log lists the sweep's actions
// and staff sign-ins; both work without JavaScript and on a phone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, binaryPath, launchBrowser, runCli, startServer, publishScreenshots } from './harness.mjs';

const OPERATOR = { name: 'ops2', password: 'e2e-operator-password-2' };
const TOKEN = 'e2e-token';

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bdemo-data\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_API_TOKEN: TOKEN }, ['--demo-data'], {
    async beforeStart(cli) {
      const r = await cli(['staff', 'add', OPERATOR.name, '--role', 'operator', '--password-env', 'E2E_STAFF_PW'], {
        E2E_STAFF_PW: OPERATOR.password,
      });
      assert.equal(r.code, 0, `staff add: ${r.stderr}`);
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  publishScreenshots(['expirations.png']);
});

async function signedIn(options = {}) {
  const context = await browser.newContext({ locale: 'zh-CN', viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', OPERATOR.name);
  await page.fill('#login-password', OPERATOR.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  return { context, page };
}

test('the dashboard draws 72 hourly bars with the same counts as the API', async () => {
  const { context, page } = await signedIn();
  await page.goto(`${server.base}/console/expirations`);
  const bars = page.locator('[data-testid=due-chart] rect title');
  assert.equal(await bars.count(), 72);
  const api = await (
    await fetch(`${server.base}/api/v1/expirations/pending?within_seconds=259200`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
  ).json();
  const titles = await bars.allTextContents();
  // Every bucket the API reports inside the chart's 72 hours is a bar whose
  // title names its hour and count.
  for (const b of api.buckets) {
    // Times read in the business zone (the default, Asia/Shanghai, UTC+8).
    const local = new Date(Date.parse(b.starts_at) + 8 * 3600e3).toISOString();
    const hour = local.slice(0, 16).replace('T', ' ');
    const title = titles.find((t) => t.startsWith(`${hour} (UTC+8)`));
    if (!title) continue; // the partial 73rd hour is named under the chart
    assert.match(title, new RegExp(`: ${b.count.toLocaleString('en-US')}$`), `${hour}: ${title}`);
  }
  assert.ok(api.total > 0, 'the demo data has coupons due within 72 hours');
  assert.match(await page.getByTestId('due-total').innerText(), new RegExp(api.total.toLocaleString('en-US')));
  assert.equal(await page.getByTestId('overdue').count(), 1);
  await page.screenshot({ path: join(SCREENSHOTS, 'expirations.png'), fullPage: true });
  await context.close();
});

test('the audit log shows staff sign-ins and job actions, filterable', async () => {
  const { context, page } = await signedIn();
  await page.goto(`${server.base}/console/audit?log=staff`);
  const staffRows = await page.getByTestId('audit-row').allInnerTexts();
  // Actions and actors in words (the stored words stay in data- attributes).
  assert.ok(staffRows.some((r) => r.includes('登录') && r.includes(OPERATOR.name)), staffRows.join('\n'));
  await page.goto(`${server.base}/console/audit?actor=demo%3Aseed`);
  const actors = await page.getByTestId('audit-actor').allInnerTexts();
  assert.ok(actors.length > 0 && actors.every((a) => a === '演示数据'), actors.join(','));
  const stored = await page.$$eval('[data-testid=audit-actor]', (cells) => cells.map((c) => c.dataset.actor));
  assert.ok(stored.every((a) => a === 'demo:seed'), stored.join(','));
  await page.screenshot({ path: join(SCREENSHOTS, 'audit.png'), fullPage: true });
  await context.close();
});

test('the dashboard and the audit log work without JavaScript and fit a phone', async () => {
  const { context, page } = await signedIn({ javaScriptEnabled: false, viewport: { width: 375, height: 740 }, isMobile: true });
  for (const path of ['/console/expirations', '/console/audit']) {
    await page.goto(`${server.base}${path}`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `${path} is ${width} px wide`);
  }
  await page.goto(`${server.base}/console/expirations`);
  assert.equal(await page.locator('[data-testid=due-chart] rect title').count(), 72);
  await page.screenshot({ path: join(SCREENSHOTS, 'expirations-mobile.png'), fullPage: true });
  await context.close();
});
