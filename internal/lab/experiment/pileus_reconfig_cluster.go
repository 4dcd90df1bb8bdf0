package experiment

import (
	"context"
	"time"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/runtime/cluster"
)

// clusterWatchEvery is how often, in real time, the watch of a cluster
// reads the sites' status: a few times an hour of a day compressed into
// minutes, and light beside the run (one /status per site).
const clusterWatchEvery = 500 * time.Millisecond

// watchCluster is watch on a cluster: from a goroutine of its own, it
// reads the table's primaries from the configuration members' status
// (their /status) every clusterWatchEvery, and records each change,
// until stop; stop reads the service's cost once more.
func (p *reconfigPart) watchCluster(ctx context.Context, c *cluster.Cluster) (stop func()) {
	start := time.Now()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(clusterWatchEvery)
		defer tick.Stop()
		for {
			statuses, _, _ := clusterMembers(c.Status(ctx))
			p.see(time.Since(start), primaries(statuses))
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		_, metrics, secs := clusterMembers(c.Status(ctx))
		if len(metrics) > 0 {
			cost := serviceCost(metrics, secs)
			p.cost = func() *ServiceCost { return cost }
		}
	}
}

// clusterMembers are the status and metrics of the configuration
// members the sites' status shows, with their processes' mean uptime
// in seconds; a site that did not answer is left out.
func clusterMembers(st cluster.Status) ([]config.Status, []config.Metrics, float64) {
	var statuses []config.Status
	var metrics []config.Metrics
	var uptime float64
	for _, s := range st.Sites {
		if s.Serve == nil || s.Serve.Config == nil {
			continue
		}
		statuses, metrics = append(statuses, s.Serve.Config.Status), append(metrics, s.Serve.Config.Metrics)
		uptime += s.Serve.UptimeSec
	}
	if len(metrics) == 0 {
		return nil, nil, 0
	}
	return statuses, metrics, uptime / float64(len(metrics))
}
