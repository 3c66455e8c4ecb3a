// Package metrics is sqlkube's Prometheus metrics. kube-apiserver's own come from
// k8s.io/apiserver (requests, storage object counts, priority and fairness, audit), registered in
// k8s.io/component-base's legacy registry beside the Go and process collectors; sqlkube's, named
// sqlkube_*, come from what the store observes (Observer) and reports (ReportOn). WithRequests
// records the HTTP layer's requests, Start keeps the stored objects' counts current, and Handler
// serves them all.
package metrics

import (
	"net/http"
	"sync"
	"time"

	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Subsystem-less names: sqlkube_* are sqlkube's own.
const namespace = "sqlkube"

var (
	commitBatchSize = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace: namespace, Name: "commit_batch_size",
		Help:    "Writes committed together in one database transaction.",
		Buckets: compbasemetrics.ExponentialBuckets(1, 2, 10),
	})
	commitDuration = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace: namespace, Name: "commit_duration_seconds",
		Help:    "Time to commit one batch of writes, from its first statement to its durable commit.",
		Buckets: compbasemetrics.ExponentialBuckets(0.0001, 2, 16),
	})
	feedLag = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace: namespace, Name: "watch_feed_lag_seconds",
		Help:    "Time from a write's commit to its event reaching the watchers, for writes this process committed.",
		Buckets: compbasemetrics.ExponentialBuckets(0.00005, 2, 16),
	})
	feedWakeups = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Namespace: namespace, Name: "watch_feed_wakeups_total",
		Help: "Times the change feed read the revision log because of a PostgreSQL NOTIFY (reason notify) or its poll interval (reason poll).",
	}, []string{"reason"})
	feedCatchUp = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
		Namespace: namespace, Name: "watch_feed_catchup_events_total",
		Help: "Events the change feed read from the revision log rather than from this process's commits: other replicas' writes, or events whose previous state had left the window.",
	})
	compactions = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
		Namespace: namespace, Name: "compactions_total", Help: "Compaction runs.",
	})
	compactedRows = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
		Namespace: namespace, Name: "compaction_removed_rows_total", Help: "Revision log rows removed by compaction.",
	})
	compactionDuration = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace: namespace, Name: "compaction_duration_seconds", Help: "Time of one compaction run.",
		Buckets: compbasemetrics.ExponentialBuckets(0.001, 4, 10),
	})
	checkpointDuration = compbasemetrics.NewHistogram(&compbasemetrics.HistogramOpts{
		Namespace: namespace, Name: "checkpoint_duration_seconds", Help: "Time of one background WAL checkpoint (SQLite).",
		Buckets: compbasemetrics.ExponentialBuckets(0.0001, 4, 10),
	})
	// registeredWatchers is kube-apiserver's gauge of the watches open per type.
	registeredWatchers = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Subsystem: endpointsmetrics.APIServerComponent, Name: "registered_watchers",
		Help: "Number of currently registered watchers for a given resources",
	}, []string{"group", "kind"})
)

var registerOnce sync.Once

// Register registers every metric in the legacy registry, once per process: kube-apiserver's
// request and storage metrics and sqlkube's own.
func Register() {
	registerOnce.Do(func() {
		endpointsmetrics.Register()
		etcd3metrics.Register()
		for _, c := range []compbasemetrics.Registerable{commitBatchSize, commitDuration, feedLag, feedWakeups,
			feedCatchUp, compactions, compactedRows, compactionDuration, checkpointDuration, registeredWatchers} {
			legacyregistry.MustRegister(c)
		}
	})
}

// Handler serves every registered metric in Prometheus' text format.
func Handler() http.Handler { return legacyregistry.Handler() }

// Observer turns what the store observes into sqlkube_* metrics (a sqlstore.Observer).
type Observer struct{}

func (Observer) Committed(writes int, took time.Duration) {
	commitBatchSize.Observe(float64(writes))
	commitDuration.Observe(took.Seconds())
}

func (Observer) Published(_ int, lag time.Duration) { feedLag.Observe(lag.Seconds()) }

func (Observer) Woken(reason string) { feedWakeups.WithLabelValues(reason).Inc() }

func (Observer) CaughtUp(events int) { feedCatchUp.Add(float64(events)) }

func (Observer) Compacted(rows int64, took time.Duration) {
	compactions.Inc()
	compactedRows.Add(float64(rows))
	compactionDuration.Observe(took.Seconds())
}

func (Observer) Checkpointed(took time.Duration) { checkpointDuration.Observe(took.Seconds()) }

// WatcherOpened counts a watch of a type until the returned function is called when it ends.
func WatcherOpened(group, kind string) (closed func()) {
	g := registeredWatchers.WithLabelValues(group, kind)
	g.Inc()
	return g.Dec
}
