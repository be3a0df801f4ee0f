// An operator's week with the bulk tools, in the browser, with
// the server's own background jobs doing the work:
//
// 1. The operator creates a template for redeem codes (with its end spread
//    over two hours) and generates 1,000 codes on its page; the batch page
//    refreshes itself until generation is done; the CSV downloads with
//    1,000 codes.
// 2. One code is redeemed through the API (a second time: 409
//    code_already_redeemed), and that coupon is used on a paid order.
// 3. The operator voids the rest of the batch (a reason and the
//    confirmation box; refused at the field without them).
// 4. The operator uploads a CSV file of 200 users for bulk issue and
//    watches the job page refresh itself until done (200 issued).
// 5. Bulk void: the preview counts 200 available and 1 used; a reason, a
//    confirmation; the job voids 200 and leaves the used coupon alone.
// 6. The report shows the day with its line and bar charts (numbers in
//    <title>s) and the table: 201 claimed, 1 used, 200 invalidated.
// 7. A wake-up rule is created for the template.
// 8. The pending-expirations dashboard shows a spread template's coupons
//    over several hours beside an unspread one's single bar.
//
// Every page fits 1366 px (the report also 390 px), shows no raw id or
// stored word, and is Chinese. Screenshots of every tool go to
// end2end/screenshots/ (the book's, in docs/src/screenshots, come from there).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  PHONE,
  SCREENSHOTS,
  addStaff,
  apiClient,
  binaryPath,
  checkPage,
  expectOk,
  launchBrowser,
  runCli,
  signIn as signInAs,
  startServer,
  submit,
  publishScreenshots,
} from './harness.mjs';

const OPERATOR = { name: 'xiaolin', password: 'e2e-operator-password-18' };
/** How long a background job may take here (debug build, busy machine). */
const JOB_TIMEOUT_MS = 120_000;

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bstaff\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_BUSINESS_TZ: 'Asia/Shanghai' }, [], {
    beforeStart: (cli) => addStaff(cli, [[OPERATOR, 'operator']]),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  publishScreenshots([
    'operator-codes-form.png',
    'operator-code-batch.png',
    'operator-bulk-issue.png',
    'operator-bulk-job.png',
    'operator-bulk-void.png',
    'operator-wakeup.png',
    'operator-report.png',
    'operator-report-phone.png',
    'operator-spread-dashboard.png',
  ]);
});

function api(method, path, body) {
  return apiClient(server.base)(method, path, body);
}

/** Stored words a person should never have to read on a console page. */
const UNREADABLE = [
  /\b(cpn|tpl|cmp|cdb|job|wkr)_[0-9a-z]{6,}/,
  /\b(bulk_issue|bulk_void|out_of_stock|claim_limit_reached|invalid_user_id|code_batch)\b/,
  /\b(staff|job|api):[a-z]/,
];

function check(page, where) {
  return checkPage(page, where, UNREADABLE, { chinese: true });
}

/**
 * Waits while a page that refreshes itself (meta refresh, no JavaScript)
 * shows its job running: `done` is a selector present once the job is done.
 */
async function waitForDone(page, done, where) {
  await page.locator(done).first().waitFor({ timeout: JOB_TIMEOUT_MS }).catch(async (e) => {
    const text = await page.locator('main').innerText().catch(() => '');
    assert.fail(`${where}: not done within ${JOB_TIMEOUT_MS} ms (${e.message}); the page says: ${text.slice(0, 400)}`);
  });
}

const state = {};

test('an operator generates codes, redeems one, bulk-issues a file, voids the rest and reads the report', async () => {
  const { context, page } = await signInAs(browser, server.base, OPERATOR, { acceptDownloads: true });

  // 1. The template, its end spread over two hours.
  await page.goto(`${server.base}/console/templates/new`);
  await page.fill('#name', '兑换码专享券');
  await page.selectOption('#kind', 'fixed');
  await page.fill('#value', '20');
  await page.fill('#min_order', '100');
  await page.fill('#valid_days', '30');
  await page.fill('#total_stock', '5000');
  await page.fill('#expiry_spread_minutes', '120');
  await submit(page, 'create');
  await expectOk(page, 'create template');
  state.templateId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
  const templatePath = new URL(page.url()).pathname;
  assert.match(await page.locator('main').innerText(), /最多提前.{0,3}2.{0,3}小时/, 'the template page shows the spread');

  // Generate 1,000 codes: refused first (no count), then started.
  await page.fill('#code-prefix', 'VP');
  await submit(page, 'generate');
  assert.equal(await page.inputValue('#code-prefix'), 'VP', 'a refused form keeps its input');
  assert.equal(await page.locator('#code-count[aria-invalid=true]').count(), 1, 'the message is at the count');
  await page.goto(`${server.base}${templatePath}`);
  await page.fill('#code-count', '1000');
  await page.fill('#code-prefix', 'VP');
  await page.fill('#code-length', '10');
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-codes-form.png'), fullPage: true });
  await submit(page, 'generate');
  await expectOk(page, 'generate codes');
  assert.match(new URL(page.url()).pathname, /^\/console\/code-batches\//, 'lands on the batch page');
  const batchPath = new URL(page.url()).pathname;
  await check(page, 'batch page, generating');
  await waitForDone(page, '[data-batch-status=done]', 'code generation');
  assert.match(await page.getByTestId('batch-progress').innerText(), /1,?000/, 'all 1,000 generated');
  assert.equal(await page.locator('meta[http-equiv=refresh]').count(), 0, 'a finished batch stops refreshing');
  await check(page, 'batch page, done');
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-code-batch.png'), fullPage: true });

  // The CSV: 1,000 codes after a header, each VP + 10 characters from the alphabet.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('codes-csv').click()]);
  const csv = readFileSync(await download.path(), 'utf8').trim().split(/\r?\n/);
  assert.equal(csv[0].split(',')[0], 'code', `header: ${csv[0]}`);
  const codes = csv.slice(1).map((line) => line.split(',')[0]);
  assert.equal(codes.length, 1000);
  assert.equal(new Set(codes).size, 1000, 'the codes are unique');
  for (const c of codes) assert.match(c, /^VP[2-9A-HJKMNP-Z]{10}$/, `a code from the alphabet: ${c}`);

  // 2. One code redeemed through the API, typed the way a customer would.
  const typed = `${codes[0].slice(0, 5).toLowerCase()} ${codes[0].slice(5, 8)}-${codes[0].slice(8)}`;
  const redeemed = await api('POST', '/users/e2e-buyer/redemptions', { code: typed });
  assert.equal(redeemed.status, 201, JSON.stringify(redeemed.body));
  const again = await api('POST', '/users/e2e-other/redemptions', { code: codes[0] });
  assert.equal(again.status, 409);
  assert.equal(again.body.error?.code ?? again.body.code, 'code_already_redeemed', JSON.stringify(again.body));
  const order = await api('POST', '/orders', {
    order_no: 'E2E-CODE-1',
    user_id: 'e2e-buyer',
    kind: 'normal',
    category: 'general',
    total_cents: 15000,
    coupon_id: redeemed.body.id,
  });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  assert.equal((await api('POST', '/orders/E2E-CODE-1/pay', {})).status, 200);

  // 3. Void the rest of the batch: refused without a reason and the box.
  await page.goto(`${server.base}${batchPath}`);
  assert.match(await page.getByTestId('batch-redeemed').innerText(), /1/);
  await submit(page, 'void');
  assert.equal(await page.locator('#void-reason[aria-invalid=true]').count(), 1, 'the message is at the reason');
  await page.fill('#void-reason', '活动提前结束');
  await page.check('#void-confirm');
  await submit(page, 'void');
  await expectOk(page, 'void batch');
  assert.equal(new URL(page.url()).pathname, batchPath, 'the void lands on the batch page');
  // The page refreshes itself while the void runs.
  await page.locator('[data-testid=refreshing]').waitFor({ state: 'detached', timeout: JOB_TIMEOUT_MS });
  await page.goto(`${server.base}${batchPath}`);
  assert.match(await page.getByTestId('batch-voided').innerText(), /999/, 'the 999 unredeemed codes are void');
  const voided = await api('POST', '/users/e2e-late/redemptions', { code: codes[1] });
  assert.equal(voided.status, 404, 'a voided code is not found');

  // 4. Bulk issue from a file of 200 users.
  await page.goto(`${server.base}${templatePath}`);
  await Promise.all([page.waitForEvent('load'), page.getByTestId('bulk-issue-link').click()]);
  await check(page, 'bulk issue form');
  const users = ['user_id', ...Array.from({ length: 200 }, (_, i) => `member-${String(i).padStart(3, '0')}`)];
  await page.setInputFiles('#user-file', {
    name: 'members.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from(`${users.join('\n')}\n`),
  });
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-bulk-issue.png'), fullPage: true });
  await submit(page, 'bulk-issue-start');
  await expectOk(page, 'bulk issue');
  assert.match(new URL(page.url()).pathname, /^\/console\/jobs\//, 'lands on the job page');
  await check(page, 'bulk issue job');
  await waitForDone(page, '[data-testid=bulk-status][data-status=done]', 'bulk issue');
  assert.equal((await page.getByTestId('bulk-total').innerText()).replace(/\D/g, ''), '200');
  assert.equal((await page.getByTestId('bulk-succeeded').innerText()).replace(/\D/g, ''), '200');
  await check(page, 'bulk issue done');
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-bulk-job.png'), fullPage: true });

  // 5. Bulk void of the template's available coupons.
  await page.goto(`${server.base}${templatePath}/bulk-void`);
  const preview = await page.getByTestId('bulk-void-preview').innerText();
  assert.match(preview, /200/, `the preview counts 200 available: ${preview}`);
  await submit(page, 'bulk-void-next');
  assert.equal(await page.locator('#void-reason[aria-invalid=true]').count(), 1, 'a reason is required');
  await page.fill('#void-reason', '名单有误，整批作废');
  await submit(page, 'bulk-void-next');
  assert.match(await page.getByTestId('bulk-void-question').innerText(), /200/);
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-bulk-void.png'), fullPage: true });
  await submit(page, 'bulk-void-confirm');
  await expectOk(page, 'bulk void');
  await waitForDone(page, '[data-testid=bulk-status][data-status=done]', 'bulk void');
  assert.equal((await page.getByTestId('bulk-succeeded').innerText()).replace(/\D/g, ''), '200');
  const used = await api('GET', `/coupons/${redeemed.body.id}`);
  assert.equal(used.body.status, 'used', 'the used coupon is left alone');

  // 6. The report: charts and the table.
  await page.goto(`${server.base}${templatePath}/report`);
  await check(page, 'report');
  assert.equal(await page.locator('[data-testid=report-line-chart] svg, svg[data-testid=report-line-chart]').count(), 1);
  assert.equal(await page.locator('[data-testid=report-bar-chart] svg, svg[data-testid=report-bar-chart]').count(), 1);
  const titles = await page.locator('svg title').allTextContents();
  assert.ok(titles.some((t) => /201/.test(t)), `a chart names 201 claimed in a <title>: ${titles.join(' | ')}`);
  assert.equal((await page.getByTestId('total-claimed').innerText()).replace(/\D/g, ''), '201');
  assert.equal((await page.getByTestId('total-used').innerText()).replace(/\D/g, ''), '1');
  const table = await page.getByTestId('report-table').innerText();
  assert.match(table, /200/, `the table shows the 200 invalidated: ${table}`);
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-report.png'), fullPage: true });
  const [reportCsv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('report-csv').click()]);
  const reportLines = readFileSync(await reportCsv.path(), 'utf8').trim().split(/\r?\n/);
  assert.ok(reportLines.length >= 2, `the report CSV has a day: ${reportLines.join(' / ')}`);

  // 7. A wake-up rule for the template.
  await page.goto(`${server.base}/console/wakeup`);
  await page.fill('#name', '到期前一天唤醒');
  await page.fill('#lead_hours', '24');
  await page.fill('#active_days', '7');
  await page.check(`input[name=template_ids][value="${state.templateId}"]`);
  await page.fill('#control_percent', '10');
  await submit(page, 'create-wakeup');
  await expectOk(page, 'create wake-up rule');
  await check(page, 'wake-up rule');
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-wakeup.png'), fullPage: true });

  // 8. Spreading on the pending-expirations dashboard: two templates of
  // 40 coupons each ending in 30 hours, one spread over 12 hours.
  for (const [name, spread] of [['整点到期券', 0], ['打散到期券', 12 * 3600]]) {
    const t = await api('POST', '/templates', {
      name,
      kind: 'fixed',
      value_cents: 500,
      min_order_cents: 0,
      valid_seconds: 30 * 3600,
      total_stock: 100,
      per_user_limit: 1,
      expiry_spread_seconds: spread,
    });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    for (let i = 0; i < 40; i += 1) {
      const c = await api('POST', `/users/spread-${spread}-${i}/coupons`, { template_id: t.body.id });
      assert.equal(c.status, 201, JSON.stringify(c.body));
    }
  }
  await page.goto(`${server.base}/console/expirations`);
  await check(page, 'pending expirations');
  const counts = (await page.locator('[data-testid=bar]').evaluateAll((bars) => bars.map((b) => Number(b.dataset.count))))
    .filter((n) => n > 0);
  assert.ok(counts.length >= 4, `the spread template's coupons fall in several hours: ${counts.join(', ')}`);
  assert.equal(counts.reduce((a, b) => a + b, 0), 80, 'all 80 coupons are on the chart');
  assert.ok(Math.max(...counts) >= 40, `the unspread template's coupons end in one hour: ${counts.join(', ')}`);
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-spread-dashboard.png'), fullPage: true });
  await context.close();
});

test('the report reads on a phone', async () => {
  assert.ok(state.templateId, 'the first test made the template');
  const { context, page } = await signInAs(browser, server.base, OPERATOR, { viewport: PHONE });
  await page.goto(`${server.base}/console/templates/${encodeURIComponent(state.templateId)}/report`);
  await check(page, 'report on a phone');
  await page.screenshot({ path: join(SCREENSHOTS, 'operator-report-phone.png'), fullPage: true });
  await context.close();
});
