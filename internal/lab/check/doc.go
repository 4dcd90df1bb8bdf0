// Package check is the oracle of cosla's randomized simulation tests. From
// nothing but a recorded history of client operations it verifies that
// every Get the store reported as meeting a subSLA really met that
// subSLA's consistency guarantee (Pileus, Terry et al. SOSP'13, 3.2) and
// latency, and that the history itself is sane.
//
// Check is a pure function of the history: no clock, no randomness, no
// goroutines. Each Violation names the op, a stable Rule and a Detail with
// everything needed to find the cause: the op's client, session, key and
// times, what it returned, the bound it had to meet and the op that imposed
// the bound.
//
// # Versions
//
// Versions of a key are ordered by the update timestamps the key's primary
// assigns (Pileus 4.3). Put values are unique, so a Get's value names the
// Put it read. An acknowledged Put's timestamp is in the history; an
// unacknowledged Put is indeterminate, and its timestamp is known only if
// some Get returned its value (the first such Get, by index, fixes it). The
// timestamp of the version a Get returned is that of its Put, and the zero
// timestamp when it found no version.
//
// # Pending writes
//
// A staged write answered before the tablet's primary ordered it
// (dConssandra; DESIGN.md section 4) is a pending Put: acknowledged, so it
// takes effect, but with a timestamp its client learns later, if at all.
// Op.TS is the timestamp it took effect with when that is known (the
// randomized test reads it from the primary's order), zero otherwise. A
// pending Put of known timestamp counts as an acknowledged Put for the
// session rules and causal, and for "history" as the later of two Puts;
// it binds no Get under strong, bounded or "quorum", and no Put in real
// time as the earlier of two, since it took effect at some time after it
// returned that the history does not record (a strong Get sees the writes
// coordinated before it: DESIGN.md section 4). A pending Put of unknown
// timestamp is, for its own session, the newest version of its key until
// the session's next Put to the key: a read-my-writes or causal Get of the
// key in that span must return it, and so must a monotonic one once a Get
// of the session has returned it; a read-my-writes or causal Get that
// returns it after the session's next Put to the key goes back. A Get
// FromSession returns a pending Put of its own session without asking a
// replica; the version it returned is that Put's.
//
// # Lost writes
//
// A Put is Lost when its version was rolled back at a failover
// (DESIGN.md section 10): the primary held it, a new primary that did
// not hold it took over at the next epoch, and the old primary,
// returning, dropped it. An acknowledged Put can be Lost when fewer replicas held
// it than a failover must hear from (a level-ONE write, or any level w
// with w + majority <= N; rule "durable"); an unacknowledged Put whose
// version a Get returned can be Lost too. A Lost Put binds no Get under
// any rule (strong, bounded, read-my-writes, causal, quorum), and a Get
// that returned its version binds no later Get (monotonic, causal,
// quorum through Held): the version no longer exists. A Lost Put binds
// no Put either as the earlier of two in real time or session order,
// and may share its timestamp with a version of its key written after
// the rollback, since the new primary continues from a version before it
// with timestamps of its own clock. Everything else of rule "history"
// applies to it: its value is unique, a Get that returned it returns its
// key and timestamp, and as the later of two Puts it has the larger
// timestamp. Its causal past still flows on through its session and its
// readers (see checkCausal).
//
// A staged write whose receiver forwards it again to the new primary
// takes effect there although a version of it was rolled back
// (Op.RolledBack): a Get that returned that version is judged as one
// that returned a Lost Put's.
//
// # Rules
//
// Rule "history" (the history must be possible at all):
//   - every op has a known Kind and Return >= Call;
//   - Put values are unique; acknowledged Puts that are not pending have
//     timestamps after zero;
//     versions of a key have distinct timestamps;
//   - an acknowledged Put called after another acknowledged Put to the same
//     key returned, or later in the same session, has the larger timestamp;
//   - a Found Get returns a value written to its key by a Put called no
//     later than the Get returned, with that Put's timestamp (or the one
//     other Gets saw, for an unacknowledged Put); a Get FromSession
//     returns a pending Put earlier in its own session;
//   - a session issues one op at a time, all for one client;
//   - session order and reads-from have no cycle;
//   - an OK Get reports a valid subSLA and a rank >= 1.
//
// Rule "eventual": a Found Get returns a value that some Put wrote; reading
// nothing is always acceptable. This holds for every Get, whatever
// guarantee it met. (A value that was written, but to another key, is
// reported as "history".)
//
// Every other guarantee sets a lower bound, the timestamp of the newest
// version the Get had to observe (Pileus 4.4's minimum acceptable read
// timestamp, computed from the history instead of client state), and the
// Get meets it iff the version it returned is at least that new. Only the
// guarantee of the subSLA the Get reports as met is checked, since a
// stronger guarantee does not always imply a weaker one here. The bounds,
// over acknowledged Puts to the Get's key unless stated:
//   - "strong": Puts that returned before the Get was called, and Puts
//     earlier in the Get's session;
//   - "bounded": Puts that returned more than t before the Get was called;
//   - "read-my-writes": Puts earlier in the Get's session;
//   - "monotonic": versions returned by Gets of the key earlier in the
//     Get's session;
//   - "causal": Puts that causally precede the Get (Pileus 3.2), including
//     unacknowledged Puts whose version a Get returned; see checkCausal
//     for how they enter the causal past.
//
// "Earlier in the session" is session order: ops of a session sorted by
// Call. A session runs one op at a time, so every earlier op returned no
// later than the Get was called; an op that returned at the very instant
// the next was called still precedes it.
//
// Rule "latency": an OK Get took at most the latency of the subSLA it
// reports as met (sla.Unbounded accepts any time).
//
// Rule "quorum" (CPQ's partial quorums; DESIGN.md section 4) is about
// levels, not SLAs, so it holds for every OK Get that has a Level,
// whatever subSLA it reports as met: a Get that read r of the N replicas
// of its key's tablet returns a version no older than that of each
// acknowledged Put to the key with write level w, r + w > N, that
// returned before the Get was called or is earlier in the Get's session.
// The w replicas that held the Put's version when it was acknowledged and
// the r the Get asked have one in common, and a replica never replaces a
// version of a key with an older one. A Put that was not acknowledged (its
// write level was not reached in time, or no reply came) is
// indeterminate: its version may or may not be seen, although the
// primary holds it.
//
// That alone is a regular register, not linearizability: two Gets that
// overlap a Put whose version has reached only some replicas may see it,
// then, called after the first returned, not see it (a new-old
// inversion), when they ask different replicas. A Get that writes back
// (read repair; clientcore/quorum.go) returns only once a majority holds
// its version, and says how many did (Op.Held): the rule holds a later
// Get to it as to a Put of write level Held, so that with writes of w,
// r + w > N, and reads of a majority that write back it rules the
// inversion out. Strong Gets are held to rule "strong" besides, whether
// the primary or a quorum (r + w > N for the table's least write level)
// made them strong: that rule judges the version returned, not the
// replicas asked.
//
// # Failover
//
// Three more rules judge a run with failovers from what the store held
// at its end and what its primaries did; each is a function of its own,
// of inputs that the randomized simulation test and cosla chaos both
// record. A Put is durable when its write level w reaches every majority
// of its tablet's N replicas, w + majority(N) > N with majority(N) =
// N/2+1: a failover hears from at least a majority and elects the
// replica with the longest prefix, which holds the Put.
//   - "durable" (CheckDurable): every acknowledged durable Put is held at
//     the end, its key's final version having a timestamp at or after
//     its own, and is not Lost.
//   - "rollback" (CheckRollback): an acknowledged Put not held at the end
//     is Lost; a Lost acknowledged Put's version is among the versions
//     the replicas rolled back; every rolled-back version of an
//     acknowledged Put is Lost. Its Losses count the acknowledged Puts
//     lost per write level and the versions rolled back: level-ONE
//     writes lost equal the rollback entries of acknowledged Puts.
//   - "epochs" (CheckEpochs): no two primaries of a tablet acknowledge
//     Puts in overlapping epochs: in time order a tablet's
//     acknowledgements never go back to an older epoch, and the
//     acknowledgements of one epoch come from one node.
//
// # Cost
//
// With n ops and S sessions, everything but causal takes O(n log n) time
// and O(n) space; rule "quorum" takes O(n log n) times the number of
// distinct write levels of a key, at most its N. Causal checking
// represents causal pasts as vector clocks over sessions, persistent tries
// that share structure, and visits ops in a topological order of session
// order and reads-from; it is near-linear for realistic histories and
// O(n*S) in the worst case (see checkCausal).
package check
