package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// StatsSource is what the collector reads at each scrape. *sqlstore.Store implements it.
type StatsSource interface {
	Stats(ctx context.Context) (sqlstore.Stats, error)
}

var _ StatsSource = (*sqlstore.Store)(nil)

// statsTimeout bounds the database read a scrape makes.
const statsTimeout = 5 * time.Second

func desc(name, help string, labels ...string) *compbasemetrics.Desc {
	return compbasemetrics.NewDesc(namespace+"_"+name, help, labels, nil, compbasemetrics.ALPHA, "")
}

var (
	currentRevisionDesc   = desc("current_revision", "The database's newest revision (the resourceVersion of the newest write).")
	compactedRevisionDesc = desc("compacted_revision", "The revision history is compacted to: older resourceVersions answer 410 Gone.")
	publishedRevisionDesc = desc("watch_feed_published_revision", "The newest revision the change feed has published to watchers.")
	windowEventsDesc      = desc("watch_window_events", "Recent events kept in memory for watches to resume from.")
	windowBytesDesc       = desc("watch_window_bytes", "Bytes of the recent events kept in memory.")
	watchersDesc          = desc("watchers", "Watchers of the store, attached or catching up.")
	connectionsDesc       = desc("db_connections", "Database connections by pool (writer, reader) and state (in_use, idle).", "pool", "state")
	waitsDesc             = desc("db_connection_waits_total", "Times a database call waited for a connection, by pool.", "pool")
	waitSecondsDesc       = desc("db_connection_wait_seconds_total", "Time database calls waited for a connection, by pool.", "pool")
	walBytesDesc          = desc("sqlite_wal_bytes", "Length of SQLite's write-ahead log at the last checkpoint.")
)

// collector reports the state of the store ReportOn was given, read when Prometheus scrapes.
type collector struct {
	compbasemetrics.BaseStableCollector
	store atomic.Pointer[StatsSource]
}

var (
	stats             = &collector{}
	registerStatsOnce sync.Once
)

// ReportOn makes the sqlkube_* gauges report store's state. The registry is the process's: when
// several servers run in one process (tests), the last one's store is reported.
func ReportOn(store StatsSource) {
	registerStatsOnce.Do(func() { legacyregistry.CustomMustRegister(stats) })
	stats.store.Store(&store)
}

func (c *collector) DescribeWithStability(ch chan<- *compbasemetrics.Desc) {
	for _, d := range []*compbasemetrics.Desc{currentRevisionDesc, compactedRevisionDesc, publishedRevisionDesc,
		windowEventsDesc, windowBytesDesc, watchersDesc, connectionsDesc, waitsDesc, waitSecondsDesc, walBytesDesc} {
		ch <- d
	}
}

func (c *collector) CollectWithStability(ch chan<- compbasemetrics.Metric) {
	store := c.store.Load()
	if store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := (*store).Stats(ctx)
	if err != nil {
		return // the database does not answer: /readyz says so; the gauges are left out
	}
	gauge := func(d *compbasemetrics.Desc, v float64, labels ...string) {
		ch <- compbasemetrics.NewLazyConstMetric(d, compbasemetrics.GaugeValue, v, labels...)
	}
	counter := func(d *compbasemetrics.Desc, v float64, labels ...string) {
		ch <- compbasemetrics.NewLazyConstMetric(d, compbasemetrics.CounterValue, v, labels...)
	}
	gauge(currentRevisionDesc, float64(st.CurrentRevision))
	gauge(compactedRevisionDesc, float64(st.CompactedRevision))
	gauge(publishedRevisionDesc, float64(st.PublishedRevision))
	gauge(windowEventsDesc, float64(st.WindowEvents))
	gauge(windowBytesDesc, float64(st.WindowBytes))
	gauge(watchersDesc, float64(st.Watchers))
	gauge(walBytesDesc, float64(st.WALBytes))
	for pool, s := range map[string]struct{ inUse, idle, waits, waited float64 }{
		"writer": {float64(st.Writer.InUse), float64(st.Writer.Idle), float64(st.Writer.WaitCount), st.Writer.WaitDuration.Seconds()},
		"reader": {float64(st.Reader.InUse), float64(st.Reader.Idle), float64(st.Reader.WaitCount), st.Reader.WaitDuration.Seconds()},
	} {
		gauge(connectionsDesc, s.inUse, pool, "in_use")
		gauge(connectionsDesc, s.idle, pool, "idle")
		counter(waitsDesc, s.waits, pool)
		counter(waitSecondsDesc, s.waited, pool)
	}
}
