// The service console in Chromium, as a developer meets it: the contacts example's daemon
// with the console on, a login, the method list, calls with good and wrong arguments, and
// captures pasted as hex. Screenshots for a person to look at go to SCREENSHOTS.
//   node console.mjs CONTACTS_DAEMON CONTACTS_JSON CAPTURE SCREENSHOTS
// CAPTURE: an AMF request from the corpus (a Flex RemotingMessage).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchChromium, startDaemon, stopDaemon } from './lib.mjs';

const [binary, settingsFile, capture, shots] = process.argv.slice(2);
if (!shots) {
  console.error('usage: node console.mjs CONTACTS_DAEMON CONTACTS_JSON CAPTURE SCREENSHOTS');
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'amfgate-console-'));
const checks = [];
function check(what, ok, detail = '') {
  checks.push(ok);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok || !detail ? '' : `\n       ${detail}`}`);
}

let daemon, browser, status = 1;
try {
  // The example's own settings (users, access rules), on a free port with the console on.
  const settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8'));
  settings.listen = { address: '127.0.0.1', port: 0 };
  settings.console = { enabled: true };
  settings.services.ContactService.database = path.join(work, 'contacts.db');
  daemon = await startDaemon(binary, settings, work);
  browser = await launchChromium(work);
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Statuses the page expects (401 before the login, 403, 422) are logged by Chromium as
  // failed loads: not errors of the page.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  const text = (selector) => page.$eval(selector, (e) => e.textContent);

  // The users of contacts.json: the console asks for a login first.
  await page.goto(`${daemon.base}/console`);
  await page.waitForSelector('#login:not([hidden])', { timeout: 10_000 });
  check('the console asks for a login', true);
  await page.type('#user', 'editor');
  await page.type('#password', 'wrong');
  await page.click('#login button');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent !== '');
  check('a wrong password is refused in the page',
        (await text('#login-error')).includes('Invalid login'), await text('#login-error'));
  await page.$eval('#password', (e) => { e.value = ''; });
  await page.type('#password', 'contacts-demo');
  await page.click('#login button');
  const search = 'button[data-name="ContactService.search"]';
  await page.waitForSelector(search, { timeout: 10_000 });
  check('after the login, the method list shows ContactService.search', true);

  // Save a contact (typed JSON), then find it with search.
  await page.type('#search', 'contactservice.sa');
  const listed = await page.$$eval('#methods button', (b) => b.map((x) => x.dataset.name));
  check('the search box narrows the list', listed.length === 1 && listed[0] === 'ContactService.save',
        JSON.stringify(listed));
  await page.keyboard.press('Enter');  // picks the first match
  await page.waitForSelector('#call-form:not([hidden])');
  const call = async (args) => {
    await page.$eval('#args', (e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }, args);
    await page.$eval('#outcome', (e) => e.replaceChildren());
    await page.click('#send');
    await page.waitForSelector('#outcome .status', { timeout: 10_000 });
  };
  await call('[{"$class": "com.example.contacts.Contact", "$sealed": ["id", "name", "email", "phone", "notes", "updated"], "$dynamic": false, "id": 0, "name": "Ann Lee", "email": "ann@example.com", "phone": "+1 555 0100", "notes": null, "updated": null}]');
  check('save answers with the stored contact', (await text('#outcome .status')).startsWith('Result'),
        await text('#outcome'));

  await page.$eval('#search', (e) => { e.value = ''; });
  await page.type('#search', 'search');
  await page.click(search);
  await call('["ann"]');
  const result = await text('#outcome');
  check('search shows the result tree with the AMF types marked',
        result.includes('"Ann Lee"') && result.includes('com.example.contacts.Contact') &&
        result.includes('int') && result.includes('date'), result);
  check('the raw request and response are shown in hex with offsets',
        (await page.$$('#outcome pre.hex')).length === 2 && result.includes('00000000'), result);
  await page.screenshot({ path: path.join(shots, 'console-call.png'), fullPage: true });

  // A wrong argument type: the fault names the argument. And in each encoding.
  await page.$eval('#search', (e) => { e.value = ''; });
  await page.type('#search', 'contactservice.get');
  await page.click('button[data-name="ContactService.get"]');
  for (const encoding of ['amf3', 'amf0', 'flex']) {
    await page.click(`input[name=encoding][value=${encoding}]`);
    await call('["seven"]');
    const fault = await text('#outcome .status');
    check(`a wrong argument type shows the fault that names it (${encoding})`,
          fault.includes('argument 1') && fault.startsWith('Fault Server.ResourceUnavailable'), fault);
  }
  await page.$eval('#args', (e) => { e.value = '[1, '; e.dispatchEvent(new Event('input')); });
  check('arguments that are not JSON are caught in the page',
        (await text('#args-check')).startsWith('Not JSON'), await text('#args-check'));
  await page.screenshot({ path: path.join(shots, 'console-fault.png'), fullPage: true });

  // A capture pasted as hex decodes; the same cut short shows where it stops.
  const hex = fs.readFileSync(capture).toString('hex').replace(/(..)/g, '$1 ');
  await page.$eval('#hex', (e, v) => { e.value = v; }, hex);
  await page.click('#decode-form button');
  await page.waitForSelector('#packet', { timeout: 10_000 });
  const packet = await text('#decoded');
  check('a pasted capture decodes into a tree', packet.includes('flex.messaging.messages.RemotingMessage'),
        packet.slice(0, 300));
  await page.screenshot({ path: path.join(shots, 'console-decode.png'), fullPage: true });
  await page.$eval('#hex', (e, v) => { e.value = v; }, hex.slice(0, 3 * 40));
  await page.click('#decode-form button');
  await page.waitForSelector('#decode-error', { timeout: 10_000 });
  const error = await text('#decode-error');
  check('a truncated capture shows its byte offset', /at byte \d+/.test(error), error);
  check('the offset is marked in the hex', (await page.$$('#decoded pre.hex mark')).length === 1);

  // A phone's width: one column, nothing wider than the screen.
  await page.setViewport({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check('at 390 px nothing is wider than the screen', overflow <= 0, `${overflow} px too wide`);
  await page.screenshot({ path: path.join(shots, 'console-phone.png'), fullPage: true });
  check('no script errors in the page', errors.length === 0, errors.join('\n'));
  status = checks.every(Boolean) ? 0 : 1;
} catch (e) {
  console.error(e.stack || e.message);
} finally {
  if (browser) await browser.close();
  await stopDaemon(daemon);
  if (status === 0) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work} (daemon.log)`);
}
console.log(`${checks.filter(Boolean).length} passed, ${checks.filter((c) => !c).length} failed; ` +
            `screenshots in ${shots}`);
process.exit(status);
