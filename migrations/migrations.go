// Package migrations holds the SQL schema of each dialect, embedded in the binary, and applies it
// with golang-migrate at start-up.
package migrations

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	sqlitemigrate "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Dialect names a folder of migrations.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Up brings db's schema to the newest version this binary knows. Running it on an up-to-date
// database does nothing. A database whose schema is newer than this binary, or left dirty by a
// failed migration, is refused with an error that says what to do.
//
// Up takes ownership of db and closes it: golang-migrate's drivers close the database they were
// given, so callers pass a handle opened for this purpose only.
func Up(db *sql.DB, dialect Dialect) error {
	src, err := iofs.New(files, string(dialect))
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("migrations for %s: %w", dialect, err)
	}
	newest, err := newestVersion(src)
	if err != nil {
		_ = db.Close()
		return err
	}
	driver, err := databaseDriver(db, dialect)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("preparing %s migrations: %w", dialect, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, string(dialect), driver)
	if err != nil {
		_ = driver.Close()
		return fmt.Errorf("preparing %s migrations: %w", dialect, err)
	}
	defer m.Close()
	if err := checkVersion(m, newest); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("applying %s migrations: %w", dialect, err)
	}
	return nil
}

func databaseDriver(db *sql.DB, dialect Dialect) (database.Driver, error) {
	switch dialect {
	case SQLite:
		return sqlitemigrate.WithInstance(db, &sqlitemigrate.Config{})
	case Postgres:
		return pgxmigrate.WithInstance(db, &pgxmigrate.Config{})
	}
	return nil, fmt.Errorf("no migrations for dialect %q", dialect)
}

// checkVersion refuses databases this binary must not touch: golang-migrate would otherwise fail
// with a message that does not say what to do.
func checkVersion(m *migrate.Migrate, newest uint) error {
	version, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading database schema version: %w", err)
	}
	if version > newest {
		return fmt.Errorf("database schema version %d is newer than this sqlkube supports (%d): upgrade sqlkube", version, newest)
	}
	if dirty {
		return fmt.Errorf("database schema is dirty at version %d: a migration failed part-way; repair the schema by hand, then mark the version clean in schema_migrations", version)
	}
	return nil
}

func newestVersion(src source.Driver) (uint, error) {
	version, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("reading embedded migrations: %w", err)
	}
	for {
		next, err := src.Next(version)
		if errors.Is(err, fs.ErrNotExist) {
			return version, nil
		}
		if err != nil {
			return 0, fmt.Errorf("reading embedded migrations: %w", err)
		}
		version = next
	}
}
