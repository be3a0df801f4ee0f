// The operator and support pages that used to scroll sideways or break
// their words on a 390 px phone, on the demo data after a reconciliation
// run and a bulk job: none is wider than the phone, coupon codes in the
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

  for (const path of ['/console/reconciliation', '/console/deliveries', '/console/webhooks', '/console/expirations', `/console/jobs/${jobId}`, '/console/compensation/rules', '/console/audit']) {
    await page.goto(`${server.base}${path}`);
    const w = await width(page);
    assert.ok(w <= PHONE.width, `${path} is ${w} px wide on a ${PHONE.width} px phone`);
  }

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
