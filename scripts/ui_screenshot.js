// Screenshots of the MLflow chart view (grid runs, pass@k) and the Prefect grid artifact.
const { chromium } = require('playwright-core');
(async () => {
  const [mode, url, out, search] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = await browser.newPage({ viewport: { width: 1700, height: 1050 } });
  await page.goto(url, { waitUntil: 'load', timeout: 60000 });
  await page.waitForTimeout(10000);
  for (const label of ['Close', 'Got it']) {
    const b = page.getByRole('button', { name: label });
    if (await b.count()) { try { await b.first().click({ timeout: 2000 }); } catch (e) {} }
  }
  if (mode === 'mlflow' && search) {
    const box = page.getByPlaceholder('Search metric charts');
    await box.fill(search);
    await page.waitForTimeout(6000);
  }
  await page.screenshot({ path: out, fullPage: false });
  await browser.close();
})();
