package continuetoken

import (
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// FuzzContinueToken: any token either is rejected or names a key of its own list, and
// re-encodes to a token that decodes the same.
func FuzzContinueToken(f *testing.F) {
	scope := Scope{Resource: "configmaps", Namespace: "default", Namespaced: true}
	f.Add(Encode(scope, Point{Revision: 5, After: sqlstore.Key{Namespace: "default", Name: "a"}}))
	f.Add(Encode(scope, Point{Revision: 5, After: sqlstore.Key{Namespace: "default", Name: "a"}, Remaining: 9}))
	f.Add(Encode(scope, Point{Revision: Latest, After: sqlstore.Key{Namespace: "default", Name: "b"}}))
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJ4In0")
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, token string) {
		at, err := Decode(token, scope)
		if err != nil {
			return
		}
		if at.After.Namespace != scope.Namespace || at.After.Name == "" || at.Revision == 0 || at.Revision < Latest || at.Remaining < 0 {
			t.Fatalf("accepted token %q gave %+v", token, at)
		}
		again, err := Decode(Encode(scope, at), scope)
		if err != nil || again != at {
			t.Fatalf("round trip of %q: %+v %v", token, again, err)
		}
	})
}
