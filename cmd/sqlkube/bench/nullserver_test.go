package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The benchmarks measure the tool against a null server: one that answers every request with a
// canned response of a real server's size, after a fixed latency (none by default). It runs in a
// child process (this test binary, started again with nullServerEnv set to the latency), so that
// the benchmark process's CPU time and allocations are the tool's alone.
const nullServerEnv = "SQLKUBE_BENCH_NULL_SERVER"

func TestMain(m *testing.M) {
	if latency, ok := os.LookupEnv(nullServerEnv); ok {
		d, err := time.ParseDuration(latency)
		if err != nil {
			fmt.Fprintln(os.Stdout, err)
			os.Exit(1)
		}
		os.Exit(serveNull(os.Stdin, os.Stdout, d))
	}
	os.Exit(m.Run())
}

// nullObject is what the null server answers for a ConfigMap: about what sqlkube answers for
// the tool's 1 KiB objects, managedFields included.
var nullObject = []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bench-x-obj-1","namespace":"bench",` +
	`"uid":"0c9a2b8e-5a53-4a5c-9f0e-2c4e0f7d1a11","resourceVersion":"12345","creationTimestamp":"2026-11-22T12:00:00Z",` +
	`"managedFields":[{"manager":"sqlkube-bench","operation":"Update","apiVersion":"v1","time":"2026-11-22T12:00:00Z",` +
	`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{},"f:seq":{}}}}]},` +
	`"data":{"payload":"` + strings.Repeat("x", 1024) + `","seq":"0"}}` + "\n")

// serveNull listens on a loopback port, writes its address as the first line of out, and serves
// until in is closed; then it writes how many connections it accepted and returns.
func serveNull(in io.Reader, out io.Writer, latency time.Duration) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(out, err)
		return 1
	}
	ns := &nullServer{latency: latency, watches: map[chan []byte]struct{}{}}
	srv := &http.Server{Handler: ns, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ns.conns.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintln(out, ln.Addr())
	_, _ = io.Copy(io.Discard, in)
	fmt.Fprintln(out, ns.conns.Load())
	return 0
}

type nullServer struct {
	latency time.Duration // of every request but watches
	conns   atomic.Int64
	mu      sync.Mutex
	watches map[chan []byte]struct{}
}

func (ns *nullServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "1" {
		time.Sleep(ns.latency)
	}
	switch {
	case r.URL.Path == "/api/v1":
		_ = json.NewEncoder(w).Encode(discovery("ConfigMap", "configmaps"))
	case q.Get("watch") == "1":
		ns.watch(w, r)
	case q.Get("limit") != "":
		writeNullList(w, q)
	case r.Method == http.MethodPost:
		ns.broadcast(body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(nullObject)
	default:
		_, _ = w.Write(nullObject)
	}
}

// writeNullList answers a page of limit objects; the continue token alternates, so that a client
// walking the collection reads a first and a second page in turn.
func writeNullList(w http.ResponseWriter, q map[string][]string) {
	limit, _ := strconv.Atoi(q["limit"][0])
	next := "next"
	if len(q["continue"]) > 0 {
		next = ""
	}
	fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"12345","continue":%q},"items":[`, next)
	for i := range limit {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(bytes.TrimSpace(nullObject))
	}
	_, _ = io.WriteString(w, "]}\n")
}

// broadcast sends an ADDED event for a created object to every watch, named as in the request.
func (ns *nullServer) broadcast(created []byte) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.watches) == 0 {
		return
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(created, &obj)
	event := fmt.Appendf(nil, `{"type":"ADDED","object":%s}`+"\n",
		bytes.Replace(bytes.TrimSpace(nullObject), []byte("bench-x-obj-1"), []byte(obj.Metadata.Name), 1))
	for ch := range ns.watches {
		ch <- event
	}
}

func (ns *nullServer) watch(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 1<<12)
	ns.mu.Lock()
	ns.watches[ch] = struct{}{}
	ns.mu.Unlock()
	defer func() {
		ns.mu.Lock()
		delete(ns.watches, ch)
		ns.mu.Unlock()
	}()
	streamEvents(w, r, ch)
}

// nullProcess is a running null server.
type nullProcess struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.Closer
	out   *bufio.Reader
}

func startNullServer(b *testing.B, latency time.Duration) *nullProcess {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nullServerEnv+"="+latency.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &nullProcess{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	addr, err := p.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	p.URL = "http://" + strings.TrimSpace(addr)
	b.Cleanup(func() { p.stop() })
	return p
}

// stop ends the server and returns how many connections it accepted and the CPU time it used.
func (p *nullProcess) stop() (conns int, cpu time.Duration) {
	if p.cmd.ProcessState != nil {
		return 0, 0
	}
	_ = p.stdin.Close()
	line, _ := p.out.ReadString('\n')
	_ = p.cmd.Wait()
	conns, _ = strconv.Atoi(strings.TrimSpace(line))
	return conns, p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
