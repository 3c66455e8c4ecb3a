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

// until polls cond until it holds or the deadline passes.
async function until(what, cond, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    check(Date.now() < deadline, what + ' within ' + ms + ' ms');
    await new Promise((r) => setTimeout(r, 50));
  }
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

async function watchFromList(core, kc) {
  const rv = (await core.listNamespacedConfigMap({ namespace: ns })).metadata.resourceVersion;
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('d', { app: 'w' }) });
  await core.patchNamespacedConfigMap({ name: 'd', namespace: ns, body: { data: { n: '1' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'd', namespace: ns });
  const events = [];
  const watch = new k8s.Watch(kc);
  const req = await watch.watch(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: rv, timeoutSeconds: 10 },
    (type, obj) => events.push([type, obj.metadata.name]), () => {});
  await until('three watch events', () => events.length >= 3);
  req.abort();
  check(same(events, [['ADDED', 'd'], ['MODIFIED', 'd'], ['DELETED', 'd']]), 'watch from the list resourceVersion: ' + JSON.stringify(events));
}

async function informer(core, kc) {
  const path = `/api/v1/namespaces/${ns}/configmaps`;
  const inf = k8s.makeInformer(kc, path, () => core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'informed' }), 'informed');
  const seen = [];
  inf.on('add', (o) => seen.push('add ' + o.metadata.name));
  inf.on('update', (o) => seen.push('update ' + o.metadata.name + ' ' + o.data.v));
  inf.on('delete', (o) => seen.push('delete ' + o.metadata.name));
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('before', { informed: 'yes' }, { v: '0' }) });
  await inf.start();
  await core.createNamespacedConfigMap({ namespace: ns, body: configmap('after', { informed: 'yes' }, { v: '0' }) });
  await core.patchNamespacedConfigMap({ name: 'after', namespace: ns, body: { data: { v: '1' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'before', namespace: ns });
  await until('the informer sees four changes', () => seen.length >= 4);
  await inf.stop();
  check(same(seen, ['add before', 'add after', 'update after 1', 'delete before']), 'informer events: ' + JSON.stringify(seen));
  check(same(inf.list(ns).map((o) => o.metadata.name), ['after']), 'informer cache: ' + JSON.stringify(inf.list(ns).map((o) => o.metadata.name)));
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
  await until('the CRD is Established', async () => {
    const crd = await ext.readCustomResourceDefinition({ name });
    return (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  });
  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  const at = { group: GROUP, version: 'v1', namespace: ns, plural: PLURAL };
  await co.createNamespacedCustomObject({ ...at, body: { apiVersion: GROUP + '/v1', kind: 'Doohickey', metadata: { name: 'h1' }, spec: { size: 1 } } });
  await co.patchNamespacedCustomObjectStatus({ ...at, name: 'h1', body: { status: { phase: 'Ready' } } }, mergePatch);
  const got = await co.getNamespacedCustomObjectStatus({ ...at, name: 'h1' });
  check(same(got.status, { phase: 'Ready' }) && same(got.spec, { size: 1 }), 'custom object status: ' + JSON.stringify(got));
  const replaced = await co.replaceNamespacedCustomObject({ ...at, name: 'h1', body: { ...got, spec: { size: 2 }, status: { phase: 'Lost' } } });
  check(same(replaced.status, { phase: 'Ready' }) && same(replaced.spec, { size: 2 }), 'replace ignores status: ' + JSON.stringify(replaced));
}

async function deleteCollection(core) {
  await core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: 'app=x' });
  const left = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app' });
  check(same(names(left.items), ['b']), 'after deleting app=x: ' + names(left.items));
}

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
await crud(core);
await selectorsAndPages(core);
await watchFromList(core, kc);
await informer(core, kc);
await customObjects(kc);
await deleteCollection(core);
console.log('ok');
