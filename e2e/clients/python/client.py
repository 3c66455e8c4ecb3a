"""The official Python client (kubernetes, Debian's python3-kubernetes) against sqlkube.

Usage: client.py NAMESPACE, with KUBECONFIG naming the server's admin kubeconfig. The namespace
exists. Exits 1 with a message on the first difference from what kube-apiserver answers.
"""
import os
import sys
import threading
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


def watch_events(func, *args, until, deadline=10, **kwargs):
    """Watches with func from kwargs' resource_version, as (type, name) pairs, until the event
    until(event) holds; fails with what it saw if that takes longer than deadline seconds."""
    events, w = [], watch.Watch()
    # The client sends watch=True; timeout_seconds ends the watch on the server, and
    # _request_timeout bounds every read on the client, so neither side can hang.
    for ev in w.stream(func, *args, timeout_seconds=deadline, _request_timeout=deadline + 5, **kwargs):
        events.append((ev["type"], ev["object"].metadata.name))
        if until(ev):
            w.stop()
            return events
    check(False, "the watch ended after %d s before the expected event; got %s" % (deadline, events))


def watch_from_list(core, ns):
    """The exact events of writes made after a list, watched from the list's resourceVersion. A
    last write (the sentinel "end") closes the sequence, so that an extra event before it
    cannot go unnoticed."""
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("d", {"app": "w"}))
    core.patch_namespaced_config_map("d", ns, {"data": {"n": "1"}})
    core.delete_namespaced_config_map("d", ns)
    core.create_namespaced_config_map(ns, configmap("end"))
    events = watch_events(core.list_namespaced_config_map, ns, resource_version=rv,
                          until=lambda ev: ev["object"].metadata.name == "end")
    want = [("ADDED", "d"), ("MODIFIED", "d"), ("DELETED", "d"), ("ADDED", "end")]
    check(events == want, "watch from the list's resourceVersion: %s, want %s" % (events, want))
    core.delete_namespaced_config_map("end", ns)
    return events


def informer(core, ns):
    """What an informer does, as the client has none: list, then watch from the list's
    resourceVersion while another thread writes, keeping a cache by name, and watch again from
    the last resourceVersion seen whenever a watch ends. Each watch lasts at most 2 s and is cut
    after its first change, as a dropped connection would be, so that resuming is exercised."""
    selector = "informed"
    core.create_namespaced_config_map(ns, configmap("before", {selector: "yes"}, {"v": "0"}))
    listed = core.list_namespaced_config_map(ns, label_selector=selector)
    cache = {o.metadata.name: o for o in listed.items}
    seen = ["add " + name for name in sorted(cache)]
    rv = listed.metadata.resource_version
    failed = []

    def writes():
        try:
            core.create_namespaced_config_map(ns, configmap("after", {selector: "yes"}, {"v": "0"}))
            core.patch_namespaced_config_map("after", ns, {"data": {"v": "1"}})
            core.delete_namespaced_config_map("before", ns)
            core.create_namespaced_config_map(ns, configmap("end", {selector: "yes"}))
        except ApiException as e:
            failed.append(e)

    writer = threading.Thread(target=writes)
    writer.start()
    deadline, watches = time.monotonic() + 15, 0
    while "add end" not in seen:
        check(not failed, "a write while the informer watched: %s" % failed)
        check(time.monotonic() < deadline, "the informer did not see the sentinel within 15 s: %s" % seen)
        watches += 1
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, ns, label_selector=selector, resource_version=rv,
                           allow_watch_bookmarks=True, timeout_seconds=2, _request_timeout=10):
            if ev["type"] == "BOOKMARK":
                rv = ev["raw_object"]["metadata"]["resourceVersion"]
                continue
            obj = ev["object"]
            name, rv = obj.metadata.name, obj.metadata.resource_version
            if ev["type"] == "ADDED":
                check(name not in cache, "ADDED %s, already in the cache" % name)
                cache[name] = obj
                seen.append("add " + name)
            elif ev["type"] == "MODIFIED":
                check(name in cache, "MODIFIED %s, not in the cache" % name)
                cache[name] = obj
                seen.append("update %s %s" % (name, obj.data["v"]))
            elif ev["type"] == "DELETED":
                check(cache.pop(name, None) is not None, "DELETED %s, not in the cache" % name)
                seen.append("delete " + name)
            else:
                check(False, "unexpected watch event %s" % ev["type"])
            w.stop()
    writer.join()
    want = ["add before", "add after", "update after 1", "delete before", "add end"]
    check(seen == want, "informer events: %s, want %s (in %d watches)" % (seen, want, watches))
    check(watches >= 4, "4 changes in %d watches cut after their first change" % watches)
    check(sorted(cache) == ["after", "end"], "informer cache: %s" % sorted(cache))
    core.delete_collection_namespaced_config_map(ns, label_selector=selector)
    return "%s in %d watches" % (seen, watches)


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
    # Until Established, with a watch without resourceVersion: it starts with the CRD as it is
    # (a synthetic ADDED), then its changes; the deadline bounds it.
    events = watch_events(ext.list_custom_resource_definition, field_selector="metadata.name=" + crd.metadata.name,
                          until=lambda ev: established(ev["object"]))
    check(events[0] == ("ADDED", crd.metadata.name), "a watch without resourceVersion starts with ADDED: %s" % events)
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
    return "Established after watch events %s" % events


def established(crd):
    return crd.status is not None and any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def delete_collection(core, ns):
    core.delete_collection_namespaced_config_map(ns, label_selector="app=x")
    left = core.list_namespaced_config_map(ns, label_selector="app")
    check(names(left.items) == ["b"], "after deleting app=x: %s" % names(left.items))


def main():
    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    ns = sys.argv[1]
    core = client.CoreV1Api()
    for step, args in ((crud, (core, ns)), (selectors_and_pages, (core, ns)), (watch_from_list, (core, ns)),
                       (informer, (core, ns)), (custom_objects, (ns,)), (delete_collection, (core, ns))):
        detail = step(*args)
        print(step.__name__ + ": ok" + (": %s" % (detail,) if detail else ""))


main()
