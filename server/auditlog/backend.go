package auditlog

import (
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
)

// Backend is kube-apiserver's log backend in its json format: each event is one line, written
// before ProcessEvents returns. Lines of events processed at the same time are written together
// (groupWriter); the writer is only ever called by one goroutine at a time.
type Backend struct {
	out   io.Writer
	codec runtime.Encoder
}

var _ audit.Backend = (*Backend)(nil)

// NewBackend writes the events it is given to out.
func NewBackend(out io.Writer) *Backend {
	return &Backend{out: newGroupWriter(out), codec: audit.Codecs.LegacyCodec(auditv1.SchemeGroupVersion)}
}

// lines holds buffers for events being encoded, so that an event's line costs no allocation. A
// buffer grown past maxPooledLine by a large event (level RequestResponse) is left to the
// collector rather than kept.
var lines = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledLine = 64 << 10

// ProcessEvents writes every event, reporting false if one could not be encoded or written; as
// kube's backend does, it reports the failure to audit.HandlePluginError and goes on.
func (b *Backend) ProcessEvents(events ...*auditinternal.Event) bool {
	buf := lines.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledLine {
			lines.Put(buf)
		}
	}()
	ok := true
	for _, ev := range events {
		line, err := b.encode((*buf)[:0], ev)
		if err == nil {
			_, err = b.out.Write(line)
		}
		if err != nil {
			audit.HandlePluginError(pluginlog.PluginName, err, ev)
			ok = false
		}
		*buf = line
	}
	return ok
}

func (b *Backend) encode(line []byte, ev *auditinternal.Event) ([]byte, error) {
	if line, ok := appendEvent(line, ev); ok {
		return line, nil
	}
	encoded, err := runtime.Encode(b.codec, ev)
	return append(line, encoded...), err
}

// Run does nothing: events are written as they come.
func (b *Backend) Run(<-chan struct{}) error { return nil }

// Shutdown does nothing: nothing is buffered.
func (b *Backend) Shutdown() {}

// String is the plugin's name, as kube's backend names itself.
func (b *Backend) String() string { return pluginlog.PluginName }
