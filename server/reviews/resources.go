package reviews

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Resources are the review resources rv answers, as the server serves them: the one list that
// discovery lists and the HTTP layer routes.
func (rv *Reviewer) Resources() []*resource.Resource {
	local := func(ctx context.Context, namespace, _ string, in *authorizationv1.LocalSubjectAccessReview) (*authorizationv1.LocalSubjectAccessReview, error) {
		return rv.LocalSubjectAccessReview(ctx, namespace, in)
	}
	// kube answers a SelfSubjectRulesReview with a new object, which has no managedFields.
	return []*resource.Resource{
		review(authenticationv1.GroupName, "selfsubjectreviews", false, true, outsideNamespaces(rv.SelfSubjectReview)),
		review(authenticationv1.GroupName, "tokenreviews", false, true, outsideNamespaces(rv.TokenReview)),
		review(authorizationv1.GroupName, "localsubjectaccessreviews", true, true, local),
		review(authorizationv1.GroupName, "selfsubjectaccessreviews", false, true, outsideNamespaces(rv.SelfSubjectAccessReview)),
		review(authorizationv1.GroupName, "selfsubjectrulesreviews", false, false, outsideNamespaces(rv.SelfSubjectRulesReview)),
		review(authorizationv1.GroupName, "subjectaccessreviews", false, true, outsideNamespaces(rv.SubjectAccessReview)),
	}
}

// outsideNamespaces is answer, a review posted to no namespace and no object, as Answering
// calls it.
func outsideNamespaces[T any](answer func(ctx context.Context, in *T) (*T, error)) func(ctx context.Context, namespace, name string, in *T) (*T, error) {
	return func(ctx context.Context, _, _ string, in *T) (*T, error) { return answer(ctx, in) }
}

// review is the create-only resource name of group answered by answer.
func review[T any, PT answerable[T]](group, name string, namespaced, recordFields bool, answer func(ctx context.Context, namespace, name string, in PT) (PT, error)) *resource.Resource {
	return resource.CreateOnly(group, "v1", name, namespaced, reflect.TypeFor[T](), Answering(name, "", recordFields, answer))
}

// answerable is a pointer to a kind that is answered rather than stored.
type answerable[T any] interface {
	*T
	runtime.Object
	metav1.Object
}

// Answering is the Creater of a kind T that answers what is posted rather than storing it (a
// review, posted to resourceName; a TokenRequest, to the subresource serviceaccounts/token): it
// decodes the body as T, answer fills it in for the path's namespace and name (that of the
// object a subresource is posted to), and, with recordFields,
// the answer carries the managedFields kube-apiserver's create handler records for what was
// posted (fieldmanagers.Created).
func Answering[T any, PT answerable[T]](resourceName, subresource string, recordFields bool, answer func(ctx context.Context, namespace, name string, in PT) (PT, error)) resource.Creater {
	return answering[T, PT]{answer: answer, recordFields: recordFields, resourceName: resourceName, subresource: subresource}
}

type answering[T any, PT answerable[T]] struct {
	answer                    func(ctx context.Context, namespace, name string, in PT) (PT, error)
	recordFields              bool
	resourceName, subresource string
}

func (a answering[T, PT]) Create(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error) {
	if isYAML {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return nil, decodeError(err)
		}
	}
	in := PT(new(T))
	if err := json.Unmarshal(body, in); err != nil {
		return nil, decodeError(err)
	}
	out, err := a.answer(ctx, namespace, name, in)
	if err != nil || !a.recordFields {
		return out, err
	}
	out.SetManagedFields(fieldmanagers.Created(out.GetObjectKind().GroupVersionKind(), a.resourceName, a.subresource, body, opts.FieldManager))
	return out, nil
}

func decodeError(err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("unable to decode the review: %v", err))
}
