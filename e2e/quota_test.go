package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestResourceQuotaAdmission: kube's ResourceQuota admission counts a namespace's creates in its
// quotas' status and refuses those beyond status.hard, with kube's message. With no quota
// controller (as kube-apiserver alone, envtest) a new quota has no status.hard, so it counts
// nothing until one is written.
func TestResourceQuotaAdmission(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		cs := s.clientset()
		ns := "quota"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		quotas := cs.CoreV1().ResourceQuotas(ns)
		hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), "count/configmaps": resource.MustParse("1")}
		if _, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := func(name string) error {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
			_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			return err
		}
		if err := pod("uncounted"); err != nil {
			t.Fatalf("a pod under a quota with no status.hard: %v", err)
		}
		q, err := quotas.Get(ctx, "q", metav1.GetOptions{})
		if err != nil || q.Status.Hard != nil || q.Status.Used != nil {
			t.Fatalf("quota's status with no status.hard: %v %+v", err, q.Status)
		}

		status := `{"status":{"hard":{"pods":"2","count/configmaps":"1"},"used":{"pods":"1","count/configmaps":"0"}}}`
		if _, err := quotas.Patch(ctx, "q", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		if err := pod("counted"); err != nil {
			t.Fatalf("a pod within the quota: %v", err)
		}
		q, err = quotas.Get(ctx, "q", metav1.GetOptions{})
		if used := q.Status.Used[corev1.ResourcePods]; err != nil || used.String() != "2" {
			t.Errorf("quota's pods used after a counted create: %v %s", err, used.String())
		}
		err = pod("over")
		want := `pods "over" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("a pod beyond the quota: %v, want %s", err, want)
		}
		configMap := func(name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}
		if err := configMap("first"); err != nil {
			t.Fatalf("a ConfigMap within the quota: %v", err)
		}
		err = configMap("second")
		want = `configmaps "second" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("a ConfigMap beyond the quota: %v, want %s", err, want)
		}
		// Another namespace is not limited by it.
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "free"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("a ConfigMap in a namespace with no quota: %v", err)
		}
	})
}
