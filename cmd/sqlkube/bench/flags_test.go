package bench

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.server != "http://127.0.0.1:8080" || o.op != opCreate || o.concurrency != 64 ||
		o.resource.String() != "v1/configmaps" || o.namespace != "bench" || o.objectSize != 1024 ||
		o.duration != 10*time.Second || o.count != 0 || o.pageSize != 500 || o.output != "table" {
		t.Errorf("unexpected defaults: %+v", o)
	}
}

func TestKubeconfigLeavesServerUnset(t *testing.T) {
	o, err := parseFlags([]string{"--kubeconfig", "/tmp/kc"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.server != "" {
		t.Errorf("server = %q, want it taken from the kubeconfig", o.server)
	}
}

func TestResourceForms(t *testing.T) {
	for in, want := range map[string]resourceRef{
		"v1/configmaps":                {Version: "v1", Resource: "configmaps"},
		"core/v1/configmaps":           {Version: "v1", Resource: "configmaps"},
		"bench.sqlkube.io/v1/widgets":  {Group: "bench.sqlkube.io", Version: "v1", Resource: "widgets"},
		"/v1/configmaps":               {Version: "v1", Resource: "configmaps"},
		"apps.example.com/v2beta1/foo": {Group: "apps.example.com", Version: "v2beta1", Resource: "foo"},
	} {
		o, err := parseFlags([]string{"--resource", in}, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if o.resource != want {
			t.Errorf("%s parsed as %+v, want %+v", in, o.resource, want)
		}
	}
	for _, bad := range []string{"configmaps", "a/b/c/d", "v1/", "g//r"} {
		if _, err := parseFlags([]string{"--resource", bad}, io.Discard); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestInvalidFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--op", "delete"}, "--op must be one of"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--op", "update", "--objects", "10", "--concurrency", "20"}, "--objects (10) must be at least --concurrency (20)"},
		{[]string{"--op", "watch", "--watchers", "0"}, "--watchers"},
		{[]string{"--op", "watch", "--rate", "0"}, "--rate"},
		{[]string{"--op", "get", "--idle"}, "--idle is for --op watch only"},
		{[]string{"--op", "watch", "--idle", "--count", "5"}, "--idle writes nothing"},
		{[]string{"--output", "yaml"}, "--output"},
		{[]string{"--duration", "0"}, "--duration"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "unknown flag"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestCountReplacesDuration(t *testing.T) {
	o, err := parseFlags([]string{"--count", "100", "--duration", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.count != 100 {
		t.Errorf("count = %d", o.count)
	}
}

func TestHelp(t *testing.T) {
	var usage strings.Builder
	if _, err := parseFlags([]string{"--help"}, &usage); !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
	if !strings.Contains(usage.String(), "--watchers") {
		t.Errorf("usage lacks the flags:\n%s", usage.String())
	}
}
