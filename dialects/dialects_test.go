package dialects

import "testing"

func TestParse(t *testing.T) {
	for dsn, want := range map[string]Name{
		"sqlite://./sqlkube.db":                SQLite,
		"sqlite:///var/lib/sqlkube.db":         SQLite,
		"postgres://u:p@db:5432/k?sslmode=off": Postgres,
		"postgresql://u@db/k":                  Postgres,
	} {
		if got, err := Parse(dsn); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", dsn, got, err, want)
		}
	}
	for dsn, want := range map[string]string{
		"mysql://u:p@db/k": `unsupported database scheme "mysql": accepted schemes are sqlite://, postgres:// and postgresql://`,
		"./sqlkube.db":     `invalid database DSN "./sqlkube.db": expected sqlite://PATH, postgres://... or postgresql://...`,
		"user:secret@db/k": `invalid database DSN "…@db/k": expected sqlite://PATH, postgres://... or postgresql://...`,
	} {
		if _, err := Parse(dsn); err == nil || err.Error() != want {
			t.Errorf("Parse(%q): %v, want %s", dsn, err, want)
		}
	}
}
