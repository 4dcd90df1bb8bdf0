package cluster

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

var statusPagePNG = flag.String("statuspage.png", "", "TestStatusPage: also take a screenshot of the status page under load and save it to this file (docs/status-page.png for the README)")

// chromiumFlags run Chromium headless, with nothing of its own on the
// network and a fresh profile: only the page and its /cluster fetches.
// --virtual-time-budget lets the page's timers run 5 s of virtual time
// (two or three refreshes) without the test waiting for them; virtual
// time stands still while a fetch is in flight.
func chromiumFlags(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--virtual-time-budget=5000"}
}

// findChromium returns Debian's chromium, which .ci/run installs. Outside
// CI (the CI variable unset) a machine without it skips the test.
func findChromium(t *testing.T) string {
	t.Helper()
	if path, err := exec.LookPath("chromium"); err == nil {
		return path
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it): the status page is not loaded in a browser")
	}
	t.Fatal("chromium is not installed, and CI is set: .ci/run installs it (apt-get install chromium)")
	return ""
}

// runChromium runs Chromium on args plus url, for at most a minute, and
// returns its standard output. Chromium starts helper processes: it runs
// in its own process group, killed whole if it overstays.
func runChromium(ctx context.Context, t *testing.T, bin string, args []string, url string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// element is a start tag of the dumped DOM.
type element struct {
	tag   string
	attrs map[string]string
	at    int // offset in the DOM
}

var (
	startTag = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z_:][-a-zA-Z0-9_:.]*(?:="[^"]*")?)*)\s*/?>`)
	attr     = regexp.MustCompile(`([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:="([^"]*)")?`)
)

// elements lists the DOM's start tags that have attribute key, in order.
// Chromium serializes attribute values in double quotes with & and "
// escaped, which is all this reads.
func elements(dom, key string) []element {
	var out []element
	for _, m := range startTag.FindAllStringSubmatchIndex(dom, -1) {
		e := element{tag: dom[m[2]:m[3]], attrs: map[string]string{}, at: m[0]}
		for _, a := range attr.FindAllStringSubmatch(dom[m[4]:m[5]], -1) {
			e.attrs[a[1]] = html.UnescapeString(a[2])
		}
		if _, ok := e.attrs[key]; ok {
			out = append(out, e)
		}
	}
	return out
}

// within returns the elements of es that lie in the DOM between from and
// to.
func within(es []element, from, to int) []element {
	var out []element
	for _, e := range es {
		if e.at > from && e.at < to {
			out = append(out, e)
		}
	}
	return out
}

func parseTSKey(s string) (hlc.Timestamp, error) {
	w, l, ok := strings.Cut(s, ",")
	wall, err1 := strconv.ParseInt(w, 10, 64)
	logical, err2 := strconv.ParseUint(l, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return hlc.Timestamp{}, fmt.Errorf("timestamp %q: want WALLNANOS,LOGICAL", s)
	}
	return hlc.Timestamp{WallNanos: wall, Logical: uint32(logical)}, nil
}

// TestStatusPage loads a site's status page in headless Chromium, on a
// cluster of three sites, one with two nodes, and a table of two tablets
// whose primaries are on those two nodes, after some Puts. Between two
// fetches of /cluster by the test, the page must show every site and node,
// each tablet's primary and secondaries as /status reports them, the Puts
// each node served, each replica's high timestamp (the primaries' do not
// move without Puts; a secondary's moves with each pull, so it must lie
// between the two fetches'), every link the nodes measured, and the
// sites' recent warnings. With -statuspage.png=FILE a second run of
// Chromium takes a screenshot under load and keeps it there.
func TestStatusPage(t *testing.T) {
	chromium := findChromium(t)
	topo := topology.Topology{Name: "three-sites", LocalRTT: time.Millisecond,
		Sites: []topology.Site{
			{Name: "england", Replicas: []string{"r1", "r2"}, Clients: []string{"c1"}},
			{Name: "us", Replicas: []string{"r1"}, Clients: []string{"c1"}},
			{Name: "india", Replicas: []string{"r1"}, Clients: []string{"c1"}},
		},
		Links: []topology.Link{
			{A: "england", B: "us", RTT: 30 * time.Millisecond},
			{A: "england", B: "india", RTT: 60 * time.Millisecond},
			{A: "us", B: "india", RTT: 50 * time.Millisecond},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Insecure: every site warns of it at start, so each has a recent
	// error for the page to show.
	c, err := Start(ctx, Options{Dir: t.TempDir(), Topology: topo, Fresh: true, Insecure: true,
		Placement: topology.Placement{Tablets: 2, Partition: "hash"}, PullInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info := c.Info()
	page := "http://" + info.Sites[0].HTTP + "/"
	client, s := strongSession(ctx, t, "england", info)
	const keys = 20
	for i := range uint64(keys) {
		if _, err := client.Put(ctx, s, workload.Key(i), []byte{byte(i)}); err != nil {
			t.Fatalf("put %s: %v", workload.Key(i), err)
		}
	}

	// Ask until every secondary has measured its round trip to its
	// primary (the first pull's is left out) and holds every Put: at most
	// fetchesMax times, each a round trip to every site.
	fetch := func() server.ClusterView {
		t.Helper()
		var v server.ClusterView
		if err := getJSON(ctx, "http://"+info.Sites[0].HTTP+"/cluster", &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	ready := func(v server.ClusterView) error {
		for _, site := range v.Sites {
			if site.Status == nil {
				return fmt.Errorf("site %s: %s", site.Site, site.Error)
			}
			for _, n := range site.Status.Nodes {
				secondary := false
				for _, tb := range n.Metrics.Tablets {
					secondary = secondary || !tb.Primary
				}
				if secondary && (len(n.Metrics.Links) == 0 || n.Metrics.EntriesApplied < keys) {
					return fmt.Errorf("node %s: links %+v, %d versions applied", n.ID, n.Metrics.Links, n.Metrics.EntriesApplied)
				}
			}
		}
		return nil
	}
	const fetchesMax = 100_000
	for i, err := 0, ready(fetch()); err != nil; i, err = i+1, ready(fetch()) {
		if i == fetchesMax {
			t.Fatalf("the secondaries did not catch up and measure their links in %d fetches: %v", fetchesMax, err)
		}
	}

	before := fetch()
	dom := string(runChromium(ctx, t, chromium, append(chromiumFlags(t.TempDir()), "--dump-dom"), page))
	after := fetch()
	checkStatusPage(t, dom, before, after)
	if *statusPagePNG != "" {
		screenshot(ctx, t, chromium, info, page, keys)
	}
}

// screenshot saves a screenshot of the status page at page to
// -statuspage.png, taken under load from two sites through the driver
// (Puts at england, Gets at us), so that the rates move.
func screenshot(ctx context.Context, t *testing.T, chromium string, info Info, page string, keys uint64) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "status-page.png")
	loadDuring(ctx, t, info, keys, func() {
		runChromium(ctx, t, chromium, append(chromiumFlags(t.TempDir()), "--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars"), page)
	})
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 900 {
		t.Errorf("screenshot is %dx%d, want 1280x900", b.Dx(), b.Dy())
	}
	if err := os.WriteFile(*statusPagePNG, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot saved to %s", *statusPagePNG)
}

// checkStatusPage checks the page Chromium rendered, dom, against the
// /cluster fetched before and after it.
func checkStatusPage(t *testing.T, dom string, before, after server.ClusterView) {
	t.Helper()
	// The page's script holds its templates, tags and all: only the
	// document's elements count.
	dom = regexp.MustCompile(`(?s)<script>.*?</script>`).ReplaceAllString(dom, "")
	defer func() {
		if t.Failed() {
			t.Logf("the page as Chromium rendered it, without its script:\n%s", tail(dom, 20000))
		}
	}()
	if st := elements(dom, "id"); !slices.ContainsFunc(st, func(e element) bool {
		return e.attrs["id"] == "state" && e.attrs["data-state"] == "live"
	}) {
		t.Fatalf("the page never rendered /cluster: no #state that says live")
	}

	// Sites, all up.
	sites := map[string]string{}
	for _, e := range elements(dom, "data-site") {
		if e.tag == "div" {
			sites[e.attrs["data-site"]] = e.attrs["data-state"]
		}
	}
	for _, site := range before.Sites {
		if sites[site.Site] != "up" {
			t.Errorf("site %s: shown as %q, want up", site.Site, sites[site.Site])
		}
	}
	if len(sites) != len(before.Sites) {
		t.Errorf("the page shows sites %v, want %d", sites, len(before.Sites))
	}

	// Nodes and their Puts (no Puts run now: before and after agree).
	type nodeFacts struct {
		puts                   int64
		primaries, secondaries map[string]string // tablet -> node
		highs                  map[string]hlc.Timestamp
	}
	facts := func(v server.ClusterView) nodeFacts {
		f := nodeFacts{primaries: map[string]string{}, secondaries: map[string]string{}, highs: map[string]hlc.Timestamp{}}
		for _, site := range v.Sites {
			for _, n := range site.Status.Nodes {
				f.puts += n.Metrics.Puts
				for _, tb := range n.Metrics.Tablets {
					key := fmt.Sprintf("%s/%d", tb.Table, tb.Ref.Tablet)
					if tb.Primary {
						f.primaries[key] = string(n.ID)
					} else {
						f.secondaries[key] = strings.Trim(f.secondaries[key]+","+string(n.ID), ",")
					}
					f.highs[key+" "+string(n.ID)] = tb.High
				}
			}
		}
		return f
	}
	b, a := facts(before), facts(after)
	if b.puts != a.puts {
		t.Fatalf("the nodes served Puts while the page loaded (%d, then %d): the test cannot compare", b.puts, a.puts)
	}
	nodeRows := 0
	for _, site := range before.Sites {
		for _, n := range site.Status.Nodes {
			rows := 0
			for _, e := range elements(dom, "data-puts") {
				if e.attrs["data-node"] == string(n.ID) {
					rows++
					if got := e.attrs["data-puts"]; got != strconv.FormatInt(n.Metrics.Puts, 10) {
						t.Errorf("node %s: the page shows %s Puts, /status %d", n.ID, got, n.Metrics.Puts)
					}
					if e.attrs["data-site"] != site.Site {
						t.Errorf("node %s: shown at site %q, want %s", n.ID, e.attrs["data-site"], site.Site)
					}
				}
			}
			if rows != 1 {
				t.Errorf("node %s: %d rows in the operations table, want 1", n.ID, rows)
			}
			nodeRows++
		}
	}
	if nodeRows != 4 {
		t.Errorf("/status shows %d nodes, want 4", nodeRows)
	}

	// Tablets: the primary and secondaries as /status says, and each
	// replica's high timestamp: a primary's as before (it does not move
	// without Puts), a secondary's between before and after.
	bodies := elements(dom, "data-tablet")
	rows := elements(dom, "data-high")
	if len(bodies) != len(b.primaries) || len(b.primaries) != 2 {
		t.Errorf("the page shows %d tablets, /status %d; want 2", len(bodies), len(b.primaries))
	}
	for i, body := range bodies {
		key := body.attrs["data-tablet"]
		if got, want := body.attrs["data-primary"], b.primaries[key]; got != want {
			t.Errorf("tablet %s: the page shows primary %q, /status %q", key, got, want)
		}
		if got, want := body.attrs["data-secondaries"], b.secondaries[key]; got != want {
			t.Errorf("tablet %s: the page shows secondaries %q, /status %q", key, got, want)
		}
		end := len(dom)
		if i+1 < len(bodies) {
			end = bodies[i+1].at
		}
		replicas := within(rows, body.at, end)
		if len(replicas) != 3 {
			t.Errorf("tablet %s: %d replicas shown, want 3", key, len(replicas))
		}
		for _, r := range replicas {
			node, role := r.attrs["data-node"], r.attrs["data-role"]
			shown, err := parseTSKey(r.attrs["data-high"])
			if err != nil {
				t.Error(err)
				continue
			}
			lo, hi := b.highs[key+" "+node], a.highs[key+" "+node]
			switch {
			case (role == "primary") != (node == b.primaries[key]):
				t.Errorf("tablet %s: %s shown as %s", key, node, role)
			case role == "primary" && (shown != lo || lo != hi):
				t.Errorf("tablet %s: primary %s: high %s shown, /status %s then %s", key, node, shown, lo, hi)
			case shown.Less(lo) || hi.Less(shown):
				t.Errorf("tablet %s: secondary %s: high %s shown, want between /status's %s and %s", key, node, shown, lo, hi)
			}
		}
	}

	// Links: every round trip measured before the page loaded, with a
	// positive estimate and samples between the two fetches'.
	links := elements(dom, "data-peer")
	for _, site := range before.Sites {
		for _, n := range site.Status.Nodes {
			for _, l := range n.Metrics.Links {
				i := slices.IndexFunc(links, func(e element) bool {
					return e.attrs["data-node"] == string(n.ID) && e.attrs["data-peer"] == string(l.Peer)
				})
				if i < 0 {
					t.Errorf("link %s -> %s: not on the page", n.ID, l.Peer)
					continue
				}
				rtt, err1 := strconv.ParseInt(links[i].attrs["data-rtt-ns"], 10, 64)
				samples, err2 := strconv.ParseInt(links[i].attrs["data-samples"], 10, 64)
				if err := errors.Join(err1, err2); err != nil || rtt <= 0 || samples < l.Samples {
					t.Errorf("link %s -> %s: round trip %d ns over %d samples shown (%v); /status had %d samples before", n.ID, l.Peer, rtt, samples, err, l.Samples)
				}
			}
		}
	}
	if len(links) == 0 {
		t.Errorf("the page names no links")
	}

	// Recent errors: each site's warnings (at least the insecure one).
	for _, site := range before.Sites {
		shown := 0
		for _, e := range elements(dom, "data-level") {
			if e.tag == "tr" && e.attrs["data-site"] == site.Site {
				shown++
			}
		}
		if lo := len(site.Status.RecentErrors); shown < max(lo, 1) {
			t.Errorf("site %s: %d recent errors shown, /status had %d", site.Site, shown, lo)
		}
	}
}

// loadDuring runs Puts at england and Gets at us on keys keys, one
// session each, through the driver, and calls during once the load runs;
// the load stops when during returns.
func loadDuring(ctx context.Context, t *testing.T, info Info, keys uint64, during func()) {
	t.Helper()
	a, err := info.Access()
	if err != nil {
		t.Fatal(err)
	}
	uniform, err := workload.NewUniform(keys)
	if err != nil {
		t.Fatal(err)
	}
	strong, _ := sla.Parse("strong 10s 1")
	var groups []*driver.Group
	for i, g := range []struct {
		site string
		kind driver.Kind
	}{{"england", driver.Put}, {"us", driver.Get}} {
		mix, err := driver.NewKeyMix([]driver.Weighted{{Kind: g.kind, Weight: 1}}, uniform, 1)
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, &driver.Group{Name: g.site, Site: g.site, Streams: []driver.Stream{{Mix: mix}},
			Rand: rand.New(rand.NewPCG(1, uint64(i))), Cosla: driver.CoslaOf(strong, cosla.Pileus, driver.Levels{}, 0)})
	}
	loop := driver.NewLoop(time.Now())
	// during starts once the load runs: after its first opsWarm ops.
	const opsWarm = 50
	ops, warm := 0, make(chan struct{})
	rec := &driver.Recorder{OnOp: func(_ *driver.Group, op *driver.Op) {
		if ops++; ops == opsWarm {
			close(warm)
		}
		if op.Err != nil && !errors.Is(op.Err, context.Canceled) {
			t.Errorf("load: %s %s: %v", op.Session, op.Kind, op.Err)
		}
	}}
	d, err := driver.New(&driver.HostTarget{Loop: loop, Nodes: a.Nodes, TLS: a.TLS, Table: info.Table},
		driver.Spec{Groups: groups, Duration: 10 * time.Minute, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Start(loop)
	ran := make(chan error, 1)
	go func() { ran <- loop.Run(ctx, d.Done) }()
	select {
	case <-warm:
	case err := <-ran:
		t.Fatalf("the load stopped before %d ops: %v, %v", opsWarm, err, d.Err())
	}
	during()
	loop.Post(d.Stop)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
