package endpoints

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestReadBody reads bodies up to the limit, whatever Content-Length says, and refuses longer
// ones with 413.
func TestReadBody(t *testing.T) {
	const limit = 100 << 10 // above the presized buffer
	for _, tc := range []struct {
		name          string
		size          int
		contentLength int64 // -1: none (chunked)
		tooLarge      bool
	}{
		{"small", 10, 10, false},
		{"small, chunked", 10, -1, false},
		{"empty", 0, 0, false},
		{"larger than the presized buffer", 80 << 10, 80 << 10, false},
		{"at the limit, chunked", limit, -1, false},
		{"at the limit", limit, limit, false},
		{"over the limit", limit + 1, limit + 1, true},
		{"over the limit, chunked", limit + 1, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Repeat([]byte("x"), tc.size)
			r := httptest.NewRequest("POST", "/", io.NopCloser(bytes.NewReader(want)))
			r.ContentLength = tc.contentLength
			got, err := readBody(r, limit)
			if tc.tooLarge {
				if !apierrors.IsRequestEntityTooLargeError(err) || !strings.Contains(err.Error(), "limit is 102400") {
					t.Fatalf("error %v, want 413", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(want))
			}
		})
	}
}
