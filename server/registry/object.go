package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// canonicalizeAndValidate makes a new object's content canonical, its name being final, and
// runs the type's validation of it: on one conversion of obj when the type's rules run on kube's
// internal types (resource.ConvertingCreater).
func canonicalizeAndValidate(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured) error {
	if converting, ok := res.Strategy.(resource.ConvertingCreater); ok {
		return invalid(res, obj, converting.CanonicalizeAndValidate(ctx, obj))
	}
	res.Strategy.Canonicalize(obj)
	return invalid(res, obj, res.Strategy.Validate(ctx, obj))
}

// invalid is the 422 for errs, naming the object by its own kind, as kube-apiserver's
// BeforeCreate and BeforeUpdate do (a custom resource's body may name another kind, which its
// validation refuses).
func invalid(res *resource.Resource, obj *unstructured.Unstructured, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	kind := res.GroupKind()
	if k := obj.GetKind(); k != "" {
		kind.Kind = k
	}
	return apierrors.NewInvalid(kind, obj.GetName(), errs)
}

// specChanged reports whether anything outside metadata and status differs.
func specChanged(obj, old *unstructured.Unstructured) bool {
	return !equality.Semantic.DeepEqual(withoutMetaAndStatus(obj), withoutMetaAndStatus(old))
}

func withoutMetaAndStatus(obj *unstructured.Unstructured) map[string]interface{} {
	rest := make(map[string]interface{}, len(obj.Object))
	for k, v := range obj.Object {
		if k != "metadata" && k != "status" {
			rest[k] = v
		}
	}
	return rest
}

// objectWrite is the write of obj (op at key, applying to revision expected): it stores what
// render gives, and hands its watch event the attributes selections read of obj as stored.
func objectWrite(op sqlstore.Op, key sqlstore.Key, expected int64, res *resource.Resource, obj *unstructured.Unstructured) sqlstore.Write {
	rendered, attrs := render(res, obj)
	return sqlstore.Write{Op: op, Key: key, ExpectedRevision: expected, Render: rendered, Attached: attrs}
}

// render is the Render function of a write: the object as stored (in its type's storage
// version), with its resourceVersion set to the write's revision. Revision 0, a dry-run create,
// has none. The object is converted and encoded here, in the handler, with a placeholder
// resourceVersion that Render replaces: Render runs on the store's single committer, whose time
// caps throughput. A failed conversion is Render's error. attrs are what selections read of the
// object as stored (nil if it cannot be stored), read here too, where the object is at hand, so
// that no watcher of its event decodes it (kube's watch cache keeps its GetAttrs likewise).
func render(res *resource.Resource, obj *unstructured.Unstructured) (rendered func(int64) ([]byte, error), attrs any) {
	obj, err := res.ConvertToStorage(obj)
	if err != nil {
		return func(int64) ([]byte, error) { return nil, err }, nil
	}
	encode := func(rv string) ([]byte, error) {
		kept, served := obj.GetResourceVersion(), obj.GetAPIVersion()
		defer func() { obj.SetResourceVersion(kept); obj.SetAPIVersion(served) }()
		obj.SetResourceVersion(rv)
		res.ToStorage(obj)
		return json.Marshal(obj.Object)
	}
	withPlaceholder, err := encode(revisionPlaceholder)
	if err == nil {
		attrs = selection.AttributesOf(res, obj) // as encoded: converted, pruned
	}
	at := placeholderAt(withPlaceholder)
	return func(rev int64) ([]byte, error) {
		switch {
		case err != nil:
			return nil, err
		case rev <= 0:
			return encode("")
		case at < 0:
			return encode(strconv.FormatInt(rev, 10))
		}
		out := make([]byte, 0, len(withPlaceholder)+20)
		out = append(out, withPlaceholder[:at]...)
		out = strconv.AppendInt(out, rev, 10)
		return append(out, withPlaceholder[at+len(revisionPlaceholder):]...), nil
	}, attrs
}

// revisionPlaceholder stands for the resourceVersion in an object encoded before its revision is
// known: random, so that no object can be made to contain it.
var revisionPlaceholder = func() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "rv-" + hex.EncodeToString(b)
}()

// placeholderAt is where the one revisionPlaceholder in an encoded object starts, or -1 if it
// is not there exactly once (then Render encodes the object again).
func placeholderAt(encoded []byte) int {
	at := bytes.Index(encoded, []byte(revisionPlaceholder))
	if at < 0 || bytes.Contains(encoded[at+1:], []byte(revisionPlaceholder)) {
		return -1
	}
	return at
}
