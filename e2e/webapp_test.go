package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sqlkube/sqlkube/server/testserver"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// This file is an example operator, as a controller-runtime project writes one, tested against
// the in-process test server (server/testserver) rather than envtest: a WebApp custom resource
// {image, replicas, port} owns a Deployment and a Service of its name.

// webAppGroupVersion is the WebApp API's group and version.
var webAppGroupVersion = schema.GroupVersion{Group: "example.sqlkube.io", Version: "v1"}

// WebApp is the operator's custom resource.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebAppSpec `json:"spec"`
}

// WebAppSpec is what a WebApp asks for: replicas of image serving HTTP on port.
type WebAppSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
	Port     int32  `json:"port"`
}

// WebAppList is a list of WebApps.
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

// DeepCopyObject copies the WebApp (its spec holds values only).
func (in *WebApp) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject copies the list and its items.
func (in *WebAppList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]WebApp, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*WebApp)
	}
	return &out
}

// webAppScheme knows the built-in types and WebApp.
func webAppScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypes(webAppGroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(s, webAppGroupVersion)
	return s
}

// webAppCRD is the WebApp CustomResourceDefinition, as controller-gen would write it.
func webAppCRD() *apiextensionsv1.CustomResourceDefinition {
	integer := func(min float64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Minimum: &min}
	}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"image", "replicas", "port"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"image": {Type: "string", MinLength: new(int64(1))}, "replicas": integer(0), "port": integer(1)}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapps." + webAppGroupVersion.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: webAppGroupVersion.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "webapps", Singular: "webapp", Kind: "WebApp", ListKind: "WebAppList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: webAppGroupVersion.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Required: []string{"spec"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}}},
		},
	}
}

// webAppReconciler makes a WebApp's Deployment and Service say what the WebApp asks for.
type webAppReconciler struct {
	client client.Client
	scheme *runtime.Scheme
}

func (r *webAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app WebApp
	if err := r.client.Get(ctx, req.NamespacedName, &app); err != nil {
		// Gone: the garbage collector removes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": app.Name}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.client, deployment, func() error {
		deployment.Spec.Replicas = &app.Spec.Replicas
		deployment.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		deployment.Spec.Template.Labels = labels
		deployment.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: app.Spec.Image,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}}}}
		return controllerutil.SetControllerReference(&app, deployment, r.scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.client, service, func() error {
		service.Spec.Selector = labels
		service.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}
		return controllerutil.SetControllerReference(&app, service, r.scheme)
	})
	return ctrl.Result{}, err
}

// startWebAppOperator installs the CRD and runs the operator's manager until the test ends.
func startWebAppOperator(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme) {
	t.Helper()
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, webAppCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the WebApp CRD is established", func() (bool, error) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, webAppCRD().Name, metav1.GetOptions{})
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, err
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	// Each backend's subtest runs its own manager in this process: their controllers share a name.
	skipNameValidation := true
	err = ctrl.NewControllerManagedBy(mgr).For(&WebApp{}).Owns(&appsv1.Deployment{}).Owns(&corev1.Service{}).
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(&webAppReconciler{client: mgr.GetClient(), scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr)
}

// TestWebAppOperator: on each backend, the operator creates a WebApp's Deployment and Service
// owned by it, follows an update of the WebApp, recreates a deleted Deployment (Owns), and once
// the WebApp is deleted sqlkube's garbage collector removes both.
func TestWebAppOperator(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		srv := testserver.Start(t, testserver.WithDatabase(dsn))
		scheme := webAppScheme(t)
		startWebAppOperator(t, srv.Config, scheme)
		c, err := client.New(srv.Config, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		app := &WebApp{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
			Spec: WebAppSpec{Image: "nginx:1.27", Replicas: 2, Port: 8080}}
		if err := c.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)

		waitForDeployment(t, c, key, "nginx:1.27", 2)
		var deployment appsv1.Deployment
		if err := c.Get(ctx, key, &deployment); err != nil {
			t.Fatal(err)
		}
		expectControlledBy(t, &deployment, app)
		var service corev1.Service
		eventually(t, 30*time.Second, "the operator creates the Service", func() (bool, error) {
			err := c.Get(ctx, key, &service)
			return err == nil, err
		})
		expectControlledBy(t, &service, app)
		if p := service.Spec.Ports; len(p) != 1 || p[0].Port != 80 || p[0].TargetPort != intstr.FromString("http") {
			t.Errorf("service ports: %+v", p)
		}

		app.Spec.Image, app.Spec.Replicas = "nginx:1.28", 3
		if err := c.Update(ctx, app); err != nil {
			t.Fatal(err)
		}
		waitForDeployment(t, c, key, "nginx:1.28", 3)

		if err := c.Delete(ctx, &deployment); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the operator recreates the deleted Deployment", func() (bool, error) {
			var again appsv1.Deployment
			err := c.Get(ctx, key, &again)
			return err == nil && again.UID != deployment.UID, err
		})

		if err := c.Delete(ctx, app); err != nil {
			t.Fatal(err)
		}
		owned := map[string]client.Object{"Deployment": &appsv1.Deployment{}, "Service": &corev1.Service{}}
		for kind, obj := range owned {
			eventually(t, 30*time.Second, "the garbage collector deletes the WebApp's "+kind, func() (bool, error) {
				err := c.Get(ctx, key, obj)
				return apierrors.IsNotFound(err), err
			})
		}
	})
}

// waitForDeployment waits for the operator to make the Deployment at key run replicas of image.
func waitForDeployment(t *testing.T, c client.Client, key client.ObjectKey, image string, replicas int32) {
	t.Helper()
	eventually(t, 30*time.Second, "the Deployment runs "+image, func() (bool, error) {
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return false, err
		}
		containers := d.Spec.Template.Spec.Containers
		return len(containers) == 1 && containers[0].Image == image && *d.Spec.Replicas == replicas, nil
	})
}

// expectControlledBy checks that owner is obj's controller, blocking its deletion as
// controller-runtime sets it.
func expectControlledBy(t *testing.T, obj client.Object, owner *WebApp) {
	t.Helper()
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != owner.UID || refs[0].Kind != "WebApp" || refs[0].APIVersion != webAppGroupVersion.String() ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("%T owner references: %+v, want the WebApp %s as controller", obj, refs, owner.UID)
	}
}
