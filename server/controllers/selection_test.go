package controllers

import (
	"strings"
	"testing"
)

// TestSelection: kube-controller-manager's --controllers syntax; nil runs everything; a name
// sqlkube does not run is refused with kube-controller-manager's message.
func TestSelection(t *testing.T) {
	for _, tc := range []struct {
		selection Selection
		runs      map[string]bool
	}{
		{nil, map[string]bool{"namespace-controller": true, "garbage-collector-controller": true}},
		{Selection{"*"}, map[string]bool{"namespace-controller": true, "garbage-collector-controller": true}},
		{Selection{"*", "-garbage-collector-controller"}, map[string]bool{"namespace-controller": true, "garbage-collector-controller": false}},
		{Selection{"namespace-controller"}, map[string]bool{"namespace-controller": true, "garbage-collector-controller": false}},
		{Selection{}, map[string]bool{"namespace-controller": false}},
	} {
		if err := tc.selection.Validate(); err != nil {
			t.Errorf("%q: %v", tc.selection, err)
		}
		for name, want := range tc.runs {
			if got := tc.selection.Runs(name); got != want {
				t.Errorf("%q runs %s: %v, want %v", tc.selection, name, got, want)
			}
		}
	}
	err := Selection{"*", "-deployment-controller"}.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), `"deployment-controller" is not in the list of known controllers (sqlkube runs namespace-controller, `) {
		t.Errorf("an unknown controller: %v", err)
	}
}
