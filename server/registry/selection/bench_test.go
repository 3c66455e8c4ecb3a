package selection

import (
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// benchPod is a scheduled pod as a kubelet's watch sees it, managedFields and status included.
const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c6f5-x2x9k","generateName":"web-7d4b9c6f5-","namespace":"default","uid":"6f1c2a57-8d1e-4c1b-9a57-1d2e3f4a5b6c","resourceVersion":"123456","creationTimestamp":"2026-11-29T10:00:00Z","labels":{"app":"web","pod-template-hash":"7d4b9c6f5"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c6f5","uid":"0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-29T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-29T10:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}},"subresource":"status"}]},"spec":{"containers":[{"name":"web","image":"nginx:1.27","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"node-17","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T10:00:05Z"}],"hostIP":"10.0.0.17","podIP":"10.244.17.5","podIPs":[{"ip":"10.244.17.5"}],"startTime":"2026-11-29T10:00:01Z","containerStatuses":[{"name":"web","state":{"running":{"startedAt":"2026-11-29T10:00:04Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"nginx:1.27","imageID":"","started":true}],"qosClass":"BestEffort"}}`

// BenchmarkEventSelection is what one watch event of a pod costs the watchers that select by
// node, once per event: its object read by decoding the stored bytes (an event read from the
// log), or from the attributes its write read from the object (read: the write's share; then
// the event's), and matched once.
//
//	go test ./server/registry/selection -run '^$' -bench EventSelection -benchmem
func BenchmarkEventSelection(b *testing.B) {
	value := []byte(benchPod)
	sel := mustSelect(&testing.T{}, pods, "", "spec.nodeName=node-17", nil)
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !sel.Matches(Of(pods, sqlstore.Object{Value: value})) {
				b.Fatal("not selected")
			}
		}
	})
	obj := objectOf(&testing.T{}, value)
	b.Run("attributes read by the write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AttributesOf(pods, obj)
		}
	})
	attrs := AttributesOf(pods, obj)
	b.Run("attached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !sel.Matches(Of(pods, sqlstore.Object{Value: value, Attached: attrs})) {
				b.Fatal("not selected")
			}
		}
	})
}
