package server

import (
	"net/http"
	"slices"
	"testing"
)

// A delete's propagationPolicy sets the garbage collector's finalizers, as kube-apiserver's
// store does, even on an object already being deleted; a dry run only shows them.
func TestDeletePropagationFinalizers(t *testing.T) {
	api := sqliteAPI(t)
	held := cmPath + "/held"
	api.do("POST", cmPath, `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`).expect(t, http.StatusCreated)
	finalizers := func(obj map[string]any) []string { return anyStrings(nested(obj, "metadata", "finalizers")) }

	dry := api.do("DELETE", held+"?dryRun=All&propagationPolicy=Foreground", "").expect(t, http.StatusOK).object(t)
	if !slices.Equal(finalizers(dry), []string{"example.com/hold", "foregroundDeletion"}) {
		t.Fatalf("dry-run delete answered %v", dry)
	}
	stored := api.do("GET", held, "").expect(t, http.StatusOK).object(t)
	if !slices.Equal(finalizers(stored), []string{"example.com/hold"}) || str(stored, "metadata", "deletionTimestamp") != "" {
		t.Fatalf("after a dry run: %v", stored)
	}

	first := api.do("DELETE", held, "").expect(t, http.StatusOK).object(t)
	second := api.do("DELETE", held, `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}`).expect(t, http.StatusOK).object(t)
	if !slices.Equal(finalizers(first), []string{"example.com/hold"}) || !slices.Equal(finalizers(second), []string{"example.com/hold", "orphan"}) {
		t.Fatalf("finalizers after deletes without policy then with Orphan: %v, %v", finalizers(first), finalizers(second))
	}
	if str(second, "metadata", "deletionTimestamp") != str(first, "metadata", "deletionTimestamp") {
		t.Fatalf("a repeated delete moved deletionTimestamp: %v, then %v", first, second)
	}
	// Nothing to orphan: the collector removes its finalizer; the other one keeps the object.
	eventually(t, "the orphan finalizer is removed", func() bool {
		return slices.Equal(finalizers(api.do("GET", held, "").expect(t, http.StatusOK).object(t)), []string{"example.com/hold"})
	})
}
