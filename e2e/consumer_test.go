package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestConsumerModule: a module of its own that requires sqlkube (e2e/consumer, as README's
// "Testing Go programs against sqlkube" tells a project to set one up) builds and passes its
// test, and its go.mod carries sqlkube's replace block unchanged, so README's instruction to
// copy that block stays true.
func TestConsumerModule(t *testing.T) {
	want := replaceBlock(t, "../go.mod")
	if got := replaceBlock(t, "consumer/go.mod"); got != want {
		t.Errorf("e2e/consumer/go.mod's replace block differs from sqlkube's:\n%s\nwant:\n%s", got, want)
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = "consumer"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the consumer module's test failed: %v\n%s", err, out)
	}
}

// replaceBlock is the replace ( ... ) block of a go.mod.
func replaceBlock(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(data), "\nreplace (\n")
	if !ok {
		t.Fatalf("%s has no replace block", path)
	}
	block, _, _ = strings.Cut(block, "\n)\n")
	return block
}
