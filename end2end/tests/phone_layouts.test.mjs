// The operator and support pages that used to scroll sideways or break
// their words on a 390 px phone, on the demo data after a reconciliation
// run and a bulk job (and the order of lines whose coupon its refunds
// left used, with the confirmation of its return): none is wider than the phone, coupon codes in the
// reconciliation tables stay on one line, webhook checkboxes sit beside
// their labels, and the bulk job's status badge is coloured like every
// other status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PHONE, addStaff, apiClient, launchBrowser, signIn, startServer, submit } from './harness.mjs';

const ADMIN = { name: 'phone-admin', password: 'lantern harbor plum rain 390' };

let server;
let browser;

before(async () => {
  server = await startServer({}, ['--demo-data'], {
    async beforeStart(cli) {
      await addStaff(cli, [[ADMIN, 'admin']]);
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function width(page) {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

test('operator pages fit a 390 px phone', async () => {
  const api = apiClient(server.base);
  // A bulk job to show: three users issued a coupon of a demo template.
  const templates = await api('GET', '/templates');
  const tid = templates.body.templates[0].id;
  const job = await fetch(`${server.base}/api/v1/templates/${tid}/bulk-issues`, {
    method: 'POST',
    headers: { authorization: 'Bearer e2e-token', 'content-type': 'text/csv', 'idempotency-key': `phone-${Date.now()}` },
    body: 'phone-u1\nphone-u2\nphone-u3\n',
  });
  const jobText = await job.text();
  assert.equal(job.status, 202, jobText);
  const jobId = JSON.parse(jobText).id;

  const { context, page } = await signIn(browser, server.base, ADMIN, { viewport: PHONE, isMobile: true, hasTouch: true });
  // A reconciliation run over the demo's planted anomalies.
  await page.goto(`${server.base}/console/reconciliation`);
  await submit(page, 'run-now');

  // The demo's cart whose refunds left its coupon used: its order page
  // (lines, refunds) and the confirmation of the coupon's return.
  const demo = await server.cli(['demo-data', '--json']);
  assert.equal(demo.code, 0, demo.stderr);
  const left = JSON.parse(demo.stdout).anomalies.find((a) => a.kind === 'coupon_not_returned_after_refunds');
  assert.ok(left, 'the demo plants a coupon its refunds left used');
  const cartPages = [
    `/console/orders/${left.order_no}`,
    `/console/orders/${left.order_no}/return-coupon?coupon_id=${left.coupon_id}`,
  ];

  for (const path of ['/console/reconciliation', '/console/deliveries', '/console/webhooks', '/console/expirations', `/console/jobs/${jobId}`, '/console/compensation/rules', '/console/audit', ...cartPages]) {
    const r = await page.goto(`${server.base}${path}`);
    assert.equal(r.status(), 200, `${path} answers`);
    const w = await width(page);
    assert.ok(w <= PHONE.width, `${path} is ${w} px wide on a ${PHONE.width} px phone`);
  }
  // The confirmation asks for the reason beside its button.
  await page.goto(`${server.base}${cartPages[1]}`);
  assert.equal(await page.locator('form textarea[name=reason], form input[name=reason]').count(), 1);

  // Codes in the reconciliation tables keep to one line.
  await page.goto(`${server.base}/console/reconciliation`);
  const code = page.locator('section[data-testid^="kind-"] td .mono').first();
  if ((await code.count()) === 1) {
    const lines = await code.evaluate((el) => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight || '20')));
    assert.ok(lines <= 1, `a coupon code breaks over ${lines} lines`);
  }

  // Webhook checkboxes sit on the line of their label.
  await page.goto(`${server.base}/console/webhooks`);
  const boxes = page.locator('form input[type=checkbox]');
  const n = await boxes.count();
  for (let i = 0; i < n; i += 1) {
    const same = await boxes.nth(i).evaluate((box) => {
      const label = box.closest('label');
      if (!label) return true;
      const b = box.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(label);
      const text = [...range.getClientRects()].find((r) => r.width > 0 && r.left > b.left);
      return !text || Math.abs(text.top + text.height / 2 - (b.top + b.height / 2)) < 16;
    });
    assert.ok(same, `checkbox ${i} is not beside its label`);
  }

  // The job's status badge has a colour of its own.
  await page.goto(`${server.base}/console/jobs/${jobId}`);
  const badge = page.getByTestId('bulk-status');
  const bg = await badge.evaluate((el) => getComputedStyle(el).backgroundColor);
  assert.notEqual(bg, 'rgba(0, 0, 0, 0)', 'the job status badge is unstyled');
  await context.close();
});
