package bench

import (
	"context"
	"fmt"
	"time"
)

// runIdleWatch opens --watchers watches on a collection nothing writes to and holds them for
// --duration once all are open: what a server spends on a watch while it waits (memory, mostly),
// measured by whoever watches the server meanwhile. The report's watch summary says how many the
// server accepted and over how many connections.
func (b *bench) runIdleWatch(ctx context.Context) (report, error) {
	startRV, err := b.collectionRevision(ctx)
	if err != nil {
		return report{}, err
	}
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	start := time.Now()
	watchers, running := b.startWatchers(watchCtx, newWriteTimes(0), startRV)
	connected := connectedCount(watchers)
	if connected == 0 {
		stopWatchers()
		running.Wait()
		return report{}, fmt.Errorf("the server accepted none of the watches: %s", firstWatchError(watchers))
	}
	fmt.Fprintf(b.stderr, "%d of %d watches open in %s over %d connections; holding them for %s\n",
		connected, len(watchers), time.Since(start).Round(time.Millisecond), b.client.dials.Load(), b.opts.duration)
	select {
	case <-time.After(b.opts.duration):
	case <-ctx.Done():
	}
	stopWatchers()
	running.Wait()

	failures := recorders{}
	for _, w := range watchers {
		failures.get(opWatch).merge(w.rec)
	}
	rep := b.newReport(failures, time.Since(start))
	rep.Watch = &watchSummary{Watchers: len(watchers), Connected: connected, Connections: b.client.dials.Load()}
	return rep, nil
}
