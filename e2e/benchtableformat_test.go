package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// benchTable is make bench's table: one column per server measured, the last one
// (kube-apiserver) the reference the ratio columns divide by.
type benchTable struct {
	columns               []benchColumn
	cells                 []benchCell
	loadBefore, loadAfter string
}

// String lays the table out in Markdown, issue 33's figures as rows, followed by the load and
// why any column is missing.
func (tb benchTable) String() string {
	var measured []benchColumn
	var notes []string
	for _, col := range tb.columns {
		if col.missing == "" {
			measured = append(measured, col)
		} else {
			notes = append(notes, fmt.Sprintf("%s: not measured: %s.", col.name, col.missing))
		}
	}
	ref := tb.columns[len(tb.columns)-1]
	header := []string{"figure"}
	for _, col := range measured {
		header = append(header, col.name)
	}
	var compared []benchColumn
	if ref.missing == "" {
		compared = measured[:len(measured)-1]
	}
	for _, col := range compared {
		header = append(header, strings.TrimPrefix(col.name, "sqlkube ")+" / kube")
	}
	var b strings.Builder
	row := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	row(header)
	row(slices.Repeat([]string{"---"}, len(header)))
	for _, figure := range benchFigures {
		cells := []string{figure}
		for _, col := range measured {
			cells = append(cells, tb.cell(col.name, figure).text)
		}
		for _, col := range compared {
			cells = append(cells, ratio(tb.cell(col.name, figure), tb.cell(ref.name, figure)))
		}
		row(cells)
	}
	fmt.Fprintf(&b, "\nLoad average (1, 5, 15 min): %s before, %s after.", tb.loadBefore, tb.loadAfter)
	if len(compared) > 0 {
		b.WriteString(" Ratios are sqlkube's figure divided by kube's (above 1×: sqlkube's is larger).")
	}
	b.WriteString("\n")
	for _, note := range notes {
		b.WriteString(note + "\n")
	}
	return b.String()
}

// cell is the figure's cell in column, or one that says it is missing (a run that failed).
func (tb benchTable) cell(column, figure string) benchCell {
	for _, c := range tb.cells {
		if c.column == column && c.figure == figure {
			return c
		}
	}
	return benchCell{column: column, figure: figure, text: "—"}
}

// ratio divides a's values by b's, one by one: "2.9×", or "0.26× / 0.25×" for two values.
func ratio(a, b benchCell) string {
	if len(a.values) == 0 || len(a.values) != len(b.values) {
		return "—"
	}
	var parts []string
	for i := range a.values {
		if b.values[i] == 0 {
			parts = append(parts, "—")
			continue
		}
		r := a.values[i] / b.values[i]
		switch {
		case r >= 10:
			parts = append(parts, fmt.Sprintf("%.0f×", r))
		case r >= 1:
			parts = append(parts, fmt.Sprintf("%.1f×", r))
		default:
			parts = append(parts, fmt.Sprintf("%.2f×", r))
		}
	}
	return strings.Join(parts, " / ")
}

func TestBenchTableFormat(t *testing.T) {
	columns := []benchColumn{{name: "sqlkube SQLite"}, {name: "sqlkube PostgreSQL"}, {name: "kube-apiserver + etcd"}}
	cells := []benchCell{
		{"sqlkube SQLite", figCreates64, []float64{3350}, "3,350 (44 ms)"},
		{"sqlkube PostgreSQL", figCreates64, []float64{3107}, "3,107 (42 ms)"},
		{"kube-apiserver + etcd", figCreates64, []float64{1059}, "1,059 (132 ms)"},
		{"sqlkube SQLite", figCPU, []float64{428, 156}, "428 µs / 156 µs"},
		{"kube-apiserver + etcd", figCPU, []float64{1640, 593}, "1,640 µs / 593 µs"},
		{"sqlkube SQLite", figList, []float64{101}, "101 ms"},
		{"kube-apiserver + etcd", figList, []float64{10.1}, "10.1 ms"},
		{"sqlkube PostgreSQL", figList, []float64{93}, "93 ms"},
	}
	got := benchTable{columns: columns, cells: cells, loadBefore: "1.00, 2.00, 3.00", loadAfter: "4.00, 5.00, 6.00"}.String()
	want := `| figure | sqlkube SQLite | sqlkube PostgreSQL | kube-apiserver + etcd | SQLite / kube | PostgreSQL / kube |
| --- | --- | --- | --- | --- | --- |
| creates/s, 1 client (p99) | — | — | — | — | — |
| creates/s, 64 clients (p99) | 3,350 (44 ms) | 3,107 (42 ms) | 1,059 (132 ms) | 3.2× | 2.9× |
| updates/s, 64 clients | — | — | — | — | — |
| gets/s, 64 clients | — | — | — | — | — |
| full list of 10,000 | 101 ms | 93 ms | 10.1 ms | 10× | 9.2× |
| watch p99, 1,000 watchers, 10 writes/s | — | — | — | — | — |
| resident memory after 10,000 objects | — | — | — | — | — |
| server CPU per create / per get | 428 µs / 156 µs | — | 1,640 µs / 593 µs | 0.26× / 0.26× | — |
| server CPU per watch event delivered (the watch figure's run) | — | — | — | — | — |
| 10,000 idle watches over TLS: memory growth | — | — | — | — | — |

Load average (1, 5, 15 min): 1.00, 2.00, 3.00 before, 4.00, 5.00, 6.00 after. Ratios are sqlkube's figure divided by kube's (above 1×: sqlkube's is larger).
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	columns[2].missing = "SQLKUBE_KUBE_APISERVER is not set"
	got = benchTable{columns: columns, cells: cells[:2], loadBefore: "1.00, 2.00, 3.00", loadAfter: "4.00, 5.00, 6.00"}.String()
	want = `| figure | sqlkube SQLite | sqlkube PostgreSQL |
| --- | --- | --- |
| creates/s, 1 client (p99) | — | — |
| creates/s, 64 clients (p99) | 3,350 (44 ms) | 3,107 (42 ms) |
| updates/s, 64 clients | — | — |
| gets/s, 64 clients | — | — |
| full list of 10,000 | — | — |
| watch p99, 1,000 watchers, 10 writes/s | — | — |
| resident memory after 10,000 objects | — | — |
| server CPU per create / per get | — | — |
| server CPU per watch event delivered (the watch figure's run) | — | — |
| 10,000 idle watches over TLS: memory growth | — | — |

Load average (1, 5, 15 min): 1.00, 2.00, 3.00 before, 4.00, 5.00, 6.00 after.
kube-apiserver + etcd: not measured: SQLKUBE_KUBE_APISERVER is not set.
`
	if got != want {
		t.Errorf("table without kube-apiserver:\n%s\nwant:\n%s", got, want)
	}
}

func TestBenchNumbers(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 7.4: "7", 999.5: "1,000", 8336.4: "8,336", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
	for ms, want := range map[float64]string{2.74: "2.7 ms", 9.94: "9.9 ms", 44.4: "44 ms", 1356: "1,356 ms"} {
		if got := millis(ms); got != want {
			t.Errorf("millis(%v) = %q, want %q", ms, got, want)
		}
	}
}
