package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// encoder writes a snapshot's header and records, hashing what it writes.
type encoder struct {
	w    *bufio.Writer
	hash hash.Hash
	size int64
	tmp  [binary.MaxVarintLen64]byte
}

func (e *encoder) write(p []byte) error {
	e.hash.Write(p)
	e.size += int64(len(p))
	_, err := e.w.Write(p)
	return err
}

func (e *encoder) uvarint(v uint64) error {
	return e.write(binary.AppendUvarint(e.tmp[:0], v))
}

func (e *encoder) bytes(p []byte) error {
	if err := e.uvarint(uint64(len(p))); err != nil {
		return err
	}
	return e.write(p)
}

func (e *encoder) header(h header) error {
	line, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := e.write([]byte(magic)); err != nil {
		return err
	}
	return e.write(append(line, '\n'))
}

func (e *encoder) object(obj sqlstore.SnapshotObject) error {
	for _, part := range []string{obj.Resource, obj.Namespace, obj.Name} {
		if err := e.bytes([]byte(part)); err != nil {
			return err
		}
	}
	if err := e.uvarint(uint64(obj.Revision)); err != nil {
		return err
	}
	marked := []byte{0}
	if obj.Marked {
		marked[0] = 1
	}
	if err := e.write(marked); err != nil {
		return err
	}
	return e.bytes(obj.Value)
}

// CorruptError: a file is not an intact snapshot.
type CorruptError struct {
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("snapshot: the file is corrupt or not a sqlkube snapshot (at byte %d): %s", e.Offset, e.Reason)
}

// decoder reads a snapshot, hashing every byte before the trailer.
type decoder struct {
	r    *bufio.Reader
	hash hash.Hash
	size int64  // bytes read
	sum  []byte // the trailer, once checked
}

func newDecoder(r io.Reader) *decoder {
	return &decoder{r: bufio.NewReaderSize(r, 1<<20), hash: sha256.New()}
}

func (d *decoder) corrupt(format string, args ...any) error {
	return &CorruptError{Offset: d.size, Reason: fmt.Sprintf(format, args...)}
}

// truncated turns an unexpected end of file into a CorruptError.
func (d *decoder) truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.corrupt("the file ends early")
	}
	return err
}

func (d *decoder) ReadByte() (byte, error) {
	b, err := d.r.ReadByte()
	if err != nil {
		return 0, d.truncated(err)
	}
	d.hash.Write([]byte{b})
	d.size++
	return b, nil
}

func (d *decoder) full(n uint64) ([]byte, error) {
	p := make([]byte, n)
	if _, err := io.ReadFull(d.r, p); err != nil {
		return nil, d.truncated(err)
	}
	d.hash.Write(p)
	d.size += int64(n)
	return p, nil
}

// line reads up to and including '\n', at most limit bytes.
func (d *decoder) line(limit int) ([]byte, error) {
	var line []byte
	for len(line) < limit {
		b, err := d.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == '\n' {
			return line, nil
		}
		line = append(line, b)
	}
	return nil, d.corrupt("no end of line in the first %d bytes", limit)
}

func (d *decoder) header() (header, error) {
	first, err := d.line(len(magic))
	if err != nil || string(first)+"\n" != magic {
		return header{}, d.corrupt("it does not start with %q", magic)
	}
	line, err := d.line(maxHeaderLen)
	if err != nil {
		return header{}, err
	}
	var h header
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return header{}, d.corrupt("its header does not parse: %v", err)
	}
	if h.FormatVersion != FormatVersion {
		return header{}, fmt.Errorf("snapshot: format version %d is not supported (this sqlkube reads version %d)", h.FormatVersion, FormatVersion)
	}
	if h.Revision < 0 || h.Objects < 0 {
		return header{}, d.corrupt("its header has a negative revision or count")
	}
	return h, nil
}

func (d *decoder) bytes(limit uint64, what string) ([]byte, error) {
	n, err := binary.ReadUvarint(d)
	if err != nil {
		return nil, d.truncated(err)
	}
	if n > limit {
		return nil, d.corrupt("%s of %d bytes, more than the %d allowed", what, n, limit)
	}
	return d.full(n)
}

func (d *decoder) object() (sqlstore.SnapshotObject, error) {
	var parts [3]string
	for i, what := range []string{"a resource", "a namespace", "a name"} {
		p, err := d.bytes(maxKeyPart, what)
		if err != nil {
			return sqlstore.SnapshotObject{}, err
		}
		parts[i] = string(p)
	}
	revision, err := binary.ReadUvarint(d)
	if err != nil {
		return sqlstore.SnapshotObject{}, d.truncated(err)
	}
	marked, err := d.ReadByte()
	if err != nil {
		return sqlstore.SnapshotObject{}, err
	}
	if marked > 1 || revision > 1<<62 {
		return sqlstore.SnapshotObject{}, d.corrupt("a record's revision or mark is out of range")
	}
	value, err := d.bytes(maxValue, "a value")
	if err != nil {
		return sqlstore.SnapshotObject{}, err
	}
	return sqlstore.SnapshotObject{
		Object: sqlstore.Object{
			Key:      sqlstore.Key{Resource: parts[0], Namespace: parts[1], Name: parts[2]},
			Revision: int64(revision),
			Value:    value,
		},
		Marked: marked == 1,
	}, nil
}

// trailer checks the hash and that the file ends after it.
func (d *decoder) trailer() error {
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(d.r, sum); err != nil {
		return d.truncated(err)
	}
	if !bytes.Equal(sum, d.hash.Sum(nil)) {
		return d.corrupt("its SHA-256 does not match its content")
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return d.corrupt("data follows the SHA-256 trailer")
	}
	d.size += int64(len(sum))
	d.sum = sum
	return nil
}
