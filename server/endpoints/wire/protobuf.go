package wire

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// MediaTypeProtobuf is Kubernetes' protobuf encoding. kubectl and client-go's typed clients send
// built-in objects in it and kube's components ask for it; as in kube-apiserver, custom resources
// themselves are JSON and YAML only (their PartialObjectMetadata and Status answers are not).
const MediaTypeProtobuf = "application/vnd.kubernetes.protobuf"

// MediaTypeProtobufWatch is the Content-Type of a watch stream in protobuf.
const MediaTypeProtobufWatch = MediaTypeProtobuf + ";stream=watch"

// ProtobufScheme knows the built-in types we serve, and the option types (DeleteOptions) clients
// send with them; ProtobufDecoder reads their protobuf envelopes.
var (
	ProtobufScheme  = newProtobufScheme()
	ProtobufDecoder = protobuf.NewSerializer(ProtobufScheme, ProtobufScheme)
)

func newProtobufScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	// Every built-in group's types, as client-go knows them (the ones sqlkube serves are among
	// them), CRDs' and APIServices' (kube-aggregator's clients send them in protobuf).
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	// The views kube-apiserver writes in protobuf for any type, custom resources' too.
	utilruntime.Must(metav1.AddMetaToScheme(scheme))
	utilruntime.Must(metav1beta1.AddMetaToScheme(scheme))
	return scheme
}

// ProtobufToJSON transcodes a protobuf body to the JSON the rest of the write path reads, so that
// every format goes through the same decoding, defaulting and validation.
func ProtobufToJSON(body []byte) ([]byte, error) {
	obj, gvk, err := ProtobufDecoder.Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to decode protobuf body: %v", err))
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}
