// The support console in a real browser, on the demo data with its planted
// anomalies (jobs off, so they stay put):
// 1. the main support case: search a code, open its order, run the health
//    check, release the stuck coupon with a reason, issue a compensation
//    coupon, sign out;
// 2. the other three anomaly kinds, detected and (where the console can)
//    resolved;
// 3. a support account cannot force a release, and a forged form is a 403;
// 4. language: English by Accept-Language, the switch to Chinese sticks;
// 5. everything above the fold works without JavaScript;
// 6. the order page fits a 375 px screen.
// Tests share one server and run in order (each acts on different orders).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, binaryPath, launchBrowser, runCli, startServer, publishScreenshots } from './harness.mjs';

const ADMIN = { name: 'admin', password: 'e2e-root-plum-harbor-1' };
const SUPPORT = { name: 'xiaoli', password: 'e2e-support-password-1' };
const DESKTOP = { width: 1280, height: 800 };

let server;
let browser;
/** kind -> { kind, order_no, coupon_id, code, user_id } */
const anomaly = {};

before(async () => {
  // CARGO_TARGET_DIR may be shared with other checkouts: make sure the binary
  // is this one's (it has `staff` and `demo-data`), or say what to do.
  const help = await runCli(['--help'], process.env);
  assert.ok(
    /\bstaff\b/.test(help.stdout) && /\bdemo-data\b/.test(help.stdout),
    `${binaryPath()} has no 'staff' / 'demo-data' command: run cargo build in this checkout (or set COUPONKEEPER_BIN)`,
  );
  server = await startServer(
    {
      COUPONKEEPER_BOOTSTRAP_ADMIN: `${ADMIN.name}:${ADMIN.password}`,
      COUPONKEEPER_JOBS: 'off',
    },
    ['--demo-data'],
    {
      // The bootstrap admin is only created when there is no staff account
      // at all, so with the support account made first the admin is added
      // here too (same name and password).
      async beforeStart(cli) {
        for (const [who, role] of [[SUPPORT, 'support'], [ADMIN, 'admin']]) {
          const r = await cli(['staff', 'add', who.name, '--role', role, '--password-env', 'E2E_STAFF_PW'], {
            E2E_STAFF_PW: who.password,
          });
          assert.equal(r.code, 0, `staff add ${who.name} failed: ${r.stderr}`);
        }
      },
    },
  );
  const r = await server.cli(['demo-data', '--json']);
  assert.equal(r.code, 0, `demo-data --json failed: ${r.stderr}`);
  const report = JSON.parse(r.stdout);
  assert.equal(report.already_present, true, 'serve --demo-data loaded the demo before');
  for (const a of report.anomalies) anomaly[a.kind] ??= a;
  for (const kind of ['locked_coupon_order_closed', 'order_active_coupon_not_locked', 'coupon_order_mismatch', 'stale_checkout_lock']) {
    assert.ok(anomaly[kind], `the demo data plants a ${kind} anomaly`);
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  publishScreenshots(['coupon.png', 'coupon-list.png', 'user.png', 'order-health-check.png']);
});

// ---------------------------------------------------------------- helpers

async function newPage(options = {}) {
  const context = await browser.newContext({ locale: 'zh-CN', viewport: DESKTOP, ...options });
  const page = await context.newPage();
  return { context, page };
}

async function shot(page, name) {
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
}

async function signIn(page, who) {
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', who.name);
  await page.fill('#login-password', who.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  assert.match(await page.getByTestId('staff-name').innerText(), new RegExp(who.name));
}

/** Opens an order page and clicks "一键检测"; returns the overall result. */
async function runHealthCheck(page, orderNo) {
  await page.goto(`${server.base}/console/orders/${encodeURIComponent(orderNo)}`);
  assert.equal(await page.getByTestId('overall').count(), 0, 'no result before the check is run');
  await page.getByTestId('run-health-check').click();
  await page.getByTestId('overall').waitFor();
  return page.getByTestId('overall').getAttribute('data-result');
}

function check(page, name) {
  return page.locator(`ul[data-testid=checks] li[data-check=${name}]`);
}

async function checkResult(page, name) {
  return check(page, name).locator('.badge').first().getAttribute('data-result');
}

/** The timeline's rows as arrays of cell texts. */
async function timeline(page) {
  return page.$$eval('[data-testid=timeline] tbody tr', (rows) =>
    rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.innerText.trim())),
  );
}

async function couponStatus(page) {
  return page.locator('[data-testid=coupon-status] [data-status]').getAttribute('data-status');
}

async function flash(page) {
  return page.getByTestId('flash').innerText();
}

/** Fills the reason and confirms; waits for the page the redirect leads to. */
async function confirmWithReason(page, reason) {
  await page.fill('#reason', reason);
  await Promise.all([page.waitForEvent('load'), page.getByTestId('confirm').click()]);
}

// ------------------------------------------------------------------ tests

test('support case: search a stuck code, health-check its order, release it, compensate, sign out', async () => {
  const a = anomaly.locked_coupon_order_closed;
  // Timelines name the actor in words: 客服后台：xiaoli.
  const actor = `客服后台：${SUPPORT.name}`;
  const { context, page } = await newPage();

  await page.goto(`${server.base}/console`);
  assert.match(page.url(), /\/login/, 'the console needs a session');
  await shot(page, 'login.png');
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', 'wrong-password-123');
  await page.click('button.primary');
  assert.match(page.url(), /\/login/, 'a wrong password does not sign in');
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', SUPPORT.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  assert.match(await page.getByTestId('staff-name').innerText(), /xiaoli.*客服/);
  await shot(page, 'console-home.png');

  // "/" focuses the search box; Enter on a code opens that coupon.
  await page.locator('h1').click();
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'search-q', '"/" focuses the search box');
  await page.keyboard.type(a.code);
  await Promise.all([page.waitForURL(`**/console/coupons/${a.coupon_id}`), page.keyboard.press('Enter')]);
  assert.equal(await page.getByTestId('coupon-code').innerText(), a.code);
  assert.equal(await page.getByTestId('coupon-status').innerText(), '锁定中');
  assert.equal(await page.getByTestId('release-link').count(), 1, 'a locked coupon offers a release');
  await shot(page, 'coupon.png');

  // Its order, and the health check.
  await Promise.all([page.waitForURL(`**/console/orders/${a.order_no}`), page.getByRole('link', { name: a.order_no }).first().click()]);
  assert.equal(await page.getByTestId('order-status').locator('[data-status]').getAttribute('data-status'), 'closed');
  assert.equal(await runHealthCheck(page, a.order_no), 'problem');
  assert.equal(await checkResult(page, 'coupon_status'), 'problem');
  assert.match(await check(page, 'coupon_status').innerText(), new RegExp(a.code), 'the check names the coupon by code');
  const fix = check(page, 'coupon_status').locator('a[data-fix=release_coupon]');
  const orderCheck = `/console/orders/${a.order_no}?check=1#health`;
  assert.equal(await fix.getAttribute('href'), `/console/coupons/${a.coupon_id}/release?back=${encodeURIComponent(orderCheck)}`);
  await shot(page, 'order-health-check.png');

  // Confirmation page: the reason is required by the browser.
  await Promise.all([page.waitForURL(new RegExp(`/console/coupons/${a.coupon_id}/release\\?back=`)), fix.click()]);
  assert.match(await page.locator('main').innerText(), new RegExp(a.code));
  await shot(page, 'release-confirm.png');
  await page.getByTestId('confirm').click();
  assert.match(page.url(), /\/release\?back=/, 'submitting without a reason stays on the page');
  assert.equal(await page.$eval('textarea#reason', (t) => t.validity.valueMissing), true);
  const reason = 'e2e: 订单已关闭，券仍被锁定，释放给客户';
  await confirmWithReason(page, reason);
  // Back on the order's health check it started from, run again.
  assert.ok(page.url().endsWith(orderCheck), page.url());
  assert.match(await flash(page), new RegExp(`已释放券 ${a.code} 的锁定`));
  assert.equal(await checkResult(page, 'coupon_status'), 'ok', 'the re-run check is clean');
  await page.goto(`${server.base}/console/coupons/${a.coupon_id}`);
  assert.ok(['available', 'expired'].includes(await couponStatus(page)), 'released to available or expired');
  assert.match(await page.getByTestId('coupon-status').innerText(), /^(待使用|已过期)$/);
  assert.equal(await page.getByTestId('release-link').count(), 0, 'nothing left to release');
  const release = (await timeline(page)).find((r) => r.includes(actor));
  assert.ok(release, `the coupon timeline has a row by ${actor}`);
  assert.ok(release.includes(reason), 'with the reason');
  assert.ok(release.some((c) => /锁定中 → (待使用|已过期)/.test(c)), 'recording locked → available/expired');

  // The flash is one-shot.
  await page.reload();
  assert.equal(await page.getByTestId('flash').count(), 0, 'the flash shows once');

  // Compensation for the same user, linked to the order.
  await Promise.all([page.waitForURL(`**/console/users/${a.user_id}`), page.getByRole('link', { name: a.user_id }).first().click()]);
  assert.match(await page.locator('h1').innerText(), new RegExp(a.user_id));
  await shot(page, 'user.png');
  await Promise.all([
    page.waitForURL(new RegExp(`/console/users/${a.user_id}/compensation\\?back=`)),
    page.locator('main').getByRole('link', { name: '发补偿券' }).first().click(),
  ]);
  assert.match(await page.getByTestId('cap').innerText(), /客服补偿额度/, 'a support account sees its limits');
  assert.match(await page.getByTestId('allowance').innerText(), /今天还可发放/, 'and what is left of today');
  await page.fill('#amount', '20');
  await page.fill('#valid_days', '30');
  await page.fill('#order_no', a.order_no);
  await page.fill('#reason', 'e2e: 券被错误占用的补偿');
  await shot(page, 'compensation.png');
  // Back on the user page it started from; the flash names the new coupon.
  await Promise.all([page.waitForURL(new RegExp(`/console/users/${a.user_id}$`)), page.getByTestId('confirm').click()]);
  const issuedFlash = await flash(page);
  assert.match(issuedFlash, /已发放 ¥20\.00 补偿券 [0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}/);
  const newCode = issuedFlash.match(/[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}/)[0];
  const newHref = await page.locator('main a', { hasText: newCode }).first().getAttribute('href');
  assert.notEqual(newHref, `/console/coupons/${a.coupon_id}`, 'a new coupon');
  await page.goto(`${server.base}${newHref}`);
  assert.equal(await page.getByTestId('coupon-status').innerText(), '待使用');
  assert.match(await page.locator('main').innerText(), /¥20\.00/);
  const issued = (await timeline(page)).find((r) => r.includes(actor));
  assert.ok(issued, `the new coupon's timeline names ${actor}`);
  assert.ok(issued.includes('e2e: 券被错误占用的补偿'));
  const compensationUrl = page.url();

  // The order page reflects the release: the check is clean, the timeline shows it.
  assert.equal(await runHealthCheck(page, a.order_no), 'ok');
  assert.equal(await checkResult(page, 'coupon_status'), 'ok');
  assert.equal(await page.locator('a[data-fix]').count(), 0, 'no fix is offered any more');
  const orderRows = await timeline(page);
  assert.ok(orderRows.some((r) => r.includes(actor) && r.includes(reason)), 'the order timeline shows the release');

  // The user page lists the new compensation coupon as available.
  await page.goto(`${server.base}/console/users/${a.user_id}`);
  const newId = compensationUrl.split('/').pop();
  assert.equal(await page.locator(`a[href="/console/coupons/${newId}"]`).count(), 1, 'the user page lists the new coupon');

  // Sign out: the session is gone.
  await Promise.all([page.waitForURL(/\/login/), page.locator('form[action="/logout"] button').click()]);
  await page.goto(`${server.base}/console`);
  assert.match(page.url(), /\/login/, '/console redirects to /login after sign-out');
  await context.close();
});

test('after the release the closed order no longer reads its coupon as locked', async () => {
  const a = anomaly.locked_coupon_order_closed;
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  await page.goto(`${server.base}/console/orders/${a.order_no}`);
  const lock = await page.getByTestId('lock-status').innerText();
  await context.close();
  assert.equal(lock, '已释放');
});

test('the order page shows a compensation coupon issued for that order', async () => {
  // After test 1, DEMO-P-0017 has a ¥20 compensation coupon tied to it.
  const a = anomaly.locked_coupon_order_closed;
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  await page.goto(`${server.base}/console/orders/${a.order_no}`);
  const ledger = await page.getByTestId('ledger').innerText();
  await context.close();
  assert.match(ledger, /¥20\.00/, 'the ledger lists the ¥20 compensation coupon');
});

/**
 * Follows the fix buttons the order's health check offers `who`, one at a
 * time (confirmation page, reason, confirm), until none is left. Each fix
 * must succeed (an ok flash) and must not be offered again afterwards.
 * Returns what was done, e.g. ['checkout_lock: release_coupon'].
 */
async function followFixes(page, orderNo, who) {
  const done = [];
  const seen = new Set();
  for (let i = 0; i < 5; i++) {
    await runHealthCheck(page, orderNo);
    const fix = page.locator('ul[data-testid=checks] li a[data-fix]').first();
    if ((await fix.count()) === 0) break;
    const checkName = await fix.evaluate((a) => a.closest('li').dataset.check);
    const code = await fix.getAttribute('data-fix');
    const href = await fix.getAttribute('href');
    assert.ok(!seen.has(href), `${checkName}: ${code} (${href}) is offered again after it was done`);
    seen.add(href);
    await Promise.all([page.waitForEvent('load'), fix.click()]);
    await confirmWithReason(page, `e2e: ${who.name} ${code} for ${orderNo}`);
    assert.match(await page.getByTestId('flash').getAttribute('class'), /flash-ok/, `${checkName}: ${code} succeeded: ${await flash(page)}`);
    done.push(`${checkName}: ${code} (${who.name})`);
  }
  return done;
}

/**
 * One planted anomaly: the order's health check finds it in `checkName`;
 * support follows the offered fixes, then (if anything is left) an
 * operator-level account does; the re-run check is clean.
 */
async function detectAndResolve(t, kind, checkNames) {
  const a = anomaly[kind];
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  const overall = await runHealthCheck(page, a.order_no);
  assert.ok(['problem', 'warning'].includes(overall), `${kind}: overall is ${overall}`);
  const flagged = [];
  for (const name of checkNames) if ((await checkResult(page, name)) !== 'ok') flagged.push(name);
  assert.ok(flagged.length > 0, `${kind}: one of ${checkNames.join(', ')} reports it`);

  const done = await followFixes(page, a.order_no, SUPPORT);
  let after = await runHealthCheck(page, a.order_no);
  await context.close();
  if (after !== 'ok') {
    const admin = await newPage();
    await signIn(admin.page, ADMIN);
    done.push(...(await followFixes(admin.page, a.order_no, ADMIN)));
    after = await runHealthCheck(admin.page, a.order_no);
    for (const name of checkNames) {
      assert.equal(await checkResult(admin.page, name), 'ok', `${kind}: ${name} is clean after ${done.join(', ') || 'nothing'}`);
    }
    await admin.context.close();
  }
  t.diagnostic(`${kind} on ${a.order_no}: flagged by ${flagged.join(', ')}; fixes: ${done.join('; ') || 'none offered'}; check after: ${after}`);
  assert.ok(done.length > 0, `${kind}: the console offers a fix`);
  assert.equal(after, 'ok', `${kind}: the re-run health check is clean`);
  return { a, done };
}

test('stale checkout lock: detected, released from the console, the order closed', async (t) => {
  const { a, done } = await detectAndResolve(t, 'stale_checkout_lock', ['checkout_lock', 'order_status']);
  assert.ok(done.some((d) => /(release_coupon|cancel_order)/.test(d)), 'released, or closed (which releases)');
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  await page.goto(`${server.base}/console/coupons/${a.coupon_id}`);
  assert.ok(['available', 'expired'].includes(await couponStatus(page)), 'the coupon is free again');
  assert.ok((await timeline(page)).some((r) => r.some((c) => c.startsWith('客服后台：'))), 'the release is in the timeline');
  await context.close();
});

test('order active but its coupon not locked: detected and resolved from the console', async (t) => {
  await detectAndResolve(t, 'order_active_coupon_not_locked', ['coupon_status']);
});

test('coupon/order mismatch: detected and resolved from the console', async (t) => {
  await detectAndResolve(t, 'coupon_order_mismatch', ['coupon_status', 'lock_link']);
});

test('a coupon its refunds left used: detected, returned to the customer by support', async (t) => {
  const { a, done } = await detectAndResolve(t, 'coupon_not_returned_after_refunds', ['coupon_status']);
  assert.ok(done.some((d) => d.includes('return_coupon')), `returned: ${done.join('; ')}`);
  assert.ok(done.every((d) => d.endsWith(`(${SUPPORT.name})`)), 'support could do it alone');
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  await page.goto(`${server.base}/console/coupons/${a.coupon_id}`);
  assert.equal(await couponStatus(page), 'available', 'the coupon is back with its customer');
  await page.goto(`${server.base}/console/orders/${a.order_no}`);
  const text = await page.locator('main').innerText();
  assert.ok(text.includes('订单退款后补退回券'), 'the order timeline says the coupon was returned after its refunds');
  // (The reason typed in the walk names the fix's code; the page's own
  // words name none.)
  assert.ok(!/\bcpn_[0-9a-z]{6,}/.test(text), 'coupon codes, not ids');
  await context.close();
});

test('a support account cannot force a release; a forged form is refused with 403', async () => {
  const { context, page } = await newPage();
  await signIn(page, SUPPORT);
  // A locked coupon whose order is live and healthy.
  await page.goto(`${server.base}/console/coupons?status=locked`);
  assert.ok((await page.getByTestId('coupon-table').locator('tbody tr').count()) > 0);
  await shot(page, 'coupon-list.png');
  const rows = await page.$$eval('[data-testid=coupon-table] tbody tr', (trs) =>
    trs.map((tr) => ({
      coupon: tr.querySelector('a[href^="/console/coupons/"]')?.getAttribute('href'),
      order: tr.querySelector('a[href^="/console/orders/"]')?.textContent,
    })),
  );
  const planted = new Set(Object.values(anomaly).map((a) => a.coupon_id));
  let live = null;
  for (const r of rows) {
    if (!r.order || planted.has(r.coupon.split('/').pop())) continue;
    if ((await runHealthCheck(page, r.order)) !== 'ok') continue;
    const st = await page.getByTestId('order-status').locator('[data-status]').getAttribute('data-status');
    if (['pending_payment', 'deposit_paid'].includes(st)) {
      live = r;
      break;
    }
  }
  assert.ok(live, 'the demo has a live order holding a locked coupon');
  const couponId = live.coupon.split('/').pop();
  const releaseUrl = `${server.base}/console/coupons/${couponId}/release`;

  await page.goto(releaseUrl);
  assert.equal(await page.locator('input[name=force]').count(), 0, 'no force checkbox for support');
  assert.match(await page.locator('main').innerText(), /只能由运营强制释放/);

  // Submitting anyway is refused beside the form, with the reason kept:
  // the coupon stays locked.
  await confirmWithReason(page, 'e2e: 尝试释放进行中的订单');
  assert.match(await page.locator('[data-field-error=form]').innerText(), /订单仍在进行中/);
  assert.equal(await page.locator('textarea#reason').inputValue(), 'e2e: 尝试释放进行中的订单');
  await page.goto(`${server.base}${live.coupon}`);
  assert.equal(await couponStatus(page), 'locked');

  // Forged forms: a wrong token, and no token, with force=true.
  for (const csrf of ['forged-token', '']) {
    const r = await page.request.post(releaseUrl, {
      form: { csrf, form_id: `e2e${Date.now()}`, reason: 'forged', force: 'true' },
      maxRedirects: 0,
    });
    assert.equal(r.status(), 403, `csrf=${JSON.stringify(csrf)} is a 403`);
  }
  // The right token but force=true from a support account: not allowed either.
  const csrf = await page.locator('form[action="/logout"] input[name=csrf]').inputValue();
  const forced = await page.request.post(releaseUrl, {
    form: { csrf, form_id: `e2e${Date.now()}`, reason: 'force from support', force: 'true' },
    maxRedirects: 0,
  });
  assert.equal(forced.status(), 403, 'force=true from a support account is forbidden');
  await page.goto(`${server.base}${live.coupon}`);
  assert.equal(await couponStatus(page), 'locked', 'the coupon is still locked');
  await context.close();

  // An operator-level account does get the checkbox (so the check above means something).
  const admin = await newPage();
  await signIn(admin.page, ADMIN);
  await admin.page.goto(releaseUrl);
  assert.equal(await admin.page.locator('input[name=force]').count(), 1, 'the admin sees the force checkbox');
  await admin.context.close();
});

test('English by Accept-Language; the switch turns Chinese and stays', async () => {
  const { context, page } = await newPage({ locale: 'en-US' });
  await page.goto(`${server.base}/login`);
  assert.equal(await page.locator('h1').innerText(), 'Staff sign-in');
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', SUPPORT.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  assert.equal(await page.locator('h1').innerText(), 'Support console');
  assert.match(await page.getByTestId('staff-name').innerText(), /xiaoli · support/);
  await page.goto(`${server.base}/console/orders/${anomaly.locked_coupon_order_closed.order_no}`);
  assert.equal(await page.getByTestId('run-health-check').innerText(), 'Run the health check');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');

  await page.locator('form[action="/lang"] button').click();
  await page.waitForLoadState();
  assert.match(page.url(), /\/console\/orders\//, 'the switch comes back to the same page');
  assert.equal(await page.getByTestId('run-health-check').innerText(), '一键检测');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.goto(`${server.base}/console/coupons`);
  assert.equal(await page.locator('h1').innerText(), '券列表', 'still Chinese on the next page');
  assert.match(await page.getByRole('button', { name: 'English' }).innerText(), /English/);
  await context.close();
});

test('without JavaScript: sign in, search and open a coupon page', async () => {
  const a = anomaly.order_active_coupon_not_locked;
  const { context, page } = await newPage({ javaScriptEnabled: false });
  await signIn(page, SUPPORT);
  await page.fill('#search-q', a.code);
  await Promise.all([page.waitForURL(`**/console/coupons/${a.coupon_id}`), page.locator('form[action="/console/search"] button').click()]);
  assert.equal(await page.getByTestId('coupon-code').innerText(), a.code);
  assert.match(await page.getByTestId('coupon-status').innerText(), /待使用|锁定中|已过期/);
  // Searching an order number opens the order.
  await page.fill('#search-q', a.order_no);
  await Promise.all([page.waitForURL(`**/console/orders/${a.order_no}`), page.press('#search-q', 'Enter')]);
  assert.match(await page.locator('h1').innerText(), new RegExp(a.order_no));
  await context.close();
});

// Wide tables must scroll inside `.table-wrap`, never widen the page
// (`.content` is a grid with one `minmax(0, 1fr)` column for this).
test('the order page fits a 375 px screen', async () => {
  const a = anomaly.locked_coupon_order_closed;
  const { context, page } = await newPage({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
  await signIn(page, SUPPORT);
  await runHealthCheck(page, a.order_no);
  await shot(page, 'order-mobile.png');
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 375, `scrollWidth is ${width}`);
  await context.close();
});
