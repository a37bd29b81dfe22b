package ledger_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natsx"
)

// freePort is a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster starts three JetStream servers routed into one cluster and
// returns them, their options (to start one again) and a client URL list
// naming all three.
func startCluster(t *testing.T) ([]*server.Server, []*server.Options, string) {
	t.Helper()
	const n = 3
	clientPorts, routePorts := make([]int, n), make([]int, n)
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	var urls []string
	servers := make([]*server.Server, n)
	opts := make([]*server.Options, n)
	for i := range n {
		var routes []*url.URL
		for j := range n {
			if j != i {
				routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", routePorts[j])})
			}
		}
		opts[i] = &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "sonde", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  routes,
		}
		servers[i] = startNode(t, opts[i])
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatal("a cluster node did not start")
		}
	}
	return servers, opts, strings.Join(urls, ",")
}

// startNode starts one cluster node (again, with the same options and store).
func startNode(t *testing.T, o *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	return s
}

// TestAppendRidesOutTheLossOfTheStreamLeader (issue 17, item 14): on a
// three-node cluster with the ledger replicated three times, the node that
// leads the ledger's stream is lost, and another with it, so for a while
// the stream has no quorum and no leader. The append made meanwhile gets no
// answer (timeouts, "no response from stream") and is retried until a node
// is back and the stream has elected a leader; the appends after it go on.
// Every append lands once, in order. Before, the first try's timeout failed
// the append and the drive waited out its lease.
func TestAppendRidesOutTheLossOfTheStreamLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three JetStream servers")
	}
	servers, opts, urls := startCluster(t)
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The cluster elects its meta leader first: until then nothing can be created.
	res := natsx.Resources{Replicas: 3, Admin: true, Only: []string{contracts.LedgerStream}}
	for {
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		err := res.Ensure(tctx, js)
		tcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the cluster never took the ledger stream: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l := open(t, js, ledger.WithWriter("w"), ledger.WithAppendRetry(60*time.Second, 2*time.Second))
	last, err := l.Append(ctx, "r1", 0, entry(t, contracts.KindRunStarted, contracts.RunStarted{Objective: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, contracts.LedgerStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("no stream leader: %+v %v", info, err)
	}
	// The leader and one other node go; the third is left without quorum
	// until the other comes back, longer than a publish waits (5 s).
	leader, other := -1, -1
	for i, s := range servers {
		switch {
		case s.Name() == info.Cluster.Leader:
			leader = i
		case other < 0:
			other = i
		}
	}
	if leader < 0 {
		t.Fatalf("the stream's leader %q is none of the nodes", info.Cluster.Leader)
	}
	servers[leader].Shutdown()
	servers[other].Shutdown()
	back := time.AfterFunc(6*time.Second, func() { startNode(t, opts[other]) })
	t.Cleanup(func() { back.Stop() })
	for turn := 1; turn <= 5; turn++ {
		last, err = l.Append(ctx, "r1", last, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: turn, Text: "after"}))
		if err != nil {
			t.Fatalf("append %d after the leader was lost: %v", turn, err)
		}
	}
	es, err := l.Read(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 6 {
		t.Fatalf("the ledger holds %d entries, want 6: the header and five appends, each once", len(es))
	}
}
