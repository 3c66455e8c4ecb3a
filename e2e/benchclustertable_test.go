package e2e

import (
	"fmt"
	"strings"
	"time"
)

// clusterTable is TestBenchCluster's Markdown table: a column per server, then each sqlkube
// column's ratio to kube-apiserver + etcd's (below 1 is better for sqlkube).
type clusterTable struct {
	run                   densityRun
	columns               []clusterFigures
	missing               string
	loadBefore, loadAfter string
}

func (c *clusterTable) add(f clusterFigures) { c.columns = append(c.columns, f) }

// clusterRow is one figure: its text in a column, and the values its ratio compares.
type clusterRow struct {
	name   string
	text   func(f clusterFigures) string
	values func(f clusterFigures) []float64
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

var clusterRows = []clusterRow{
	{"all nodes Ready", func(f clusterFigures) string { return seconds(f.nodesReady) },
		func(f clusterFigures) []float64 { return []float64{f.nodesReady.Seconds()} }},
	{"all pods Running", func(f clusterFigures) string { return seconds(f.podsRunning) },
		func(f clusterFigures) []float64 { return []float64{f.podsRunning.Seconds()} }},
	{"pod startup p50 / p99", func(f clusterFigures) string {
		return fmt.Sprintf("%.1f / %.1f s", f.startupP50.Seconds(), f.startupP99.Seconds())
	}, func(f clusterFigures) []float64 { return []float64{f.startupP50.Seconds(), f.startupP99.Seconds()} }},
	{"delete all pods", func(f clusterFigures) string { return seconds(f.delete) },
		func(f clusterFigures) []float64 { return []float64{f.delete.Seconds()} }},
	{"API server CPU", func(f clusterFigures) string { return seconds(f.serverCPU) },
		func(f clusterFigures) []float64 { return []float64{f.serverCPU.Seconds()} }},
	{"API server peak RSS", func(f clusterFigures) string { return fmt.Sprintf("%.0f MiB", float64(f.serverPeakRSS)/1024) },
		func(f clusterFigures) []float64 { return []float64{float64(f.serverPeakRSS)} }},
	{"kube-controller-manager / kube-scheduler / kwok CPU", func(f clusterFigures) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f s", f.kcmCPU.Seconds(), f.schedulerCPU.Seconds(), f.kwokCPU.Seconds())
	}, func(f clusterFigures) []float64 {
		return []float64{f.kcmCPU.Seconds(), f.schedulerCPU.Seconds(), f.kwokCPU.Seconds()}
	}},
}

func (c *clusterTable) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %d pods; kube-controller-manager and kube-scheduler at --kube-api-qps=%d --kube-api-burst=%d; load average before %s, after %s.\n\n",
		c.run.nodes, c.run.pods, c.run.opt.qps, c.run.opt.burst, c.loadBefore, c.loadAfter)
	kube := -1
	header := []string{"figure"}
	for i, col := range c.columns {
		header = append(header, col.name)
		if col.name == "kube-apiserver + etcd" {
			kube = i
		}
	}
	if kube >= 0 {
		for i, col := range c.columns {
			if i != kube {
				header = append(header, strings.TrimPrefix(col.name, "sqlkube ")+" / kube")
			}
		}
	}
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, row := range clusterRows {
		cells := []string{row.name}
		for _, col := range c.columns {
			cells = append(cells, row.text(col))
		}
		if kube >= 0 {
			for i, col := range c.columns {
				if i != kube {
					cells = append(cells, ratios(row.values(col), row.values(c.columns[kube])))
				}
			}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	if c.missing != "" {
		fmt.Fprintf(&b, "\nkube-apiserver + etcd: not measured: %s.\n", c.missing)
	}
	return b.String()
}

// ratios are a/b value by value, joined by " / ".
func ratios(a, b []float64) string {
	var parts []string
	for i := range a {
		if b[i] == 0 {
			parts = append(parts, "-")
			continue
		}
		parts = append(parts, fmt.Sprintf("%.2f", a[i]/b[i]))
	}
	return strings.Join(parts, " / ")
}
