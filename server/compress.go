package server

import (
	"compress/gzip"
	"io"
	"net/http"
)

const (
	// gzipThreshold is the response size from which kube-apiserver compresses a response for a
	// client that accepts gzip; smaller ones go out as they are.
	gzipThreshold = 128 << 10
	// gzipLevel is kube-apiserver's: fast, since responses are compressed on every request.
	gzipLevel = gzip.BestSpeed
)

// deferredResponse holds the start of a response until it knows whether the response is large
// enough to compress, as kube-apiserver's deferred response writer does. At most gzipThreshold
// bytes are held; past that everything streams.
type deferredResponse struct {
	w           http.ResponseWriter
	code        int
	contentType string
	gzipOK      bool
	buf         []byte
	// out is where the body goes once the headers are sent: w, or gz on it.
	out io.Writer
	gz  *gzip.Writer
}

func newDeferredResponse(w http.ResponseWriter, r *http.Request, contentType string) *deferredResponse {
	return &deferredResponse{w: w, code: http.StatusOK, contentType: contentType, gzipOK: acceptsGzip(r)}
}

func (d *deferredResponse) Write(p []byte) (int, error) {
	if d.out != nil {
		return d.out.Write(p)
	}
	if len(d.buf)+len(p) < gzipThreshold {
		d.buf = append(d.buf, p...)
		return len(p), nil
	}
	if err := d.send(d.gzipOK); err != nil {
		return 0, err
	}
	return d.out.Write(p)
}

// send writes the headers and what is held, and makes the rest of the body gzip when compress.
func (d *deferredResponse) send(compress bool) error {
	h := d.w.Header()
	h.Set("Content-Type", d.contentType)
	d.out = d.w
	if compress {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		d.gz, _ = gzip.NewWriterLevel(d.w, gzipLevel) // the level is valid
		d.out = d.gz
	}
	d.w.WriteHeader(d.code)
	_, err := d.out.Write(d.buf)
	d.buf = nil
	return err
}

// sent reports whether any of the response has reached the client: until then an error can
// still be answered instead.
func (d *deferredResponse) sent() bool { return d.out != nil }

// Close sends a response still held (small enough to go uncompressed) or ends the gzip stream.
func (d *deferredResponse) Close() error {
	switch {
	case d.out == nil:
		return d.send(false)
	case d.gz != nil:
		return d.gz.Close()
	}
	return nil
}
