package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fakeHost is a host with a CA bundle and a small time-zone tree (a file and a link).
func fakeHost(t *testing.T) Host {
	t.Helper()
	dir := t.TempDir()
	zones := filepath.Join(dir, "zoneinfo")
	writeHostFile(t, filepath.Join(dir, "ca.crt"), "CERTIFICATES", 0o644)
	writeHostFile(t, filepath.Join(zones, "Europe", "Berlin"), "TZif Berlin", 0o644)
	writeHostFile(t, filepath.Join(zones, "Etc", "UTC"), "TZif UTC", 0o644)
	if err := os.Symlink("Etc/UTC", filepath.Join(zones, "UTC")); err != nil {
		t.Fatal(err)
	}
	return Host{CACertificates: filepath.Join(dir, "ca.crt"), ZoneInfo: zones}
}

func writeHostFile(t *testing.T, path, content string, mode fs.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// archived is what a test reads back from an archive: the name its index gives the image,
// the image, and its files by path (as a runtime unpacks the layers).
type archived struct {
	name  string
	img   v1.Image
	files map[string]file
}

type file struct {
	hdr     *tar.Header
	content string
}

// writeAndRead builds the spec into an archive in a fresh folder and reads it back.
func writeAndRead(t *testing.T, s Spec) (archived, string) {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "image.tar")
	if err := WriteArchive(path, s.Name, img); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode() != 0o644 {
		t.Errorf("archive %v, %v: want mode 0644 (nodes' importers need not be its owner)", info, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	return readArchive(t, path), path
}

// readArchive unpacks the OCI layout tarball and opens it with go-containerregistry's layout.
func readArchive(t *testing.T, path string) archived {
	t.Helper()
	dir := t.TempDir()
	untar(t, path, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 1 {
		t.Fatalf("index %s with %d manifests, want one in an OCI index", im.MediaType, len(im.Manifests))
	}
	desc := im.Manifests[0]
	if desc.Platform == nil || !desc.Platform.Equals(Platform) {
		t.Errorf("manifest platform %v, want %v", desc.Platform, Platform)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return archived{name: desc.Annotations[AnnotationImageName], img: img, files: extract(t, img)}
}

func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("archive entry %s: mtime %v, owner %d:%d; want the epoch, 0:0", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		target := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		writeHostFile(t, target, string(data), 0o644)
	}
}

func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	out := map[string]file{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = file{hdr: h, content: string(data)}
	}
}

// want is a file's expected type, mode, owner and (for a regular file) content or link target.
type want struct {
	typ      byte
	mode     int64
	uid, gid int
	content  string // a substring of the content, or the link's target
}

func checkFiles(t *testing.T, files map[string]file, wants map[string]want) {
	t.Helper()
	for p, w := range wants {
		f, ok := files[p]
		if !ok {
			t.Errorf("%s: missing", p)
			continue
		}
		h := f.hdr
		if h.Typeflag != w.typ || h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("%s: type %q mode %o owner %d:%d; want type %q mode %o owner %d:%d",
				p, h.Typeflag, h.Mode, h.Uid, h.Gid, w.typ, w.mode, w.uid, w.gid)
		}
		switch {
		case w.typ == tar.TypeSymlink && h.Linkname != w.content:
			t.Errorf("%s: links to %q, want %q", p, h.Linkname, w.content)
		case w.typ == tar.TypeReg && !strings.Contains(f.content, w.content):
			t.Errorf("%s: content %.80q does not hold %q", p, f.content, w.content)
		}
	}
	for p, f := range files {
		if !f.hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want the epoch", p, f.hdr.ModTime)
		}
	}
}

// baseFiles are the files of BaseLayer on fakeHost.
var baseFiles = map[string]want{
	"/etc/passwd":                        {tar.TypeReg, 0o644, 0, 0, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:"},
	"/etc/group":                         {tar.TypeReg, 0o644, 0, 0, "\nnonroot:x:65532:\n"},
	"/etc/nsswitch.conf":                 {tar.TypeReg, 0o644, 0, 0, "hosts: files dns"},
	"/home/nonroot":                      {tar.TypeDir, 0o700, NonRootID, NonRootID, ""},
	"/root":                              {tar.TypeDir, 0o700, 0, 0, ""},
	"/tmp":                               {tar.TypeDir, 0o1777, 0, 0, ""},
	"/etc/ssl/certs":                     {tar.TypeDir, 0o755, 0, 0, ""},
	"/etc/ssl/certs/ca-certificates.crt": {tar.TypeReg, 0o644, 0, 0, "CERTIFICATES"},
	"/usr/share/zoneinfo/Europe/Berlin":  {tar.TypeReg, 0o644, 0, 0, "TZif Berlin"},
	"/usr/share/zoneinfo/UTC":            {tar.TypeSymlink, 0o777, 0, 0, "Etc/UTC"},
	"/usr/share/zoneinfo/Etc/UTC":        {tar.TypeReg, 0o644, 0, 0, "TZif UTC"},
	"/usr/share/zoneinfo/Europe":         {tar.TypeDir, 0o755, 0, 0, ""},
	"/usr/share/zoneinfo":                {tar.TypeDir, 0o755, 0, 0, ""},
}

func with(base map[string]want, more map[string]want) map[string]want {
	out := map[string]want{}
	for _, m := range []map[string]want{base, more} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestOperatorArchive(t *testing.T) {
	manager := writeHostFile(t, filepath.Join(t.TempDir(), "manager"), "fake manager", 0o700)
	s, err := OperatorSpec("ghcr.io/cozystack/etcd-operator:0.1.0", manager, fakeHost(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := writeAndRead(t, s)
	if a.name != "ghcr.io/cozystack/etcd-operator:0.1.0" {
		t.Errorf("archive names %q", a.name)
	}
	checkConfig(t, a.img, v1.Config{
		Entrypoint: []string{"/manager"}, User: "65532:65532", WorkingDir: "/home/nonroot",
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
	})
	// The host file's mode (0700) is not the image's: the spec says 0755.
	checkFiles(t, a.files, with(baseFiles, map[string]want{"/manager": {tar.TypeReg, 0o755, 0, 0, "fake manager"}}))
}

func TestEtcdArchive(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"etcd", "etcdctl", "etcdutl"} {
		writeHostFile(t, filepath.Join(bin, b), "fake "+b, 0o755)
	}
	s, err := EtcdSpec("v3.6.16", bin, fakeHost(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := writeAndRead(t, s)
	if a.name != "quay.io/coreos/etcd:v3.6.16" {
		t.Errorf("archive names %q", a.name)
	}
	checkConfig(t, a.img, v1.Config{
		Cmd: []string{"/usr/local/bin/etcd"}, WorkingDir: "/var/lib/etcd",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"2379/tcp": {}, "2380/tcp": {}},
	})
	checkFiles(t, a.files, with(baseFiles, map[string]want{
		"/usr/local/bin/etcd":    {tar.TypeReg, 0o755, 0, 0, "fake etcd"},
		"/usr/local/bin/etcdctl": {tar.TypeReg, 0o755, 0, 0, "fake etcdctl"},
		"/usr/local/bin/etcdutl": {tar.TypeReg, 0o755, 0, 0, "fake etcdutl"},
		"/var/etcd":              {tar.TypeDir, 0o755, 0, 0, ""},
		"/var/lib/etcd":          {tar.TypeDir, 0o755, 0, 0, ""},
	}))
}

func TestPauseArchive(t *testing.T) {
	pause := writeHostFile(t, filepath.Join(t.TempDir(), "pause"), "fake pause", 0o755)
	a, _ := writeAndRead(t, PauseSpec(pause))
	if a.name != "registry.k8s.io/pause:3.10.2" {
		t.Errorf("archive names %q", a.name)
	}
	checkConfig(t, a.img, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"})
	checkFiles(t, a.files, map[string]want{"/pause": {tar.TypeReg, 0o755, 0, 0, "fake pause"}})
	if len(a.files) != 1 {
		t.Errorf("pause image holds %d files, want /pause alone", len(a.files))
	}
}

func checkConfig(t *testing.T, img v1.Image, want v1.Config) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	got := cf.Config
	if !slices.Equal(got.Entrypoint, want.Entrypoint) || !slices.Equal(got.Cmd, want.Cmd) || got.User != want.User ||
		got.WorkingDir != want.WorkingDir || !slices.Equal(got.Env, want.Env) || len(got.ExposedPorts) != len(want.ExposedPorts) {
		t.Errorf("config %+v\nwant %+v", got, want)
	}
	for p := range want.ExposedPorts {
		if _, ok := got.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed", p)
		}
	}
	if cf.OS != "linux" || cf.Architecture != Platform.Architecture || !cf.Created.Equal(epoch) {
		t.Errorf("config of %s/%s created %v; want linux/%s at the epoch", cf.OS, cf.Architecture, cf.Created.Time, Platform.Architecture)
	}
}

// TestArchiveIsReproducible: the same inputs give the same bytes (and so the same digests),
// whatever the inputs' mtimes; a changed input gives another digest.
func TestArchiveIsReproducible(t *testing.T) {
	host := fakeHost(t)
	bin := t.TempDir()
	for _, b := range []string{"etcd", "etcdctl", "etcdutl"} {
		writeHostFile(t, filepath.Join(bin, b), "fake "+b, 0o755)
	}
	build := func() (v1.Hash, [32]byte) {
		s, err := EtcdSpec("3.6.16", bin, host)
		if err != nil {
			t.Fatal(err)
		}
		a, path := writeAndRead(t, s)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		digest, err := a.img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return digest, sha256.Sum256(raw)
	}
	digest, sum := build()
	later := time.Now().Add(time.Hour)
	for _, p := range []string{filepath.Join(bin, "etcd"), host.CACertificates, bin} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if d, s := build(); d != digest || s != sum {
		t.Errorf("a second build gave image %s (archive sha256 %x), the first %s (%x)", d, s, digest, sum)
	}
	writeHostFile(t, filepath.Join(bin, "etcd"), "another etcd", 0o755)
	if d, _ := build(); d == digest {
		t.Errorf("another etcd binary gave the same image %s", d)
	}
}

func TestLayerRefusesBadEntries(t *testing.T) {
	for name, entries := range map[string][]Entry{
		"relative":  {File("etc/passwd", 0o644, nil)},
		"unclean":   {File("/etc/../passwd", 0o644, nil)},
		"root":      {Dir("/", 0o755)},
		"twice":     {File("/a", 0o644, nil), Dir("/a", 0o755)},
		"no source": {HostFile("/a", 0o644, "/nonexistent/file")},
	} {
		if _, err := Layer(entries); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLayerAddsParentsInOrder(t *testing.T) {
	l, err := Layer([]Entry{File("/b/c/d", 0o600, []byte("x")), Dir("/a", 0o700)})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	raw, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(raw))
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		got = append(got, h.Name+" "+strings.TrimLeft(fs.FileMode(h.Mode).String(), "-"))
	}
	want := []string{"a/ rwx------", "b/ rwxr-xr-x", "b/c/ rwxr-xr-x", "b/c/d rw-------"}
	if !slices.Equal(got, want) {
		t.Errorf("layer entries %q, want %q", got, want)
	}
}
