package sqlstore

import (
	"context"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestMarkedListUsesItsIndex: SQLite reads a marked list through the partial index, not by
// scanning the resource's rows.
func TestMarkedListUsesItsIndex(t *testing.T) {
	s, err := Open(context.Background(), SQLite(sqltest.SQLitePath(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := newListQuery(ListOptions{Resource: "widgets", Marked: true}, 1, true, s.db)
	rows, err := s.db.Reader.Query(`EXPLAIN QUERY PLAN `+q.selectRows(Key{}), q.args(Key{}, 10)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if !strings.Contains(strings.Join(plan, "\n"), "USING INDEX objects_marked") {
		t.Fatalf("plan of a marked list:\n%s", strings.Join(plan, "\n"))
	}
}
