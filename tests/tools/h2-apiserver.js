// SPDX-License-Identifier: Apache-2.0
//
// h2-apiserver.js: a loopback API server that offers HTTP/2 the way a real
// kube-apiserver does (TLS with ALPN "h2" first, "http/1.1" second), serving
// one pod, for the test of which HTTP version the agent speaks
// (tests/integration/test-kube-http1.sh). Node.js's built-in http2 module.
//
//   node h2-apiserver.js --pod FILE --token-file FILE --tls-cert FILE
//                        --tls-key FILE --log FILE
//
// Prints "listening on https://127.0.0.1:PORT" once it accepts connections;
// runs until SIGTERM. Appends one JSON line per request to --log (emptied at
// start; a test may empty it again) the moment its headers arrive:
// {"method","path","query","version","alpn","conn"}: version is the
// request's HTTP version ("1.1", "2.0"), alpn the protocol TLS negotiated
// for its connection, conn a number per TCP connection.
//
// The API it serves, for the pod in --pod (metadata.namespace and .name):
//   GET   /api/v1/namespaces/NS/pods/NAME
//   GET   /api/v1/namespaces/NS/pods?labelSelector=...   (every pod: the one)
//   GET   /api/v1/namespaces/NS/pods?watch=1&fieldSelector=metadata.name=NAME
//         &resourceVersion=RV...: MODIFIED events after RV, held open until
//         timeoutSeconds; a watch without that field selector or a numeric
//         RV gets 400 (the real server would serve it)
//   PATCH /api/v1/namespaces/NS/pods/NAME/status  (strategic merge: conditions
//         merge by type; metadata.uid, when given, must match: 409)
//   POST  /api/v1/namespaces/NS/events            (201, stored nowhere)
// Every request needs "Authorization: Bearer T", T the token file's content
// (re-read each time): 401 otherwise. Anything else is 404; errors are
// Kubernetes Status objects.
//
// Not modelled (tests/tools/fake-apiserver models them over HTTP/1.1): other
// pods and resources, label selectors (every list is the one pod), events
// before RV when RV is older (the pod as it is now stands for them),
// bookmarks, 410 Expired, a patch's other fields (only status.conditions is
// applied, merged by type), resourceVersion preconditions, flow control
// (429), and HTTP/2 settings beyond Node's defaults.
'use strict';

const fs = require('fs');
const http2 = require('http2');

function usage(msg) {
  process.stderr.write(`h2-apiserver: ${msg}\n`);
  process.exit(2);
}

const opts = {};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i];
  const v = process.argv[i + 1];
  if (!['--pod', '--token-file', '--tls-cert', '--tls-key', '--log'].includes(k) || v === undefined)
    usage(`bad argument ${k}`);
  opts[k.slice(2)] = v;
}
for (const k of ['pod', 'token-file', 'tls-cert', 'tls-key', 'log'])
  if (!opts[k]) usage(`--${k} is required`);

const pod = JSON.parse(fs.readFileSync(opts.pod, 'utf8'));
const ns = pod.metadata.namespace;
const name = pod.metadata.name;
let rv = Number(pod.metadata.resourceVersion || 1);
pod.metadata.resourceVersion = String(rv);
const podsPath = `/api/v1/namespaces/${ns}/pods`;
const watchers = new Set();
// Appended to, so that a test may empty it while the server runs.
fs.writeFileSync(opts.log, '');
const log = fs.openSync(opts.log, 'a');
let connections = 0;

function status(res, code, reason, message) {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message, reason, code,
  }));
}

function json(res, code, obj) {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

function token() {
  return fs.readFileSync(opts['token-file'], 'utf8').replace(/[\r\n]+$/, '');
}

function mergeConditions(conditions) {
  const have = pod.status.conditions || [];
  for (const c of conditions) {
    const i = have.findIndex((h) => h.type === c.type);
    if (i < 0) have.push(c);
    else have[i] = Object.assign({}, have[i], c);
  }
  pod.status.conditions = have;
  rv += 1;
  pod.metadata.resourceVersion = String(rv);
  for (const w of watchers)
    w.write(JSON.stringify({ type: 'MODIFIED', object: pod }) + '\n');
}

function serve(req, res, body) {
  const url = new URL(req.url, 'https://127.0.0.1');
  const q = url.searchParams;

  if (req.headers.authorization !== `Bearer ${token()}`)
    return status(res, 401, 'Unauthorized', 'Unauthorized');
  if (req.method === 'GET' && url.pathname === `${podsPath}/${name}`)
    return json(res, 200, pod);
  if (req.method === 'GET' && url.pathname === podsPath && q.get('watch') !== '1')
    return json(res, 200, {
      kind: 'PodList', apiVersion: 'v1',
      metadata: { resourceVersion: String(rv) }, items: [pod],
    });
  if (req.method === 'GET' && url.pathname === podsPath) {
    const from = Number(q.get('resourceVersion'));
    if (!Number.isInteger(from) || q.get('fieldSelector') !== `metadata.name=${name}`)
      return status(res, 400, 'BadRequest', 'this fake watches one pod from a resourceVersion');
    res.writeHead(200, { 'content-type': 'application/json' });
    if (from < rv) res.write(JSON.stringify({ type: 'MODIFIED', object: pod }) + '\n');
    watchers.add(res);
    const end = () => { watchers.delete(res); res.end(); };
    const timer = setTimeout(end, 1000 * Number(q.get('timeoutSeconds') || 1800));
    res.on('close', () => { clearTimeout(timer); watchers.delete(res); });
    return undefined;
  }
  if (req.method === 'PATCH' && url.pathname === `${podsPath}/${name}/status`) {
    if (req.headers['content-type'] !== 'application/strategic-merge-patch+json')
      return status(res, 415, 'UnsupportedMediaType', 'unsupported patch type');
    let patch;
    try {
      patch = JSON.parse(body);
    } catch (e) {
      return status(res, 400, 'BadRequest', `the patch is not JSON: ${e.message}`);
    }
    if (patch.metadata && patch.metadata.uid && patch.metadata.uid !== pod.metadata.uid)
      return status(res, 409, 'Conflict', 'Precondition failed: UID in precondition');
    mergeConditions((patch.status && patch.status.conditions) || []);
    return json(res, 200, pod);
  }
  if (req.method === 'POST' && url.pathname === `/api/v1/namespaces/${ns}/events`) {
    try {
      return json(res, 201, JSON.parse(body));
    } catch (e) {
      return status(res, 400, 'BadRequest', `the Event is not JSON: ${e.message}`);
    }
  }
  return status(res, 404, 'NotFound', `the server could not find the requested resource`);
}

const server = http2.createSecureServer({
  key: fs.readFileSync(opts['tls-key']),
  cert: fs.readFileSync(opts['tls-cert']),
  allowHTTP1: true, // ALPN offers h2, then http/1.1, as kube-apiserver does
});
server.on('secureConnection', (sock) => { sock.connNumber = ++connections; });
server.on('request', (req, res) => {
  const sock = req.stream ? req.stream.session.socket : req.socket;
  const url = new URL(req.url, 'https://127.0.0.1');
  fs.writeSync(log, JSON.stringify({
    method: req.method,
    path: url.pathname,
    query: url.search.slice(1),
    version: req.httpVersion,
    alpn: sock.alpnProtocol || null,
    conn: sock.connNumber || null,
  }) + '\n');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => serve(req, res, Buffer.concat(chunks).toString('utf8')));
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on https://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
