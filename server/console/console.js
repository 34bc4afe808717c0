// The amfgate console: lists the daemon's services (GET /console/services), calls a method
// with JSON arguments in any of the three encodings (POST /console/call), and decodes pasted
// or dropped packets (POST /console/decode). Plain DOM code, no framework: the page is one
// form and two trees, and it must load from the daemon alone.
'use strict';

const $ = (id) => document.getElementById(id);
let services = [];
let current = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// ---------------------------------------------------------------- login and service list

function showLogin(needed) {
  $('login').hidden = !needed;
  $('logout').hidden = needed;
  if (needed) $('user').focus();
}

async function loadServices() {
  const r = await fetch('/console/services');
  if (r.status === 401) {
    showLogin(true);
    $('methods').replaceChildren(el('li', { class: 'hint' }, 'Log in to see the services.'));
    return;
  }
  services = await r.json();
  $('login').hidden = true;
  renderList();
}

function placeholder(type) {
  if (/string/.test(type)) return '""';
  if (/int|double|float|long|short/.test(type)) return '0';
  if (/bool/.test(type)) return 'false';
  if (/vector|array|list/.test(type)) return '[]';
  return 'null';
}

function renderList() {
  const q = $('search').value.trim().toLowerCase();
  const list = $('methods');
  list.replaceChildren();
  for (const s of services) {
    const methods = s.methods.filter((m) => !q || `${s.name}.${m.name}`.toLowerCase().includes(q));
    if (methods.length === 0) continue;
    list.append(el('li', { class: 'service' }, s.name));
    for (const m of methods) {
      const button = el('button', { type: 'button', 'data-name': `${s.name}.${m.name}`,
                                    onclick: () => select(s, m) },
                        `${m.name}(${m.parameters.join(', ')})`,
                        el('span', { class: 'types' }, ` → ${m.returns}`));
      if (current && current.service === s.name && current.method.name === m.name) {
        button.setAttribute('aria-current', 'true');
      }
      list.append(el('li', {}, button));
    }
  }
  if (!list.firstChild) list.append(el('li', { class: 'hint' }, 'No method matches.'));
}

function select(service, method) {
  current = { service: service.name, method };
  $('call-title').textContent = `${service.name}.${method.name}`;
  $('signature').textContent =
      `${method.name}(${method.parameters.join(', ')}): ${method.returns}`;
  $('args').value = `[${method.parameters.map(placeholder).join(', ')}]`;
  $('call-form').hidden = false;
  $('outcome').replaceChildren();
  renderList();
  checkArgs();
  $('args').focus();
}

// ---------------------------------------------------------------- arguments and calls

// The arguments as an array, or null with the reason shown under the box.
function checkArgs() {
  const hint = $('args-check');
  let args;
  try {
    args = JSON.parse($('args').value);
  } catch (e) {
    hint.textContent = `Not JSON: ${e.message}`;
    hint.className = 'hint bad';
    return null;
  }
  if (!Array.isArray(args)) {
    hint.textContent = 'The arguments must be a JSON array: [ ... ]';
    hint.className = 'hint bad';
    return null;
  }
  const expected = current ? current.method.parameters.length : args.length;
  hint.textContent = args.length === expected
      ? `${args.length} argument${args.length === 1 ? '' : 's'}`
      : `${args.length} argument(s); the method takes ${expected}`;
  hint.className = args.length === expected ? 'hint good' : 'hint';
  return args;
}

const unwrap = (v) => (v && typeof v === 'object' && '$amf3' in v ? v.$amf3 : v);

// What a body answered: {result} or {fault: {code, message, detail}}.
function outcomeOf(body) {
  const value = unwrap(body.value);
  if (Array.isArray(value) || !value || typeof value !== 'object' || !('$class' in value) ||
      !String(value.$class).startsWith('flex.messaging.messages.')) {
    if (body.target.endsWith('/onStatus')) {
      const s = value || {};
      return { fault: { code: s.code, message: s.description, detail: s.details } };
    }
    return { result: body.value };
  }
  if (value.$class.endsWith('ErrorMessage')) {
    return { fault: { code: value.faultCode, message: value.faultString, detail: value.faultDetail } };
  }
  return { result: value.body };
}

async function call(event) {
  event.preventDefault();
  const args = checkArgs();
  if (!args || !current) return;
  const encoding = document.querySelector('input[name=encoding]:checked').value;
  const out = $('outcome');
  out.replaceChildren(el('p', { class: 'hint' }, 'Calling…'));
  const r = await fetch('/console/call', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ service: current.service, method: current.method.name,
                           arguments: args, encoding }),
  });
  const data = await r.json();
  if (r.status === 401) {
    showLogin(true);
    out.replaceChildren(el('p', { class: 'bad' }, data.faultString));
    return;
  }
  if (r.status !== 200) {
    out.replaceChildren(el('p', { class: 'status bad' }, `${data.faultCode}: ${data.faultString}`));
    return;
  }
  const parts = [];
  if (data.status !== 200) {
    parts.push(el('p', { class: 'status bad' }, `HTTP ${data.status}: ${data.error}`));
  } else {
    const o = outcomeOf(data.response_packet.bodies[0]);
    const time = `${data.millis.toFixed(1)} ms`;
    if (o.fault) {
      parts.push(el('p', { class: 'status bad', id: 'fault' },
                    `Fault ${o.fault.code}: ${o.fault.message} (${time})`));
      if (o.fault.detail) parts.push(el('p', { class: 'hint' }, o.fault.detail));
    } else {
      parts.push(el('p', { class: 'status good' }, `Result (${time})`));
      parts.push(el('ul', { class: 'tree', id: 'result' }, node('', o.result, 3)));
    }
    parts.push(fold('The whole response packet', packetTree(data.response_packet, 2)));
    parts.push(fold(`Response: ${data.response.length / 2} bytes`, hexdump(data.response)));
  }
  parts.push(fold(`Request: ${data.request.length / 2} bytes`, hexdump(data.request)));
  out.replaceChildren(...parts);
}

const fold = (title, content) => el('details', {}, el('summary', {}, title), content);

// ---------------------------------------------------------------- typed JSON as a tree

// One value of the typed JSON (docs/typed-json.md) with its AMF type marked, its
// first `open` levels unfolded.
function node(label, v, open = 0) {
  const name = label === '' ? [] : [el('span', { class: 'key' }, label), ': '];
  const leaf = (text, type, cls = '') =>
      el('li', {}, ...name, el('span', { class: cls }, text), el('span', { class: 'type' }, type));
  const branch = (type, entries) => {
    const list = el('ul', {}, ...entries.map(([k, x]) => node(k, x, open - 1)));
    const d = el('details', {}, el('summary', {}, ...name, el('span', { class: 'type' }, type)), list);
    if (open > 0) d.open = true;
    return el('li', {}, d);
  };
  if (v === null) return leaf('null', 'null');
  if (typeof v === 'boolean') return leaf(String(v), 'boolean', 'num');
  if (typeof v === 'number') return leaf(String(v), 'double', 'num');
  if (typeof v === 'string') return leaf(JSON.stringify(v), 'string', 'str');
  if (Array.isArray(v)) return branch(`array [${v.length}]`, v.map((x, i) => [String(i), x]));
  if ('$int' in v) return leaf(String(v.$int), 'int', 'num');
  if ('$double' in v) return leaf(v.$double, 'double', 'num');
  if ('$date' in v) {
    const d = new Date(v.$date);
    return leaf(isNaN(d) ? String(v.$date) : d.toISOString(), 'date', 'num');
  }
  if ('$undefined' in v) return leaf('undefined', 'undefined');
  if ('$amf3' in v) return node(label, v.$amf3, open);
  if ('$ref' in v) return leaf(`→ #${v.$ref}`, 'reference');
  if ('$bytes' in v) return leaf(v.$bytes.length > 64 ? `${v.$bytes.slice(0, 64)}…` : v.$bytes,
                                 `ByteArray ${v.$bytes.length / 2} bytes`);
  if ('$xml' in v) return leaf(v.$xml, 'XML', 'str');
  if ('$xmldoc' in v) return leaf(v.$xmldoc, 'XMLDocument', 'str');
  if ('$longstring' in v) return leaf(JSON.stringify(v.$longstring), 'long string', 'str');
  if ('$badutf8' in v) return leaf(v.$badutf8, 'bad UTF-8');
  if ('$externalizable' in v) return branch(`externalizable ${v.$class}`, [['external', v.$external]]);
  if ('$vector' in v) return branch(`Vector.<${v.$type || v.$vector}> [${v.$items.length}]`,
                                    v.$items.map((x, i) => [String(i), x]));
  if ('$dictionary' in v) return branch('Dictionary', v.$dictionary.map(([k, x]) => [JSON.stringify(k), x]));
  if ('$ecma' in v) return branch('ECMA array', Object.entries(v.$ecma));
  if ('$assoc' in v) return branch('array', [...v.$dense.map((x, i) => [String(i), x]),
                                             ...Object.entries(v.$assoc)]);
  const members = Object.entries(v).filter(([k]) => !k.startsWith('$') || k.startsWith('$$'))
                                   .map(([k, x]) => [k.startsWith('$$') ? k.slice(1) : k, x]);
  if (v.$dynamic_members) members.push(...v.$dynamic_members);
  if ('$class' in v) return branch(v.$class === '' ? 'object' : `${v.$class}`, members);
  return branch('object', members);
}

// A packet's envelope (version, headers, bodies) around the trees of its values.
function packetTree(p, open, id) {
  const part = (title, value) => {
    const d = el('details', {}, el('summary', {}, title), el('ul', {}, node('', value, open)));
    d.open = true;
    return el('li', {}, d);
  };
  return el('ul', { class: 'tree', id },
            ...p.headers.map((h) => part(`header ${h.name}${h.must_understand ? ' (must understand)' : ''}`, h.value)),
            ...p.bodies.map((b) => part(`body ${b.target} → ${b.response || '""'}`, b.value)));
}

// ---------------------------------------------------------------- hex and decoding

function hexdump(hex, mark = -1) {
  const pre = el('pre', { class: 'hex' });
  for (let at = 0; at < hex.length / 2; at += 16) {
    let text = '';
    pre.append(at.toString(16).padStart(8, '0'), '  ');
    for (let i = at; i < at + 16; i++) {
      if (i >= hex.length / 2) { pre.append('   '); continue; }
      const byte = hex.slice(i * 2, i * 2 + 2);
      const code = parseInt(byte, 16);
      text += code >= 32 && code < 127 ? String.fromCharCode(code) : '.';
      pre.append(i === mark ? el('mark', {}, byte) : byte, ' ');
    }
    pre.append(` ${text}\n`);
  }
  if (mark >= hex.length / 2) pre.append(el('mark', {}, `${mark.toString(16).padStart(8, '0')}  (end)`));
  return pre;
}

async function decode(event) {
  if (event) event.preventDefault();
  const out = $('decoded');
  const hex = $('hex').value.replace(/0x/gi, '').replace(/[\s,:]/g, '');
  if (!/^([0-9a-f]{2})*$/i.test(hex)) {
    out.replaceChildren(el('p', { class: 'status bad' },
                           'Not hex: pairs of 0-9 and a-f, spaces allowed.'));
    return;
  }
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  const r = await fetch('/console/decode', {
    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: bytes,
  });
  const data = await r.json();
  if (r.status === 401) {
    showLogin(true);
    out.replaceChildren(el('p', { class: 'bad' }, data.faultString));
  } else if (r.status === 422) {
    out.replaceChildren(el('p', { class: 'status bad', id: 'decode-error' },
                           `Does not decode: ${data.error} (of ${data.bytes} bytes)`),
                        hexdump(hex.toLowerCase(), data.offset));
  } else {
    const p = data.packet;
    out.replaceChildren(el('p', { class: 'status good' },
                           `${data.bytes} bytes: a version ${p.version} packet, ` +
                           `${p.headers.length} header(s), ${p.bodies.length} body(ies)`),
                        packetTree(p, 4, 'packet'));
  }
}

function readFile(file) {
  file.arrayBuffer().then((buffer) => {
    $('hex').value = [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    decode();
  });
}

// ---------------------------------------------------------------- wiring

document.addEventListener('DOMContentLoaded', () => {
  $('search').addEventListener('input', renderList);
  $('search').addEventListener('keydown', (e) => {
    const first = $('methods').querySelector('button');
    if ((e.key === 'Enter' || e.key === 'ArrowDown') && first) {
      e.preventDefault();
      if (e.key === 'Enter') first.click(); else first.focus();
    }
  });
  $('methods').addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const buttons = [...$('methods').querySelectorAll('button')];
    const i = buttons.indexOf(document.activeElement);
    const next = buttons[i + (e.key === 'ArrowDown' ? 1 : -1)];
    if (next) { e.preventDefault(); next.focus(); }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && !['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)) {
      e.preventDefault();
      $('search').focus();
    }
  });
  $('args').addEventListener('input', checkArgs);
  $('args').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('call-form').requestSubmit();
  });
  $('call-form').addEventListener('submit', call);
  $('decode-form').addEventListener('submit', decode);
  $('file').addEventListener('change', () => { if ($('file').files[0]) readFile($('file').files[0]); });
  const zone = $('decode');
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('dragging'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('dragging');
    if (e.dataTransfer.files[0]) readFile(e.dataTransfer.files[0]);
  });
  $('login').addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await fetch('/console/login', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ user: $('user').value, password: $('password').value }),
    });
    const data = await r.json();
    if (r.status !== 200) {
      $('login-error').textContent = data.faultString;
      return;
    }
    $('login-error').textContent = '';
    $('password').value = '';
    $('logout').hidden = false;
    loadServices();
  });
  $('logout').addEventListener('click', async () => {
    await fetch('/console/logout', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}',
    });
    location.reload();
  });
  loadServices();
});
