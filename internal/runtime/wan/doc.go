// Package wan emulates the wide-area network between the sites of a local
// cosla cluster (DESIGN.md section 2, "server" runtime: `cosla cluster up`).
// It is the "equivalent delay shim" to Toxiproxy the design allows: the same
// three controls (latency, jitter, partition), with no extra process to run.
//
// A Link is a one-directional TCP proxy: it listens on a loopback address and
// forwards every accepted connection to one target address. The link models
// the path from site A to site B, so both directions of a proxied connection
// are delayed by the link's one-way latency and a round trip costs two
// one-way draws. A Net owns the links of a cluster, keyed by (from site, to
// site, target name), and changes all links between two sites at once.
//
// # Delay model
//
// Every burst of chunks read from a socket (a chunk is one Read, at most
// Options.ChunkBytesMax bytes; a burst is chunks read less than burstGap
// apart, each while the one before is still held) is held back for a one-way delay drawn from the same distribution
// the simulator uses (internal/runtime/sim.Latency): Latency + Jitter*(E-1) with E
// exponential with mean 1, clamped at zero. Its mean is Latency, its
// standard deviation Jitter, it never falls below Latency-Jitter and it has
// a long tail above, as real network delays do. TCP never reorders bytes, so
// a chunk is released at max(read time + draw, release time of the previous
// chunk on the same direction of the same connection): a short draw waits
// for the long one ahead of it, as head-of-line blocking does on a real path.
//
// Reading never waits for delivery: a reader goroutine stamps chunks with
// release times and queues them, a writer goroutine writes each one when it
// is due. Throughput is therefore not bounded by latency but by the queue,
// at most QueueChunksMax*ChunkBytesMax bytes per one-way latency per
// direction of a connection (16 MiB per latency with the defaults, 160 MiB/s
// at 100 ms). A full queue stops reading, and TCP flow control pushes back
// on the sender.
//
// Settings changed at run time (SetLatency, Set) apply to live connections
// from the next chunk read on; chunks already queued keep their release
// times. The end of a stream (a FIN) is delayed like data, so a half-close
// arrives after the bytes sent before it.
//
// # Partitions
//
// SetDown(true) cuts the link: every proxied connection is closed on both
// sides with a TCP reset (SO_LINGER 0), and bytes still queued are dropped.
// While the link is down the listener stays open, and a new connection is
// accepted and reset at once, before the target is dialed. The listener is
// not closed because the kernel could hand its port to another socket and
// the link could not come back on the same address. A reset rather than
// silence makes clients notice the partition at once and retry with their
// own backoff; a real partition shows up as timeouts, so code that must be
// tested against slow failure detection belongs in the simulator. After
// SetDown(false) new connections are forwarded again; cut connections stay
// cut.
//
// # Caller's duties
//
//  1. Build Options once; zero fields take the defaults documented on each
//     field, and Validate names the first bad field.
//  2. Point clients at Link.Addr instead of the target's address.
//  3. Call Close on every Link and Net you create. Close stops the
//     listeners, resets every proxied connection and returns only after all
//     of the package's goroutines have exited.
package wan
