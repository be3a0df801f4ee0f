// The customers' self-check page in a real browser, on a phone-sized
// screen, on the demo data with its planted anomalies (jobs off, so they
// stay put):
// 1. the shop's backend gets a link for a customer with a planted anomaly
//    through the API; the customer opens it at 375×740, the page fits the
//    screen, and one tap on the check shows the finding in customer words,
//    with the coupon's code and no internal id;
// 2. the same page with JavaScript off still works (it has none);
// 3. a tampered link shows the refusal and nothing of anyone's data;
// 4. with JavaScript off at 390 px, the customer contacts support from the
//    check with a note; the page says it was sent; support finds the
//    request, note and finding in the console's queue (also at 390 px)
//    and marks it handled.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  SCREENSHOTS,
  addStaff,
  binaryPath,
  checkPage,
  launchBrowser,
  publishScreenshots,
  runCli,
  signIn,
  startServer,
} from './harness.mjs';

const PHONE = { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true, locale: 'zh-CN' };
const SECRET = 'e2e self-check secret, at least 32 bytes long';
const NARROW = { width: 390, height: 844 };
const SUPPORT = { name: 'e2e-support', password: 'e2e support password 1' };

let server;
let browser;
/** The planted anomaly: { kind, order_no, coupon_id, code, user_id }. */
let anomaly;
/** The self-check URL the API returned, on this server. */
let link;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(
    /\bdemo-data\b/.test(help.stdout),
    `${binaryPath()} has no 'demo-data' command: run cargo build in this checkout (or set COUPONKEEPER_BIN)`,
  );
  server = await startServer(
    { COUPONKEEPER_JOBS: 'off', COUPONKEEPER_SELF_CHECK_SECRET: SECRET },
    ['--demo-data'],
  );
  const r = await server.cli(['demo-data', '--json']);
  assert.equal(r.code, 0, `demo-data --json failed: ${r.stderr}`);
  anomaly = JSON.parse(r.stdout).anomalies.find((a) => a.kind === 'locked_coupon_order_closed');
  assert.ok(anomaly, 'the demo data plants a coupon locked to a closed order');

  // What the shop's backend does for its logged-in customer.
  const res = await fetch(`${server.base}/api/v1/users/${encodeURIComponent(anomaly.user_id)}/self-check-link`, {
    method: 'POST',
    headers: { authorization: 'Bearer e2e-token', 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(res.status, 200, await res.clone().text());
  const body = await res.json();
  assert.match(body.expires_at, /Z$/);
  // COUPONKEEPER_PUBLIC_URL defaults to http://<COUPONKEEPER_ADDR>, which is this server.
  assert.ok(body.url.startsWith(`${server.base}/self-check?t=v1.`), body.url);
  link = body.url;
  await addStaff(server.cli, [[SUPPORT, 'support']]);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function shot(page, name) {
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
}

async function scrollWidth(page) {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

test('a customer opens the link on a phone and runs the check', async () => {
  const context = await browser.newContext(PHONE);
  const page = await context.newPage();
  const res = await page.goto(link);
  assert.equal(res.status(), 200);
  assert.equal(res.headers()['cache-control'], 'no-store');
  assert.equal(res.headers()['referrer-policy'], 'no-referrer');
  assert.ok((await page.locator('[data-testid="sc-coupon"]').count()) > 0, 'the coupons are listed');
  assert.ok((await page.locator('[data-testid="sc-order"]').count()) > 0, 'the orders are listed');
  assert.ok((await page.content()).includes(anomaly.code), 'the coupon is shown by its code');
  assert.ok((await scrollWidth(page)) <= 375, `scrollWidth is ${await scrollWidth(page)}`);
  await shot(page, 'self-check.png');

  await page.getByTestId('sc-run-check').tap();
  await page.getByTestId('sc-overall').waitFor();
  assert.equal(await page.getByTestId('sc-overall').getAttribute('data-result'), 'problem');
  const finding = page.locator('[data-testid="sc-finding"][data-result="problem"]').first();
  const text = await finding.innerText();
  assert.ok(text.includes(anomaly.code), `the finding names the coupon code: ${text}`);
  assert.match(text, /联系客服/);
  const html = await page.content();
  for (const internal of ['cpn_', 'tpl_', 'staff:', anomaly.coupon_id, 'release_coupon']) {
    assert.ok(!html.includes(internal), `${internal} must not appear`);
  }
  assert.ok((await scrollWidth(page)) <= 375, `after the check scrollWidth is ${await scrollWidth(page)}`);
  await finding.scrollIntoViewIfNeeded();
  await shot(page, 'self-check-result.png');
  mkdirSync(join(ROOT, 'docs', 'src', 'screenshots'), { recursive: true });
  copyFileSync(join(SCREENSHOTS, 'self-check-result.png'), join(ROOT, 'docs', 'src', 'screenshots', 'self-check-result.png'));

  // The language switch keeps the customer on their page.
  await Promise.all([page.waitForURL(/\/self-check\?t=/), page.locator('button.sc-lang').tap()]);
  await page.getByTestId('sc-overall').waitFor();
  assert.match(await page.locator('h2#sc-check-heading').innerText(), /One-click check/);
  await context.close();
});

test('the check works with JavaScript off', async () => {
  const context = await browser.newContext({ ...PHONE, javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(link);
  await page.getByTestId('sc-run-check').click();
  await page.getByTestId('sc-overall').waitFor();
  assert.equal(await page.getByTestId('sc-overall').getAttribute('data-result'), 'problem');
  await context.close();
});

test('a tampered link is refused and shows nothing', async () => {
  const context = await browser.newContext(PHONE);
  const page = await context.newPage();
  const url = new URL(link);
  const token = url.searchParams.get('t');
  const last = token.at(-1) === '0' ? '1' : '0';
  url.searchParams.set('t', token.slice(0, -1) + last);
  const res = await page.goto(url.toString());
  assert.equal(res.status(), 403);
  await page.getByTestId('sc-refused').waitFor();
  const html = await page.content();
  assert.match(html, /链接无效或已过期/);
  assert.match(html, /This link is invalid or has expired/);
  for (const secret of [anomaly.code, anomaly.order_no, anomaly.user_id]) {
    assert.ok(!html.includes(secret), `${secret} must not appear`);
  }
  assert.ok((await scrollWidth(page)) <= 375);
  await shot(page, 'self-check-refused.png');
  await context.close();
});

test('with JavaScript off at 390 px a customer contacts support and support handles it', async () => {
  const context = await browser.newContext({
    viewport: NARROW,
    isMobile: true,
    hasTouch: true,
    locale: 'zh-CN',
    javaScriptEnabled: false,
  });
  const page = await context.newPage();
  await page.goto(link);
  assert.equal(await page.getByTestId('sc-support-form').count(), 0, 'no form before the check');
  await Promise.all([page.waitForEvent('load'), page.getByTestId('sc-run-check').click()]);
  const form = page.locator(`form[data-testid="sc-support-form"]:has(input[name="order_no"][value="${anomaly.order_no}"])`);
  assert.equal(await form.count(), 1, 'a form under the order with the problem');
  await form.getByTestId('sc-support-note').fill('定金付了，券一直锁着');
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  await Promise.all([page.waitForEvent('load'), form.getByTestId('sc-contact-support').click()]);
  assert.match(page.url(), /check=1/);
  const sent = page.getByTestId('sc-support-sent');
  assert.equal(await sent.count(), 1, 'the order now says it was sent');
  assert.match(await sent.innerText(), /已于 .*\(UTC\+8\).* 发给客服/);
  assert.equal(
    await page.locator(`input[name="order_no"][value="${anomaly.order_no}"]`).count(),
    0,
    'no second form for that order within the hour',
  );
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  await sent.scrollIntoViewIfNeeded();
  await shot(page, 'self-check-support-sent.png');
  await context.close();

  // Support, on a phone too, without JavaScript.
  const { context: staff, page: queue } = await signIn(browser, server.base, SUPPORT, {
    viewport: NARROW,
    javaScriptEnabled: false,
  });
  await queue.goto(`${server.base}/console/support-requests`);
  const item = queue.locator('[data-testid="support-request"]', { hasText: '定金付了，券一直锁着' });
  assert.equal(await item.count(), 1, 'the request is in the queue');
  const text = await item.innerText();
  assert.ok(text.includes(anomaly.order_no), text);
  assert.ok(text.includes(anomaly.code), `the finding names the coupon by code: ${text}`);
  await checkPage(queue, 'support queue', [/cpn_[0-9a-f]/, /support_requested/], { chinese: true });
  await shot(queue, 'support-requests.png');
  await Promise.all([queue.waitForEvent('load'), item.getByRole('button').click()]);
  assert.match(queue.url(), /\/console\/support-requests$/);
  assert.match(await queue.getByTestId('flash').innerText(), new RegExp(anomaly.order_no));
  assert.equal(await queue.locator('[data-testid="support-request"]', { hasText: '定金付了，券一直锁着' }).count(), 0);
  await staff.close();
  publishScreenshots(['self-check-support-sent.png', 'support-requests.png']);
});
