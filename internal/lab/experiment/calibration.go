package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/runtime/sim"
)

// The simulator's default costs for a storage node: what a cosla server
// spends on each message and on an fsync, measured on the reference
// machine (2 cores, the project's CI machine; Go 1.26, Pebble v2 on the
// machine's disk). A simulated node serves one message at a time, so
// these model a server with one core's worth of CPU.
//
// Service times are the server's CPU per request under load: a one-node
// cluster (`cosla cluster up --topology` with one site of one storage
// node and a 400 µs local round trip), `cosla bench` from 32 and 128
// clients for 15 s, 256-byte values, uniform keys, all reads
// (readproportion=1) or all updates, and the CPU time of each process
// before and after (/proc/PID/stat fields 14 and 15, user and system),
// divided by the operations served. That counts all a real server does
// per request (measured with the gRPC transport DRPC has since
// replaced): gRPC and HTTP/2 framing, system calls, the node's
// mailbox, the replica core, Pebble, the Go runtime and its garbage
// collector. It gave, per Get, 21.0, 22.4 and 24.9 µs (32, 32 and 128
// clients); per Put 28-32 µs of user time and 62-70 µs of system time,
// most of it the fsync's. The benchmarks say where a request's time
// goes:
//
//	go test -run x -bench BenchmarkReplica -benchmem -count 5 ./internal/core/replica
//	go test -run x -bench 'BenchmarkGet$|BenchmarkApplySync$' -benchmem -count 5 ./internal/core/storage/pebbledb
//
// gave (medians) the replica core serving a Get from Pebble 1.8 µs, a
// Put's CPU without its fsync 5.7 µs, applying a pushed version 2.5 µs,
// serving an empty pull 8.6 µs and applying a pull reply of ten entries
// 14.5 µs: a request's CPU is mostly the transport's and the runtime's,
// about 21 µs. So: get 23 µs (the measurements' mean); put 40 µs (its
// user time and a Get's system time; the fsync is charged apart); probe,
// pull and pull reply the transport's 21 µs plus their core's work; push,
// a message with no reply, about half the transport's plus applying it;
// a read repair, a timestamp compared and answered, a probe's; a push
// acknowledgement (CPQ) half the transport's, with nothing to apply. The jitters are our choice, about
// a fifth of the mean. Costs do not grow with a value's size.
//
// The messages of causal tables (Karma) are not measured: each costs what
// the calibrated message it most resembles does. A causal put, taken
// durably into a coordinator's write buffer, costs a put; a causal get,
// get-transaction and a read cost a get; a dependency check, answered
// from a middle man's state without reading storage, a probe; a
// propagate, an invalidate and a read reply (a cache applies it, a
// coordinator passes it on) a push; the acknowledgements, the stable
// notice and a dependency check's reply a push acknowledgement.
var calibratedService = map[string]sim.Latency{
	"get":        {Mean: 23 * time.Microsecond, Jitter: 5 * time.Microsecond},
	"put":        {Mean: 40 * time.Microsecond, Jitter: 8 * time.Microsecond},
	"probe":      {Mean: 21 * time.Microsecond, Jitter: 4 * time.Microsecond},
	"pull":       {Mean: 30 * time.Microsecond, Jitter: 6 * time.Microsecond},
	"pull-reply": {Mean: 35 * time.Microsecond, Jitter: 7 * time.Microsecond},
	"push":       {Mean: 13 * time.Microsecond, Jitter: 3 * time.Microsecond},
	"push-ack":   {Mean: 10 * time.Microsecond, Jitter: 2 * time.Microsecond},
	"repair":     {Mean: 21 * time.Microsecond, Jitter: 4 * time.Microsecond}, // probe

	"causal-put":      {Mean: 40 * time.Microsecond, Jitter: 8 * time.Microsecond}, // put
	"causal-get":      {Mean: 23 * time.Microsecond, Jitter: 5 * time.Microsecond}, // get
	"causal-get-tx":   {Mean: 23 * time.Microsecond, Jitter: 5 * time.Microsecond}, // get
	"read":            {Mean: 23 * time.Microsecond, Jitter: 5 * time.Microsecond}, // get
	"dep-check":       {Mean: 21 * time.Microsecond, Jitter: 4 * time.Microsecond}, // probe
	"propagate":       {Mean: 13 * time.Microsecond, Jitter: 3 * time.Microsecond}, // push
	"invalidate":      {Mean: 13 * time.Microsecond, Jitter: 3 * time.Microsecond}, // push
	"read-reply":      {Mean: 13 * time.Microsecond, Jitter: 3 * time.Microsecond}, // push
	"propagate-ack":   {Mean: 10 * time.Microsecond, Jitter: 2 * time.Microsecond}, // push-ack
	"invalidate-ack":  {Mean: 10 * time.Microsecond, Jitter: 2 * time.Microsecond}, // push-ack
	"stable":          {Mean: 10 * time.Microsecond, Jitter: 2 * time.Microsecond}, // push-ack
	"dep-check-reply": {Mean: 10 * time.Microsecond, Jitter: 2 * time.Microsecond}, // push-ack
}

// calibratedCacheRead is what a site's cache (Karma 4.3) spends on a
// read it serves: the transport's per-request CPU that every calibrated
// request above pays (21 µs), plus the cache's own lookup, an in-memory
// map probed and a reply built, in place of a storage node's Pebble Get.
// The lookup was measured with
//
//	go test -run x -bench BenchmarkCacheHit -benchmem -count 5 ./internal/core/causal
//
// on a 2-core machine like the reference one, shared with other jobs
// (times noisy, 0.27-1.7 µs a run); two invocations gave medians of 0.92
// and 0.38 µs (unbound reads) and 0.63 and 0.51 µs (reads bound to a
// ring), one allocation of 112 B per lookup. We charge 1 µs. The cache's other messages (a fill's
// reply, an invalidation) keep their push price above. The jitter is our
// choice, a fifth of the mean, as above.
var calibratedCacheRead = sim.Latency{Mean: 22 * time.Microsecond, Jitter: 4 * time.Microsecond}

// calibratedFsync is one fsync on the reference machine: 181 µs mean
// with a 62 µs standard deviation over 5,500 single fsyncs (and
// ApplySync minus ApplyNoSync in the benchmarks above, 170 µs), whose
// floor (mean - jitter, 120 µs) is the fastest fsync measured.
var calibratedFsync = sim.Latency{Mean: 180 * time.Microsecond, Jitter: 60 * time.Microsecond}

// The same measurement gave the client's CPU per op (`cosla bench`'s
// process: 19.6-21.1 µs per Get) and the WAN emulator's (the cluster
// supervisor's process: 8.4-11.1 µs): about 30 µs per op that a local
// cluster's clients spend on the machine its nodes share. A scenario
// models that with sim.cores and sim.client (capacity-lan's cluster.sim).

// cacheOptions are a causal table's cache's costs in the simulator: a
// storage node's, with its reads at calibratedCacheRead (scaled by
// ServiceScale like the other calibrated costs, unless Service sets
// "read"), no fsync (a cache keeps nothing durable), served concurrently
// (karma.go's causalNodes says why); none when Free.
func (s SimSpec) cacheOptions() sim.NodeOptions {
	o := s.nodeOptions()
	if s.Free {
		return o
	}
	o.Fsync = sim.Latency{}
	o.Concurrent = true
	if _, set := s.Service["read"]; !set {
		l := calibratedCacheRead
		if f := s.ServiceScale; f > 0 {
			l = sim.Latency{Mean: time.Duration(float64(l.Mean) * f), Jitter: time.Duration(float64(l.Jitter) * f)}
		}
		o.ServiceByKind["read"] = l
	}
	return o
}

// nodeOptions are a storage node's costs in the simulator: the
// calibrated ones, with the scenario's overrides; none when Free.
func (s SimSpec) nodeOptions() sim.NodeOptions {
	if s.Free {
		return sim.NodeOptions{}
	}
	o := sim.NodeOptions{ServiceByKind: maps.Clone(calibratedService), Fsync: calibratedFsync}
	if f := s.ServiceScale; f > 0 && f != 1 {
		o = scaleService(o, f)
	}
	for kind, d := range s.Service {
		o.ServiceByKind[kind] = sim.Latency{Mean: d}
	}
	if s.Fsync != nil {
		o.Fsync = sim.Latency{Mean: *s.Fsync}
	}
	if s.FsyncJitter != nil {
		o.Fsync.Jitter = *s.FsyncJitter
	}
	return o
}

// clientOptions are a client node's costs: Client on each reply to a Get
// or a Put (of a causal table too, and to a causal get-transaction),
// several at once (a client's runtime handles replies on many
// goroutines).
func (s SimSpec) clientOptions() sim.NodeOptions {
	if s.Client == 0 {
		return sim.NodeOptions{}
	}
	l := sim.Latency{Mean: s.Client}
	return sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"get-reply": l, "put-reply": l,
		"causal-get-reply": l, "causal-put-reply": l, "causal-get-tx-reply": l}, Concurrent: true}
}

// describe says what the costs are, for the report.
func (s SimSpec) describe() string {
	if s.Free {
		return "nothing: storage nodes are infinitely fast (sim.free)"
	}
	o := s.nodeOptions()
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(o.ServiceByKind)) {
		parts = append(parts, fmt.Sprintf("%s %s", kind, o.ServiceByKind[kind].Mean))
	}
	out := fmt.Sprintf("service per message %s; fsync %s (jitter %s), shared by the synced writes of a group (calibration.go)",
		strings.Join(parts, ", "), o.Fsync.Mean, o.Fsync.Jitter)
	if f := s.ServiceScale; f > 0 && f != 1 {
		out += fmt.Sprintf("; the calibrated service times multiplied by %g (sim.service_scale)", f)
	}
	if s.Cores > 0 {
		out += fmt.Sprintf("; each site one machine of %d cores shared by its nodes", s.Cores)
	} else {
		out += "; each node a machine of its own"
	}
	if s.Client > 0 {
		out += fmt.Sprintf("; %s of client CPU per Get and Put", s.Client)
	}
	return out
}
