package resource

import (
	"testing"
)

// TestWithoutStrategy: a resource without a strategy (the reviews) has no Go type.
func TestWithoutStrategy(t *testing.T) {
	r := &Resource{Group: "authorization.k8s.io", Version: "v1", Name: "subjectaccessreviews"}
	if r.GoType() != nil || r.Typed() != nil {
		t.Errorf("GoType %v, Typed %v", r.GoType(), r.Typed())
	}
}
