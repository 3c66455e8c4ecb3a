package server

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// mediaTypeProtobuf is Kubernetes' protobuf encoding. kubectl and client-go's typed clients send
// built-in objects in it; as in kube-apiserver, custom resources are JSON and YAML only.
const mediaTypeProtobuf = "application/vnd.kubernetes.protobuf"

// protobufScheme knows the built-in types we serve, and the option types (DeleteOptions) clients
// send with them; protobufDecoder reads their protobuf envelopes.
var (
	protobufScheme  = newProtobufScheme()
	protobufDecoder = protobuf.NewSerializer(protobufScheme, protobufScheme)
)

func newProtobufScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme, rbacv1.AddToScheme,
		authorizationv1.AddToScheme, authenticationv1.AddToScheme, apiextensionsv1.AddToScheme,
		admissionregistrationv1.AddToScheme, flowcontrolv1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		utilruntime.Must(add(scheme))
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	return scheme
}

// protobufToJSON transcodes a protobuf body to the JSON the rest of the write path reads, so that
// every format goes through the same decoding, defaulting and validation.
func protobufToJSON(body []byte) ([]byte, error) {
	obj, gvk, err := protobufDecoder.Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to decode protobuf body: %v", err))
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}
