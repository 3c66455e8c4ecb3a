// Package wire is what the HTTP layer puts on the wire beyond JSON encoding: answers compressed
// as kube-apiserver compresses them (gzip past 128 KiB), protobuf bodies transcoded, and list
// items without their type metadata as kube-apiserver lists built-ins.
package wire

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
)

const (
	// gzipThreshold is the response size from which kube-apiserver compresses a response for a
	// client that accepts gzip; smaller ones go out as they are.
	gzipThreshold = 128 << 10
	// gzipLevel is kube-apiserver's: fast, since responses are compressed on every request.
	gzipLevel = gzip.BestSpeed
	// streamBuffer gathers a streamed response's writes (a list's items, a kilobyte or so each)
	// into writes of this size: each write to the response writer passes its filters (a mutex
	// in the timeout filter) and net/http's 2 KiB chunks, and a full list of 10,000 objects spent
	// a third of its CPU there.
	streamBuffer = 32 << 10
)

// DeferredResponse holds the start of a response until it knows whether the response is large
// enough to compress, as kube-apiserver's deferred response writer does. At most gzipThreshold
// bytes are held; past that everything streams.
type DeferredResponse struct {
	w           http.ResponseWriter
	code        int
	contentType string
	gzipOK      bool
	buf         []byte
	// out is where the body goes once the headers are sent: buffered on w, or gz on it.
	out      io.Writer
	buffered *bufio.Writer
	gz       *gzip.Writer
}

// NewDeferredResponse starts an answer with code, of contentType, to r on w.
func NewDeferredResponse(w http.ResponseWriter, r *http.Request, code int, contentType string) *DeferredResponse {
	return &DeferredResponse{w: w, code: code, contentType: contentType, gzipOK: AcceptsGzip(r)}
}

func (d *DeferredResponse) Write(p []byte) (int, error) {
	if d.out != nil {
		return d.out.Write(p)
	}
	if len(d.buf)+len(p) < gzipThreshold {
		d.buf = append(d.buf, p...)
		return len(p), nil
	}
	if err := d.stream(); err != nil {
		return 0, err
	}
	return d.out.Write(p)
}

// stream sends the headers and what is held, and sends the rest of the body gzip-compressed if
// the client accepts it, buffered otherwise.
func (d *DeferredResponse) stream() error {
	if d.gzipOK {
		d.w.Header().Set("Content-Encoding", "gzip")
		d.w.Header().Add("Vary", "Accept-Encoding")
		d.gz, _ = gzip.NewWriterLevel(d.w, gzipLevel) // the level is valid; it buffers itself
		d.out = d.gz
	} else {
		d.buffered = bufio.NewWriterSize(d.w, streamBuffer)
		d.out = d.buffered
	}
	d.writeHeader()
	_, err := d.out.Write(d.buf)
	d.buf = nil
	return err
}

func (d *DeferredResponse) writeHeader() {
	d.w.Header().Set("Content-Type", d.contentType)
	d.w.WriteHeader(d.code)
}

// Sent reports whether any of the response has reached the client: until then an error can
// still be answered instead.
func (d *DeferredResponse) Sent() bool { return d.out != nil }

// Close sends a response held whole (small enough to go uncompressed) as it is, or ends the
// stream.
func (d *DeferredResponse) Close() error {
	switch {
	case d.out == nil:
		d.writeHeader()
		_, err := d.w.Write(d.buf)
		return err
	case d.gz != nil:
		return d.gz.Close()
	}
	return d.buffered.Flush()
}

// AcceptsGzip reads Accept-Encoding as kube-apiserver does: any "gzip" token.
func AcceptsGzip(r *http.Request) bool {
	for token := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}
