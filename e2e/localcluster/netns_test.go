package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNetnsDialForwardCleanup runs a real etcd inside a fresh cluster netns, reaches
// it through Dialer and through the host forwarder, then checks that cleanup
// removes the process, the netns and the folder. Needs root and the tools cache.
func TestNetnsDialForwardCleanup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	o, err := Options{Name: fmt.Sprintf("ut-%d", os.Getpid()), StateRoot: t.TempDir()}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	etcdBin := filepath.Join(o.ToolsDir, "etcd-"+toolVersions(o.ModuleRoot)["ETCD_DEFAULT_VERSION"], "etcd")
	if _, err := os.Stat(etcdBin); err != nil {
		t.Skipf("no etcd in the tools cache: %v", err)
	}
	l := Layout{Dir: filepath.Join(o.StateRoot, o.Name)}
	ctx := context.Background()
	t.Cleanup(func() { _ = cleanupLeftovers(o.Name, l, true) })
	if err := os.MkdirAll(l.Logs(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := createClusterNetns(ctx, o.Name); err != nil {
		t.Fatal(err)
	}
	if err := addNodeAddress(ctx, o.Name, 1); err != nil {
		t.Fatal(err)
	}
	etcd := &component{Name: "etcd", Args: etcdArgs(etcdBin, l), Log: l.ComponentLog("etcd")}
	if err := etcd.start(NetnsName(o.Name)); err != nil {
		t.Fatal(err)
	}
	d := Dialer{Netns: NetnsName(o.Name)}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	url := fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort)
	if err := waitHTTP(ctx, client, url, etcd); err != nil {
		t.Fatal(err)
	}
	// The host's own 127.0.0.1:12379 is not the netns one.
	if _, err := http.Get(url); err == nil {
		t.Logf("note: something on the host listens on %s too", url)
	}

	fwd, err := startForwarder("127.0.0.1:0", d, fmt.Sprintf("127.0.0.1:%d", etcdPort))
	if err != nil {
		t.Fatal(err)
	}
	defer fwd.Close()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", fwd.Port()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"health":"true"`) {
		t.Fatalf("health through forwarder = %s", body)
	}

	pids := pidsInNetns([]string{NetnsName(o.Name)})
	if len(pids) != 1 || pids[0] != etcd.cmd.Process.Pid {
		t.Fatalf("pids in netns = %v, want [%d]", pids, etcd.cmd.Process.Pid)
	}
	if err := cleanupLeftovers(o.Name, l, true); err != nil {
		t.Fatal(err)
	}
	<-etcd.exited
	if names := clusterNetnsNames(o.Name); len(names) != 0 {
		t.Fatalf("netns left: %v", names)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("state dir left: %v", err)
	}
}

// TestDialerListenInNetns checks that Dialer.Listen binds inside the netns: the bridge
// address exists only there, and a connection dialed in the netns reaches the listener.
func TestDialerListenInNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	name := fmt.Sprintf("ul-%d", os.Getpid())
	l := Layout{Dir: filepath.Join(t.TempDir(), name)}
	t.Cleanup(func() { _ = cleanupLeftovers(name, l, true) })
	if err := createClusterNetns(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	d := Dialer{Netns: NetnsName(name)}
	ln, err := d.Listen("tcp", GatewayIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hello"))
			c.Close()
		}
	}()
	conn, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if b, err := io.ReadAll(conn); err != nil || string(b) != "hello" {
		t.Fatalf("read through the netns = %q, %v", b, err)
	}
	if hostLn, err := net.Listen("tcp", GatewayIP+":0"); err == nil {
		hostLn.Close()
		t.Logf("note: the host has %s too; the check above still ran inside the netns", GatewayIP)
	}
}
