package wire

import (
	"bufio"
	"io"
	"os"
)

// spillAfter is how much a spill holds in memory before it moves to a temporary file (a
// variable for the tests).
var spillAfter = 4 << 20

// spill holds bytes written once and read back once: in memory up to spillAfter, past it in a
// temporary file, so that what waits for the end of a long answer (a protobuf list's items)
// holds at most spillAfter of memory, as a JSON list streamed to its client does.
type spill struct {
	mem  []byte
	file *os.File
	buf  *bufio.Writer // in front of file
}

// Write appends p.
func (s *spill) Write(p []byte) (int, error) {
	if s.file == nil && len(s.mem)+len(p) <= spillAfter {
		s.mem = append(s.mem, p...)
		return len(p), nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "sqlkube-list-")
		if err != nil {
			return 0, err
		}
		// Unlinked at once: the file goes when it is closed, whatever ends the answer.
		_ = os.Remove(f.Name())
		s.file, s.buf = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.buf.Write(s.mem); err != nil {
			return 0, err
		}
		s.mem = nil
	}
	return s.buf.Write(p)
}

// Len is how many bytes were written.
func (s *spill) Len() (int64, error) {
	if s.file == nil {
		return int64(len(s.mem)), nil
	}
	if err := s.buf.Flush(); err != nil {
		return 0, err
	}
	return s.file.Seek(0, io.SeekCurrent)
}

// WriteTo copies what was written to w.
func (s *spill) WriteTo(w io.Writer) (int64, error) {
	if s.file == nil {
		n, err := w.Write(s.mem)
		return int64(n), err
	}
	if err := s.buf.Flush(); err != nil {
		return 0, err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, s.file)
}

// Close releases the file, if any.
func (s *spill) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}
