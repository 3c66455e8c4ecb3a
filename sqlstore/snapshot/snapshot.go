// Package snapshot saves a store's objects to a snapshot file and restores them from one, into a
// database of either kind.
//
// A snapshot file is, in order:
//
//	sqlkube-snapshot\n                      the magic line
//	{"formatVersion":1,"revision":R,"objects":N}\n
//	N records, one per object:
//	    uvarint length, resource bytes
//	    uvarint length, namespace bytes
//	    uvarint length, name bytes
//	    uvarint revision
//	    one byte: 1 if the store's Mark picked the object, else 0
//	    uvarint length, value bytes (the object's JSON as stored)
//	32 bytes: the SHA-256 of everything before them
//
// and nothing after. Records come in (resource, namespace, name) byte order, so one database
// state always gives the same file and the same hash.
package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// FormatVersion is the version of the file format this package writes; it reads no other.
const FormatVersion = 1

const magic = "sqlkube-snapshot\n"

// Limits of a record's fields when reading: far above what the server stores, low enough that a
// damaged length cannot make a reader allocate without bound before the hash is checked.
const (
	maxKeyPart   = 4 << 10
	maxValue     = 64 << 20
	maxHeaderLen = 4 << 10
)

// header is the file's second line.
type header struct {
	FormatVersion int   `json:"formatVersion"`
	Revision      int64 `json:"revision"`
	Objects       int64 `json:"objects"`
}

// Status describes a snapshot file, as `sqlkube snapshot status` prints it.
type Status struct {
	// Hash is the file's SHA-256 trailer, in hex: the hash of everything before it.
	Hash          string `json:"hash"`
	Revision      int64  `json:"revision"`
	TotalKey      int64  `json:"totalKey"`
	TotalSize     int64  `json:"totalSize"`
	FormatVersion int    `json:"formatVersion"`
}

// Save writes a snapshot of store to path. It writes path+".part" first and renames it to path
// once it is complete and synced, so that path is never a partial snapshot.
func Save(ctx context.Context, store *sqlstore.Store, path string) (Status, error) {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return Status{}, err
	}
	status, err := writeSnapshot(ctx, store, f)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(part, path)
	}
	if err != nil {
		_ = os.Remove(part)
		return Status{}, err
	}
	return status, syncDir(filepath.Dir(path))
}

func writeSnapshot(ctx context.Context, store *sqlstore.Store, f *os.File) (Status, error) {
	hash := sha256.New()
	buf := bufio.NewWriterSize(f, 1<<20)
	w := &encoder{w: buf, hash: hash}
	var status Status
	err := store.Snapshot(ctx, func(h sqlstore.SnapshotHeader) error {
		status = Status{Revision: h.Revision, TotalKey: h.Objects, FormatVersion: FormatVersion}
		return w.header(header{FormatVersion: FormatVersion, Revision: h.Revision, Objects: h.Objects})
	}, w.object)
	if err != nil {
		return Status{}, err
	}
	sum := hash.Sum(nil)
	if _, err := buf.Write(sum); err != nil {
		return Status{}, err
	}
	if err := buf.Flush(); err != nil {
		return Status{}, err
	}
	status.Hash = hex.EncodeToString(sum)
	status.TotalSize = w.size + int64(len(sum))
	return status, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Verify reads the whole file at path, checking its structure and its hash, and describes it.
func Verify(path string) (Status, error) {
	return readFile(path, func(header, func() (sqlstore.SnapshotObject, error)) error { return nil })
}

// Restore verifies the snapshot at path, then restores it into the empty database d names (see
// sqlstore.Restore): nothing is written unless the whole file is intact.
func Restore(ctx context.Context, d sqlstore.Database, path string) (Status, error) {
	if _, err := Verify(path); err != nil {
		return Status{}, err
	}
	// The file is read a second time to restore it, and checked again: should it change in
	// between, the restore's transaction is rolled back.
	return readFile(path, func(h header, next func() (sqlstore.SnapshotObject, error)) error {
		return sqlstore.Restore(ctx, d, sqlstore.SnapshotHeader{Revision: h.Revision, Objects: h.Objects},
			func(each func(sqlstore.SnapshotObject) error) error {
				for range h.Objects {
					obj, err := next()
					if err != nil {
						return err
					}
					if err := each(obj); err != nil {
						return err
					}
				}
				return nil
			})
	})
}

// readFile reads the snapshot at path: it calls use with the header and a function returning the
// objects one by one, then reads (and checks) the records use left unread, and fails unless the
// hash matches and the file ends after it. The trailer is checked before the last object is
// returned, so that a use that writes each object never commits an unchecked file. An error
// from use is returned as it is.
func readFile(path string, use func(h header, next func() (sqlstore.SnapshotObject, error)) error) (Status, error) {
	f, err := os.Open(path)
	if err != nil {
		return Status{}, err
	}
	defer f.Close()
	d := newDecoder(f)
	h, err := d.header()
	if err != nil {
		return Status{}, err
	}
	r := &records{d: d, total: h.Objects}
	if err := use(h, r.next); err != nil {
		return Status{}, err
	}
	for r.read < r.total {
		if _, err := r.next(); err != nil {
			return Status{}, err
		}
	}
	if err := r.finish(); err != nil {
		return Status{}, err
	}
	return Status{
		Hash: hex.EncodeToString(d.sum), Revision: h.Revision, TotalKey: h.Objects,
		TotalSize: d.size, FormatVersion: h.FormatVersion,
	}, nil
}

// records reads a file's objects and, after the last, its trailer.
type records struct {
	d           *decoder
	read, total int64
	finished    bool
}

func (r *records) next() (sqlstore.SnapshotObject, error) {
	if r.read == r.total {
		return sqlstore.SnapshotObject{}, fmt.Errorf("snapshot: reading past the %d objects of the file", r.total)
	}
	obj, err := r.d.object()
	if err != nil {
		return sqlstore.SnapshotObject{}, err
	}
	r.read++
	if r.read == r.total {
		err = r.finish()
	}
	return obj, err
}

// finish checks the trailer, once.
func (r *records) finish() error {
	if r.finished {
		return nil
	}
	r.finished = true
	return r.d.trailer()
}
