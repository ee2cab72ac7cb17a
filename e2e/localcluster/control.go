package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// The control socket lets a test ask the supervisor (which owns the node agent
// processes) to stop, crash, shut down or start a node. HTTP over a unix socket.

func serveControl(path string, rc *runningCluster, st *State) (*http.Server, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex // one node operation at a time
	nodeOp := func(op func(i int) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			i, err := strconv.Atoi(r.PathValue("i"))
			if err == nil && (i < 1 || i > rc.opts.AllNodes()) {
				err = fmt.Errorf("node %d: cluster has nodes 1..%d", i, rc.opts.AllNodes())
			}
			if err == nil {
				mu.Lock()
				err = op(i)
				mu.Unlock()
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nodes/{i}/stop", nodeOp(rc.byKind(rc.stopNode, rc.stopRealNode)))
	mux.HandleFunc("POST /nodes/{i}/crash", nodeOp(rc.byKind(rc.crashNode, rc.crashKubelet)))
	mux.HandleFunc("POST /nodes/{i}/shutdown", nodeOp(rc.byKind(rc.shutdownNode, errRealNodeShutdown)))
	mux.HandleFunc("POST /nodes/{i}/kubelet/stop", nodeOp(rc.byKind(errNotRealNode, rc.stopKubelet)))
	mux.HandleFunc("POST /nodes/{i}/start", nodeOp(rc.byKind(
		func(i int) error { return rc.restartNode(context.Background(), i) },
		func(i int) error { return rc.restartRealNode(context.Background(), i) })))
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(st) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// ControlClient talks to a running supervisor.
type ControlClient struct {
	http *http.Client
}

// NewControlClient connects to the supervisor's control socket.
func NewControlClient(socket string) *ControlClient {
	return &ControlClient{http: &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}}
}

func (c *ControlClient) post(path string) error {
	resp, err := c.http.Post("http://supervisor"+path, "text/plain", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", path, resp.Status, b)
	}
	return nil
}

// StopNode stops node i's agent like a machine going down (its pods die).
func (c *ControlClient) StopNode(i int) error { return c.post(fmt.Sprintf("/nodes/%d/stop", i)) }

// CrashNode SIGKILLs node i's agent only; its pods keep running.
func (c *ControlClient) CrashNode(i int) error { return c.post(fmt.Sprintf("/nodes/%d/crash", i)) }

// ShutdownNode shuts node i down gracefully (the kubelet's GracefulNodeShutdown): its pods are
// stopped and reported Failed/Terminated, its Node NotReady; the agent then exits.
func (c *ControlClient) ShutdownNode(i int) error {
	return c.post(fmt.Sprintf("/nodes/%d/shutdown", i))
}

// StopKubelet stops real node i's kubelet only (SIGTERM); its containers keep running.
// StartNode starts it again.
func (c *ControlClient) StopKubelet(i int) error {
	return c.post(fmt.Sprintf("/nodes/%d/kubelet/stop", i))
}

// StartNode starts node i's agent again (a real node: whatever of it is stopped) and waits until
// its Node is Ready.
func (c *ControlClient) StartNode(i int) error { return c.post(fmt.Sprintf("/nodes/%d/start", i)) }
