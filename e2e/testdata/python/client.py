"""The official Python client (kubernetes, Debian's python3-kubernetes) against sqlkube.

Usage: client.py NAMESPACE, with KUBECONFIG naming the server's admin kubeconfig. The namespace
exists. Exits 1 with a message on the first difference from what kube-apiserver answers.
"""
import os
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP, PLURAL = "py.example.com", "gadgets"


def check(cond, what):
    if not cond:
        print("FAIL: " + what, file=sys.stderr)
        sys.exit(1)


def names(items):
    return sorted(i.metadata.name for i in items)


def configmap(name, labels=None, data=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def crud(core, ns):
    created = core.create_namespaced_config_map(ns, configmap("a", {"app": "x"}, {"k": "v"}))
    got = core.read_namespaced_config_map("a", ns)
    check(got.data == {"k": "v"} and got.metadata.uid == created.metadata.uid, "get after create: %s" % got)
    got.data["k"] = "w"
    updated = core.replace_namespaced_config_map("a", ns, got)
    check(updated.data == {"k": "w"}, "update: %s" % updated.data)
    got.data["k"] = "stale"  # got still carries the resourceVersion before the update
    try:
        core.replace_namespaced_config_map("a", ns, got)
        check(False, "an update with a stale resourceVersion succeeded")
    except ApiException as e:
        check(e.status == 409 and "Conflict" in e.body, "stale update: %s %s" % (e.status, e.body))
    patched = core.patch_namespaced_config_map("a", ns, {"data": {"p": "1"}})
    check(patched.data == {"k": "w", "p": "1"}, "strategic merge patch: %s" % patched.data)
    try:
        core.read_namespaced_config_map("missing", ns)
        check(False, "get of a missing object succeeded")
    except ApiException as e:
        check(e.status == 404 and "NotFound" in e.body, "missing object: %s %s" % (e.status, e.body))


def selectors_and_pages(core, ns):
    core.create_namespaced_config_map(ns, configmap("b", {"app": "y"}))
    core.create_namespaced_config_map(ns, configmap("c", {"app": "x"}))
    by_label = core.list_namespaced_config_map(ns, label_selector="app=x")
    check(names(by_label.items) == ["a", "c"], "label selector app=x: %s" % names(by_label.items))
    by_field = core.list_namespaced_config_map(ns, field_selector="metadata.name=b")
    check(names(by_field.items) == ["b"], "field selector metadata.name=b: %s" % names(by_field.items))
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map(ns, label_selector="app", limit=2, _continue=token)
        seen += names(page.items)
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    check(seen == ["a", "b", "c"] and pages == 2, "pages of 2: %s in %d pages" % (seen, pages))


def watch_from_list(core, ns):
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("d", {"app": "w"}))
    core.patch_namespaced_config_map("d", ns, {"data": {"n": "1"}})
    core.delete_namespaced_config_map("d", ns)
    events, w = [], watch.Watch()
    # The client sends watch=True; timeout_seconds is the deadline.
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
        events.append((ev["type"], ev["object"].metadata.name))
        if len(events) == 3:
            w.stop()
    check(events == [("ADDED", "d"), ("MODIFIED", "d"), ("DELETED", "d")], "watch from the list's resourceVersion: %s" % events)


def custom_objects(ns):
    ext = client.ApiextensionsV1Api()
    schema = client.V1JSONSchemaProps(type="object", x_kubernetes_preserve_unknown_fields=True)
    crd = client.V1CustomResourceDefinition(
        metadata=client.V1ObjectMeta(name=PLURAL + "." + GROUP),
        spec=client.V1CustomResourceDefinitionSpec(
            group=GROUP, scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(plural=PLURAL, kind="Gadget"),
            versions=[client.V1CustomResourceDefinitionVersion(
                name="v1", served=True, storage=True,
                schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                subresources=client.V1CustomResourceSubresources(status={}))]))
    ext.create_custom_resource_definition(crd)
    deadline = time.monotonic() + 10
    while not established(ext.read_custom_resource_definition(PLURAL + "." + GROUP)):
        check(time.monotonic() < deadline, "the CRD is not Established after 10 s")
        time.sleep(0.1)  # polling the condition, with the deadline above
    co = client.CustomObjectsApi()
    body = {"apiVersion": GROUP + "/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"size": 1}}
    co.create_namespaced_custom_object(GROUP, "v1", ns, PLURAL, body)
    status = {"status": {"phase": "Ready"}}
    co.patch_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "g1", status)
    got = co.get_namespaced_custom_object_status(GROUP, "v1", ns, PLURAL, "g1")
    check(got["status"] == {"phase": "Ready"} and got["spec"] == {"size": 1}, "custom object status: %s" % got)
    # A main-resource write does not change status, as with kube's status subresource.
    got["status"] = {"phase": "Lost"}
    got["spec"] = {"size": 2}
    replaced = co.replace_namespaced_custom_object(GROUP, "v1", ns, PLURAL, "g1", got)
    check(replaced["status"] == {"phase": "Ready"} and replaced["spec"] == {"size": 2}, "replace ignores status: %s" % replaced)
    listed = co.list_namespaced_custom_object(GROUP, "v1", ns, PLURAL)
    check([i["metadata"]["name"] for i in listed["items"]] == ["g1"], "custom object list: %s" % listed)


def established(crd):
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def delete_collection(core, ns):
    core.delete_collection_namespaced_config_map(ns, label_selector="app=x")
    left = core.list_namespaced_config_map(ns, label_selector="app")
    check(names(left.items) == ["b"], "after deleting app=x: %s" % names(left.items))


def main():
    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    ns = sys.argv[1]
    core = client.CoreV1Api()
    crud(core, ns)
    selectors_and_pages(core, ns)
    watch_from_list(core, ns)
    custom_objects(ns)
    delete_collection(core, ns)
    print("ok")


main()
