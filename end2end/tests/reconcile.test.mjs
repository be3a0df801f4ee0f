// Reconciliation in a real browser, on the demo data with its planted
// anomalies (jobs off, so they stay put): an operator runs reconciliation,
// sees each of the four kinds with links to the coupon and order pages,
// repairs one finding and then all of a kind, and the next run finds
// nothing repairable left; a support account may look but not repair.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, binaryPath, launchBrowser, runCli, startServer, publishScreenshots } from './harness.mjs';

const OPERATOR = { name: 'ops', password: 'e2e-operator-password-1' };
const SUPPORT = { name: 'xiaowang', password: 'e2e-support-password-2' };
const KINDS = ['locked_coupon_order_closed', 'order_active_coupon_not_locked', 'coupon_order_mismatch', 'stale_checkout_lock'];

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bdemo-data\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off' }, ['--demo-data'], {
    async beforeStart(cli) {
      for (const [who, role] of [[OPERATOR, 'operator'], [SUPPORT, 'support']]) {
        const r = await cli(['staff', 'add', who.name, '--role', role, '--password-env', 'E2E_STAFF_PW'], {
          E2E_STAFF_PW: who.password,
        });
        assert.equal(r.code, 0, `staff add ${who.name}: ${r.stderr}`);
      }
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  publishScreenshots(['reconciliation.png']);
});

async function signedIn(who, options = {}) {
  const context = await browser.newContext({ locale: 'zh-CN', viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', who.name);
  await page.fill('#login-password', who.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  return { context, page };
}

async function count(page, kind) {
  return Number(await page.locator(`[data-testid=counts] tr[data-kind=${kind}] [data-testid=count]`).innerText());
}

test('an operator runs reconciliation on the demo data and repairs what it found', async () => {
  const { context, page } = await signedIn(OPERATOR);
  await page.goto(`${server.base}/console/reconciliation`);
  await page.getByTestId('no-run').waitFor();
  await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('run-now').click()]);
  assert.match(await page.getByTestId('flash').innerText(), /对账完成/);
  for (const kind of KINDS) {
    assert.ok((await count(page, kind)) >= 1, `${kind} found`);
    const section = page.getByTestId(`kind-${kind}`);
    assert.ok((await section.locator('a[href^="/console/orders/"]').count()) >= 1, `${kind} links its order`);
  }
  await page.screenshot({ path: join(SCREENSHOTS, 'reconciliation.png'), fullPage: true });

  // Repair one finding: the closed presale order's stuck lock.
  const row = page.getByTestId('kind-locked_coupon_order_closed').locator('tr[data-finding]').first();
  await Promise.all([page.waitForURL(/\/repair$/), row.getByTestId('repair').click()]);
  await page.fill('#reason', '对账发现：订单已关闭，券仍锁定');
  await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('confirm').click()]);
  assert.match(await page.getByTestId('flash').innerText(), /已修复/);
  assert.match(
    await page.getByTestId('kind-locked_coupon_order_closed').locator('tr[data-finding]').first().innerText(),
    /已修复/,
  );

  // Repair all of another kind.
  const all = page.locator('[data-testid=counts] tr[data-kind=stale_checkout_lock] [data-testid=repair-all]');
  await Promise.all([page.waitForURL(/\/repair$/), all.click()]);
  await page.fill('#reason', '结算超时订单批量关闭');
  await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('confirm').click()]);
  assert.match(await page.getByTestId('flash').innerText(), /已修复 1 个/);

  // The two link repairs, one by one.
  for (const kind of ['order_active_coupon_not_locked', 'coupon_order_mismatch']) {
    const button = page.getByTestId(`kind-${kind}`).getByTestId('repair').first();
    await Promise.all([page.waitForURL(/\/repair$/), button.click()]);
    await page.fill('#reason', `对账修复 ${kind}`);
    await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('confirm').click()]);
    assert.match(await page.getByTestId('flash').innerText(), /已修复/, kind);
  }

  // Run again: none of the four kinds is left.
  await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('run-now').click()]);
  for (const kind of KINDS) {
    assert.equal(await count(page, kind), 0, `${kind} repaired`);
  }
  const history = await page.getByTestId('history').locator('tbody tr').count();
  assert.equal(history, 2, 'both runs are in the history');
  await page.screenshot({ path: join(SCREENSHOTS, 'reconciliation-after.png'), fullPage: true });
  await context.close();
});

test('a support account sees reconciliation but has no repair buttons', async () => {
  const { context, page } = await signedIn(SUPPORT);
  await page.goto(`${server.base}/console/reconciliation`);
  assert.equal(await page.getByTestId('repair').count(), 0);
  assert.equal(await page.getByTestId('repair-all').count(), 0);
  const r = await page.request.get(`${server.base}/console/reconciliation/findings/1/repair`);
  assert.equal(r.status(), 403);
  await context.close();
});

test('the reconciliation page works without JavaScript', async () => {
  const { context, page } = await signedIn(OPERATOR, { javaScriptEnabled: false });
  await page.goto(`${server.base}/console/reconciliation`);
  await Promise.all([page.waitForURL(/\/console\/reconciliation$/), page.getByTestId('run-now').click()]);
  assert.match(await page.getByTestId('flash').innerText(), /对账完成/);
  await context.close();
});
