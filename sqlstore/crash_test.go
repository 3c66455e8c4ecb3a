package sqlstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// crashDSNEnv makes the test binary a writer process that TestKillDuringBatchedLoad kills.
const crashDSNEnv = "SQLKUBE_TEST_CRASH_WRITER_DSN"

func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashDSNEnv); dsn != "" {
		os.Exit(runCrashWriter(dsn))
	}
	os.Exit(m.Run())
}

// runCrashWriter creates objects from 64 goroutines forever, printing "name revision" for each
// acknowledged create, until it is killed.
func runCrashWriter(dsn string) int {
	db := sqlstore.Postgres(dsn) // one of sqltest.Backends' DSNs
	if path, err := sqlite.Path(dsn); err == nil {
		db = sqlstore.SQLite(path)
	}
	s, err := sqlstore.Open(context.Background(), db, sqlstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := cm("crash", fmt.Sprintf("g%02d-%06d", g, i))
				obj, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: body("x")})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%s %d\n", key.Name, obj.Revision)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 1
}

// TestKillDuringBatchedLoad kills -9 a process in the middle of a batched write load: every
// write it acknowledged is present after reopening, and revisions have no gap.
func TestKillDuringBatchedLoad(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDSNEnv+"="+dsn)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[string]int64{}
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			name, rev, _ := strings.Cut(lines.Text(), " ")
			acked[name], _ = strconv.ParseInt(rev, 10, 64)
			if len(acked) == 3000 {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = cmd.Wait()
		if len(acked) < 3000 {
			t.Fatalf("the writer stopped after %d acknowledged writes", len(acked))
		}

		s := openStore(t, dsn)
		objs, res := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "crash"})
		stored := map[string]int64{}
		for _, o := range objs {
			stored[o.Name] = o.Revision
		}
		for name, rev := range acked {
			if stored[name] != rev {
				t.Fatalf("acknowledged %s at revision %d; after the crash: %d", name, rev, stored[name])
			}
		}
		if res.Revision != int64(len(objs)) {
			t.Fatalf("revision %d after the crash with %d objects: revisions have gaps", res.Revision, len(objs))
		}
		t.Logf("%d writes acknowledged before the kill, %d stored", len(acked), len(objs))
	})
}
