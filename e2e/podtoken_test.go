package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// TestPodBoundTokens: a TokenRequest bound to a Pod (or a Node) gives a token whose TokenReview
// names the Pod and its Node in kube's extra, refused bindings get kube's errors, and the token
// stops authenticating once its Pod is deleted, even when a Pod of the same name replaces it.
func TestPodBoundTokens(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "podtok")
		if _, err := admin.CoreV1().ServiceAccounts("podtok").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "podtok-n1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := createRunnerPod(t, admin)

		token := requestToken(t, admin, "podtok", "runner", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: pod.UID}})
		assertReviewExtra(t, admin, token, fmt.Sprintf("authentication.kubernetes.io/node-name:[podtok-n1] authentication.kubernetes.io/node-uid:[%s] authentication.kubernetes.io/pod-name:[p] authentication.kubernetes.io/pod-uid:[%s]", node.UID, pod.UID))
		nodeToken := requestToken(t, admin, "podtok", "runner", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "podtok-n1"}})
		assertReviewExtra(t, admin, nodeToken, fmt.Sprintf("authentication.kubernetes.io/node-name:[podtok-n1] authentication.kubernetes.io/node-uid:[%s]", node.UID))

		bind := func(ref authenticationv1.BoundObjectReference) error {
			_, err := admin.CoreV1().ServiceAccounts("podtok").CreateToken(ctx, "runner", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &ref}}, metav1.CreateOptions{})
			return err
		}
		assertAPIError(t, bind(authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}), apierrors.NewBadRequest("cannot bind token to object of type /v1, Kind=ConfigMap"))
		assertAPIError(t, bind(authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}), apierrors.NewNotFound(corev1.Resource("pods"), "gone"))
		assertAPIError(t, bind(authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "old"}), apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, "p",
			fmt.Errorf("the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated")))

		zero := int64(0)
		if err := admin.CoreV1().Pods("podtok").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "a deleted Pod's token is refused", func() (bool, error) {
			return !reviewed(t, admin, token).Authenticated, nil
		})
		createRunnerPod(t, admin)
		if reviewed(t, admin, token).Authenticated {
			t.Error("a token bound to a deleted Pod authenticates again once a Pod of the same name is created")
		}
		if err := admin.CoreV1().Nodes().Delete(ctx, "podtok-n1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "a deleted Node's token is refused", func() (bool, error) {
			return !reviewed(t, admin, nodeToken).Authenticated, nil
		})
	})
}

// createRunnerPod creates Pod p of ServiceAccount runner on Node podtok-n1.
func createRunnerPod(t *testing.T, admin kubernetes.Interface) *corev1.Pod {
	t.Helper()
	pod, err := admin.CoreV1().Pods("podtok").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		ServiceAccountName: "runner", NodeName: "podtok-n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func reviewed(t *testing.T, admin kubernetes.Interface, token string) authenticationv1.TokenReviewStatus {
	t.Helper()
	review, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status
}

// assertReviewExtra checks that token authenticates as runner with extra want besides its
// credential id.
func assertReviewExtra(t *testing.T, admin kubernetes.Interface, token, want string) {
	t.Helper()
	status := reviewed(t, admin, token)
	extra := map[string][]string{}
	for k, v := range status.User.Extra {
		extra[k] = v
	}
	if id := extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
		t.Errorf("credential id %v", id)
	}
	delete(extra, "authentication.kubernetes.io/credential-id")
	if !status.Authenticated || status.User.Username != "system:serviceaccount:podtok:runner" || fmt.Sprint(extra) != "map["+want+"]" {
		t.Errorf("TokenReview %+v, want extra map[%s]", status, want)
	}
}
