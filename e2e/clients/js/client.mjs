// The official JavaScript client (@kubernetes/client-node) against sqlkube.
//
// Usage: node client.mjs NAMESPACE, with KUBECONFIG naming the server's admin kubeconfig. The
// namespace exists. Exits 1 with a message on the first difference from what kube-apiserver
// answers.
import * as k8s from '@kubernetes/client-node';

const GROUP = 'js.example.com';
const PLURAL = 'doohickeys';
const ns = process.argv[2];

function check(cond, what) {
  if (!cond) {
    console.error('FAIL: ' + what);
    process.exit(1);
  }
}

const names = (items) => items.map((i) => i.metadata.name).sort();
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const configmap = (name, labels, data) => ({ metadata: { name, labels }, data });

// collector gathers events until done(events) holds; finished resolves then, and the script fails
// with what it gathered if that takes longer than ms. No sleeps: the events drive it.
function collector(what, done, ms = 10000) {
  const events = [];
  let resolve;
  const finished = new Promise((r) => { resolve = r; });
  const timer = setTimeout(() => check(false, `${what}: not within ${ms} ms; got ${JSON.stringify(events)}`), ms);
  return {
    events,
    finished,
    push(e) {
      events.push(e);
      if (done(events)) {
        clearTimeout(timer);
        resolve(events);
      }
    },
    // fail ends the script when the watch ends or errs before done.
    fail(err) {
      check(done(events), `${what}: the watch ended (${err}) before the end; got ${JSON.stringify(events)}`);
    },
  };
}

async function status(promise) {
  try {
    await promise;
    return 0;
  } catch (e) {
    return e.code;
  }
}

async function crud(core) {
  const created = await core.createNamespacedConfigMap({ namespace: ns, body: configmap('a', { app: 'x' }, { k: 'v' }) });
  const got = await core.readNamespacedConfigMap({ name: 'a', namespace: ns });
  check(same(got.data, { k: 'v' }) && got.metadata.uid === created.metadata.uid, 'get after create: ' + JSON.stringify(got));
  const updated = await core.replaceNamespacedConfigMap({ name: 'a', namespace: ns, body: { ...got, data: { k: 'w' } } });
  check(same(updated.data, { k: 'w' }), 'update: ' + JSON.stringify(updated.data));
  const stale = await status(core.replaceNamespacedConfigMap({ name: 'a', namespace: ns, body: { ...got, data: { k: 'stale' } } }));
  check(stale === 409, 'an update with a stale resourceVersion: ' + stale + ', want 409');
  const patched = await core.patchNamespacedConfigMap({ name: 'a', namespace: ns, body: { data: { p: '1' } } }, mergePatch);
  check(same(patched.data, { k: 'w', p: '1' }), 'merge patch: ' + JSON.stringify(patched.data));
  const missing = await status(core.readNamespacedConfigMap({ name: 'missing', namespace: ns }));
  check(missing === 404, 'get of a missing object: ' + missing + ', want 404');
}

async function selectorsAndPages(core) {
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('b', { app: 'y' }) });
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('c', { app: 'x' }) });
  const byLabel = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app=x' });
  check(same(names(byLabel.items), ['a', 'c']), 'label selector app=x: ' + names(byLabel.items));
  const byField = await core.listNamespacedConfigMap({ namespace: ns, fieldSelector: 'metadata.name=b' });
  check(same(names(byField.items), ['b']), 'field selector metadata.name=b: ' + names(byField.items));
  let seen = [];
  let token;
  let pages = 0;
  do {
    const page = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app', limit: 2, _continue: token });
    seen = seen.concat(names(page.items));
    pages++;
    token = page.metadata._continue;
  } while (token);
  check(same(seen, ['a', 'b', 'c']) && pages === 2, 'pages of 2: ' + seen + ' in ' + pages + ' pages');
}

// The exact events of writes made after a list, watched from the list's resourceVersion. A last
// write (the sentinel "end") closes the sequence, so that an extra event before it cannot go
// unnoticed.
async function watchFromList(core, kc) {
  const rv = (await core.listNamespacedConfigMap({ namespace: ns })).metadata.resourceVersion;
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('d', { app: 'w' }) });
  await core.patchNamespacedConfigMap({ name: 'd', namespace: ns, body: { data: { n: '1' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'd', namespace: ns });
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('end') });
  const got = collector('the watch from the list resourceVersion', (evs) => evs.some(([, name]) => name === 'end'));
  // timeoutSeconds ends the watch on the server; the collector's deadline bounds it here.
  const req = await new k8s.Watch(kc).watch(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: rv, timeoutSeconds: 10 },
    (type, obj) => got.push([type, obj.metadata.name]), (err) => got.fail(err));
  const events = await got.finished;
  req.abort();
  const want = [['ADDED', 'd'], ['MODIFIED', 'd'], ['DELETED', 'd'], ['ADDED', 'end']];
  check(same(events, want), 'watch from the list resourceVersion: ' + JSON.stringify(events) + ', want ' + JSON.stringify(want));
  await core.deleteNamespacedConfigMap({ name: 'end', namespace: ns });
  return JSON.stringify(events);
}

// makeInformer lists, then watches from the list's resourceVersion; its handlers must see the
// exact changes, and its cache the end state.
async function informer(core, kc) {
  const path = `/api/v1/namespaces/${ns}/configmaps`;
  const inf = k8s.makeInformer(kc, path, () => core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'informed' }), 'informed');
  const got = collector('the informer sees the sentinel', (evs) => evs.includes('add end'));
  inf.on('add', (o) => got.push('add ' + o.metadata.name));
  inf.on('update', (o) => got.push('update ' + o.metadata.name + ' ' + o.data.v));
  inf.on('delete', (o) => got.push('delete ' + o.metadata.name));
  inf.on('error', (err) => got.fail(err));
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('before', { informed: 'yes' }, { v: '0' }) });
  await inf.start();
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('after', { informed: 'yes' }, { v: '0' }) });
  await core.patchNamespacedConfigMap({ name: 'after', namespace: ns, body: { data: { v: '1' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'before', namespace: ns });
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('end', { informed: 'yes' }) });
  const events = await got.finished;
  await inf.stop();
  const want = ['add before', 'add after', 'update after 1', 'delete before', 'add end'];
  check(same(events, want), 'informer events: ' + JSON.stringify(events) + ', want ' + JSON.stringify(want));
  const cached = inf.list(ns).map((o) => o.metadata.name).sort();
  check(same(cached, ['after', 'end']), 'informer cache: ' + JSON.stringify(cached));
  await core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: 'informed' });
  return JSON.stringify(events);
}

async function customObjects(kc) {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const name = `${PLURAL}.${GROUP}`;
  await ext.createCustomResourceDefinition({ body: {
    metadata: { name },
    spec: { group: GROUP, scope: 'Namespaced', names: { plural: PLURAL, kind: 'Doohickey' },
      versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } } }] },
  } });
  // Until Established, with a watch without resourceVersion: it starts with the CRD as it is (a
  // synthetic ADDED), then its changes; the collector's deadline bounds it.
  const established = (crd) => (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  const est = collector('the CRD is Established', (evs) => evs.some(([, crd]) => established(crd)));
  const req = await new k8s.Watch(kc).watch('/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    { fieldSelector: 'metadata.name=' + name, timeoutSeconds: 10 }, (type, obj) => est.push([type, obj]), (err) => est.fail(err));
  const events = (await est.finished).map(([type, obj]) => [type, obj.metadata.name]);
  req.abort();
  check(same(events[0], ['ADDED', name]), 'a watch without resourceVersion starts with ADDED: ' + JSON.stringify(events));
  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  const at = { group: GROUP, version: 'v1', namespace: ns, plural: PLURAL };
  await co.createNamespacedCustomObject({ ...at, body: { apiVersion: GROUP + '/v1', kind: 'Doohickey', metadata: { name: 'h1' }, spec: { size: 1 } } });
  await co.patchNamespacedCustomObjectStatus({ ...at, name: 'h1', body: { status: { phase: 'Ready' } } }, mergePatch);
  const got = await co.getNamespacedCustomObjectStatus({ ...at, name: 'h1' });
  check(same(got.status, { phase: 'Ready' }) && same(got.spec, { size: 1 }), 'custom object status: ' + JSON.stringify(got));
  const replaced = await co.replaceNamespacedCustomObject({ ...at, name: 'h1', body: { ...got, spec: { size: 2 }, status: { phase: 'Lost' } } });
  check(same(replaced.status, { phase: 'Ready' }) && same(replaced.spec, { size: 2 }), 'replace ignores status: ' + JSON.stringify(replaced));
  return 'Established after watch events ' + JSON.stringify(events);
}

async function deleteCollection(core) {
  await core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: 'app=x' });
  const left = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app' });
  check(same(names(left.items), ['b']), 'after deleting app=x: ' + names(left.items));
}

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
for (const [name, step] of [['crud', () => crud(core)], ['selectorsAndPages', () => selectorsAndPages(core)],
  ['watchFromList', () => watchFromList(core, kc)], ['informer', () => informer(core, kc)],
  ['customObjects', () => customObjects(kc)], ['deleteCollection', () => deleteCollection(core)]]) {
  const detail = await step();
  console.log(name + ': ok' + (detail ? ': ' + detail : ''));
}
