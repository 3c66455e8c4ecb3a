package endpoints

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
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
	// Every built-in group's types, as client-go knows them (the ones sqlkube serves are among
	// them), CRDs' and APIServices' (kube-aggregator's clients send them in protobuf).
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
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
