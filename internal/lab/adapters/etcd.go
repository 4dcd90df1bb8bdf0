//go:build unix

package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

var (
	etcdReadOptions  = []string{OptionEtcdSerializable, OptionEtcdLinearizable}
	etcdWriteOptions = []string{OptionEtcdLinearizable}
)

// Etcd is an etcd cluster. Writes are plain Puts at the member that led
// the cluster when the store was made. Reads go to one other member, a
// follower: option "serializable" (the default) reads its local state
// (clientv3.WithSerializable, which may be stale), "linearizable" is the
// default Get, which the follower serves after confirming with the leader
// (Raft ReadIndex). Both read options use the same follower so that the
// option is the only difference between them, as Wada 2.1 varies only
// the read's consistency flag.
//
// If leadership moves later, ops still go to the same endpoints and keep
// their guarantees; only the labels "leader" and "follower" go stale.
type Etcd struct {
	endpoints                        []string
	leaderEndpoint, followerEndpoint string
	leader, follower                 *clientv3.Client
	started
}

var _ Remote = (*Etcd)(nil)

// ConnectEtcd returns a Store for an etcd cluster that the caller runs,
// given the client URLs of its members (e.g. "http://127.0.0.1:2379"). It
// asks every member for its status to find the leader and a follower; a
// single-member cluster serves all reads at its leader.
func ConnectEtcd(ctx context.Context, endpoints []string) (*Etcd, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("adapters: ConnectEtcd needs at least one endpoint")
	}
	clients := make([]*clientv3.Client, 0, len(endpoints))
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	for _, ep := range endpoints {
		c, err := newEtcdClient(ep)
		if err != nil {
			closeAll()
			return nil, err
		}
		clients = append(clients, c)
	}
	leader, follower, err := etcdRoles(ctx, endpoints, clients)
	if err != nil {
		closeAll()
		return nil, err
	}
	e := &Etcd{
		endpoints:        slices.Clone(endpoints),
		leaderEndpoint:   endpoints[leader],
		followerEndpoint: endpoints[follower],
		leader:           clients[leader],
		follower:         clients[follower],
	}
	for i, c := range clients {
		if i != leader && i != follower {
			_ = c.Close()
		}
	}
	return e, nil
}

func newEtcdClient(endpoint string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint},
		// The client logs reconnects at warning level; the benchmark
		// records failed ops in the trace instead.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("adapters: etcd client for %s: %w", endpoint, err)
	}
	return c, nil
}

// etcdRoles returns the index of the leader's endpoint and of a
// follower's (the leader's own if there is no other member), after every
// member answered a status request naming the same leader.
func etcdRoles(ctx context.Context, endpoints []string, clients []*clientv3.Client) (leader, follower int, err error) {
	leader, follower = -1, -1
	var leaderID uint64
	for i, c := range clients {
		st, err := c.Status(ctx, endpoints[i])
		if err != nil {
			return -1, -1, fmt.Errorf("adapters: etcd status of %s: %w", endpoints[i], err)
		}
		if st.Leader == 0 {
			return -1, -1, fmt.Errorf("adapters: etcd member %s knows no leader", endpoints[i])
		}
		if i > 0 && st.Leader != leaderID {
			return -1, -1, fmt.Errorf("adapters: etcd members disagree on the leader (%x, %x)", leaderID, st.Leader)
		}
		leaderID = st.Leader
		if st.Header.MemberId == st.Leader {
			leader = i
		} else if follower < 0 {
			follower = i
		}
	}
	if leader < 0 {
		return -1, -1, fmt.Errorf("adapters: etcd leader %x is not among the endpoints %s", leaderID, strings.Join(endpoints, ", "))
	}
	if follower < 0 {
		follower = leader
	}
	return leader, follower, nil
}

// Name implements Store.
func (e *Etcd) Name() string { return "etcd" }

// ReadOptions implements Store.
func (e *Etcd) ReadOptions() []string { return slices.Clone(etcdReadOptions) }

// WriteOptions implements Store.
func (e *Etcd) WriteOptions() []string { return slices.Clone(etcdWriteOptions) }

// Endpoints are the client URLs of the members.
func (e *Etcd) Endpoints() []string { return slices.Clone(e.endpoints) }

// Addrs implements Remote: the members' client URLs.
func (e *Etcd) Addrs() []string { return e.Endpoints() }

// LeaderEndpoint is where writes go; FollowerEndpoint is where reads go.
func (e *Etcd) LeaderEndpoint() string   { return e.leaderEndpoint }
func (e *Etcd) FollowerEndpoint() string { return e.followerEndpoint }

// Write implements Store.
func (e *Etcd) Write(ctx context.Context, key, value, option string) (Report, error) {
	if _, err := resolveOption("etcd", "write", option, etcdWriteOptions); err != nil {
		return Report{}, err
	}
	rep := Report{Consistency: ConsistencyLinearizable, Replica: hostPort(e.leaderEndpoint)}
	if _, err := e.leader.Put(ctx, key, value); err != nil {
		return rep, fmt.Errorf("adapters: etcd put at %s: %w", e.leaderEndpoint, err)
	}
	return rep, nil
}

// Read implements Store.
func (e *Etcd) Read(ctx context.Context, key, option string) (string, bool, Report, error) {
	option, err := resolveOption("etcd", "read", option, etcdReadOptions)
	if err != nil {
		return "", false, Report{}, err
	}
	rep := Report{Consistency: ConsistencyLinearizable, Replica: hostPort(e.followerEndpoint)}
	var opts []clientv3.OpOption
	if option == OptionEtcdSerializable {
		rep.Consistency = ConsistencySerializable
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := e.follower.Get(ctx, key, opts...)
	if err != nil {
		return "", false, rep, fmt.Errorf("adapters: etcd %s get at %s: %w", option, e.followerEndpoint, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, rep, nil
	}
	return string(resp.Kvs[0].Value), true, rep, nil
}

// Close closes the clients and stops the servers the harness started.
// Safe to call more than once.
func (e *Etcd) Close() error {
	return e.closeOnce(func() error {
		errs := []error{e.leader.Close()}
		if e.follower != e.leader {
			errs = append(errs, e.follower.Close())
		}
		// One member at a time, the leader last (see startEtcd): members
		// stopped together take seconds to give up on each other.
		for _, p := range e.procs {
			errs = append(errs, p.stop())
		}
		return errors.Join(errs...)
	})
}

// hostPort strips the scheme of an endpoint URL, so that Report.Replica
// is a host:port address for every store.
func hostPort(endpoint string) string {
	if _, rest, ok := strings.Cut(endpoint, "://"); ok {
		return rest
	}
	return endpoint
}

var etcdServer = binary{name: "etcd", paths: []string{"/usr/bin/etcd"}, pkg: "etcd-server"}

// etcdMembers is the size of the cluster StartEtcd starts: the smallest
// that has a follower and survives the loss of one member.
const etcdMembers = 3

// StartEtcd starts a three-member etcd cluster on loopback on free ports,
// with each member's data and log under dir, and returns once every
// member names the same leader and a linearizable read at the follower
// succeeds. Members run with etcd's default timing (100 ms heartbeat,
// 1 s election timeout), each in its own process group. Close stops them
// with SIGTERM, then kills their process groups after 10 s.
func StartEtcd(ctx context.Context, dir string) (*Etcd, error) {
	path, err := etcdServer.find()
	if err != nil {
		return nil, err
	}
	return startRetrying(func(attempt int) (*Etcd, error) { return startEtcd(ctx, dir, path, attempt) })
}

func startEtcd(ctx context.Context, dir, path string, attempt int) (_ *Etcd, err error) {
	ports, err := freePorts(2 * etcdMembers)
	if err != nil {
		return nil, err
	}
	members := etcdCluster(ports, attempt)
	base := fmt.Sprintf("%s/etcd-%d", dir, attempt)
	if err := mkdirAll(base); err != nil {
		return nil, err
	}
	var procs []*proc
	defer func() {
		if err != nil {
			for _, p := range procs {
				_ = p.stop()
			}
		}
	}()
	for _, m := range members {
		p, err := spawn("etcd member "+m.name, base+"/"+m.name+".log", sigterm, nil, path, m.args(base)...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	e, err := connectEtcdReady(ctx, procs, members)
	if err != nil {
		return nil, err
	}
	e.procs = leaderLast(procs, members, e.leaderEndpoint)
	return e, nil
}

// etcdMember is one member of the cluster startEtcd starts.
type etcdMember struct {
	name, clientURL, peerURL string
	// initialCluster and token are the cluster's, the same for every
	// member.
	initialCluster, token string
}

// etcdCluster names the members and gives each a client and a peer port.
func etcdCluster(ports []int, attempt int) []etcdMember {
	members := make([]etcdMember, etcdMembers)
	initialCluster := make([]string, etcdMembers)
	for i := range members {
		m := &members[i]
		m.name = fmt.Sprintf("m%d", i)
		m.clientURL = "http://" + loopback(ports[2*i])
		m.peerURL = "http://" + loopback(ports[2*i+1])
		initialCluster[i] = m.name + "=" + m.peerURL
	}
	for i := range members {
		members[i].initialCluster = strings.Join(initialCluster, ",")
		members[i].token = fmt.Sprintf("cosla-%d-%d", ports[0], attempt)
	}
	return members
}

// args are the member's command line, its data in base/NAME.
func (m etcdMember) args(base string) []string {
	return []string{
		"--name", m.name,
		"--data-dir", base + "/" + m.name,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", m.initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", m.token,
		"--logger", "zap",
		"--log-outputs", "stderr",
	}
}

// connectEtcdReady connects to the members once they name a leader, and
// returns once a linearizable read at the follower succeeds.
func connectEtcdReady(ctx context.Context, procs []*proc, members []etcdMember) (*Etcd, error) {
	clientURLs := make([]string, len(members))
	for i, m := range members {
		clientURLs[i] = m.clientURL
	}
	var e *Etcd
	err := waitReady(ctx, "etcd cluster", procs, func(ctx context.Context) error {
		if e == nil {
			c, err := ConnectEtcd(ctx, clientURLs)
			if err != nil {
				return err
			}
			e = c
		}
		_, err := e.follower.Get(ctx, "cosla-ready")
		return err
	})
	if err != nil {
		if e != nil {
			_ = e.Close()
		}
		return nil, err
	}
	return e, nil
}

// leaderLast orders the members' processes for Close: the followers, then
// the leader. A stopping leader first hands leadership over, which takes
// an election round.
func leaderLast(procs []*proc, members []etcdMember, leaderEndpoint string) []*proc {
	for i, m := range members {
		if m.clientURL == leaderEndpoint {
			leader := procs[i]
			return append(slices.Delete(procs, i, i+1), leader)
		}
	}
	return procs
}
