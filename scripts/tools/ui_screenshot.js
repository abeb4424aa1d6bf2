// One screenshot of the MLflow or Prefect UI in headless Chromium
// (scripts/tools/ui_screenshots.sh calls it for every image in docs/images/ and states the
// settings behind them there).
//
//   node ui_screenshot.js mlflow   URL OUT.png [chart search]   the chart view, filtered
//   node ui_screenshot.js form     URL OUT.png TEXT             a Prefect form, TEXT in view
//   node ui_screenshot.js artifact URL OUT.png [TAB]            a page (its tab TAB), 1900 px tall
//   node ui_screenshot.js page     URL OUT.png [TEXT]           a page as it opens, TEXT in view
//   node ui_screenshot.js dropdown URL OUT.png LABEL            a form, the drop-down after LABEL clicked
//
// playwright-core is resolved from NODE_PATH (it is not a dependency of the Python package).
const { chromium } = require('playwright-core');

(async () => {
  const [mode, url, out, text] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // Prefect's pages scroll inside a panel (a full-page capture sees one screen): a tall
  // window shows a whole artifact.
  const height = mode === 'artifact' ? 1900 : 1000;
  const page = await browser.newPage({ viewport: { width: 1600, height } });
  await page.goto(url, { waitUntil: 'load', timeout: 90000 });
  await page.waitForTimeout(8000);  // both UIs render after their API calls return
  for (const label of ['Close', 'Got it', 'Dismiss']) {
    const button = page.getByRole('button', { name: label });
    if (await button.count()) { try { await button.first().click({ timeout: 2000 }); } catch (e) {} }
  }
  if (mode === 'mlflow') {
    // MLflow 3 opens on its GenAI pages; runs and their charts are under "Model training"
    // (a choice the browser remembers), then the chart view of the runs page.
    await page.getByText('Model training', { exact: true }).first().click({ timeout: 30000 });
    await page.goto(url, { waitUntil: 'load', timeout: 90000 });
    await page.waitForTimeout(8000);
  }
  if (mode === 'mlflow' && text) {
    await page.getByPlaceholder('Search metric charts').fill(text);
    await page.waitForTimeout(6000);
  }
  if (mode === 'form' && text) {
    const target = page.getByText(text, { exact: false }).first();
    await target.scrollIntoViewIfNeeded({ timeout: 30000 });
    await page.evaluate(() => window.scrollBy(0, -250));  // the field's label above its help
    await page.waitForTimeout(1000);
  }
  if (mode === 'page' && text) {
    // Waits for TEXT (a loaded table on a slow machine), then closes panels opened meanwhile
    // (MLflow's assistant).
    await page.getByText(text, { exact: false }).first().scrollIntoViewIfNeeded({ timeout: 60000 });
    for (const label of ['Close', 'Close assistant', 'Dismiss']) {
      const button = page.getByRole('button', { name: label, exact: true });
      if (await button.count()) { try { await button.first().click({ timeout: 2000 }); } catch (e) {} }
    }
    await page.waitForTimeout(1500);
  }
  if (mode === 'page' && text && url.includes('/experiments/') && !url.includes('/runs/')) {
    // The runs table: its Run Name column dragged wide enough for whole names.
    const header = page.getByText('Run Name', { exact: true }).first();
    const box = await header.boundingBox();
    if (box) {
      const edge = await page.evaluate(({ x, y }) => {
        let cell = document.elementFromPoint(x, y);
        while (cell && cell.getAttribute('role') !== 'columnheader' && cell.tagName !== 'TH') {
          cell = cell.parentElement;
        }
        return cell ? cell.getBoundingClientRect().right : null;
      }, { x: box.x + 5, y: box.y + box.height / 2 });
      if (edge) {
        await page.mouse.move(edge - 2, box.y + box.height / 2);
        await page.mouse.down();
        await page.mouse.move(edge + 420, box.y + box.height / 2, { steps: 10 });
        await page.mouse.up();
        await page.waitForTimeout(1000);
      }
    }
  }
  if (mode === 'dropdown') {
    // The first button after the field's label: Prefect renders an enum as a select button.
    const label = page.getByText(text, { exact: false }).first();
    await label.scrollIntoViewIfNeeded({ timeout: 30000 });
    await page.evaluate(() => window.scrollBy(0, -150));
    await label.locator('xpath=following::button[1]').click({ timeout: 30000 });
    await page.waitForTimeout(1500);
  }
  if (mode === 'artifact' && text) {
    await page.getByText(text, { exact: true }).first().click({ timeout: 30000 });
    await page.waitForTimeout(5000);
  }
  await page.screenshot({ path: out, fullPage: mode === 'artifact' });
  await browser.close();
})().catch((error) => { console.error(error); process.exit(1); });
